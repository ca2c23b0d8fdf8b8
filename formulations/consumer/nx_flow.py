r"""The optimal consumer-group assignment, stated plainly as a networkx min-cost flow.

An independent reference for :mod:`stickyflow.formulations.consumer.flow`: it
shares no idea with the compressed OR-Tools graph (no groups, pools, cells,
phases or load windows), so the two agreeing on seeded instances is evidence
that both are right. One node per partition, one arc per (partition,
subscriber), one arc per possible load unit of each member::

    partition p --(cap 1, c[p, m])--> member m --(cap 1, W (2k - 1)), k = 1..K_m--> sink

Data: partitions p of subscribed topics, members m with S(p) = the subscribers
of p's topic, o(p) = p's valid previous owner (KIP-341) or none,
R(p) = p's replica racks, r(m) = m's rack, noc, tc the configured costs.

    variables   x[p, m] in {0, 1} for m in S(p);  load_m = sum_p x[p, m]
    constraints sum_{m in S(p)} x[p, m] = 1 for every p
    c[p, m]     = noc * [o(p) exists and o(p) != m]
                + tc * [rack-aware and R(p) != {} and r(m) known and r(m) not in R(p)]
    objective   min  W * sum_m load_m^2 + sum_{p,m} c[p, m] x[p, m]  (+ noc * the owned partitions of
                topics nobody subscribes to: moves whatever the assignment, counted so that the
                reported objective equals noc * moves + tc * cross_rack as the metrics measure them)

The unit arcs are convex (their costs grow with k), so a min-cost flow fills
them in order and pays sum_{k<=load} W (2k - 1) = W load^2. With
W = P (noc + tc) + 1 larger than any possible secondary cost, the optimum is
the spec's lexicographic one: fewest squared loads first, then the cheapest
``noc x moves + tc x cross_rack``. Flows of a network with integer capacities
are integral at an optimal vertex, so x is 0/1.

Meant for small instances (a few thousand arcs): ``nx.network_simplex`` is pure
Python. Larger ones are refused (``options.extra["networkx_max_arcs"]``,
default 20,000, about 10 s) so that a mistaken call does not run for hours.

>>> import stickyflow
>>> r = stickyflow.assign({"format": "stickyflow.snapshot/1", "kind": "consumer",
...     "topics": {"t": {"partitions": 3}},
...     "members": [{"id": "a", "subscription": ["t"], "generation": 1, "owned": {"t": [0, 1, 2]}},
...                 {"id": "b", "subscription": ["t"]}]}, method="networkx")
>>> r.solver.method, r.solver.objective, r.metrics["moves"], r.metrics["imbalance"]
('networkx', 1, 1, 1)
"""

from __future__ import annotations

import time

from stickyflow.errors import BackendMissingError, SolverFaultError, StickyflowError
from stickyflow.model.consumer import ConsumerSnapshot
from stickyflow.model.consumer_claims import previous_owners
from stickyflow.registry import SolveOptions
from stickyflow.result import Decision

__all__ = ["solve_consumer_networkx", "DEFAULT_MAX_ARCS"]

DEFAULT_MAX_ARCS = 20_000


def solve_consumer_networkx(snapshot: ConsumerSnapshot, options: SolveOptions | None = None) -> Decision:
    """The spec's optimal consumer assignment by ``networkx.network_simplex`` (exact; small instances only).

    Returns ``Decision(method="networkx", status="optimal")`` whose
    ``objective`` (= ``bound``) is the secondary cost ``noc * moves + tc *
    cross_rack`` and whose ``extra`` holds ``sum_squared_loads`` and ``cost``.
    ``time_limit`` is ignored: network simplex runs to optimality.
    """
    try:
        import networkx as nx
    except ImportError as exc:  # pragma: no cover - networkx is a core dependency
        raise BackendMissingError("networkx is not installed: pip install networkx") from exc
    options = options or SolveOptions()
    t0 = time.perf_counter()

    # ---- data
    snap = snapshot
    prev = previous_owners(snap)
    subs = snap.subscribers()
    rack_aware = snap.rack_aware
    noc = snap.config.non_overlap_cost
    tc = snap.config.traffic_cost if rack_aware else 0
    members = snap.members
    topics = [t for t in snap.topics if subs[t]]
    P = sum(snap.topics[t].partitions for t in topics)
    n_arcs = sum(snap.topics[t].partitions * len(subs[t]) for t in topics)
    limit = int(options.extra.get("networkx_max_arcs", DEFAULT_MAX_ARCS))
    if n_arcs > limit:
        raise StickyflowError(f"method: networkx is a reference for small instances; this one needs {n_arcs} "
                              f"partition-member arcs (limit {limit}); use method='flow'")
    # partitions nobody may read now but somebody owned: moves whatever we do (the metrics count them)
    lost = noc * sum(int((prev.owner[t] >= 0).sum()) for t in snap.topics if not subs[t])
    if not P:
        return Decision(assignment={m.id: {} for m in members}, method="networkx", status="optimal",
                        objective=lost, bound=lost, extra={"sum_squared_loads": 0, "cost": lost})
    W = P * (noc + tc) + 1
    capacity = [0] * len(members)  # K_m: the most partitions member m could ever take
    for t in topics:
        for i in subs[t]:
            capacity[i] += snap.topics[t].partitions

    def arc_cost(t: str, p: int, i: int) -> int:
        o = prev.of(t, p)
        cost = noc if o is not None and o != i else 0
        racks = snap.topics[t].racks
        rack = members[i].rack
        if tc and racks is not None and racks[p] and rack is not None and rack not in racks[p]:
            cost += tc
        return cost

    # ---- model: nodes ("p", t, p), ("m", i), ("u", i, k), "sink"; network_simplex wants integer data
    G = nx.DiGraph()
    for t in topics:
        for p in range(snap.topics[t].partitions):
            G.add_node(("p", t, p), demand=-1)
            for i in subs[t]:
                G.add_edge(("p", t, p), ("m", i), capacity=1, weight=arc_cost(t, p, i))
    G.add_node("sink", demand=P)
    for i, k_max in enumerate(capacity):
        for k in range(1, k_max + 1):
            G.add_edge(("m", i), ("u", i, k), capacity=1, weight=W * (2 * k - 1))
            G.add_edge(("u", i, k), "sink", capacity=1, weight=0)

    # ---- solve
    try:
        total, flow = nx.network_simplex(G)
    except nx.NetworkXUnfeasible as exc:  # every partition has a subscriber: cannot happen
        raise SolverFaultError(f"networkx found the consumer flow infeasible: {exc}") from exc

    # ---- read results
    out: dict[str, dict[str, list[int]]] = {m.id: {} for m in members}
    loads = [0] * len(members)
    secondary = lost
    for t in topics:
        for p in range(snap.topics[t].partitions):
            takers = [i for i in subs[t] if flow[("p", t, p)][("m", i)]]
            if len(takers) != 1:
                raise SolverFaultError(f"networkx sent {t}-{p} to {len(takers)} members")
            i = takers[0]
            out[members[i].id].setdefault(t, []).append(p)
            loads[i] += 1
            secondary += arc_cost(t, p, i)
    sumsq = sum(x * x for x in loads)
    if total != W * sumsq + secondary - lost:
        raise SolverFaultError(f"networkx flow cost {total} != W * {sumsq} + {secondary}")
    return Decision(assignment=out, method="networkx", status="optimal", objective=secondary, bound=secondary,
                    extra={"sum_squared_loads": sumsq, "cost": secondary, "arcs": G.number_of_edges(),
                           "build_and_solve_s": time.perf_counter() - t0})
