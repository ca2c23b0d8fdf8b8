r"""The optimal consumer-group assignment as one min-cost flow (OR-Tools ``SimpleMinCostFlow``).

The model (the spec's lexicographic optimum):

    variables   x[p, m] in {0, 1}: partition p goes to member m (only if m subscribes to p's topic)
    constraints sum_m x[p, m] = 1 for every partition of a subscribed topic
    objective   lexicographic: first  sum_m load_m^2          (load_m = sum_p x[p, m])
                               then   noc * moves + tc * cross_rack

Topics that the same member classes read are interchangeable, and so are
their partitions with the same valid previous owner and replica racks: they
form one *group* (with distinct readers per topic, a topic class is the topic).
All partitions of a topic class with the same racks form one *pool*; members
that are interchangeable for newcomers (same subscription, same rack) form one
*cell*. Every partition starts in its pool, and keeping is priced as a move
saved (the constant ``noc x owned`` is added back). The graph::

    pool(c, R) --keep: tc*[rack(o) not in R] - noc, capacity |group(c, o, R)|--> member o
    pool(c, R) --tc*[rack(k) not in R]--> cell(k) --0--> member m
    member m --convex load cost--> sink

so it has a node per member, cell and pool and an arc per group: its size grows with
members, subscriptions and owners, not with partitions (Kafka's 1,000,000 x 2,000 test: 2,003 nodes,
9,801 arcs; with 8 subscription profiles over its 500 topics, 124 topic classes: 132,710 arcs).
Convex costs need one arc per load unit; two facts keep those few:

1. *Phase 1* solves the same problem on subscription classes only (topic ->
   class, class -> sink with one arc of capacity ``n_C`` and cost ``2q + 1``
   per load level ``q``: the cost of ``L`` units spread evenly over ``n_C``
   members), up to the smallest feasible maximum load (found by bisection on
   max flows). That gives one load vector ``m0`` minimizing the sum of squares.
2. Square-sum-minimal integer load vectors on this M-convex set are exactly
   the decreasingly-minimal ones (Frank and Murota), and any two of them differ
   by at most one per member. So every optimal load lies in
   ``[m0 - 1, m0 + 1]``: *phase 2* forces ``m0 - 1`` units through each
   member by a lower bound (moved into the supplies) and prices only the two
   units above it, at ``W * (2k - 1)`` with ``W`` larger than any secondary cost.

The result is exact; ``tests/test_consumer_crosscheck.py`` compares it with the
independent networkx formulation (one arc per partition and member, one per load
unit) on seeded instances.

Two shortcuts answer before the flow, each only with a proof: equal
subscriptions have a closed form (:func:`_equal_subscriptions`), and with mixed
ones a rebalance that moves nothing beyond the orphans is found and proven by a
warm start (:func:`_warm_start`); ``tests/test_consumer_closed_form.py`` and
``tests/test_consumer_warm_start.py`` hold both against the flow.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from stickyflow.check.answer import ArrayAssignment, stable_order
from stickyflow.errors import (BackendMissingError, CostRangeError, SolverFaultError, TimeLimitError,
                               UnknownAssignorError)
from stickyflow.model.arrays import nonzero_pairs
from stickyflow.model.consumer import ConsumerSnapshot
from stickyflow.model.consumer_claims import PreviousOwners, previous_owners
from stickyflow.model.consumer_members import first_seen_ids
from stickyflow.registry import SolveOptions
from stickyflow.result import Decision

__all__ = ["solve_consumer", "METHODS"]

METHODS = ("flow", "networkx")


def solve_consumer(snapshot: ConsumerSnapshot, options: SolveOptions | None = None) -> Decision:
    """The optimal consumer assignment; ``options.method`` picks ``"flow"`` (default) or ``"networkx"``.

    >>> import stickyflow
    >>> snap = stickyflow.parse_snapshot({"format": "stickyflow.snapshot/1", "kind": "consumer",
    ...     "topics": {"t": {"partitions": 3}},
    ...     "members": [{"id": "a", "subscription": ["t"], "generation": 1, "owned": {"t": [0, 1, 2]}},
    ...                 {"id": "b", "subscription": ["t"]}]})
    >>> d = solve_consumer(snap)
    >>> d.assignment["a"]["t"].tolist(), d.assignment["b"]["t"].tolist(), d.objective
    ([0, 1], [2], 1)
    """
    options = options or SolveOptions()
    if snapshot.config.balance == "load":  # balanced by load: a model of its own (load_opt.py)
        from .load_opt import solve_load

        return solve_load(snapshot, options)
    method = options.method or "flow"
    if method == "networkx":
        from .consumer_nx import solve_consumer_networkx

        return solve_consumer_networkx(snapshot, options)
    if method != "flow":
        raise UnknownAssignorError(f"method: {method!r} is not a consumer method (known: {', '.join(METHODS)})")
    deadline = None if options.time_limit is None else time.perf_counter() + options.time_limit
    return _solve_flow(snapshot, deadline)


# --------------------------------------------------------------------------- data

@dataclass(slots=True)
class _Data:
    """The problem compressed into groups, pools, classes and cells (numpy arrays where sizes grow)."""

    snap: ConsumerSnapshot
    prev: PreviousOwners
    topics: list[str]                 # assignable topics
    read: np.ndarray                  # per snapshot topic: does anyone subscribe to it
    member_class: np.ndarray          # member -> class id (-1: subscribes to nothing assignable)
    n_classes: int
    member_cell: np.ndarray           # member -> cell id (-1 as above)
    cells: list[tuple[int, str | None]]  # (class id, rack or None)
    rack_aware: bool
    tc: int
    noc: int
    class_reads: np.ndarray | None = None  # member class x topic, built on first use (_class_reads)

    @property
    def every_topic(self) -> bool:
        """Whether every topic of the snapshot is assignable (someone reads it): then the assignable topics'
        arrays end to end are the snapshot's own, as the previous owners hold them (``prev.all``)."""
        return len(self.topics) == len(self.snap.topics)


