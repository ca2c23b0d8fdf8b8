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
subscriptions have a closed form (:func:`.closed_form.equal_subscriptions`), and with mixed
ones a rebalance that moves nothing beyond the orphans is found and proven by a
warm start (:func:`.warm_start.try_warm_start`); ``tests/test_consumer_closed_form.py`` and
``tests/test_consumer_warm_start.py`` hold both against the flow.
"""

from __future__ import annotations

import math
import time

import numpy as np

from stickyflow.errors import CostRangeError, SolverFaultError, TimeLimitError
from stickyflow.model.arrays import nonzero_pairs
from stickyflow.model.consumer import ConsumerSnapshot
from stickyflow.model.consumer_members import first_seen_ids
from stickyflow.result import Decision

from .closed_form import equal_subscriptions
from ..cpsat_backend import ortools_graph
from .model import ConsumerData, as_assignment, class_graph, class_reads, flat_owners, orphaned, prepare
from .warm_start import try_warm_start

__all__ = ["solve_flow"]

# --------------------------------------------------------------------------- phase 1: class loads


def _class_loads(d: ConsumerData, graph: tuple | None = None, beta: int | None = None) -> np.ndarray:
    """Per class, the total load of one square-sum-minimal assignment (members of a class split it evenly)."""
    n_classes = d.n_classes
    if n_classes == 0:
        return np.zeros(0, dtype=np.int64)
    if n_classes == 1:
        return np.array([sum(d.snap.topics[t].partitions for t in d.topics)], dtype=np.int64)
    P, tail, head, size = graph or class_graph(d)
    total_c = np.bincount(head, weights=P[tail], minlength=n_classes).astype(np.int64)
    if beta is None:
        beta = _min_max_load(d, P, tail, head, size)
    hi = np.minimum(beta, -(-total_c // size))  # per-member load never exceeds these

    _, min_cost_flow = ortools_graph()
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


def _min_max_load(d: ConsumerData, P: np.ndarray, tail: np.ndarray, head: np.ndarray, size: np.ndarray) -> int:
    """The smallest per-member maximum load any valid assignment reaches (bisection on max flows)."""
    max_flow, _ = ortools_graph()
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


def solve_flow(snap: ConsumerSnapshot, deadline: float | None = None) -> Decision:
    t0 = time.perf_counter()
    d = prepare(snap)
    M = len(snap.members)
    if not d.topics:
        cost = d.noc * orphaned(d)
        return Decision(assignment={m.id: {} for m in snap.members}, method="flow", status="optimal",
                        objective=cost, bound=cost, extra={"sum_squared_loads": 0, "cost": cost})
    member_ok = d.member_class >= 0
    graph = beta = None
    if _WARM_START and d.n_classes > 1 and not (d.rack_aware and d.tc != 0):
        graph = class_graph(d)
        warm = try_warm_start(d, graph)
        if warm is not None:
            return _decision(d, warm, "warm-start", t0)
    if d.n_classes >= _MANY_CLASSES:
        graph = graph or class_graph(d)
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
    decision = equal_subscriptions(d) if _FAST_PATH else None
    shortcut = "equal-subscriptions" if decision is not None else None
    if decision is None:
        decision = _phase2(d, lo, hi)
    if decision is None:  # cannot happen if the window theorem holds; stay exact anyway
        beta = (int(class_load.max()) if class_load is not None else int(hi.max())) + 1
        decision = _phase2(d, np.zeros(M, dtype=np.int64), np.where(member_ok, beta + 1, 0))
    if decision is None:
        raise SolverFaultError("the consumer flow found no feasible assignment")
    return _decision(d, decision, shortcut, t0)


def _decision(d: ConsumerData, solved: tuple, shortcut: str | None, t0: float) -> Decision:
    """The proven optimum as a Decision, from what :func:`_phase2` (or a shortcut) returns."""
    assignment, cost, sumsq = solved
    cost += d.noc * orphaned(d)
    return Decision(assignment=assignment, method="flow", status="optimal", objective=cost, bound=cost,
                    extra={"sum_squared_loads": sumsq, "cost": cost, "build_and_solve_s": time.perf_counter() - t0,
                           "shortcut": shortcut})


_FAST_PATH = True  # tests switch it off to hold the closed form against the flow
_WARM_START = True  # ... and this one to hold the warm start against it

def _phase2(d: ConsumerData, lo: np.ndarray, hi: np.ndarray):
    snap = d.snap
    M = len(snap.members)
    _, min_cost_flow = ortools_graph()
    tc = d.tc if d.rack_aware else 0
    noc = d.noc
    # only the ratio of the two costs matters: dividing both by their gcd keeps the optimum and keeps large
    # configured costs inside the solver's 64-bit range; the cost is scaled back after the solve
    scale = math.gcd(tc, noc) or 1
    tc, noc = tc // scale, noc // scale

    # ---- data: every partition of an assignable topic, numbered topic-major (g), in numpy
    T = len(d.topics)
    sizes, offsets, owner = flat_owners(d)
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
    reads = class_reads(d)  # member class x topic
    tclass_id: dict[bytes, int] = {}
    topic_tclass = np.fromiter((tclass_id.setdefault(reads[:, j].tobytes(), len(tclass_id)) for j in range(T)),
                               dtype=np.int64, count=T)
    NT = len(tclass_id)
    first_topic = np.full(NT, T, dtype=np.int64)
    np.minimum.at(first_topic, topic_tclass, np.arange(T))
    tclass_reads = reads[:, first_topic]  # member class x topic class
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
    kg = np.flatnonzero((oc >= 0) & tclass_reads[np.maximum(oc, 0), g_tclass])
    pc_pool, pc_cell = nonzero_pairs(tclass_reads[cell_class][:, pool_tclass].T)  # pool-major, cells ascending
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
    assignment = as_assignment(d, new_owner, offsets)
    loads = np.bincount(new_owner[new_owner >= 0], minlength=M).astype(np.int64)
    sumsq = int(np.dot(loads, loads))
    cost = int(f.optimal_cost()) - _unit_cost_part(lo, loads, W) + noc * len(so)
    return assignment, cost * scale, sumsq


def _cost_range(d: ConsumerData, total: int) -> CostRangeError:
    return CostRangeError(f"traffic_cost {d.tc} and non_overlap_cost {d.noc} are too large for an exact 64-bit flow "
                          f"over {total} partitions (the same ratio in smaller numbers gives the same optimum)")


def _unit_cost_part(lo: np.ndarray, loads: np.ndarray, W: int) -> int:
    """The convex-arc share of the flow cost: W * (load^2 - lo^2), the units above each lower bound."""
    return int(W * (np.dot(loads, loads) - np.dot(lo, lo)))
