"""The errors stickyflow raises.

One base class, :class:`StickyflowError`, and a few subclasses that tell a
caller what to do next:

* :class:`InvalidSnapshotError`: the input breaks the snapshot format; it names
  the field (a JSON path such as ``members[2].owned.orders[0]``) and the rule.
* :class:`InfeasibleError`: the problem, as configured, has no valid answer.
* :class:`BackendMissingError`: an optional package (OR-Tools, pandas, pyspark,
  kafka-python) is not installed.
* :class:`SolverFaultError`: a formulation produced something invalid: a bug.
* :class:`CostRangeError`: the configured costs are too large, at this size,
  for exact 64-bit integer optimization.
* :class:`InvalidAssignmentError`: an assignor that has no fallback (a greedy one,
  or your own) returned an assignment that breaks the rules; ``error`` is the
  KIP-924 ``AssignmentError`` name and ``violations`` lists every broken rule.

Running out of time is not an error: the optimizer keeps its best solution or
the greedy assignor stands in, and the result's ``solver.status`` says which.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "StickyflowError",
    "InvalidSnapshotError",
    "Problem",
    "InfeasibleError",
    "BackendMissingError",
    "SolverFaultError",
    "InvalidAssignmentError",
    "CostRangeError",
    "TimeLimitError",
    "UnknownAssignorError",
]


class StickyflowError(Exception):
    """Base class of every error stickyflow raises on purpose."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One broken rule of the input: where (``field``) and what (``rule``)."""

    field: str
    rule: str

    def __str__(self) -> str:
        return f"{self.field}: {self.rule}"


class InvalidSnapshotError(StickyflowError, ValueError):
    """The snapshot breaks the format; ``field`` and ``rule`` say where and how.

    Every problem found is in ``problems``; ``field`` and ``rule`` are the first.

    >>> err = InvalidSnapshotError([Problem("members[0].id", "must be a string")])
    >>> str(err)
    'members[0].id: must be a string'
    """

    def __init__(self, problems: list[Problem] | Problem):
        if isinstance(problems, Problem):
            problems = [problems]
        if not problems:
            raise ValueError("InvalidSnapshotError needs at least one problem")
        self.problems: tuple[Problem, ...] = tuple(problems)
        first = self.problems[0]
        self.field = first.field
        self.rule = first.rule
        more = len(self.problems) - 1
        suffix = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
        super().__init__(f"{first}{suffix}")


class InfeasibleError(StickyflowError):
    """The problem as configured has no valid assignment (e.g. a move cap below what balance needs)."""


class TimeLimitError(StickyflowError, TimeoutError):
    """The time limit ran out before the optimizer had any valid assignment (with ``fallback``, the greedy
    assignor then stands in)."""


class BackendMissingError(StickyflowError, ImportError):
    """An optional dependency is not installed; the message names the pip extra."""


class SolverFaultError(StickyflowError, RuntimeError):
    """A formulation produced an invalid answer or crashed: a bug in stickyflow or a backend."""


class InvalidAssignmentError(SolverFaultError):
    """An assignor returned an assignment that fails the validity check, and nothing stood in for it.

    ``error`` is the KIP-924 ``AssignmentError`` name of the most basic violation
    (for example ``"UNKNOWN_TASK_ID"``; consumer groups use the same style:
    ``"PARTITION_UNASSIGNED"``), ``violations`` every :class:`~stickyflow.Violation`.
    stickyflow never returns such an assignment: this error is how a custom
    assignor learns what it got wrong.
    """

    def __init__(self, message: str, *, error: str, violations: tuple = ()):
        super().__init__(message)
        self.error = error
        self.violations = tuple(violations)


class CostRangeError(StickyflowError, OverflowError):
    """The costs, at this size, do not fit the solver's 64-bit integer arithmetic (with ``fallback``, the
    greedy assignor stands in). Only the ratio of ``traffic_cost`` to ``non_overlap_cost`` matters: smaller
    numbers with the same ratio give the same optimum."""


class UnknownAssignorError(StickyflowError, KeyError):
    """No assignor of that name is registered for that kind of snapshot."""

    def __str__(self) -> str:  # KeyError quotes its argument; we want the sentence
        return str(self.args[0]) if self.args else "unknown assignor"
