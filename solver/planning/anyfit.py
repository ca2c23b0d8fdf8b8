"""The classic greedy plans: first, best, worst and next fit, each also in decreasing order.

Partitions are items, members bins of the plan's capacity (Johnson 1974; Coffman
et al.'s survey). Each method takes the partitions one at a time, in snapshot order
(topics as listed, partitions by number), or with ``decreasing`` by rate, highest
first (ties in snapshot order), and puts each into an open member where it fits:

* first fit: the open member that comes first (existing members in their order,
  then new ones);
* best fit: the one with the least room left that still fits it;
* worst fit: the one with the most room left;
* next fit: only the member opened last.

Ties go to the member that comes first. A partition that fits nowhere opens a
member: its valid previous owner when that one is not open yet (Landau's
adaptation for rebalancing, which changes no count and saves moves), else the
first existing member not yet open, else a new one. An empty member takes any
partition, even one whose rate exceeds the capacity, and then nothing else.
Landau's experiments shuffle the partitions of the methods that do not sort;
ours keep the snapshot order, so that a plan is the same on every run.

:class:`Bins` is the packing state the modified methods
(:mod:`stickyflow.planning.modified`) share.

>>> from stickyflow.planning.problem import PlanProblem, scaled_weights
>>> p = PlanProblem.from_arrays([30, 80, 20, 60], 100, owner=[1, 1, 0, 0], members=["a", "b"])
>>> any_fit(p, scaled_weights(p.rates, p.capacity), "first", decreasing=True).tolist()
[0, 1, 1, 0]
>>> any_fit(p, scaled_weights(p.rates, p.capacity), "next", decreasing=False).tolist()
[1, 0, 0, 2]
"""

from __future__ import annotations

import numpy as np

from .problem import PlanProblem, Weights

__all__ = ["Bins", "any_fit", "RULES"]

RULES = ("first", "best", "worst", "next")


class Bins:
    """Members being filled: integer loads against the capacity, one slot per existing member and enough new
    ones for every partition. A slot holding a partition that must stand alone takes nothing else."""

    def __init__(self, problem: PlanProblem, weights: Weights):
        self.m = problem.m
        self.owner = problem.owner
        self.w = weights.w
        self.alone = weights.alone
        self.cap = weights.cap
        size = problem.m + max(problem.n, 1)
        self.load = np.zeros(size, dtype=np.int64)
        self.open = np.zeros(size, dtype=bool)
        self.shut = np.zeros(size, dtype=bool)
        self.count = np.zeros(size, dtype=np.int64)
        self.slots = np.full(problem.n, -1, dtype=np.int64)
        self.last = -1
        self._existing = 0  # no existing member before this index is closed to opening
        self._new = problem.m

    def fitting(self, j: int) -> np.ndarray:
        """Which open slots take partition ``j`` (a boolean mask)."""
        if self.alone[j]:
            return np.zeros(len(self.load), dtype=bool)
        return self.open & ~self.shut & (self.load + self.w[j] <= self.cap)

    def fits(self, b: int, j: int) -> bool:
        """Does slot ``b`` (open, or about to be) take partition ``j``: empty, or room enough."""
        if self.count[b] == 0:
            return True
        return not self.shut[b] and not self.alone[j] and self.load[b] + self.w[j] <= self.cap

    def choose(self, mask: np.ndarray, rule: str) -> int:
        """The slot of ``mask`` that ``rule`` picks (first, best or worst fit), -1 when the mask is empty."""
        if not mask.any():
            return -1
        if rule == "first":
            return int(np.argmax(mask))
        room = np.where(mask, self.cap - self.load, -1 if rule == "worst" else self.cap + 1)
        return int(np.argmax(room) if rule == "worst" else np.argmin(room))

    def open_slot(self, b: int) -> int:
        self.open[b] = True
        self.last = b
        return b

    def open_for(self, j: int) -> int:
        """Open a member for partition ``j``: its owner if not open yet, else the first existing member not
        open, else a new one."""
        o = int(self.owner[j])
        if o >= 0 and not self.open[o]:
            return self.open_slot(o)
        while self._existing < self.m and self.open[self._existing]:
            self._existing += 1
        if self._existing < self.m:
            return self.open_slot(self._existing)
        b = self._new
        self._new += 1
        return self.open_slot(b)

    def place(self, j: int, b: int) -> None:
        self.slots[j] = b
        self.load[b] += self.w[j]
        self.count[b] += 1
        if self.alone[j]:
            self.shut[b] = True


def decreasing_order(w: np.ndarray) -> np.ndarray:
    """Indexes by weight, highest first, ties in index order."""
    return np.argsort(-w, kind="stable")


def any_fit(problem: PlanProblem, weights: Weights, rule: str, *, decreasing: bool = False) -> np.ndarray:
    """The slots (see :mod:`stickyflow.check.plan`) of ``rule`` fit (``"first"``, ``"best"``, ``"worst"``,
    ``"next"``), over the partitions in snapshot order or, with ``decreasing``, by rate."""
    if rule not in RULES:
        raise ValueError(f"rule: {rule!r} is not one of {', '.join(RULES)}")
    bins = Bins(problem, weights)
    order = decreasing_order(weights.w) if decreasing else range(problem.n)
    for j in map(int, order):
        if rule == "next":
            b = bins.last if bins.last >= 0 and bins.fits(bins.last, j) else bins.open_for(j)
        else:
            b = bins.choose(bins.fitting(j), rule)
            if b < 0:
                b = bins.open_for(j)
        bins.place(j, b)
    return bins.slots
