"""The front door: :func:`assign`.

``assign`` reads the snapshot (object, dict, JSON text or path), runs the
named assignor, checks its answer, applies the cooperative protocol, measures
the result and returns an :class:`AssignmentResult`. If an optimizing assignor
is missing, times out without a solution, proves the problem infeasible,
crashes, or returns something invalid, the greedy ``sticky`` assignor stands in
(for a consumer group balanced by load, the sticky load greedy of
:mod:`stickyflow.load.plan`) and ``result.solver.status == "fallback"`` with the
reason. A result that did
not pass the validity check is never returned; for a custom streams assignor
(KIP-924) that check is KIP-924's own validation, and the high-availability
rules it breaks are listed in ``metrics["broken_rules"]``.

>>> import stickyflow
>>> r = stickyflow.assign({"format": "stickyflow.snapshot/1", "kind": "consumer",
...                        "topics": {"t": {"partitions": 4}},
...                        "members": [{"id": "a", "subscription": ["t"]},
...                                    {"id": "b", "subscription": ["t"]}]})
>>> r.to_json()["assignment"]
{'a': {'t': [0, 1]}, 'b': {'t': [2, 3]}}
>>> r.solver.status, r.metrics["imbalance"]
('optimal', 0)
"""

from __future__ import annotations

import time
from types import MappingProxyType
from typing import Any, Mapping

import numpy as np

from .check.answer import AnswerView, ArrayAssignment, as_array_assignment, normalize_consumer_assignment
from .check.consumer import inspect_consumer
from .check.cooperative import cooperative_split
from .errors import (InvalidAssignmentError, InvalidSnapshotError, SolverFaultError, StickyflowError,
                     UnknownAssignorError)
from .model.arrays import gc_paused
from .model.consumer import ConsumerSnapshot
from .model.consumer_claims import previous_owners, remembered_claims
from .registry import SolveOptions, get_assignor
from .result import AssignmentResult, Decision, Finished, ReadOnlyDict, SolverInfo, Violation
from .snapshot import as_snapshot

__all__ = ["assign", "finish_consumer", "FALLBACK_ASSIGNOR"]

FALLBACK_ASSIGNOR = "sticky"


def assign(snapshot: Any, assignor: str = "optimal", *, time_limit: float | None = None, seed: int = 0,
           num_workers: int | None = None, method: str | None = None, fallback: bool = True,
           **extra: Any) -> AssignmentResult:
    """Assign a consumer group's partitions or a Streams application's tasks.

    Parameters
    ----------
    snapshot:
        A snapshot object, a dict of the spec's JSON, JSON text, or a path.
    assignor:
        ``"optimal"`` (default), ``"sticky"``, ``"range"``, ``"roundrobin"``, a
        name registered with :func:`stickyflow.register_assignor`, or
        ``"module:function"``.
    time_limit, seed, num_workers, method:
        How to solve (see :class:`SolveOptions`). ``method`` picks the
        optimizer's backend: ``"flow"`` (OR-Tools, default), ``"networkx"``,
        ``"cpsat"``.
    fallback:
        When an optimizing assignor fails, stand in with ``sticky`` (default)
        instead of raising.
    extra:
        Assignor-specific settings, e.g. ``max_moves`` for the CP-SAT model.

    Raises :class:`InvalidSnapshotError` for bad input and
    :class:`UnknownAssignorError` for an unknown assignor name.
    """
    options = SolveOptions(time_limit=time_limit, seed=seed, num_workers=num_workers, method=method, extra=extra)
    with gc_paused():  # one call builds many small acyclic containers: no cycle collection in between
        return _front_door(snapshot, assignor, options, fallback)


def _front_door(snapshot: Any, assignor: str, options: SolveOptions, fallback: bool) -> AssignmentResult:
    snap = as_snapshot(snapshot)
    spec = get_assignor(assignor, snap.kind)
    if snap.kind == "consumer":
        with remembered_claims(snap):  # the assignor, the check and the metrics resolve the claims once
            return _assign(snap, spec, options, assignor, fallback)
    return _assign(snap, spec, options, assignor, fallback)


