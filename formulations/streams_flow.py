r"""The streams model of :mod:`.streams_common` as min-cost flows (OR-Tools ``SimpleMinCostFlow``).

**Actives** (the target). Every task sends one unit to a client. Balance is a
set of boxes, not a price: for one candidate least level of active tasks and
one of stateful active tasks (:func:`.streams_common.balance_boxes`) the
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
(:meth:`.streams_common.StreamsModel.movement_cost`, 0 where ``c`` is
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

The floors ignore how many replicas a client may hold. When the bound leaves
a gap, :func:`replica_lagrangian` prices that in: one added to every replica
on the clients the relaxation overfills, the search again, less what the
price adds at full clients. Each such value is a bound too (a Lagrangian
relaxation) and each target a candidate answer. On small instances
:func:`replica_subgradient` goes on with finer, per-client prices.

**Standbys**, given what runs: every stateful task sends ``want`` units to
clients other than its active one; a unit costs ``K1 * standby_cost(t, c) +
tie`` (``tie``: 0 where the client's state is caught up or the client is the
task's movement target, 1 where it lags, 2 where it has none) and each client
has soft bounds from a **Balanced** box of replicas (active + standby): units
below ``lo`` earn ``K2``, units above ``hi`` pay ``K2``, with ``K2`` above any
total cost, so replica balance comes first wherever it is reachable. With tags
(one standby per task) only clients whose tag values add the most distinct
values are reached. Small instances get one arc per (task, client); large ones
rack pools, whose units are then matched to clients so that no client holds two
roles of a task. **Warm-ups** go to the uncovered movements, cheapest first,
within the budget.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from stickyflow.check.streams import balance_excess
from stickyflow.errors import BackendMissingError, InfeasibleError, SolverFaultError
from stickyflow.model.arrays import nonzero_pairs

from .streams_common import (MAX_BOXES, StreamsModel, StreamsPlan, box_hull, choose_warmups, count_excess,
                             in_sorted, movements, replica_counts, round_standbys, target_cost, balance_boxes)

__all__ = ["solve_flow", "solve_actives", "solve_standbys", "standby_floor", "allowed_combos",
           "EXPLICIT_STANDBY_ARCS"]

EXPLICIT_STANDBY_ARCS = 400_000  # above this many (task, client) pairs the standby flow uses rack pools
MAX_EXPLICIT_STANDBY_ARCS = 4_000_000  # ... unless the pools fail, up to this many
LAGRANGIAN_STEPS = 2  # rounds of pricing replica balance into the floors when the first bound leaves a gap
SUBGRADIENT_STEPS = 10  # ... then finer prices, on instances of up to SUBGRADIENT_PAIRS (task, client) pairs
SUBGRADIENT_PAIRS = 20_000
SUBGRADIENT_STEPS_LARGE = 4  # ... and above, where a step is about a second at 10,000 tasks x 1,000 clients
PRICE_UNITS = 4  # finer prices are multiples of a quarter
REPAIR_STEPS = 6  # steps a pass of pricing the clients a plan overfills (each adds twice what the last added)


def _ortools():
    try:
        from ortools.graph.python import min_cost_flow
    except ImportError as exc:  # pragma: no cover
        raise BackendMissingError("OR-Tools is not installed: pip install ortools (a core dependency)") from exc
    return min_cost_flow


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
        values = _replica_repair(m, best[1], lambda target: consider(target, {**runs[-1][2], "repair": True}),
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
        for spread in (True, False) if _small(m) else (True,):
            if not gap_open([]):
                break
            values, lag_targets = replica_lagrangian(m, runs[-1][0].target, LAGRANGIAN_STEPS, gap_open, spread,
                                                     floors=floors)
            extra["lagrangian_values"] += values
            for target in lag_targets:
                consider(target, lag_info)
            extra["relaxation_values"] += values
        steps = _subgradient_steps(m)
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


def replica_lagrangian(m: StreamsModel, target: np.ndarray, steps: int = LAGRANGIAN_STEPS, gap_open=None,
                       spread: bool = True, floors: list | None = None) -> tuple[list[int], list[np.ndarray]]:
    """Lower bounds that price replica balance into the standby floors, and the targets found on the way.

    Every assignment balanced in replicas holds at most ``hi_c`` replicas per
    client (:func:`_replica_caps`), so for any ``lam >= 0`` the floor
    search with ``lam_c`` added to every replica on client ``c`` (active and
    standby), less ``sum(lam * hi)``, is a lower bound (a Lagrangian
    relaxation). ``lam`` is 1 on the clients the previous relaxation fills
    beyond ``hi`` (with its standbys where they are cheapest, capacities
    ignored: :func:`_free_standbys`, ties ``spread`` or not), and stays 1 where
    a client is still full; 0 elsewhere. The prices stay per rack cell: a cell
    splits by ``lam``. Stops after ``steps`` searches, when the prices settle,
    or when ``gap_open(values)`` says the values already prove the best plan
    so far. ``floors`` collects the movement floors of the values
    (:func:`_priced_search`).

    Spread ties make the bound: at 10,000 tasks x 1,000 clients the heaped
    counts put the standbys of a whole rack pool on one client (three clients
    with 664 to 894 replicas against a cap of 15), the prices went there, and
    each step lowered the bound; spread, the twelve scale cases' bound rose
    from 75,795 to 75,955 against plans of 76,422 (docs/streams.md, "Scale").
    Heaped counts still find other targets, which small instances try too.
    """
    S, hi = _replica_caps(m)
    lam = np.zeros(m.C, dtype=np.int64)
    values: list[int] = []
    targets: list[np.ndarray] = []
    shifted = m
    for _ in range(steps):
        count = np.bincount(target, minlength=m.C) + _free_standbys(shifted, S, target, hi, spread)
        new = ((count > hi) | ((lam > 0) & (count >= hi))).astype(np.int64)
        if not new.any() or (new == lam).all():
            break
        lam = new
        shifted = _shift_replicas(m, lam)
        found = _priced_search(shifted, int((lam * hi).sum()), floors=floors)
        if found is None:
            break
        values.append(found[0])
        targets.append(found[1])
        target = found[1]
        if gap_open is not None and not gap_open(values):
            break
    return values, targets


def _replica_caps(m: StreamsModel) -> tuple[np.ndarray, np.ndarray]:
    """The stateful tasks, and per client the most replicas (active + standby) any assignment balanced in
    replicas holds there: within a box ``(lo, hi)`` a client holds at most ``hi``, and at most what the
    others leave of the ``n`` replicas when each holds its ``lo``; the most over the boxes.

    That is tighter than the boxes' hull where ``n`` fills the boxes: 20,000 replicas on 1,000 one-thread
    clients lie in the boxes [20, 21] and [19, 20] (hull 21), yet every balanced count is exactly 20.

    >>> m = type("M", (), {"stateful": np.ones(4, bool), "T": 4, "want": 1, "threads": np.ones(4, np.int64),
    ...                    "bf": 1})()
    >>> _replica_caps(m)[1].tolist()   # 8 replicas on 4 clients: 2 each, not the hull's 3
    [2, 2, 2, 2]
    """
    S, _, _, hi = _replica_hull(m)
    return S, hi


def _replica_hull(m: StreamsModel) -> tuple[np.ndarray, int, np.ndarray, np.ndarray]:
    """The stateful tasks, the number of replicas, and per client the least and the most replicas any
    assignment balanced in replicas holds there (:func:`box_hull` of the replica boxes, given the total)."""
    S = np.flatnonzero(m.stateful)
    n = m.T + m.want * len(S)
    lo, hi = box_hull(balance_boxes(n, m.threads, m.bf), n)
    return S, n, lo, hi


def _priced_search(shifted: StreamsModel, constant: int, units: int = 1, floors: list | None = None
                   ) -> tuple[int, np.ndarray] | None:
    """The box search on ``shifted`` (costs times ``units``, replicas priced): a lower bound on the optimum
    (its value less the prices' ``constant``, e.g. ``sum(lam * hi)``, over ``units``, rounded up: costs are
    integers) and its relaxed target; None when the search finds nothing to bound.

    Where the value is exact (no rounding), a balanced plan that costs it prices the same in the relaxation,
    so it is one of the relaxation's optima and has at least the search's fewest movements among them: that
    pair, (value, movements), goes to ``floors`` (see :func:`best_target`)."""
    try:
        sol, b, info = best_target(shifted)
    except InfeasibleError:
        return None
    if b is None:
        return None
    value = -(-(int(b) - int(constant)) // units)
    lex = info.get("movement_floor")
    if floors is not None and lex is not None and lex[0] == b and (int(b) - int(constant)) % units == 0:
        floors.append((value, lex[1]))
    return value, sol.target


def _subgradient_steps(m: StreamsModel) -> int:
    """How many finer pricing steps (:func:`replica_subgradient`) an instance gets: each is one more search of
    the boxes and a candidate plan. Ten on groups small enough for CP-SAT to follow (milliseconds each; a proof
    spares CP-SAT's run, a cheaper plan is a better hint); four above, where a step is about a second at
    10,000 tasks x 1,000 clients (two flows a search since the hulls know their totals) and the four took the
    scale benchmark's `tags` cases from 0.87% and 1.07% to 0.63% and 0.66% (docs/streams.md, "Scale")."""
    return SUBGRADIENT_STEPS if _small(m) else SUBGRADIENT_STEPS_LARGE


def _small(m: StreamsModel) -> bool:
    """Up to :data:`SUBGRADIENT_PAIRS` (task, client) pairs: the instances CP-SAT follows."""
    return m.T * m.C <= SUBGRADIENT_PAIRS


def replica_subgradient(m: StreamsModel, target: np.ndarray, steps: int, consider, gap_open,
                        floors: list | None = None) -> list[int]:
    """Lower bounds from finer replica prices than :func:`replica_lagrangian`'s 0 or 1, and their targets.

    The same Lagrangian relaxation, with every cost times :data:`PRICE_UNITS`
    so that a price is a multiple of ``1 / PRICE_UNITS``: starting from zero
    prices and the relaxation's ``target``, each step raises the price of
    every client the relaxation fills beyond ``hi`` by one unit and lowers
    (never below 0) that of every client it leaves below ``hi`` (a
    subgradient step of constant size). Each value, divided
    by the units and rounded up (costs are integers), bounds the optimum;
    each target is handed to ``consider``. Stops after ``steps`` searches,
    when the prices settle, or when ``gap_open(values)`` says the best plan
    so far is proven. The counts are the heaped ones (``spread=False``):
    on 90 cases of 40 x 6 (ten seeds) the plans cost 1,863 from spread counts
    and 1,844 from heaped ones, at the same bound (1,834): what these steps
    find today is plans that reach the bound, not a higher bound.
    """
    K = PRICE_UNITS
    S, hi = _replica_caps(m)
    scaled = replace(m, act_cell=m.act_cell * K, rep_cell=m.rep_cell * K, move_cost=m.move_cost * K,
                     noc=m.noc * K, hold_cost=m.hold_cost * K, round_price=m.round_price * K)
    count = np.bincount(target, minlength=m.C) + _free_standbys(m, S, target, hi, spread=False)
    lam = np.maximum(0, np.sign(count - hi))
    values: list[int] = []
    for _ in range(steps if lam.any() else 0):
        shifted = _shift_replicas(scaled, lam)
        found = _priced_search(shifted, int((lam * hi).sum()), K, floors=floors)
        if found is None:
            break
        values.append(found[0])
        consider(found[1])
        if not gap_open(values):
            break
        count = np.bincount(found[1], minlength=m.C) + _free_standbys(shifted, S, found[1], hi, spread=False)
        new = np.maximum(0, lam + np.sign(count - hi))
        if (new == lam).all():
            break
        lam = new
    return values


def _replica_repair(m: StreamsModel, plan: StreamsPlan, consider, done, steps: int = REPAIR_STEPS,
                    floors: list | None = None) -> list[int]:
    """Targets for a plan balanced in every count but replicas, and the bounds found on the way.

    The standby flow keeps replica balance where the actives leave it room; where they do not (a movement
    across the values of a tag with two values keeps its standby on the holder: this round it sits on the
    target, the only client of the other value), the target must change. Each step prices every replica on
    the clients the plan fills beyond the most a balanced count holds there (:func:`box_hull` of the replica
    boxes) by 1, then 2, 4, ... more per step, searches the boxes with those prices (a Lagrangian value: a
    bound, as :func:`replica_lagrangian`'s) and hands the target to ``consider``. A second pass starts again
    and also rewards the clients left below the least a balanced count holds: the replicas' total is fixed,
    so rewards are prices on all the other clients, which keeps every cost of the search nonnegative. It
    stops once ``done()``, after ``steps`` steps a pass, and beyond small instances (:func:`_small`) after
    ``steps`` searches in all (at 10,000 tasks x 1,000 clients a search is about a second).

    On twenty small outages with two zones (60 tasks x 8 clients) the first target leaves eight plans
    unbalanced in replicas: the first pass alone balances four of them, the second alone seven, both all
    eight. At 10,000 x 1,000 (`rack_outage`, tags, seed 2) the first pass did it in four searches.
    """
    _, n, lo, hi = _replica_hull(m)
    values: list[int] = []
    first = plan
    searches = 2 * steps if _small(m) else steps
    for below in (False, True):
        price = np.zeros(m.C, dtype=np.int64)
        plan = first
        for step in range(steps):
            count = replica_counts(m, plan)
            off = np.sign(count - hi).clip(0, None)
            if below:
                off = off - np.sign(lo - count).clip(0, None)
            if not off.any() or len(values) >= searches:
                break
            price += (1 << step) * off
            k = max(0, -int(price.min()))  # the rewards, as prices on the others
            constant = k * n + int((price * np.where(price > 0, hi, lo)).sum())
            found = _priced_search(_shift_replicas(m, price + k), constant, floors=floors)
            if found is None:
                break
            values.append(found[0])
            plan = consider(found[1])
            if done():
                return values
    return values


def _shift_replicas(m: StreamsModel, lam: np.ndarray) -> StreamsModel:
    """``m`` with ``lam[c]`` added to the traffic of every replica on client ``c`` (cells split by ``lam``)."""
    vals, cls = np.unique(lam, return_inverse=True)
    V, R1 = len(vals), m.R + 1
    base = np.repeat(np.arange(R1), V)
    add = np.tile(vals, R1)[None, :]
    return replace(m, cell=m.cell * V + cls.reshape(-1), R=V * R1 - 1, act_cell=m.act_cell[:, base] + add,
                   rep_cell=m.rep_cell[:, base] + add)


def _free_standbys(m: StreamsModel, S: np.ndarray, target: np.ndarray, hi: np.ndarray, spread: bool = True
                   ) -> np.ndarray:
    """Standbys per client when each goes where it is cheapest for ``target``, capacities ignored
    (:func:`free_placement`); where the standby flow cannot place them (a rack pool too small), each at its
    cheapest held client."""
    placed = free_placement(m, S, target, hi, spread)
    if placed is not None:
        return np.bincount(placed[1], minlength=m.C)
    ht, hc = m.held_t, m.held_c
    ok = m.stateful[ht] & (hc != target[ht])
    ht, hc = ht[ok], hc[ok]
    price = m.standby_cost(ht, hc)
    o = np.lexsort((price, ht))
    ht, hc, price = ht[o], hc[o], price[o]
    first = np.r_[True, ht[1:] != ht[:-1]] if len(ht) else np.zeros(0, dtype=bool)
    ht, hc, price = ht[first], hc[first], price[first]
    fresh = (m.rep_cell + m.noc[:, None]).min(axis=1)
    return np.bincount(hc[price <= fresh[ht]], minlength=m.C)


def free_placement(m: StreamsModel, S: np.ndarray, target: np.ndarray, hi: np.ndarray, spread: bool = True
                   ) -> tuple[np.ndarray, np.ndarray] | None:
    """The converged standbys (task, client) of ``target``, each where it is cheapest, capacities ignored:
    the standby part of the relaxation that the replica prices correct, so its counts are what the prices
    follow. None where the standby flow cannot place them.

    What runs this round is the target, except a movement, which runs on its holder: tags spread around that
    (a standby on the holder, covering the movement, shows the target's values this round). Spread around the
    target instead, as before 2026-11-28, a cover looked like a second replica in the target's zone and was
    priced away: the counts were of a dearer placement than the floor's (on most small tagged instances), the
    prices went to the wrong clients, and the scale benchmark's `tags` cases stalled 1% to 2% below their
    plans (docs/streams.md, "Scale").

    With ``spread``, among the cheapest placements the one that fills clients least beyond ``hi`` (the
    replica caps): equally cheap clients (a rack pool's, above all) share the standbys instead of one of them
    taking the whole pool, which the prices would then read as one client overfilled by hundreds while the
    others have room. Without, ties fall where the flow leaves them (heaped).
    """
    top = hi if spread else np.full(m.C, m.T * (m.want + 1) + 1, dtype=np.int64)
    box = (np.zeros(m.C, dtype=np.int64), top)
    moving = movements(m, target)
    active = np.where(moving, m.holder, target)
    cls, allowed = allowed_combos(m, active)
    try:
        ts, cs, _, _ = _standby_flow(m, S, active, target, moving, cls, allowed,
                                     np.bincount(target, minlength=m.C), box, cost_first=True)
    except (SolverFaultError, InfeasibleError):  # a rack pool too small, or tags
        return None
    return ts, cs


def _counts_balanced(m: StreamsModel, plan: StreamsPlan) -> dict[str, bool]:
    """Which counts of the converged assignment (targets as actives) are Balanced."""
    return {k: v == 0 for k, v in count_excess(m, plan).items()}


def complete_plan(m: StreamsModel, target: np.ndarray) -> StreamsPlan:
    """What runs, standbys and warm-ups for a target."""
    moving = movements(m, target)
    active = np.where(moving, m.holder, target)
    standby = np.full((m.T, m.want), -1, dtype=np.int64)
    info: dict = {}
    if m.want:  # the converged standbys (away from the target), then this round's
        converged, info = solve_standbys(m, active, target, moving)
        standby = round_standbys(m, target, converged)
    covered = moving & (standby == target[:, None]).any(axis=1) if m.want else np.zeros(m.T, dtype=bool)
    warm = choose_warmups(m, target, moving & ~covered, active)
    info.update(movements=int(moving.sum()), covered_by_standby=int(covered.sum()), warmups=int((warm >= 0).sum()))
    return StreamsPlan(target=target, active=active, warmup=warm, standby=standby, method="flow",
                       status="optimal", extra=info)


# --------------------------------------------------------------------------- choosing the boxes

def _homogeneous_subtopologies(m: StreamsModel) -> bool:
    if not m.T:
        return True
    s = np.zeros(m.G, dtype=np.int64)
    n = np.bincount(m.sub, minlength=m.G)
    np.add.at(s, m.sub, m.stateful.astype(np.int64))
    return bool(((s == 0) | (s == n)).all())


def best_target(m: StreamsModel, max_flows: int = 40) -> tuple["ActiveSolution", int, dict]:
    """The cheapest balanced target (its standbys priced by the standby floor), and a proven lower bound.

    A best-first search over the balance boxes: a node fixes a box for some
    counts and relaxes the others to their hull; its flow value bounds every
    assignment below it. A node whose target is balanced in every relaxed
    count is a leaf; otherwise it branches on the first unbalanced count, one
    child per box. Counts other than active tasks yield (the leaf keeps its
    excess) where no box of theirs fits. The bound is the least value of the
    open nodes and the incumbent; it equals the incumbent when the search ends.
    """
    import heapq

    C, th, bf = m.C, m.threads, m.bf
    floor = standby_floor(m) if m.want else None
    use_stateful = bool(m.boxes_stateful) and m.stateful.any() and (~m.stateful).any() and \
        (not m.sub_balance or _homogeneous_subtopologies(m))
    counts = ["act"] + (["stf"] if use_stateful else []) + (["sub"] if m.sub_balance else [])
    sub_boxes = m.subtopology_boxes() if m.sub_balance else None
    options = {"act": m.boxes, "stf": m.boxes_stateful if use_stateful else [],
               "sub": [[b[0] for b in sub_boxes]] if sub_boxes else []}
    totals = {"act": m.T, "stf": int(m.stateful.sum())}
    hulls = {k: box_hull(v, totals[k]) for k, v in options.items() if v and k != "sub"}
    if sub_boxes:
        n_g = np.bincount(m.sub, minlength=m.G)
        hulls["sub"] = [box_hull(b, int(n_g[g])) for g, b in enumerate(sub_boxes)]
        # the product of the subtopologies' boxes is too many flows: the most even boxes, and (a relaxation
        # that keeps the bound true for the others) the hull of each subtopology's boxes
        if any(len(b) > 1 for b in sub_boxes):
            options["sub"].append(hulls["sub"])

    def excess_of(sol: ActiveSolution, k: str) -> int:
        tg = sol.target
        if k == "act":
            return balance_excess(np.bincount(tg, minlength=C), th, bf)
        if k == "stf":
            return balance_excess(np.bincount(tg[m.stateful], minlength=C), th, bf)
        return sum(balance_excess(np.bincount(tg[m.sub == g], minlength=C), th, bf) for g in range(m.G))

    flows = 0

    def run(choice: dict):
        nonlocal flows
        flows += 1
        # an unfixed count is off (only movements and cost speak), except active tasks: their hull
        box = {k: choice.get(k) for k in counts}
        box["act"] = choice.get("act", hulls["act"])
        try:
            return solve_actives(m, box["act"], box.get("stf"), box.get("sub"), floor)
        except InfeasibleError:
            return None

    root = run({})
    if root is None:
        root = run({"stf": None, "sub": None})
        if root is None:
            raise InfeasibleError("no target fits the balance boxes")
    # nodes ordered by (cost, movements): the cheapest first, then the fewest warm-up rounds
    heap = [((root.value, root.movements), 0, {}, root)]
    tick = 1
    best = None  # ((act excess > 0, other excess, value, movements), sol)
    loose: list[int] = []
    while heap:
        value, _, choice, sol = heapq.heappop(heap)
        if best is not None and best[0][1] == 0 and value >= best[0][2:]:
            heapq.heappush(heap, (value, _, choice, sol))  # keep it for the bound
            break
        exc = {k: excess_of(sol, k) for k in counts}
        if not exc["act"]:  # every node balanced in active tasks is a candidate, with its other excess
            key = (False, sum(exc.values()), *value)
            if best is None or key < best[0]:
                best = (key, sol)
        open_k = [k for k in counts if k not in choice and exc[k] > 0]
        if not open_k:
            if any(exc[k] > 0 and choice.get(k) is not None for k in choice):
                loose.append(value)  # a relaxed box (a hull) left unbalanced: its value still bounds its part
            continue
        if flows >= max_flows:
            heapq.heappush(heap, (value, tick, choice, sol))
            tick += 1
            break
        k = open_k[0]
        children = 0
        for box in options[k]:
            child = run({**choice, k: box})
            if child is not None:
                heapq.heappush(heap, ((child.value, child.movements), tick, {**choice, k: box}, child))
                tick += 1
                children += 1
        if not children and k == "act":  # active balance is the rule: the other counts yield to it
            relaxed = {k2: None for k2 in counts if k2 != "act"}
            for box in options[k]:
                child = run({**relaxed, k: box})
                if child is not None:
                    heapq.heappush(heap, ((child.value, child.movements), tick, {**relaxed, k: box}, child))
                    tick += 1
                    children += 1
            if not children:
                raise InfeasibleError("no target fits the balance boxes")
        elif not children:  # no box of this count fits: it yields, the others still count
            heapq.heappush(heap, (value, tick, {**choice, k: None}, sol))
            tick += 1
    if best is None:
        raise SolverFaultError("active flow: the search over the balance boxes found no target")
    key, sol = best
    if key[0]:
        raise SolverFaultError("active flow: no box gave a balanced target")
    # a bound on the cost of every assignment balanced in every count: the least value of the open nodes and of
    # the incumbent; only when no count's list of boxes was cut short (MAX_BOXES), else some were never tried
    complete = all(len(options[k]) < MAX_BOXES for k in counts if k != "sub") and \
        all(len(b) < MAX_BOXES for b in (sub_boxes or []))
    # ... and (cost, movements) lexicographically: the fewest movements any assignment of that cost can have
    # (a floor on movements only where the flows rank them before moved tasks: tie_weights' L above 1)
    lex = min([v for v, *_ in heap] + [key[2:]] + loose) if complete else None
    info = {"flows": flows, "balance_excess_flow": key[1]}
    if lex is not None and tie_weights(m, floor)[0] > 1:
        info["movement_floor"] = (int(lex[0]), int(lex[1]))
    return sol, None if lex is None else lex[0], info


# --------------------------------------------------------------------------- actives

@dataclass(frozen=True, slots=True, eq=False)
class ActiveSolution:
    """A target (client per task), its movements, and the flow's value (cost of the target with standby floors)."""

    target: np.ndarray
    movements: int
    value: int


def standby_floor(m: StreamsModel) -> "StandbyFloor":
    """What a task's ``want`` standbys cost at least, by where its active is (see :class:`StandbyFloor`)."""
    return StandbyFloor(m)


class StandbyFloor:
    """The least cost of ``want`` standbys of each stateful task on clients other than its active one.

    A standby on client ``c`` costs ``standby_cost(t, c)``: the changelog
    traffic of ``c``'s rack, plus ``noc[t]`` unless ``c`` held the task. Per
    task the clients form groups of equal price (the clients of a rack that did
    not hold it; each client that did); with ``S`` the sum of the ``want``
    cheapest units, ``p_w`` the price of the ``want``-th and ``p_n`` of the
    next, leaving out a client of price ``p`` costs ``S - p + p_n`` when ``p <=
    p_w``, else ``S``. ``cell[t, r]`` is the floor with the active on a client
    of rack ``r`` that did not hold the task; :meth:`pairs` gives it for any
    (task, client) pairs.

    Two refinements keep it a floor and make it tighter. A *movement* to a
    client that never held the task either keeps a standby on the holder,
    which this round covers the move from the target (the holder's own price
    among the ``want``; the restoration on the target is the movement's,
    priced with its way: :meth:`StreamsModel.movement_cost`), or leaves the
    holder out as well: the cheaper of the two. Where the holder's price
    is raised (replica prices, :func:`_shift_replicas`) the cover pays it:
    with a tag of two values, a movement across them has no other way.
    With one tag key of more values than a task has replicas, every replica
    has its own value (the spread rule), so the standbys avoid every client of
    the target's value, and a movement whose holder keeps no standby also
    avoids the holder's value (this round's replicas spread too), unless its
    standbys of this round are not its converged ones, which a waiting task's
    need not be: then the converged standbys may take the holder's value on
    another client of it (:func:`.streams_common.waiting_cost` prices the
    difference, at least 0).
    """

    def __init__(self, m: StreamsModel):
        self.m = m
        T, R1 = m.T, m.R + 1
        self.cell = np.zeros((T, R1), dtype=np.int64)
        self.S = np.zeros(T, dtype=np.int64)
        self.pw = np.zeros(T, dtype=np.int64)
        self.pn = np.zeros(T, dtype=np.int64)
        self.pn2 = np.zeros(T, dtype=np.int64)
        self.tag_value = None
        if not m.want or not T or not m.stateful.any():
            return
        n_r = np.bincount(m.cell, minlength=R1)
        hc = np.zeros((T, R1), dtype=np.int64)
        np.add.at(hc, (m.held_t, m.cell[m.held_c]), 1)
        price_free = m.rep_cell + m.noc[:, None]
        count_free = n_r[None, :] - hc
        # held entries, padded per task
        o = np.argsort(m.held_t, kind="stable")
        ht, hcl = m.held_t[o], m.held_c[o]
        k = np.bincount(ht, minlength=T)
        hmax = int(k.max()) if len(k) else 0
        P = np.full((T, R1 + hmax), np.iinfo(np.int64).max // 4, dtype=np.int64)
        N = np.zeros((T, R1 + hmax), dtype=np.int64)
        P[:, :R1] = price_free
        N[:, :R1] = count_free
        if len(ht):
            slot = np.arange(len(ht)) - np.repeat(np.cumsum(k) - k, k)
            P[ht, R1 + slot] = m.rep_cell[ht, m.cell[hcl]]
            N[ht, R1 + slot] = 1
        S, pw, pn, pn2 = _cheapest(P, N, m.want)
        st = m.stateful
        self.S = np.where(st, S, 0)
        self.pw = np.where(st, pw, 0)
        self.pn = np.where(st, pn, 0)
        self.pn2 = np.where(st, pn2, 0)
        cell = np.where(st[:, None], self._leave(np.arange(T)[:, None], price_free), 0)
        # a movement to a client that never held the task: either the holder keeps a converged standby, which
        # covers the move this round from the target (the restoration there is the movement's, priced with
        # its way: StreamsModel.movement_cost), or the standbys leave out the holder as well as the target
        moving = st & m.constrained & (m.holder >= 0)
        mv = np.flatnonzero(moving)
        holder_price = np.zeros(T, dtype=np.int64)  # a movement's standby on its holder (0 for the others)
        if len(mv):
            holder_price[mv] = m.standby_cost(mv, m.holder[mv])
            ph = holder_price[mv][:, None]
            both = self._leave2(mv[:, None], price_free[mv], ph)
            keep = cell[mv] + self._with(mv[:, None], price_free[mv], ph)
            cell[mv] = np.minimum(keep, both)
        if _tags_exclude_active_value(m):
            cell = np.maximum(cell, self._tagged(P, N, R1, moving, holder_price, ht, hcl,
                                                 slot if len(ht) else None))
        self.cell = cell

    def _tagged(self, P, N, R1, mv, ph, ht, hcl, slot) -> np.ndarray:
        """With one tag key of more values than replicas, every replica of a task has its own value (else a
        standby could move to an unused value: the spread rule), so the standbys avoid the target's value:
        the floor with every client of that value left out, per value (``tag_S``), and per rack cell the least
        over the values its clients have, a movement's cover priced as in :meth:`__init__` (``ph``: the price of
        a movement's standby on its holder)."""
        m = self.m
        T = m.T
        val = m.client_combo
        V = len(m.combos)
        self.tag_value = val
        self.tag_S = np.zeros((T, V), dtype=np.int64)
        n_rv = np.zeros((R1, V), dtype=np.int64)
        np.add.at(n_rv, (m.cell, val), 1)
        h_rv = np.zeros((T, R1, V), dtype=np.int64)
        np.add.at(h_rv, (m.held_t, m.cell[m.held_c], val[m.held_c]), 1)
        st = m.stateful
        hval = np.where(mv, val[np.maximum(m.holder, 0)], -1)
        big = np.iinfo(np.int64).max // 4
        out = np.full((T, R1), big, dtype=np.int64)
        n_all, h_all = n_rv.sum(axis=1)[None, :], h_rv.sum(axis=2)
        rows = np.arange(T)
        hv = np.maximum(hval, 0)
        for a in range(V):
            Na = N.copy()
            Na[:, :R1] = n_all - n_rv[:, a][None, :] - (h_all - h_rv[:, :, a])
            if slot is not None:
                Na[ht, R1 + slot] = (val[hcl] != a).astype(np.int64)
            S, pw, _, _ = _cheapest(P, Na, m.want)
            S = np.where(st, S, 0)
            self.tag_S[:, a] = S
            # a movement whose holder has another value: the holder keeps a standby (which covers the move; its
            # price in place of the dearest it displaces), or not, and then this round's replicas (the holder
            # active, the standbys) spread too, so the standbys avoid the holder's value as well as the target's
            # (unless the target's value has no other client: the warm-up there leaves it no free client),
            two = mv & (hval != a) & (m.combo_count[a] >= 2)
            Nb = Na.copy()
            Nb[:, :R1] -= np.where(two[:, None], n_rv[:, hv].T - h_rv[rows, :, hv], 0)
            if slot is not None:
                Nb[ht, R1 + slot] &= np.where(two[ht], val[hcl] != hval[ht], True).astype(np.int64)
            Sb, _, _, _ = _cheapest(P, Nb, m.want)
            Sb = np.where(Nb.sum(axis=1) >= m.want, Sb, big)  # too few clients left: the holder must keep one
            # or this round's standbys are not the converged ones (a waiting task's need not be): then the
            # converged ones may take the holder's value, on another client of it (where it has one: the
            # standbys of this round, on other clients or on the target, cover the holder's value now)
            other = np.where(m.combo_count[hv] >= 2, S, big)
            f = np.where(two, np.minimum(np.minimum(S + np.maximum(0, ph - pw), Sb), other), S)
            out = np.where(n_rv[:, a][None, :] > 0, np.minimum(out, f[:, None]), out)
        return np.where(out >= big, 0, out)

    def _with(self, t, p, q):
        """What the floor with a client of price ``p`` left out (:meth:`_leave`) costs more when it must keep
        one of price ``q`` (in the list): ``q`` less the dearest unit it displaces, where it is not taken anyway."""
        last = np.where(p <= self.pw[t], self.pn[t], self.pw[t])  # the want-th unit once p is left out
        return np.maximum(0, q - last)

    def upper(self) -> np.ndarray:
        """Per task, no floor is above this."""
        return self.cell.max(axis=1, initial=0)

    def _leave(self, t, p):
        return np.where(p <= self.pw[t], self.S[t] - p + self.pn[t], self.S[t])

    def _leave2(self, t, p, q):
        """The floor with two clients left out, of prices ``p`` and ``q`` (both in the task's list)."""
        a, b = np.minimum(p, q), np.maximum(p, q)
        S, pw, pn, pn2 = self.S[t], self.pw[t], self.pn[t], self.pn2[t]
        return np.where(a > pw, S, np.where(b > pn, S - a + pn, S - a - b + pn + pn2))

    def pairs(self, t: np.ndarray, c: np.ndarray) -> np.ndarray:
        m = self.m
        if not m.want or not len(t):
            return np.zeros(len(t), dtype=np.int64)
        p = m.standby_cost(t, c)
        out = np.where(m.stateful[t], self._leave(t, p), 0)
        if self.tag_value is not None:
            out = np.maximum(out, self.tag_S[t, self.tag_value[c]])
        return out


def _tags_exclude_active_value(m: StreamsModel) -> bool:
    """One tag key, every client with a value, more values than a task's replicas (and few enough to price
    one by one): then the spread rule gives every replica of a task its own value."""
    return len(m.tag_keys) == 1 and m.want > 0 and m.want + 1 <= len(m.combos) <= 16 and \
        bool((m.combos[:, 0] >= 0).all()) and m.T * (m.R + 1) * len(m.combos) <= 4_000_000


def _cheapest(P: np.ndarray, N: np.ndarray, w: int) -> tuple[np.ndarray, ...]:
    """Per row of prices ``P`` with counts ``N``: the sum of the ``w`` cheapest units, the price of the
    ``w``-th, of the next and of the one after (the last one present where there are fewer)."""
    order = np.argsort(P, axis=1, kind="stable")
    P = np.take_along_axis(P, order, axis=1)
    N = np.take_along_axis(N, order, axis=1)
    cum = np.cumsum(N, axis=1)
    take = np.clip(w - (cum - N), 0, N)
    S = (take * np.minimum(P, np.iinfo(np.int64).max // 8)).sum(axis=1)
    rows = np.arange(len(P))
    iw = np.argmax(cum >= w, axis=1)
    inn = np.argmax(cum >= w + 1, axis=1)
    pw = P[rows, iw]
    pn = np.where(cum[:, -1] >= w + 1, P[rows, inn], P[rows, iw])
    inn2 = np.argmax(cum >= w + 2, axis=1)
    pn2 = np.where(cum[:, -1] >= w + 2, P[rows, inn2], pn)
    return S, pw, pn, pn2


def solve_actives(m: StreamsModel, box1, box2, sub_boxes, floor: "StandbyFloor | None" = None
                  ) -> ActiveSolution:
    """The cheapest target inside the boxes (see the module docstring); InfeasibleError when none fits.

    ``box1``: (lo, hi) of active tasks per client; ``box2``: of stateful
    active tasks, or None; ``sub_boxes``: per subtopology (lo, hi), or None.
    ``floor`` prices the standbys each active leaves room for.
    """
    T, C = m.T, m.C
    L, K = tie_weights(m, floor)
    sub = sub_boxes is not None
    keyn = m.G if sub else 2
    key_t = m.sub if sub else m.stateful.astype(np.int64)
    if sub:
        g_state = np.zeros(m.G, dtype=np.int64)
        np.maximum.at(g_state, m.sub, m.stateful.astype(np.int64))
    cells, ccell = np.unique(m.cell, return_inverse=True)
    ccell = ccell.reshape(-1).astype(np.int64)
    ncell = len(cells)
    # nodes
    base_split = T                      # (c, s): 2C
    base_client = base_split + 2 * C
    base_entry = base_client + C        # (c, g) with subtopology boxes
    n_entry = C * m.G if sub else 0
    base_cell = base_entry + n_entry
    base_hub = base_cell + keyn * ncell
    sink = base_hub + keyn
    supplies = np.zeros(sink + 1, dtype=np.int64)
    supplies[:T] = 1
    supplies[sink] = -T

    def split(c, s):
        return base_split + 2 * c + s

    def entry(c, k):
        return base_entry + c * m.G + k if sub else split(c, k)

    arcs = _Arcs()

    def boxed(kind, tail, head, lo, hi):
        lo = np.asarray(lo, dtype=np.int64)
        hi = np.asarray(hi, dtype=np.int64)
        if (hi < lo).any():
            raise InfeasibleError("empty box")
        tail = np.broadcast_to(np.asarray(tail, dtype=np.int64), lo.shape)
        head = np.broadcast_to(np.asarray(head, dtype=np.int64), lo.shape)
        arcs.add(kind, tail, head, hi - lo, 0)
        np.subtract.at(supplies, tail, lo)
        np.add.at(supplies, head, lo)

    cc = np.arange(C)
    lo1, hi1 = box1
    boxed("client_sink", base_client + cc, sink, lo1, hi1)
    if box2 is not None:
        boxed("split1", split(cc, 1), base_client + cc, box2[0], box2[1])
    else:
        arcs.add("split1", split(cc, 1), base_client + cc, T, 0)
    arcs.add("split0", split(cc, 0), base_client + cc, T, 0)
    if sub:
        for g in range(m.G):
            lo, hi = sub_boxes[g]
            boxed("entry", entry(cc, g), split(cc, int(g_state[g])), lo, hi)
    kk, rr = np.meshgrid(np.arange(keyn), np.arange(ncell), indexing="ij")
    kk, rr = kk.reshape(-1), rr.reshape(-1)
    arcs.add("hub_cell", base_hub + kk, base_cell + kk * ncell + rr, T, 0)
    ck, cc2 = np.meshgrid(np.arange(keyn), cc, indexing="ij")
    ck, cc2 = ck.reshape(-1), cc2.reshape(-1)
    arcs.add("cell_entry", base_cell + ck * ncell + ccell[cc2], entry(cc2, ck), T, 0)

    # task arcs: explicit for the clients that held the task or are eligible for it, pools for the rest
    use_floor = floor is not None
    fl_cell = floor.cell[:, cells] if use_floor else 0
    mv = L * m.constrained.astype(np.int64) + m.had.astype(np.int64)  # a pool's client is never the previous one
    # a pool's client never held the task: for a constrained task it is a movement, priced with its way there
    way = np.zeros(T, dtype=np.int64)
    cons = np.flatnonzero(m.constrained)
    if len(cons):
        way[cons] = m.movement_cost(cons, np.full(len(cons), -1, dtype=np.int64))
    row = K * (m.act_cell[:, cells] + m.move_cost[:, None] + fl_cell + way[:, None]) + mv[:, None]
    hubcost = row.max(axis=1)
    tt = np.arange(T)
    arcs.add("task_hub", tt, base_hub + key_t, 1, hubcost)
    et, ec = nonzero_pairs(row < hubcost[:, None])
    arcs.add("task_cell", et, base_cell + key_t[et] * ncell + ec, 1, row[et, ec])
    xk = np.unique(np.concatenate([m.held_keys, m.cu_keys]))
    xc, xt = xk // T, xk % T
    elig = in_sorted(xk, m.cu_keys) | ~m.constrained[xt]
    xfl = floor.pairs(xt, xc) if use_floor else 0
    left = m.had[xt] & ~in_sorted(xk, m.prev_keys)
    xway = np.zeros(len(xt), dtype=np.int64)
    xmv = np.flatnonzero(~elig)
    xway[xmv] = m.movement_cost(xt[xmv], xc[xmv])
    xcost = K * (m.active_cost(xt, xc) + xfl + xway) + L * (~elig).astype(np.int64) + left.astype(np.int64)
    xhead = entry(xc, key_t[xt])
    arcs.add("task_client", xt, xhead, 1, xcost)

    out, total = arcs.solve(supplies)
    target = np.full(T, -1, dtype=np.int64)
    t_, h_, f_ = out["task_client"]
    used = f_ > 0
    target[t_[used]] = xc[used]
    t_, h_, f_ = out["task_cell"]
    direct = _group(h_[f_ > 0], t_[f_ > 0])
    t_, h_, f_ = out["task_hub"]
    via_hub = _group(h_[f_ > 0], t_[f_ > 0])
    per_cell = _pool_split(direct, via_hub, out["hub_cell"])
    t_, h_, f_ = out["cell_entry"]
    for cell_node, units in per_cell.items():
        sel = (t_ == cell_node) & (f_ > 0)
        slots = np.repeat(cc2[sel], f_[sel])  # cell_entry arcs are aligned with (ck, cc2)
        if len(slots) != len(units):
            raise SolverFaultError("active flow: a rack pool's inflow and outflow differ")
        target[units] = _spread_units(m, units, slots)
    if (target < 0).any():
        raise SolverFaultError("active flow: a task got no client")
    moving = movements(m, target)
    return ActiveSolution(target, int(moving.sum()), int(total // K))


def tie_weights(m: StreamsModel, floor: "StandbyFloor | None" = None) -> tuple[int, int]:
    """``(L, K)`` for a unit's price ``K * cost + L * [movement] + [the task leaves its previous client]``.

    Lexicographic where int64 allows it (``L = T + 1``, ``K = L * L``): the cost first (the spec), then the
    fewest movements (rounds of waiting), then the fewest active tasks that leave their client, so that among
    equal costs nothing moves for nothing (a stateless task under ``min_traffic`` costs 0 to move). Beyond
    int64, ``L = 1`` and ``K = 2 T + 1``: the cost still first, the two ties summed.
    """
    T = m.T
    act = m.act_cell.max(axis=1, initial=0) + m.move_cost + \
        np.where(m.constrained, 3 * m.noc + m.round_price, 0)  # the way
    rep = m.rep_cell.max(axis=1, initial=0) + m.noc
    extra = floor.upper() if floor is not None else 0
    upper = int((act + extra + (m.want + 1) * np.where(m.stateful, rep, 0)).sum()) + 1
    L = T + 1
    if upper * L * L < 2 ** 61:
        return L, L * L
    return 1, 2 * T + 1


def _spread_units(m: StreamsModel, units: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """Match a pool's tasks to its client slots (all of one rack, at one price to the flow), steering each task
    away from clients that held it (the flow priced it as a newcomer there) by a stable shuffle."""
    if len(units) <= 1:
        return slots
    keys = slots * m.T + units
    bad = in_sorted(keys, m.held_keys)
    if not bad.any():
        return slots
    slots = slots.copy()
    n = len(slots)
    for i in np.flatnonzero(bad).tolist():
        for step in (1, 2, 3, 5, 7):
            j = (i + step) % n
            a, b = int(units[i]), int(units[j])
            si, sj = int(slots[i]), int(slots[j])
            if si == sj:
                continue
            if not in_sorted([sj * m.T + a, si * m.T + b], m.held_keys).any():
                slots[i], slots[j] = sj, si
                break
    return slots

# --------------------------------------------------------------------------- building blocks

class _Arcs:
    """Arc arrays collected by kind, added to the solver in one call."""

    def __init__(self):
        self.parts: list[tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    def add(self, kind: str, tail, head, cap, cost) -> None:
        tail = np.asarray(tail, dtype=np.int64).reshape(-1)
        n = len(tail)
        head = np.broadcast_to(np.asarray(head, dtype=np.int64), (n,)) if np.ndim(head) == 0 else \
            np.asarray(head, dtype=np.int64).reshape(-1)
        cap = np.broadcast_to(np.asarray(cap, dtype=np.int64), (n,))
        cost = np.broadcast_to(np.asarray(cost, dtype=np.int64), (n,))
        self.parts.append((kind, tail, head, cap, cost))

    def solve(self, supplies: np.ndarray):
        """Solve; returns {kind: (tail, head, flow)} for every kind."""
        mcf = _ortools()
        f = mcf.SimpleMinCostFlow()
        tails = np.concatenate([p[1] for p in self.parts])
        heads = np.concatenate([p[2] for p in self.parts])
        caps = np.concatenate([p[3] for p in self.parts])
        costs = np.concatenate([p[4] for p in self.parts])
        arcs = f.add_arcs_with_capacity_and_unit_cost(tails, heads, caps, costs)
        f.set_nodes_supplies(np.arange(len(supplies)), supplies)
        status = f.solve()
        if status == f.INFEASIBLE:
            raise InfeasibleError("the flow has no feasible solution")
        if status != f.OPTIMAL:
            raise SolverFaultError(f"min-cost flow ended with status {status}")
        flows = f.flows(arcs)
        out = {}
        pos = 0
        for kind, tail, head, _, _ in self.parts:
            n = len(tail)
            prev = out.get(kind)
            chunk = (tail, head, flows[pos:pos + n])
            if prev is not None:
                chunk = tuple(np.concatenate([a, b]) for a, b in zip(prev, chunk))
            out[kind] = chunk
            pos += n
        return out, int(f.optimal_cost())


def _pool_split(units_direct: dict[int, np.ndarray], units_hub: dict[int, np.ndarray],
                hub_to_cell: tuple[np.ndarray, np.ndarray, np.ndarray]) -> dict[int, np.ndarray]:
    """Units (task ids, with repeats) arriving at each cell node: direct ones, then the hubs' shares."""
    cells: dict[int, list[np.ndarray]] = {k: [v] for k, v in units_direct.items()}
    tail, head, flow = hub_to_cell
    offset: dict[int, int] = {}
    for h, c, f in zip(tail.tolist(), head.tolist(), flow.tolist()):
        if f <= 0:
            continue
        units = units_hub.get(h)
        s = offset.get(h, 0)
        cells.setdefault(c, []).append(units[s:s + f])
        offset[h] = s + f
    return {k: np.concatenate(v) for k, v in cells.items()}


def _group(keys: np.ndarray, values: np.ndarray) -> dict[int, np.ndarray]:
    """``values`` grouped by ``keys`` (stable)."""
    if not len(keys):
        return {}
    order = np.argsort(keys, kind="stable")
    k, v = keys[order], values[order]
    cuts = np.flatnonzero(np.diff(k)) + 1
    starts = np.concatenate([[0], cuts])
    return {int(k[s]): part for s, part in zip(starts, np.split(v, cuts))}


def _interleaved_slots(clients: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Client slots in rounds (each client once per round while it has slots left), so neighbours differ."""
    keep = counts > 0
    clients, counts = clients[keep], counts[keep]
    if not len(clients):
        return np.zeros(0, dtype=np.int64)
    rep = np.repeat(clients, counts)
    rnd = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    order = np.lexsort((rep, rnd))
    return rep[order]




# --------------------------------------------------------------------------- standbys

def _weights(m: StreamsModel, n: int, cost_first: bool = False) -> tuple[int, int]:
    """(K1, K2): a unit of cost outweighs every tie (0 to 2 per standby), a replica out of its box every cost.

    With ``cost_first`` the box yields to the cost instead: a replica above its box (K2) outweighs every tie,
    a unit of cost every replica above its box, so the answer is a cheapest placement and, among those, the
    one that overfills least (the replica counts of a relaxation that ignores the boxes, ties spread)."""
    if cost_first:
        K2 = 2 * n + 1
        return K2 * (n + 1), K2
    K1 = 2 * n + 1
    top = int(m.rep_cell.max(initial=0)) + int(m.noc.max(initial=0))
    K2 = K1 * (top * n + 1) + 2 * n + 1
    return K1, K2


def solve_standbys(m: StreamsModel, active: np.ndarray, target: np.ndarray,
                   moving: np.ndarray) -> tuple[np.ndarray, dict]:
    """``want`` standbys per stateful task (T x want client array, -1 for stateless tasks) and stage info.

    These are the converged standbys: away from the target, a movement's holder preferred (its standby there
    covers the movement: this round it sits on the target). Tags (KIP-708) are spread around ``active``, what
    runs this round.

    Replica balance first (a soft box per client, tried over the hull of the
    replica boxes and, when that is not balanced, each box), then the cost.
    """
    S = np.flatnonzero(m.stateful)
    standby = np.full((m.T, m.want), -1, dtype=np.int64)
    if not len(S):
        return standby, {}
    cls, allowed = allowed_combos(m, active)
    act = np.bincount(target, minlength=m.C)  # the converged actives: replica balance is about convergence
    n_rep = m.T + m.want * len(S)
    boxes = balance_boxes(n_rep, m.threads, m.bf)
    tries = [box_hull(boxes)] + (boxes if len(boxes) > 1 else [])
    best = None
    for i, box in enumerate(tries):
        ts, cs, mode, repairs = _standby_flow(m, S, active, target, moving, cls, allowed, act, box)
        rep = act + np.bincount(cs, minlength=m.C)
        exc = balance_excess(rep, m.threads, m.bf)
        cost = int(m.standby_cost(ts, cs).sum())
        key = (exc, cost)
        if best is None or key < best[0]:
            best = (key, ts, cs, mode, repairs)
        if exc == 0 and i == 0:
            break
    (exc, _), ts, cs, mode, repairs = best
    order = np.lexsort((cs, ts))
    ts, cs = ts[order], cs[order]
    if len(ts) != m.want * len(S) or (np.bincount(ts, minlength=m.T)[S] != m.want).any():
        raise SolverFaultError("standby flow: wrong number of standbys")
    standby[S] = cs.reshape(len(S), m.want)
    return standby, {"standby_mode": mode, "standby_repairs": repairs, "replica_excess": int(exc)}


def _standby_flow(m, S, active, target, moving, cls, allowed, act, box, cost_first=False):
    if len(S) * m.C > EXPLICIT_STANDBY_ARCS:
        try:
            (ts, cs), repairs = _standbys_pooled(m, S, active, target, moving, cls, allowed, act, box, cost_first)
            return ts, cs, "pooled", repairs
        except SolverFaultError:  # a pool too small to avoid second roles: one arc per pair instead
            if len(S) * m.C > MAX_EXPLICIT_STANDBY_ARCS:
                raise
    ts, cs = _standbys_explicit(m, S, active, target, moving, cls, allowed, act, box, cost_first)
    return ts, cs, "explicit", 0


def _ties(m: StreamsModel, t: np.ndarray, c: np.ndarray, target: np.ndarray, moving: np.ndarray) -> np.ndarray:
    """0 where client c's state of task t is caught up or c is the holder of a movement (its standby there
    covers the movement: this round it sits on the target), 1 where it lags, 2 with none."""
    tie = np.full(len(t), 2, dtype=np.int64)
    if len(m.state_t) and len(t):
        skeys = m.state_c * m.T + m.state_t
        order = np.argsort(skeys)
        skeys, sties = skeys[order], m.state_tie[order]
        q = c * m.T + t
        pos = np.clip(np.searchsorted(skeys, q), 0, len(skeys) - 1)
        hit = skeys[pos] == q
        tie[hit] = sties[pos[hit]]
    if len(t):
        tie[moving[t] & (m.holder[t] == c)] = 0
    return tie


def _tag_combo(m: StreamsModel, t: np.ndarray, c: np.ndarray, target: np.ndarray, moving: np.ndarray
               ) -> np.ndarray:
    """The tag combination a standby of ``t`` on ``c`` shows this round: ``c``'s own, except on a movement's
    holder, whose standby sits on the target this round (the active runs on the holder)."""
    cov = moving[t] & (c == m.holder[t])
    return np.where(cov, m.client_combo[target[t]], m.client_combo[c])


def _sink_arcs(arcs: "_Arcs", m: StreamsModel, base_client: int, sink: int, act: np.ndarray, box, K2: int,
               big: int) -> None:
    """Client -> sink with the replica box as soft bounds: standbys below it earn K2, above it pay K2."""
    lo, hi = box
    need = np.maximum(lo - act, 0)
    room = np.maximum(hi - act + m.standby_slack, 0)
    clients = base_client + np.arange(m.C)
    arcs.add("client_need", clients, sink, need, -K2)
    arcs.add("client_room", clients, sink, np.maximum(room - need, 0), 0)
    arcs.add("client_over", clients, sink, big, K2)


def _standbys_explicit(m, S, active, target, moving, cls, allowed, act, box, cost_first=False):
    nS, C, T = len(S), m.C, m.T
    K1, K2 = _weights(m, nS * m.want, cost_first)
    ok_combo = _allowed_table(allowed, len(m.combos))
    si, cj = np.meshgrid(np.arange(nS), np.arange(C), indexing="ij")
    si, cj = si.reshape(-1), cj.reshape(-1)
    t = S[si]
    keep = (cj != target[t]) & ok_combo[cls[t], _tag_combo(m, t, cj, target, moving)]
    if m.tag_keys and moving.any():
        # a task that moves spreads its replicas around its target too (the converged assignment keeps the tag
        # rule), where that leaves it enough clients
        cls_t, allowed_t = allowed_combos(m, target)
        ok_t = _allowed_table(allowed_t, len(m.combos))
        both = keep & (~moving[t] | ok_t[cls_t[t], m.client_combo[cj]])
        enough = np.bincount(si[both], minlength=nS) >= m.want
        keep = np.where(enough[si], both, keep)
    si, cj, t = si[keep], cj[keep], t[keep]
    cost = K1 * m.standby_cost(t, cj) + _ties(m, t, cj, target, moving)
    base_client = nS
    sink = nS + C
    supplies = np.zeros(sink + 1, dtype=np.int64)
    supplies[:nS] = m.want
    supplies[sink] = -m.want * nS
    arcs = _Arcs()
    arcs.add("task_client", si, base_client + cj, 1, cost)
    _sink_arcs(arcs, m, base_client, sink, act, box, K2, m.want * nS + 1)
    out, _ = arcs.solve(supplies)
    t_, h_, f_ = out["task_client"]
    used = f_ > 0
    return S[t_[used]], h_[used] - base_client


def _standbys_pooled(m, S, active, target, moving, cls, allowed, act, box, cost_first=False):
    nS, C, T = len(S), m.C, m.T
    K1, K2 = _weights(m, nS * m.want, cost_first)
    M = len(m.combos)
    ok_now = _allowed_table(allowed, M)  # allowed around what runs this round
    converged = None
    if m.tag_keys and moving.any():
        # a task that moves spreads its replicas around its target too, where that leaves it enough clients
        # (as in _standbys_explicit): its pools are the combinations allowed both ways; its holder, whose
        # standby shows the target's combination this round, counts when it is allowed both ways
        cls_t, allowed_t = allowed_combos(m, target)
        ok_t = _allowed_table(allowed_t, M)
        rows = ok_now[cls[S]]
        both = rows & ok_t[cls_t[S]]
        h = np.maximum(m.holder[S], 0)
        holder_ok = moving[S] & (m.holder[S] >= 0) & ok_t[cls_t[S], m.client_combo[h]] & \
            ok_now[cls[S], m.client_combo[target[S]]]
        enough = both.astype(np.int64) @ m.combo_count + holder_ok >= m.want
        use = moving[S] & enough
        rows = np.where(use[:, None], both, rows)
        keys, inv = np.unique(rows, axis=0, return_inverse=True)
        cls_now, cls = cls, cls.copy()
        cls[S] = inv.reshape(-1)
        allowed = {i: np.flatnonzero(k) for i, k in enumerate(keys)}
        converged = np.zeros(T, dtype=bool)
        converged[S[use]] = True
    ckey = m.cell * M + m.client_combo
    cell_keys, client_cellpos = np.unique(ckey, return_inverse=True)
    client_cellpos = client_cellpos.reshape(-1)
    cell_rack, cell_combo = cell_keys // M, cell_keys % M
    n_cells = len(cell_keys)
    class_ids = sorted(allowed)
    class_pos = {a: i for i, a in enumerate(class_ids)}
    base_client = nS
    base_cell = base_client + C
    base_hub = base_cell + n_cells
    sink = base_hub + len(class_ids)
    spos = np.full(T, -1, dtype=np.int64)
    spos[S] = np.arange(nS)
    need = np.full(nS, m.want, dtype=np.int64)
    supplies = np.zeros(sink + 1, dtype=np.int64)
    supplies[:nS] = need
    supplies[sink] = -int(need.sum())
    arcs = _Arcs()
    big = int(need.sum()) + 1
    ok_cell = np.zeros((len(class_ids), n_cells), dtype=bool)
    for a in class_ids:
        ok_cell[class_pos[a], np.isin(cell_combo, allowed[a])] = True
    hh, hc = nonzero_pairs(ok_cell)
    arcs.add("hub_cell", base_hub + hh, base_cell + hc, big, 0)
    arcs.add("cell_client", base_cell + client_cellpos, base_client + np.arange(C), big, 0)
    _sink_arcs(arcs, m, base_client, sink, act, box, K2, big)
    # task -> hub (at the dearest rack), task -> cheaper cells (newcomers, no local state: a standby move);
    # task -> clients that held it or have local state for it, priced exactly
    tpos = np.array([class_pos[a] for a in cls[S].tolist()], dtype=np.int64)
    rows = m.rep_cell[S] + m.noc[S][:, None]
    hubmax = rows[:, np.unique(m.cell)].max(axis=1)
    arcs.add("task_hub", np.arange(nS), base_hub + tpos, need, K1 * hubmax + 2)
    cheaper = rows[:, cell_rack] < hubmax[:, None]
    et, ec = nonzero_pairs(cheaper & ok_cell[tpos])
    arcs.add("task_cell", et, base_cell + ec, need[et], K1 * rows[et, cell_rack[ec]] + 2)
    xk = np.unique(np.concatenate([m.state_c * T + m.state_t, m.held_keys,
                                   (m.holder * T + np.arange(T))[moving]]))
    xc, xt = xk // T, xk % T
    keep = m.stateful[xt] & (xc != target[xt])
    xt, xc = xt[keep], xc[keep]
    if converged is None:
        keep = ok_now[cls[xt], _tag_combo(m, xt, xc, target, moving)]
    else:  # this round around what runs (by the task's own class), once converged around the target
        keep = ok_now[cls_now[xt], _tag_combo(m, xt, xc, target, moving)] & \
            (~converged[xt] | ok_t[cls_t[xt], m.client_combo[xc]])
    xt, xc = xt[keep], xc[keep]
    arcs.add("task_client", spos[xt], base_client + xc, 1, K1 * m.standby_cost(xt, xc)
             + _ties(m, xt, xc, target, moving))
    out, _ = arcs.solve(supplies)

    t_, h_, f_ = out["task_client"]
    used = f_ > 0
    fixed_t, fixed_c = S[t_[used]], h_[used] - base_client
    t_, h_, f_ = out["task_cell"]
    direct = _group(np.repeat(h_, f_), np.repeat(S[t_], f_))
    t_, h_, f_ = out["task_hub"]
    via_hub = _group(np.repeat(h_, f_), np.repeat(S[t_], f_))
    per_cell = _pool_split(direct, via_hub, out["hub_cell"])
    t_, h_, f_ = out["cell_client"]
    cell_client_flow = _group(np.repeat(t_, f_), np.repeat(h_ - base_client, f_))
    holds: dict[int, dict[int, int]] = {}
    for t, c in zip(fixed_t.tolist(), fixed_c.tolist()):
        h = holds.setdefault(t, {})
        h[c] = h.get(c, 0) + 1
    pool_t: list[np.ndarray] = []
    pool_c: list[np.ndarray] = []
    repairs = 0
    for cell_node, units in per_cell.items():
        clients = cell_client_flow.get(cell_node, np.zeros(0, dtype=np.int64))
        cl, cnt = np.unique(clients, return_counts=True)
        slots = _interleaved_slots(cl, cnt)
        if len(slots) != len(units):
            raise SolverFaultError("standby flow: a pool's inflow and outflow differ")
        units = np.sort(units, kind="stable")
        n_fixed, slots = _match_pool(units, slots, target, holds)
        repairs += n_fixed
        pool_t.append(units)
        pool_c.append(slots)
    return (np.concatenate([fixed_t] + pool_t), np.concatenate([fixed_c] + pool_c)), repairs


def _allowed_table(allowed: dict[int, np.ndarray], n_combos: int) -> np.ndarray:
    """:func:`allowed_combos`' classes as a table: ``[class, combo]`` is True where the class allows it."""
    table = np.zeros((max(allowed) + 1, n_combos), dtype=bool)
    for a, combos in allowed.items():
        table[a, combos] = True
    return table


def allowed_combos(m: StreamsModel, active: np.ndarray) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    """Per task, the class of allowed standby tag combinations (one standby: those adding the most values).

    Returns (task -> class id, class id -> allowed combos). Without tags: one class, every combination.
    """
    M = len(m.combos)
    if not m.tag_keys:
        return np.zeros(m.T, dtype=np.int64), {0: np.arange(M)}
    ma = m.client_combo[active]
    classes: dict[int, np.ndarray] = {}
    for a in np.unique(ma).tolist():
        avail = m.combo_count - (np.arange(M) == a)
        score = np.zeros(M, dtype=np.int64)
        for k in range(m.combos.shape[1]):
            va, vb = m.combos[a, k], m.combos[:, k]
            score += (va >= 0).astype(np.int64) + ((vb >= 0) & (vb != va)).astype(np.int64)
        score = np.where(avail > 0, score, -1)
        classes[a] = np.flatnonzero(score == score.max())
    return ma, classes



def _match_pool(units: np.ndarray, slots: np.ndarray, active: np.ndarray,
                holds: dict[int, dict[int, int]]) -> tuple[int, np.ndarray]:
    """Match a pool's standby units to its client slots with no client holding two roles of a task.

    Every slot of a pool costs the same for every unit, so swapping two units'
    clients changes nothing but validity. ``holds`` (task -> client -> standbys
    of it there) is updated. Returns (swaps made, slots).
    """
    n = len(units)
    ul, sl = units.tolist(), slots.tolist()
    placed = [False] * n
    todo = []
    for i in range(n):
        t, c = ul[i], sl[i]
        mine = holds.setdefault(t, {})
        if c == active[t] or mine.get(c, 0):
            todo.append(i)
        else:
            mine[c] = 1
            placed[i] = True
    swaps = 0
    for i in todo:
        t, c = ul[i], sl[i]
        mine = holds[t]
        done = False
        for step in range(1, n):
            j = (i + step) % n
            u, d = ul[j], sl[j]
            theirs = holds[u]
            if not placed[j] or u == t or d == active[t] or mine.get(d, 0):
                continue  # j must be placed already, and d must be new for t
            if c == active[u] or theirs.get(c, 0):
                continue
            theirs[d] -= 1
            theirs[c] = theirs.get(c, 0) + 1
            mine[d] = mine.get(d, 0) + 1
            sl[i], sl[j] = d, c
            placed[i] = True
            swaps += 1
            done = True
            break
        if not done:
            raise SolverFaultError("standby flow: could not place a pooled standby without a second role "
                                   "(too few clients in a rack pool)")
    return swaps, np.asarray(sl, dtype=np.int64)
