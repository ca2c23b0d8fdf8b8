r"""The ``optimal`` assignor with ``"balance": "load"``: the rules of the spec's "Balance by load", in order.

First the bound and the plan below; where they prove every rule on their own, that is the answer. Else, for a
group whose allowed (partition, member) pairs number at most :data:`CPSAT_PAIRS`, CP-SAT proves the rules in
turn (:mod:`.cpsat`), started from the plan (which stays the answer where CP-SAT ends unproven with
something worse by the rules). Above that size, or with ``method="plan"``, the plan is the answer:

* the bound: the fractional relaxation solved as max flows, and the largest-rates bound
  (:func:`.flow.peak_bound`), a proven lower bound ``L`` on the least possible peak ``U*``;
* the plan: :func:`stickyflow.load.plan.sticky_plan` aimed at ``lim(L) = (1 + slack) L`` (at most 1 where
  capacities are given and ``L <= 1``): the previous owners keep what fits under it, the least load moves, the
  rest is dealt by water level; where subscriptions differ and that misses ``lim(L)``, the deal by quotas
  per topic class from a min-cost flow (:func:`.flow.transport`, :func:`stickyflow.load.plan.quota_plan`);
  where no sticky plan reaches ``lim(L)``, the best of balancing plans (lpt, water level) repaired toward the
  owners, and the reason says so (:func:`stickyflow.load.plan.planned`).

Then rule 2 is proven when the plan's peak is within ``lim(L)`` (``U* >= L``, and ``lim`` grows with its
argument), even though ``U*`` itself is not known; rule 3 when nobody is above capacity (or none is given),
or nobody below it (then the overload is the whole load less the whole capacity, the least possible); rules 4
and 5 when every partition sits where its own cost is least
(:func:`stickyflow.load.problem.per_partition_best`: a rebalance that moves only what has to move). The answer is
``"optimal"`` only when all of them are proven, else ``"feasible"`` with the bound and the reason. The result's
``solver.objective`` is the peak ``U``, ``solver.bound`` the proven ``L``.

``method``: ``None`` or ``"auto"`` (the above), ``"cpsat"`` (CP-SAT whatever the size, unless the plan is
proven), ``"plan"`` (never CP-SAT). ``time_limit``: CP-SAT's deterministic seconds over all its stages
(:data:`.cpsat.DEFAULT_TIME_LIMIT` when not given).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from stickyflow.check.answer import ArrayAssignment
from stickyflow.check.load import cheap_peak_bound
from stickyflow.errors import UnknownAssignorError
from stickyflow.load.plan import planned
from stickyflow.load.problem import LoadProblem, load_problem, measure, peak_limit, per_partition_best
from stickyflow.registry import SolveOptions
from stickyflow.result import Decision

from .cpsat import solve_load_cpsat
from .flow import peak_bound, transport

__all__ = ["solve_load", "optimize", "LoadAnswer", "LOAD_METHODS", "CPSAT_PAIRS"]

LOAD_METHODS = ("auto", "cpsat", "plan")
CPSAT_PAIRS = 4_000  # allowed (partition, member) pairs up to which CP-SAT proves the rules
_FLOAT_SLACK = 1e-12  # relative: a float peak this close to a limit counts as within it (sums err far less)


@dataclass(frozen=True, slots=True)
class LoadAnswer:
    """An owner array with what is proven of it: ``status`` ``"optimal"`` (every rule) or ``"feasible"``,
    ``bound`` a proven lower bound on ``U*``, ``peak`` the answer's ``U``."""

    x: np.ndarray
    status: str
    method: str
    bound: float
    peak: float
    reason: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def solve_load(snapshot: Any, options: SolveOptions | None = None) -> Decision:
    """The consumer assignor ``optimal`` for a snapshot with ``"balance": "load"`` (see the module's text).

    >>> import stickyflow
    >>> r = stickyflow.assign({"format": "stickyflow.snapshot/1", "kind": "consumer",
    ...     "topics": {"t": {"partitions": 4, "rates": [6, 3, 2, 1]}},
    ...     "members": [{"id": "a", "subscription": ["t"], "generation": 1, "owned": {"t": [0, 1, 2, 3]}},
    ...                 {"id": "b", "subscription": ["t"]}],
    ...     "config": {"balance": "load", "capacity": 10, "load_slack": 0.2}})
    >>> r.to_json()["assignment"], r.solver.status, r.metrics["peak_utilization"], r.metrics["peak_bound"]
    ({'a': {'t': [0, 3]}, 'b': {'t': [1, 2]}}, 'optimal', 0.7, 0.6)
    """
    t0 = time.perf_counter()
    problem, topics, offsets = load_problem(snapshot)
    answer = optimize(problem, options, lower=cheap_peak_bound(snapshot) or 0.0)
    m = measure(problem, answer.x) if problem.n_partitions and problem.active.any() else None
    extra = dict(answer.extra, peak_bound=answer.bound, build_and_solve_s=time.perf_counter() - t0)
    if m is not None:
        extra.update(cost=m.cost, moved_load=m.moved_load, cross_rack_load=m.cross_load, overload=m.overload)
    return Decision(assignment=ArrayAssignment.of_flat(snapshot, topics, answer.x, offsets), method=answer.method,
                    status=answer.status, objective=answer.peak, bound=answer.bound, reason=answer.reason,
                    extra=extra)


