"""Kafka Streams' high-availability task assignor (KIP-441 as Kafka ships it), greedy: the ``sticky`` streams assignor.

The steps, in Kafka's order (our own code, with numpy and heaps where it pays):

1. **Balanced target.** Stateful tasks, in TaskId order, are dealt round-robin
   over the clients in process-id order, each client filled up to its share of
   a water-filling over threads (``(n_c + 1) / threads_c`` smallest first), so
   active tasks per thread differ by at most one.
2. **KIP-925** (``rack_aware_assignment_strategy`` set and racks known): the
   stateful actives are permuted among the clients, counts kept, by a
   min-cost flow with Kafka's default costs 10 (traffic) / 1 (non-overlap).
3. **Standbys**, ``min(num_standby_replicas, clients - 1)`` per stateful task:
   the least loaded client ((active + standby) / threads) not holding the task;
   with ``rack_aware_assignment_tags`` (KIP-708) the client adding the most new
   tag values first (with a rack-aware strategy and no tags: racks). Then the
   KIP-925 flow for standbys (changelog partitions), clients of the same tag
   values only.
4. **Active movements.** A stateful active on a client that is not caught up,
   while a more caught-up client exists, moves: to the least loaded caught-up
   client holding a standby (roles swapped, no warm-up needed), else to the
   least loaded caught-up client, else to the most caught-up one; the target
   client gets a warm-up while ``max_warmup_replicas`` lasts. Tasks with the
   fewest caught-up clients go first.
5. **Standby movements.** A standby on a lagging client moves to a caught-up
   client with the same tag values; the lagging client keeps it as a warm-up
   while the budget lasts. (Kafka spends warm-ups here too.)
6. **Stateless tasks** go to the client with the fewest active tasks per
   thread; with a rack-aware strategy, then a KIP-925 flow with costs 1 / 0.
7. If anything had to move, the result asks for a probing rebalance at
   ``now_ms + probing_rebalance_interval_ms``.

Solving again once the warm-ups have caught up converges on the balanced
target: each round turns up to ``max_warmup_replicas`` (task, client) pairs of
the target into caught-up ones.

>>> from stickyflow.streams import parse_streams
>>> snap = parse_streams({"format": "stickyflow.snapshot/1", "kind": "streams", "now_ms": 0,
...     "tasks": [{"id": f"0_{i}", "stateful": True, "end_offset_sum": 10**6} for i in range(4)],
...     "clients": [{"process_id": "a", "previous_active": ["0_0", "0_1", "0_2", "0_3"], "previous_standby": []},
...                 {"process_id": "b", "previous_active": [], "previous_standby": []}]})
>>> d = assign_high_availability(snap)
>>> {c: a.to_json() for c, a in d.assignment.items()}
{'a': {'active': ['0_0', '0_1', '0_2', '0_3'], 'standby': [], 'warmup': []}, 'b': {'active': [], 'standby': [], 'warmup': ['0_1', '0_3']}}
>>> d.followup_rebalance_deadline_ms
600000
"""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np

from .registry import SolveOptions
from .result import Decision
from .streams import ClientAssignment, StreamsSnapshot, task_key
from .streams_check import RACK_KEY, fully_spread, tag_combinations, tag_spread_improvement

__all__ = ["assign_high_availability", "HAState", "balanced_target", "water_fill", "spread_keys"]


# --------------------------------------------------------------------------- working state