def _prepare(snap: ConsumerSnapshot) -> _Data:
    read = snap.has_readers()
    topics = [t for t, r in zip(snap.topics, read.tolist()) if r]
    rack_aware = snap.rack_aware
    group, _ = snap.subscription_groups()
    group_class = _subscription_classes(snap)
    n_classes = int(group_class.max()) + 1 if len(group_class) else 0
    member_class = group_class[group]
    cell_id: dict[tuple[int, str | None], int] = {}
    if rack_aware:
        member_cell = np.full(len(snap.members), -1, dtype=np.int64)
        racks = snap._column("rack")
        for i in np.flatnonzero(member_class >= 0).tolist():
            member_cell[i] = cell_id.setdefault((int(member_class[i]), racks[i]), len(cell_id))
    else:
        member_cell = member_class.copy()
        cell_id = {(c, None): c for c in range(n_classes)}
    return _Data(snap=snap, prev=previous_owners(snap), topics=topics, read=read,
                 member_class=member_class, n_classes=n_classes, member_cell=member_cell,
                 cells=list(cell_id), rack_aware=rack_aware,
                 tc=snap.config.traffic_cost, noc=snap.config.non_overlap_cost)


def _subscription_classes(snap: ConsumerSnapshot) -> np.ndarray:
    """Each distinct subscription's class: the distinct sets of existing topics that subscriptions read,
    numbered in order of first appearance; -1 for a subscription that reads none (deleted topics only).

    Where the subscription x topic matrix is small, its rows (packed to bits, each viewed as one byte string)
    are classed by one ``np.unique``; else one frozenset per distinct subscription.
    """
    flat, glen = snap._group_topics()
    G, T = len(glen), len(snap.topics)
    if G == 0 or T == 0:
        return np.full(G, -1, dtype=np.int64)
    if G == 1:
        return np.array([0 if len(flat) else -1], dtype=np.int64)
    if G * T <= _DENSE_CLASSES:
        packed = np.packbits(snap.subscription_matrix(), axis=1)  # each row as bytes: one sortable scalar
        if packed.shape[1] <= 8:  # up to 64 topics: one 64-bit integer per row (sorts in a third of the time)
            rows = np.zeros((G, 8), dtype=np.uint8)
            rows[:, :packed.shape[1]] = packed
            rows = rows.view(np.uint64).ravel()
        else:
            rows = np.ascontiguousarray(packed).view(np.dtype((np.void, packed.shape[1]))).ravel()
        _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
        empty = glen[first] == 0  # the class of the subscriptions that read nothing
        order = np.argsort(np.where(empty, G, first), kind="stable")  # by first appearance, the empty one last
        rank = np.empty(len(first), dtype=np.int64)
        rank[order] = np.arange(len(first))
        rank[empty] = -1
        return rank[inverse.reshape(-1)]
    _, distinct = snap.subscription_groups()
    class_id: dict[frozenset[str], int] = {}
    group_class = np.full(G, -1, dtype=np.int64)
    for g, sub in enumerate(distinct):  # groups come in order of first appearance
        s = frozenset(t for t in sub if t in snap.topics)
        if s:
            group_class[g] = class_id.setdefault(s, len(class_id))
    return group_class


_DENSE_CLASSES = 1 << 24  # distinct subscriptions x topics up to which classes come from the boolean matrix


def _ortools():
    try:
        from ortools.graph.python import max_flow, min_cost_flow
    except ImportError as exc:  # pragma: no cover - exercised by the fallback tests via monkeypatch
        raise BackendMissingError("OR-Tools is not installed: pip install ortools (a core dependency)") from exc
    return max_flow, min_cost_flow


# --------------------------------------------------------------------------- phase 1: class loads