def _assign(snap: Any, spec: Any, options: SolveOptions, assignor: str, fallback: bool) -> AssignmentResult:
    finish = _finisher(snap.kind, spec)
    custom = finish is not _finisher(snap.kind)  # KIP-924: a custom streams assignor meets KIP-924's rules only
    t0 = time.perf_counter()
    reason: str | None = None
    decision: Decision | None = None
    finished: Finished | None = None
    try:
        decision = spec.load()(snap, options)
    except (InvalidSnapshotError, UnknownAssignorError):
        raise
    except Exception as exc:  # an optimizer failing must not fail the rebalance
        if not (spec.optimizing and fallback):
            if isinstance(exc, StickyflowError):
                raise
            raise SolverFaultError(f"assignor {assignor!r} failed: {type(exc).__name__}: {exc}") from exc
        reason = _describe(exc)
    if decision is not None:
        finished = finish(snap, decision)
        if finished.violations:
            if not (spec.optimizing and fallback):
                raise _invalid(snap.kind, f"assignor {assignor!r}", finished.violations,
                               code=finished.violations[0].code if custom else None)
            problem = "; ".join(str(v) for v in finished.violations[:3])
            reason = f"the {decision.method} solution was invalid ({problem})"
            decision = finished = None
    if decision is None:
        stand_in, name = _fallback(snap)
        try:
            decision = stand_in(snap, options)
        except (InvalidSnapshotError, UnknownAssignorError):
            raise
        except Exception as exc:  # both failed: say so, with both reasons, as the one typed error
            raise SolverFaultError(f"assignor {assignor!r} failed ({reason}) and so did the fallback "
                                   f"{name}: {_describe(exc)}") from exc
        decision = Decision(assignment=decision.assignment, method=decision.method, status="fallback",
                            objective=decision.objective, bound=None, reason=reason,
                            followup_rebalance_deadline_ms=decision.followup_rebalance_deadline_ms,
                            extra=decision.extra)
        finished = _finisher(snap.kind)(snap, decision)
        if finished.violations:
            raise _invalid(snap.kind, "the fallback assignor", finished.violations)
    wall = time.perf_counter() - t0
    assert finished is not None
    assignment = _read_only(finished.assignment)
    return AssignmentResult(
        kind=snap.kind,
        id=snap.id,
        assignor=spec.name,
        assignment=assignment,
        revocations=_read_only(finished.revocations),
        followup_rebalance_deadline_ms=finished.followup_rebalance_deadline_ms,
        error="NONE",
        solver=SolverInfo(method=decision.method, status=decision.status, reason=decision.reason,
                          objective=decision.objective, bound=decision.bound, wall_s=wall),
        metrics=ReadOnlyDict(finished.metrics),
        target=assignment if finished.target is finished.assignment else _read_only(finished.target),
        protocol=getattr(snap, "protocol", None),
        warnings=getattr(snap, "warnings", ()),
    )


def _fallback(snap: Any):
    """What stands in for a failed optimizer, and its name: the greedy ``sticky`` assignor, or for a consumer
    group balanced by load the sticky load greedy (:func:`stickyflow.load.plan.fallback`: keeps what the previous
    owners can keep under the slack of a cheap bound, deals the rest by load), since ``sticky`` would balance
    counts and could leave a member far above its capacity."""
    if snap.kind == "consumer" and snap.config.balance == "load":
        from .load.plan import fallback

        return fallback, "the sticky load greedy"
    return get_assignor(FALLBACK_ASSIGNOR, snap.kind).load(), repr(FALLBACK_ASSIGNOR)


