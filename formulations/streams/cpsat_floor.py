"""The least distance from **Balanced** the streams model allows, found from counts alone (issue 37).

CP-SAT's first stage minimizes the summed excess over **Balanced** (stateful actives, replicas, each
subtopology) over every (task, client) pair. Where tags and unequal threads leave no balanced assignment, its
bound stays far below what it finds: on a learner-mode application with two tag keys and clients of one and
four threads it found 14 and could not prove better than 5 after 400 deterministic seconds. So each round,
with a short budget, it settled on another excess (18, 14, 14, 18, 15, 18 over six rounds), aimed at another
target each time, and took more rounds and restorations than the greedy (seed 491707365 of
``tests/test_streams_convergence.py``).

Balance is about counts only: which task goes where does not change any count except through the tag rule
(a task's standbys spread around its target's tag values) and the subtopology and statefulness of the task.
So the same excess is minimized here over counts: ``a[c, g, k]`` tasks of group ``g`` (its subtopology under
``balance_subtopology``, else one group) and kind ``k`` (stateless, stateful) with their target on client
``c``; ``b[c]`` converged standbys on ``c``; and, with tags, ``n[a, S]`` stateful tasks whose target is on a
client of tag combination ``a`` and whose standbys take the multiset ``S`` of combinations, only where ``S``
spreads as far as the rule asks. Every assignment of the model has counts that solve this, so its least
excess is a lower bound (proven in a few hundredths of a second where the full model is not in minutes);
the counts that reach it, the nearest to what each client holds now, give a start that does (see
:func:`counts_start`), and the same counts round after round, since a round moves the holdings toward them
(the target holds across rounds).

>>> import stickyflow
>>> from stickyflow.formulations.streams.model import build_model
>>> snap = stickyflow.parse_snapshot({"format": "stickyflow.snapshot/1", "kind": "streams", "now_ms": 0,
...     "tasks": [{"id": f"0_{i}", "stateful": True} for i in range(3)],
...     "clients": [{"process_id": p, "threads": w, "previous_active": [], "previous_standby": []}
...                 for p, w in (("a", 1), ("b", 4))],
...     "config": {"num_standby_replicas": 1}})
>>> floor = excess_floor(build_model(snap))

Two clients and one standby: every task has a replica on each, 3 replicas a client, and the least count per
thread is 3 / 4, so the one-thread client may hold 1 by **Balanced**: no assignment is nearer than 2 over.
The counts that reach it put one active on ``a``, two on ``b``:

>>> floor.value, floor.proven, floor.active[:, 0, 1].tolist(), floor.standby.tolist()
(2, True, [1, 2], [2, 1])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stickyflow.errors import StickyflowError

from ..cpsat_backend import cp_model_module, short_solver
from .cpsat_data import CpsatData, group_lists, spread_table
from .cpsat_model import CpsatRules, CpsatVars, post_balanced, soft_counts
from .model import StreamsModel

__all__ = ["ExcessFloor", "excess_floor", "counts_start", "FLOOR_TIME", "START_TIME", "MAX_SPREAD_SETS"]

#: deterministic seconds, at most, for each of the counts model's two stages (the least excess, then the nearest
#: counts; the issue's application: both together in 0.13 s of wall time)
FLOOR_TIME = 0.5
#: deterministic seconds, at most, for the full model with its counts fixed to the floor's (a start for the
#: stages)
START_TIME = 1.0
#: with tags, at most this many (combination, standby multiset) variables; beyond, the tag rule is left out of
#: the counts model (still a lower bound, a weaker one)
MAX_SPREAD_SETS = 20_000


@dataclass(frozen=True, slots=True)
class ExcessFloor:
    """``value``: no assignment of the model is nearer to **Balanced** (summed excess); ``proven``: the counts
    model reached it (``active`` and ``standby`` are counts that do, else the nearest found); ``active[c, g, k]``:
    tasks of group ``g``, kind ``k`` (0 stateless, 1 stateful) with their target on client ``c``;
    ``standby[c]``: converged standbys on ``c``; ``found``: the excess of those counts; ``det_s``: the
    deterministic seconds the counts model took."""

    value: int
    proven: bool
    found: int
    active: np.ndarray
    standby: np.ndarray
    det_s: float = 0.0


def _groups(m: StreamsModel) -> tuple[np.ndarray, int]:
    """Each task's group (its subtopology under ``balance_subtopology``, else 0) and how many groups."""
    if m.sub_balance:
        return np.asarray(m.sub, dtype=np.int64), int(m.G)
    return np.zeros(m.T, dtype=np.int64), 1


