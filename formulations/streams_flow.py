r"""The streams model of :mod:`.streams_opt` as two min-cost flows (OR-Tools ``SimpleMinCostFlow``).

**Actives.** Every task sends one unit to a client; client ``c`` takes between
``lo_c`` and ``hi_c`` (lower bounds moved into the supplies), and with
``balance_subtopology`` every (client, subtopology) node between ``lo_cg`` and
``hi_cg`` first (a laminar family, so still a flow). A unit's cost is

    caught-up (or free) client c:   traffic * cross(t, rack c) + non_overlap * [c not a previous owner]
    any other client c:             W + cost of t on its holder (+ traffic * changelog cross of the
                                    warm-up on c)            (a *movement*; W outweighs every cost)

The cost depends on a client through its rack only, so the graph is
compressed: a task has explicit arcs to its previous owners or caught-up
clients, one arc per rack its partitions name (the rack pool), and one arc to a
hub reaching every rack at the cost of a rack its partitions do not name; pools
then feed the clients. About ``tasks x (named racks + caught-up clients + 1)``
arcs instead of ``tasks x clients``.

The bands of :func:`.streams_opt.balance_bands` are tried from the most even
while movements remain; the first with the fewest movements wins. Actives are
placed knowing where their standbys may go: a standby never shares its active's
client, so each cell also carries the standby traffic it leaves. Without tags
that is the ``want`` cheapest other clients, exact where there are no
movements (each task's standbys are then independent of the others'; it
decides the placement when every other client must hold a standby, as with
two clients and one standby). With tags (one standby per task) the pools are
(rack, tag combination) cells and every cell carries the cheapest standby its
tag rule leaves; when movements remain, a second target that prefers movements
whose target may hold a standby is tried too, and the plan with fewer
movements left uncovered (then lower cost) is kept.

**Standbys**, given what runs: first one on the target of every movement
whose tag rule allows it (it warms that client up without spending the warm-up
budget), then a flow: every stateful task sends its remaining units to clients
other than its active one; a unit costs ``K1 * traffic * changelog cross +
tie`` (``tie``: 0 where the client's state is caught up, 1 where it lags, 2
where it has none) and a client's units above ``cap_c`` cost ``K2`` more, with
``K1`` and ``K2`` making traffic, then balance, then ties lexicographic. With
tags (one standby per task) only clients whose tag values add the most distinct
values are reached. Small instances get one arc per (task, client): exact.
Large ones use rack pools, whose units are then matched to clients so that no
client holds two roles of a task (swaps inside a pool, where every client costs
the same).

**Bound.** The active flow without warm-up costs, each active cell priced
with the standbys it leaves room for as above (with tags, also at least the
plain active flow plus each standby on its task's cheapest rack), is a lower
bound on the cost of any valid assignment in the same band with as few
movements; when the solution reaches it, the status is ``optimal``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from stickyflow.errors import BackendMissingError, InfeasibleError, SolverFaultError

from .streams_opt import StreamsModel, StreamsPlan, choose_warmups, movements, plan_cost

__all__ = ["solve_flow", "solve_actives", "solve_standbys", "standby_lower_bound", "allowed_combos",
           "EXPLICIT_STANDBY_ARCS"]

EXPLICIT_STANDBY_ARCS = 400_000  # above this many (task, client) pairs the standby flow uses rack pools
MAX_EXPLICIT_STANDBY_ARCS = 4_000_000  # ... unless the pools fail, up to this many


def _ortools():
    try:
        from ortools.graph.python import min_cost_flow
    except ImportError as exc:  # pragma: no cover
        raise BackendMissingError("OR-Tools is not installed: pip install ortools (a core dependency)") from exc
    return min_cost_flow


def solve_flow(model: StreamsModel) -> StreamsPlan:
    """Solve ``model`` with the flows: actives, standbys, warm-ups; with the lower bound."""
    m = model
    t0 = time.perf_counter()
    extra: dict = {}
    if not m.T or not m.C:
        empty = np.full(m.T, -1, dtype=np.int64)
        return StreamsPlan(target=empty, active=empty, warmup=empty.copy(),
                           standby=np.full((m.T, m.want), -1, dtype=np.int64), method="flow", status="optimal",
                           bound=0, extra={"movements": 0})
    warm_matters = bool(m.rep_cell.any())
    # price each active with the standbys it leaves room for: with tags always (the tag rule depends on the
    # active), without tags when standbys cost traffic (they cannot share the active's client, which matters
    # most when every other client must hold one, e.g. 2 clients and a standby)
    aware = m.want > 0 and (bool(m.tag_keys) or warm_matters)
    # the most even band unless a looser one (still within balance_factor) needs fewer movements
    sols = []
    for rank, (lo, hi) in enumerate(m.bands):
        try:
            sols.append((solve_actives(m, lo, hi, warm_cross=warm_matters, standby_aware=aware), lo, hi, rank))
        except InfeasibleError:  # a subtopology band may not fit a client band
            continue
        if sols[-1][0].movements == 0:
            break
    if not sols:
        raise InfeasibleError("no balanced target fits the subtopology bands")
    sol, lo, hi, rank = min(sols, key=lambda s: (s[0].movements, s[3], s[0].cost))
    extra["band"] = rank
    m.extra["band"] = (lo, hi)
    candidates = [sol]
    if m.tag_keys and aware and sol.movements:
        # with tags a movement's target may be barred from holding a standby; also try the targets that
        # prefer coverage by a standby, and keep whichever leaves fewer movements uncovered, then costs less
        candidates.append(solve_actives(m, lo, hi, warm_cross=warm_matters, standby_aware=True, coverage=True))
    extra["t_actives"] = round(time.perf_counter() - t0, 4)

    t1 = time.perf_counter()
    best = None
    for cand in candidates:
        plan = _complete(m, cand.target)
        key = (plan.extra["movements"] - plan.extra["covered_by_standby"] - plan.extra["warmups"],
               plan_cost(m, plan))
        if best is None or key < best[0]:
            best = (key, plan)
    plan = best[1]
    extra["t_standbys"] = round(time.perf_counter() - t1, 4)

    # lower bounds among targets in this band with as few movements: actives without warm-up costs, priced
    # with the standbys each active allows (without tags this dominates the plain bound below), or plain
    # actives plus each standby's cheapest rack
    bound = 0
    if aware:
        bound = sol.cost if not (sol.movements and warm_matters) else \
            solve_actives(m, lo, hi, warm_cross=False, standby_aware=True).cost
    if not aware or m.tag_keys:
        lb_plain = sol.cost if not aware and not (sol.movements and warm_matters) else \
            solve_actives(m, lo, hi, warm_cross=False).cost
        bound = max(bound, lb_plain + standby_lower_bound(m))
    plan.bound = int(bound)
    plan.extra = {**extra, **plan.extra, "t_flow": round(time.perf_counter() - t0, 4)}
    return plan


def _complete(m: StreamsModel, target: np.ndarray) -> StreamsPlan:
    """What runs, standbys and warm-ups for a target."""
    moving = movements(m, target)
    active = np.where(moving, m.holder, target)
    standby = np.full((m.T, m.want), -1, dtype=np.int64)
    info: dict = {}
    if m.want:
        standby, info = solve_standbys(m, active, target, moving)
    covered = moving & (standby == target[:, None]).any(axis=1) if m.want else np.zeros(m.T, dtype=bool)
    warm = choose_warmups(m, target, moving & ~covered, active)
    info.update(movements=int(moving.sum()), covered_by_standby=int(covered.sum()), warmups=int((warm >= 0).sum()))
    return StreamsPlan(target=target, active=active, warmup=warm, standby=standby, method="flow",
                       status="optimal", extra=info)


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


# --------------------------------------------------------------------------- actives

@dataclass(frozen=True, slots=True, eq=False)
class ActiveSolution:
    """A target (client per task), its number of movements, and the cost of what runs (see solve_actives)."""

    target: np.ndarray
    movements: int
    cost: int


def solve_actives(m: StreamsModel, lo: np.ndarray, hi: np.ndarray, *, warm_cross: bool,
                  standby_aware: bool = False, coverage: bool = False) -> ActiveSolution:
    """The balanced target with the fewest movements, then the least cost.

    ``warm_cross``: count the warm-up's changelog traffic of every movement.
    ``standby_aware``: price every active cell with the standbys it leaves
    room for (capacities ignored), so that the cost is a lower bound on actives
    plus standbys: with tags, ``want`` times the cheapest standby cell its tag
    rule leaves; without tags, the ``want`` cheapest clients other than the
    active one (what the standby flow then pays, when no task moves).
    ``coverage`` (with tags): prefer, right after fewer movements, targets
    whose tag values let them hold a standby of the task (it warms them up
    without a warm-up).
    """
    T, C = m.T, m.C
    sub_balance = m.sub_lo is not None
    Gs = m.G if sub_balance else 1
    g_of_t = m.sub if sub_balance else np.zeros(T, dtype=np.int64)
    # cells: racks, or (rack, tag combination) pairs when the standbys' tag rule depends on the active
    if standby_aware:
        M = len(m.combos)
        keys, acell = np.unique(m.cell * M + m.client_combo, return_inverse=True)
        cell_rack, cell_combo = keys // M, keys % M
        if m.tag_keys:
            mins = _standby_min_by_combo(m)  # (T, M)
            act_rows = m.act_cell[:, cell_rack] + m.want * mins[:, cell_combo]
            client_aug = m.want * mins[:, m.client_combo]  # per (t, c), read on demand below
        else:
            least = _standby_least_by_cell(m)  # (T, R + 1); one combination, so cells are racks
            act_rows = m.act_cell[:, cell_rack] + least[:, cell_rack]
            client_aug = least[:, m.cell]
        aug_move = np.where(m.holder >= 0, client_aug[np.arange(T), np.maximum(m.holder, 0)], 0)
    else:
        keys, acell = np.unique(m.cell, return_inverse=True)
        cell_rack = keys
        act_rows = m.act_cell[:, cell_rack]
        aug_move = np.zeros(T, dtype=np.int64)
        client_aug = None
    acell = acell.reshape(-1).astype(np.int64)
    ncell = len(keys)
    base_client = T
    base_slot = base_client + C
    n_slot = C * Gs if sub_balance else 0
    base_cell = base_slot + n_slot
    base_hub = base_cell + Gs * ncell
    sink = base_hub + Gs
    supplies = np.zeros(sink + 1, dtype=np.int64)
    supplies[:T] = 1
    supplies[sink] -= T

    def slot(c, g):
        return base_slot + c * Gs + g if sub_balance else base_client + c

    def client_cost(t, c):
        cost = m.active_cost(t, c)
        return cost + client_aug[t, c] if client_aug is not None else cost

    arcs = _Arcs()
    # hub -> cell -> slot (-> client) -> sink
    gg, rr = np.meshgrid(np.arange(Gs), np.arange(ncell), indexing="ij")
    arcs.add("hub_cell", base_hub + gg.reshape(-1), base_cell + gg.reshape(-1) * ncell + rr.reshape(-1), T, 0)
    cc, g2 = np.meshgrid(np.arange(C), np.arange(Gs), indexing="ij")
    cc, g2 = cc.reshape(-1), g2.reshape(-1)
    arcs.add("cell_slot", base_cell + g2 * ncell + acell[cc], slot(cc, g2), T, 0)
    if sub_balance:
        lo_cg, hi_cg = m.sub_lo.reshape(-1), m.sub_hi.reshape(-1)  # (C, G) row-major = c * G + g
        arcs.add("slot_client", slot(cc, g2), base_client + cc, hi_cg - lo_cg, 0)
        np.subtract.at(supplies, slot(cc, g2), lo_cg)
        np.add.at(supplies, base_client + cc, lo_cg)
    arcs.add("client_sink", base_client + np.arange(C), sink, hi - lo, 0)
    supplies[base_client:base_client + C] -= lo
    supplies[sink] += int(lo.sum())

    # task arcs
    k = m.constrained
    row_free = act_rows + m.move_cost[:, None]
    row_move = (m.hold_cost + aug_move)[:, None] + (m.rep_cell[:, cell_rack] if warm_cross else 0)
    row_move = np.broadcast_to(row_move, (T, ncell))
    span = np.where(k, row_move.max(axis=1), row_free.max(axis=1))
    if len(m.cu_t):
        span = np.maximum(span, np.bincount(m.cu_t, weights=client_cost(m.cu_t, m.cu_c), minlength=T))
    W = 1 + int(span.sum())
    if coverage and standby_aware and k.any():
        # a movement whose target the tag rule keeps from holding a standby needs a warm-up: dearer
        _, allowed = allowed_combos(m, m.holder[k])
        ok = np.zeros((len(m.combos), len(m.combos)), dtype=bool)
        for a, combos in allowed.items():
            ok[a, combos] = True
        hold_combo = m.client_combo[np.maximum(m.holder, 0)]
        uncoverable = ~ok[hold_combo[:, None], cell_combo[None, :]]
        row_move = row_move + W * uncoverable
        W = W + W * int(k.sum())
    row = np.where(k[:, None], W + row_move, row_free)
    hubcost = row.max(axis=1)
    tt = np.arange(T)
    arcs.add("task_hub", tt, base_hub + g_of_t, 1, hubcost)
    et, ec = np.nonzero(row < hubcost[:, None])
    arcs.add("task_cell", et, base_cell + g_of_t[et] * ncell + ec, 1, row[et, ec])
    free_prev = ~k[m.prev_t]
    pt, pc = m.prev_t[free_prev], m.prev_c[free_prev]
    xt = np.concatenate([pt, m.cu_t])
    xc = np.concatenate([pc, m.cu_c])
    if len(xt):
        key = np.unique(xc * T + xt)
        xc, xt = key // T, key % T
    arcs.add("task_client", xt, slot(xc, g_of_t[xt]), 1, client_cost(xt, xc))

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
    t_, h_, f_ = out["cell_slot"]
    for cell_node, units in per_cell.items():
        sel = (t_ == cell_node) & (f_ > 0)
        slots = np.repeat(cc[sel], f_[sel])  # cell_slot arcs are aligned with (cc, g2)
        if len(slots) != len(units):
            raise SolverFaultError("active flow: a rack pool's inflow and outflow differ")
        target[units] = slots
    if (target < 0).any():
        raise SolverFaultError("active flow: a task got no client")
    moving = movements(m, target)
    n_moving = int(moving.sum())
    t = np.arange(T)
    cost_free = client_cost(t[~moving], target[~moving]).sum()
    cost_move = (m.hold_cost + aug_move)[moving].sum()
    if warm_cross:
        cost_move += m.replica_cost(t[moving], target[moving]).sum()
    cost = int(cost_free + cost_move)
    if W * n_moving + cost > total and not coverage:
        raise SolverFaultError("active flow: the decoded assignment costs more than the flow")
    return ActiveSolution(target, n_moving, cost)


def _standby_min_by_combo(m: StreamsModel) -> np.ndarray:
    """(T, M): for an active of tag combination ``a``, the cheapest changelog traffic of one standby of
    each task on a client whose combination the tag rule allows (0 for stateless tasks)."""
    M = len(m.combos)
    out = np.zeros((m.T, M), dtype=np.int64)
    for a in range(M):
        _, allowed = allowed_combos(m, np.array([_first_client(m, a)]))
        racks = np.unique(m.cell[np.isin(m.client_combo, allowed[a])])
        out[:, a] = m.rep_cell[:, racks].min(axis=1) if len(racks) else 0
    return np.where(m.stateful[:, None], out, 0)


def _standby_least_by_cell(m: StreamsModel) -> np.ndarray:
    """(T, R + 1): for an active on a client of cell ``r``, the least changelog traffic of the task's
    ``want`` standbys on the other clients (capacities ignored; 0 for stateless tasks)."""
    n = np.bincount(m.cell, minlength=m.R + 1)
    out = np.zeros((m.T, m.R + 1), dtype=np.int64)
    if not m.want or not m.T:
        return out
    order = np.argsort(m.rep_cell, axis=1, kind="stable")
    cost = np.take_along_axis(m.rep_cell, order, axis=1)
    for r in np.flatnonzero(n).tolist():
        avail = (n - (np.arange(m.R + 1) == r))[order]       # clients per cell, cheapest cell first
        before = np.cumsum(avail, axis=1) - avail
        take = np.clip(m.want - before, 0, avail)              # want <= clients - 1: always enough
        out[:, r] = (take * cost).sum(axis=1)
    return np.where(m.stateful[:, None], out, 0)


def _first_client(m: StreamsModel, combo: int) -> int:
    return int(np.flatnonzero(m.client_combo == combo)[0])


# --------------------------------------------------------------------------- standbys

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


def standby_lower_bound(m: StreamsModel) -> int:
    """The least standby traffic any valid assignment pays: each standby on its task's cheapest rack."""
    S = np.flatnonzero(m.stateful)
    if not len(S) or not m.rep_cell.any():
        return 0
    present = np.unique(m.cell)
    return int(m.want * m.rep_cell[S][:, present].min(axis=1).sum())


