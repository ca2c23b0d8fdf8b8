"""Ezzeddine, Baude and Huet's least-loaded packing with scale-up and scale-down thresholds (CLOSER 2024).

Their autoscaler sizes a consumer group by packing partitions, highest rate
first, each onto the least loaded of ``k`` members; when one does not fit there,
it tries again with ``k + 1`` members, from scratch. It packs to a fraction of
the capacity, and to a smaller fraction when it considers scaling down, so that a
group does not shrink at the first dip and grow again at the next rise. In our
words, with ``up`` and ``down`` those fractions (``0 < down <= up <= 1``):

1. ``k_up``: the fewest members the least-loaded packing needs at ``up x`` capacity.
   If it exceeds the group's current size, the group grows to that packing.
2. Else ``k_down``, the same at ``down x`` capacity: if below the current size, the
   group shrinks to that packing.
3. Else the group keeps its size: the least-loaded packing onto that many members
   at ``up x`` capacity (``k_up``'s packing if that one does not fit).

The packing knows nothing of who owns what: its members are matched to the
existing ones greedily, the pair that shares the most load first (existing
members before new ones), so that partitions stay where the packing allows. A
partition above the packed-to capacity takes a member alone. The fractions'
defaults (1.0 and 0.9) are ours: the paper tunes them per experiment.

>>> from stickyflow.planning.problem import PlanProblem, scaled_weights
>>> p = PlanProblem.from_arrays([50, 40, 30, 20], 100, owner=[0, 0, 1, 1], members=["a", "b"])
>>> least_loaded(p, scaled_weights(p.rates, p.capacity)).tolist()
[0, 1, 1, 0]
"""

from __future__ import annotations

import math

import numpy as np

from .anyfit import decreasing_order
from .bounds import l2_bound
from .problem import PlanProblem, Weights

__all__ = ["least_loaded", "pack_least_loaded", "greedy_match", "pair_totals"]


def pack_least_loaded(w: np.ndarray, cap: int, k: int) -> np.ndarray | None:
    """Bins ``0 .. k - 1`` for items ``w``, highest first, each onto the least loaded bin (ties: lowest index)
    if it fits there; an item above ``cap`` takes an empty bin alone. None when some item does not fit.

    >>> pack_least_loaded(np.array([5, 4, 3, 3]), 8, 2).tolist()
    [0, 1, 1, 0]
    >>> pack_least_loaded(np.array([5, 4, 3, 3]), 7, 2) is None
    True
    """
    load = np.zeros(k, dtype=np.int64)
    count = np.zeros(k, dtype=np.int64)
    shut = np.zeros(k, dtype=bool)
    out = np.full(len(w), -1, dtype=np.int64)
    for j in decreasing_order(w).tolist():
        room = np.where(shut, np.iinfo(np.int64).max, load)
        b = int(np.argmin(room))
        if shut[b]:
            return None
        if w[j] > cap:
            if count[b]:
                return None
            shut[b] = True
        elif load[b] + w[j] > cap:
            return None
        out[j] = b
        load[b] += w[j]
        count[b] += 1
    return out


def _fewest(w: np.ndarray, cap: int) -> tuple[int, np.ndarray]:
    """The least ``k`` for which :func:`pack_least_loaded` succeeds, and its bins (``k`` up from L2)."""
    if len(w) == 0:
        return 0, np.zeros(0, dtype=np.int64)
    big = w > cap
    k = int(big.sum()) + (l2_bound(w[~big], cap) if (~big).any() else 0)
    while True:
        bins = pack_least_loaded(w, cap, k)
        if bins is not None:
            return k, bins
        k += 1


def greedy_match(bins: np.ndarray, members: np.ndarray, share: np.ndarray, k: int, m: int) -> np.ndarray:
    """Bins ``0 .. k - 1`` to members, given what bin ``bins[x]`` keeps if existing member ``members[x]`` takes
    it (``share[x]``; pairs not listed share nothing): the pair that shares most first, each bin and member
    once; the bins left go to the members left (in their order), then to new members ``m``, ``m + 1``, ...
    Pairs, not a ``k x m`` table: a plan of 10,000 bins and members would need 800 MB for one.

    >>> greedy_match(np.array([0, 1, 1]), np.array([0, 0, 1]), np.array([5.0, 6.0, 1.0]), 3, 2).tolist()
    [1, 0, 2]
    """
    target = np.full(k, -1, dtype=np.int64)
    taken = np.zeros(m, dtype=bool)
    for x in np.argsort(-share, kind="stable").tolist():
        b, i = int(bins[x]), int(members[x])
        if share[x] <= 0:
            break
        if target[b] < 0 and not taken[i]:
            target[b], taken[i] = i, True
    free = iter(np.flatnonzero(~taken).tolist())
    new = m
    for b in range(k):
        if target[b] < 0:
            nxt = next(free, None)
            if nxt is None:
                nxt, new = new, new + 1
            target[b] = nxt
    return target


def pair_totals(bins: np.ndarray, members: np.ndarray, values: np.ndarray, m: int):
    """The distinct (bin, member) pairs of ``bins``/``members`` (parallel arrays) and the sum of ``values``
    over each: three arrays, for :func:`greedy_match`.

    >>> [a.tolist() for a in pair_totals(np.array([0, 0, 1]), np.array([1, 1, 0]), np.array([2, 3, 4]), 2)]
    [[0, 1], [1, 0], [5.0, 4.0]]
    """
    keys, inverse = np.unique(bins.astype(np.int64) * max(m, 1) + members, return_inverse=True)
    totals = np.bincount(inverse, weights=values, minlength=len(keys))
    return keys // max(m, 1), keys % max(m, 1), totals


def _relabel(problem: PlanProblem, w: np.ndarray, bins: np.ndarray, k: int) -> np.ndarray:
    """Slots for packing ``bins`` (``0 .. k - 1``) by :func:`greedy_match` of the load each bin shares with
    each existing member (a partition counts a little even at rate 0)."""
    owned = problem.owner >= 0
    b, i, share = pair_totals(bins[owned], problem.owner[owned], w[owned].astype(np.float64) + 1e-9, problem.m)
    return greedy_match(b, i, share, k, problem.m)[bins]


def least_loaded(problem: PlanProblem, weights: Weights, *, up: float = 1.0, down: float = 0.9) -> np.ndarray:
    """The slots (see :mod:`stickyflow.check.plan`) of the least-loaded packing with thresholds ``up`` and
    ``down`` (fractions of the capacity, ``0 < down <= up <= 1``)."""
    if not (0 < down <= up <= 1):
        raise ValueError("least_loaded: the thresholds must satisfy 0 < down <= up <= 1")
    w = weights.w
    cap_up = math.floor(weights.cap * up)
    w_up = np.where(weights.alone, cap_up + 1, w)
    k_up, bins = _fewest(w_up, cap_up)
    size = problem.m
    if k_up <= size and k_up > 0:
        cap_down = math.floor(weights.cap * down)
        k_down, bins_down = _fewest(np.where(weights.alone, cap_down + 1, w), cap_down)
        if k_down < size:
            k_up, bins = k_down, bins_down
        elif k_up < size:
            keep = pack_least_loaded(w_up, cap_up, size)
            if keep is not None:
                k_up, bins = size, keep
    return _relabel(problem, w, bins, k_up)
