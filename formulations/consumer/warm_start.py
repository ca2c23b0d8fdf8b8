"""The consumer flow's warm start: keep every validly owned partition, deal the orphans out, and prove that
optimal (else the flow decides).

    variables   the orphans' owners only (every valid owner keeps what it owns: the fewest moves possible)
    constraints each orphan goes to a reader of its topic
    objective   the least sum of squared loads given the kept loads (a greedy deal, a water-level deal, or a
                small flow with one unit arc per load level), accepted only with the proof of
                :func:`_least_square_sum` (no handover chain from a load ``l`` to ``l - 2`` or less)
"""

from __future__ import annotations

import numpy as np

from stickyflow.model.arrays import nonzero_pairs

from ..cpsat_backend import ortools_graph
from .model import ConsumerData, as_assignment, class_reads, flat_owners

__all__ = ["try_warm_start"]

_GREEDY_ARCS_PER_TOPIC = 100  # the warm start deals greedily first from this many readers per orphaned topic
_LEVEL_DEAL = True  # tests switch it off to hold the water-level deal against the least-squares flow

def try_warm_start(d: ConsumerData, graph: tuple):
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
    :func:`.flow._phase2` returns.
    """
    M, T = len(d.snap.members), len(d.topics)
    sizes = graph[0]  # partitions per topic
    ok = d.member_class >= 0
    reads = class_reads(d) & (sizes > 0)[None, :]  # the graph's arcs as a matrix (see class_graph)
    sub = np.zeros((M, T), dtype=bool)
    sub[ok] = reads[d.member_class[ok]]
    P, offsets, owner = flat_owners(d)
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
    return as_assignment(d, new_owner, offsets), d.noc * moves, int(np.dot(load, load))


def _deal_greedy(load: np.ndarray, ok: np.ndarray, sub: np.ndarray, orphans: np.ndarray, accept=None,
                 sweeps: int = 3):
    """The orphans dealt topic by topic (fewest readers first), each topic's filling its readers' lowest
    loads level by level (ties: member order); then, while ``accept`` refuses the deal, each topic's share
    taken back and dealt again against the others' (up to ``sweeps`` rounds in all). A few numpy steps per
    topic, no flow, and not optimal in general: :func:`try_warm_start` accepts a deal only with the proof of
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
    1,003 orphans over 48 topics: 0.54 against 1.25 ms). :func:`try_warm_start` still takes the deal only
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
    max_flow, _ = ortools_graph()
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
    _, min_cost_flow = ortools_graph()
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
    """No handover chain from a member with load ``l`` to one with ``l - 2`` or less (see :func:`try_warm_start`).

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