def _weights(m: StreamsModel) -> tuple[int, int]:
    """(K1, K2): a unit of traffic outweighs every overflow, an overflow every tie (0 / 1 / 2 per standby)."""
    n = m.want * int(m.stateful.sum())
    K2 = 2 * n + 1
    return K2 * (n + 1), K2


def solve_standbys(m: StreamsModel, active: np.ndarray, target: np.ndarray,
                   moving: np.ndarray) -> tuple[np.ndarray, dict]:
    """``want`` standbys per stateful task (T x want client array, -1 for stateless tasks) and stage info.

    First a standby on the target of every movement whose tag rule allows it
    (it warms the target up without a warm-up), then a flow for the rest.
    """
    S = np.flatnonzero(m.stateful)
    standby = np.full((m.T, m.want), -1, dtype=np.int64)
    if not len(S):
        return standby, {}
    cls, allowed = allowed_combos(m, active)
    mv = np.flatnonzero(moving)
    if len(mv):
        ok = np.array([m.client_combo[target[t]] in allowed[cls[t]] for t in mv.tolist()], dtype=bool)
        mv = mv[ok]
    pre_t, pre_c = mv, target[mv]
    mode, repairs = "explicit", 0
    if len(S) * m.C > EXPLICIT_STANDBY_ARCS:
        try:
            (ts, cs), repairs = _standbys_pooled(m, S, active, cls, allowed, pre_t, pre_c)
            mode = "pooled"
        except SolverFaultError:  # a pool too small to avoid second roles: one arc per pair instead
            if len(S) * m.C > MAX_EXPLICIT_STANDBY_ARCS:
                raise
    if mode == "explicit":
        ts, cs = _standbys_explicit(m, S, active, cls, allowed, pre_t, pre_c)
    ts = np.concatenate([ts, pre_t])
    cs = np.concatenate([cs, pre_c])
    order = np.lexsort((cs, ts))
    ts, cs = ts[order], cs[order]
    if len(ts) != m.want * len(S) or (np.bincount(ts, minlength=m.T)[S] != m.want).any():
        raise SolverFaultError("standby flow: wrong number of standbys")
    standby[S] = cs.reshape(len(S), m.want)
    cap = m.standby_cap(m.standby_slack)
    over = int(np.maximum(np.bincount(cs, minlength=m.C) - cap, 0).sum())
    return standby, {"standby_mode": mode, "standby_repairs": repairs, "standby_overflow": over,
                     "covered_by_standby": int(len(pre_t))}


