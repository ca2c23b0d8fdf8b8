"""The front door of plans: :func:`plan`, and the :class:`Plan` it returns (the spec's plan JSON).

A plan answers an autoscaler (``snapshot-format.md``, "Plans"): given every
partition's rate and a capacity, how many members the group needs and which
partitions each takes, moving as little load as possible. ``plan`` reads the
snapshot (:func:`stickyflow.planning.problem.plan_problem`, which holds it to the
plan's input rules), runs the method (:mod:`stickyflow.planning.methods`), checks its
answer (:func:`stickyflow.check.plan.check_plan`) and measures it. No plan leaves
unchecked: when the exact method fails (OR-Tools missing, a fault, an answer
that breaks a rule), the best of the greedy methods stands in and
``solver.status`` is ``"fallback"`` with the reason; a greedy method whose
answer breaks a rule raises :class:`InvalidAssignmentError` (a bug).

>>> import stickyflow
>>> p = stickyflow.plan({"format": "stickyflow.snapshot/1", "kind": "consumer", "id": "g",
...     "topics": {"t": {"partitions": 4, "rates": [60, 50, 30, 40]}}, "config": {"capacity": 100},
...     "members": [{"id": "a", "subscription": ["t"], "owned": {"t": [0, 1, 2, 3]}}]})
>>> p.members, p.keep, p.add, p.moved_load, p.solver.status
(2, ('a',), ('new-1',), 80.0, 'optimal')
>>> p.to_json()["assignment"]
{'a': {'t': [0, 3]}, 'new-1': {'t': [1, 2]}}
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

import numpy as np

from ..check.plan import check_plan, plan_measures
from ..errors import (InvalidAssignmentError, InvalidSnapshotError, SolverFaultError, StickyflowError,
                      UnknownAssignorError)
from ..registry import SolveOptions
from ..result import SolverInfo
from .bounds import count_bound
from .methods import EXACT, HEURISTICS, INCUMBENTS, PlanDecision, best_of, get_method, run_heuristic
from .problem import PlanProblem, plan_problem, scaled_weights

__all__ = ["PLAN_FORMAT", "Plan", "plan", "solve_plan"]

PLAN_FORMAT = "stickyflow.plan/1"


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Plan:
    """A checked plan; ``to_json()`` gives the spec's plan object.

    ``assignment`` maps every member of the plan (kept or new) to topic -> sorted partitions; ``slots`` is the
    same as one array (the member of each partition: existing members by index, new ones from ``m`` up), and
    ``loads`` each member's load. ``bound`` is a proven lower bound on the fewest members.
    """

    id: str | None
    members: int
    keep: tuple[str, ...]
    stop: tuple[str, ...]
    add: tuple[str, ...]
    assignment: Mapping[str, Mapping[str, tuple[int, ...]]]
    moved_load: float
    moves: int
    bound: int
    solver: SolverInfo
    capacity: float
    loads: Mapping[str, float]
    slots: np.ndarray
    method: str
    warnings: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def to_json(self) -> dict[str, Any]:
        return {"format": PLAN_FORMAT, "id": self.id, "members": self.members, "keep": list(self.keep),
                "stop": list(self.stop), "add": list(self.add),
                "assignment": {m: {t: list(ps) for t, ps in by.items()} for m, by in self.assignment.items()},
                "moved_load": self.moved_load, "moves": self.moves, "bound": self.bound,
                "solver": self.solver.to_json(), "capacity": self.capacity, "loads": dict(self.loads)}


def plan(snapshot: Any, method: str = "optimal", *, time_limit: float | None = None, seed: int = 0,
         num_workers: int | None = None, fallback: bool = True, **extra: Any) -> Plan:
    """Plan a consumer group's size and assignment (see the module docstring).

    ``snapshot``: a consumer snapshot (object, dict, JSON text, path) or a
    :class:`~stickyflow.planning.problem.PlanProblem`. ``method``: a name of
    :data:`stickyflow.planning.methods.PLAN_METHODS` (default ``"optimal"``).
    ``time_limit``: CP-SAT's budget in deterministic seconds (exact methods; a
    wall-clock guard stays behind it); ``seed`` and ``num_workers`` reach
    CP-SAT; ``extra``: method settings (``up``, ``down`` for ``least-loaded``).

    Raises :class:`InvalidSnapshotError` for input that breaks the plan's rules and
    :class:`UnknownAssignorError` for an unknown method.
    """
    if method not in HEURISTICS and method not in EXACT:
        get_method(method)  # raises, naming the known methods
    if time_limit is not None and not (isinstance(time_limit, (int, float)) and time_limit > 0):
        raise InvalidSnapshotError(_problem("time_limit", "must be a number of seconds > 0"))
    problem = snapshot if isinstance(snapshot, PlanProblem) else plan_problem(snapshot)
    options = SolveOptions(time_limit=time_limit, seed=seed, num_workers=num_workers, extra=extra)
    return solve_plan(problem, method, options, fallback=fallback)


def _problem(field: str, rule: str):
    from ..errors import Problem

    return Problem(field, rule)


def solve_plan(problem: PlanProblem, method: str, options: SolveOptions | None = None, *,
               fallback: bool = True) -> Plan:
    """Run ``method`` on ``problem``, check and measure its answer: :func:`plan` without the reading."""
    options = options or SolveOptions()
    t0 = time.perf_counter()
    weights = scaled_weights(problem.rates, problem.capacity)
    reason = None
    decision: PlanDecision | None = None
    if method in HEURISTICS:
        decision = PlanDecision(slots=run_heuristic(method, problem, weights, options), status="heuristic")
    else:
        try:
            decision = get_method(method)(problem, weights, options)
        except (InvalidSnapshotError, UnknownAssignorError):
            raise
        except Exception as exc:  # an optimizer failing must not fail the plan
            if not fallback:
                if isinstance(exc, StickyflowError):
                    raise
                raise SolverFaultError(f"plan method {method!r} failed: {type(exc).__name__}: {exc}") from exc
            reason = f"{type(exc).__name__}: {exc}"
        if decision is not None:
            bad = check_plan(problem, decision.slots)
            if bad:
                if not fallback:
                    raise _invalid(method, bad)
                reason = f"the {method} plan was invalid ({'; '.join(map(str, bad[:3]))})"
                decision = None
        if decision is None:
            stand_in = best_of(problem, weights, (run_heuristic(h, problem, weights) for h in INCUMBENTS))
            decision = PlanDecision(slots=stand_in, status="fallback", reason=reason)
    bad = check_plan(problem, decision.slots)
    if bad:
        raise _invalid(method, bad)
    return _finish(problem, decision, method, count_bound(problem.rates, problem.capacity), t0)


def _invalid(method: str, bad: tuple) -> InvalidAssignmentError:
    return InvalidAssignmentError(f"plan method {method!r}: " + "; ".join(map(str, bad[:3])), error=bad[0].code,
                                  violations=bad)


def _finish(problem: PlanProblem, decision: PlanDecision, method: str, l2: int, t0: float) -> Plan:
    slots = np.asarray(decision.slots, dtype=np.int64)
    meas = plan_measures(problem, slots)
    bound = max(l2, decision.bound or 0)
    names = problem.topics
    assignment: dict[str, dict[str, tuple[int, ...]]] = {meas.ids[s]: {} for s in sorted(meas.ids)}
    order = np.lexsort((problem.number_of, problem.topic_of, slots))
    s_o, t_o, p_o = slots[order], problem.topic_of[order], problem.number_of[order]
    cut = (np.flatnonzero((np.diff(s_o) != 0) | (np.diff(t_o) != 0)) + 1).tolist()
    for a, b in zip([0] + cut, cut + [len(order)]):
        if b > a:
            assignment[meas.ids[int(s_o[a])]][names[t_o[a]]] = tuple(p_o[a:b].tolist())
    info = SolverInfo(method=method, status=decision.status, reason=decision.reason,
                      objective=meas.moved_load, bound=bound, wall_s=time.perf_counter() - t0)
    slots.flags.writeable = False
    return Plan(id=problem.id, members=meas.members, keep=meas.keep, stop=meas.stop, add=meas.add,
                assignment=MappingProxyType(assignment), moved_load=meas.moved_load, moves=meas.moves, bound=bound,
                solver=info, capacity=problem.capacity,
                loads=MappingProxyType({meas.ids[s]: meas.loads[s] for s in sorted(meas.ids)}), slots=slots,
                method=method, warnings=problem.warnings, extra=MappingProxyType(dict(decision.extra)))