def _class_graph(d: _Data) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(partitions per topic, then topic -> class arcs as tails and heads, members per class)."""
    n_classes = d.n_classes
    size = np.bincount(d.member_class[d.member_class >= 0], minlength=n_classes)
    P = np.array([d.snap.topics[t].partitions for t in d.topics], dtype=np.int64)
    head, tail = nonzero_pairs(_class_reads(d) & (P > 0)[None, :])  # by class, then topic in snapshot order
    return P, tail, head, size


def _class_reads(d: _Data) -> np.ndarray:
    """Member class x assignable topic (``d.topics``): does the class read it. The rows of the distinct
    subscriptions of its members (no step per member or per class and topic); computed once per solve."""
    if d.class_reads is not None:
        return d.class_reads
    group, _ = d.snap.subscription_groups()
    topic, glen = d.snap._group_topics()  # each distinct subscription's topics (snapshot positions)
    group_class = np.full(len(glen), -1, dtype=np.int64)
    group_class[group] = d.member_class  # the members of one subscription share its class
    class_reads = np.zeros((d.n_classes, len(d.topics)), dtype=bool)
    if len(glen) * len(d.snap.topics) <= _DENSE_CLASSES:  # the subscription matrix, as the classes read it
        # a class is a set of existing topics, so the rows of the subscriptions of one class are equal: one
        # row copy per subscription (the assignable topics are the columns that anyone reads)
        matrix = d.snap.subscription_matrix()
        rows = np.flatnonzero(group_class >= 0)
        class_reads[group_class[rows]] = matrix[rows] if d.every_topic else matrix[np.ix_(rows, d.read)]
    else:
        column = np.full(len(d.snap.topics), -1, dtype=np.int64)  # snapshot position -> position in d.topics
        pos = {t: j for j, t in enumerate(d.snap.topics)}
        column[np.fromiter(map(pos.__getitem__, d.topics), dtype=np.int64, count=len(d.topics))] = \
            np.arange(len(d.topics))
        cls, col = np.repeat(group_class, glen), column[topic]
        ok = (cls >= 0) & (col >= 0)
        class_reads[cls[ok], col[ok]] = True
    class_reads.flags.writeable = False
    d.class_reads = class_reads
    return class_reads


def _class_loads(d: _Data, graph: tuple | None = None, beta: int | None = None) -> np.ndarray:
    """Per class, the total load of one square-sum-minimal assignment (members of a class split it evenly)."""
    n_classes = d.n_classes
    if n_classes == 0:
        return np.zeros(0, dtype=np.int64)
    if n_classes == 1:
        return np.array([sum(d.snap.topics[t].partitions for t in d.topics)], dtype=np.int64)
    P, tail, head, size = graph or _class_graph(d)
    total_c = np.bincount(head, weights=P[tail], minlength=n_classes).astype(np.int64)
    if beta is None:
        beta = _min_max_load(d, P, tail, head, size)
    hi = np.minimum(beta, -(-total_c // size))  # per-member load never exceeds these

    _, min_cost_flow = _ortools()
    T = len(d.topics)
    sink = T + n_classes
    f = min_cost_flow.SimpleMinCostFlow()
    big = int(P.sum())
    # topic -> class
    f.add_arcs_with_capacity_and_unit_cost(tail, T + head, np.full(len(tail), big, dtype=np.int64),
                                           np.zeros(len(tail), dtype=np.int64))
    # class -> sink, one arc per load level q < hi_C: capacity n_C, cost 2q + 1
    reps = hi.astype(np.int64)
    cls = np.repeat(np.arange(n_classes), reps)
    q = np.arange(int(reps.sum())) - np.repeat(np.cumsum(reps) - reps, reps)
    chunk_arcs = f.add_arcs_with_capacity_and_unit_cost(T + cls, np.full(len(cls), sink, dtype=np.int64),
                                                        size[cls].astype(np.int64), 2 * q + 1)
    supplies = np.zeros(T + n_classes + 1, dtype=np.int64)
    supplies[:T] = P
    supplies[sink] = -big
    f.set_nodes_supplies(np.arange(len(supplies)), supplies)
    status = f.solve()
    if status != f.OPTIMAL:
        raise SolverFaultError(f"phase 1 (class loads) ended with status {status}")
    flows = f.flows(chunk_arcs)
    return np.bincount(cls, weights=flows, minlength=n_classes).astype(np.int64)


_MANY_CLASSES = 32  # from this many subscription classes on, phase 1 is worth skipping when loads are small
_SMALL_LOADS = 48  # ... at most this many partitions per member: one unit arc per member and load level


def _min_max_load(d: _Data, P: np.ndarray, tail: np.ndarray, head: np.ndarray, size: np.ndarray) -> int:
    """The smallest per-member maximum load any valid assignment reaches (bisection on max flows)."""
    max_flow, _ = _ortools()
    T, n_classes = len(d.topics), d.n_classes
    total = int(P.sum())
    src, sink = T + n_classes, T + n_classes + 1

    def feasible(beta: int) -> bool:
        g = max_flow.SimpleMaxFlow()
        g.add_arcs_with_capacity(np.full(T, src), np.arange(T), P)
        g.add_arcs_with_capacity(tail, T + head, np.full(len(tail), total, dtype=np.int64))
        g.add_arcs_with_capacity(T + np.arange(n_classes), np.full(n_classes, sink), size * beta)
        g.solve(src, sink)
        return g.optimal_flow() == total

    lo, hi = -(-total // int(size.sum())), total  # a lone subscriber may have to take everything
    # gallop up from the lower bound first: the answer is usually at it or just above, so a couple of
    # max flows decide it where a bisection over [lower bound, total] would take a dozen
    step = 1
    while lo < hi:
        probe = min(lo + step - 1, hi)
        if feasible(probe):
            hi = probe
            break
        lo = probe + 1
        step *= 2
    while lo < hi:
        mid = (lo + hi) // 2
        if feasible(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


# --------------------------------------------------------------------------- phase 2: the real flow

def _check_deadline(deadline: float | None, what: str) -> None:
    """A min-cost flow cannot stop half-way with a usable answer: the time limit is checked between stages."""
    if deadline is not None and time.perf_counter() > deadline:
        raise TimeLimitError(f"the time limit ran out {what}")


def _solve_flow(snap: ConsumerSnapshot, deadline: float | None = None) -> Decision:
    t0 = time.perf_counter()
    d = _prepare(snap)
    M = len(snap.members)
    if not d.topics:
        cost = d.noc * _orphaned(d)
        return Decision(assignment={m.id: {} for m in snap.members}, method="flow", status="optimal",
                        objective=cost, bound=cost, extra={"sum_squared_loads": 0, "cost": cost})
    member_ok = d.member_class >= 0
    graph = beta = None
    if _WARM_START and d.n_classes > 1 and not (d.rack_aware and d.tc != 0):
        graph = _class_graph(d)
        warm = _warm_start(d, graph)
        if warm is not None:
            return _decision(d, warm, "warm-start", t0)
    if d.n_classes >= _MANY_CLASSES:
        graph = graph or _class_graph(d)
        beta = _min_max_load(d, *graph)
    if beta is not None and beta <= _SMALL_LOADS:
        # many classes and small loads: phase 1 would cost what phase 2 does; price every load level
        # instead (every square-sum-minimal load vector is decreasingly minimal, so no load exceeds beta)
        class_load = None
        lo = np.zeros(M, dtype=np.int64)
        hi = np.where(member_ok, beta + 1, 0)
    else:
        class_load = _class_loads(d, graph, beta)
        size = np.bincount(d.member_class[member_ok], minlength=d.n_classes)
        base = np.zeros(M, dtype=np.int64)
        base[member_ok] = class_load[d.member_class[member_ok]] // size[d.member_class[member_ok]]
        lo = np.where(member_ok, np.maximum(base - 1, 0), 0)
        hi = np.where(member_ok, base + 2, 0)  # exclusive; loads in [base - 1, base + 1] (+1 if the split is uneven)
    _check_deadline(deadline, "before the flow was solved (while building the model)")
    decision = _equal_subscriptions(d) if _FAST_PATH else None
    shortcut = "equal-subscriptions" if decision is not None else None
    if decision is None:
        decision = _phase2(d, lo, hi)
    if decision is None:  # cannot happen if the window theorem holds; stay exact anyway
        beta = (int(class_load.max()) if class_load is not None else int(hi.max())) + 1
        decision = _phase2(d, np.zeros(M, dtype=np.int64), np.where(member_ok, beta + 1, 0))
    if decision is None:
        raise SolverFaultError("the consumer flow found no feasible assignment")
    return _decision(d, decision, shortcut, t0)


def _decision(d: _Data, solved: tuple, shortcut: str | None, t0: float) -> Decision:
    """The proven optimum as a Decision, from what :func:`_phase2` (or a shortcut) returns."""
    assignment, cost, sumsq = solved
    cost += d.noc * _orphaned(d)
    return Decision(assignment=assignment, method="flow", status="optimal", objective=cost, bound=cost,
                    extra={"sum_squared_loads": sumsq, "cost": cost, "build_and_solve_s": time.perf_counter() - t0,
                           "shortcut": shortcut})


def _flat_owners(d: _Data) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every partition of an assignable topic numbered topic-major: partitions per topic, the topics'
    offsets, and each partition's valid previous owner (-1: none)."""
    sizes = np.fromiter((d.snap.topics[t].partitions for t in d.topics), dtype=np.int64, count=len(d.topics))
    offsets = np.zeros(len(d.topics) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    if d.every_topic:  # the previous owners' one array
        owner = d.prev.all.astype(np.int64)
    else:
        owner = np.concatenate([d.prev.owner[t] for t in d.topics]).astype(np.int64) if d.topics else \
            np.zeros(0, dtype=np.int64)
    return sizes, offsets, owner


def _as_assignment(d: _Data, new_owner: np.ndarray, offsets: np.ndarray) -> ArrayAssignment:
    """A topic-major owner array (see :func:`_flat_owners`) as the assignment."""
    return ArrayAssignment.of_flat(d.snap, d.topics, new_owner, offsets)


_GREEDY_ARCS_PER_TOPIC = 100  # the warm start deals greedily first from this many readers per orphaned topic
_FAST_PATH = True  # tests switch it off to hold the closed form against the flow
_WARM_START = True  # ... and this one to hold the warm start against it
_LEVEL_DEAL = True  # ... and this one to hold the water-level deal against the least-squares flow


def _warm_start(d: _Data, graph: tuple):
    """Keep every validly owned partition, deal the others out, and prove that optimal; else None.

    With mixed subscriptions and no rack costs, a rebalance where members only
    leave often needs no move beyond the orphans: every valid owner keeps all
    it owns (the fewest moves any assignment can make), and the orphans are
    dealt to their topics' readers at the least sum of squares given those
    kept loads (:func:`_deal_orphans`). That is the optimum exactly when its loads have the least sum of squares,
    and a load vector has it exactly when no chain of single-partition
    handovers (a member holding a partition of a topic that the next member
    reads) leads from a member with load ``l`` to one with ``l - 2`` or less:
    such a chain is the only kind of negative cycle the balance flow can have.
    The proof is a reachability search over members and topics (numpy, no
    step per partition); when it fails, the flow decides. Returns what
    :func:`_phase2` returns.
    """
    M, T = len(d.snap.members), len(d.topics)
    sizes = graph[0]  # partitions per topic
    ok = d.member_class >= 0
    reads = _class_reads(d) & (sizes > 0)[None, :]  # the graph's arcs as a matrix (see _class_graph)
    sub = np.zeros((M, T), dtype=bool)
    sub[ok] = reads[d.member_class[ok]]
    P, offsets, owner = _flat_owners(d)
    topic_of = np.repeat(np.arange(T), P)
    claimed = owner >= 0
    cell = owner * T + topic_of  # (owner, topic) as one flat index (1-D gathers: a third faster than 2-D)
    keep = claimed.copy()
    keep[claimed] = sub.ravel()[cell[claimed]]
    load = np.bincount(owner[keep], minlength=M)
    holds = np.zeros(M * T, dtype=bool)
    holds[cell[keep]] = True
    holds = holds.reshape(M, T)
    orphans = np.bincount(topic_of[~keep], minlength=T)

    def loads_after(dealt) -> np.ndarray:
        _, dm, dn = dealt
        return load + np.bincount(dm, weights=dn, minlength=M).astype(np.int64)

    def optimal(dealt) -> bool:  # the proof, for a deal of either kind
        dj, dm, _ = dealt
        holding = holds.copy()
        holding[dm, dj] = True
        return _least_square_sum(loads_after(dealt), ok, holding, sub)

    # the greedy deal first where the flow would be large (it costs a few numpy steps per topic and
    # round, the flow about a microsecond per reader arc), then the flow's; the proof decides either way
    wanted = orphans > 0
    dealt = None
    if int(np.count_nonzero(sub[:, wanted][ok])) > _GREEDY_ARCS_PER_TOPIC * int(np.count_nonzero(wanted)):
        dealt = _deal_greedy(load, ok, sub, orphans, optimal)
    if dealt is None and _LEVEL_DEAL:
        dealt = _deal_level(load, ok, sub, orphans)
        if dealt is not None and not optimal(dealt):
            dealt = None
    if dealt is None:
        dealt = _deal_orphans(load, ok, sub, orphans)
        if dealt is None or not optimal(dealt):
            return None
    _, dm, dn = dealt
    load = loads_after(dealt)
    new_owner = np.where(keep, owner, -1)
    free = np.flatnonzero(~keep)  # topic-major, as (dj, dm) are
    new_owner[free] = np.repeat(dm, dn)
    moves = int(np.count_nonzero(claimed)) - int(np.count_nonzero(keep))
    return _as_assignment(d, new_owner, offsets), d.noc * moves, int(np.dot(load, load))


def _deal_greedy(load: np.ndarray, ok: np.ndarray, sub: np.ndarray, orphans: np.ndarray, accept=None,
                 sweeps: int = 3):
    """The orphans dealt topic by topic (fewest readers first), each topic's filling its readers' lowest
    loads level by level (ties: member order); then, while ``accept`` refuses the deal, each topic's share
    taken back and dealt again against the others' (up to ``sweeps`` rounds in all). A few numpy steps per
    topic, no flow, and not optimal in general: :func:`_warm_start` accepts a deal only with the proof of
    :func:`_least_square_sum`, and else tries :func:`_deal_orphans`. Returns (topic, member, count)
    arrays sorted by topic, or None when no round was accepted or a topic has no reader.

    >>> _deal_greedy(np.array([5, 1, 2]), np.ones(3, bool), np.ones((3, 1), bool), np.array([4]))
    (array([0, 0]), array([1, 2]), array([3, 1]))
    """
    load = load.copy()
    want = np.flatnonzero(orphans > 0)
    if not len(want):
        z = np.zeros(0, dtype=np.int64)
        return z, z, z
    readers_of = sub[:, want] & ok[:, None]
    counts_of = readers_of.sum(axis=0)
    if not counts_of.all():
        return None
    readers = [np.flatnonzero(readers_of[:, c]) for c in range(len(want))]
    share: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(want)  # per column: members, counts
    for _ in range(max(1, sweeps)):
        for col in np.argsort(counts_of, kind="stable").tolist():
            old = share[col]
            if old is not None:
                load[old[0]] -= old[1]
            k = int(orphans[want[col]])
            share[col] = _fill_lowest(load, readers[col], k)
            load[share[col][0]] += share[col][1]
        j = np.repeat(want, [len(m) for m, _ in share])
        m = np.concatenate([m for m, _ in share]).astype(np.int64)
        n = np.concatenate([c for _, c in share]).astype(np.int64)
        order = np.lexsort((m, j))  # by topic, then member: the order the decoding deals partitions in
        dealt = j[order], m[order], n[order]
        if accept is None or accept(dealt):
            return dealt
    return None


def _fill_lowest(load: np.ndarray, readers: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``k`` units dealt to ``readers`` (ascending member indexes), lifting the lowest loads level by level,
    ties to the lower index: (members, units each). When the readers at the lowest load are at least ``k``,
    the first ``k`` of them take one each, which is what the levels give then, in a third of the steps.

    >>> _fill_lowest(np.array([3, 1, 1, 2]), np.array([0, 1, 2, 3]), 2)
    (array([1, 2]), array([1, 1]))
    >>> _fill_lowest(np.array([3, 1, 1, 2]), np.array([0, 1, 2, 3]), 4)
    (array([1, 2]), array([2, 2]))
    """
    low = load[readers]
    lowest = readers[low == low.min()]
    if k <= len(lowest):
        return lowest[:k], np.ones(k, dtype=load.dtype)
    order = readers[np.argsort(low, kind="stable")]  # by load, then member index
    low = load[order]
    i, level, extra = _water_level(low, k)  # the first i readers take them all
    give = level - low[:i]
    give[:extra] += 1
    take = give > 0
    return order[:i][take], give[take]


def _water_level(low: np.ndarray, units: int) -> tuple[int, int, int]:
    """``units`` dealt to readers of loads ``low`` (ascending), the lowest lifted first: how many readers take
    them (the lowest ``k``), the level they reach, and how many of those end one above it (``extra``).

    >>> _water_level(np.array([1, 1, 2, 3]), 4)  # 1, 1, 2 and four units: 3, 3, 2
    (3, 2, 2)
    """
    lifted = np.cumsum(low)
    need = np.arange(1, len(low) + 1) * low - lifted  # units that lift the readers up to each one to its load
    k = int(np.searchsorted(need, units, side="right"))
    level, extra = divmod(units + int(lifted[k - 1]), k)
    return k, level, extra


def _deal_level(load: np.ndarray, ok: np.ndarray, sub: np.ndarray, orphans: np.ndarray):
    """The orphans dealt into the water level by two max flows (topic -> reader -> sink), or None.

    The water level is what the orphans would give if any reader could take any orphan: the ``k`` lowest
    readers lifted to a level ``L``, ``extra`` of them one above it. No deal has a smaller sum of squares,
    so a deal that reaches it is optimal among deals. The first max flow fills every lifted reader up to
    ``L`` exactly (else None: the topics do not allow that shape, and the least-squares flow of
    :func:`_deal_orphans` decides); the second places the ``extra`` units one per reader on the first
    one's residual graph (a reader may hand a partition of a topic back for one of another topic it reads),
    so the first fill stays. The two max flows cost under half that least-squares flow (10,000 x 100,
    1,003 orphans over 48 topics: 0.54 against 1.25 ms). :func:`_warm_start` still takes the deal only
    with the proof of :func:`_least_square_sum`. Returns (topic, member, count) arrays sorted by topic.

    >>> sub = np.array([[True, False], [True, True], [False, True]])
    >>> _deal_level(np.array([4, 0, 1]), np.ones(3, bool), sub, np.array([2, 3]))
    (array([0, 1, 1]), array([1, 1, 2]), array([2, 1, 2]))
    >>> _deal_level(np.array([0, 0]), np.ones(2, bool), np.array([[True, True], [False, True]]), np.array([3, 1]))
    """
    total = int(orphans.sum())
    if not total:
        z = np.zeros(0, dtype=np.int64)
        return z, z, z
    max_flow, _ = _ortools()
    M, T = sub.shape
    want = np.flatnonzero(orphans > 0)
    rows, cols = nonzero_pairs(sub[:, want].T & ok[None, :])  # (topic with orphans, reader), topic-major
    if not len(cols):
        return None
    tj = want[rows]
    readers = np.flatnonzero(np.bincount(cols, minlength=M))
    _, level, extra = _water_level(np.sort(load[readers]), total)
    fill = np.maximum(0, level - load[readers])
    source, sink = T + M, T + M + 1
    # first: every lifted reader exactly to the level
    f = max_flow.SimpleMaxFlow()
    f.add_arcs_with_capacity(np.full(len(want), source), want, orphans[want].astype(np.int64))
    deal_arcs = f.add_arcs_with_capacity(tj, T + cols, orphans[tj].astype(np.int64))
    f.add_arcs_with_capacity(T + readers, np.full(len(readers), sink), fill.astype(np.int64))
    if f.solve(source, sink) != f.OPTIMAL or f.optimal_flow() != total - extra:
        return None
    flow = f.flows(deal_arcs)
    if extra:
        # then: one more for ``extra`` readers at the level, on the residual graph of the first flow
        taken = np.bincount(rows, weights=flow, minlength=len(want)).astype(np.int64)
        at_level = np.zeros(M, dtype=bool)
        at_level[readers[load[readers] + fill == level]] = True
        g = max_flow.SimpleMaxFlow()
        g.add_arcs_with_capacity(np.full(len(want), source), want, orphans[want] - taken)
        more = g.add_arcs_with_capacity(tj, T + cols, orphans[tj].astype(np.int64) - flow)
        back = g.add_arcs_with_capacity(T + cols, tj, flow.astype(np.int64))
        top = np.flatnonzero(at_level)
        g.add_arcs_with_capacity(T + top, np.full(len(top), sink), np.ones(len(top), dtype=np.int64))
        if g.solve(source, sink) != g.OPTIMAL or g.optimal_flow() != extra:
            return None
        flow = flow + g.flows(more) - g.flows(back)
    used = flow > 0
    return tj[used], cols[used], flow[used].astype(np.int64)


def _deal_orphans(load: np.ndarray, ok: np.ndarray, sub: np.ndarray, orphans: np.ndarray):
    """The orphans of each topic dealt to its readers with the least sum of squared loads, the kept loads
    fixed: one small flow (topic -> reader -> sink, one unit arc per load level). Returns (topic, member,
    count) arrays sorted by topic, or None when the levels offered do not take every orphan."""
    total = int(orphans.sum())
    if not total:
        z = np.zeros(0, dtype=np.int64)
        return z, z, z
    M, T = sub.shape
    readable = sub.astype(np.int64) @ orphans  # no member takes more orphans than it reads
    top = max(int(load[ok].max()), -(-(int(load[ok].sum()) + total) // int(ok.sum()))) + 1
    first = _deal_flow(load, sub, orphans, total, np.where(ok, np.minimum(np.maximum(top - load, 0), readable), 0))
    if first is not None or int(readable.sum()) > _WARM_MAX_LEVELS:
        return first
    return _deal_flow(load, sub, orphans, total, np.where(ok, readable, 0))  # a few members must take far more


_WARM_MAX_LEVELS = 2_000_000  # load-level arcs the warm start may build before it leaves the question to the flow


def _deal_flow(load: np.ndarray, sub: np.ndarray, orphans: np.ndarray, total: int, levels: np.ndarray):
    _, min_cost_flow = _ortools()
    M, T = sub.shape
    rows, cols = nonzero_pairs(sub[:, orphans > 0].T)  # (topic with orphans, reader), topic-major
    tj = np.flatnonzero(orphans > 0)[rows]
    lm = np.repeat(np.arange(M), levels)
    q = load[lm] + np.arange(len(lm)) - np.repeat(np.cumsum(levels) - levels, levels)
    f = min_cost_flow.SimpleMinCostFlow()
    deal_arcs = f.add_arcs_with_capacity_and_unit_cost(tj, T + cols, orphans[tj].astype(np.int64),
                                                       np.zeros(len(tj), dtype=np.int64))
    f.add_arcs_with_capacity_and_unit_cost(T + lm, np.full(len(lm), T + M, dtype=np.int64),
                                           np.ones(len(lm), dtype=np.int64), 2 * q + 1)
    supplies = np.zeros(T + M + 1, dtype=np.int64)
    supplies[:T] = orphans
    supplies[T + M] = -total
    f.set_nodes_supplies(np.arange(T + M + 1), supplies)
    if f.solve() != f.OPTIMAL:
        return None
    flow = f.flows(deal_arcs)
    used = flow > 0
    return tj[used], cols[used], flow[used].astype(np.int64)


def _least_square_sum(load: np.ndarray, ok: np.ndarray, holds: np.ndarray, sub: np.ndarray) -> bool:
    """No handover chain from a member with load ``l`` to one with ``l - 2`` or less (see :func:`_warm_start`).

    >>> sub = np.array([[True], [True]])
    >>> _least_square_sum(np.array([3, 1]), np.array([True, True]), np.array([[True], [False]]), sub)
    False
    >>> _least_square_sum(np.array([2, 1]), np.array([True, True]), np.array([[True], [True]]), sub)
    True
    """
    if not ok.any():
        return True
    low = int(load[ok].min())
    for level in sorted(set(load[ok].tolist()), reverse=True):
        if level < low + 2:
            break
        topics = holds[ok & (load >= level)].any(axis=0)
        while True:
            members = sub[:, topics].any(axis=1)
            if (members & (load <= level - 2)).any():
                return False
            more = topics | holds[members].any(axis=0)
            if (more == topics).all():
                break
            topics = more
    return True


def _equal_subscriptions(d: _Data):
    """The optimum in closed form when every member reads the same topics and racks cost nothing.

    Then any partition can go to any member, so only each member's total matters: the loads are
    ``q = P // n`` or ``q + 1`` (``r = P % n`` members get ``q + 1``), and a member keeps at most its load of
    the partitions it validly owned. The kept total ``sum min(owned_m, quota_m)`` is largest when the ``r``
    larger quotas go to the members that owned the most (an exchange argument: a ``q + 1`` quota gains one
    kept partition exactly when its member owned more than ``q``), so moves are least; ties go by member
    order. As in the flow's decoding, a member keeps its lowest partitions (topic order, then number), and
    the rest, in that order, fill the members still short of their quota, in member order. Returns what
    :func:`_phase2` returns, or None when the shape does not apply (the flow then decides).
    """
    if d.n_classes != 1 or (d.rack_aware and d.tc != 0):
        return None
    M = len(d.snap.members)
    readers = np.flatnonzero(d.member_class == 0)
    n = len(readers)
    _, offsets, owner = _flat_owners(d)
    total = int(offsets[-1])
    claimed = owner >= 0
    keepable = claimed.copy()
    keepable[claimed] = d.member_class[owner[claimed]] == 0
    owned_cnt = np.bincount(owner[keepable], minlength=M)
    q, r = divmod(total, n)
    quota = np.zeros(M, dtype=np.int64)
    quota[readers] = q
    by_owned = readers[np.argsort(-owned_cnt[readers], kind="stable")]
    quota[by_owned[:r]] += 1
    # keep: the first min(owned, quota) of each member's owned partitions in partition order
    if d.prev.by_member is not None and d.every_topic:  # the claims came in that order
        held, holder = d.prev.by_member
        mine = d.member_class[holder] == 0
        if not mine.all():
            held, holder = held[mine], holder[mine]
    else:
        held = np.flatnonzero(keepable)
        holder = owner[held]
        order = stable_order(holder, M)  # a stable sort by holder (by radix below 32,768 members)
        held, holder = held[order], holder[order]
    start = np.searchsorted(holder, np.arange(M))
    rank = np.arange(len(held)) - start[holder]
    keep = rank < quota[holder]
    new_owner = np.full(total, -1, dtype=np.int64)
    new_owner[held[keep]] = holder[keep]
    kept = np.bincount(holder[keep], minlength=M)
    short = quota - kept
    moving = np.flatnonzero(new_owner < 0)
    if len(moving) != int(short.sum()):
        raise SolverFaultError("the closed form dealt a different number of partitions than the quotas take")
    new_owner[moving] = np.repeat(np.arange(M), short)
    moves = int(np.count_nonzero(claimed)) - int(keep.sum())
    sumsq = int(np.dot(quota, quota))
    return _as_assignment(d, new_owner, offsets), d.noc * moves, sumsq


def _orphaned(d: _Data) -> int:
    """Owned partitions of topics nobody subscribes to any more: moves every assignment must make."""
    return sum(int(np.count_nonzero(d.prev.owner[t] >= 0)) for t, r in zip(d.snap.topics, d.read.tolist()) if not r)


def _phase2(d: _Data, lo: np.ndarray, hi: np.ndarray):
    snap = d.snap
    M = len(snap.members)
    _, min_cost_flow = _ortools()
    tc = d.tc if d.rack_aware else 0
    noc = d.noc
    # only the ratio of the two costs matters: dividing both by their gcd keeps the optimum and keeps large
    # configured costs inside the solver's 64-bit range; the cost is scaled back after the solve
    scale = math.gcd(tc, noc) or 1
    tc, noc = tc // scale, noc // scale

    # ---- data: every partition of an assignable topic, numbered topic-major (g), in numpy
    T = len(d.topics)
    sizes, offsets, owner = _flat_owners(d)
    total = int(offsets[-1])
    # replica rack sets, numbered in order of appearance; 0 is "none known": never cross-rack
    rs_index: dict[frozenset[str], int] = {frozenset(): 0}
    rs = np.zeros(total, dtype=np.int64)
    if d.rack_aware:
        for j, t in enumerate(d.topics):
            racks = snap.topics[t].racks
            if racks is not None:  # new rack sets numbered on in order of first appearance
                rs[offsets[j]:offsets[j + 1]] = first_seen_ids(racks, rs_index)
    racksets = list(rs_index)
    NR = len(racksets)
    # topic classes: topics read by the same member classes are interchangeable, so their partitions
    # share groups and pools (with distinct readers per topic, a topic class is just the topic)
    reads = _class_reads(d)  # member class x topic
    tclass_id: dict[bytes, int] = {}
    topic_tclass = np.fromiter((tclass_id.setdefault(reads[:, j].tobytes(), len(tclass_id)) for j in range(T)),
                               dtype=np.int64, count=T)
    NT = len(tclass_id)
    first_topic = np.full(NT, T, dtype=np.int64)
    np.minimum.at(first_topic, topic_tclass, np.arange(T))
    class_reads = reads[:, first_topic]  # member class x topic class
    tclass_total = np.bincount(topic_tclass, weights=sizes, minlength=NT).astype(np.int64)
    # member racks (-1: none) and the cross-rack table: rack set x member rack (last column: no rack)
    member_rack, rack_id = snap._rack_codes() if d.rack_aware else (np.full(M, -1, dtype=np.int64), {})
    cross_tab = np.zeros((NR, len(rack_id) + 1), dtype=np.int64)
    for s_id, rset in enumerate(racksets):
        if rset:
            for r, r_id in rack_id.items():
                cross_tab[s_id, r_id] = r not in rset

    # ---- pools: (topic class, rack set); groups: (topic class, previous owner, rack set)
    tcl = np.repeat(topic_tclass, sizes)
    pool_key = tcl * NR + rs
    if NR == 1:  # no racks: one pool per topic class
        present = np.arange(NT, dtype=np.int64)
        pool_of = tcl
    else:  # pools of a topic class in order of first appearance of their rack set
        keys, first, pool_of = np.unique(pool_key, return_index=True, return_inverse=True)
        rank = np.lexsort((first, keys // NR))
        present = keys[rank]
        pool_of = np.argsort(rank)[pool_of]
    NP = len(present)
    pool_tclass, pool_rs = present // NR, present % NR
    owned = np.flatnonzero(owner >= 0)
    gkey = (tcl[owned] * M + owner[owned]) * NP + pool_of[owned]
    order = np.argsort(gkey, kind="stable")
    so, skey = owned[order], gkey[order]  # owned partitions by group, ascending within a group
    gstart = np.flatnonzero(np.r_[True, skey[1:] != skey[:-1]]) if len(so) else np.zeros(0, dtype=np.int64)
    G = len(gstart)
    g_size = np.diff(np.r_[gstart, len(so)]).astype(np.int64)
    g_pool = pool_of[so[gstart]]
    g_owner = owner[so[gstart]]
    g_tclass = pool_tclass[g_pool]
    unowned = np.flatnonzero(owner < 0)
    pool_supply = np.bincount(pool_of[unowned], minlength=NP)

    # ---- the graph. Nodes: members [0, M), cells [M, M + C), sink, pools. Arcs, per topic class: its
    # pools' arcs to the cells that read it, then each group's keep arc (when the owner still reads
    # the topics); then cell -> member and member -> sink.
    C = len(d.cells)
    sink = M + C
    pool_node = sink + 1 + np.arange(NP)
    n_nodes = sink + 1 + NP
    cell_class = np.array([c for c, _ in d.cells], dtype=np.int64)
    cell_rack = np.array([rack_id.get(r, -1) if r is not None else -1 for _, r in d.cells], dtype=np.int64)
    oc = d.member_class[g_owner]
    kg = np.flatnonzero((oc >= 0) & class_reads[np.maximum(oc, 0), g_tclass])
    pc_pool, pc_cell = nonzero_pairs(class_reads[cell_class][:, pool_tclass].T)  # pool-major, cells ascending
    # (topic class, position within it, tail, head, capacity, cost)
    blocks = [
        (pool_tclass[pc_pool], np.arange(len(pc_pool)), pool_node[pc_pool], M + pc_cell,
         tclass_total[pool_tclass[pc_pool]], tc * cross_tab[pool_rs[pc_pool], cell_rack[pc_cell]]),
        (g_tclass[kg], len(pc_pool) + kg, pool_node[g_pool[kg]], g_owner[kg], g_size[kg],
         tc * cross_tab[pool_rs[g_pool[kg]], member_rack[g_owner[kg]]] - noc),
    ]
    arc_order = np.lexsort((np.concatenate([b[1] for b in blocks]), np.concatenate([b[0] for b in blocks])))
    is_keep = np.repeat([False, True], [len(b[0]) for b in blocks])[arc_order]
    source = np.concatenate([b[1] for b in blocks])[arc_order]  # pool -> cell arc index, or len(pc) + group
    tails, heads, caps, costs = (np.concatenate([b[i] for b in blocks])[arc_order] for i in range(2, 6))
    in_cell = np.flatnonzero(d.member_cell >= 0)
    W = total * (noc + tc) + 1
    units = np.maximum(hi - lo, 0)
    um = np.repeat(np.arange(M), units)
    k = lo[um] + 1 + (np.arange(len(um)) - np.repeat(np.cumsum(units) - units, units))  # the k-th unit of member um
    n_first = len(tails)
    if len(k) and W * (2 * int(k.max()) - 1) * (n_nodes + 1) >= 2**63:  # what the solver's own check refuses
        raise _cost_range(d, total)
    f = min_cost_flow.SimpleMinCostFlow()
    # every piece int64: a float64 piece (np.zeros, np.ones) would make the whole array float64 and round
    # unit costs above 2**53 (large costs at large sizes) before the solver sees them
    i64 = np.int64
    f.add_arcs_with_capacity_and_unit_cost(
        np.concatenate([tails, M + d.member_cell[in_cell], um]).astype(i64),
        np.concatenate([heads, in_cell, np.full(len(um), sink, dtype=i64)]).astype(i64),
        np.concatenate([caps, np.full(len(in_cell), total, dtype=i64), np.ones(len(um), dtype=i64)]).astype(i64),
        np.concatenate([costs, np.zeros(len(in_cell), dtype=i64), W * (2 * k - 1)]).astype(i64))
    supply = np.zeros(n_nodes, dtype=np.int64)
    supply[pool_node] = pool_supply + np.bincount(g_pool, weights=g_size, minlength=NP).astype(np.int64)
    supply[:M] -= lo
    supply[sink] = -(total - int(lo.sum()))
    f.set_nodes_supplies(np.arange(n_nodes), supply)
    status = f.solve()
    if status == f.INFEASIBLE:
        return None
    if status == f.BAD_COST_RANGE:
        raise _cost_range(d, total)
    if status != f.OPTIMAL:
        raise SolverFaultError(f"min-cost flow ended with status {status}")
    flow = f.flows(np.arange(n_first + len(in_cell)))

    # ---- decode: a group's owner keeps its lowest partitions; the rest of a pool (and its unowned
    # partitions), by partition, is dealt to its cells in arc order, and a cell's share to its members
    # in member order
    first_flow = flow[:n_first]
    new_owner = np.full(total, -1, dtype=np.int64)
    kept = np.zeros(G, dtype=np.int64)
    kept[source[is_keep] - len(pc_pool)] = first_flow[is_keep]
    grp = np.repeat(np.arange(G), g_size)
    rank = np.arange(len(so)) - np.repeat(gstart, g_size)
    is_kept = rank < kept[grp]
    new_owner[so[is_kept]] = g_owner[grp[is_kept]]
    moving = np.concatenate([so[~is_kept], unowned])
    moving = moving[np.argsort(pool_of[moving] * total + moving, kind="stable")]  # by pool, then partition
    pc_flow = first_flow[~is_keep]  # pool -> cell arcs, pool by pool in pool order, cells ascending
    pc_idx = source[~is_keep]
    if not np.array_equal(np.repeat(pc_pool[pc_idx], pc_flow), pool_of[moving]):
        raise SolverFaultError("the pools dealt a different number of partitions than they hold")
    to_cell = np.repeat(pc_cell[pc_idx], pc_flow)
    by_cell = np.argsort(to_cell, kind="stable")
    cm_flow = flow[n_first:]
    cm_order = np.argsort(d.member_cell[in_cell], kind="stable")  # by cell, then member index
    if not np.array_equal(np.repeat(d.member_cell[in_cell][cm_order], cm_flow[cm_order]), to_cell[by_cell]):
        raise SolverFaultError("the cells dealt a different number of partitions than they received")
    new_owner[moving[by_cell]] = np.repeat(in_cell[cm_order], cm_flow[cm_order])
    assignment = _as_assignment(d, new_owner, offsets)
    loads = np.bincount(new_owner[new_owner >= 0], minlength=M).astype(np.int64)
    sumsq = int(np.dot(loads, loads))
    cost = int(f.optimal_cost()) - _unit_cost_part(lo, loads, W) + noc * len(so)
    return assignment, cost * scale, sumsq


def _cost_range(d: _Data, total: int) -> CostRangeError:
    return CostRangeError(f"traffic_cost {d.tc} and non_overlap_cost {d.noc} are too large for an exact 64-bit flow "
                          f"over {total} partitions (the same ratio in smaller numbers gives the same optimum)")


def _unit_cost_part(lo: np.ndarray, loads: np.ndarray, W: int) -> int:
    """The convex-arc share of the flow cost: W * (load^2 - lo^2), the units above each lower bound."""
    return int(W * (np.dot(loads, loads) - np.dot(lo, lo)))
