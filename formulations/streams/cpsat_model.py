"""The streams CP-SAT model of :mod:`.cpsat`, posted: its variables, its constraints and its objective stages.

:func:`variables` makes the variables over :class:`.cpsat_data.CpsatData`'s pairs (:class:`CpsatVars`),
:func:`constraints` posts the rules (one role per pair, Balanced, tag spreading, the move cap) and gives back
what the objective reads (:class:`CpsatRules`), :func:`objective_stages` the lexicographic stages CP-SAT
minimizes one after the other. The notation is the module docstring's of :mod:`.cpsat`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from stickyflow.model.arrays import in_sorted

from .cpsat_data import CpsatData, best_spread, group_lists
from .model import StreamsModel
from .plan import StreamsPlan, plan_standbys

__all__ = ["CpsatVars", "CpsatRules", "variables", "constraints", "objective_stages", "post_balanced",
           "soft_counts"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CpsatVars:
    """The model's variables: ``x`` and ``s`` over the data's target and standby pairs, ``w`` (warm-ups) and
    ``z`` (covered movements, with their standby pair) by target pair, ``r`` (this round's standbys of a task
    that may move) by standby pair; ``mv_pairs`` the target pairs that are movements, ``mv_expr`` a task's
    movement (the sum of its ``x`` there), ``by_task_x`` the target pairs of each task."""

    x: list
    s: list
    w: dict
    z: dict
    r: dict
    mv_pairs: np.ndarray
    mv_expr: dict
    by_task_x: list

    def all(self) -> list:
        """Every Boolean variable, in the order the stages keep their values."""
        return self.x + self.s + list(self.w.values()) + [zv for zv, _ in self.z.values()] + list(self.r.values())


@dataclass(frozen=True, slots=True, kw_only=True)
class CpsatRules:
    """What the constraints leave for the objective: ``act`` what runs per (task, client), ``x_index`` the
    target pair of a (task, client), ``excess`` the soft Balanced distances, ``n_left`` the active tasks that
    leave their previous client, ``n_tag_vars`` how many tag variables were made."""

    act: dict
    x_index: dict
    excess: list
    n_left: Any
    n_tag_vars: int


def post_balanced(cm, m: StreamsModel, counts: list, name: str, soft: bool = False, at_hint=None):
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


def soft_counts(m: StreamsModel) -> tuple[str, ...]:
    """The counts whose distance from **Balanced** the excess stage minimizes (keys of
    :func:`.plan.count_excess`): stateful actives where some tasks are stateless, replicas with standbys, the
    subtopologies under ``balance_subtopology``. (Active tasks are a rule, not a distance.)"""
    keys = ["stateful"] if m.stateful.any() and (~m.stateful).any() else []
    if m.want:
        keys.append("replicas")
    if m.sub_balance:
        keys.append("subtopology")
    return tuple(keys)


def variables(cm, m: StreamsModel, d: CpsatData) -> CpsatVars:
    """Make the model's variables in ``cm`` (see :class:`CpsatVars`)."""
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
    return CpsatVars(x=x, s=s, w=w, z=z, r=r, mv_pairs=mv_pairs, mv_expr=mv_expr, by_task_x=by_task_x)


def constraints(cm, m: StreamsModel, d: CpsatData, vs: CpsatVars, hint: StreamsPlan | None,
                waiting_spread: bool) -> CpsatRules:
    """Post the rules: one role per pair, Balanced, tag spreading (``waiting_spread``: see
    :func:`.cpsat.solve_cpsat`), the move cap; ``hint`` the plan CP-SAT starts from (Balanced's counts)."""
    act, x_index = _roles(cm, m, d, vs)
    excess = _balance(cm, m, d, vs, hint)
    n_tag_vars = _tag_spread(cm, m, d, vs, act, waiting_spread)
    n_left = _move_cap(cm, m, act)
    return CpsatRules(act=act, x_index=x_index, excess=excess, n_left=n_left, n_tag_vars=n_tag_vars)


def _roles(cm, m: StreamsModel, d: CpsatData, vs: CpsatVars) -> tuple[dict, dict]:
    """One target per task, ``want`` standbys per stateful task, one role per (task, client); what runs per
    (task, client) and the target pair of each (task, client)."""
    x, s, w, z, r, mv_expr = vs.x, vs.s, vs.w, vs.z, vs.r, vs.mv_expr
    nx, ns, by_task_x = len(x), len(s), vs.by_task_x
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
    return act, x_index


def _balance(cm, m: StreamsModel, d: CpsatData, vs: CpsatVars, hint: StreamsPlan | None) -> list:
    """Balanced on the active tasks (a rule), and on the stateful actives, the replicas and each subtopology
    (the distances from it, returned)."""
    x, s = vs.x, vs.s
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

    post_balanced(cm, m, loads, "act", at_hint=at_hint())
    excess = []
    soft = soft_counts(m)
    if "stateful" in soft:
        excess.append(post_balanced(cm, m, [sum(x[i] for i in by_client_x[c] if m.stateful[d.x_t[i]])
                                        for c in range(m.C)], "stf", soft=True, at_hint=at_hint(m.stateful)))
    if "replicas" in soft:
        by_client_s = group_lists(d.s_c, m.C)
        excess.append(post_balanced(cm, m, [loads[c] + sum(s[j] for j in by_client_s[c]) for c in range(m.C)], "rep",
                                soft=True, at_hint=at_hint(replicas=True)))
    if "subtopology" in soft:
        cg = d.x_c * m.G + m.sub[d.x_t]
        groups = group_lists(cg, m.C * m.G)
        for g in range(m.G):
            excess.append(post_balanced(cm, m, [sum(x[i] for i in groups[c * m.G + g]) for c in range(m.C)], f"sub{g}",
                                    soft=True, at_hint=at_hint(m.sub == g)))
    return excess


def _tag_spread(cm, m: StreamsModel, d: CpsatData, vs: CpsatVars, act: dict, waiting_spread: bool) -> int:
    """Tag spreading (KIP-708), this round and once converged; how many tag variables it made."""
    x, s, w, z, r, mv_expr = vs.x, vs.s, vs.w, vs.z, vs.r, vs.mv_expr
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
    return n_tag_vars


def _move_cap(cm, m: StreamsModel, act: dict):
    """The active tasks that leave their previous client (an expression or an int), capped by ``max_moves``."""
    # active tasks that leave their previous client: capped by max_moves, and a tie-break below
    kept_prev = [act[(int(t), int(c))] for c, t in zip(m.prev_c.tolist(), m.prev_t.tolist()) if (int(t), int(c)) in act]
    n_left = int(m.had.sum()) - sum(kept_prev) if kept_prev else int(m.had.sum())
    if m.max_moves is not None:
        cm.add(n_left <= m.max_moves)
    return n_left


def objective_stages(cm, m: StreamsModel, d: CpsatData, vs: CpsatVars, rules: CpsatRules) -> list[tuple[str, Any]]:
    """The objective's stages, lexicographic: (name, expression) for the summed excess, the cost, the
    movements and the ties (an int where a stage is constant); the restoration indicators they need are made."""
    x, s, w, z, r, mv_expr = vs.x, vs.s, vs.w, vs.z, vs.r, vs.mv_expr
    ns, mv_pairs = len(s), vs.mv_pairs
    x_index, excess, n_left = rules.x_index, rules.excess, rules.n_left
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
    return stages
