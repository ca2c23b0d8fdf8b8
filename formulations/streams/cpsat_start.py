"""The streams CP-SAT model's start: the hint (the flow's plan, or a valid repair of it, or the greedy's answer)
and whether it solves the model.

:func:`valid_start` gives a plan valid by every rule of the check (tag spread, the move cap); :func:`add_hint`
writes a plan into the model's variables (``x``, ``s``, ``w``, ``z``, ``r``) as CP-SAT's hint.
"""

from __future__ import annotations

import numpy as np

from stickyflow.errors import StickyflowError
from stickyflow.registry import SolveOptions

from ..cpsat_backend import short_solver
from .cpsat_data import CpsatData, best_spread
from .model import StreamsModel
from .plan import (StreamsPlan, count_excess, decision_plan, movements, plan_decision, plan_standbys, round_standbys,
                   target_cost)

__all__ = ["hint_solves", "valid_hint", "valid_start", "add_hint"]


def hint_solves(cp_model, cm, seed: int) -> bool:
    """Whether ``cm``'s hint is a solution of it: every hinted variable fixed to its hint, the others found by a
    short search on one worker (deterministic, and safe where the model has no solution)."""
    solver = short_solver(cp_model, seed=seed, det_time=0.25)
    solver.parameters.fix_variables_to_their_hinted_value = True
    return solver.solve(cm) in (cp_model.OPTIMAL, cp_model.FEASIBLE)


def valid_hint(m: StreamsModel, hint: StreamsPlan | None) -> StreamsPlan | None:
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


def valid_start(m: StreamsModel, hint: StreamsPlan, options: SolveOptions) -> tuple[StreamsPlan, str]:
    """The hint CP-SAT starts from when the flow's plan breaks a rule it relaxed: of the flow's plan with its
    standbys repaired (:func:`_tag_repaired`) and the greedy assignor's answer, the valid one with the least
    excess over **Balanced**, then the least cost (:func:`_start_key`); ``hint`` itself when neither is valid.
    Returns the plan and which it is."""
    starts = []
    repaired, _ = _tag_repaired(m, hint)
    if valid_hint(m, repaired) is not None:
        spread, _ = _converged_spread(m, repaired)
        if spread is not repaired and valid_hint(m, spread) is not None:
            repaired = spread
        starts.append((_start_key(m, repaired), 0, "flow, tags repaired", repaired))
    try:
        from stickyflow.registry import get_assignor

        answer = get_assignor("sticky", "streams").load()(m.snap, options)
        greedy = decision_plan(m, answer, method=answer.method)
    except StickyflowError:  # pragma: no cover - the greedy has no time limit and no solver to fail
        greedy = None
    if greedy is not None and valid_hint(m, greedy) is not None:
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
    best, best2 = best_spread(m)
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


def add_hint(cm, m: StreamsModel, d: CpsatData, hint: StreamsPlan, x, s, w, z, r) -> None:
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
