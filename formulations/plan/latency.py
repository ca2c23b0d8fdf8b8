"""The latency-aware plan: the fewest members, then the least delay the moved partitions are predicted to cause.

A moved partition is not read while its new member takes it over: in the fluid
model of :mod:`stickyflow.datasets.fluid`, a member that gains ``g`` partitions
pauses them ``g x pause`` seconds, then drains their backlog with the capacity its
kept partitions leave. So a move costs more on a member with little room to
spare, and the least moved load (:mod:`stickyflow.formulations.plan.cpsat`) is not
always the least delay. For member ``b`` with kept load ``K_b``, gained load
``G_b`` in ``g_b`` partitions, drain capacity ``mu`` and ``P_b = pause x g_b``, the
backlog of the gained partitions rises to ``G_b P_b`` and then falls at the spare
rate ``s_b = mu - K_b - G_b``; the delay it adds, in record-seconds, is the area

    D_b = G_b P_b (P_b + G_b P_b / s_b) / 2       (s_b > 0; a member without spare costs as if
                                                  s_b were 1% of mu)

Model: start from the exact plan's member count ``k`` (proven where the exact plan
proves it) and its least-moved assignment; minimize, lexicographically, members,
``sum_b D_b``, moved load, moves; by local search: move one partition to another
member of the plan (its owner included) or swap two, wherever the capacity allows,
best improvement first, until none improves (at most ``passes`` rounds). The
search is deterministic, and a Python loop: beyond :data:`MAX_TRIES` tries a pass
it leaves out the swaps, then the search itself (the least-moved plan is then the
answer, and ``extra["searched"]`` says so). Settings (``extra``): ``drain``
(``mu``, default the capacity), ``pause`` (seconds per partition gained, default
5), ``passes`` (50).

>>> from stickyflow.planning.problem import PlanProblem, scaled_weights
>>> round(delay(kept=40.0, gained=30.0, count=2, drain=100.0, pause=5.0), 3)  # P = 10 s, spare 30
3000.0
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from stickyflow.planning.methods import PlanDecision, plan_key
from stickyflow.planning.problem import CAPACITY_TOLERANCE, PlanProblem, Weights

from .cpsat import solve_plan_exact

__all__ = ["solve_plan_latency", "delay", "plan_delay"]

DEFAULT_PAUSE = 5.0
_PASSES = 50
#: the most (partition, member) tries, and (partition, partition) swaps, of one pass: the search is a
#: Python loop, for groups of up to a few hundred partitions (beyond, swaps and then the search are left out)
MAX_TRIES = 250_000


def delay(*, kept: float, gained: float, count: int, drain: float, pause: float) -> float:
    """``D_b`` of the module docstring: the record-seconds a member's gained partitions wait."""
    if count == 0 or gained <= 0:
        return 0.0
    p = pause * count
    spare = max(drain - kept - gained, 0.01 * drain)
    return gained * p * (p + gained * p / spare) / 2.0


def plan_delay(problem: PlanProblem, slots: np.ndarray, *, drain: float, pause: float) -> float:
    """``sum_b D_b`` of a plan."""
    gained = (problem.owner != slots)
    total = 0.0
    for b in np.unique(slots).tolist():
        here = slots == b
        g = here & gained
        total += delay(kept=float(problem.rates[here & ~gained].sum()), gained=float(problem.rates[g].sum()),
                       count=int(g.sum()), drain=drain, pause=pause)
    return total