class HAState:
    """The mutable working state of one assignment (indexes; clients ranked by process id).

    Shared by the high-availability and learner assignors and by the ranking
    helpers; ``to_assignment()`` turns it into process id -> :class:`ClientAssignment`.
    """

    def __init__(self, snap: StreamsSnapshot):
        idx = snap.index
        self.snap = snap
        self.T = T = len(idx.task_ids)
        self.C = C = len(idx.client_ids)
        self.threads: list[int] = idx.threads.tolist()
        self.client_order: list[int] = sorted(range(C), key=lambda c: idx.client_ids[c])
        self.rank: list[int] = [0] * C
        for r, c in enumerate(self.client_order):
            self.rank[c] = r
        self.task_order: list[int] = sorted(range(T), key=lambda t: task_key(idx.task_ids[t]))
        self.owner: list[int] = [-1] * T
        self.standby: list[list[int]] = [[] for _ in range(T)]
        self.warmup: list[list[int]] = [[] for _ in range(T)]
        self.n_active: list[int] = [0] * C
        self.n_replica: list[int] = [0] * C
        self.swapped: set[tuple[int, int]] = set()  # (task, client): a standby that took over from an active
        self.stateful: list[bool] = idx.stateful.tolist()
        self.end_offset: list[int] = idx.end_offset.tolist()
        self.everyone: list[bool] = idx.everyone_caught_up.tolist()
        self.caught: dict[int, set[int]] = {}
        for c, t in zip(idx.caught_up_client.tolist(), idx.caught_up_task.tolist()):
            self.caught.setdefault(t, set()).add(c)
        self.reported: dict[int, dict[int, int]] = {}
        for c, t, lag in zip(idx.lag_client.tolist(), idx.lag_task.tolist(), idx.lag_value.tolist()):
            if self.stateful[t]:
                self.reported.setdefault(t, {})[c] = lag

    # ---- lags
    def caught_up(self, c: int, t: int) -> bool:
        return self.everyone[t] or c in self.caught.get(t, ())

    def caught_up_clients(self, t: int) -> list[int]:
        """Caught-up clients of ``t`` in process-id order (every client when all are)."""
        if self.everyone[t]:
            return list(self.client_order)
        return sorted(self.caught.get(t, ()), key=self.rank.__getitem__)

    def lag(self, c: int, t: int) -> int:
        if not self.stateful[t]:
            return 0
        return self.reported.get(t, {}).get(c, self.end_offset[t])

    def most_caught_up_lag(self, t: int) -> int:
        # every lag is at most end_offset_sum (the index applies Client.lag), which is also everyone else's lag
        return min(self.reported.get(t, {}).values(), default=self.end_offset[t])

    def clients_by_lag(self, t: int):
        """Every client, most caught up first (ties by process id), lazily.

        Only reporting clients need sorting: all the others share the lag
        ``end_offset_sum``, the largest there is (the index clamps every report
        to it), and come last, in process-id order with the reports at that lag.
        """
        rep = self.reported.get(t, {})
        eo = self.end_offset[t] if self.stateful[t] else 0
        rank = self.rank
        for _, _, c in sorted((lag, rank[c], c) for c, lag in rep.items() if lag < eo):
            yield c
        for c in self.client_order:
            lag = rep.get(c)
            if lag is None or lag == eo:
                yield c

    # ---- loads and roles
    def load(self, c: int) -> float:
        """Kafka's ``assignedTaskLoad``: (active + standby + warm-up) tasks per thread."""
        return (self.n_active[c] + self.n_replica[c]) / self.threads[c]

    def active_load(self, c: int) -> float:
        return self.n_active[c] / self.threads[c]

    def holds(self, c: int, t: int) -> bool:
        return self.owner[t] == c or c in self.standby[t] or c in self.warmup[t]

    def set_active(self, t: int, c: int) -> None:
        old = self.owner[t]
        if old >= 0:
            self.n_active[old] -= 1
        self.owner[t] = c
        if c >= 0:
            self.n_active[c] += 1

    def add_standby(self, t: int, c: int) -> None:
        self.standby[t].append(c)
        self.n_replica[c] += 1

    def remove_standby(self, t: int, c: int) -> None:
        self.standby[t].remove(c)
        self.n_replica[c] -= 1

    def add_warmup(self, t: int, c: int) -> None:
        self.warmup[t].append(c)
        self.n_replica[c] += 1

    def least_loaded(self, candidates, *, key=None) -> int | None:
        """The candidate with the least ``key`` (default: :meth:`load`), ties by process id; None if none."""
        key = key or self.load
        best = None
        best_key = None
        for c in candidates:
            k = (key(c), self.rank[c])
            if best_key is None or k < best_key:
                best, best_key = c, k
        return best

    def owner_array(self) -> np.ndarray:
        return np.asarray(self.owner, dtype=np.int64)

    def set_owners(self, owner: np.ndarray, tasks: np.ndarray) -> None:
        for t in np.asarray(tasks).tolist():
            if self.owner[t] != int(owner[t]):
                self.set_active(t, int(owner[t]))

    def to_assignment(self) -> dict[str, ClientAssignment]:
        idx = self.snap.index
        roles: list[tuple[list[int], list[int], list[int]]] = [([], [], []) for _ in range(self.C)]
        for t in self.task_order:  # TaskId order, so every list comes out sorted
            c = self.owner[t]
            if c >= 0:
                roles[c][0].append(t)
            for c in self.standby[t]:
                roles[c][1].append(t)
            for c in self.warmup[t]:
                roles[c][2].append(t)
        ids = idx.task_ids
        out: dict[str, ClientAssignment] = {}
        for c, pid in enumerate(idx.client_ids):
            a, s, w = roles[c]
            out[pid] = ClientAssignment(active=tuple(ids[t] for t in a), standby=tuple(ids[t] for t in s),
                                        warmup=tuple(ids[t] for t in w))
        return out


