"""The exact plan: the fewest members, proven where it can be, then the least moved load, then the fewest moves.

Data: integer weights ``w_j`` of the partitions (:func:`stickyflow.planning.problem.scaled_weights`),
capacity ``C``, the valid previous owner ``o_j`` (an existing member, or none). A partition
whose rate exceeds ``C`` takes a member alone.

1. **Bounds and a start.** ``LB``: Martello and Toth's L2 (:mod:`stickyflow.planning.bounds`).
   The greedy methods of :data:`stickyflow.planning.methods.INCUMBENTS`, each with its members
   matched to the existing ones for the most kept load (a linear assignment), give the
   incumbent; ``UB`` its member count.
2. **Count** (when ``UB > LB``), bin packing on ``K = UB - 1`` identical bins, partitions
   sorted by weight, highest first:
   variables ``x[j, b]`` (partition ``j`` in bin ``b``, only for ``b <= j``), ``u[b]`` (bin used);
   ``sum_b x[j, b] = 1``; ``sum_j w_j x[j, b] <= C u[b]``; ``u[b] >= u[b + 1]``;
   minimize ``sum_b u[b]``. Infeasible proves ``UB``; an optimum proves itself.
3. **Moved load** at the count ``K``: bins are the existing members, plus ``K - m`` new ones
   when ``K > m``; variables ``x[j, b]``, ``u[b]`` (existing member kept; ``sum_b u[b] = K``
   when ``K < m``, else every one); ``sum_b x[j, b] = 1``; ``x[j, b] <= u[b]``;
   ``sum_j w_j x[j, b] <= C u[b]``;
   a partition that stands alone has its bin to itself; new bins in decreasing load;
   maximize ``sum_{j owned} (W w_j + 1) x[j, o_j]`` with ``W = n + 1`` (kept load first, then
   kept partitions), hinted with the incumbent matched to these bins.

``solver.status`` is ``"optimal"`` only when both the count and the moved load are proven
(and the weights are the rates exactly); else ``"feasible"``, with ``bound`` the proven
lower bound. CP-SAT runs with a fixed seed and one worker by default (several workers search
interleaved, which is deterministic too, and then the start is a floor on the objective
instead of a hint), under a deterministic time limit, so that the same input gives the
same plan however busy the machine; a wall-clock guard of 3 x the limit + 5 s stays
behind it as a safety net, and its firing is named in ``solver.reason``.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from stickyflow.errors import BackendMissingError
from stickyflow.planning.bounds import l2_bound
from stickyflow.planning.leastloaded import greedy_match, pair_totals
from stickyflow.planning.methods import INCUMBENTS, PlanDecision, best_of, plan_key, run_heuristic
from stickyflow.planning.problem import PlanProblem, Weights

__all__ = ["solve_plan_exact", "DEFAULT_TIME_LIMIT", "MAX_PAIRS", "relabel", "cpsat_parameters",
           "exact_start", "hinted"]

DEFAULT_TIME_LIMIT = 2.0  # deterministic seconds for both stages together
COUNT_SHARE = 0.5  # of the budget, for the count search (the moved-load search has the rest)
MAX_PAIRS = 400_000  # (partition, member) variables beyond which a stage is not attempted
WALL_GUARD, WALL_GUARD_S = 3.0, 5.0
_DENSE_RELABEL = 1_000  # members or bins up to which the matching is a linear assignment (else greedy)


def _cp_model():
    try:
        from ortools.sat.python import cp_model
    except ImportError as exc:  # pragma: no cover - OR-Tools is a dependency
        raise BackendMissingError("the exact plan needs OR-Tools (pip install ortools)") from exc
    return cp_model


# --------------------------------------------------------------------------- matching bins to members

def relabel(problem: PlanProblem, weights: Weights, slots: np.ndarray) -> np.ndarray:
    """The same packing with its members matched to the existing ones for the most kept load (then kept
    partitions): a linear assignment of bins to members (greedy, by pairs, beyond ``_DENSE_RELABEL`` of
    either), existing members before new ones.

    >>> from stickyflow.planning.problem import scaled_weights
    >>> p = PlanProblem.from_arrays([60, 50, 30], 100, owner=[1, 0, 0], members=["a", "b"])
    >>> relabel(p, scaled_weights(p.rates, p.capacity), np.array([0, 1, 1])).tolist()
    [1, 0, 0]
    """
    used, bins = np.unique(slots, return_inverse=True)
    k, m = len(used), problem.m
    owned = problem.owner >= 0
    if m == 0 or not owned.any():
        return bins  # existing members first (in their order), then new ones
    rows, cols, value = pair_totals(bins[owned], problem.owner[owned],
                                    ((problem.n + 1) * weights.w[owned] + 1).astype(np.float64), m)
    size = max(k, m)
    if size > _DENSE_RELABEL:
        return greedy_match(rows, cols, value, k, m)[bins]
    from ortools.graph.python import linear_sum_assignment

    full = np.zeros((size, size), dtype=np.int64)
    full[rows, cols] = value.astype(np.int64)
    top = int(full.max())
    lsa = linear_sum_assignment.SimpleLinearSumAssignment()
    r, c = np.divmod(np.arange(size * size, dtype=np.int64), size)
    lsa.add_arcs_with_cost(r, c, (top - full).ravel())
    if lsa.solve() != lsa.OPTIMAL:  # pragma: no cover - a complete bipartite graph always matches
        return greedy_match(rows, cols, value, k, m)[bins]
    return np.array([lsa.right_mate(b) for b in range(k)], dtype=np.int64)[bins]


# --------------------------------------------------------------------------- CP-SAT set-up

def cpsat_parameters(solver: Any, options: Any, budget: float, started: float, limit: float) -> None:
    """Fixed seed and workers, interleaved search, ``budget`` deterministic seconds, the wall guard."""
    p = solver.parameters
    p.random_seed = int(getattr(options, "seed", 0) or 0)
    p.num_workers = int(getattr(options, "num_workers", None) or 1)
    p.interleave_search = p.num_workers > 1
    p.cp_model_probing_level = 0  # probing a large model spends the whole budget in presolve
    p.max_deterministic_time = max(budget, 1e-3)
    p.max_time_in_seconds = max(WALL_GUARD * limit + WALL_GUARD_S - (time.perf_counter() - started), 1e-3)


def hinted(options: Any) -> bool:
    """Whether a model gets the start as a hint: with one worker only (OR-Tools 9.15 aborts the process on
    a hinted model under interleaved search with several workers)."""
    return int(getattr(options, "num_workers", None) or 1) == 1


def _guard_fired(solver: Any, budget: float) -> bool:
    return float(solver.response_proto.deterministic_time) < 0.9 * budget and solver.wall_time > 0


# --------------------------------------------------------------------------- stage 2: count

def _fewest(w: np.ndarray, cap: int, k: int, options: Any, budget: float, started: float, limit: float,
            hint: np.ndarray | None):
    """CP-SAT's least bin count for ``w`` (none alone) in at most ``k`` bins: (status name, bins or None,
    proven lower bound, guard fired)."""
    cp_model = _cp_model()
    order = np.argsort(-w, kind="stable")
    ws = w[order].tolist()
    n = len(ws)
    model = cp_model.CpModel()
    u = [model.new_bool_var(f"u{b}") for b in range(k)]
    x: list[list[Any]] = []
    for j in range(n):
        row = [model.new_bool_var(f"x{j}_{b}") for b in range(min(j + 1, k))]
        model.add_exactly_one(row)
        x.append(row)
    for b in range(k):
        items = [(x[j][b], ws[j]) for j in range(b, n)]
        model.add(sum(c * v for v, c in items) <= cap * u[b])
        for v, _ in items:
            model.add_implication(v, u[b])
        if b + 1 < k:
            model.add(u[b] >= u[b + 1])
    model.minimize(sum(u))
    if hint is not None and hinted(options):
        _hint_bins(model, x, u, hint[order], k)
    solver = cp_model.CpSolver()
    cpsat_parameters(solver, options, budget, started, limit)
    st = solver.solve(model)
    name = solver.status_name(st)
    fired = st == cp_model.UNKNOWN and _guard_fired(solver, budget)
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return name, None, (k + 1 if st == cp_model.INFEASIBLE else 0), fired
    bins = np.empty(n, dtype=np.int64)
    for j in range(n):
        bins[order[j]] = next(b for b, v in enumerate(x[j]) if solver.boolean_value(v))
    lower = int(np.ceil(solver.best_objective_bound - 1e-6))
    return name, bins, lower, fired


def _hint_bins(model: Any, x: list[list[Any]], u: list[Any], bins: np.ndarray, k: int) -> None:
    """Hint a packing's first ``k`` bins (renumbered by first use in the sorted order, which keeps
    ``x[j, b]`` for ``b <= j``): the partitions of the bins beyond are left for CP-SAT to place."""
    first: dict[int, int] = {}
    for b in bins.tolist():
        first.setdefault(b, len(first))
    for j, b in enumerate(bins.tolist()):
        if first[b] < k:
            for c, v in enumerate(x[j]):
                model.add_hint(v, c == first[b])
    for b, v in enumerate(u):
        model.add_hint(v, True)


# --------------------------------------------------------------------------- stage 3: moved load

def _new_by_load(slots: np.ndarray, w: np.ndarray, m: int) -> np.ndarray:
    """``slots`` with the new members renumbered ``m, m + 1, ...`` in decreasing load (as the model orders them).

    >>> _new_by_load(np.array([0, 3, 5, 5]), np.array([1, 2, 3, 4]), 1).tolist()
    [0, 2, 1, 1]
    """
    new = np.unique(slots[slots >= m])
    if len(new) == 0:
        return slots
    load = np.array([w[slots == s].sum() for s in new])
    rank = np.empty(len(new), dtype=np.int64)
    rank[np.argsort(-load, kind="stable")] = np.arange(len(new))
    out = slots.copy()
    out[slots >= m] = m + rank[np.searchsorted(new, slots[slots >= m])]
    return out


def _least_moved(problem: PlanProblem, weights: Weights, k: int, hint: np.ndarray, options: Any, budget: float,
                 started: float, limit: float):
    """CP-SAT's least moved load (then moves) with ``k`` members: (status name, slots or None, guard fired)."""
    cp_model = _cp_model()
    n, m = problem.n, problem.m
    w = weights.w.tolist()
    alone = weights.alone.tolist()
    owner = problem.owner.tolist()
    nb = max(k, m)
    model = cp_model.CpModel()
    u = [model.new_bool_var(f"u{b}") for b in range(nb)]
    if k < m:
        model.add(sum(u) == k)
    else:
        for v in u:
            model.add(v == 1)
    x = [[model.new_bool_var(f"x{j}_{b}") for b in range(nb)] for j in range(n)]
    for j in range(n):
        model.add_exactly_one(x[j])
    loads = []
    for b in range(nb):
        col = [x[j][b] for j in range(n)]
        load = cp_model.LinearExpr.weighted_sum(col, w)
        model.add(load <= weights.cap * u[b])
        if k < m:  # a stopped member takes nothing, not even a partition of rate 0
            for j in range(n):
                model.add_implication(col[j], u[b])
        loads.append(load)
        for j in range(n):
            if alone[j]:
                model.add(sum(col[i] for i in range(n) if i != j) == 0).only_enforce_if(col[j])
    for b in range(m, nb - 1):  # new members are alike: in decreasing load
        model.add(loads[b] >= loads[b + 1])
    big = n + 1
    kept = [((big * w[j] + 1), x[j][owner[j]]) for j in range(n) if owner[j] >= 0]
    objective = cp_model.LinearExpr.weighted_sum([v for _, v in kept], [c for c, _ in kept])
    model.maximize(objective)
    hint = _new_by_load(hint, weights.w, m)
    if hinted(options):
        for j, b in enumerate(hint.tolist()):
            for c, v in enumerate(x[j]):
                model.add_hint(v, c == b)
        for b, v in enumerate(u):
            model.add_hint(v, bool((hint == b).any()))
    else:  # no hint: the start's value as a floor instead
        model.add(objective >= sum(c for (c, _), j in zip(kept, [j for j in range(n) if owner[j] >= 0])
                                   if hint[j] == owner[j]))
    solver = cp_model.CpSolver()
    cpsat_parameters(solver, options, budget, started, limit)
    st = solver.solve(model)
    fired = st in (cp_model.FEASIBLE, cp_model.UNKNOWN) and _guard_fired(solver, budget)
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return solver.status_name(st), None, fired
    slots = np.array([next(b for b, v in enumerate(x[j]) if solver.boolean_value(v)) for j in range(n)],
                     dtype=np.int64)
    return solver.status_name(st), slots, fired


