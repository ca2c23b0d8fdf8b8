"""What an assignor decided: :class:`AssignmentResult` and its parts, and the result JSON.

Assignor functions return a :class:`Decision` (the raw assignment and how it
was found); the front door (:func:`stickyflow.assign`) checks it, applies the
cooperative protocol, measures it, and returns an :class:`AssignmentResult`.
Only results that passed the validity check are ever returned.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

__all__ = [
    "RESULT_FORMAT",
    "STATUSES",
    "SolverInfo",
    "Decision",
    "Violation",
    "AssignmentResult",
    "ReadOnlyDict",
]

RESULT_FORMAT = "stickyflow.result/1"
STATUSES = ("optimal", "feasible", "heuristic", "fallback")
_EMPTY: Mapping = MappingProxyType({})


class ReadOnlyDict(dict):
    """A dict that refuses changes: a result's ``metrics``, readable by anything that takes a dict.

    >>> import pandas as pd
    >>> m = ReadOnlyDict(moves=1, imbalance=0)
    >>> pd.json_normalize([m]).to_dict("records")
    [{'moves': 1, 'imbalance': 0}]
    >>> m["moves"] = 0
    Traceback (most recent call last):
    ...
    TypeError: a result is read-only: metrics cannot change
    """

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("a result is read-only: metrics cannot change")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _refuse  # type: ignore[assignment]

    def __reduce__(self):  # pickles (Spark ships results between processes) as a read-only dict again
        return (ReadOnlyDict, (dict(self),))


@dataclass(frozen=True, slots=True, kw_only=True)
class SolverInfo:
    """How the assignment was found (the result's ``solver`` object)."""

    method: str
    status: str
    reason: str | None = None
    objective: int | float | None = None
    bound: int | float | None = None
    wall_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "status": self.status, "reason": self.reason,
                "objective": self.objective, "bound": self.bound, "wall_s": round(self.wall_s, 6)}


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Decision:
    """An assignor's raw answer, before the front door checks and measures it.

    ``assignment`` is, for consumers, member id -> topic -> partitions; for
    streams, process id -> :class:`stickyflow.model.streams.ClientAssignment`.
    ``status`` is ``"optimal"``, ``"feasible"`` or ``"heuristic"``.
    """

    assignment: Mapping[str, Any]
    method: str
    status: str
    objective: int | float | None = None
    bound: int | float | None = None
    reason: str | None = None
    followup_rebalance_deadline_ms: int | None = None
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule of an assignment: a KIP-924-style ``code`` and a sentence."""

    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class AssignmentResult:
    """A checked assignment with its metrics; ``to_json()`` gives the spec's result object.

    ``assignment`` maps, for consumers, member id -> topic -> sorted partition
    tuple (every member present); for streams, process id -> ``ClientAssignment``.
    For consumer groups ``target`` is the whole decision the metrics describe: with
    ``protocol == "cooperative"`` (KIP-429), ``assignment`` is only this round's part of
    it (a claimed partition waits until its claimants have revoked it) and ``to_json()``
    writes ``target`` too; with the eager protocol the two are the same. Both are
    read-only. A consumer answer that was checked as owner arrays (the optimizer's, and
    any plain one) is an :class:`stickyflow.check.answer.AnswerView`: its mapping is
    built on the first look at it, and ``to_json()`` writes the lists from the arrays.
    """

    kind: str
    id: str | None
    assignor: str
    assignment: Mapping[str, Any]
    revocations: Mapping[str, Mapping[str, tuple[int, ...]]]
    followup_rebalance_deadline_ms: int | None
    error: str
    solver: SolverInfo
    metrics: Mapping[str, Any]
    target: Mapping[str, Any] | None = field(default=None, repr=False)
    protocol: str | None = None
    #: unknown snapshot fields the reader ignored, one line each (nearest known name included); not in the JSON
    warnings: tuple[str, ...] = ()

    @property
    def status(self) -> str:
        return self.solver.status

    def to_json(self) -> dict[str, Any]:
        """The result as the spec's JSON object (plain dicts and lists)."""
        if self.kind == "consumer":
            assignment = consumer_lists(self.assignment)
        else:
            assignment = {c: a.to_json() for c, a in self.assignment.items()}
        out: dict[str, Any] = {
            "format": RESULT_FORMAT,
            "kind": self.kind,
            "id": self.id,
            "assignor": self.assignor,
            "assignment": assignment,
            "revocations": {m: {t: list(p) for t, p in topics.items()} for m, topics in self.revocations.items()},
            "followup_rebalance_deadline_ms": self.followup_rebalance_deadline_ms,
            "error": self.error,
            "solver": self.solver.to_json(),
            "metrics": dict(self.metrics),
        }
        if self.protocol == "cooperative" and self.target is not None:
            # the whole decision; ``assignment`` is only this round's part of it (the spec's ``target``)
            out["target"] = consumer_lists(self.target)
        return out


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Finished:
    """A decision checked and measured by its kind's ``finish`` function (internal to the front door).

    ``assignment`` is what the result reports (for cooperative consumer groups:
    this round's, with withheld partitions removed); ``target`` is the full
    decision the metrics describe.
    """

    assignment: Mapping[str, Any]
    target: Mapping[str, Any]
    revocations: Mapping[str, Mapping[str, tuple[int, ...]]]
    followup_rebalance_deadline_ms: int | None
    violations: tuple[Violation, ...]
    metrics: Mapping[str, Any]


def consumer_lists(mapping: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, list[int]]]:
    """A consumer mapping (member id -> topic -> partitions) as the result JSON's dicts of lists; an
    :class:`stickyflow.check.answer.AnswerView` writes them straight from its arrays."""
    to_lists = getattr(mapping, "to_lists", None)
    if to_lists is not None:
        return to_lists()
    return {m: {t: list(p) for t, p in topics.items()} for m, topics in mapping.items()}