# --------------------------------------------------------------------------- 1. the balanced target

def water_fill(n: int, threads: list[int], rank: list[int]) -> list[int]:
    """How many of ``n`` tasks each client gets so that tasks per thread differ by at most one.

    Each task goes to the client whose ``(count + 1) / threads`` is least (ties:
    lowest ``count / threads``, then ``rank``); tasks per thread then differ by at most one.

    >>> water_fill(7, [1, 2, 1], [0, 1, 2])
    [2, 3, 2]
    """
    C = len(threads)
    counts = [0] * C
    if not C:
        return counts
    # bulk first: every client can take floor(n / total threads) per thread without breaking the bound
    total = sum(threads)
    base = n // total
    for c in range(C):
        counts[c] = base * threads[c]
    left = n - base * total
    # ties on the new ratio go to the client whose ratio is lowest now (more threads: a smaller step)
    heap = [((counts[c] + 1) / threads[c], counts[c] / threads[c], rank[c], c) for c in range(C)]
    heapq.heapify(heap)
    for _ in range(left):
        _, _, r, c = heapq.heappop(heap)
        counts[c] += 1
        heapq.heappush(heap, ((counts[c] + 1) / threads[c], counts[c] / threads[c], r, c))
    return counts


def balanced_target(st: HAState, tasks: list[int]) -> list[int]:
    """Deal ``tasks`` (in order) round-robin over clients in process-id order, each up to its water-filled share.

    Returns the client of each task, aligned with ``tasks``.
    """
    counts = water_fill(len(tasks), st.threads, st.rank)
    order = [c for c in st.client_order if counts[c] > 0]
    left = {c: counts[c] for c in order}
    out: list[int] = []
    ring = order
    i = 0
    for _ in tasks:
        while True:
            if i >= len(ring):
                ring = [c for c in ring if left[c] > 0]
                i = 0
            c = ring[i]
            i += 1
            if left[c] > 0:
                break
        left[c] -= 1
        out.append(c)
    return out


# --------------------------------------------------------------------------- 3. standbys

def spread_keys(snap: StreamsSnapshot) -> tuple[str, ...]:
    """The keys standbys are spread over: ``rack_aware_assignment_tags``, else the rack under a rack-aware strategy."""
    tags = snap.config.rack_aware_assignment_tags
    if tags:
        return tuple(tags)
    if snap.config.rack_aware and snap.clients and all(c.rack is not None for c in snap.clients):
        return (RACK_KEY,)
    return ()


class _ComboHeaps:
    """Clients grouped by tag-value combination, each group a heap by (load, process-id rank)."""

    def __init__(self, st: HAState, client_combo: np.ndarray, M: int, load):
        self.st = st
        self.load = load
        self.combo = client_combo.tolist()
        self.heaps: list[list[tuple[float, int, int]]] = [[] for _ in range(M)]
        for c in range(st.C):
            self.heaps[self.combo[c]].append((load(c), st.rank[c], c))
        for h in self.heaps:
            heapq.heapify(h)

    def top_eligible(self, m: int, ok) -> int | None:
        """The least loaded client of combination ``m`` with ``ok(c)``, left in the heap."""
        h = self.heaps[m]
        stash = []
        found = None
        while h:
            load, r, c = h[0]
            if load != self.load(c):
                heapq.heappop(h)  # stale: a fresher entry for c exists
                continue
            if ok(c):
                found = c
                break
            stash.append(heapq.heappop(h))
        for e in stash:
            heapq.heappush(h, e)
        return found

    def update(self, c: int) -> None:
        heapq.heappush(self.heaps[self.combo[c]], (self.load(c), self.st.rank[c], c))


