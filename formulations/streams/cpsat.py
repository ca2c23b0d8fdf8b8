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

Hinted with the flow's plan. Fixed ``random_seed``, ``num_workers`` as given.
By default the search is interleaved over a fixed number of workers
(:data:`DETERMINISTIC_WORKERS` unless ``num_workers`` is given) and the time
limit counted in deterministic time, so that the same snapshot gives the same
answer on every run, however busy the machine. A wall-clock limit stays
behind it as a safety net only (the whole solve ends by :data:`WALL_GUARD` x
the budget + :data:`WALL_GUARD_S`, far above what load does); when it fires,
``solver.reason`` says so and the search proves nothing.
``extra["deterministic"] = False`` switches to the free-running parallel
portfolio, limited by wall-clock time.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from stickyflow.errors import InfeasibleError, SolverFaultError, StickyflowError, TimeLimitError
from stickyflow.model.arrays import in_sorted
from stickyflow.registry import SolveOptions

from ..cpsat_backend import cp_model_module
from .cpsat_data import FULL_PAIRS, CpsatData, best_spread, group_lists, relaxed
from .cpsat_start import add_hint, hint_solves, valid_hint, valid_start
from .model import StreamsModel
from .plan import StreamsPlan, choose_warmups, movements, plan_standbys, target_cost

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


