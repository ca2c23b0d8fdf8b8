r"""The streams flow's actives: the target, one min-cost flow per pair of balance boxes, and the search over
the boxes (:func:`best_target`).

    variables   one unit per task from the task to a client (through (client, stateful?) and, under
                ``balance_subtopology``, (client, subtopology) nodes); rack cells and a hub compress the arcs
    constraints each client's active and stateful counts within its box (lower bounds moved into the supplies)
    objective   ``K * (active_cost + standby_floor + way) + L * [constrained, not eligible]`` plus ties below
                one unit of cost (:func:`tie_weights`): no warm-up first, then fewer moved tasks

:class:`StandbyFloor` prices what a task's standbys cost at least with its active on a client.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stickyflow.check.streams import balance_excess
from stickyflow.errors import InfeasibleError, SolverFaultError
from stickyflow.model.arrays import in_sorted, nonzero_pairs

from .arcs import Arcs, group_by, pool_split
from .balance import MAX_BOXES, box_hull
from .model import StreamsModel
from .plan import movements

__all__ = ["best_target", "ActiveSolution", "standby_floor", "StandbyFloor", "solve_actives", "tie_weights"]


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

    def branch(base: dict, k: str) -> int:
        """Push a node for each box of count ``k`` on top of ``base`` that has a target; how many."""
        nonlocal tick
        pushed = 0
        for box in options[k]:
            child = run({**base, k: box})
            if child is not None:
                heapq.heappush(heap, ((child.value, child.movements), tick, {**base, k: box}, child))
                tick += 1
                pushed += 1
        return pushed

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
        children = branch(choice, k)
        if not children and k == "act":  # active balance is the rule: the other counts yield to it
            if not branch({k2: None for k2 in counts if k2 != "act"}, k):
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
    need not be: then a converged standby may take the holder's value on
    another client of it, which does not hold it this round (the holder's value
    is taken), so that client restores the task once it has moved: a standby
    move if it never held the task, else :func:`.plan.waiting_cost`'s dropped
    standby. Either way that standby costs its traffic plus ``noc``.
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
        # a converged standby of a waiting movement on a client of its holder's value other than the holder: not
        # there this round (the holder's value is taken), so restored once the task has moved, whether it held
        # the task (waiting_cost's dropped standby) or not (a standby move): its traffic plus noc, ``q`` at least
        room = n_rv[:, hv].T.copy()
        room[rows, m.cell[np.maximum(m.holder, 0)]] -= 1
        q = np.where(room > 0, m.rep_cell, big).min(axis=1, initial=big)
        q = np.where(q < big, q + m.noc, big)
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
            # or this round's standbys are not the converged ones (a waiting task's need not be): then a
            # converged one may take the holder's value on another client of it, at its traffic plus noc
            other = np.where(q < big, S + np.maximum(0, q - pw), big)
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

    arcs = Arcs()

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
    direct = group_by(h_[f_ > 0], t_[f_ > 0])
    t_, h_, f_ = out["task_hub"]
    via_hub = group_by(h_[f_ > 0], t_[f_ > 0])
    per_cell = pool_split(direct, via_hub, out["hub_cell"])
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