def assign_standbys(st: HAState, tasks: list[int], per_task: int, keys: tuple[str, ...]) -> None:
    """Give each of ``tasks`` ``per_task`` standbys: most new tag values first, then least loaded."""
    if per_task <= 0 or not tasks:
        return
    combos, client_combo, _ = tag_combinations(st.snap, keys)
    M = len(combos)
    heaps = _ComboHeaps(st, client_combo, M, st.load)
    K = combos.shape[1]
    combo_rows = combos.tolist()
    cc = client_combo.tolist()
    for t in tasks:
        for _ in range(per_task):
            holders = [st.owner[t]] + st.standby[t]
            if K:
                used = [{combo_rows[cc[h]][k] for h in holders if h >= 0} for k in range(K)]
                gain = [sum(1 for k in range(K) if row[k] >= 0 and row[k] not in used[k]) for row in combo_rows]
            else:
                gain = [0] * M
            ok = lambda c, t=t: not st.holds(c, t)  # noqa: E731
            chosen = None
            for g in sorted(set(gain), reverse=True):
                best = None
                for m in range(M):
                    if gain[m] != g:
                        continue
                    c = heaps.top_eligible(m, ok)
                    if c is not None and (best is None or (st.load(c), st.rank[c]) < (st.load(best), st.rank[best])):
                        best = c
                if best is not None:
                    chosen = best
                    break
            if chosen is None:
                break  # fewer clients than replicas: cannot happen with min(num_standby_replicas, clients - 1)
            st.add_standby(t, chosen)
            heaps.update(chosen)


def repair_tag_spread(st: HAState, keys: tuple[str, ...], budget: list[int] | None = None, *,
                      passes: int = 3) -> int:
    """Move standbys that keep a task's replicas on too few tag values (after movements); returns how many moved.

    A standby moves when some client holding no replica of the task would add a
    tag value on some key without losing one on another (the check's rule); to
    a caught-up client of such a combination first, else the least loaded one.
    A standby that an active movement left on the task's target client stays
    there as a warm-up while ``budget[0]`` lasts, so that the target still catches up.
    """
    if not keys or st.C < 2:
        return 0
    combos, client_combo, counts = tag_combinations(st.snap, keys)
    if len(combos) <= 1:
        return 0
    cc = client_combo.tolist()
    combo_rows = combos.tolist()
    count = counts.tolist()
    M = len(combos)
    heaps = _ComboHeaps(st, client_combo, M, st.load)
    moved = 0
    for _ in range(passes):
        changed = False
        for t in st.task_order:
            if not st.stateful[t] or not st.standby[t] or st.owner[t] < 0:
                continue
            reps = [cc[st.owner[t]]] + [cc[s] for s in st.standby[t]]
            if fully_spread(combo_rows, reps):
                continue
            holders = [st.owner[t]] + st.standby[t] + st.warmup[t]
            held = [0] * M
            for h in holders:
                held[cc[h]] += 1
            free = [count[m] > held[m] for m in range(M)]
            for pos in range(1, len(reps)):
                better = tag_spread_improvement(combo_rows, reps, free, pos)
                if not better:
                    continue
                ok = lambda c, t=t: not st.holds(c, t)  # noqa: E731
                bset = set(better)
                v = st.least_loaded([c for c in st.caught_up_clients(t) if cc[c] in bset and ok(c)]) \
                    if not st.everyone[t] else None
                if v is None:
                    tops = [c for c in (heaps.top_eligible(m, ok) for m in better) if c is not None]
                    v = st.least_loaded(tops)
                if v is None:
                    continue
                s = st.standby[t][pos - 1]
                st.remove_standby(t, s)
                st.add_standby(t, v)
                heaps.update(s)
                heaps.update(v)
                if (t, s) in st.swapped and budget is not None and budget[0] > 0:
                    st.add_warmup(t, s)
                    budget[0] -= 1
                    heaps.update(s)
                moved += 1
                changed = True
                break
        if not changed:
            break
    return moved


