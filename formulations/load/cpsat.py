r"""Balance by load, exactly, in CP-SAT: the small and medium groups, every rule proven in turn.

Data: the pairs ``(p, m)`` where member ``m`` reads partition ``p``'s topic; integer rates ``q_p = r_p 2^k``
(:func:`scale`: exact when every rate is a multiple of ``2^-k`` with ``q_p <= 2^40``, as integer and most
hand-written rates are; else rounded, ``q_lo = floor``, ``q_hi = ceil``).

    variables   x[p, m] in {0, 1} (allowed pairs only);  Z, o_m >= 0 integers
    constraints sum_m x[p, m] = 1 for every partition
    stage A     minimize Z,  Z >= sum_p a[p, m] x[p, m] for every active member, a = q_lo (equal capacities) or
                floor(q_lo F / c_m) (distinct ones): Z / (2^k c) (or Z / (2^k F)) bounds U* from below, on the
                true rates, whatever the rounding
    stage A'    (distinct capacities, exact rates) while a solution of peak U is known: is there one with every
                sum_p q_p x[p, m] <= ceil(U c_m 2^k) - 1? Infeasible pins U* = U exactly
    peak        sum_p q_hi x[p, m] <= floor(lim c_m 2^k) for every active member, lim = (1 + slack) U* (capped
                at 1 where capacities are given and U* <= 1), in exact rational arithmetic
    stage C     (capacities given and lim > 1) minimize sum_m o_m, o_m >= sum_p q x[p, m] - c_m 2^k
    stage D     minimize sum_{p, m} (noc q_p [m is not p's owner, p has one] + tc q_p [m reads p across racks]) x
    stage E     minimize the moves, sum_{p with an owner} (1 - x[p, owner])

Each stage's optimum is kept as a constraint for the next, and each starts from the last solution (hinted).
The answer is claimed ``optimal`` only when U* is pinned exactly, the rates (and, for stage C, the capacities)
scaled exactly, and every stage was proven; otherwise the plan is returned with what was proven (the bound on
``U*`` always holds for the true rates). The search is deterministic: fixed ``random_seed``, a fixed number of
workers, deterministic time as the limit; a wall-clock guard far behind it is a safety net whose firing is
reported and proves nothing.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from stickyflow.load.problem import LoadProblem, peak_limit_exact
from stickyflow.registry import SolveOptions

from ..cpsat_backend import cp_model_module

__all__ = ["solve_load_cpsat", "CpsatOutcome", "scale", "DEFAULT_TIME_LIMIT", "WORKERS", "WALL_GUARD", "WALL_GUARD_S"]

DEFAULT_TIME_LIMIT = 2.0  # deterministic seconds over all stages, unless SolveOptions.time_limit says otherwise
WORKERS = 1  # CP-SAT's workers unless num_workers is given: fixed, so that the answer does not follow the machine
WALL_GUARD, WALL_GUARD_S = 10.0, 30.0  # the safety net: 10 x the limit + 30 s of wall time
_EXACT_BITS = 40  # exact integer rates up to 2**40
_ROUND_BITS = 30  # rounded rates: the largest about 2**30
_PROBES = 4  # stage A' probes at most
_STAGE_SHARE = {"peak": 0.35, "pin": 0.15, "overload": 0.15, "cost": 0.5, "moves": 1.0, "cost+moves": 0.6}


@dataclass(slots=True)
class CpsatOutcome:
    """What the exact model found: the owner array, a proven lower bound on ``U*`` (exact), whether ``U*`` is
    known exactly and whether every rule is proven, and why not."""

    x: np.ndarray
    bound: Fraction
    pinned: bool
    proven: bool
    reason: str | None
    extra: dict[str, Any] = field(default_factory=dict)


def scale(rates: np.ndarray, capacities: np.ndarray | None = None) -> tuple[int, np.ndarray, np.ndarray, bool]:
    """``(k, q_lo, q_hi, exact)``: rates times ``2^k`` as integers, floored and ceiled; ``exact`` when they are
    equal (then ``q = r 2^k`` exactly). The smallest such ``k`` wins, one that makes ``capacities`` integers too
    where there is one (the overload is then exact as well).

    >>> scale(np.array([3.0, 1.5]))[1:]
    (array([6, 3]), array([6, 3]), True)
    >>> scale(np.array([4.0, 8.0]))[0], scale(np.array([4.0, 8.0]), np.array([10.0]))[0]
    (-2, -1)
    >>> k, lo, hi, exact = scale(np.array([0.1])); exact, int(hi[0] - lo[0])
    (False, 1)
    """
    top = float(rates.max()) if len(rates) else 0.0
    if top <= 0:
        z = np.zeros(len(rates), dtype=np.int64)
        return 0, z, z.copy(), True
    high = math.floor(_EXACT_BITS - math.log2(top))  # the largest k keeping q <= 2**40

    def integral(v: np.ndarray) -> bool:
        return bool(np.all(v == np.floor(v)))

    for also in ((capacities,) if capacities is not None and len(capacities) else ()) + (None,):
        for k in range(-60, high + 1):
            v = np.ldexp(rates, k)
            if integral(v) and (also is None or integral(np.ldexp(also, k)) and float(also.max()) * 2.0 ** k < 2 ** 62):
                q = v.astype(np.int64)
                return k, q, q.copy(), True
    k = math.floor(_ROUND_BITS - math.log2(top))
    v = np.ldexp(rates, k)
    return k, np.floor(v).astype(np.int64), np.ceil(v).astype(np.int64), False


def _exact_loads(problem: LoadProblem, x: np.ndarray, k: int, q: np.ndarray, exact: bool) -> list[Fraction]:
    """Every member's load under ``x``, exactly (integer sums when the rates scaled exactly)."""
    M = problem.n_members
    if exact:
        sums = [0] * M
        for m, v in zip(x.tolist(), q.tolist()):
            sums[m] += v
        return [Fraction(s) / Fraction(2) ** k for s in sums]
    out = [Fraction(0)] * M
    for m, r in zip(x.tolist(), problem.rates.tolist()):
        out[m] += Fraction(r)
    return out