# --------------------------------------------------------------------------- the method

def exact_start(problem: PlanProblem, weights: Weights) -> np.ndarray:
    """The incumbent: the best greedy plan of :data:`INCUMBENTS`, each matched to the members."""
    return best_of(problem, weights, (relabel(problem, weights, run_heuristic(h, problem, weights))
                                      for h in INCUMBENTS))


def solve_plan_exact(problem: PlanProblem, weights: Weights, options: Any) -> PlanDecision:
    """The ``optimal`` plan method (see the module docstring)."""
    started = time.perf_counter()
    limit = float(getattr(options, "time_limit", None) or DEFAULT_TIME_LIMIT)
    n = problem.n
    if n == 0:
        return PlanDecision(slots=np.zeros(0, dtype=np.int64), status="optimal", bound=0)
    best = exact_start(problem, weights)
    big = problem.rates > problem.capacity  # alone by their rates (weights.alone may add rounded ones)
    lb = int(big.sum()) + (l2_bound(np.minimum(weights.low[~big], weights.cap_high), weights.cap_high)
                           if (~big).any() else 0)
    ub = plan_key(problem, weights, best)[0]
    notes: list[str] = []
    extra: dict[str, Any] = {"lower_bound_l2": lb, "start_members": ub}
    spent = 0.0
    if ub > lb:
        lb, best, spent = _count_stage(problem, weights, best, lb, ub, options, started, limit, notes, extra)
    count_proven = plan_key(problem, weights, best)[0] <= lb
    k, moved, moves = plan_key(problem, weights, best)
    moved_proven = moved == 0 and moves == 0
    if not moved_proven:
        nb = max(k, problem.m)
        if n * nb > MAX_PAIRS:
            notes.append(f"the moved-load model ({n * nb:,} pairs) exceeds {MAX_PAIRS:,}: not proven")
        else:
            t = time.perf_counter()
            name, slots, fired = _least_moved(problem, weights, k, best, options, limit - spent, started, limit)
            extra.update(moved_status=name, t_moved=round(time.perf_counter() - t, 4))
            if fired:
                notes.append("the wall-clock guard stopped the moved-load search before its deterministic limit")
            if slots is not None:
                best = best_of(problem, weights, (best, slots))
                moved_proven = name == "OPTIMAL"
    if not weights.exact:
        notes.append("the rates do not scale to integers exactly: packed with rates rounded up, not proven")
    proven = count_proven and moved_proven and weights.exact
    return PlanDecision(slots=best, status="optimal" if proven else "feasible", bound=lb,
                        reason="; ".join(notes) or None, extra=extra)


