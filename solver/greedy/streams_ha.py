"""Kafka Streams' high-availability task assignor (KIP-441 as Kafka ships it), greedy: the ``sticky`` streams assignor.

The steps, in Kafka's order (our own code, with numpy and heaps where it pays):

1. **Balanced target.** Stateful tasks, in TaskId order, are dealt round-robin
   over the clients in process-id order, then moved from client to client while
   that evens active tasks per thread (Kafka's ``balanceTasksOverThreads``).
2. **KIP-925** (``rack_aware_assignment_strategy`` set and racks known): the
   stateful actives are permuted among the clients, counts kept, by a
   min-cost flow with Kafka's default costs 10 (traffic) / 1 (non-overlap).
3. **Standbys**, ``min(num_standby_replicas, clients - 1)`` per stateful task:
   the least loaded client ((active + standby) / threads) not holding the task;
   with ``rack_aware_assignment_tags`` (KIP-708) the client adding the most new
   tag values first (racks are not a spreading key here, as in Kafka); then
   standbys move from client to client while that evens (active + standby)
   tasks per thread (``balanceTasksOverThreads`` again). Then the KIP-925 flow
   for standbys (changelog partitions), clients of the same tag values only.
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

>>> from stickyflow.model.streams import parse_streams
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

from ..check.streams_tables import tag_combinations
from ..model.streams import StreamsSnapshot
from ..registry import SolveOptions
from ..result import Decision
from .streams_state import HAState, assign_stateless, assign_standbys, repair_tag_spread, spread_keys

__all__ = ["assign_high_availability", "balanced_target", "water_fill", "move_actives", "move_standbys",
           # shared with learner mode, kept importable from here
           "HAState", "spread_keys", "assign_standbys", "repair_tag_spread", "assign_stateless"]


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
    """Kafka's target for stateful actives: deal ``tasks`` round-robin over the clients in process-id order,
    then move tasks between clients while that evens tasks per thread (``balanceTasksOverThreads``).

    A move from ``s`` to ``d`` happens when ``s`` has more tasks per thread than
    ``d`` and would not end with fewer than ``d`` after it; the source gives up its
    first tasks in TaskId order. Starting from the deal, every client with a task
    keeps at least one unless moving it still leaves the two in order (Kafka's
    ``shouldDistributeStatefulActiveTasksToAllClients``). With equal threads the
    deal is already balanced and nothing moves. Returns the client of each task,
    aligned with ``tasks`` (which come in TaskId order).

    >>> from stickyflow.model.streams import parse_streams
    >>> snap = parse_streams({"format": "stickyflow.snapshot/1", "kind": "streams",
    ...     "tasks": [{"id": f"0_{i}", "stateful": True} for i in range(9)],
    ...     "clients": [{"process_id": p, "threads": n, "previous_active": [], "previous_standby": []}
    ...                 for p, n in (("a", 100), ("b", 50), ("c", 1))]})
    >>> st = HAState(snap)
    >>> [snap.index.client_ids[c] for c in balanced_target(st, list(range(9)))].count("c")
    1
    """
    import bisect

    order = st.client_order
    C = len(order)
    if not C or not tasks:
        return [order[0]] * len(tasks) if C else []
    held: list[list[int]] = [[] for _ in range(st.C)]  # positions into ``tasks``, ascending
    for i in range(len(tasks)):
        held[order[i % C]].append(i)
    threads = [float(x) for x in st.threads]
    n = [len(h) for h in held]
    rank = st.rank
    # Kafka moves a task from s to d while s has more tasks per thread and would not end below d:
    # (n_s - 1) / t_s >= (n_d + 1) / t_d. It stops when no pair qualifies, i.e. when the most a source
    # keeps after giving one is below the least a destination has after taking one. Pairing the extremes
    # (two heaps) reaches such a state in O(moves log clients) instead of passes over all pairs.
    give = [(-(n[c] - 1) / threads[c], rank[c], c, n[c]) for c in order if n[c]]
    take = [((n[c] + 1) / threads[c], rank[c], c, n[c]) for c in order]
    heapq.heapify(give)
    heapq.heapify(take)

    def top(heap):
        while heap and heap[0][3] != n[heap[0][2]]:
            heapq.heappop(heap)  # stale entry
        return heap[0][2] if heap else None

    while True:
        s_, d_ = top(give), top(take)
        if s_ is None or d_ is None:
            break
        if s_ == d_:  # one client at both ends: try it against the runner-up on the other side
            e = heapq.heappop(take)
            d2 = top(take)
            heapq.heappush(take, e)
            if d2 is None or (n[s_] - 1) / threads[s_] < (n[d2] + 1) / threads[d2]:
                break
            d_ = d2
        if (n[s_] - 1) / threads[s_] < (n[d_] + 1) / threads[d_]:
            break
        bisect.insort(held[d_], held[s_].pop(0))
        n[s_] -= 1
        n[d_] += 1
        for c in (s_, d_):
            if n[c]:
                heapq.heappush(give, (-(n[c] - 1) / threads[c], rank[c], c, n[c]))
            heapq.heappush(take, ((n[c] + 1) / threads[c], rank[c], c, n[c]))
    out = [0] * len(tasks)
    for c in range(st.C):
        for i in held[c]:
            out[i] = c
    return out


def balance_standbys(st: HAState, client_combo: list[int] | None = None) -> int:
    """Kafka's ``balanceTasksOverThreads`` for standbys: move standbys from client to client while that evens
    (active + standby) tasks per thread; returns how many moved.

    The greedy standby placement can leave one client a few standbys ahead (each
    task picks the least loaded client at its turn); Kafka then moves standbys,
    the source's first in TaskId order that the destination does not hold, while
    the move narrows the two clients' gap without inverting it. With tags
    (KIP-708) a standby only moves between clients with the same tag values.
    """
    if st.C < 2:
        return 0
    pos = {t: i for i, t in enumerate(st.task_order)}
    held: list[list[int]] = [[] for _ in range(st.C)]  # standby tasks of each client, in TaskId order
    for t in st.task_order:
        for c in st.standby[t]:
            held[c].append(t)
    threads = st.threads

    def should_move(s: int, d: int) -> bool:
        skew = st.load(s) - st.load(d)
        if skew <= 0:
            return False
        total_s, total_d = st.n_active[s] + st.n_replica[s], st.n_active[d] + st.n_replica[d]
        proposed = (total_s - 1.0) / threads[s] - (total_d + 1.0) / threads[d]
        return 0 <= proposed < skew

    order = np.asarray(st.client_order, dtype=np.int64)
    thr = np.asarray(threads, dtype=np.float64)[order]
    combo = np.asarray(client_combo, dtype=np.int64)[order] if client_combo is not None else None
    moved_any = 0
    moved = True
    while moved:
        moved = False
        tot = np.asarray([st.n_active[c] + st.n_replica[c] for c in order], dtype=np.float64)
        for s in st.client_order:
            if not held[s]:
                continue
            # a prefilter in numpy (only lighter clients that s could feed; the set only shrinks while s gives)
            load_s = (st.n_active[s] + st.n_replica[s]) / threads[s]
            ok = (tot / thr < load_s) & ((st.n_active[s] + st.n_replica[s] - 1.0) / threads[s] - (tot + 1.0) / thr >= 0)
            if combo is not None:
                ok &= combo == client_combo[s]
            for d in order[ok].tolist():
                if d == s or not should_move(s, d):
                    continue
                for t in list(held[s]):
                    if not should_move(s, d):
                        break
                    if st.holds(d, t):
                        continue
                    st.remove_standby(t, s)
                    st.add_standby(t, d)
                    tot[st.rank[s]] -= 1
                    tot[st.rank[d]] += 1
                    held[s].remove(t)
                    held[d].insert(next((k for k, u in enumerate(held[d]) if pos[u] > pos[t]), len(held[d])), t)
                    moved = True
                    moved_any += 1
    return moved_any


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
    (:func:`stickyflow.greedy.streams_learner.assign_learner`).
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
    # 3. standbys: spread over the configured tags only (Kafka's HA assignor builds its standby assignor without
    # racks: KIP-925's flow below then cuts their changelog traffic instead)
    keys = tuple(cfg.rack_aware_assignment_tags)
    assign_standbys(st, stateful, snap.standbys_per_task(), keys)
    balance_standbys(st, tag_combinations(snap, keys)[1].tolist() if keys else None)
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
