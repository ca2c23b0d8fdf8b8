r"""A proven lower bound on the least peak utilization ``U*``: the fractional relaxation, solved as max flows.

The relaxation at a peak ``U`` lets partitions split, but keeps what a peak of ``U`` forbids whole:

    variables   x[p, m] >= 0, only where m reads p's topic and r_p <= U c_m (a partition never fits a member
                whose whole capacity at U is smaller than it)
    constraints sum_m x[p, m] = 1 (each partition),   sum_p r_p x[p, m] <= U c_m (each member)

Feasible exactly when a flow saturates the source in the network

    source --load of (C, b)--> band (C, b) --inf--> band (C, b + 1)
    band (C, b) --inf--> group (k, b)     for every member class k reading topic class C
    group (k, l) --U x capacity of its members--> sink

where topic class ``C`` holds the topics read by the same member classes, capacity level ``l`` the members of
capacity ``caps[l]`` (ascending; more than :data:`MAX_LEVELS` levels are rounded up, which only relaxes), and
band ``(C, b)`` the partitions of ``C`` that fit level ``b`` but not ``b - 1`` at ``U``. When the flow falls
short, its minimum cut names partitions ``X`` that only the members ``N(X)`` may take while
``load(X) > U cap(N(X))``: this is checked again in floating point with a margin, on the true rates, so an
integer rounding in the flow can cost tightness, never correctness. Infeasible at ``U`` means ``U* > U``, and
infeasible stays infeasible below ``U``: a bisection on the certified ``U`` gives the bound. With one capacity
level the cut's own ratio ``load(X) / cap(N(X))`` bounds ``U*`` for every ``U`` (Dinkelbach's step), so a few
flows find the relaxation's optimum exactly. :func:`peak_bound` keeps the larger of this and
:func:`stickyflow.load.problem.partition_bound`.
"""

from __future__ import annotations

import math

import numpy as np

from stickyflow.load.problem import BOUND_MARGIN, LoadProblem, partition_bound, topic_classes

from ..cpsat_backend import ortools_graph

__all__ = ["peak_bound", "fractional_bound", "transport", "MAX_LEVELS"]

MAX_LEVELS = 16  # distinct capacities kept apart in the relaxation; more are rounded up to this many levels
_FLOW_BITS = 52  # the flow's integer capacities stay below 2**52 (exact in float64 and in OR-Tools' int64)


def peak_bound(problem: LoadProblem, upper: float | None = None, rel_tol: float = 1e-9) -> float:
    """The larger of the fractional bound and the largest-rates bound: a proven lower bound on ``U*``.

    >>> from stickyflow.load.problem import LoadProblem
    >>> p = LoadProblem.of(rates=[3.0, 3.0, 1.0, 1.0], topic=[0, 0, 1, 1], reads=[[True, True], [False, True]],
    ...                    member_class=[0, 1], capacity=[1.0, 1.0], owner=[-1] * 4)
    >>> round(peak_bound(p), 6)  # topic 0 (load 6) only member 0 reads
    6.0
    """
    return max(partition_bound(problem), fractional_bound(problem, upper=upper, rel_tol=rel_tol))