# --------------------------------------------------------------------------- 4-5. movements

def _most_caught_up_eligible(st: HAState, t: int, destination: int, ok) -> int | None:
    """The first client, in lag order, before ``destination`` that satisfies ``ok``."""
    for c in st.clients_by_lag(t):
        if c == destination:
            return None
        if ok(c):
            return c
    return None


def _needs_move(st: HAState, c: int, t: int) -> bool:
    """Not caught up on ``c`` while a more caught-up client exists (Kafka's movement test)."""
    if st.caught_up(c, t):
        return False
    return st.most_caught_up_lag(t) < st.lag(c, t)


def _movement_order(st: HAState, items: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Fewest caught-up clients first, then TaskId order (the intent of Kafka's movement queue)."""
    pos = {t: i for i, t in enumerate(st.task_order)}
    return sorted(items, key=lambda tc: (len(st.caught.get(tc[0], ())), pos[tc[0]], st.rank[tc[1]]))


def move_actives(st: HAState, budget: list[int]) -> int:
    """Kafka's active task movements; ``budget[0]`` is the warm-ups left. Returns the movements needed."""
    items = [(t, st.owner[t]) for t in st.task_order
             if st.stateful[t] and st.owner[t] >= 0 and _needs_move(st, st.owner[t], t)]
    for t, dest in _movement_order(st, items):
        caught = st.caught_up_clients(t)
        swap = st.least_loaded([c for c in caught if c in st.standby[t]])
        if swap is not None:
            st.remove_standby(t, swap)
            st.set_active(t, swap)
            st.add_standby(t, dest)
            st.swapped.add((t, dest))
            continue
        source = st.least_loaded([c for c in caught if not st.holds(c, t)])
        if source is None:
            source = _most_caught_up_eligible(st, t, dest, lambda c, t=t: c not in st.warmup[t])
            if source is None:  # scheduled because a more caught-up client exists: not reachable
                continue
            if source in st.standby[t]:
                st.remove_standby(t, source)
                st.set_active(t, source)
                st.add_standby(t, dest)
                st.swapped.add((t, dest))
                continue
        st.set_active(t, source)
        if budget[0] > 0:
            st.add_warmup(t, dest)
        budget[0] -= 1
    return len(items)


def move_standbys(st: HAState, budget: list[int], client_combo: list[int] | None) -> int:
    """Kafka's standby task movements: to a caught-up client with the same tag values. Returns movements made."""
    items = [(t, c) for t in st.task_order if st.stateful[t] for c in list(st.standby[t]) if _needs_move(st, c, t)]
    moved = 0
    for t, dest in _movement_order(st, items):
        if dest not in st.standby[t]:
            continue

        def ok(c, t=t, dest=dest):
            return not st.holds(c, t) and (client_combo is None or client_combo[c] == client_combo[dest])

        source = st.least_loaded([c for c in st.caught_up_clients(t) if ok(c)])
        if source is None:
            source = _most_caught_up_eligible(st, t, dest, ok)
        if source is None:
            continue
        st.add_standby(t, source)
        st.remove_standby(t, dest)
        if budget[0] > 0:
            st.add_warmup(t, dest)
        budget[0] -= 1
        moved += 1
    return moved


# --------------------------------------------------------------------------- 6. stateless tasks

def assign_stateless(st: HAState, tasks: list[int]) -> None:
    """Each stateless task to the client with the fewest active tasks per thread (ties by process id)."""
    if not tasks or not st.C:
        return
    heap = [(st.active_load(c), st.rank[c], c) for c in range(st.C)]
    heapq.heapify(heap)
    for t in tasks:
        _, r, c = heapq.heappop(heap)
        st.set_active(t, c)
        heapq.heappush(heap, (st.active_load(c), r, c))


# --------------------------------------------------------------------------- the assignor

def _optimize_standbys(st: HAState, keys: tuple[str, ...]) -> None:
    from .streams_rack import optimize_standby_tasks

    snap = st.snap
    cfg = snap.config
    sc: list[int] = []
    stt: list[int] = []
    for t in range(st.T):
        for c in st.standby[t]:
            sc.append(c), stt.append(t)
    if not sc:
        return
    group = tag_combinations(snap, keys)[1] if keys else None
    res = optimize_standby_tasks(snap, st.owner_array(), np.asarray(sc, dtype=np.int64),
                                 np.asarray(stt, dtype=np.int64), np.zeros(0, dtype=np.int64),
                                 np.zeros(0, dtype=np.int64), traffic_cost=cfg.traffic_cost(),
                                 non_overlap_cost=cfg.non_overlap_cost(), tag_group=group)
    if res is None:
        return
    for t in range(st.T):
        for c in list(st.standby[t]):
            st.remove_standby(t, c)
    for c, t in zip(res[0].tolist(), res[1].tolist()):
        st.add_standby(t, c)


def assign_high_availability(snapshot: StreamsSnapshot, options: SolveOptions | None = None) -> Decision:
    """Kafka Streams' high-availability assignment of ``snapshot`` (see the module docstring).

    With ``rebalancing_mode = "learner"`` the early KIP-441 draft runs instead
    (:func:`stickyflow.streams_learner.assign_learner`).
    """
    snap = snapshot
    cfg = snap.config
    if cfg.rebalancing_mode == "learner":
        from .streams_learner import assign_learner

        return assign_learner(snap, options)
    st = HAState(snap)
    if not st.C:
        return Decision(assignment={}, method="high_availability", status="heuristic")
    rack_aware = cfg.rack_aware
    stateful = [t for t in st.task_order if st.stateful[t]]
    stateless = [t for t in st.task_order if not st.stateful[t]]
    # 1-2. balanced target for stateful actives, then KIP-925
    for t, c in zip(stateful, balanced_target(st, stateful)):
        st.set_active(t, c)
    if rack_aware and len(stateful) > 1:
        from .streams_rack import optimize_active_tasks

        owner = optimize_active_tasks(snap, st.owner_array(), np.asarray(stateful, dtype=np.int64),
                                      traffic_cost=cfg.traffic_cost(), non_overlap_cost=cfg.non_overlap_cost(),
                                      strategy=cfg.rack_aware_assignment_strategy)
        st.set_owners(owner, np.asarray(stateful))
    # 3. standbys
    keys = spread_keys(snap)
    assign_standbys(st, stateful, snap.standbys_per_task(), keys)
    if rack_aware and snap.standbys_per_task():
        _optimize_standbys(st, keys)
    # 4-5. movements towards caught-up clients, warm-ups on the target clients
    budget = [cfg.max_warmup_replicas]
    active_moves = move_actives(st, budget)
    combo = tag_combinations(snap, keys)[1].tolist() if keys else None
    standby_moves = move_standbys(st, budget, combo)
    # 6. stateless tasks
    assign_stateless(st, stateless)
    if rack_aware and len(stateless) > 1:
        from .streams_rack import optimize_active_tasks

        owner = optimize_active_tasks(snap, st.owner_array(), np.asarray(stateless, dtype=np.int64),
                                      traffic_cost=cfg.traffic_cost(stateless=True),
                                      non_overlap_cost=cfg.non_overlap_cost(stateless=True),
                                      strategy=cfg.rack_aware_assignment_strategy)
        st.set_owners(owner, np.asarray(stateless))
    repaired = repair_tag_spread(st, tuple(cfg.rack_aware_assignment_tags), budget)
    followup = snap.followup_deadline() if active_moves + standby_moves > 0 else None
    extra: dict[str, Any] = {"active_movements": active_moves, "standby_movements": standby_moves,
                             "warmups": sum(len(w) for w in st.warmup), "tag_repairs": repaired}
    return Decision(assignment=st.to_assignment(), method="high_availability", status="heuristic",
                    followup_rebalance_deadline_ms=followup, extra=extra)
