"""Learner mode: the early KIP-441 draft (``rebalancing_mode = "learner"``), greedy and sticky.

Instead of jumping to a balanced target and warming many replicas up, the
draft moves one task at a time:

1. **Sticky actives.** A stateful task stays on its previous active client when
   that client is caught up; otherwise it goes to the least loaded caught-up
   client, else to the least lagging one (ties: least loaded).
2. **Promotion.** A task moves to a caught-up client (a learner that reports
   caught up, or a caught-up standby) as soon as that makes the stateful
   active load more even (Kafka's ``shouldMoveATask`` test, per thread).
3. **One learner.** If stateful active tasks per thread still differ by more
   than ``balance_factor``, one task of the most loaded client gets a learner
   (a warm-up) on a new or least loaded client, one holding a standby of the
   task first (then that standby is the learner and no warm-up is added),
   and the result asks for a probing rebalance.
4. **Standbys** stay where they were when still valid, caught-up ones first;
   missing ones go to the least loaded clients (spread by tags, KIP-708).
5. **Stateless tasks** go where active tasks per thread are fewest.

Everything is read from what the members report (previous tasks and lags); the
leader keeps nothing between rebalances, so a new leader decides the same.
"""

from __future__ import annotations

from typing import Any

from ..model.streams import StreamsSnapshot
from ..registry import SolveOptions
from ..result import Decision
from .streams_state import HAState, assign_stateless, assign_standbys, repair_tag_spread, spread_keys

__all__ = ["assign_learner"]


def _should_move(st: HAState, src: int, dst: int) -> bool:
    """Moving one stateful active from ``src`` to ``dst`` narrows their gap in tasks per thread without inverting it."""
    skew = st.active_load(src) - st.active_load(dst)
    if skew <= 0:
        return False
    proposed = (st.n_active[src] - 1) / st.threads[src] - (st.n_active[dst] + 1) / st.threads[dst]
    return 0 <= proposed < skew


def _stateful_gap(st: HAState) -> float:
    loads = [st.active_load(c) for c in range(st.C)]
    return max(loads) - min(loads) if loads else 0.0


def _place_actives(st: HAState, stateful: list[int]) -> None:
    idx = st.snap.index
    prev = idx.prev_active.tolist()
    # sticky first, so that loads are known before the homeless tasks are placed
    homeless = []
    for t in stateful:
        p = prev[t]
        if p >= 0 and st.caught_up(p, t):
            st.set_active(t, p)
        else:
            homeless.append(t)
    for t in homeless:
        caught = st.caught_up_clients(t)
        if caught:
            st.set_active(t, st.least_loaded(caught, key=st.active_load))
            continue
        best = st.most_caught_up_lag(t)
        cands = [c for c in st.client_order if st.lag(c, t) <= best]
        st.set_active(t, st.least_loaded(cands, key=st.active_load))


def _promote(st: HAState, stateful: list[int]) -> int:
    """Move tasks to caught-up clients while that evens the load; returns how many moved.

    Passes over the tasks, most loaded owners first; each task goes to its
    least loaded caught-up client when :func:`_should_move` allows it.
    """
    moved = 0
    for _ in range(len(stateful) + 1):
        changed = 0
        order = sorted(stateful, key=lambda t: -st.active_load(st.owner[t]))
        for t in order:
            o = st.owner[t]
            cands = [c for c in st.caught_up_clients(t) if c != o and _should_move(st, o, c)]
            if not cands:
                continue
            c = st.least_loaded(cands, key=st.active_load)
            if c in st.standby[t]:
                st.remove_standby(t, c)
            st.set_active(t, c)
            changed += 1
        moved += changed
        if not changed:
            break
    return moved


def _pick_learner(st: HAState, stateful: list[int]) -> tuple[int, int] | None:
    """(task, client) for this rebalance's one learner, or None when balanced enough."""
    if _stateful_gap(st) <= st.snap.config.balance_factor:
        return None
    pos = {t: i for i, t in enumerate(st.task_order)}
    sources = sorted(range(st.C), key=lambda c: (-st.active_load(c), st.rank[c]))
    for src in sources:
        tasks = [t for t in stateful if st.owner[t] == src]
        if not tasks:
            continue
        best = None
        for t in tasks:
            for c in range(st.C):
                if c == src or not _should_move(st, src, c):
                    continue
                key = (c not in st.standby[t], st.active_load(c), st.rank[c], pos[t])
                if best is None or key < best[0]:
                    best = (key, t, c)
        if best is not None:
            return best[1], best[2]
    return None


def assign_learner(snapshot: StreamsSnapshot, options: SolveOptions | None = None) -> Decision:
    """The learner-mode assignment of ``snapshot`` (see the module docstring)."""
    snap = snapshot
    st = HAState(snap)
    if not st.C:
        return Decision(assignment={}, method="learner", status="heuristic")
    stateful = [t for t in st.task_order if st.stateful[t]]
    stateless = [t for t in st.task_order if not st.stateful[t]]
    _place_actives(st, stateful)
    # previous standbys that are still valid stay (before promotions, so a caught-up standby can take over)
    want = snap.standbys_per_task()
    idx = snap.index
    if want:
        prev_sb: dict[int, list[int]] = {}
        for c, t in zip(idx.prev_standby_client.tolist(), idx.prev_standby_task.tolist()):
            if st.stateful[t]:
                prev_sb.setdefault(t, []).append(c)
        for t, cs in prev_sb.items():
            cs = sorted(set(cs), key=lambda c: (not st.caught_up(c, t), st.lag(c, t), st.rank[c]))
            for c in cs:
                if len(st.standby[t]) >= want:
                    break
                if not st.holds(c, t):
                    st.add_standby(t, c)
    promoted = _promote(st, stateful)
    learner = _pick_learner(st, stateful)
    warmups = 0
    if learner is not None:
        t, c = learner
        if st.caught_up(c, t):  # cannot happen after promotion; kept for safety
            learner = None
        elif c not in st.standby[t]:
            st.add_warmup(t, c)
            warmups = 1
    keys = spread_keys(snap)
    if want:
        missing = [t for t in stateful if len(st.standby[t]) < want]
        for t in missing:
            assign_standbys(st, [t], want - len(st.standby[t]), keys)
        if warmups:
            t, c = learner
            if len(st.standby[t]) < want:  # too few clients for a standby besides the learner: it learns as one
                st.warmup[t].remove(c)
                st.n_replica[c] -= 1
                st.add_standby(t, c)
                warmups = 0
        repair_tag_spread(st, tuple(snap.config.rack_aware_assignment_tags))
        if learner is not None and not warmups and learner[1] not in st.standby[learner[0]]:
            st.add_warmup(*learner)  # the standby that was to learn moved away for tag spreading: warm up instead
            warmups = 1
    assign_stateless(st, stateless)
    followup = snap.followup_deadline() if learner is not None else None
    extra: dict[str, Any] = {"promoted": promoted,
                             "learner": None if learner is None else
                             {"task": idx.task_ids[learner[0]], "client": idx.client_ids[learner[1]]}}
    return Decision(assignment=st.to_assignment(), method="learner", status="heuristic",
                    followup_rebalance_deadline_ms=followup, extra=extra)