def _count_stage(problem: PlanProblem, weights: Weights, best: np.ndarray, lb: int, ub: int, options: Any,
                 started: float, limit: float, notes: list[str], extra: dict[str, Any]):
    """Stage 2: try ``ub - 1`` members; returns the proven bound, the best plan and the budget spent."""
    rest = ~weights.alone
    n_alone = int(weights.alone.sum())
    k = ub - 1 - n_alone
    pairs = int(rest.sum()) * max(k, 0)
    if k < 1 or not rest.any():
        return lb, best, 0.0
    if pairs > MAX_PAIRS:
        notes.append(f"the count model ({pairs:,} pairs) exceeds {MAX_PAIRS:,}: the count is not proven")
        return lb, best, 0.0
    t = time.perf_counter()
    budget = COUNT_SHARE * limit
    hint = np.unique(best[rest], return_inverse=True)[1]
    name, bins, lower, fired = _fewest(weights.w[rest], weights.cap, k, options, budget, started, limit, hint)
    extra.update(count_status=name, t_count=round(time.perf_counter() - t, 4))
    if fired:
        notes.append("the wall-clock guard stopped the count search before its deterministic limit")
    if weights.exact:  # a proof on rounded weights is no proof on the rates
        lb = max(lb, n_alone + lower)
    if bins is not None:
        packed = np.empty(problem.n, dtype=np.int64)
        packed[rest] = bins
        packed[weights.alone] = bins.max(initial=-1) + 1 + np.arange(n_alone)
        best = best_of(problem, weights, (best, relabel(problem, weights, packed)))
    return lb, best, budget
