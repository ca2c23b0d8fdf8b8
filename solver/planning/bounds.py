"""A proven lower bound on the fewest members of a plan: Martello and Toth's L2, in numpy.

Bin packing with items ``w_j`` and bins of capacity ``C`` (here: partitions, their
rates, and members of one capacity). For an integer ``0 <= a <= C/2`` split the items
into ``J1 = {w > C - a}``, ``J2 = {C/2 < w <= C - a}`` and ``J3 = {a <= w <= C/2}``.
No two items of ``J1 + J2`` share a bin, no item of ``J3`` joins one of ``J1``, and
``J3`` fits only in what ``J2`` leaves free or in bins of its own, so

    L(a) = |J1| + |J2| + max(0, ceil((sum_J3 w - (|J2| C - sum_J2 w)) / C))

bins are needed; ``L2 = max_a L(a)`` (Martello and Toth, 1990), with ``a`` ranging
over 0 and the distinct sizes up to ``C/2`` (the only values where ``L`` changes).
``L(0)`` is already the total over the capacity, rounded up. A partition whose
rate exceeds the capacity needs a member of its own, which nothing else shares:
it adds one to the bound of the rest.

>>> l2_bound(np.array([60, 60, 60, 30, 30, 30]), 100)
3
>>> l2_bound(np.array([49, 49, 49, 49, 52, 52]), 100)  # L(0) = 3 but 52s pair with no 49 and nothing else
4
>>> count_bound(np.array([150.0, 50.0, 50.0]), 100.0)
2
"""

from __future__ import annotations

import numpy as np

from .problem import scaled_weights

__all__ = ["l2_bound", "count_bound"]


def l2_bound(w: np.ndarray, cap: int) -> int:
    """Martello and Toth's L2 for integer sizes ``w`` (each at most ``cap``) in bins of ``cap``; 0 for none.

    >>> l2_bound(np.array([0, 0, 0]), 10), l2_bound(np.array([], dtype=np.int64), 10)
    (1, 0)
    """
    w = np.sort(np.asarray(w, dtype=np.int64))
    if len(w) == 0:
        return 0
    if w[-1] > cap:
        raise ValueError("l2_bound: every size must be at most the capacity")
    prefix = np.concatenate(([0], np.cumsum(w)))
    alphas = np.concatenate(([0], np.unique(w[2 * w <= cap])))
    half = int(np.searchsorted(w, cap // 2, side="right"))  # w <= C/2 (integers: 2w <= C)
    lo3 = np.searchsorted(w, alphas, side="left")           # first w >= a
    hi2 = np.searchsorted(w, cap - alphas, side="right")    # w <= C - a
    n1 = len(w) - hi2
    n2 = hi2 - half
    s2 = prefix[hi2] - prefix[half]
    s3 = prefix[half] - prefix[lo3]
    spill = s3 - (n2 * cap - s2)
    extra = np.where(spill > 0, -((-spill) // cap), 0)
    return max(int((n1 + n2 + extra).max()), 1)


def count_bound(rates: np.ndarray, capacity: float) -> int:
    """A proven lower bound on the fewest members of capacity ``capacity`` that hold partitions of ``rates``
    (a member may exceed the capacity only with one partition alone): the partitions above the capacity, one
    member each, plus L2 of the rest, computed on rates rounded down (exact where they scale to integers).

    >>> count_bound(np.array([0.4, 0.4, 0.4]), 1.0), count_bound(np.array([]), 1.0)
    (2, 0)
    """
    r = np.asarray(rates, dtype=np.float64)
    big = r > capacity
    rest = r[~big]
    if len(rest) == 0:
        return int(big.sum())
    w = scaled_weights(rest, capacity)
    return int(big.sum()) + l2_bound(np.minimum(w.low, w.cap_high), w.cap_high)
