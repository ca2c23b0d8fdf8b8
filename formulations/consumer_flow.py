r"""The optimal consumer-group assignment as one min-cost flow (OR-Tools ``SimpleMinCostFlow``).

The model (the spec's lexicographic optimum):

    variables   x[p, m] in {0, 1}: partition p goes to member m (only if m subscribes to p's topic)
    constraints sum_m x[p, m] = 1 for every partition of a subscribed topic
    objective   lexicographic: first  sum_m load_m^2          (load_m = sum_p x[p, m])
                               then   noc * moves + tc * cross_rack

Partitions that are interchangeable (same topic, same valid previous owner,
same replica racks) form one *group*; members that are interchangeable for
newcomers (same subscription, same rack) form one *cell*. The graph::

    group(t, o, R) --keep: tc*[rack(o) not in R]--> member o
    group(t, o, R) --move: noc--> pool(t, R) --tc*[rack(c) not in R]--> cell(c) --0--> member m
    member m --convex load cost--> sink

so its size grows with groups and subscriptions, not partitions x members.
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
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from stickyflow.consumer import ConsumerSnapshot, PreviousOwners, previous_owners
from stickyflow.errors import BackendMissingError, SolverFaultError, UnknownAssignorError
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
    method = options.method or "flow"
    if method == "networkx":
        from .consumer_nx import solve_consumer_networkx

        return solve_consumer_networkx(snapshot, options)
    if method != "flow":
        raise UnknownAssignorError(f"method: {method!r} is not a consumer method (known: {', '.join(METHODS)})")
    return _solve_flow(snapshot)


# --------------------------------------------------------------------------- data

@dataclass(slots=True)
class _Data:
    """The problem compressed into groups, pools, classes and cells (numpy arrays where sizes grow)."""

    snap: ConsumerSnapshot
    prev: PreviousOwners
    topics: list[str]                 # assignable topics
    subscribers: dict[str, list[int]]
    member_class: np.ndarray          # member -> class id (-1: subscribes to nothing assignable)
    classes: list[frozenset[str]]
    member_cell: np.ndarray           # member -> cell id (-1 as above)
    cells: list[tuple[int, str | None]]  # (class id, rack or None)
    rack_aware: bool
    tc: int
    noc: int


def _prepare(snap: ConsumerSnapshot) -> _Data:
    subs = snap.subscribers()
    topics = [t for t in snap.topics if subs[t]]
    rack_aware = snap.rack_aware
    class_id: dict[frozenset[str], int] = {}
    cell_id: dict[tuple[int, str | None], int] = {}
    member_class = np.full(len(snap.members), -1, dtype=np.int64)
    member_cell = np.full(len(snap.members), -1, dtype=np.int64)
    for i, m in enumerate(snap.members):
        s = frozenset(t for t in m.subscription if t in snap.topics and snap.topics[t].partitions)
        if not s:
            continue
        c = class_id.setdefault(s, len(class_id))
        member_class[i] = c
        member_cell[i] = cell_id.setdefault((c, m.rack if rack_aware else None), len(cell_id))
    return _Data(snap=snap, prev=previous_owners(snap), topics=topics, subscribers=subs,
                 member_class=member_class, classes=list(class_id), member_cell=member_cell,
                 cells=list(cell_id), rack_aware=rack_aware,
                 tc=snap.config.traffic_cost, noc=snap.config.non_overlap_cost)


def _ortools():
    try:
        from ortools.graph.python import max_flow, min_cost_flow
    except ImportError as exc:  # pragma: no cover - exercised by the fallback tests via monkeypatch
        raise BackendMissingError("OR-Tools is not installed: pip install ortools (a core dependency)") from exc
    return max_flow, min_cost_flow


# --------------------------------------------------------------------------- phase 1: class loads

def _class_loads(d: _Data) -> np.ndarray:
    """Per class, the total load of one square-sum-minimal assignment (members of a class split it evenly)."""
    n_classes = len(d.classes)
    size = np.bincount(d.member_class[d.member_class >= 0], minlength=n_classes)
    P = np.array([d.snap.topics[t].partitions for t in d.topics], dtype=np.int64)
    if n_classes == 0:
        return np.zeros(0, dtype=np.int64)
    if n_classes == 1:
        return np.array([P.sum()], dtype=np.int64)
    tindex = {t: j for j, t in enumerate(d.topics)}
    tail, head = [], []
    for c, s in enumerate(d.classes):
        for t in d.topics:  # snapshot order, not set order: the arc order must not depend on hashing
            if t in s:
                tail.append(tindex[t])
                head.append(c)
    tail = np.asarray(tail, dtype=np.int64)
    head = np.asarray(head, dtype=np.int64)
    total_c = np.bincount(head, weights=P[tail], minlength=n_classes).astype(np.int64)
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


def _min_max_load(d: _Data, P: np.ndarray, tail: np.ndarray, head: np.ndarray, size: np.ndarray) -> int:
    """The smallest per-member maximum load any valid assignment reaches (bisection on max flows)."""
    max_flow, _ = _ortools()
    T, n_classes = len(d.topics), len(d.classes)
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
    while lo < hi:
        mid = (lo + hi) // 2
        if feasible(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


# --------------------------------------------------------------------------- phase 2: the real flow

def _solve_flow(snap: ConsumerSnapshot) -> Decision:
    t0 = time.perf_counter()
    d = _prepare(snap)
    M = len(snap.members)
    empty = {m.id: {} for m in snap.members}
    if not d.topics:
        cost = d.noc * _orphaned(d)
        return Decision(assignment=empty, method="flow", status="optimal", objective=cost, bound=cost,
                        extra={"sum_squared_loads": 0, "cost": cost})
    class_load = _class_loads(d)
    size = np.bincount(d.member_class[d.member_class >= 0], minlength=len(d.classes))
    member_ok = d.member_class >= 0
    base = np.zeros(M, dtype=np.int64)
    base[member_ok] = class_load[d.member_class[member_ok]] // size[d.member_class[member_ok]]
    lo = np.where(member_ok, np.maximum(base - 1, 0), 0)
    hi = np.where(member_ok, base + 2, 0)  # exclusive; loads in [base - 1, base + 1] (+1 if the split is uneven)
    decision = _phase2(d, lo, hi)
    if decision is None:  # cannot happen if the window theorem holds; stay exact anyway
        beta = int(class_load.max()) + 1
        decision = _phase2(d, np.zeros(M, dtype=np.int64), np.where(member_ok, beta + 1, 0))
    if decision is None:
        raise SolverFaultError("the consumer flow found no feasible assignment")
    assignment, cost, sumsq = decision
    cost += d.noc * _orphaned(d)
    return Decision(assignment=assignment, method="flow", status="optimal", objective=cost, bound=cost,
                    extra={"sum_squared_loads": sumsq, "cost": cost, "build_and_solve_s": time.perf_counter() - t0})


def _orphaned(d: _Data) -> int:
    """Owned partitions of topics nobody subscribes to any more: moves every assignment must make."""
    return sum(int(np.count_nonzero(d.prev.owner[t] >= 0)) for t in d.snap.topics if not d.subscribers[t])


def _phase2(d: _Data, lo: np.ndarray, hi: np.ndarray):
    snap = d.snap
    M = len(snap.members)
    _, min_cost_flow = _ortools()
    tc = d.tc if d.rack_aware else 0
    noc = d.noc
    member_rack = [m.rack for m in snap.members]

    # ---- groups and pools, per topic, with numpy
    # node numbering: members [0, M), cells [M, M + C), sink, then pools, then groups
    C = len(d.cells)
    sink = M + C
    next_node = sink + 1
    supplies: list[tuple[int, int]] = []
    tails, heads, caps, costs = [], [], [], []
    group_info = []   # (node, topic, owner, partitions array, keep arc slot or -1, move arc slot)
    pool_info = []    # (node, topic, rackset, unowned partitions array)
    total = 0
    arc_count = 0

    def add(t_, h_, c_, w_):
        nonlocal arc_count
        tails.append(np.atleast_1d(np.asarray(t_, dtype=np.int64)))
        heads.append(np.atleast_1d(np.asarray(h_, dtype=np.int64)))
        n = len(tails[-1])
        caps.append(np.broadcast_to(np.asarray(c_, dtype=np.int64), (n,)))
        costs.append(np.broadcast_to(np.asarray(w_, dtype=np.int64), (n,)))
        first = arc_count
        arc_count += n
        return first

    cell_class = np.array([c for c, _ in d.cells], dtype=np.int64)
    cell_rack = [r for _, r in d.cells]
    for t in d.topics:
        topic = snap.topics[t]
        P = topic.partitions
        total += P
        owner = d.prev.owner[t].astype(np.int64)
        if topic.racks is not None and d.rack_aware:
            rs_index: dict[frozenset[str], int] = {}
            rs = np.fromiter((rs_index.setdefault(r, len(rs_index)) for r in topic.racks), dtype=np.int64, count=P)
            racksets = list(rs_index)
        else:
            rs = np.zeros(P, dtype=np.int64)
            racksets = [frozenset()]
        nrs = len(racksets)
        # pools: one per rackset present
        pool_node = np.arange(next_node, next_node + nrs)
        next_node += nrs
        # pool -> cell arcs for the cells subscribing to t
        cells_t = [k for k in range(C) if t in d.classes[cell_class[k]]]
        for r_id, rset in enumerate(racksets):
            cross = np.array([bool(rset) and cell_rack[k] is not None and cell_rack[k] not in rset
                              for k in cells_t], dtype=np.int64)
            add(np.full(len(cells_t), pool_node[r_id]), M + np.asarray(cells_t, dtype=np.int64), P, tc * cross)
        # groups: partitions keyed by (owner, rackset), ascending partition order within each group
        key = (owner + 1) * nrs + rs
        order = np.argsort(key, kind="stable")
        skey = key[order]
        starts = np.flatnonzero(np.r_[True, skey[1:] != skey[:-1]])
        bounds = np.r_[starts, P]
        unowned_pools = {}
        for g in range(len(starts)):
            parts = order[bounds[g]:bounds[g + 1]]
            o = int(skey[starts[g]] // nrs) - 1
            r_id = int(skey[starts[g]] % nrs)
            if o < 0:
                unowned_pools[r_id] = parts
                supplies.append((int(pool_node[r_id]), len(parts)))
                continue
            node = next_node
            next_node += 1
            supplies.append((node, len(parts)))
            keep = -1
            if t in snap.members[o].subscription:
                rset = racksets[r_id]
                cross = bool(rset) and member_rack[o] is not None and member_rack[o] not in rset
                keep = add(node, o, len(parts), tc * int(cross))
            move = add(node, pool_node[r_id], len(parts), noc)
            group_info.append((t, o, parts, keep, move, int(pool_node[r_id])))
        for r_id in range(nrs):
            pool_info.append((int(pool_node[r_id]), t, unowned_pools.get(r_id)))

    # cell -> member arcs
    members_in_cells = np.flatnonzero(d.member_cell >= 0)
    cell_member_first = add(M + d.member_cell[members_in_cells], members_in_cells, total, 0)
    # member -> sink: lower bound lo (in the supplies), then unit arcs priced by the convex square cost
    W = total * (noc + tc) + 1
    units = np.maximum(hi - lo, 0)
    um = np.repeat(np.arange(M), units)
    k = lo[um] + 1 + (np.arange(len(um)) - np.repeat(np.cumsum(units) - units, units))  # the k-th unit of member um
    add(um, np.full(len(um), sink), 1, W * (2 * k - 1))

    f = min_cost_flow.SimpleMinCostFlow()
    f.add_arcs_with_capacity_and_unit_cost(np.concatenate(tails), np.concatenate(heads),
                                           np.concatenate(caps), np.concatenate(costs))
    supply = np.zeros(next_node, dtype=np.int64)
    for node, s in supplies:
        supply[node] += s
    supply[:M] -= lo
    supply[sink] = -(total - int(lo.sum()))
    f.set_nodes_supplies(np.arange(next_node), supply)
    status = f.solve()
    if status == f.INFEASIBLE:
        return None
    if status != f.OPTIMAL:
        raise SolverFaultError(f"min-cost flow ended with status {status}")
    flow = f.flows(np.arange(arc_count))

    # ---- decode: kept partitions, then pools dealt to cells, cells dealt to members
    out: dict[str, dict[str, list[np.ndarray]]] = {m.id: {} for m in snap.members}
    pool_parts: dict[int, list[np.ndarray]] = {}
    moves = 0
    for t, o, parts, keep, move, pool in group_info:
        kept = int(flow[keep]) if keep >= 0 else 0
        if kept:
            out[snap.members[o].id].setdefault(t, []).append(parts[:kept])
        if kept < len(parts):
            pool_parts.setdefault(pool, []).append(parts[kept:])
            moves += len(parts) - kept
    cell_incoming: dict[int, list[tuple[str, np.ndarray]]] = {}
    arc = 0
    tails_all = np.concatenate(tails)
    heads_all = np.concatenate(heads)
    # pool -> cell arcs are the ones whose tail is a pool node; walk pools in creation order
    pool_nodes = {node: (t, unowned) for node, t, unowned in pool_info}
    pool_arc_idx = np.flatnonzero(np.isin(tails_all, np.fromiter(pool_nodes, dtype=np.int64))
                                  & (heads_all >= M) & (heads_all < M + C))
    for node, (t, unowned) in pool_nodes.items():
        chunks = pool_parts.get(node, [])
        if unowned is not None:
            chunks = chunks + [unowned]
        if not chunks:
            continue
        parts = np.sort(np.concatenate(chunks))
        sel = pool_arc_idx[tails_all[pool_arc_idx] == node]
        pos = 0
        for a in sel:
            n = int(flow[a])
            if n:
                cell_incoming.setdefault(int(heads_all[a]) - M, []).append((t, parts[pos:pos + n]))
                pos += n
        if pos != len(parts):
            raise SolverFaultError(f"pool of {t} dealt {pos} of {len(parts)} partitions")
    cm_flow = flow[cell_member_first:cell_member_first + len(members_in_cells)]
    by_cell: dict[int, list[tuple[int, int]]] = {}
    for m, n in zip(members_in_cells.tolist(), cm_flow.tolist()):
        if n:
            by_cell.setdefault(int(d.member_cell[m]), []).append((m, n))
    for cell, incoming in cell_incoming.items():
        queue = [(t, parts) for t, parts in incoming]
        qi, offset = 0, 0
        for m, n in by_cell.get(cell, []):
            need = n
            dest = out[snap.members[m].id]
            while need:
                t, parts = queue[qi]
                take = min(need, len(parts) - offset)
                dest.setdefault(t, []).append(parts[offset:offset + take])
                need -= take
                offset += take
                if offset == len(parts):
                    qi, offset = qi + 1, 0
    assignment = {mid: {t: (np.sort(np.concatenate(chunks)) if len(chunks) > 1 else chunks[0])
                        for t, chunks in topics.items()} for mid, topics in out.items()}
    loads = np.zeros(M, dtype=np.int64)
    for i, m in enumerate(snap.members):
        loads[i] = sum(len(a) for a in assignment[m.id].values())
    sumsq = int(np.dot(loads, loads))
    cost = int(f.optimal_cost()) - _unit_cost_part(lo, loads, W) 
    return assignment, cost, sumsq


def _unit_cost_part(lo: np.ndarray, loads: np.ndarray, W: int) -> int:
    """The convex-arc share of the flow cost: W * (load^2 - lo^2), the units above each lower bound."""
    return int(W * (np.dot(loads, loads) - np.dot(lo, lo)))
