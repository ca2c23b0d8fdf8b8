r"""The streams model of :mod:`.streams_common` in CP-SAT, exactly, for what a flow cannot say.

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

import importlib
import itertools
import sys
import threading
import time
import types
from typing import Any

import numpy as np

from stickyflow.errors import (BackendMissingError, InfeasibleError, SolverFaultError, StickyflowError,
                               TimeLimitError)
from stickyflow.registry import SolveOptions

from .streams_common import (StreamsModel, StreamsPlan, choose_warmups, count_excess, decision_plan, in_sorted,
                             movements, plan_decision, plan_standbys, round_standbys, target_cost)

__all__ = ["solve_cpsat", "cp_model_module", "FULL_PAIRS", "DEFAULT_TIME_LIMIT", "START_ONLY_PAIRS", "WALL_GUARD",
           "WALL_GUARD_S", "DETERMINISTIC_WORKERS"]

FULL_PAIRS = 60_000  # above this many (task, client) pairs the model keeps candidate pairs only
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
#: first stage still runs on one worker unless the hint is known to solve the model (:func:`_hint_solves`)
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


def cp_model_module():
    """OR-Tools' ``cp_model`` for every CP-SAT formulation, imported as :func:`_import_cp_model` says (typed error
    when OR-Tools is missing)."""
    return _cp()


def _cp():
    try:
        return _import_cp_model()
    except ImportError as exc:  # pragma: no cover
        raise BackendMissingError("OR-Tools is not installed: pip install ortools (a core dependency)") from exc


_CP_IMPORT = threading.Lock()


def _import_cp_model():
    """OR-Tools' ``cp_model``, imported without importing pandas where that is safe.

    ``cp_model`` imports pandas at its top for its pandas helpers (``new_int_var_series`` and the like),
    which stickyflow does not use: on this project's machine 0.3 s of the 0.9 s that ``stickyflow solve``
    took on a small streams snapshot solved by CP-SAT. In a process with one thread that has not loaded pandas,
    a stand-in (:class:`_PandasOnDemand`) sits in pandas' place in ``sys.modules`` while ``cp_model`` is
    imported and is taken out right after. ``cp_model`` keeps it as its ``pd``; from then on it hands every
    name to the real pandas, imported on first use, so those helpers work as before, and ``import pandas``
    anywhere gets the real module. With a second thread (which could import pandas meanwhile), with pandas
    loaded already, or when the import fails with the stand-in, ``cp_model`` is imported as it is.
    """
    done = sys.modules.get("ortools.sat.python.cp_model")
    if done is not None:
        return done
    with _CP_IMPORT:
        if "pandas" in sys.modules or threading.active_count() > 1:
            from ortools.sat.python import cp_model
            return cp_model
        stand_in = _PandasOnDemand("pandas")
        sys.modules["pandas"] = stand_in
        try:
            from ortools.sat.python import cp_model
        except Exception:  # noqa: BLE001  (another OR-Tools wants more of pandas at import: import it whole)
            cp_model = None
        finally:
            stand_in.__dict__["_importing"] = False
            if sys.modules.get("pandas") is stand_in:
                del sys.modules["pandas"]
        if cp_model is None:
            from ortools.sat.python import cp_model
        return cp_model


class _PandasOnDemand(types.ModuleType):
    """Pandas' place in ``sys.modules`` while ``cp_model`` is imported (:func:`_import_cp_model`): meanwhile a
    name read from it is a placeholder class (``cp_model`` reads ``pd.Index`` and ``pd.Series`` for its type
    annotations); afterwards every name comes from the real pandas, imported on first use.

    >>> pd = _PandasOnDemand("pandas")
    >>> pd.Series.__name__, pd.Series is pd.Series
    ('Series', True)
    """

    def __init__(self, name: str):
        super().__init__(name)
        self.__dict__.update(_importing=True, _placeholders={})

    def __getattr__(self, name: str):
        if self.__dict__["_importing"]:
            if name.startswith("__"):
                raise AttributeError(name)
            return self.__dict__["_placeholders"].setdefault(name, type(name, (), {"__module__": "pandas"}))
        return getattr(importlib.import_module("pandas"), name)


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
            from .streams_flow import solve_flow

            hint = solve_flow(_relaxed(m))
        except StickyflowError as exc:  # no hint: CP-SAT starts from scratch
            extra["hint_error"] = str(exc)
    valid = None  # with tags, the hint once checked (each check validates the whole plan), else None
    if hint is not None and m.tag_keys:
        valid = _valid_hint(m, hint)
        if valid is None:
            # the flow relaxed the tags: a hint that breaks them may leave CP-SAT without any solution in time,
            # so start from a valid one, the better of the flow's plan with its standbys repaired and the greedy's
            hint, extra["hint"] = _valid_start(m, hint, options)
            valid = hint if extra["hint"] != "flow" else None  # _valid_start checked what it returns

    def valid_hint() -> StreamsPlan | None:  # with tags checked above (no hint: None, as _valid_hint says)
        return valid if m.tag_keys else _valid_hint(m, hint)

    extra["t_hint"] = round(time.perf_counter() - started, 4)
    if auto and m.tag_keys and m.want >= 2 and m.max_moves is None \
            and m.T * m.C > START_ONLY_PAIRS * max(1.0, limit / DEFAULT_TIME_LIMIT):
        kept = valid_hint()
        if kept is not None:
            note = (f"CP-SAT not run: at {m.T * m.C:,} (task, client) pairs it does not improve on a valid start "
                    f"within {limit:g} s; the start ({extra.get('hint', 'flow')}) is the answer (a longer "
                    f"time_limit, or method='cpsat', runs CP-SAT)")
            kept.extra = {**kept.extra, **extra, "note": note}
            return kept

    cp_model = _cp()
    d = _Data(m, hint)

    # ---- variables
    cm = cp_model.CpModel()
    nx = len(d.x_t)
    x = [cm.new_bool_var(f"x{i}") for i in range(nx)]
    ns = len(d.s_t)
    s = [cm.new_bool_var(f"s{i}") for i in range(ns)]
    mv_pairs = np.flatnonzero(d.x_move)
    w = {int(i): cm.new_bool_var(f"w{i}") for i in mv_pairs}
    by_task_x = _group_lists(d.x_t, m.T)
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
        by_task_s = _group_lists(d.s_t, m.T)
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
    by_client_x = _group_lists(d.x_c, m.C)
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
        by_client_s = _group_lists(d.s_c, m.C)
        excess.append(_balanced(cm, m, [loads[c] + sum(s[j] for j in by_client_s[c]) for c in range(m.C)], "rep",
                                soft=True, at_hint=at_hint(replicas=True)))
    if m.sub_balance:
        cg = d.x_c * m.G + m.sub[d.x_t]
        groups = _group_lists(cg, m.C * m.G)
        for g in range(m.G):
            excess.append(_balanced(cm, m, [sum(x[i] for i in groups[c * m.G + g]) for c in range(m.C)], f"sub{g}",
                                    soft=True, at_hint=at_hint(m.sub == g)))

    # tag spreading
    n_tag_vars = 0
    if m.tag_keys and m.want:
        best, best2 = _best_spread(m)
        vals = m.combos[m.client_combo]
        K = m.combos.shape[1]
        holders: dict[int, list[tuple[int, Any]]] = {}
        for (t, c), e in act.items():
            if m.stateful[t]:
                holders.setdefault(t, []).append((c, e))
        by_task_s = _group_lists(d.s_t, m.T)
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

        by_task_x = _group_lists(d.x_t, m.T)
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
        _add_hint(cm, m, d, hint, x, s, w, z, r)

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
        (hint is not None and _hint_solves(cp_model, cm, int(options.seed)))
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
        kept = valid_hint()
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


def _hint_solves(cp_model, cm, seed: int) -> bool:
    """Whether ``cm``'s hint is a solution of it: every hinted variable fixed to its hint, the others found by a
    short search on one worker (deterministic, and safe where the model has no solution)."""
    solver = cp_model.CpSolver()
    p = solver.parameters
    p.fix_variables_to_their_hinted_value = True
    p.num_workers = 1
    p.random_seed = seed
    p.max_deterministic_time = 0.25
    p.max_time_in_seconds = 60.0  # a safety net only
    return solver.solve(cm) in (cp_model.OPTIMAL, cp_model.FEASIBLE)


def _valid_hint(m: StreamsModel, hint: StreamsPlan | None) -> StreamsPlan | None:
    """The flow's plan when it keeps the rules the flow relaxed (tag spreading, the move cap), else None."""
    if hint is None:
        return None
    from stickyflow.check.streams import streams_metrics, validate_streams

    d = plan_decision(m, hint)
    if validate_streams(m.snap, d.assignment, followup_rebalance_deadline_ms=d.followup_rebalance_deadline_ms):
        return None
    if m.max_moves is not None and streams_metrics(m.snap, d.assignment)["moves"] > m.max_moves:
        return None
    if hint.status == "optimal" and m.tag_keys and m.want >= 2:
        hint.status = "feasible"  # its bound ignores the tags: still a bound, but not a proof
    return hint