def _ties(m: StreamsModel, t: np.ndarray, c: np.ndarray) -> np.ndarray:
    """0 where client c's state of task t is caught up, 1 where it lags, 2 where it has none."""
    tie = np.full(len(t), 2, dtype=np.int64)
    if len(m.state_t) and len(t):
        skeys = m.state_c * m.T + m.state_t
        order = np.argsort(skeys)
        skeys, sties = skeys[order], m.state_tie[order]
        q = c * m.T + t
        pos = np.clip(np.searchsorted(skeys, q), 0, len(skeys) - 1)
        hit = skeys[pos] == q
        tie[hit] = sties[pos[hit]]
    return tie


def _sink_arcs(arcs: "_Arcs", m: StreamsModel, base_client: int, sink: int, pre_c: np.ndarray, K2: int) -> None:
    """Client -> sink: free up to the capacity left after the pre-placed standbys, then at K2 per standby."""
    cap = m.standby_cap(m.standby_slack) - np.bincount(pre_c, minlength=m.C)
    clients = base_client + np.arange(m.C)
    big = m.want * int(m.stateful.sum()) + 1
    arcs.add("client_sink", clients, sink, np.maximum(cap, 0), 0)
    arcs.add("client_over", clients, sink, big, K2)


def _standbys_explicit(m: StreamsModel, S: np.ndarray, active: np.ndarray, cls: np.ndarray,
                       allowed: dict[int, np.ndarray], pre_t: np.ndarray, pre_c: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
    nS, C, T = len(S), m.C, m.T
    K1, K2 = _weights(m)
    ok_combo = np.zeros((max(allowed) + 1, len(m.combos)), dtype=bool)
    for a, combos in allowed.items():
        ok_combo[a, combos] = True
    si, cj = np.meshgrid(np.arange(nS), np.arange(C), indexing="ij")
    si, cj = si.reshape(-1), cj.reshape(-1)
    t = S[si]
    keep = (cj != active[t]) & ok_combo[cls[t], m.client_combo[cj]] & ~np.isin(cj * T + t, pre_c * T + pre_t)
    si, cj, t = si[keep], cj[keep], t[keep]
    cost = K1 * m.rep_cell[t, m.cell[cj]] + _ties(m, t, cj)
    base_client = nS
    sink = nS + C
    supplies = np.zeros(sink + 1, dtype=np.int64)
    need = np.full(nS, m.want, dtype=np.int64)
    spos = np.full(T, -1, dtype=np.int64)
    spos[S] = np.arange(nS)
    np.subtract.at(need, spos[pre_t], 1)
    supplies[:nS] = need
    supplies[sink] = -int(need.sum())
    arcs = _Arcs()
    arcs.add("task_client", si, base_client + cj, 1, cost)
    _sink_arcs(arcs, m, base_client, sink, pre_c, K2)
    out, _ = arcs.solve(supplies)
    t_, h_, f_ = out["task_client"]
    used = f_ > 0
    return S[t_[used]], h_[used] - base_client


def _standbys_pooled(m: StreamsModel, S: np.ndarray, active: np.ndarray, cls: np.ndarray,
                     allowed: dict[int, np.ndarray], pre_t: np.ndarray, pre_c: np.ndarray
                     ) -> tuple[tuple[np.ndarray, np.ndarray], int]:
    nS, C, T = len(S), m.C, m.T
    K1, K2 = _weights(m)
    M = len(m.combos)
    # cells: (rack cell, tag combination) pairs that have clients
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
    np.subtract.at(need, spos[pre_t], 1)
    supplies = np.zeros(sink + 1, dtype=np.int64)
    supplies[:nS] = need
    supplies[sink] = -int(need.sum())
    arcs = _Arcs()
    big = int(need.sum()) + 1
    # hub(class) -> the cells of its allowed combinations -> clients -> sink
    ok_cell = np.zeros((len(class_ids), n_cells), dtype=bool)
    for a in class_ids:
        ok_cell[class_pos[a], np.isin(cell_combo, allowed[a])] = True
    hh, hc = np.nonzero(ok_cell)
    arcs.add("hub_cell", base_hub + hh, base_cell + hc, big, 0)
    arcs.add("cell_client", base_cell + client_cellpos, base_client + np.arange(C), big, 0)
    _sink_arcs(arcs, m, base_client, sink, pre_c, K2)
    # task -> hub (at the dearest rack), task -> cheaper cells, task -> clients with local state
    tpos = np.array([class_pos[a] for a in cls[S].tolist()], dtype=np.int64)
    rows = m.rep_cell[S]
    hubmax = rows[:, np.unique(m.cell)].max(axis=1)
    arcs.add("task_hub", np.arange(nS), base_hub + tpos, need, K1 * hubmax + 2)
    cheaper = rows[:, cell_rack] < hubmax[:, None]
    et, ec = np.nonzero(cheaper & ok_cell[tpos])
    arcs.add("task_cell", et, base_cell + ec, need[et], K1 * rows[et, cell_rack[ec]] + 2)
    xt, xc = m.state_t, m.state_c
    keep = (xc != active[xt]) & ~np.isin(xc * T + xt, pre_c * T + pre_t)
    xt, xc = xt[keep], xc[keep]
    keep = ok_cell[tpos[spos[xt]], client_cellpos[xc]]
    xt, xc = xt[keep], xc[keep]
    arcs.add("task_client", spos[xt], base_client + xc, 1, K1 * m.rep_cell[xt, m.cell[xc]] + _ties(m, xt, xc))
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
    # who holds what so far: the explicit and pre-placed standbys (actives are checked apart)
    holds: dict[int, dict[int, int]] = {}
    for t, c in zip(np.concatenate([fixed_t, pre_t]).tolist(), np.concatenate([fixed_c, pre_c]).tolist()):
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
        n_fixed, slots = _match_pool(units, slots, active, holds)
        repairs += n_fixed
        pool_t.append(units)
        pool_c.append(slots)
    return (np.concatenate([fixed_t] + pool_t), np.concatenate([fixed_c] + pool_c)), repairs


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