class _Relaxation:
    """The network above for one problem, rebuilt cheaply for each ``U`` (only band loads and sink capacities
    change)."""

    def __init__(self, problem: LoadProblem):
        self.problem = problem
        tclass, class_reads = topic_classes(problem)
        self.class_reads = class_reads  # member class x topic class
        K, C = class_reads.shape
        active = problem.active
        caps = np.unique(problem.capacity[active])
        if len(caps) > MAX_LEVELS:  # round capacities up to MAX_LEVELS quantiles: a relaxation of the relaxation
            caps = np.unique(np.quantile(caps, np.linspace(0, 1, MAX_LEVELS), method="higher"))
        self.caps = caps
        L = len(caps)
        level = np.searchsorted(caps, problem.capacity)  # each member's level, its capacity rounded up
        group_cap = np.zeros((K, L))
        np.add.at(group_cap, (problem.member_class[active], level[active]), problem.capacity[active])
        self.group_cap = group_cap  # true capacities (for the float check)
        self.group_cap_up = np.zeros((K, L))
        np.add.at(self.group_cap_up, (problem.member_class[active], level[active]), caps[level[active]])
        pc = tclass[problem.topic]
        # each class's rates together (by rate within the class where bands need it: several capacity levels)
        order = np.lexsort((problem.rates, pc)) if L > 1 else np.argsort(pc, kind="stable")
        self.sorted_rates = problem.rates[order]
        self.class_start = np.searchsorted(pc[order], np.arange(C + 1))
        bounds = self.class_start.tolist()
        # every class's load summed exactly rounded (math.fsum): the cut's check below compares sums of them
        self.class_load = np.array([math.fsum(self.sorted_rates[a:z]) for a, z in zip(bounds[:-1], bounds[1:])])
        self.class_top = np.array([self.sorted_rates[a:z].max(initial=0.0) for a, z in zip(bounds[:-1], bounds[1:])])
        self.prefix = np.concatenate([[0.0], np.cumsum(self.sorted_rates)]) if L > 1 else None
        self.C, self.K, self.L = C, K, L
        # arcs that do not depend on U: band chains and band -> group
        cc, ck = np.nonzero(class_reads.T)  # (topic class, member class) reading pairs
        b = np.arange(L)
        self.read_c = np.repeat(cc, L)
        self.read_k = np.repeat(ck, L)
        self.read_b = np.tile(b, len(cc))

    def band_loads(self, u: float) -> np.ndarray:
        """Per topic class and band: the load of the partitions that fit level ``b`` but not ``b - 1`` at ``u``
        (the last band also holds those that fit no level: they make ``u`` infeasible)."""
        C, L = self.C, self.L
        thresholds = self.caps * u
        if L == 1:  # one level: a class fits whole unless its largest rate does not (then u is infeasible)
            fits = self.class_top <= thresholds[0]
            return np.stack([np.where(fits, self.class_load, 0.0), np.where(fits, 0.0, self.class_load)], axis=1)
        below = np.empty((C, L + 1))
        for c in range(C):  # one search per topic class, all levels at once
            a, z = self.class_start[c], self.class_start[c + 1]
            pos = a + np.searchsorted(self.sorted_rates[a:z], thresholds, side="right")
            below[c, :L] = self.prefix[pos] - self.prefix[a]
        below[:, L] = self.prefix[self.class_start[1:]] - self.prefix[self.class_start[:-1]]
        bands = np.maximum(np.diff(np.concatenate([np.zeros((C, 1)), below], axis=1), axis=1), 0.0)  # C x (L + 1)
        bands[:, L] = np.where(self.class_top > thresholds[-1], np.maximum(bands[:, L], 1e-300), 0.0)  # (exactly)
        return bands

    def certify(self, u: float) -> float | None:
        """A proof that ``U* > u``: the ratio ``load(X) / cap(N(X))`` of the cut found (> ``u``), or None when the
        relaxation is feasible at ``u`` (as far as the integer flow can tell)."""
        C, K, L = self.C, self.K, self.L
        bands = self.band_loads(u)
        if bands[:, L].sum() > 0:  # a partition fits no member at u: it alone is the proof
            return math.inf
        bands = bands[:, :L]
        total = float(bands.sum())
        if total <= 0:
            return None
        sink_cap = u * self.group_cap_up
        scale = 2.0 ** math.floor(_FLOW_BITS - math.log2(max(total, float(sink_cap.sum()), 1e-300)) - 1)
        # pessimistic rounding: loads up, capacities down, so that a shortfall is found whenever one may exist
        src_int = np.ceil(bands * scale).astype(np.int64).ravel()
        sink_int = np.floor(sink_cap * scale).astype(np.int64).ravel()
        inf = int(src_int.sum()) + 1
        n_band, n_group = C * L, K * L
        source, sink = n_band + n_group, n_band + n_group + 1
        band_id = np.arange(n_band).reshape(C, L)
        group_id = n_band + np.arange(n_group).reshape(K, L)
        tails = [np.full(n_band, source), band_id[:, :-1].ravel(), band_id[self.read_c, self.read_b],
                 group_id.ravel()]
        heads = [band_id.ravel(), band_id[:, 1:].ravel(), group_id[self.read_k, self.read_b],
                 np.full(n_group, sink)]
        caps = [src_int, np.full(C * (L - 1), inf), np.full(len(self.read_c), inf), sink_int]
        g = ortools_graph()[0].SimpleMaxFlow()
        g.add_arcs_with_capacity(np.concatenate(tails).astype(np.int64), np.concatenate(heads).astype(np.int64),
                                 np.concatenate(caps).astype(np.int64))
        g.solve(source, sink)
        if g.optimal_flow() >= int(src_int.sum()):
            return None
        side = np.zeros(n_band + n_group + 2, dtype=bool)
        side[np.asarray(g.get_source_side_min_cut(), dtype=np.int64)] = True
        x = side[:n_band].reshape(C, L)  # bands whose partitions the cut holds
        # N(X): every group a band of X reaches (its level or above, a member class reading its topic class)
        lowest = np.where(x.any(axis=1), np.argmax(x, axis=1), L)  # per class, the lowest band in X
        reach_level = np.full(K, L)
        for c in np.flatnonzero(lowest < L).tolist():
            ks = np.flatnonzero(self.class_reads[:, c])
            reach_level[ks] = np.minimum(reach_level[ks], lowest[c])
        # X closed upwards along the chain (a cut never separates a band from the ones above it), its load summed
        # from the rates themselves (not from differences of running sums)
        load_x = 0.0
        for c in np.flatnonzero(lowest < L).tolist():
            if lowest[c] == 0:
                load_x += float(self.class_load[c])
                continue
            a, z = self.class_start[c], self.class_start[c + 1]
            low = np.searchsorted(self.sorted_rates[a:z], self.caps[lowest[c] - 1] * u, side="right")
            load_x += math.fsum(self.sorted_rates[a + low:z])
        cap_n = float(sum(self.group_cap[k, reach_level[k]:].sum() for k in range(K) if reach_level[k] < L))
        if cap_n <= 0:
            return math.inf if load_x > 0 else None
        ratio = load_x / cap_n
        return ratio if ratio > u * (1 + 4 * BOUND_MARGIN) else None