def _valid_start(m: StreamsModel, hint: StreamsPlan, options: SolveOptions) -> tuple[StreamsPlan, str]:
    """The hint CP-SAT starts from when the flow's plan breaks a rule it relaxed: of the flow's plan with its
    standbys repaired (:func:`_tag_repaired`) and the greedy assignor's answer, the valid one with the least
    excess over **Balanced**, then the least cost (:func:`_start_key`); ``hint`` itself when neither is valid.
    Returns the plan and which it is."""
    starts = []
    repaired, _ = _tag_repaired(m, hint)
    if _valid_hint(m, repaired) is not None:
        spread, _ = _converged_spread(m, repaired)
        if spread is not repaired and _valid_hint(m, spread) is not None:
            repaired = spread
        starts.append((_start_key(m, repaired), 0, "flow, tags repaired", repaired))
    try:
        from stickyflow.registry import get_assignor

        answer = get_assignor("sticky", "streams").load()(m.snap, options)
        greedy = decision_plan(m, answer, method=answer.method)
    except StickyflowError:  # pragma: no cover - the greedy has no time limit and no solver to fail
        greedy = None
    if greedy is not None and _valid_hint(m, greedy) is not None:
        starts.append((_start_key(m, greedy), 1, "greedy", greedy))
    if not starts:
        return hint, "flow"
    _, _, name, plan = min(starts, key=lambda s: s[:2])
    return plan, name


