r"""The streams flow's standbys, given what runs (and the free placement the pricing bounds with).

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
within the budget. Where holders keep so many converged standbys of their
waiting movements that they end above **Balanced** in replicas,
:func:`unload_holders` gives some of those standbys to other clients of the
holder's tag combination once converged (this round they cover the move).

    variables   ``want`` units per stateful task to clients other than its active one (explicit arcs per
                (task, client), or rack pools matched to clients afterwards)
    constraints one role per client and task; tags: only clients of the combinations adding the most values
    objective   ``K1 * standby_cost + tie``, with soft replica boxes at ``K2`` above any total cost
"""

from __future__ import annotations

import numpy as np

from stickyflow.check.streams import balance_excess
from stickyflow.errors import InfeasibleError, SolverFaultError
from stickyflow.model.arrays import nonzero_pairs

from .arcs import Arcs, group_by, interleaved_slots, pool_split
from .balance import balance_boxes, box_hull
from .model import StreamsModel
from .plan import movements

__all__ = ["solve_standbys", "unload_holders", "free_placement", "free_standbys", "allowed_combos", "EXPLICIT_STANDBY_ARCS",
           "MAX_EXPLICIT_STANDBY_ARCS"]

EXPLICIT_STANDBY_ARCS = 400_000  # above this many (task, client) pairs the standby flow uses rack pools
MAX_EXPLICIT_STANDBY_ARCS = 4_000_000  # ... unless the pools fail, up to this many
def free_standbys(m: StreamsModel, S: np.ndarray, target: np.ndarray, hi: np.ndarray, spread: bool = True
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


def _sink_arcs(arcs: "Arcs", m: StreamsModel, base_client: int, sink: int, act: np.ndarray, box, K2: int,
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
    arcs = Arcs()
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
    arcs = Arcs()
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
    direct = group_by(np.repeat(h_, f_), np.repeat(S[t_], f_))
    t_, h_, f_ = out["task_hub"]
    via_hub = group_by(np.repeat(h_, f_), np.repeat(S[t_], f_))
    per_cell = pool_split(direct, via_hub, out["hub_cell"])
    t_, h_, f_ = out["cell_client"]
    cell_client_flow = group_by(np.repeat(t_, f_), np.repeat(h_ - base_client, f_))
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
        slots = interleaved_slots(cl, cnt)
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


def unload_holders(m: StreamsModel, target: np.ndarray, converged: np.ndarray, moving: np.ndarray
                   ) -> np.ndarray | None:
    """Converged standbys (T x want) balanced in replicas where a holder keeps too many, or None to keep them.

    A waiting movement whose converged standby is on its holder has it on its target this round (it covers
    the move, :func:`.plan.round_standbys`), so the holder's count once converged grows with every such
    movement it runs, and nothing else can mend that: with two tag values a movement across them must keep
    its converged standby on the holder's value, and its holder is its previous owner (issue 37). So one such
    standby at a time goes from a holder above **Balanced**'s cap to the cheapest client of the same tag
    combination below it (then the least loaded, then the first): the converged assignment spreads as it did,
    this round is the same (the standby on the target), and that client restores the task once it has moved
    (a standby move, or :func:`.plan.waiting_cost`'s dropped standby), at ``noc`` more than the holder.
    """
    if not m.want or not len(target):
        return None
    th, bf = m.threads, m.bf
    n = np.bincount(target, minlength=m.C) + np.bincount(converged[converged >= 0], minlength=m.C)
    excess = balance_excess(n, th, bf)
    if not excess:
        return None
    conv = converged.copy()
    kept_t, kept_k = np.nonzero(moving[:, None] & (conv == m.holder[:, None]) & (m.holder[:, None] >= 0))
    for _ in range(excess):
        i = int(np.argmin(n / th))
        cap = (th * int(n[i]) + bf * int(th[i])) // int(th[i])
        over = n[m.holder[kept_t]] > cap[m.holder[kept_t]]
        moved = False
        for t, k in zip(kept_t[over].tolist(), kept_k[over].tolist()):
            h = int(m.holder[t])
            if conv[t, k] != h:
                continue
            ok = (m.client_combo == m.client_combo[h]) & (n < cap)
            ok[[h, int(target[t])]] = False
            ok[conv[t][conv[t] >= 0]] = False
            cand = np.flatnonzero(ok)
            if not len(cand):
                continue
            c = int(cand[np.lexsort((cand, n[cand], m.rep_cell[t, m.cell[cand]]))[0]])
            conv[t, k] = c
            n[h] -= 1
            n[c] += 1
            moved = True
            break
        if not moved:
            break
    return conv if balance_excess(n, th, bf) < excess else None
