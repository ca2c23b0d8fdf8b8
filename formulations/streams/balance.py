r"""**Balanced** as boxes, for the streams flows and CP-SAT.

**Balanced** (the spec): for a count ``n_c`` per client and threads ``w_c``,
with ``m = min_c n_c / w_c``, every client holds ``n_c <= w_c m +
balance_factor``. For a fixed least level ``m`` this is a box,

    ceil(w_c m) <= n_c <= floor(w_c m + balance_factor),

every count in the box is balanced (its least level is at least ``m``), and
every balanced count lies in the box of its own ``m``. So the balanced counts
are the union of the boxes over the candidate levels ``m = k / w`` (``w`` a
thread count of some client), which :func:`balance_boxes` lists; a min-cost
flow takes one box at a time.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

__all__ = ["balance_boxes", "box_hull", "MAX_BOXES"]

MAX_BOXES = 24  # candidate least levels per count; beyond this, the ones nearest the mean


# --------------------------------------------------------------------------- balance

def balance_boxes(n: int, threads: np.ndarray, balance_factor: int = 1) -> list[tuple[np.ndarray, np.ndarray]]:
    """Every box ``(lo, hi)`` of **Balanced** counts of ``n`` tasks over clients of ``threads`` (see
    :func:`_balance_boxes`; the same arguments give the same boxes, computed once)."""
    threads = np.asarray(threads, dtype=np.int64)
    key = (int(n), threads.tobytes(), int(balance_factor))
    hit = _BOX_CACHE.get(key)
    if hit is None:
        if len(_BOX_CACHE) >= 64:
            _BOX_CACHE.clear()
        hit = _BOX_CACHE[key] = _balance_boxes(n, threads, balance_factor)
        for lo, hi in hit:
            lo.setflags(write=False)
            hi.setflags(write=False)
    return list(hit)


_BOX_CACHE: dict[tuple, list[tuple[np.ndarray, np.ndarray]]] = {}


def _balance_boxes(n: int, threads: np.ndarray, balance_factor: int = 1) -> list[tuple[np.ndarray, np.ndarray]]:
    """Every box ``(lo, hi)`` of **Balanced** counts of ``n`` tasks over clients of ``threads``.

    One box per candidate least level ``m`` (``lo = ceil(threads m)``, ``hi =
    floor(threads m + balance_factor)``) that can hold ``n`` tasks; the union
    of the boxes is exactly the set of balanced counts. Highest ``m`` first
    (the most even); duplicates dropped.

    >>> [(lo.tolist(), hi.tolist()) for lo, hi in balance_boxes(3, np.array([5, 5, 5, 5, 5]), 3)]
    [([0, 0, 0, 0, 0], [3, 3, 3, 3, 3])]
    >>> [(lo.tolist(), hi.tolist()) for lo, hi in balance_boxes(6, np.array([1, 1, 1]))]
    [([2, 2, 2], [3, 3, 3]), ([1, 1, 1], [2, 2, 2])]
    """
    threads = np.asarray(threads, dtype=np.int64)
    C = len(threads)
    if not C:
        return []
    TH = int(threads.sum())
    bf = int(balance_factor)
    kinds = sorted(set(threads.tolist()))
    top = Fraction(n, TH)                       # the least level never exceeds the mean
    bottom = max(Fraction(0), Fraction(n - bf * C, TH) - 1)
    levels: set[Fraction] = set()
    for w in kinds:
        for k in range(max(0, math.floor(bottom * w)), math.floor(top * w) + 1):
            levels.add(Fraction(k, w))
    out = []
    seen: set[tuple] = set()
    th = threads.tolist()
    for m in sorted(levels, reverse=True):
        lo = np.array([math.ceil(w * m) for w in th], dtype=np.int64)
        hi = np.array([math.floor(w * m + bf) for w in th], dtype=np.int64)
        if lo.sum() <= n <= hi.sum():
            key = (tuple(lo.tolist()), tuple(hi.tolist()))
            if key not in seen:
                seen.add(key)
                out.append((lo, hi))
    if len(out) > MAX_BOXES:
        out = out[:MAX_BOXES]
    return out


def box_hull(boxes: list[tuple[np.ndarray, np.ndarray]], n: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The smallest box holding every box of ``boxes`` (a relaxation of **Balanced**).

    Given the total ``n``, the smallest box holding every count vector of the boxes that sums to ``n``:
    within a box a client holds at most its top and at most what the others leave when each holds its
    bottom (and at least the symmetric floor). Where ``n`` fills the boxes that is much tighter than the
    hull: 10 tasks on 5 one-thread clients lie in the boxes [2, 3] and [1, 2], whose hull is [1, 3], yet
    every balanced count is exactly 2.

    >>> [b.tolist() for b in box_hull(balance_boxes(10, np.ones(5, np.int64)))]
    [[1, 1, 1, 1, 1], [3, 3, 3, 3, 3]]
    >>> [b.tolist() for b in box_hull(balance_boxes(10, np.ones(5, np.int64)), n=10)]
    [[2, 2, 2, 2, 2], [2, 2, 2, 2, 2]]
    """
    if n is not None:
        boxes = [(np.maximum(lo, n - (int(hi.sum()) - hi)), np.minimum(hi, n - (int(lo.sum()) - lo)))
                 for lo, hi in boxes]
    lo = np.min(np.stack([b[0] for b in boxes]), axis=0)
    hi = np.max(np.stack([b[1] for b in boxes]), axis=0)
    return lo, hi
