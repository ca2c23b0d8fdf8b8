r"""The streams model of :mod:`.model` in CP-SAT, exactly, for what a flow cannot say.

Variables (over candidate (task, client) pairs: all of them on small
instances; eligible, held, local-state and the flow's own pairs plus a few
clients per rack and tag combination on large ones):

    x[t, c]  target         s[t, c]  standby (converged)         w[t, c]  warm-up (c not eligible for t)
    z[t, c]  a movement to c covered: its holder's converged standby sits on c this round
    y[t, k, v]  task t's replicas (this round) use value v of tag key k
    o_c      how many tasks of a count client c holds above Balanced's cap (the spec's distance)

What runs: ``a[t, c] = x[t, c]`` where ``c`` is eligible (caught up, or with
none the least lag; every client for a free task), plus ``mv_t = sum_{c not
eligible} x[t, c]`` on the task's holder.

    sum_c x[t, c] = 1,   sum_c s[t, c] = want (stateful t),   x[t, c] + s[t, c] <= 1
    w[t, c] <= x[t, c],   z[t, c] = x[t, c] AND s[t, holder_t],   w[t, c] + z[t, c] <= 1,   sum w <= budget
    Balanced, for a count n_c and thread classes W (the clients with w threads):
        n_c >= mn_w (c in W),   w' * (n_c - o_c) <= w_c * mn_w' + balance_factor * w'   for all c, w'
    with o_c = 0 for active tasks; for stateful actives, replicas (x + s) and each subtopology the excess
    e_k = sum_c o_c, the tasks above the cap summed over clients (``balance_excess``, the measure of the
    benchmark, the tests and ``metrics["balanced"]``)
    tags (KIP-708):  y[t, k, v] <= sum_{c: tag_k(c) = v} (a[t, c] + s[t, c] + sum z[t, c]),
                     sum_{k, v} y[t, k, v] >= best(combo of t's active) - D * [t has a warm-up]
                     (and around its target for a task that may move, relaxed for a movement that waits only
                     where the model has no solution otherwise: see ``waiting_spread``)
    max_moves:       sum_t had_t - sum_{previous owner p of t} a[t, p] <= max_moves

    minimize, lexicographically: sum_k e_k; the cost of the converged assignment and the way there
        sum active_cost(t, c) x[t, c] + sum standby_cost(t, c) s[t, c]
        + sum_{c not eligible for t} movement_cost(t, c) x[t, c] (restorations and moves of waiting;
        in learner mode also the round price, so that the fewest movements come before the cost);
        movements (each a round of waiting), then active tasks leaving their previous client;
    movements neither covered by a standby nor warmed up; warm-up traffic and standbys without
    local state.

Hinted with the flow's plan. The excess stage is bounded below by the least excess of a model over counts
alone (:mod:`.cpsat_floor`): it stops, proven, where it reaches that floor; where the hint solves the model at
the floor the stage is settled without a search, and where the search ends above a proven floor the stage is
settled at it by a solution with the floor's counts (``extra["excess_settled"]``). Fixed ``random_seed``, ``num_workers`` as given.
By default the search is interleaved over a fixed number of workers
(:data:`DETERMINISTIC_WORKERS` unless ``num_workers`` is given) and the time
limit counted in deterministic time, so that the same snapshot gives the same
answer on every run, however busy the machine. A wall-clock limit stays
behind it as a safety net only (the whole solve ends by :data:`WALL_GUARD` x
the budget + :data:`WALL_GUARD_S`, far above what load does); when it fires,
``solver.reason`` says so and the search proves nothing.
``extra["deterministic"] = False`` switches to the free-running parallel
portfolio, limited by wall-clock time.

:func:`solve_cpsat` reads in the sections of an OR-Tools model: the flow's hint (:func:`_flow_hint`), the
data (:class:`.cpsat_data.CpsatData`), the variables, constraints and objective stages (:mod:`.cpsat_model`),
the start (:func:`.cpsat_start.add_hint`), the solve (:func:`_solve_stages`), the results (:func:`_read`) and
the bound (:func:`_bound`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from stickyflow.errors import InfeasibleError, SolverFaultError, StickyflowError, TimeLimitError
from stickyflow.registry import SolveOptions

from ..cpsat_backend import cp_model_module
from .cpsat_data import FULL_PAIRS, CpsatData, relaxed
from .cpsat_model import CpsatRules, CpsatVars, constraints, objective_stages, soft_counts, variables
from .cpsat_start import add_hint, hint_solves, valid_hint, valid_start
from .model import StreamsModel
from .plan import StreamsPlan, choose_warmups, count_excess, movements, target_cost

__all__ = ["solve_cpsat", "cp_model_module", "FULL_PAIRS", "DEFAULT_TIME_LIMIT", "START_ONLY_PAIRS", "WALL_GUARD",
           "WALL_GUARD_S", "DETERMINISTIC_WORKERS"]

DEFAULT_TIME_LIMIT = 10.0
#: the wall-clock guard behind the deterministic limit, a safety net only: the deterministic limit decides. CP-SAT's
#: deterministic seconds took 1.4 to 2.7 wall seconds each on this project's quiet machine (2026-11-27), and about
#: 5 with three busy loops on its two cores; a guard of 3 x the limit + 5 s cut those loaded searches at other
#: points than quiet ones (issue 37). This one sits far above what load does; when it fires anyway, the result
#: says so in ``solver.reason`` and claims no proof from that search
WALL_GUARD, WALL_GUARD_S = 10.0, 30.0
#: CP-SAT's workers when ``num_workers`` is not given (deterministic search): fixed, since CP-SAT's own default is
#: the machine's core count, and its interleaved portfolio, hence its answer, follows the number of workers. One:
#: played to convergence at the 2 s budget, the issue's example 49 cost 37 in 6 rounds with one worker and 44 in 7
#: with two, example 66 232 in 4 rounds and 368 in 12 (2026-11-28, with holders preferring their previous owner,
#: since reverted: now 35 in 5 and 241 in 4 with one); over
#: bench/streams_vs_greedy.py's 288 plays two workers did better, 18,799 against 19,198 in total (2%) and 257
#: proven round-0 answers against 247. And with two or more, OR-Tools 9.15 aborts the whole process ("Check
#: failed: heuristics.fixed_search != nullptr") on a hinted model that presolve proves infeasible (issue 37:
#: learner mode, two tag keys), where one worker answers INFEASIBLE; so with ``num_workers`` of two or more the
#: first stage still runs on one worker unless the hint is known to solve the model (:func:`.cpsat_start.hint_solves`)
DETERMINISTIC_WORKERS = 1
#: tags with two or more standbys, CP-SAT not asked for by name: above this many (task, client) pairs (times
#: the time limit over 10 s, when that is more), a valid start (the flow's plan with its standbys repaired, or
#: the greedy's) is the answer and CP-SAT does not run. Measured on 2026-11-27 (two standbys over 3 zones,
#: min_traffic, four scenarios, seeds 1 and 2, the default 10 s): at 60 x 6 to 150 x 15 (up to 2,250 pairs)
#: CP-SAT changed its start in all 16 runs (less far from Balanced, or as far and cheaper, in 12; cheaper with
#: more summed excess in 4); at 200 x 20 and 300 x 30 it returned the start unchanged in 10 of 10 after 16 to
#: 33 s; at 400 x 40 its presolve used up the first stage's time (nothing found, 5 s); at 1,000 x 100 it
#: returned the start after 16 to 21 s, and at 10,000 x 1,000 found nothing after 14 s.
START_ONLY_PAIRS = 3_000
#: the shares of the time limit the excess floor (:mod:`.cpsat_floor`) may take at most: each of the counts
#: model's two stages, and the start with the floor's counts (within FLOOR_TIME and START_TIME)
FLOOR_SHARE = (0.1, 0.25)


def solve_cpsat(model: StreamsModel, options: SolveOptions, *, started: float | None = None,
                hint: StreamsPlan | None = None, auto: bool = False, waiting_spread: bool = True,
                retry: bool = True) -> StreamsPlan:
    """Solve ``model`` with CP-SAT within ``options.time_limit`` (default 10 s); see the module docstring.

    ``hint``: a plan of the flow (computed here when not given, with tags and the move cap relaxed).
    ``waiting_spread``: a movement that waits this round (no warm-up, no covering standby) spreads its
    converged replicas around its target already (the default: its standbys need not move again when its turn
    comes); where that leaves no solution (every client its own combination of two tag keys, one learner a
    round), the model is solved again without it, when ``retry``.
    ``auto``: CP-SAT was not asked for by name; then, for tags with two or more standbys above
    :data:`START_ONLY_PAIRS` (task, client) pairs (more with a time limit above 10 s, in proportion), a valid
    start is the answer and CP-SAT does not run (see there).
    """
    m = model
    started = time.perf_counter() if started is None else started
    limit = options.time_limit if options.time_limit is not None else DEFAULT_TIME_LIMIT
    extra: dict[str, Any] = {}
    if not m.T or not m.C:
        return _empty(m)
    hint, valid = _flow_hint(m, options, hint, extra)
    extra["t_hint"] = round(time.perf_counter() - started, 4)
    if auto:
        kept = _start_only(m, hint, valid, limit, extra)
        if kept is not None:
            return kept
    cp_model = cp_model_module()
    d = CpsatData(m, hint)
    cm = cp_model.CpModel()
    vs = variables(cm, m, d)
    rules = constraints(cm, m, d, vs, hint, waiting_spread)
    stages = objective_stages(cm, m, d, vs, rules)
    if hint is not None:
        add_hint(cm, m, d, hint, vs.x, vs.s, vs.w, vs.z, vs.r)
    floor, det_floor = _floor(cp_model, cm, m, rules, hint, options, limit, extra)
    rescue = None
    if floor is not None and floor.proven and not extra.get("excess_settled"):
        from .cpsat_floor import START_TIME, counts_start

        def rescue():  # a solution with the floor's counts, for an excess stage that ends above the floor
            return counts_start(cp_model, cm, m, d, vs, rules, floor, dict(stages).get("cost", 0),
                                seed=int(options.seed), time=min(START_TIME, FLOOR_SHARE[1] * limit))
    run = _solve_stages(cp_model, cm, m, d, vs, rules, stages, options, hint=hint, started=started, limit=limit,
                        extra=extra, det_before=det_floor, rescue=rescue,
                        floor_value=None if floor is None else floor.value)
    if run.status == cp_model.INFEASIBLE and retry and waiting_spread and m.tag_keys and m.want:
        return solve_cpsat(m, options, started=started, hint=hint, auto=auto, waiting_spread=False, retry=False)
    if run.status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return _no_solution(cp_model, cm, m, run, hint, valid, limit, extra)
    status = cp_model.OPTIMAL if run.proven else cp_model.FEASIBLE
    plan = _read(cp_model, m, d, vs, run, status, extra)
    _bound(cp_model, m, d, plan, status, run.cost_bound)
    return plan


def _empty(m: StreamsModel) -> StreamsPlan:
    """The plan of a model without tasks or without clients."""
    empty = np.full(m.T, -1, dtype=np.int64)
    return StreamsPlan(target=empty, active=empty, warmup=empty.copy(),
                       standby=np.full((m.T, m.want), -1, dtype=np.int64), method="cpsat", status="optimal",
                       bound=0, extra={"movements": 0})


# ---- the flow: a hint (tags and the move cap relaxed)
def _flow_hint(m: StreamsModel, options: SolveOptions, hint: StreamsPlan | None,
               extra: dict[str, Any]) -> tuple[StreamsPlan | None, StreamsPlan | None]:
    """The plan CP-SAT starts from (``hint``, else the flow's; with tags a valid one) and, with tags, that plan
    once checked valid (else None: see :func:`_hint_if_valid`); notes go to ``extra``."""
    if hint is None:
        try:
            from .flow import solve_flow

            hint = solve_flow(relaxed(m))
        except StickyflowError as exc:  # no hint: CP-SAT starts from scratch
            extra["hint_error"] = str(exc)
    valid = None  # with tags, the hint once checked (each check validates the whole plan), else None
    if hint is not None and m.tag_keys:
        valid = valid_hint(m, hint)
        if valid is None:
            # the flow relaxed the tags: a hint that breaks them may leave CP-SAT without any solution in time,
            # so start from a valid one, the better of the flow's plan with its standbys repaired and the greedy's
            hint, extra["hint"] = valid_start(m, hint, options)
            valid = hint if extra["hint"] != "flow" else None  # valid_start checked what it returns
    return hint, valid


def _hint_if_valid(m: StreamsModel, hint: StreamsPlan | None, valid: StreamsPlan | None) -> StreamsPlan | None:
    """The start when it keeps every rule (with tags checked by :func:`_flow_hint`; no hint: None, as
    :func:`.cpsat_start.valid_hint` says)."""
    return valid if m.tag_keys else valid_hint(m, hint)


def _start_only(m: StreamsModel, hint: StreamsPlan | None, valid: StreamsPlan | None, limit: float,
                extra: dict[str, Any]) -> StreamsPlan | None:
    """With CP-SAT not asked for by name: the valid start as the answer above :data:`START_ONLY_PAIRS` (tags
    with two or more standbys), else None (CP-SAT runs)."""
    if m.tag_keys and m.want >= 2 and m.max_moves is None \
            and m.T * m.C > START_ONLY_PAIRS * max(1.0, limit / DEFAULT_TIME_LIMIT):
        kept = _hint_if_valid(m, hint, valid)
        if kept is not None:
            note = (f"CP-SAT not run: at {m.T * m.C:,} (task, client) pairs it does not improve on a valid start "
                    f"within {limit:g} s; the start ({extra.get('hint', 'flow')}) is the answer (a longer "
                    f"time_limit, or method='cpsat', runs CP-SAT)")
            kept.extra = {**kept.extra, **extra, "note": note}
            return kept
    return None


# ---- the floor: the least excess over Balanced, from counts (issue 37)
def _floor(cp_model, cm, m: StreamsModel, rules: CpsatRules, hint: StreamsPlan | None, options: SolveOptions,
           limit: float, extra: dict[str, Any]):
    """Bound the excess stage below by the counts model's least excess (:mod:`.cpsat_floor`), so that it stops,
    proven, where it reaches it; where the hint is at the floor and solves the model, the stage is settled
    without a search. Returns the floor (None where no count is soft) and the deterministic seconds it took,
    which count against ``limit`` (at most :data:`FLOOR_SHARE` of it). An excess stage that ends above a
    proven floor is rescued by :func:`_solve_stages` with a start at the floor's counts."""
    if not rules.excess:
        return None, 0.0
    from .cpsat_floor import FLOOR_TIME, excess_floor

    t0 = time.perf_counter()
    floor = excess_floor(m, seed=int(options.seed), time=min(FLOOR_TIME, FLOOR_SHARE[0] * limit))
    if floor is None:
        return None, 0.0
    cm.add(sum(rules.excess) >= floor.value)
    extra.update(excess_floor=floor.value, excess_floor_proven=floor.proven, excess_settled=False)
    if hint is not None and _hint_excess(m, hint) <= floor.value:
        # the hint is at the floor by the counts; where it solves the model too, the least excess is known (a
        # flow plan may not: it relaxes this round's tag rule)
        trial = cm.clone()
        trial.add(sum(rules.excess) <= floor.value)
        if hint_solves(cp_model, trial, int(options.seed)):  # (at most 0.25 deterministic seconds, not counted)
            cm.add(sum(rules.excess) <= floor.value)
            extra["excess_settled"] = True
    extra["t_floor"] = round(time.perf_counter() - t0, 4)
    return floor, floor.det_s


def _hint_excess(m: StreamsModel, hint: StreamsPlan) -> int:
    """The hint's summed excess as the excess stage counts it (:func:`.cpsat_model.soft_counts`)."""
    ex = count_excess(m, hint)
    return sum(ex[k] for k in soft_counts(m))


@dataclass(frozen=True, slots=True, kw_only=True)
class _Run:
    """What the stages found: the last stage's status (or the first failing one's), whether every stage was
    proven optimal, CP-SAT's bound on the cost stage, and the values kept from the last solution (of
    ``vars_all``, and of the excess variables)."""

    status: Any
    proven: bool
    cost_bound: int | None
    vars_all: list
    kept_values: list[bool]
    kept_excess: list[int]


# ---- solve: one stage per objective, each fixing its optimum for the next (a lexicographic
# optimum without weights, which keep CP-SAT's bounds weak); the time limit spans all stages
def _solve_stages(cp_model, cm, m: StreamsModel, d: CpsatData, vs: CpsatVars, rules: CpsatRules, stages: list,
                  options: SolveOptions, *, hint: StreamsPlan | None, started: float, limit: float,
                  extra: dict[str, Any], det_before: float = 0.0, rescue=None, floor_value: int | None = None) \
        -> _Run:
    """Minimize ``stages`` one after the other within ``limit`` (counted from ``started``, of which
    ``det_before`` deterministic seconds are spent already); notes to ``extra``. ``rescue``: where the excess
    stage ends above ``floor_value`` (a proven floor) or without a solution, a start at the floor (every
    variable's value, or None) and the deterministic seconds it took; with one, the stage is settled there."""
    solver = cp_model.CpSolver()
    p = solver.parameters
    p.random_seed = int(options.seed)
    p.symmetry_level = 0
    deterministic = options.extra.get("deterministic", True)
    workers = options.num_workers if options.num_workers is not None else \
        (DETERMINISTIC_WORKERS if deterministic else None)
    if workers is not None:
        p.num_workers = int(workers)
    # until a stage has found a solution the model may have none; hinted and interleaved over two or more
    # workers, OR-Tools 9.15 then aborts the process (see DETERMINISTIC_WORKERS): one worker, unless the hint
    # is a solution (then so is the model, and every later stage, which its predecessor's solution solves)
    safe_first = not (deterministic and workers is not None and workers > 1) or \
        (hint is not None and hint_solves(cp_model, cm, int(options.seed)))
    guard_s = WALL_GUARD * limit + WALL_GUARD_S
    guarded = False  # the wall-clock guard ended a stage: the answer depends on the machine's speed and load
    t1 = time.perf_counter()
    status = None
    proven = True
    cost_bound = None
    stage_status = []
    det_used = det_before
    kept_values: list[bool] = []
    kept_excess: list[int] = []
    vars_all = vs.all()
    if extra.get("excess_settled"):  # the floor's start reached the proven floor: nothing left to search
        stages = [(name, expr) for name, expr in stages if name != "excess"]
        stage_status.append(("excess", "OPTIMAL (floor)"))
    if all(isinstance(expr, int) for _, expr in stages):
        stages = [("feasibility", sum(vs.x[:1]))]  # nothing to optimize: one solve finds the assignment
    for name, expr in stages:
        if isinstance(expr, int):
            stage_status.append((name, "constant"))
            continue
        if deterministic:  # count deterministic time only, so that every run stops at the same point
            remaining = max(0.0, limit - det_used)
        else:
            remaining = max(0.0, limit - (time.perf_counter() - started))
        if status is not None and remaining <= 1e-3:
            proven = False
            break
        # the balance and movement stages get a share of the time, so that the cost is always optimized
        remaining *= {"excess": 0.25, "cost": 0.6, "movements": 0.9}.get(name, 1.0)
        if deterministic:
            p.interleave_search = True
            if workers is not None:
                p.num_workers = int(workers) if (safe_first or status is not None) else 1
            p.max_deterministic_time = max(remaining, 1e-3)
            # a safety net only, the deterministic limit decides: the whole solve ends by WALL_GUARD x the
            # limit + WALL_GUARD_S of wall time at the latest, however the stages share it
            p.max_time_in_seconds = max(guard_s - (time.perf_counter() - started), 1e-3)
        else:
            p.max_time_in_seconds = max(remaining, 1e-3)
        cm.minimize(expr)
        st = solver.solve(cm)
        det_used += float(solver.response_proto.deterministic_time)
        stage_status.append((name, solver.status_name(st)))
        if deterministic and st != cp_model.OPTIMAL and time.perf_counter() - started >= guard_s - 1e-3:
            guarded = True  # the safety net, not the deterministic limit, ended this stage
            proven = False
        if name == "excess" and rescue is not None and (
                st not in (cp_model.OPTIMAL, cp_model.FEASIBLE) or int(round(solver.objective_value)) > floor_value):
            # the search ended above the proven floor: a solution at the floor's counts settles the stage (on the
            # issue's application the stage found 18, 14, 14, 18, 15 and 18 in six rounds; the floor is 14)
            values, used = rescue()
            det_used += used
            if values is not None:
                stage_status[-1] = (name, "OPTIMAL (floor)")
                status = cp_model.OPTIMAL
                kept_values = [bool(values[v.index]) for v in vars_all]
                kept_excess = [int(values[e.index]) for e in rules.excess]
                cm.add(expr <= floor_value)
                cm.clear_hints()
                for i, v in enumerate(values):
                    cm.add_hint(cm.get_int_var_from_proto_index(i), int(v))
                extra.update(hint="floor counts", excess_settled=True)
                continue
        if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            if status is None:
                status = st
            break
        status = st
        val = int(round(solver.objective_value))
        if name == "cost":
            cost_bound = int(np.ceil(solver.best_objective_bound - 1e-6)) if proven else None
        if st != cp_model.OPTIMAL:
            proven = False
        # keep this stage's value for the next ones, and start them from this solution
        kept_values = [bool(solver.boolean_value(v)) for v in vars_all]
        kept_excess = [int(solver.value(e)) for e in rules.excess]
        cm.add(expr <= val)
        cm.clear_hints()
        for v, b in zip(vars_all, kept_values):
            cm.add_hint(v, b)
    if guarded:
        extra["reason"] = (f"CP-SAT's wall-clock safety net ({guard_s:g} s) ended the search before its deterministic "
                           f"limit ({limit:g} s): the machine was too slow or too busy, and another run may answer "
                           f"differently")
    extra.update(t_cpsat=round(time.perf_counter() - t1, 4), cpsat_deterministic_s=round(det_used, 3),
                 cpsat_status=stage_status,
                 pairs=len(vs.x), standby_pairs=len(vs.s), tag_vars=rules.n_tag_vars, full=d.full)
    return _Run(status=status, proven=proven, cost_bound=cost_bound, vars_all=vars_all, kept_values=kept_values,
                kept_excess=kept_excess)


def _no_solution(cp_model, cm, m: StreamsModel, run: _Run, hint: StreamsPlan | None, valid: StreamsPlan | None,
                 limit: float, extra: dict[str, Any]) -> StreamsPlan:
    """No solution from the stages (``run.status`` neither OPTIMAL nor FEASIBLE): an error, or the valid start
    when the time ran out."""
    status = run.status
    if status == cp_model.INFEASIBLE:
        raise InfeasibleError("CP-SAT proved the model infeasible (e.g. max_moves below what balance needs)")
    if status == cp_model.MODEL_INVALID:
        raise SolverFaultError(f"CP-SAT: invalid model ({cm.validate()})")
    kept = _hint_if_valid(m, hint, valid)
    if kept is not None:
        note = f"CP-SAT found no solution in time; its start ({extra.get('hint', 'flow')}) is kept"
        kept.extra = {**kept.extra, **extra, "note": note}
        return kept
    raise TimeLimitError(f"CP-SAT found no solution within the time limit of {limit:g} s")


# ---- read results
def _read(cp_model, m: StreamsModel, d: CpsatData, vs: CpsatVars, run: _Run, status, extra: dict[str, Any]) \
        -> StreamsPlan:
    """The plan of the kept solution, with warm-ups added for movements it left bare."""
    x, s, w, r = vs.x, vs.s, vs.w, vs.r
    value_of = dict(zip((id(v) for v in run.vars_all), run.kept_values))

    def on(v) -> bool:
        return value_of[id(v)]

    xv = np.array([on(v) for v in x], dtype=bool)
    target = np.full(m.T, -1, dtype=np.int64)
    target[d.x_t[xv]] = d.x_c[xv]
    moving = movements(m, target)
    active = np.where(moving, m.holder, target)
    standby = np.full((m.T, m.want), -1, dtype=np.int64)
    converged = standby.copy()
    if m.want:
        S = np.flatnonzero(m.stateful)
        sv = np.array([on(v) for v in s], dtype=bool)
        st_, sc_ = d.s_t[sv], d.s_c[sv]
        order = np.lexsort((sc_, st_))
        converged[S] = sc_[order].reshape(len(S), m.want)
        # this round: r for a task that may move (the converged standbys unless it does), s for the others
        now = sv.copy()
        for j, rv in r.items():
            now[j] = on(rv)
        st_, sc_ = d.s_t[now], d.s_c[now]
        order = np.lexsort((sc_, st_))
        standby[S] = sc_[order].reshape(len(S), m.want)
    warm = np.full(m.T, -1, dtype=np.int64)
    for i, v in w.items():
        if on(v):
            warm[int(d.x_t[i])] = int(d.x_c[i])
    covered_mask = moving & (standby == target[:, None]).any(axis=1) if m.want else np.zeros(m.T, dtype=bool)
    # warm-ups for movements the search left bare (a stage cut short by the time limit): a warm-up only makes a
    # client busier for the task, so it never breaks tag spreading, and without one the move would never happen
    if int((warm >= 0).sum()) < m.budget:
        extra_warm = choose_warmups(m, target, moving & ~covered_mask & (warm < 0), active)
        room = m.budget - int((warm >= 0).sum())
        add = np.flatnonzero(extra_warm >= 0)[:room]
        warm[add] = extra_warm[add]
    ex = run.kept_excess
    extra.update(movements=int(moving.sum()), covered_by_standby=int(covered_mask.sum()),
                 warmups=int((warm >= 0).sum()), balance_excess=int(sum(ex)))
    plan = StreamsPlan(target=target, active=active, warmup=warm, standby=standby, method="cpsat",
                       status="optimal" if (status == cp_model.OPTIMAL and d.full) else "feasible", extra=extra,
                       converged=converged)
    return plan


def _bound(cp_model, m: StreamsModel, d: CpsatData, plan: StreamsPlan, status, cost_bound: int | None) -> None:
    """Set ``plan.bound``: CP-SAT's own on the cost stage (when excess and movements are proven), or, proven
    optimal, the plan's own cost."""
    bounds = []
    if d.full and cost_bound is not None:
        bounds.append(cost_bound)
    plan.bound = max(bounds) if bounds else None
    if status == cp_model.OPTIMAL and d.full:
        plan.bound = target_cost(m, plan)  # proven: nothing cheaper at this balance
