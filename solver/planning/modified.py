"""Landau's modified any-fit plans: MWF, MBF, MWFP, MBFP (thesis, 2022; arXiv 2206.11170, JPDC 2025).

The classic methods sort partitions; these sort the members as they are, so that
partitions move only where packing needs it. In our words:

1. Take the existing members in decreasing order of their load at the new rates
   (MWF, MBF) or of their largest partition's rate (MWFP, MBFP); ties in snapshot
   order.
2. For each, take its partitions from the smallest up and put each into a member
   already in the plan, by worst fit (MWF, MWFP: the most room) or best fit (MBF,
   MBFP: the least room that fits), until one fits nowhere. Partitions of a
   member that are small enough travel to members already in the plan: this is
   how the group shrinks.
3. If partitions remain, the member itself joins the plan and keeps them, from the
   largest down, until one does not fit; that one and the rest wait.
4. Last, the waiting partitions (with those nobody owned), highest rate first, go
   where the same fit rule puts them, opening a member as the classic methods do
   (:class:`stickyflow.planning.anyfit.Bins`) when none has room.

>>> from stickyflow.planning.problem import PlanProblem, scaled_weights
>>> p = PlanProblem.from_arrays([70, 20, 50, 10], 100, owner=[0, 0, 1, 1], members=["a", "b"])
>>> modified_fit(p, scaled_weights(p.rates, p.capacity), "worst", "load").tolist()  # b's 10 joins a
[0, 0, 1, 0]
"""

from __future__ import annotations

import numpy as np

from .anyfit import Bins, decreasing_order
from .problem import PlanProblem, Weights

__all__ = ["modified_fit", "MEMBER_ORDERS"]

MEMBER_ORDERS = ("load", "largest")


def member_order(problem: PlanProblem, w: np.ndarray, key: str) -> list[int]:
    """Existing members by their load (``"load"``) or largest partition (``"largest"``), highest first."""
    m = problem.m
    owned = problem.owner >= 0
    if key == "load":
        value = np.bincount(problem.owner[owned], weights=w[owned], minlength=m)
    else:
        value = np.zeros(m, dtype=np.float64)
        np.maximum.at(value, problem.owner[owned], w[owned].astype(np.float64))
    return np.argsort(-value, kind="stable").tolist()


def modified_fit(problem: PlanProblem, weights: Weights, rule: str, key: str) -> np.ndarray:
    """The slots (see :mod:`stickyflow.check.plan`) of Landau's modified fit: ``rule`` ``"worst"`` or
    ``"best"``, members ordered by ``key`` ``"load"`` (MWF, MBF) or ``"largest"`` (MWFP, MBFP)."""
    if rule not in ("worst", "best") or key not in MEMBER_ORDERS:
        raise ValueError(f"modified_fit: rule must be worst or best, key one of {', '.join(MEMBER_ORDERS)}")
    w = weights.w
    bins = Bins(problem, weights)
    by_rate = decreasing_order(w)
    owner_sorted = problem.owner[by_rate]
    waiting: list[int] = by_rate[owner_sorted < 0].tolist()
    own = {c: [] for c in range(problem.m)}
    for j, o in zip(by_rate.tolist(), owner_sorted.tolist()):
        if o >= 0:
            own[o].append(j)  # each member's partitions, largest first
    for c in member_order(problem, w, key):
        mine = own[c]
        while mine:  # the smallest first, into members already in the plan
            b = bins.choose(bins.fitting(mine[-1]), rule)
            if b < 0:
                break
            bins.place(mine.pop(), b)
        if not mine:
            continue
        bins.open_slot(c)
        for k, j in enumerate(mine):  # the largest first, kept by their member
            if not bins.fits(c, j):
                waiting.extend(mine[k:])
                break
            bins.place(j, c)
    waiting.sort(key=lambda j: (-w[j], j))
    for j in waiting:
        b = bins.choose(bins.fitting(j), rule)
        bins.place(j, b if b >= 0 else bins.open_for(j))
    return bins.slots
