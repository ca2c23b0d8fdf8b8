"""The one check every plan passes, and what a plan measures.

A method's raw answer is ``slots``: one integer per partition of a
:class:`~stickyflow.planning.problem.PlanProblem`, the member that takes it: ``0 ..
m - 1`` the existing members (in their order), ``m`` and up new ones. Every plan
method's answer goes through :func:`check_plan` before anyone sees it; it returns
every broken rule, not just the first:

* ``UNASSIGNED_PARTITION``: a partition has no member (a slot below 0 or past
  ``m + n``); every partition goes to exactly one member by the shape of ``slots``;
* ``OVER_CAPACITY``: a member's load exceeds the capacity while it holds more
  than one partition (a partition whose own rate exceeds the capacity may stand
  alone);
* ``ADDED_BEFORE_KEPT``: a new member takes partitions while an existing one is
  left without any (existing members are kept before new ones are added).

:func:`plan_measures` gives the rest: the members used, kept, stopped and
added, the moved load and the moves (partitions that leave their valid previous
owner), each member's load.

>>> from stickyflow.planning.problem import PlanProblem
>>> p = PlanProblem.from_arrays([60, 50, 30], 100, owner=[0, 0, -1], members=["a"])
>>> check_plan(p, np.array([0, 1, 0]))
()
>>> [v.code for v in check_plan(p, np.array([0, 0, 1]))]
['OVER_CAPACITY']
>>> m = plan_measures(p, np.array([0, 1, 0]))
>>> m.members, m.keep, m.add, m.moved_load, m.moves
(2, ('a',), ('new-1',), 50.0, 1)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..planning.problem import CAPACITY_TOLERANCE, PlanProblem
from ..result import Violation

__all__ = ["check_plan", "plan_measures", "PlanMeasures", "new_member_ids"]


def check_plan(problem: PlanProblem, slots: Any) -> tuple[Violation, ...]:
    """Every rule ``slots`` breaks for ``problem`` (see the module docstring); empty when it is a valid plan."""
    n, m = problem.n, problem.m
    s = np.asarray(slots)
    if s.shape != (n,) or (n and s.dtype.kind not in "iu"):
        return (Violation("UNASSIGNED_PARTITION", f"a plan gives {n} partitions one member each: the answer "
                                                  f"holds {s.shape} of {s.dtype}"),)
    s = s.astype(np.int64, copy=False)
    out: list[Violation] = []
    bad = (s < 0) | (s >= m + n)
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        out.append(Violation("UNASSIGNED_PARTITION", f"{int(bad.sum())} partitions have no member, the first "
                                                     f"{_name(problem, j)}"))
        s = np.where(bad, m + n, s)
    load = np.bincount(s, weights=problem.rates, minlength=m + n + 1)[: m + n]
    count = np.bincount(s, minlength=m + n + 1)[: m + n]
    over = (load > problem.capacity * (1 + CAPACITY_TOLERANCE)) & (count > 1)
    if over.any():
        i = int(np.flatnonzero(over)[0])
        out.append(Violation("OVER_CAPACITY", f"{int(over.sum())} members exceed the capacity {problem.capacity:g} "
                                              f"with more than one partition, the first with {load[i]:g} "
                                              f"in {int(count[i])} partitions"))
    if m and (count[m:] > 0).any() and (count[:m] == 0).any():
        i = int(np.flatnonzero(count[:m] == 0)[0])
        out.append(Violation("ADDED_BEFORE_KEPT", f"new members take partitions while the existing member "
                                                  f"{problem.members[i]!r} gets none"))
    return tuple(out)


def _name(problem: PlanProblem, j: int) -> str:
    return f"{problem.topics[problem.topic_of[j]]}-{int(problem.number_of[j])}"


@dataclass(frozen=True, slots=True)
class PlanMeasures:
    """What a valid plan measures: ``members`` used; ``keep``, ``stop`` and ``add`` (ids); ``ids[slot]`` for
    every used slot; ``moved_load`` and ``moves``; ``loads`` per used slot (in slot order)."""

    members: int
    keep: tuple[str, ...]
    stop: tuple[str, ...]
    add: tuple[str, ...]
    ids: dict[int, str]
    moved_load: float
    moves: int
    loads: dict[int, float]


def new_member_ids(existing: tuple[str, ...], count: int) -> list[str]:
    """``count`` ids for new members, ``"new-1"``, ``"new-2"``, ..., skipping any an existing member has.

    >>> new_member_ids(("a", "new-2"), 2)
    ['new-1', 'new-3']
    """
    taken = set(existing)
    out: list[str] = []
    k = 0
    while len(out) < count:
        k += 1
        if f"new-{k}" not in taken:
            out.append(f"new-{k}")
    return out


def plan_measures(problem: PlanProblem, slots: np.ndarray) -> PlanMeasures:
    """The measures of a valid plan (:func:`check_plan` first); new members are numbered in slot order."""
    n, m = problem.n, problem.m
    s = np.asarray(slots, dtype=np.int64)
    count = np.bincount(s, minlength=m + n)
    load = np.bincount(s, weights=problem.rates, minlength=m + n)
    used = np.flatnonzero(count)
    new = used[used >= m]
    ids = {int(i): problem.members[i] for i in used[used < m]}
    ids.update(zip(new.tolist(), new_member_ids(problem.members, len(new))))
    owned = problem.owner >= 0
    moved = owned & (s != problem.owner)
    return PlanMeasures(members=len(used), keep=tuple(problem.members[i] for i in used[used < m]),
                        stop=tuple(problem.members[i] for i in np.flatnonzero(count[:m] == 0)),
                        add=tuple(ids[int(i)] for i in new), ids=ids,
                        moved_load=float(problem.rates[moved].sum()), moves=int(moved.sum()),
                        loads={int(i): float(load[i]) for i in used})