def _start_key(m: StreamsModel, plan: StreamsPlan) -> tuple[int, int]:
    """How good a start ``plan`` is, about as CP-SAT's stages rank it: the converged assignment's excess over
    **Balanced**, summed over the counts (:func:`count_excess`); then its cost."""
    return sum(count_excess(m, plan).values()), target_cost(m, plan)


def _tag_repaired(m: StreamsModel, plan: StreamsPlan) -> tuple[StreamsPlan, int]:
    """``plan`` with standbys moved until each task's replicas spread over the tag values (KIP-708), and how
    many moved.

    The flow spreads one standby only; with two or more, its plan often breaks
    the spread, and CP-SAT, hinted with it, may find no solution at all within
    its time (four of the six medium two-standby ``tags`` snapshots of
    ``bench/streams_vs_greedy.py --quick`` at 2 s). The greedy assignor's repair
    (:func:`stickyflow.greedy.streams_state.repair_tag_spread`: a standby moves to a
    client of a combination that adds a tag value, the least loaded first),
    then its standby balancing (:func:`stickyflow.greedy.streams_ha.balance_standbys`,
    between clients of the same tag values, so the spread stays) keep the
    flow's targets, actives and warm-ups: the hint stays close to the flow's
    cost and is valid by every rule of the check. (CP-SAT also spreads the
    converged replicas of a task that moves; repairing those first as well
    was tried, 2026-11-27, and gave worse starts: the repair then often broke
    this round's spread, and the greedy's answer was taken instead.)
    """
    from stickyflow.greedy.streams_ha import balance_standbys
    from stickyflow.greedy.streams_state import HAState, repair_tag_spread

    st = HAState(m.snap)
    for t, c in enumerate(plan.active.tolist()):
        st.set_active(t, c)
    for t, c in enumerate(plan.warmup.tolist()):
        if c >= 0:
            st.add_warmup(t, c)
    for t, cs in enumerate(plan.standby.tolist()):
        for c in cs:
            if c >= 0:
                st.add_standby(t, c)
    moved = repair_tag_spread(st, m.tag_keys)
    moved += balance_standbys(st, m.client_combo.tolist())  # between clients of the same tag values only
    standby = np.full_like(plan.standby, -1)
    for t, cs in enumerate(st.standby):
        standby[t, :len(cs)] = cs
    return StreamsPlan(target=plan.target, active=plan.active, warmup=plan.warmup, standby=standby,
                       method=plan.method, status="feasible", bound=plan.bound, extra=dict(plan.extra)), moved


