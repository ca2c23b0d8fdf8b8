r"""The streams flow's pricing of replica balance: Lagrangian prices on the clients the relaxation overfills.

The floors ignore how many replicas a client may hold. When the bound leaves
a gap, :func:`replica_lagrangian` prices that in: one added to every replica
on the clients the relaxation overfills, the search again, less what the
price adds at full clients. Each such value is a bound too (a Lagrangian
relaxation) and each target a candidate answer. On small instances
:func:`replica_subgradient` goes on with finer, per-client prices.

    variables   one price per client (``lam``) on every replica it holds
    constraints none beyond the actives' boxes (:mod:`.actives`): the prices relax replica balance
    objective   the search's least flow value less what the prices add at full clients (a bound), its
                targets candidate answers; :func:`replica_repair` prices the clients a plan overfills
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from stickyflow.errors import InfeasibleError

from .actives import best_target
from .balance import balance_boxes, box_hull
from .model import StreamsModel
from .plan import StreamsPlan, replica_counts
from .standbys import free_standbys

__all__ = ["replica_lagrangian", "replica_subgradient", "replica_repair", "subgradient_steps", "small_instance",
           "LAGRANGIAN_STEPS", "SUBGRADIENT_STEPS", "SUBGRADIENT_PAIRS", "PRICE_UNITS", "REPAIR_STEPS"]

LAGRANGIAN_STEPS = 2  # rounds of pricing replica balance into the floors when the first bound leaves a gap
SUBGRADIENT_STEPS = 10  # ... then finer prices, on instances of up to SUBGRADIENT_PAIRS (task, client) pairs
SUBGRADIENT_PAIRS = 20_000
SUBGRADIENT_STEPS_LARGE = 4  # ... and above, where a step is about a second at 10,000 tasks x 1,000 clients
PRICE_UNITS = 4  # finer prices are multiples of a quarter
REPAIR_STEPS = 6  # steps a pass of pricing the clients a plan overfills (each adds twice what the last added)

def replica_lagrangian(m: StreamsModel, target: np.ndarray, steps: int = LAGRANGIAN_STEPS, gap_open=None,
                       spread: bool = True, floors: list | None = None) -> tuple[list[int], list[np.ndarray]]:
    """Lower bounds that price replica balance into the standby floors, and the targets found on the way.

    Every assignment balanced in replicas holds at most ``hi_c`` replicas per
    client (:func:`_replica_caps`), so for any ``lam >= 0`` the floor
    search with ``lam_c`` added to every replica on client ``c`` (active and
    standby), less ``sum(lam * hi)``, is a lower bound (a Lagrangian
    relaxation). ``lam`` is 1 on the clients the previous relaxation fills
    beyond ``hi`` (with its standbys where they are cheapest, capacities
    ignored: :func:`free_standbys`, ties ``spread`` or not), and stays 1 where
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
        count = np.bincount(target, minlength=m.C) + free_standbys(shifted, S, target, hi, spread)
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


def subgradient_steps(m: StreamsModel) -> int:
    """How many finer pricing steps (:func:`replica_subgradient`) an instance gets: each is one more search of
    the boxes and a candidate plan. Ten on groups small enough for CP-SAT to follow (milliseconds each; a proof
    spares CP-SAT's run, a cheaper plan is a better hint); four above, where a step is about a second at
    10,000 tasks x 1,000 clients (two flows a search since the hulls know their totals) and the four took the
    scale benchmark's `tags` cases from 0.87% and 1.07% to 0.63% and 0.66% (docs/streams.md, "Scale")."""
    return SUBGRADIENT_STEPS if small_instance(m) else SUBGRADIENT_STEPS_LARGE


def small_instance(m: StreamsModel) -> bool:
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
    count = np.bincount(target, minlength=m.C) + free_standbys(m, S, target, hi, spread=False)
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
        count = np.bincount(found[1], minlength=m.C) + free_standbys(shifted, S, found[1], hi, spread=False)
        new = np.maximum(0, lam + np.sign(count - hi))
        if (new == lam).all():
            break
        lam = new
    return values


def replica_repair(m: StreamsModel, plan: StreamsPlan, consider, done, steps: int = REPAIR_STEPS,
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
    stops once ``done()``, after ``steps`` steps a pass, and beyond small instances (:func:`small_instance`) after
    ``steps`` searches in all (at 10,000 tasks x 1,000 clients a search is about a second).

    On twenty small outages with two zones (60 tasks x 8 clients) the first target leaves eight plans
    unbalanced in replicas: the first pass alone balances four of them, the second alone seven, both all
    eight. At 10,000 x 1,000 (`rack_outage`, tags, seed 2) the first pass did it in four searches.
    """
    _, n, lo, hi = _replica_hull(m)
    values: list[int] = []
    first = plan
    searches = 2 * steps if small_instance(m) else steps
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