def excess_floor(m: StreamsModel, *, seed: int = 0, time: float = FLOOR_TIME) -> ExcessFloor | None:
    """The least summed excess over **Balanced** any assignment of ``m`` can have, and counts nearest to what
    the clients hold now that reach it, each stage within ``time`` deterministic seconds; None where no count
    is soft (nothing to bound)."""
    soft = soft_counts(m)
    if not soft or not m.T or not m.C:
        return None
    cp_model = cp_model_module()
    cm = cp_model.CpModel()
    grp, G = _groups(m)
    kind = m.stateful.astype(np.int64)
    n = np.zeros((G, 2), dtype=np.int64)
    np.add.at(n, (grp, kind), 1)
    C = m.C
    a = {(c, g, k): cm.new_int_var(0, int(n[g, k]), f"a{c}_{g}_{k}")
         for c in range(C) for g in range(G) for k in range(2) if n[g, k]}
    for g in range(G):
        for k in range(2):
            if n[g, k]:
                cm.add(sum(a[c, g, k] for c in range(C)) == int(n[g, k]))

    def count(c: int, gs=None, ks=(0, 1)):
        terms = [a[c, g, k] for g in (range(G) if gs is None else gs) for k in ks if (c, g, k) in a]
        return sum(terms) if terms else 0

    loads = [count(c) for c in range(C)]
    post_balanced(cm, m, loads, "act")
    excess = []
    stf = [count(c, ks=(1,)) for c in range(C)]
    if "stateful" in soft:
        excess.append(post_balanced(cm, m, stf, "stf", soft=True))
    b = []
    S = int(m.stateful.sum())
    if "replicas" in soft and S:
        b = [cm.new_int_var(0, S, f"b{c}") for c in range(C)]
        cm.add(sum(b) == m.want * S)
        for c in range(C):
            cm.add(b[c] + stf[c] <= S)  # a task's standbys sit on distinct clients, none on its target
        _tag_counts(cm, m, stf, b)
        excess.append(post_balanced(cm, m, [loads[c] + b[c] for c in range(C)], "rep", soft=True))
    if "subtopology" in soft:
        for g in range(G):
            excess.append(post_balanced(cm, m, [count(c, gs=(g,)) for c in range(C)], f"sub{g}", soft=True))
    if not excess:
        return None
    total = sum(excess)
    solver = short_solver(cp_model, seed=seed, det_time=time)
    cm.minimize(total)
    st = solver.solve(cm)
    det = float(solver.response_proto.deterministic_time)
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    proven = st == cp_model.OPTIMAL
    found = int(round(solver.objective_value))
    value = found if proven else max(0, int(np.ceil(solver.best_objective_bound - 1e-6)))
    # among the counts that reach it, the nearest to what each client holds now (the previous owners and
    # standbys): the same counts come back round after round while the holdings move toward them
    held_a, held_b = _holdings(m, grp, G)
    dist = []
    for (c, g, k), v in a.items():
        dist.append(_abs(cm, v - int(held_a[c, g, k]), int(n[g, k])))
    for c, v in enumerate(b):
        dist.append(_abs(cm, v - int(held_b[c]), S))
    cm.add(total <= found)
    variables = [*a.values(), *b]
    counts = [int(solver.value(v)) for v in variables]
    for v, val in zip(variables, counts):
        cm.add_hint(v, val)
    cm.minimize(sum(dist))
    st2 = solver.solve(cm)
    det += float(solver.response_proto.deterministic_time)
    if st2 in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        counts = [int(solver.value(v)) for v in variables]
    active = np.zeros((C, G, 2), dtype=np.int64)
    for (c, g, k), v in zip(a, counts):
        active[c, g, k] = v
    standby = np.array(counts[len(a):] if b else [0] * C, dtype=np.int64)
    return ExcessFloor(value=value, proven=proven, found=found, active=active, standby=standby, det_s=det)


def _abs(cm, expr, hi: int):
    """A variable at least ``|expr|`` (minimized, exactly it)."""
    d = cm.new_int_var(0, hi, "")
    cm.add(d >= expr)
    cm.add(d >= -expr)
    return d