def _converged_spread(m: StreamsModel, plan: StreamsPlan) -> tuple[StreamsPlan, int]:
    """``plan`` with the converged replicas of each moving task spread as CP-SAT's model asks, and how many
    tasks changed.

    The check reads this round's assignment only; the model also spreads the
    converged one (the target and the converged standbys) of a task that
    moves, so a plan valid by the check can be no solution of the model, and
    CP-SAT cannot start from it. For each moving task whose converged replicas
    cover fewer tag values than its target's combination allows: one standby
    at a time is tried on each other client (the holder first, as a covering
    standby, where no warm-up waits on the target; then the least loaded)
    until both spreads hold (this round's as the model counts it, warm-up
    allowance included); failing that, a warm-up gives way to a covering
    standby on the holder (its standby catches up on the target in the
    warm-up's place: with the holder and the target of different values, and
    two standbys, only that spreads both). ``plan`` itself when nothing changed.
    """
    best, best2 = _best_spread(m)
    cc = m.client_combo
    vals = m.combos[cc]
    K = vals.shape[1]
    tg, act = plan.target, plan.active
    warm = plan.warmup.copy()
    moving = movements(m, tg) & m.stateful
    conv = plan_standbys(m, plan)
    load = np.bincount(act, minlength=m.C) + np.bincount(plan.standby[plan.standby >= 0], minlength=m.C)
    load += np.bincount(warm[warm >= 0], minlength=m.C)
    by_load = np.argsort(load, kind="stable").tolist()

    def distinct(clients: list[int]) -> int:
        v = vals[clients]
        return sum(len(set(v[:, k].tolist()) - {-1}) for k in range(K))

    def spread(t: int, cv: list[int], w: int) -> bool:
        if distinct([int(tg[t])] + cv) < best[cc[tg[t]]]:
            return False
        h = int(m.holder[t])
        reps = [int(act[t])] + cv + ([int(tg[t])] if h in cv else [])
        need = int(best[cc[act[t]]])
        if w >= 0:
            need -= int(best[cc[h]] - best2[cc[h], cc[w]])
        return distinct(reps) >= need

    def first(t: int, cv: list[int], w: int, candidates: list[int], keep: set[int]) -> list[int] | None:
        """``cv`` with one standby not in ``keep`` on the first candidate that spreads both, or None."""
        taken = {int(tg[t]), w} | set(cv)
        for pos in range(len(cv)):
            if cv[pos] in keep:
                continue
            for c in candidates:
                if c not in taken and spread(t, cv[:pos] + [c] + cv[pos + 1:], w):
                    return cv[:pos] + [c] + cv[pos + 1:]
        return None

    changed = 0
    new = conv.copy()
    for t in np.flatnonzero(moving).tolist():
        cv = [c for c in conv[t].tolist() if c >= 0]
        w, h = int(warm[t]), int(m.holder[t])
        if spread(t, cv, w) or h < 0:
            continue
        # the covering standby (on the holder) stays: it is what the move waits on
        trial = first(t, cv, w, ([h] if w < 0 else []) + [c for c in by_load if c != h], {h})
        if trial is None and w >= 0 and h not in cv and m.want >= 2:
            # the warm-up gives way to a covering standby on the holder, beside one standby kept or placed anew
            for keep in cv:
                base = [h, keep] + [c for c in cv if c != keep][:m.want - 2]
                if len(base) == len(cv) and spread(t, base, -1):
                    trial = base
                    break
            if trial is None:
                trial = first(t, [h] + cv[1:], -1, by_load, {h})
            if trial is not None:
                warm[t] = -1
        if trial is None:
            continue
        new[t, :len(trial)] = trial
        changed += 1
    if not changed:
        return plan, 0
    return StreamsPlan(target=tg, active=act, warmup=warm, standby=round_standbys(m, tg, new), method=plan.method,
                       status="feasible", bound=plan.bound, extra=dict(plan.extra)), changed