def _below(frac: Fraction) -> float:
    """The largest float not above ``frac`` (a proven bound stays proven when it becomes a float)."""
    f = float(frac)
    return math.nextafter(f, -math.inf) if Fraction(f) > frac else f


def optimize(problem: LoadProblem, options: SolveOptions | None = None, *, lower: float = 0.0) -> LoadAnswer:
    """Solve ``problem`` by the rules (see the module's text); ``lower``: a proven lower bound on ``U*`` known
    already (the checker's, for a snapshot).

    >>> p = LoadProblem.of(rates=[6.0, 3.0, 2.0, 1.0], topic=[0] * 4, reads=[[True]], member_class=[0, 0],
    ...                    capacity=[10.0, 10.0], owner=[0, 0, 0, 0], slack=0.2)
    >>> a = optimize(p)  # the least peak is 0.6 (6 against 3 + 2 + 1); the slack allows 0.72
    >>> a.x.tolist(), a.status, a.peak, a.bound  # member 0 keeps 6 + 1: 5 moves, not 6
    ([0, 1, 1, 0], 'optimal', 0.7, 0.6)
    """
    options = options or SolveOptions()
    method = options.method or "auto"
    if method not in LOAD_METHODS:
        raise UnknownAssignorError(f"method: {method!r} is not a method for balance by load "
                                   f"(known: {', '.join(LOAD_METHODS)})")
    t0 = time.perf_counter()
    N = problem.n_partitions
    if N == 0 or not problem.active.any():
        x = np.full(N, -1, dtype=np.int64)
        return LoadAnswer(x=x, status="optimal", method="plan", bound=0.0, peak=0.0)
    bound = max(peak_bound(problem), lower)
    t_bound = time.perf_counter() - t0
    x, note = planned(problem, bound, transport=transport)
    t_plan = time.perf_counter() - t0 - t_bound
    readers = problem.reads[problem.member_class[problem.active]].sum(axis=0)  # per topic
    pairs = int(np.dot(np.bincount(problem.topic, minlength=len(readers)), readers))
    extra: dict[str, Any] = {"t_bound": round(t_bound, 4), "t_plan": round(t_plan, 4), "pairs": pairs}
    reasons = _unproven(problem, x, bound)
    if reasons and (method == "cpsat" or (method == "auto" and pairs <= CPSAT_PAIRS)):
        out = solve_load_cpsat(problem, options, hint=x, lower=bound)
        extra.update(out.extra)
        bound = max(bound, _below(out.bound))
        if out.proven:
            return LoadAnswer(x=out.x, status="optimal", method="cpsat", bound=bound,
                              peak=measure(problem, out.x).peak, extra=extra)
        # not proven: the plan may be (its own argument), or be better by the rules than what CP-SAT found
        if _key(problem, out.x, bound) <= _key(problem, x, bound):
            return LoadAnswer(x=out.x, status="feasible", method="cpsat", bound=bound,
                              peak=measure(problem, out.x).peak, reason=out.reason, extra=extra)
        extra["cpsat_reason"] = out.reason
        reasons = _unproven(problem, x, bound)  # (with CP-SAT's bound)
    if note and reasons:  # how the plan was found, where the sticky one missed rule 2's limit (what is proven
        reasons.insert(0, note)  # decides the status, not the note)
    return LoadAnswer(x=x, status="feasible" if reasons else "optimal", method="plan", bound=bound,
                      peak=measure(problem, x).peak, reason="; ".join(reasons) or None, extra=extra)


def _unproven(problem: LoadProblem, x: np.ndarray, bound: float) -> list[str]:
    """What is not proven of the plan ``x`` without a model (see the module's text): an empty list when every
    rule is."""
    m = measure(problem, x)
    reasons = []
    if m.peak * (1 - _FLOAT_SLACK) > peak_limit(problem, bound):
        reasons.append(f"the peak {m.peak:.6g} is not proven within the slack of the least possible "
                       f"(a proven bound is {bound:.6g})")
    if problem.capacity_given and m.overload > 0 and not _least_overload(problem, x):
        reasons.append("members above capacity: the least overload is not proven")
    if not per_partition_best(problem, x):
        reasons.append("partitions moved to balance: the least moved load is not proven at this size")
    return reasons


def _key(problem: LoadProblem, x: np.ndarray, bound: float) -> tuple:
    """The rules' order as a key to compare two answers by: within rule 2's limit first, then the peak where
    neither is, then overload, cost and moves."""
    m = measure(problem, x)
    within = m.peak * (1 - _FLOAT_SLACK) <= peak_limit(problem, bound)
    return (not within, 0.0 if within else m.peak, m.overload, m.cost, m.moves)


def _least_overload(problem: LoadProblem, x: np.ndarray) -> bool:
    """Whether no assignment has less overload: when every active member is at or above its capacity, the
    overload is the whole load less the whole capacity, and ``sum max(0, l - c) >= sum (l - c)`` always."""
    loads = np.bincount(x, weights=problem.rates, minlength=problem.n_members)
    active = problem.active
    return bool(np.all(loads[active] >= problem.capacity[active]))