class _Search:
    """Per-member kept load, gained load and gained count, and the moves that change them."""

    def __init__(self, problem: PlanProblem, slots: np.ndarray, drain: float, pause: float):
        self.r = problem.rates.tolist()
        self.owner = problem.owner.tolist()
        self.cap = problem.capacity * (1 + CAPACITY_TOLERANCE)
        self.drain, self.pause = drain, pause
        self.slots = slots.tolist()
        size = max(self.slots) + 1 if self.slots else 0
        self.kept = [0.0] * size
        self.gain = [0.0] * size
        self.count = [0] * size
        self.items = [0] * size
        for j, b in enumerate(self.slots):
            self._add(j, b, +1)

    def _add(self, j: int, b: int, sign: int) -> None:
        if self.owner[j] == b:
            self.kept[b] += sign * self.r[j]
        else:
            self.gain[b] += sign * self.r[j]
            self.count[b] += sign
        self.items[b] += sign

    def cost(self, b: int) -> float:
        return delay(kept=self.kept[b], gained=self.gain[b], count=self.count[b], drain=self.drain, pause=self.pause)

    def load(self, b: int) -> float:
        return self.kept[b] + self.gain[b]

    def fits(self, b: int) -> bool:
        return self.items[b] <= 1 or self.load(b) <= self.cap

    def moved(self, j: int, b: int) -> tuple[float, int]:
        """What partition ``j`` in slot ``b`` adds to (moved load, moves)."""
        return (self.r[j], 1) if self.owner[j] >= 0 and self.owner[j] != b else (0.0, 0)

    def try_relocate(self, j: int, b: int) -> tuple | None:
        a = self.slots[j]
        if a == b or self.items[a] == 1:  # a member is never emptied: the count stays where it is
            return None
        before = self.cost(a) + self.cost(b)
        self._add(j, a, -1)
        self._add(j, b, +1)
        ok = self.fits(b)
        after = self.cost(a) + self.cost(b)
        self._add(j, b, -1)
        self._add(j, a, +1)
        if not ok:
            return None
        ma, na = self.moved(j, a)
        mb, nb = self.moved(j, b)
        return (after - before, mb - ma, nb - na)

    def relocate(self, j: int, b: int) -> None:
        self._add(j, self.slots[j], -1)
        self._add(j, b, +1)
        self.slots[j] = b

    def try_swap(self, i: int, j: int) -> tuple | None:
        a, b = self.slots[i], self.slots[j]
        if a == b:
            return None
        before = self.cost(a) + self.cost(b)
        self.relocate(i, b)
        self.relocate(j, a)
        ok = self.fits(a) and self.fits(b)
        after = self.cost(a) + self.cost(b)
        self.relocate(i, a)
        self.relocate(j, b)
        if not ok:
            return None
        d_moved = sum(self.moved(x, t)[0] - self.moved(x, s)[0] for x, s, t in ((i, a, b), (j, b, a)))
        d_moves = sum(self.moved(x, t)[1] - self.moved(x, s)[1] for x, s, t in ((i, a, b), (j, b, a)))
        return (after - before, d_moved, d_moves)


def _improve(problem: PlanProblem, slots: np.ndarray, drain: float, pause: float, passes: int) -> np.ndarray:
    search = _Search(problem, slots, drain, pause)
    used = sorted(set(search.slots))
    n = problem.n
    if n * len(used) > MAX_TRIES:
        return slots
    swaps = n * n // 2 <= MAX_TRIES
    for _ in range(passes):
        best, step = (-1e-9, 0.0, 0), None
        for j in range(n):
            for b in used:
                gain = search.try_relocate(j, b)
                if gain is not None and gain < best:
                    best, step = gain, ("move", j, b)
            for i in range(j + 1, n if swaps else 0):
                gain = search.try_swap(j, i)
                if gain is not None and gain < best:
                    best, step = gain, ("swap", j, i)
        if step is None:
            break
        if step[0] == "move":
            search.relocate(step[1], step[2])
        else:
            a, b = search.slots[step[1]], search.slots[step[2]]
            search.relocate(step[1], b)
            search.relocate(step[2], a)
    return np.array(search.slots, dtype=np.int64)


def solve_plan_latency(problem: PlanProblem, weights: Weights, options: Any) -> PlanDecision:
    """The ``latency`` plan method (see the module docstring)."""
    t0 = time.perf_counter()
    extra = dict(getattr(options, "extra", {}) or {})
    drain = float(extra.get("drain") or problem.capacity)
    pause = float(extra.get("pause", DEFAULT_PAUSE))
    passes = int(extra.get("passes", _PASSES))
    exact = solve_plan_exact(problem, weights, options)
    start = exact.slots
    best = _improve(problem, start, drain, pause, passes) if problem.n else start
    before, after = (plan_delay(problem, s, drain=drain, pause=pause) for s in (start, best))
    if after > before or plan_key(problem, weights, best)[0] > plan_key(problem, weights, start)[0]:
        best = start  # never worse than the start, whatever the search did
    info = dict(exact.extra, least_moved_delay=round(before, 3), delay=round(min(before, after), 3),
                count_status=exact.status, t_search=round(time.perf_counter() - t0, 4),
                searched="relocations and swaps" if problem.n ** 2 // 2 <= MAX_TRIES else
                "relocations" if problem.n * len(set(start.tolist())) <= MAX_TRIES else "no (too large)")
    return PlanDecision(slots=best, status="feasible" if len(best) else exact.status, bound=exact.bound,
                        reason=exact.reason, extra=info)