# --------------------------------------------------------------------------- data

class _Data:
    """Candidate pairs and their costs."""

    def __init__(self, m: StreamsModel, hint: StreamsPlan | None):
        T, C = m.T, m.C
        self.full = T * C <= FULL_PAIRS
        if self.full:
            xt, xc = np.meshgrid(np.arange(T), np.arange(C), indexing="ij")
            xt, xc = xt.reshape(-1), xc.reshape(-1)
        else:
            parts_t = [m.cu_t, m.prev_t, m.state_t, m.held_t]
            parts_c = [m.cu_c, m.prev_c, m.state_c, m.held_c]
            if hint is not None:
                parts_t += [np.arange(T)]
                parts_c += [hint.target]
            sample_t, sample_c = _samples(m, np.arange(T), 2)
            parts_t.append(sample_t)
            parts_c.append(sample_c)
            key = np.unique(np.concatenate(parts_c) * T + np.concatenate(parts_t))
            xc, xt = key // T, key % T
        keys = xc * T + xt
        self.x_t, self.x_c = xt, xc
        self.x_move = m.constrained[xt] & ~in_sorted(keys, m.cu_keys)
        S = np.flatnonzero(m.stateful)
        if not m.want or not len(S):
            st = sc = np.zeros(0, dtype=np.int64)
        elif self.full:
            st, sc = np.meshgrid(S, np.arange(C), indexing="ij")
            st, sc = st.reshape(-1), sc.reshape(-1)
        else:
            parts_t = [xt[m.stateful[xt]], m.state_t, m.held_t]
            parts_c = [xc[m.stateful[xt]], m.state_c, m.held_c]
            if hint is not None:  # its converged standbys and this round's
                parts_t += [np.repeat(np.arange(T), m.want)] * 2
                parts_c += [plan_standbys(m, hint).reshape(-1), hint.standby.reshape(-1)]
            mv = np.flatnonzero(m.constrained & (m.holder >= 0))
            parts_t.append(mv)  # a holder's standby covers a movement
            parts_c.append(m.holder[mv])
            sample_t, sample_c = _samples(m, S, 2 + m.want)
            parts_t.append(sample_t)
            parts_c.append(sample_c)
            tt, cc_ = np.concatenate(parts_t), np.concatenate(parts_c)
            ok = (cc_ >= 0) & m.stateful[tt]
            key = np.unique(cc_[ok] * T + tt[ok])
            sc, st = key // T, key % T
        self.s_t, self.s_c = st, sc
        self.s_index = {(int(a), int(b)): j for j, (a, b) in enumerate(zip(st.tolist(), sc.tolist()))}
        tie = np.full(len(st), 2, dtype=np.int64)
        if len(st) and len(m.state_t):
            lookup = {(int(t), int(c)): int(v) for t, c, v in zip(m.state_t, m.state_c, m.state_tie)}
            tie = np.array([lookup.get((int(t), int(c)), 2) for t, c in zip(st.tolist(), sc.tolist())],
                           dtype=np.int64)
        self.s_tie = tie


def _samples(m: StreamsModel, tasks: np.ndarray, per_cell: int) -> tuple[np.ndarray, np.ndarray]:
    """For every task, ``per_cell`` clients of each (rack, tag combination) cell, rotating with the task."""
    M = len(m.combos)
    cellkey = m.cell * M + m.client_combo
    groups = _group_lists(np.unique(cellkey, return_inverse=True)[1], len(np.unique(cellkey)))
    ts, cs = [], []
    for members in groups:
        members = np.asarray(members, dtype=np.int64)
        n = len(members)
        for k in range(min(per_cell, n)):
            ts.append(tasks)
            cs.append(members[(tasks + k) % n])
    return np.concatenate(ts), np.concatenate(cs)