def _holdings(m: StreamsModel, grp: np.ndarray, G: int) -> tuple[np.ndarray, np.ndarray]:
    """What each client holds now, as the counts model counts it: previous actives per (client, group, kind),
    previous standbys of stateful tasks per client."""
    held_a = np.zeros((m.C, G, 2), dtype=np.int64)
    t = np.flatnonzero(m.owner >= 0)
    np.add.at(held_a, (m.owner[t], grp[t], m.stateful[t].astype(np.int64)), 1)
    keys = np.setdiff1d(m.held_keys, m.prev_keys)  # held in some role, not as active: standbys
    keys = keys[m.stateful[keys % m.T]]
    held_b = np.bincount(keys // m.T, minlength=m.C).astype(np.int64)
    return held_a, held_b


def _tag_counts(cm, m: StreamsModel, stf: list, b: list) -> None:
    """The tag rule over counts: the stateful tasks targeted on clients of combination ``a`` take standby
    multisets that spread as far as the rule asks, and the standbys on each combination add up."""
    M = len(m.combos)
    if not m.tag_keys or M <= 1:
        return
    try:
        sets, scores = spread_table(m)
    except StickyflowError:
        return  # too many combinations: the floor leaves the tag rule out (a weaker bound, still a bound)
    if M * len(sets) > MAX_SPREAD_SETS:
        return
    combo = m.client_combo
    on_combo = group_lists(combo, M)
    per_b: list[list] = [[] for _ in range(M)]
    for a_ in range(M):
        if not on_combo[a_]:
            continue
        avail = m.combo_count - (np.arange(M) == a_)
        fits = (sets <= avail[None, :]).all(axis=1)
        if not fits.any():
            continue
        best = int(scores[fits, a_].max())
        ok = np.flatnonzero(fits & (scores[:, a_] == best))
        hi = int(m.stateful.sum())
        ns = [cm.new_int_var(0, hi, f"n{a_}_{i}") for i in ok.tolist()]
        cm.add(sum(ns) == sum(stf[c] for c in on_combo[a_]))
        for v, i in zip(ns, ok.tolist()):
            for b_ in np.flatnonzero(sets[i]).tolist():
                per_b[b_].append(int(sets[i, b_]) * v)
    for b_ in range(M):
        if on_combo[b_]:
            cm.add(sum(b[c] for c in on_combo[b_]) == (sum(per_b[b_]) if per_b[b_] else 0))


def counts_start(cp_model, cm, m: StreamsModel, d: CpsatData, vs: CpsatVars, rules: CpsatRules, floor: ExcessFloor,
                 cost_expr, *, seed: int, time: float = START_TIME) -> tuple[list[int] | None, float]:
    """A solution of ``cm`` (every variable's value, by index) whose counts are the floor's, the cheapest found
    within ``time`` deterministic seconds, or None where none is found (candidate pairs only, or this round's
    tag rule); and the deterministic seconds taken."""
    grp, G = _groups(m)
    clone = cm.clone()
    kind = m.stateful.astype(np.int64)
    cells: dict[tuple[int, int, int], list] = {}
    for i, (t, c) in enumerate(zip(d.x_t.tolist(), d.x_c.tolist())):
        cells.setdefault((c, int(grp[t]), int(kind[t])), []).append(vs.x[i])
    for c in range(m.C):
        for g in range(G):
            for k in range(2):
                want = int(floor.active[c, g, k])
                terms = cells.get((c, g, k), [])
                if want > len(terms):
                    return None, 0.0
                if terms:
                    clone.add(sum(terms) == want)
    if m.want and len(vs.s):
        by_client = group_lists(d.s_c, m.C)
        for c in range(m.C):
            if by_client[c]:
                clone.add(sum(vs.s[j] for j in by_client[c]) == int(floor.standby[c]))
            elif floor.standby[c]:
                return None, 0.0
    clone.add(sum(rules.excess) <= floor.found)  # the excess variables at the counts' own (they only bound it)
    if not isinstance(cost_expr, int):
        clone.minimize(cost_expr)
    solver = short_solver(cp_model, seed=seed, det_time=time)
    st = solver.solve(clone)
    det = float(solver.response_proto.deterministic_time)
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None, det
    return list(solver.response_proto.solution), det
