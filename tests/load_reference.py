"""Independent exact references for balance by load, for the cross-checks (not part of the package).

* :func:`brute_force`: every assignment of a tiny group, the spec's rules applied in order in exact arithmetic
  (integers where rates and capacities are integers, else fractions of the floats), returning the set of optimal
  owner arrays and the least peak.
* :func:`mip`: the same rules, stage by stage, as a mixed-integer program in SCIP (OR-Tools' linear solver
  wrapper), for small groups with integer rates and capacities: a formulation of its own (continuous peak
  variable, loads as linear expressions, overload by slack variables), sharing no code with the package.

Both take the plain data (lists), not the package's problem object. :func:`least_peak` is the least peak of
equal members that read everything (the live tests' yardstick).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction


def _lim(u: Fraction, slack: float, capacity_given: bool) -> Fraction:
    lim = (1 + Fraction(slack)) * u
    if capacity_given and u <= 1:
        lim = min(lim, Fraction(1))
    return lim


def brute_force(rates, allowed, capacity, owner, far, *, slack, capacity_given, noc=1, tc=0, active=None):
    """``allowed[p]``: the members partition ``p`` may go to; ``far[p][m]``: read across racks; returns
    ``(optimal owner arrays as a set of tuples, U*)``."""
    N, M = len(rates), len(capacity)
    active = [True] * M if active is None else active
    fr = [Fraction(r) for r in rates]
    fc = [Fraction(c) for c in capacity]
    rows = []
    for x in itertools.product(*allowed):
        loads = [Fraction(0)] * M
        for p, m in enumerate(x):
            loads[m] += fr[p]
        peak = max((loads[m] / fc[m] for m in range(M) if active[m]), default=Fraction(0))
        over = sum((max(Fraction(0), loads[m] - fc[m]) for m in range(M)), Fraction(0)) if capacity_given else 0
        moved = [owner[p] >= 0 and x[p] != owner[p] for p in range(N)]
        cost = sum((noc * fr[p] for p in range(N) if moved[p]), Fraction(0)) + \
            sum((tc * fr[p] for p in range(N) if far[p][x[p]]), Fraction(0))
        rows.append((x, peak, over, cost, sum(moved)))
    best_peak = min(r[1] for r in rows)
    lim = _lim(best_peak, slack, capacity_given)
    rows = [r for r in rows if r[1] <= lim]
    for i in (2, 3, 4):
        least = min(r[i] for r in rows)
        rows = [r for r in rows if r[i] == least]
    return {tuple(r[0]) for r in rows}, best_peak


def mip(rates, allowed, capacity, owner, far, *, slack, capacity_given, noc=1, tc=0):
    """The lexicographic optimum by SCIP, for integer rates and capacities: ``(owner array, U*, key)`` where
    ``key`` is ``(overload, cost, moves)`` of the answer (exact integers, recomputed from it)."""
    from ortools.linear_solver import pywraplp

    N, M = len(rates), len(capacity)
    rates = [int(r) for r in rates]
    caps = [int(c) for c in capacity]
    s = pywraplp.Solver.CreateSolver("SCIP")
    x = {(p, m): s.BoolVar(f"x_{p}_{m}") for p in range(N) for m in allowed[p]}
    for p in range(N):
        s.Add(sum(x[p, m] for m in allowed[p]) == 1)
    load = [sum(rates[p] * x[p, m] for p in range(N) if (p, m) in x) for m in range(M)]
    u = s.NumVar(0, s.infinity(), "u")
    peak = [s.Add(load[m] - u * caps[m] <= 0) for m in range(M)]
    s.Minimize(u)
    assert s.Solve() == s.OPTIMAL

    def read():
        out = [-1] * N
        for (p, m), v in x.items():
            if v.solution_value() > 0.5:
                out[p] = m
        return out

    def measure(ans):
        loads = [0] * M
        for p, m in enumerate(ans):
            loads[m] += rates[p]
        peak = max(Fraction(loads[m], caps[m]) for m in range(M))
        over = sum(max(0, loads[m] - caps[m]) for m in range(M)) if capacity_given else 0
        moved = [owner[p] >= 0 and ans[p] != owner[p] for p in range(N)]
        cost = noc * sum(rates[p] for p in range(N) if moved[p]) + \
            tc * sum(rates[p] for p in range(N) if far[p][ans[p]])
        return peak, over, cost, sum(moved)

    u_star = measure(read())[0]  # exact, from the solution SCIP proved optimal
    lim = _lim(u_star, slack, capacity_given)
    for c in peak:  # the peak variable is done with: the limit below holds member by member, in integers
        c.SetBounds(-s.infinity(), s.infinity())
    for m in range(M):
        s.Add(load[m] <= math.floor(lim * caps[m]))
    o = [s.NumVar(0, s.infinity(), f"o{m}") for m in range(M)]
    for m in range(M):
        s.Add(o[m] >= load[m] - caps[m])
    stages = []
    if capacity_given:
        stages.append(sum(o))
    moved = sum(noc * rates[p] * x[p, m] for (p, m) in x if owner[p] >= 0 and m != owner[p])
    crossed = sum(tc * rates[p] * x[p, m] for (p, m) in x if far[p][m])
    stages.append(moved + crossed)
    stages.append(sum(x[p, m] for (p, m) in x if owner[p] >= 0 and m != owner[p]))
    s.Minimize(0 * u)
    assert s.Solve() == s.OPTIMAL
    ans = read()
    for expr in stages:
        if isinstance(expr, (int, float)):
            continue
        s.Minimize(expr)
        assert s.Solve() == s.OPTIMAL
        ans = read()  # (read before the model changes again)
        s.Add(expr <= round(s.Objective().Value()) + 1e-6)
    return ans, u_star, measure(ans)[1:]


def least_peak(rates: list[float], members: int) -> float:
    """The least peak of any assignment of ``rates`` to ``members`` equal members (exact branch and bound)."""
    rates = sorted(rates, reverse=True)
    best = [sum(rates)]
    loads = [0.0] * members

    def place(i: int) -> None:
        if i == len(rates):
            best[0] = min(best[0], max(loads))
            return
        tried = set()
        for m in range(members):
            if loads[m] in tried or loads[m] + rates[i] >= best[0]:
                continue
            tried.add(loads[m])
            loads[m] += rates[i]
            place(i + 1)
            loads[m] -= rates[i]

    place(0)
    return best[0]