def fractional_bound(problem: LoadProblem, upper: float | None = None, rel_tol: float = 1e-9) -> float:
    """The least ``U`` at which the relaxation above is feasible, from below (a proven lower bound on ``U*``).

    ``upper`` (a known plan's peak) caps the search; without it, the whole load over the least capacity does.
    """
    active = problem.active
    if problem.n_partitions == 0 or not active.any():
        return 0.0
    total = float(problem.rates.sum())
    if total <= 0:
        return 0.0
    rel = _Relaxation(problem)
    lo = total / float(problem.capacity[active].sum()) * (1 - BOUND_MARGIN)  # every U* is at least the average
    lo = max(lo, partition_bound(problem))
    if rel.L == 1:
        # Dinkelbach: a cut's ratio bounds U* whatever U, so step to it until no cut is left
        for _ in range(64):
            ratio = rel.certify(lo)
            if ratio is None:
                break
            if math.isinf(ratio):  # cannot happen at or above the largest-rates bound; stay safe
                break
            lo = ratio * (1 - BOUND_MARGIN)
        return lo
    # any assignment's peak is at most the whole load over the least capacity, and so is the relaxation's
    top = total / float(problem.capacity[active].min()) * (1 + BOUND_MARGIN)
    hi = min(upper, top) if upper is not None and upper > lo else top
    for _ in range(200):
        if hi - lo <= rel_tol * hi:
            break
        mid = (lo + hi) / 2
        if rel.certify(mid) is not None:
            lo = mid
        else:
            hi = mid
    return lo


def transport(who: np.ndarray, held: np.ndarray, need: np.ndarray, room: np.ndarray, *,
              cost: np.ndarray | None = None, move: int = 1) -> np.ndarray | None:
    """The plan's quotas per topic class (:func:`stickyflow.load.plan.quota_plan`), a transportation problem
    solved as a min-cost max flow: quotas ``q[m, c] >= 0``, only where ``who[m, c]`` (member ``m`` reads class
    ``c``), with ``sum_m q[m, c] = need[c]`` and ``sum_c q[m, c] <= room[m]``, the least ``move x sum max(0,
    q - held) + sum cost x q`` (rule 4: the load that moves, ``cost[m, c]`` per unit that member ``m`` reads
    across racks; integers); or None where none exists (no assignment, even a fractional one, fits).

        source --need[c]--> c --held[m, c], cost[m, c]; anything more, move + cost[m, c]--> m --room[m]--> sink

    Solved in integers (``2^40`` units for the largest of the sums) and rounded down: a class's quotas may
    fall short of its need by a few such units, never more.

    >>> transport(np.array([[True, True], [False, True]]), np.array([[6.0, 2.0], [0.0, 0.0]]),
    ...           np.array([6.0, 2.0]), np.array([6.0, 6.0])).tolist()
    [[6.0, 0.0], [0.0, 2.0]]
    >>> transport(np.array([[True, True], [False, True]]), np.zeros((2, 2)), np.array([6.0, 2.0]),
    ...           np.array([5.0, 6.0])) is None  # topic class 0 (6) has one reader, with room for 5
    True
    """
    M, C = who.shape
    total = float(need.sum())
    if total <= 0:
        return np.zeros((M, C))
    mm, cc = np.nonzero(who)
    scale = 2.0 ** math.floor(40 - math.log2(max(total, float(room.sum()), 1e-300)))
    supply = np.floor(need * scale).astype(np.int64)
    held_int = np.minimum(np.floor(held[mm, cc] * scale).astype(np.int64), supply[cc])
    big = int(supply.sum()) + 1
    source, sink = C + M, C + M + 1
    tails = np.concatenate([np.full(C, source), cc, cc, C + np.arange(M)])
    heads = np.concatenate([np.arange(C), C + mm, C + mm, np.full(M, sink)])
    caps = np.concatenate([supply, held_int, np.full(len(mm), big),
                           np.floor(np.maximum(room, 0.0) * scale).astype(np.int64)])
    unit = np.zeros(len(mm), dtype=np.int64) if cost is None else np.asarray(cost, dtype=np.int64)[mm, cc]
    costs = np.concatenate([np.zeros(C, dtype=np.int64), unit, unit + int(move), np.zeros(M, dtype=np.int64)])
    g = ortools_graph()[1].SimpleMinCostFlow()
    g.add_arcs_with_capacity_and_unit_cost(tails.astype(np.int64), heads.astype(np.int64), caps, costs)
    g.set_node_supply(source, int(supply.sum()))
    g.set_node_supply(sink, -int(supply.sum()))
    if g.solve_max_flow_with_min_cost() != g.OPTIMAL or g.maximum_flow() < int(supply.sum()):
        return None
    flows = np.asarray(g.flows(np.arange(C, C + 2 * len(mm), dtype=np.int64)), dtype=np.int64)
    out = np.zeros((M, C))
    np.add.at(out, (mm, cc), (flows[:len(mm)] + flows[len(mm):]) / scale)
    return out
