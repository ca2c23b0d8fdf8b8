r"""The streams model of :mod:`.model` as min-cost flows (OR-Tools ``SimpleMinCostFlow``).

**Actives** (the target). Every task sends one unit to a client. Balance is a
set of boxes, not a price: for one candidate least level of active tasks and
one of stateful active tasks (:func:`.balance.balance_boxes`) the
client ``c`` takes between ``lo_c`` and ``hi_c`` tasks, of which between
``lo'_c`` and ``hi'_c`` stateful (a laminar family: task -> (client,
stateful?) -> client -> sink, lower bounds moved into the supplies), and under
``balance_subtopology`` each (client, subtopology) node sits below its
(client, stateful?) node with its own box. A unit costs

    K * (active_cost(t, c) + standby_floor(t, c) + way(t, c)) + L * [t constrained and c not eligible]
        + [t leaves its previous client]

where ``standby_floor(t, c)`` is what the task's ``want`` standbys cost at
least with the active on ``c`` (the ``want`` cheapest other clients, a held
one free of the standby move: these are the converged standbys, away from the
target), ``way(t, c)`` what a movement costs on its way
(:meth:`.model.StreamsModel.movement_cost`, 0 where ``c`` is
eligible; in learner mode with the round price, so that the fewest movements
come first), and the last two terms, together below one unit
of cost (:func:`tie_weights`), prefer among equal costs a target that can run
at once (no warm-up), then one that moves fewer tasks (a stateless task under
``min_traffic`` costs nothing to move, and must not move for nothing). The
cost depends on a client through its rack, except for the few
clients that held the task or are eligible for it, so the graph is compressed:
explicit arcs to those, one arc per rack cell cheaper than the dearest, one to
a hub reaching every cell; cells feed the clients.

The flow is solved first over the hull of the boxes (a relaxation): when its
target is balanced in every count it is optimal at once; otherwise once per
pair of boxes (active, stateful), and the cheapest balanced target wins
(balance in stateful tasks and subtopologies yields only where no box fits).
Every flow is a relaxation (standbys priced at their floor, or in the flow
with one role per client relaxed), so the least flow value over the open
boxes bounds the cost of every assignment balanced in every count: the
proven lower bound in ``solver.bound`` when the answer is itself balanced in
every count (then so is the optimum) and every box was tried. Under
``balance_subtopology`` the search tries the most even box of every
subtopology and, for the bound, the hull of each subtopology's boxes.

The floors ignore how many replicas a client may hold; when the bound leaves a gap, the pricing
(:mod:`.pricing`) prices that in. **Standbys** (:mod:`.standbys`) are placed given what runs, and
**warm-ups** go to the uncovered movements, cheapest first, within the budget. This module is the front of
the three: :func:`solve_flow` runs the actives' search (:mod:`.actives`), the pricing and the standbys, and
keeps the bound.
"""

from __future__ import annotations

import time

import numpy as np

from .actives import best_target
from .model import StreamsModel
from .plan import StreamsPlan, choose_warmups, count_excess, movements, round_standbys, target_cost
from .pricing import (LAGRANGIAN_STEPS, replica_lagrangian, replica_repair, replica_subgradient, small_instance,
                      subgradient_steps)
from .standbys import solve_standbys, unload_holders

__all__ = ["solve_flow", "complete_plan"]