def _read_only(mapping: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """A checked answer cannot be edited afterwards: read-only views, two levels deep (member -> topic ->
    partition tuple for consumers; process id -> frozen ``ClientAssignment`` for streams)."""
    if mapping is None or isinstance(mapping, AnswerView):
        return mapping
    return MappingProxyType({k: MappingProxyType(v) if isinstance(v, dict) else v for k, v in mapping.items()})


def finish_consumer(snap: ConsumerSnapshot, decision: Decision) -> Finished:
    """Check a consumer decision, apply KIP-429 when cooperative, and measure the target."""
    prev = previous_owners(snap)
    # a plain decision is checked, measured and normalized as owner arrays, in numpy; anything
    # irregular (unknown ids, partitions given twice, ...) takes the per-pair path that names it
    arrays = as_array_assignment(snap, decision.assignment)
    # (the arrays' answer is read as a mapping only when someone looks: AnswerView)
    target = AnswerView(arrays) if arrays is not None else normalize_consumer_assignment(snap, decision.assignment)
    checked = arrays if arrays is not None else target
    violations, metrics = inspect_consumer(snap, checked, prev=prev)
    proven = decision.extra.get("peak_bound") if decision.extra else None
    if proven is not None and metrics.get("peak_bound") is not None:
        violations = violations + _peak_bound(metrics, proven)
    assignment: Mapping[str, Any] = target
    revocations: Mapping[str, Any] = {}
    followup = None
    if not violations and snap.protocol == "cooperative":
        step = cooperative_split(snap, checked, prev)
        this_round: Any = step.assignment
        if arrays is not None:  # check this round from the arrays too
            this_round = ArrayAssignment(snap, {t: np.where(step.withheld[t], -1, a) if t in step.withheld else a
                                                for t, a in arrays.owners.items()})
        violations, _ = inspect_consumer(snap, this_round, withheld=step.withheld, prev=prev)
        assignment, revocations = step.assignment, step.revocations
        metrics = dict(metrics, withheld=int(sum(int(m.sum()) for m in step.withheld.values())))
        followup = snap.now_ms if step.revoking else None
    return Finished(assignment=assignment, target=target, revocations=revocations,
                    followup_rebalance_deadline_ms=followup, violations=tuple(violations), metrics=metrics)


def _peak_bound(metrics: dict[str, Any], proven: Any) -> list:
    """Keep the larger of the checker's ``peak_bound`` and the one an assignor proved (``Decision.extra
    ["peak_bound"]``); a claimed bound above the peak this very answer reaches is no bound: a violation (so an
    optimizer that claims it falls back, with the reason).

    >>> m = {"peak_utilization": 1.5, "peak_bound": 1.2}
    >>> _peak_bound(m, 1.4), m["peak_bound"]
    ([], 1.4)
    >>> [v.code for v in _peak_bound(m, 1.6)], m["peak_bound"]
    (['PEAK_BOUND_ABOVE_PEAK'], 1.4)
    """
    value = float(proven)
    if not value <= metrics["peak_utilization"] * (1 + 1e-9):  # NaN too
        return [Violation("PEAK_BOUND_ABOVE_PEAK", f"the claimed peak_bound {proven!r} is above the peak "
                                                   f"{metrics['peak_utilization']!r} of the answer itself")]
    metrics["peak_bound"] = max(metrics["peak_bound"], value)
    return []


def _finisher(kind: str, spec: Any = None):
    """The check-and-measure step: consumer; streams with every rule; or, for a custom streams assignor
    (:func:`stickyflow.kip924.is_custom`), KIP-924's validation only, the other rules shown in its metrics."""
    if kind == "consumer":
        return finish_consumer
    if spec is not None:
        from .kip924 import finish_custom, is_custom

        if is_custom(spec):
            return finish_custom
    from .check.streams import finish_streams

    return finish_streams


def _invalid(kind: str, who: str, violations: tuple, code: str | None = None) -> InvalidAssignmentError:
    """The typed error for an invalid answer with nothing to stand in: KIP-924's code, then the first rules."""
    if code is not None:
        pass
    elif kind == "streams":
        from .check.streams import assignment_error

        code = assignment_error(violations)
    else:
        code = violations[0].code
    more = f" (and {len(violations) - 3} more)" if len(violations) > 3 else ""
    problem = "; ".join(str(v) for v in violations[:3]) + more
    return InvalidAssignmentError(f"{who} returned an invalid assignment, {code}: {problem}", error=code,
                                  violations=violations)


def _describe(exc: Exception) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
