"""What a plan answers, as arrays: the rates, the capacity, where every partition is now, who is there.

A plan (``snapshot-format.md``, "Plans") tells an autoscaler how many members a
group needs and which partitions each takes. :class:`PlanProblem` is its input
reduced to arrays, the same for every plan method: one rate per partition (the
subscribed topics end to end, in snapshot order, partitions in number order),
one capacity, the valid previous owner of each partition (an index into the
existing members, -1 for none) and the existing members' ids.

:func:`plan_problem` builds it from a consumer snapshot and holds the snapshot to
the plan's own input rules, each refused with an :class:`InvalidSnapshotError`
naming the field: ``config.capacity`` is set; every member subscribes to the same
topics (the replicas of one deployment); every subscribed topic carries ``rates``;
a member that states a capacity states ``config.capacity`` (a plan packs equal
members). :meth:`PlanProblem.from_arrays` builds one directly.

:func:`scaled_weights` turns the rates into integers for the packing methods:
exactly (rates with at most six decimals, scaled by a power of ten) or, failing
that, conservatively (rates rounded up, the capacity down), so that whatever a
method packs in integers also fits in the real numbers.

>>> p = PlanProblem.from_arrays([60, 50, 30], capacity=100, owner=[0, 0, -1], members=["a"])
>>> p.total, p.members, p.owner.tolist()
(140.0, ('a',), [0, 0, -1])
>>> w = scaled_weights(p.rates, p.capacity)
>>> w.w.tolist(), w.cap, w.exact
([60, 50, 30], 100, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..errors import InvalidSnapshotError, Problem

__all__ = ["PlanProblem", "Weights", "plan_problem", "scaled_weights", "CAPACITY_TOLERANCE"]

#: a member's load may exceed the capacity by this fraction of it (float sums of non-integer rates)
CAPACITY_TOLERANCE = 1e-9
_EXACT_SCALES = tuple(10 ** k for k in range(7))
_INT_CAP = 1 << 40  # the largest integer capacity of an exact scaling (sums of n weights stay in int64)
_ROUNDED_CAP = 1 << 30  # the integer capacity of a conservative scaling


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class PlanProblem:
    """A plan's input as arrays (read-only); see the module docstring.

    ``topic_of[j]`` and ``number_of[j]`` name partition ``j`` (an index into
    ``topics`` and its partition number).
    """

    rates: np.ndarray
    capacity: float
    owner: np.ndarray
    members: tuple[str, ...]
    topics: tuple[str, ...]
    topic_of: np.ndarray
    number_of: np.ndarray
    id: str | None = None
    warnings: tuple[str, ...] = field(default=())

    @property
    def n(self) -> int:
        """How many partitions."""
        return len(self.rates)

    @property
    def m(self) -> int:
        """How many existing members."""
        return len(self.members)

    @property
    def total(self) -> float:
        """The total load."""
        return float(self.rates.sum())

    @classmethod
    def from_arrays(cls, rates: Sequence[float] | np.ndarray, capacity: float, *,
                    owner: Sequence[int] | np.ndarray | None = None, members: Sequence[str] = (),
                    topics: Sequence[tuple[str, int]] | None = None, id: str | None = None) -> PlanProblem:
        """A problem from arrays: ``rates`` (one per partition), ``capacity``, ``owner`` (member index or -1
        per partition; default: nobody owns anything), ``members`` (the existing ids) and ``topics``
        (``(name, partitions)`` pairs whose counts add up to ``len(rates)``; default one topic ``"t"``).

        Refuses bad arrays with an :class:`InvalidSnapshotError` naming the argument.

        >>> PlanProblem.from_arrays([1, 2], 3, topics=[("a", 1), ("b", 1)]).topics
        ('a', 'b')
        """
        r = _rate_array(rates, "rates")
        cap = _capacity(capacity, "capacity")
        ids = tuple(members)
        for i, mid in enumerate(ids):
            if not isinstance(mid, str):
                raise InvalidSnapshotError(Problem(f"members[{i}]", "must be a string (a member id)"))
        if len(set(ids)) != len(ids):
            raise InvalidSnapshotError(Problem("members", "must be unique ids"))
        if owner is None:
            own = np.full(len(r), -1, dtype=np.int64)
        else:
            own = np.asarray(owner)
            if own.shape != r.shape or own.dtype.kind not in "iu":
                raise InvalidSnapshotError(Problem("owner", f"must be {len(r)} integers, one per partition"))
            own = own.astype(np.int64)
            if len(own) and (own.min() < -1 or own.max() >= len(ids)):
                raise InvalidSnapshotError(Problem("owner", f"must hold member indexes 0..{len(ids) - 1} or -1"))
        pairs = [("t", len(r))] if topics is None else [(str(t), int(c)) for t, c in topics]
        if sum(c for _, c in pairs) != len(r) or any(c < 0 for _, c in pairs):
            raise InvalidSnapshotError(Problem("topics", f"partition counts must add up to {len(r)}"))
        counts = np.array([c for _, c in pairs], dtype=np.int64)
        topic_of = np.repeat(np.arange(len(pairs), dtype=np.int64), counts)
        starts = np.cumsum(counts) - counts
        number_of = np.arange(len(r), dtype=np.int64) - np.repeat(starts, counts)
        return cls(rates=_frozen(r), capacity=cap, owner=_frozen(own), members=ids,
                   topics=tuple(t for t, _ in pairs), topic_of=_frozen(topic_of), number_of=_frozen(number_of),
                   id=id)

    def with_rates(self, rates: Sequence[float] | np.ndarray, owner: np.ndarray | None = None,
                   members: Sequence[str] | None = None) -> PlanProblem:
        """The same partitions with new rates (and, when given, new owners and members): one step of a trace."""
        return PlanProblem.from_arrays(rates, self.capacity, owner=self.owner if owner is None else owner,
                                       members=self.members if members is None else members,
                                       topics=list(zip(self.topics, np.bincount(self.topic_of,
                                                                                minlength=len(self.topics)).tolist())),
                                       id=self.id)


def _rate_array(values: Any, where: str) -> np.ndarray:
    try:
        r = np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidSnapshotError(Problem(where, "must be numbers, one per partition")) from None
    if r.ndim != 1:
        raise InvalidSnapshotError(Problem(where, "must be a flat array of numbers, one per partition"))
    bad = ~np.isfinite(r) | (r < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InvalidSnapshotError(Problem(f"{where}[{i}]", "must be a finite number >= 0"))
    return r


def _capacity(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InvalidSnapshotError(Problem(where, "must be a number > 0"))
    cap = float(value)
    if not math.isfinite(cap) or cap <= 0:
        raise InvalidSnapshotError(Problem(where, "must be a finite number > 0"))
    return cap


# --------------------------------------------------------------------------- from a snapshot

def plan_problem(snapshot: Any) -> PlanProblem:
    """The plan's input of a consumer snapshot (object, dict, JSON text or path), held to the plan's rules.

    >>> p = plan_problem({"format": "stickyflow.snapshot/1", "kind": "consumer",
    ...     "topics": {"t": {"partitions": 2, "rates": [40, 70]}}, "config": {"capacity": 100},
    ...     "members": [{"id": "a", "subscription": ["t"], "owned": {"t": [0, 1]}}]})
    >>> p.rates.tolist(), p.owner.tolist(), p.capacity
    ([40.0, 70.0], [0, 0], 100.0)
    """
    from ..model.consumer_claims import previous_owners
    from ..snapshot import as_snapshot

    snap = as_snapshot(snapshot)
    if snap.kind != "consumer":
        raise InvalidSnapshotError(Problem("kind", 'must be "consumer": a plan sizes a consumer group'))
    cap = getattr(snap.config, "capacity", None)
    if cap is None:
        raise InvalidSnapshotError(Problem("config.capacity", "is required for a plan: the load one member can "
                                                              "take (a number > 0)"))
    cap = _capacity(cap, "config.capacity")
    first = snap.members[0].subscription if snap.members else ()
    wanted = frozenset(first)
    for i, m in enumerate(snap.members):
        if m.subscription is not first and frozenset(m.subscription) != wanted:
            raise InvalidSnapshotError(Problem(f"members[{i}].subscription", "must name the same topics as "
                                                                            "members[0]'s: a plan's members are "
                                                                            "replicas of one deployment"))
        own_cap = getattr(m, "capacity", None)
        if own_cap is not None and float(own_cap) != cap:
            raise InvalidSnapshotError(Problem(f"members[{i}].capacity", f"must be absent or equal config.capacity "
                                                                        f"({cap:g}): a plan packs equal members"))
    names = [t for t in snap.topics if t in wanted]
    rates = []
    for t in names:
        r = getattr(snap.topics[t], "rates", None)
        if r is None:
            raise InvalidSnapshotError(Problem(f"topics.{t}.rates", "is required for a plan: every subscribed "
                                                                   "topic carries one rate per partition"))
        rates.append(np.asarray(r, dtype=np.float64))
    rate = np.concatenate(rates) if rates else np.zeros(0)
    owners = previous_owners(snap).owner if names else {}
    owner = np.concatenate([np.asarray(owners[t], dtype=np.int64) for t in names]) if names else \
        np.zeros(0, dtype=np.int64)
    counts = [(t, snap.topics[t].partitions) for t in names]
    problem = PlanProblem.from_arrays(rate, cap, owner=owner, members=[m.id for m in snap.members],
                                      topics=counts, id=snap.id)
    if snap.warnings:
        object.__setattr__(problem, "warnings", tuple(snap.warnings))
    return problem


# --------------------------------------------------------------------------- integer weights

@dataclass(frozen=True, slots=True)
class Weights:
    """The rates as integers for packing: ``w`` against ``cap``; ``alone`` marks partitions that only an
    empty member takes (rate above the capacity, or rounded above it). ``low`` and ``cap_high`` round the
    other way (down, and the capacity up): bounds computed on them, with the partitions whose rate
    exceeds the capacity set apart, hold for the real rates. ``exact``: both are the rates scaled by
    ``scale`` without rounding."""

    w: np.ndarray
    cap: int
    alone: np.ndarray
    low: np.ndarray
    cap_high: int
    exact: bool
    scale: float


def scaled_weights(rates: np.ndarray, capacity: float) -> Weights:
    """Integers for ``rates`` against ``capacity`` (see :class:`Weights`).

    >>> w = scaled_weights(np.array([0.25, 1.5, 3.0]), 2.0)
    >>> w.w.tolist(), w.cap, w.alone.tolist(), w.exact
    ([25, 150, 200], 200, [False, False, True], True)
    >>> w = scaled_weights(np.array([1 / 3]), 1.0)
    >>> w.exact, bool(w.low[0] <= w.w[0]), w.cap_high >= w.cap
    (False, True, True)
    """
    r = np.asarray(rates, dtype=np.float64)
    alone = r > capacity
    for s in _EXACT_SCALES:
        c = capacity * s
        if c > _INT_CAP:
            break
        a = np.minimum(r, capacity) * s
        ra = np.round(a)
        if abs(c - round(c)) <= 1e-9 * max(1.0, c) and np.all(np.abs(a - ra) <= 1e-9 * np.maximum(1.0, a)):
            w = ra.astype(np.int64)
            cap = int(round(c))
            w[alone] = cap
            return Weights(w=w, cap=cap, alone=alone, low=w, cap_high=cap, exact=True, scale=float(s))
    s = _ROUNDED_CAP / capacity
    a = np.minimum(r, capacity) * s
    cap = _ROUNDED_CAP
    w = np.minimum(np.ceil(a * (1 + 1e-12)), cap + 1).astype(np.int64)
    alone = alone | (w > cap)
    w[alone] = cap
    low = np.floor(a * (1 - 1e-12)).astype(np.int64)
    return Weights(w=w, cap=cap, alone=alone, low=low, cap_high=cap + 1, exact=False, scale=s)