def solve_flow(model: StreamsModel) -> StreamsPlan:
    """Solve ``model`` with the flows: actives over the balance boxes, standbys, warm-ups; with the bound."""
    m = model
    t0 = time.perf_counter()
    if not m.T or not m.C:
        empty = np.full(m.T, -1, dtype=np.int64)
        return StreamsPlan(target=empty, active=empty, warmup=empty.copy(),
                           standby=np.full((m.T, m.want), -1, dtype=np.int64), method="flow", status="optimal",
                           bound=0, extra={"movements": 0})
    # a relaxation, a proven bound and a target: standbys priced per task by where the active goes (the
    # standby floor, capacities relaxed); replica balance is priced in below (replica_lagrangian)
    runs = [best_target(m)]
    # (cost, fewest movements at that cost) of the searches that give one: what proves a plan with movements
    floors = [runs[0][2]["movement_floor"]] if "movement_floor" in runs[0][2] else []
    extra = {"t_actives": round(time.perf_counter() - t0, 4)}
    t1 = time.perf_counter()
    best = None
    targets = [(sol.target, info) for sol, _, info in runs]
    prev = m.owner
    if m.T and (prev >= 0).all():  # the flows' stages may miss it: never answer worse than keeping every task
        targets.append((prev, {**runs[0][2], "kept": True}))

    def consider(target, info):
        nonlocal best
        plan = complete_plan(m, target)
        balanced = _counts_balanced(m, plan)
        key = (not balanced["active"], sum(not v for v in balanced.values()), target_cost(m, plan),
               plan.extra["movements"], int((m.had & (target != prev)).sum()))
        if best is None or key < best[0]:
            best = (key, plan, balanced, info)
        return plan

    for target, info in targets:
        consider(target, info)
    # Each search's value bounds every assignment balanced in every count (its flows are relaxations), so the
    # larger is a proven bound on the optimum whenever the answer is balanced in every count (so the optimum is)
    extra["relaxation_values"] = [int(b) for _, b, _ in runs if b is not None]
    if m.want and best[0][1] == 1 and not best[2]["replicas"]:
        values = replica_repair(m, best[1], lambda target: consider(target, {**runs[-1][2], "repair": True}),
                                 lambda: not best[0][1], floors=floors)
        extra["repair_values"] = values
        extra["relaxation_values"] += values
    key0 = best[0]
    if m.want and m.stateful.any() and not key0[1] and max(extra["relaxation_values"], default=key0[2]) < key0[2]:
        # the floors ignore how many replicas a client may hold: price that in, and try the targets it gives
        lag_info = {**runs[-1][2], "lagrangian": True}

        def gap_open(more: list[int]) -> bool:  # the best plan is balanced and no bound reaches its cost
            return not best[0][1] and max(extra["relaxation_values"] + more) < best[0][2]

        extra["lagrangian_values"] = []
        # small instances take the steps again from heaped counts, for other prices and other targets
        for spread in (True, False) if small_instance(m) else (True,):
            if not gap_open([]):
                break
            values, lag_targets = replica_lagrangian(m, runs[-1][0].target, LAGRANGIAN_STEPS, gap_open, spread,
                                                     floors=floors)
            extra["lagrangian_values"] += values
            for target in lag_targets:
                consider(target, lag_info)
            extra["relaxation_values"] += values
        steps = subgradient_steps(m)
        if steps and gap_open([]):
            fine = replica_subgradient(m, runs[-1][0].target, steps, lambda target: consider(target, lag_info),
                                       gap_open, floors=floors)
            extra["subgradient_values"] = fine
            extra["relaxation_values"] += fine
    _, plan, balanced, info = best
    extra.update(info)
    extra["t_standbys"] = round(time.perf_counter() - t1, 4)
    tc = target_cost(m, plan)
    bound = None
    if all(balanced.values()):
        bound = max(extra["relaxation_values"], default=None)
        if tc == 0:
            bound = 0  # costs are never negative: 0 is its own proof
        elif bound is not None and bound > tc:  # a relaxation above a feasible answer: a fault, claim nothing
            extra["bound_fault"] = bound
            bound = None
    plan.bound = bound
    plan.status = "optimal" if bound is not None and bound == tc else "feasible"
    # "optimal" is about the fewest movements too (objective (3)): a plan that meets the bound in cost but has
    # movements is proven only where a search's own floor says no plan of that cost has fewer
    if plan.status == "optimal" and plan.extra["movements"] and not any(
            v == tc and mv >= plan.extra["movements"] for v, mv in floors):
        plan.status = "feasible"
        extra["movements_unproven"] = True
    plan.extra = {**extra, **plan.extra, "balanced_counts": balanced, "t_flow": round(time.perf_counter() - t0, 4)}
    return plan


def _counts_balanced(m: StreamsModel, plan: StreamsPlan) -> dict[str, bool]:
    """Which counts of the converged assignment (targets as actives) are Balanced."""
    return {k: v == 0 for k, v in count_excess(m, plan).items()}


def complete_plan(m: StreamsModel, target: np.ndarray) -> StreamsPlan:
    """What runs, standbys and warm-ups for a target."""
    moving = movements(m, target)
    active = np.where(moving, m.holder, target)
    standby = np.full((m.T, m.want), -1, dtype=np.int64)
    info: dict = {}
    unloaded = None
    if m.want:  # the converged standbys (away from the target), then this round's
        converged, info = solve_standbys(m, active, target, moving)
        standby = round_standbys(m, target, converged)
        unloaded = unload_holders(m, target, converged, moving)  # where a holder keeps too many, once converged
    covered = moving & (standby == target[:, None]).any(axis=1) if m.want else np.zeros(m.T, dtype=bool)
    warm = choose_warmups(m, target, moving & ~covered, active)
    info.update(movements=int(moving.sum()), covered_by_standby=int(covered.sum()), warmups=int((warm >= 0).sum()))
    return StreamsPlan(target=target, active=active, warmup=warm, standby=standby, method="flow",
                       status="optimal", extra=info, converged=unloaded)


# --------------------------------------------------------------------------- building blocks