def _group_lists(keys: np.ndarray, n: int) -> list[list[int]]:
    out: list[list[int]] = [[] for _ in range(n)]
    for i, k in enumerate(np.asarray(keys).tolist()):
        out[k].append(i)
    return out





def _relaxed(m: StreamsModel) -> StreamsModel:
    """The same model without the move cap, and without tags unless one standby (what the flow can solve)."""
    import copy

    r = copy.copy(m)
    r.max_moves = None
    if m.want <= 1:
        return r
    r.tag_keys = ()
    r.combos = np.zeros((1, 0), dtype=np.int64)
    r.client_combo = np.zeros(m.C, dtype=np.int64)
    r.combo_count = np.array([m.C], dtype=np.int64)
    r.extra = m.extra
    return r


def _cost_max(m: StreamsModel) -> int:
    """An upper bound on the cost of any converged assignment (actives and standbys)."""
    act = m.act_cell.max(axis=1) + m.move_cost
    rep = m.rep_cell.max(axis=1) + m.noc
    return int((act + m.want * np.where(m.stateful, rep, 0)).sum())


def _best_spread(m: StreamsModel) -> tuple[np.ndarray, np.ndarray]:
    """The most distinct tag values (summed over keys) a task's active and standbys can cover.

    ``best[a]``: with the active on a client of combination ``a``;
    ``best2[a, b]``: the same with one more client, of combination ``b``, taken (by a warm-up).
    """
    M, K = m.combos.shape
    want = m.want
    if _n_multisets(M, want) > 200_000:
        raise StickyflowError(f"CP-SAT: too many tag combinations ({M}) to price tag spreading exactly")
    sets = [np.bincount(np.asarray(c, dtype=np.int64), minlength=M)
            for c in itertools.combinations_with_replacement(range(M), want)]
    counts = np.array(sets, dtype=np.int64).reshape(len(sets), M)
    # distinct values of each multiset together with each active combination
    scores = np.zeros((len(sets), M), dtype=np.int64)
    for i, cnt in enumerate(sets):
        members = np.flatnonzero(cnt)
        for a in range(M):
            chosen = np.concatenate([[a], members])
            scores[i, a] = sum(len({int(v) for v in m.combos[chosen, k]} - {-1}) for k in range(K))

    def best_for(avail: np.ndarray, a: int) -> int:
        ok = (counts <= avail[None, :]).all(axis=1)
        return int(scores[ok, a].max()) if ok.any() else -1

    best = np.zeros(M, dtype=np.int64)
    best2 = np.zeros((M, M), dtype=np.int64)
    for a in range(M):
        avail = m.combo_count - (np.arange(M) == a)
        best[a] = best_for(avail, a)
        for b in range(M):
            av2 = avail - (np.arange(M) == b)
            best2[a, b] = best_for(av2, a) if (av2 >= 0).all() else best[a]
    return best, np.minimum(best2, best[:, None])


def _n_multisets(M: int, k: int) -> int:
    from math import comb

    return comb(M + k - 1, k) if k else 1




def _add_hint(cm, m: StreamsModel, d: _Data, hint: StreamsPlan, x, s, w, z, r) -> None:
    tgt = hint.target
    for i in range(len(d.x_t)):
        cm.add_hint(x[i], bool(tgt[d.x_t[i]] == d.x_c[i]))
    conv = plan_standbys(m, hint)
    sb = {(int(t), int(c)) for t in range(m.T) for c in conv[t].tolist() if c >= 0}
    now = {(int(t), int(c)) for t in range(m.T) for c in hint.standby[t].tolist() if c >= 0}
    for j in range(len(d.s_t)):
        cm.add_hint(s[j], (int(d.s_t[j]), int(d.s_c[j])) in sb)
    for j, v in r.items():
        cm.add_hint(v, (int(d.s_t[j]), int(d.s_c[j])) in now)
    for i, v in w.items():
        cm.add_hint(v, bool(hint.warmup[d.x_t[i]] == d.x_c[i]))
    for i, (zv, j) in z.items():
        t = int(d.x_t[i])
        cm.add_hint(zv, bool(tgt[t] == d.x_c[i]) and (t, int(d.s_c[j])) in now)