def _exact_peak(problem: LoadProblem, loads: list[Fraction]) -> Fraction:
    active = problem.active.tolist()
    caps = problem.capacity.tolist()
    return max((ld / Fraction(c) for ld, c, a in zip(loads, caps, active) if a), default=Fraction(0))


def solve_load_cpsat(problem: LoadProblem, options: SolveOptions, *, hint: np.ndarray | None = None,
                     lower: float = 0.0) -> CpsatOutcome:
    """Solve ``problem`` exactly, stage by stage (see the module's text). ``hint``: a plan to start from (its
    peak caps the search); ``lower``: a proven lower bound on ``U*`` from elsewhere (the flows)."""
    cp_model = cp_model_module()
    started = time.perf_counter()
    limit = options.time_limit if options.time_limit is not None else DEFAULT_TIME_LIMIT
    guard_s = WALL_GUARD * limit + WALL_GUARD_S
    N, M = problem.n_partitions, problem.n_members
    r = problem.rates
    k, q_lo, q_hi, exact = scale(r, problem.capacity[problem.active] if problem.capacity_given else None)
    two_k = Fraction(2) ** k
    active = np.flatnonzero(problem.active)
    caps = problem.capacity

    # ---- variables: one per allowed pair, partition-major
    ok = problem.reads[np.maximum(problem.member_class, 0)][:, problem.topic].T & problem.active[None, :]  # N x M
    pp, pm = np.nonzero(ok)
    cm = cp_model.CpModel()
    xs = [cm.new_bool_var(f"x{p}_{m}") for p, m in zip(pp.tolist(), pm.tolist())]
    starts = np.searchsorted(pp, np.arange(N + 1))
    for p in range(N):
        cm.add_exactly_one(xs[starts[p]:starts[p + 1]])
    by_member = np.argsort(pm, kind="stable")
    m_starts = np.searchsorted(pm[by_member], np.arange(M + 1))
    member_pairs = [by_member[m_starts[m]:m_starts[m + 1]] for m in range(M)]

    def expr(idx: np.ndarray, coef: np.ndarray):
        keep = coef != 0
        idx, coef = idx[keep], coef[keep]
        return cp_model.LinearExpr.weighted_sum([xs[i] for i in idx.tolist()], coef.tolist())

    def owners(values: list[bool]) -> np.ndarray:
        chosen = np.flatnonzero(np.asarray(values, dtype=bool))
        x = np.full(N, -1, dtype=np.int64)
        x[pp[chosen]] = pm[chosen]
        return x

    def set_hint(x: np.ndarray) -> None:
        cm.clear_hints()
        for v, b in zip(xs, (x[pp] == pm).tolist()):
            cm.add_hint(v, b)

    solver = cp_model.CpSolver()
    prm = solver.parameters
    prm.random_seed = int(options.seed)
    prm.num_workers = int(options.num_workers if options.num_workers is not None else WORKERS)
    prm.symmetry_level = 0
    used = {"det": 0.0}
    notes: list[str] = []
    stages: list[tuple[str, str]] = []
    guarded = False

    def run(name: str):
        """Solve the model as it stands; returns (status name, solution values or None)."""
        nonlocal guarded
        remaining = max(limit - used["det"], 0.0) * _STAGE_SHARE.get(name, 1.0)
        prm.max_deterministic_time = max(remaining, 1e-3)
        prm.max_time_in_seconds = max(guard_s - (time.perf_counter() - started), 1e-3)
        st = solver.solve(cm)
        used["det"] += float(solver.response_proto.deterministic_time)
        status = solver.status_name(st)
        stages.append((name, status))
        if st not in (cp_model.OPTIMAL, cp_model.INFEASIBLE) and time.perf_counter() - started >= guard_s - 1e-3:
            guarded = True
        values = [bool(solver.boolean_value(v)) for v in xs] if st in (cp_model.OPTIMAL, cp_model.FEASIBLE) else None
        return status, values

    best = hint.copy() if hint is not None else None
    if best is not None:
        set_hint(best)

    # ---- stage A: the least peak
    bound = Fraction(lower) if lower > 0 else Fraction(0)
    # with rounded rates nothing is claimed beyond rule 2, which the plan proves by itself when it is within the
    # bound's limit: the least-peak stages are skipped then, and their time left to the cost
    skip = not exact and best is not None and \
        _exact_peak(problem, _exact_loads(problem, best, k, q_hi, exact)) <= peak_limit_exact(problem, bound)
    status = "SKIPPED"
    if not skip:
        equal = len(active) > 0 and bool(np.all(caps[active] == caps[active[0]]))
        if equal:
            a = np.broadcast_to(q_lo[:, None], (N, M))
            denom = two_k * Fraction(float(caps[active[0]]))
        else:
            f_bits = math.floor(_ROUND_BITS - math.log2(max(float(q_lo.max()) / float(caps[active].min()), 1.0)))
            F = 2.0 ** f_bits
            a = np.floor(q_lo[:, None] * F / caps[None, :] * (1 - 1e-15)).astype(np.int64)  # floor, never above
            denom = two_k * Fraction(F)
        z = cm.new_int_var(0, int(max(1, a[pp, pm].sum())) if len(pp) else 1, "peak")
        for m in active.tolist():
            idx = member_pairs[m]
            cm.add(expr(idx, a[pp[idx], m]) <= z)
        cm.minimize(z)
        status, values = run("peak")
        if values is not None:
            cand = owners(values)
            best = cand if best is None or _exact_peak(problem, _exact_loads(problem, cand, k, q_hi, exact)) < \
                _exact_peak(problem, _exact_loads(problem, best, k, q_hi, exact)) else best
        if status in ("OPTIMAL", "FEASIBLE"):
            zb = math.ceil(solver.best_objective_bound - 1e-6) if status == "FEASIBLE" else \
                int(round(solver.objective_value))
            bound = max(bound, Fraction(max(zb, 0)) / denom)
    if best is None:
        return CpsatOutcome(x=np.full(N, -1, dtype=np.int64), bound=bound, pinned=False, proven=False,
                            reason=f"CP-SAT found no assignment ({status})", extra={"cpsat_stages": stages})
    upper = _exact_peak(problem, _exact_loads(problem, best, k, q_hi, exact))
    # ---- stage A': pin U* (a probe for a peak below the best known; floored rates: infeasible proves U* >= it),
    # where stage A proved its own optimum (else probes only trade a little peak for time)
    for _ in range(_PROBES):
        if upper <= bound or status != "OPTIMAL":
            break
        probe = cm.new_bool_var("probe")  # the strict bounds hold for this probe only (an assumption)
        for m in active.tolist():
            idx = member_pairs[m]
            cap_units = math.ceil(upper * Fraction(float(caps[m])) * two_k) - 1
            cm.add(expr(idx, q_lo[pp[idx]]) <= cap_units).only_enforce_if(probe)
        cm.clear_objective()
        set_hint(best)
        cm.add_assumption(probe)
        st, values = run("pin")
        cm.clear_assumptions()
        if st == "INFEASIBLE":
            bound = upper
            break
        if values is None:
            break
        cand = owners(values)
        peak = _exact_peak(problem, _exact_loads(problem, cand, k, q_hi, exact))
        if peak >= upper:  # (floored rates can admit a plan no better in truth: nothing more to learn)
            break
        best, upper = cand, peak
    pinned = upper <= bound
    if pinned:
        bound = upper
    # ---- the peak constraint for what follows: the inner set (lim of the bound, ceiled rates) holds within
    # rule 2 whatever U* is; where U* is not pinned, the outer set (lim of the best peak, floored rates) holds
    # every assignment rule 2 allows, and the last stage is solved on both: equal optima prove it on the true set
    lim_in = peak_limit_exact(problem, bound)
    within = upper <= lim_in
    lim = lim_in if within else upper  # the best known when the bound does not reach it (unproven)
    if not within:
        notes.append("the peak is not proven within the slack of the least possible")
    lim_out = peak_limit_exact(problem, upper)
    outer = within and exact and not pinned and not (problem.capacity_given and lim_out > 1)
    inner = cm.new_bool_var("inner") if outer else None
    cm.clear_objective()
    best_hi = np.zeros(M, dtype=np.int64)  # integer sums: exact beyond 2**53
    np.add.at(best_hi, best, q_hi)
    for m in active.tolist():
        idx = member_pairs[m]
        cap_units = Fraction(float(caps[m])) * two_k
        # the best known plan stays a solution (with rounded rates its ceiled load may exceed the limit's floor:
        # then the limit is checked again on the true rates at the end)
        ct = cm.add(expr(idx, q_hi[pp[idx]]) <= max(math.floor(lim * cap_units), int(best_hi[m])))
        if inner is not None:
            ct.only_enforce_if(inner)
            cm.add(expr(idx, q_lo[pp[idx]]) <= math.floor(lim_out * cap_units))
    set_hint(best)
    proven = exact and (pinned or outer)
    if not exact:
        notes.append(f"rates rounded to multiples of 2^{-k} in the model: rules 3 to 5 hold for the rounded rates")
    elif not pinned and not outer:
        notes.append("the least possible peak was not pinned exactly")

    def lexicographic(name: str, objective, last: bool = False) -> bool:
        """One stage: minimize (on the inner set), keep its optimum for the next stages, start them from its
        solution; on the outer set too when it is the last; proven?"""
        nonlocal best
        cm.minimize(objective)
        if inner is not None:
            cm.add_assumption(inner)
        st, values = run(name)
        cm.clear_assumptions()
        ok = st == "OPTIMAL"
        if values is not None:
            best = owners(values)
            value = int(round(solver.objective_value))
            if inner is not None and last and ok:
                st, _ = run(name + " (outer)")
                ok = st == "OPTIMAL" and int(round(solver.objective_value)) == value
                if not ok:
                    notes.append("the least possible peak was not pinned exactly, and the slack of a larger one "
                                 "may allow a cheaper answer")
            cm.add(objective <= value)
            set_hint(best)
        elif inner is not None and last:
            ok = False
        return ok

    # ---- stage C: the least overload
    if problem.capacity_given and lim > 1:
        cap_units = [Fraction(float(c)) * two_k for c in caps.tolist()]
        caps_exact = all(cap_units[m].denominator == 1 for m in active.tolist())
        if not caps_exact:
            proven = False
            notes.append("capacities are not exact multiples of the rate unit: the overload is rounded")
        over = []
        for m in active.tolist():
            idx = member_pairs[m]
            o = cm.new_int_var(0, int(q_hi.sum()), f"over{m}")
            cm.add(o >= expr(idx, q_hi[pp[idx]]) - math.floor(cap_units[m]))
            over.append(o)
        proven &= lexicographic("overload", sum(over))

    # ---- stage D: noc x moved load + tc x cross-rack load
    o = problem.owner
    moved_pair = (o[pp] >= 0) & (o[pp] != pm)
    q_mid = q_hi if exact else np.rint(np.ldexp(r, k)).astype(np.int64)
    far_pair = problem.far(pp, pm) if problem.racks_matter else np.zeros(len(pp), dtype=bool)
    cost = problem.noc * q_mid[pp] * moved_pair + problem.tc * q_mid[pp] * far_pair
    all_idx = np.arange(len(pp))
    weight = len(pp) + 1  # more than any count of moves: one objective orders by cost, then by moves
    if cost.any() and moved_pair.any() and int(cost.sum()) * weight < 2 ** 60:
        proven &= lexicographic("cost+moves", expr(all_idx, cost * weight + moved_pair), last=True)
    else:
        if cost.any():
            proven &= lexicographic("cost", expr(all_idx, cost), last=not moved_pair.any())
        # ---- stage E: the fewest moves
        if moved_pair.any():
            proven &= lexicographic("moves", expr(all_idx, moved_pair.astype(np.int64)), last=not cost.any())
        if cost.any() and moved_pair.any() and inner is not None:
            proven = False  # (two stages: the outer set would need both again)
    if any(s != "OPTIMAL" for name, s in stages if name not in ("peak", "pin")):  # (those two only bound U*)
        proven = False
        notes.append("a stage ended on its time limit: " + ", ".join(f"{n} {s}" for n, s in stages))
    final_peak = _exact_peak(problem, _exact_loads(problem, best, k, q_hi, exact))
    if final_peak > peak_limit_exact(problem, bound):  # rule 2, on the true rates
        proven = False
        notes.append("the peak is not proven within the slack of the least possible")
    if guarded:
        proven = False
        notes.append(f"CP-SAT's wall-clock safety net ({guard_s:g} s) ended a stage before its deterministic limit "
                     f"({limit:g} s): the machine was too slow or too busy, and another run may answer differently")
    reason = None if proven else "; ".join(dict.fromkeys(notes)) or None
    return CpsatOutcome(x=best, bound=bound, pinned=pinned, proven=proven, reason=reason,
                        extra={"cpsat_stages": stages, "cpsat_deterministic_s": round(used["det"], 4),
                               "rate_scale_bits": k, "rates_exact": exact, "pairs": len(pp)})