def _balanced(cm, m: StreamsModel, counts: list, name: str, soft: bool = False, at_hint=None):
    """Post **Balanced** on ``counts`` (one linear expression per client): a rule, or with ``soft`` the distance
    from it as :func:`stickyflow.check.streams.balance_excess` measures it (the tasks above ``w_c m +
    balance_factor``, summed over clients; ``m`` the least count per thread), returned as a variable.

    ``mn_w`` is at most the least count of the clients of ``w`` threads, so that ``m <= mn_w / w`` for every
    ``w``; a client's tasks within ``floor(w_c mn_w' / w' + balance_factor)`` for every ``w'`` are within it for
    the least of them, which is the spec's cap (the floor is the integer count's). The overflow ``o_c`` is
    what a client holds above that cap; as a rule, every ``o_c`` is 0. (The largest pairwise gap, which this
    model measured before 2026-11-28, ranks unbalanced counts differently: 6 against 9 where the spec's
    distance is 4 and 4, so the optimizer paid for a "better" balance the spec does not see.)

    ``at_hint``: the count per client of the plan CP-SAT starts from; its ``mn_w`` and overflows are hinted
    too (unhinted, a search from a balanced start took more than its share of the time limit to find them 0:
    120 tasks on 12 clients, 1.25 deterministic seconds).
    """
    th = m.threads.tolist()
    kinds = sorted(set(th))
    hi_n = m.T * (1 + m.want) + 1
    mn = {w: cm.new_int_var(0, hi_n, f"{name}_mn{w}") for w in kinds}
    over = []
    for c, e in enumerate(counts):
        cm.add(mn[th[c]] <= e)
        o = cm.new_int_var(0, hi_n, f"{name}_o{c}") if soft else 0
        over.append(o)
        for w2 in kinds:  # w2 (n_c - o_c) <= w_c mn_w2 + bf w2
            cm.add(w2 * (e - o) <= th[c] * mn[w2] + m.bf * w2)
    if at_hint is not None:
        n = np.asarray(at_hint, dtype=np.int64)
        for w in kinds:
            cm.add_hint(mn[w], int(n[m.threads == w].min()))
    if not soft:
        return 0
    excess = cm.new_int_var(0, hi_n * m.C, f"{name}_excess")
    cm.add(excess == sum(over))
    if at_hint is not None:
        i = int(np.argmin(n / m.threads))
        o_hint = np.maximum(n - (m.threads * n[i] + m.bf * m.threads[i]) // m.threads[i], 0)
        for o, v in zip(over, o_hint.tolist()):
            cm.add_hint(o, v)
        cm.add_hint(excess, int(o_hint.sum()))
    return excess


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
        empty = np.full(m.T, -1, dtype=np.int64)
        return StreamsPlan(target=empty, active=empty, warmup=empty.copy(),
                           standby=np.full((m.T, m.want), -1, dtype=np.int64), method="cpsat", status="optimal",
                           bound=0, extra={"movements": 0})

    # ---- the flow: a hint (tags and the move cap relaxed)
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

    def hint_if_valid() -> StreamsPlan | None:  # with tags checked above (no hint: None, as valid_hint says)
        return valid if m.tag_keys else valid_hint(m, hint)

    extra["t_hint"] = round(time.perf_counter() - started, 4)
    if auto and m.tag_keys and m.want >= 2 and m.max_moves is None \
            and m.T * m.C > START_ONLY_PAIRS * max(1.0, limit / DEFAULT_TIME_LIMIT):
        kept = hint_if_valid()
        if kept is not None:
            note = (f"CP-SAT not run: at {m.T * m.C:,} (task, client) pairs it does not improve on a valid start "
                    f"within {limit:g} s; the start ({extra.get('hint', 'flow')}) is the answer (a longer "
                    f"time_limit, or method='cpsat', runs CP-SAT)")
            kept.extra = {**kept.extra, **extra, "note": note}
            return kept

    cp_model = cp_model_module()
    d = CpsatData(m, hint)

    # ---- variables
    cm = cp_model.CpModel()
    nx = len(d.x_t)
    x = [cm.new_bool_var(f"x{i}") for i in range(nx)]
    ns = len(d.s_t)
    s = [cm.new_bool_var(f"s{i}") for i in range(ns)]
    mv_pairs = np.flatnonzero(d.x_move)
    w = {int(i): cm.new_bool_var(f"w{i}") for i in mv_pairs}
    by_task_x = group_lists(d.x_t, m.T)
    mv_expr = {}
    for t in np.flatnonzero(m.constrained).tolist():
        terms = [x[i] for i in by_task_x[t] if d.x_move[i]]
        if terms:
            mv_expr[t] = sum(terms)
    # this round's standbys of a task that may move (r, over its standby pairs): the converged ones (s) unless
    # it moves; while it waits they are free, spread around its holder, and one on the target covers it
    r = {}
    if m.want:
        for j in range(ns):
            if int(d.s_t[j]) in mv_expr:
                r[j] = cm.new_bool_var(f"r{j}")
    z = {}  # a movement to x_c[i] covered: a standby of this round (r) on x_c[i] catches up there
    for i in mv_pairs.tolist():
        j = d.s_index.get((int(d.x_t[i]), int(d.x_c[i])))
        if j is not None and j in r:
            z[i] = (cm.new_bool_var(f"z{i}"), j)

    # ---- constraints
    for t in range(m.T):
        cm.add_exactly_one(x[i] for i in by_task_x[t])
    act: dict[tuple[int, int], Any] = {}
    for i in range(nx):
        if not d.x_move[i]:
            act[(int(d.x_t[i]), int(d.x_c[i]))] = x[i]
    for t, e in mv_expr.items():
        key = (t, int(m.holder[t]))
        act[key] = act[key] + e if key in act else e
    if m.want:
        by_task_s = group_lists(d.s_t, m.T)
        for t in np.flatnonzero(m.stateful).tolist():
            cm.add(sum(s[j] for j in by_task_s[t]) == m.want)
            if t in mv_expr:
                cm.add(sum(r[j] for j in by_task_s[t]) == m.want)
    # one role per (task, client) once converged (x, s) and this round (what runs, r, warm-ups): a movement
    # runs on its holder; its standbys this round are the converged ones unless it moves; a standby on its
    # target catches up there (z), and a warm-up goes only where none does
    x_index = {(int(a), int(b)): i for i, (a, b) in enumerate(zip(d.x_t.tolist(), d.x_c.tolist()))}
    for j in range(ns):
        t_, c_ = int(d.s_t[j]), int(d.s_c[j])
        i = x_index.get((t_, c_))
        if i is not None:
            cm.add(x[i] + s[j] <= 1)
        if j in r:
            cm.add(r[j] - s[j] <= mv_expr[t_])
            cm.add(s[j] - r[j] <= mv_expr[t_])
            if (t_, c_) in act:
                cm.add(r[j] + act[(t_, c_)] <= 1)
    for i, v in w.items():
        cm.add_implication(v, x[i])
    for i, (zv, j) in z.items():
        cm.add_implication(zv, x[i])
        cm.add_implication(zv, r[j])
        cm.add(zv >= x[i] + r[j] - 1)
        if i in w:
            cm.add(r[j] + w[i] <= 1)
    if w:
        cm.add(sum(w.values()) <= m.budget)

    # balance: active tasks (a rule), stateful actives, replicas, subtopologies (rules where they can hold)
    by_client_x = group_lists(d.x_c, m.C)
    loads = [sum(x[i] for i in by_client_x[c]) for c in range(m.C)]
    started_at = hint if hint is not None and (hint.target >= 0).all() else None

    def at_hint(tasks: np.ndarray | None = None, replicas: bool = False) -> np.ndarray | None:
        """A count per client of the plan CP-SAT starts from (targets, of ``tasks``; with converged standbys)."""
        if started_at is None:
            return None
        tg = started_at.target if tasks is None else started_at.target[tasks]
        n = np.bincount(tg, minlength=m.C)
        if replicas:
            sb = plan_standbys(m, started_at)
            n = n + np.bincount(sb[sb >= 0], minlength=m.C)
        return n

    _balanced(cm, m, loads, "act", at_hint=at_hint())
    excess = []
    if m.stateful.any() and (~m.stateful).any():
        excess.append(_balanced(cm, m, [sum(x[i] for i in by_client_x[c] if m.stateful[d.x_t[i]])
                                        for c in range(m.C)], "stf", soft=True, at_hint=at_hint(m.stateful)))
    if m.want:
        by_client_s = group_lists(d.s_c, m.C)
        excess.append(_balanced(cm, m, [loads[c] + sum(s[j] for j in by_client_s[c]) for c in range(m.C)], "rep",
                                soft=True, at_hint=at_hint(replicas=True)))
    if m.sub_balance:
        cg = d.x_c * m.G + m.sub[d.x_t]
        groups = group_lists(cg, m.C * m.G)
        for g in range(m.G):
            excess.append(_balanced(cm, m, [sum(x[i] for i in groups[c * m.G + g]) for c in range(m.C)], f"sub{g}",
                                    soft=True, at_hint=at_hint(m.sub == g)))

    # tag spreading
    n_tag_vars = 0
    if m.tag_keys and m.want:
        best, best2 = best_spread(m)
        vals = m.combos[m.client_combo]
        K = m.combos.shape[1]
        holders: dict[int, list[tuple[int, Any]]] = {}
        for (t, c), e in act.items():
            if m.stateful[t]:
                holders.setdefault(t, []).append((c, e))
        by_task_s = group_lists(d.s_t, m.T)
        by_task_w: dict[int, list] = {}
        for i, v in w.items():
            t, c = int(d.x_t[i]), int(d.x_c[i])
            a = int(m.client_combo[m.holder[t]])
            loss = int(best[a] - best2[a, m.client_combo[c]])
            if loss:
                by_task_w.setdefault(t, []).append(loss * v)

        def spread(t: int, reps: list, need, tag: str) -> None:
            """Task t's replicas ``reps`` ((client, indicator) pairs) cover at least ``need`` tag values."""
            nonlocal n_tag_vars
            ys = []
            for k in range(K):
                per_value: dict[int, list] = {}
                for c, e in reps:
                    v = int(vals[c, k])
                    if v >= 0:
                        per_value.setdefault(v, []).append(e)
                for v, terms in per_value.items():
                    y = cm.new_bool_var(f"y{tag}{t}_{k}_{v}")
                    cm.add(y <= sum(terms))
                    ys.append(y)
                    n_tag_vars += 1
            cm.add(sum(ys) >= need)

        by_task_x = group_lists(d.x_t, m.T)
        for t in np.flatnonzero(m.stateful).tolist():
            sb = [(int(d.s_c[j]), s[j]) for j in by_task_s[t]]
            # this round's replicas: what runs and this round's standbys (a covering one on the target included)
            now = [(int(d.s_c[j]), r[j]) for j in by_task_s[t]] if t in mv_expr else sb
            need = sum(int(best[m.client_combo[c]]) * e for c, e in holders.get(t, []))
            spread(t, holders.get(t, []) + now, need - sum(by_task_w.get(t, [])), "")
            if t in mv_expr:  # a task that may move: the converged assignment spreads its replicas too
                tx = [(int(d.x_c[i]), x[i]) for i in by_task_x[t]]
                need = sum(int(best[m.client_combo[c]]) * e for c, e in tx)
                if not waiting_spread:  # only once it moves (warm-up or covering standby): see the docstring
                    going = [w[i] for i in by_task_x[t] if i in w] + [z[i][0] for i in by_task_x[t] if i in z]
                    need -= int(best.max(initial=0)) * (mv_expr[t] - sum(going) if going else mv_expr[t])
                spread(t, tx + sb, need, "c")
    # active tasks that leave their previous client: capped by max_moves, and a tie-break below
    kept_prev = [act[(int(t), int(c))] for c, t in zip(m.prev_c.tolist(), m.prev_t.tolist()) if (int(t), int(c)) in act]
    n_left = int(m.had.sum()) - sum(kept_prev) if kept_prev else int(m.had.sum())
    if m.max_moves is not None:
        cm.add(n_left <= m.max_moves)

    # ---- objective (lexicographic by weights)
    xcost = m.active_cost(d.x_t, d.x_c)
    cost_terms = [int(c_) * x[i] for i, c_ in enumerate(xcost.tolist()) if c_]
    scost = m.standby_cost(d.s_t, d.s_c) if ns else np.zeros(0, dtype=np.int64)
    cost_terms += [int(c_) * s[j] for j, c_ in enumerate(scost.tolist()) if c_]
    if len(mv_pairs):  # a movement's way to its target: restorations and the moves of waiting (movement_cost)
        way = m.movement_cost(d.x_t[mv_pairs], d.x_c[mv_pairs])  # one pass, not one per pair
        cost_terms += [int(cc) * x[int(i)] for i, cc in zip(mv_pairs.tolist(), way.tolist()) if cc]
    # a waiting task's standbys of this round beyond its converged ones (restored for this round only; on its
    # target, the movement's own restoration, in its way), the converged ones that are not kept this round
    # (a client keeps no state of a task it no longer holds: restored when the task has moved; the holder runs
    # it meanwhile), and the state a movement loses on a target that held the task and gets neither a warm-up
    # nor a standby this round (restored again when its turn comes)
    held_s = in_sorted(d.s_c * m.T + d.s_t, m.held_keys) if ns else np.zeros(0, dtype=bool)
    for j, rv in r.items():
        t_, c_ = int(d.s_t[j]), int(d.s_c[j])
        if not m.noc[t_] or (held_s[j] and c_ == m.holder[t_]):
            continue
        u = cm.new_bool_var(f"u{j}")
        if held_s[j]:  # held: restored only if the converged standby is not kept this round
            cm.add(u >= s[j] - rv)
        else:  # not held: restored once, this round or once converged (standby_cost counts the latter)
            i = x_index.get((t_, c_))
            cm.add(u >= rv - s[j] - (x[i] if i is not None else 0))
        cost_terms.append(int(m.noc[t_]) * u)
    held_x = in_sorted(d.x_c[mv_pairs] * m.T + d.x_t[mv_pairs], m.held_keys)
    for i, kept in zip(mv_pairs.tolist(), held_x.tolist()):
        if kept and m.noc[d.x_t[i]]:
            cost_terms.append(int(m.noc[d.x_t[i]]) * (x[i] - w[i] - (z[i][0] if i in z else 0)))
    wrep = m.replica_cost(d.x_t[mv_pairs], d.x_c[mv_pairs]) if len(mv_pairs) else np.zeros(0, dtype=np.int64)
    low_terms = [int(p_) * w[int(i)] for i, p_ in zip(mv_pairs.tolist(), wrep.tolist()) if p_]
    low_terms += [int(d.s_tie[j]) * s[j] for j in range(ns) if d.s_tie[j]]
    low_terms += [int(d.s_tie[j]) * rv for j, rv in r.items() if d.s_tie[j]]
    n_moving = sum(mv_expr.values()) if mv_expr else 0
    covered = [zv for zv, _ in z.values()] + list(w.values())
    uncovered = n_moving - sum(covered) if covered else n_moving
    total_excess = sum(excess) if excess else 0
    cost_expr = sum(cost_terms) if cost_terms else 0
    low_max = 2 * (ns + len(r)) + m.budget * (int(m.rep_cell.max(initial=0)) + 1) + 1
    last = low_max * uncovered + (sum(low_terms) if low_terms else 0)
    # movements (rounds of waiting) first, then active tasks that leave their client: among equal costs nothing
    # moves for nothing (a stateless task under min_traffic costs 0 to move)
    stages = [("excess", total_excess), ("cost", cost_expr), ("movements", (m.T + 1) * n_moving + n_left),
              ("ties", last)]

    if hint is not None:
        add_hint(cm, m, d, hint, x, s, w, z, r)

    # ---- solve: one stage per objective, each fixing its optimum for the next (a lexicographic
    # optimum without weights, which keep CP-SAT's bounds weak); the time limit spans all stages
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
    det_used = 0.0
    kept_values: list[bool] = []
    kept_excess: list[int] = []
    vars_all = x + s + list(w.values()) + [zv for zv, _ in z.values()] + list(r.values())
    if all(isinstance(expr, int) for _, expr in stages):
        stages = [("feasibility", sum(x[:1]))]  # nothing to optimize: one solve finds the assignment
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
        kept_excess = [int(solver.value(e)) for e in excess]
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
                 pairs=nx, standby_pairs=ns, tag_vars=n_tag_vars, full=d.full)
    if status == cp_model.INFEASIBLE:
        if retry and waiting_spread and m.tag_keys and m.want:
            return solve_cpsat(m, options, started=started, hint=hint, auto=auto, waiting_spread=False, retry=False)
        raise InfeasibleError("CP-SAT proved the model infeasible (e.g. max_moves below what balance needs)")
    if status == cp_model.MODEL_INVALID:
        raise SolverFaultError(f"CP-SAT: invalid model ({cm.validate()})")
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        kept = hint_if_valid()
        if kept is not None:
            note = f"CP-SAT found no solution in time; its start ({extra.get('hint', 'flow')}) is kept"
            kept.extra = {**kept.extra, **extra, "note": note}
            return kept
        raise TimeLimitError(f"CP-SAT found no solution within the time limit of {limit:g} s")
    status = cp_model.OPTIMAL if proven else cp_model.FEASIBLE
    value_of = dict(zip((id(v) for v in vars_all), kept_values))

    def on(v) -> bool:
        return value_of[id(v)]

    # ---- read results
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
    ex = kept_excess
    extra.update(movements=int(moving.sum()), covered_by_standby=int(covered_mask.sum()),
                 warmups=int((warm >= 0).sum()), balance_excess=int(sum(ex)))
    plan = StreamsPlan(target=target, active=active, warmup=warm, standby=standby, method="cpsat",
                       status="optimal" if (status == cp_model.OPTIMAL and d.full) else "feasible", extra=extra,
                       converged=converged)
    # ---- the bound: CP-SAT's own on the cost stage (when excess and movements are proven), or the flow's
    bounds = []
    if d.full and cost_bound is not None:
        bounds.append(cost_bound)
    plan.bound = max(bounds) if bounds else None
    if status == cp_model.OPTIMAL and d.full:
        plan.bound = target_cost(m, plan)  # proven: nothing cheaper at this balance
    return plan


