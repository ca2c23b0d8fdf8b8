r"""What the streams formulations share: the model as arrays, **Balanced** as boxes, plans, costs, decisions.

:mod:`.streams_opt` (the front door), :mod:`.streams_flow` and
:mod:`.streams_cpsat` all import from here and from nowhere else in this
package, so that no module of the three imports another at load time.

**Balanced** (the spec): for a count ``n_c`` per client and threads ``w_c``,
with ``m = min_c n_c / w_c``, every client holds ``n_c <= w_c m +
balance_factor``. For a fixed least level ``m`` this is a box,

    ceil(w_c m) <= n_c <= floor(w_c m + balance_factor),

every count in the box is balanced (its least level is at least ``m``), and
every balanced count lies in the box of its own ``m``. So the balanced counts
are the union of the boxes over the candidate levels ``m = k / w`` (``w`` a
thread count of some client), which :func:`balance_boxes` lists; a min-cost
flow takes one box at a time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from stickyflow.check.streams import assignment_arrays, balance_excess
from stickyflow.check.streams_tables import RACK_KEY, eligible_pairs, rack_tables, tag_combinations
from stickyflow.errors import StickyflowError
from stickyflow.model.arrays import in_sorted
from stickyflow.model.streams import ClientAssignment, StreamsSnapshot, task_key
from stickyflow.registry import SolveOptions
from stickyflow.result import Decision

__all__ = ["StreamsModel", "StreamsPlan", "build_model", "balance_boxes", "box_hull", "balance_excess",
           "plan_cost", "target_cost", "plan_decision", "movements", "choose_warmups", "round_standbys",
           "converged_standbys", "plan_standbys", "replica_counts", "count_excess", "decision_plan", "in_sorted",
           "path_cost", "waiting_cost",
           "DEFAULT_STANDBY_SLACK"]

DEFAULT_STANDBY_SLACK = 0  # kept for the ``standby_slack`` option: extra replicas a client may hold above its box
MAX_BOXES = 24  # candidate least levels per count; beyond this, the ones nearest the mean


# --------------------------------------------------------------------------- balance

def balance_boxes(n: int, threads: np.ndarray, balance_factor: int = 1) -> list[tuple[np.ndarray, np.ndarray]]:
    """Every box ``(lo, hi)`` of **Balanced** counts of ``n`` tasks over clients of ``threads`` (see
    :func:`_balance_boxes`; the same arguments give the same boxes, computed once)."""
    threads = np.asarray(threads, dtype=np.int64)
    key = (int(n), threads.tobytes(), int(balance_factor))
    hit = _BOX_CACHE.get(key)
    if hit is None:
        if len(_BOX_CACHE) >= 64:
            _BOX_CACHE.clear()
        hit = _BOX_CACHE[key] = _balance_boxes(n, threads, balance_factor)
        for lo, hi in hit:
            lo.setflags(write=False)
            hi.setflags(write=False)
    return list(hit)


_BOX_CACHE: dict[tuple, list[tuple[np.ndarray, np.ndarray]]] = {}


def _balance_boxes(n: int, threads: np.ndarray, balance_factor: int = 1) -> list[tuple[np.ndarray, np.ndarray]]:
    """Every box ``(lo, hi)`` of **Balanced** counts of ``n`` tasks over clients of ``threads``.

    One box per candidate least level ``m`` (``lo = ceil(threads m)``, ``hi =
    floor(threads m + balance_factor)``) that can hold ``n`` tasks; the union
    of the boxes is exactly the set of balanced counts. Highest ``m`` first
    (the most even); duplicates dropped.

    >>> [(lo.tolist(), hi.tolist()) for lo, hi in balance_boxes(3, np.array([5, 5, 5, 5, 5]), 3)]
    [([0, 0, 0, 0, 0], [3, 3, 3, 3, 3])]
    >>> [(lo.tolist(), hi.tolist()) for lo, hi in balance_boxes(6, np.array([1, 1, 1]))]
    [([2, 2, 2], [3, 3, 3]), ([1, 1, 1], [2, 2, 2])]
    """
    threads = np.asarray(threads, dtype=np.int64)
    C = len(threads)
    if not C:
        return []
    TH = int(threads.sum())
    bf = int(balance_factor)
    kinds = sorted(set(threads.tolist()))
    top = Fraction(n, TH)                       # the least level never exceeds the mean
    bottom = max(Fraction(0), Fraction(n - bf * C, TH) - 1)
    levels: set[Fraction] = set()
    for w in kinds:
        for k in range(max(0, math.floor(bottom * w)), math.floor(top * w) + 1):
            levels.add(Fraction(k, w))
    out = []
    seen: set[tuple] = set()
    th = threads.tolist()
    for m in sorted(levels, reverse=True):
        lo = np.array([math.ceil(w * m) for w in th], dtype=np.int64)
        hi = np.array([math.floor(w * m + bf) for w in th], dtype=np.int64)
        if lo.sum() <= n <= hi.sum():
            key = (tuple(lo.tolist()), tuple(hi.tolist()))
            if key not in seen:
                seen.add(key)
                out.append((lo, hi))
    if len(out) > MAX_BOXES:
        out = out[:MAX_BOXES]
    return out


def box_hull(boxes: list[tuple[np.ndarray, np.ndarray]], n: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The smallest box holding every box of ``boxes`` (a relaxation of **Balanced**).

    Given the total ``n``, the smallest box holding every count vector of the boxes that sums to ``n``:
    within a box a client holds at most its top and at most what the others leave when each holds its
    bottom (and at least the symmetric floor). Where ``n`` fills the boxes that is much tighter than the
    hull: 10 tasks on 5 one-thread clients lie in the boxes [2, 3] and [1, 2], whose hull is [1, 3], yet
    every balanced count is exactly 2.

    >>> [b.tolist() for b in box_hull(balance_boxes(10, np.ones(5, np.int64)))]
    [[1, 1, 1, 1, 1], [3, 3, 3, 3, 3]]
    >>> [b.tolist() for b in box_hull(balance_boxes(10, np.ones(5, np.int64)), n=10)]
    [[2, 2, 2, 2, 2], [2, 2, 2, 2, 2]]
    """
    if n is not None:
        boxes = [(np.maximum(lo, n - (int(hi.sum()) - hi)), np.minimum(hi, n - (int(lo.sum()) - lo)))
                 for lo, hi in boxes]
    lo = np.min(np.stack([b[0] for b in boxes]), axis=0)
    hi = np.max(np.stack([b[1] for b in boxes]), axis=0)
    return lo, hi


# --------------------------------------------------------------------------- data

@dataclass(slots=True, eq=False)
class StreamsModel:
    """A snapshot as arrays for the formulations (tasks and clients by index, snapshot order).

    Costs (the spec's objective): ``active_cost(t, c)`` is the KIP-925 traffic
    of ``t`` active on ``c`` plus ``move_cost[t]`` unless ``c`` ran it before;
    ``standby_cost(t, c)`` the changelog traffic plus ``noc[t]`` (a standby
    move) unless ``c`` held ``t`` in some role before; a warm-up pays its
    traffic only. Cells: ``cell[c]`` is the client's rack index, ``R`` for a
    client without a rack; ``act_cell[t, r]`` and ``rep_cell[t, r]`` are traffic
    costs by cell. Eligible clients (``cu_*``): where a *constrained* task may
    run this round: its caught-up clients, or with none the least-lag ones; a
    target elsewhere is a *movement* (the task runs on ``holder`` while the
    target warms up).
    """

    snap: StreamsSnapshot
    T: int
    C: int
    threads: np.ndarray
    stateful: np.ndarray
    sub: np.ndarray                 # task -> subtopology index 0..G-1
    G: int
    cell: np.ndarray
    R: int
    act_cell: np.ndarray            # (T, R + 1)
    rep_cell: np.ndarray            # (T, R + 1)
    move_cost: np.ndarray           # (T,) what leaving the previous active client costs
    noc: np.ndarray                 # (T,) non-overlap cost: a move, or a standby move
    had: np.ndarray
    prev_c: np.ndarray
    prev_t: np.ndarray
    prev_keys: np.ndarray           # sorted c * T + t of previous active pairs (unique: in_sorted reads them)
    owner: np.ndarray               # (T,) the previous active client of each task, -1 for none
    held_c: np.ndarray              # previous active or standby pairs
    held_t: np.ndarray
    held_keys: np.ndarray           # ... their sorted keys c * T + t (unique)
    constrained: np.ndarray
    cu_c: np.ndarray
    cu_t: np.ndarray
    cu_keys: np.ndarray             # sorted keys c * T + t of the eligible pairs (unique)
    holder: np.ndarray
    hold_cost: np.ndarray
    bf: int
    boxes: list                     # Balanced boxes of active tasks
    boxes_stateful: list            # ... of stateful active tasks
    sub_balance: bool
    want: int
    budget: int
    learner: bool
    standby_slack: int
    state_c: np.ndarray
    state_t: np.ndarray
    state_tie: np.ndarray           # 0 caught up, 1 lagging (no state: 2)
    tag_keys: tuple[str, ...]
    combos: np.ndarray
    client_combo: np.ndarray
    combo_count: np.ndarray
    max_moves: int | None
    rack_aware: bool
    movements_first: bool = False   # the fewest movements before the cost (learner mode by default)
    round_price: int = 0            # ... what each movement then pays on top (see round_price)
    extra: dict[str, Any] = field(default_factory=dict)

    def active_cost(self, t, c) -> np.ndarray:
        t = np.asarray(t, dtype=np.int64)
        c = np.asarray(c, dtype=np.int64)
        kept = in_sorted(c * self.T + t, self.prev_keys)
        return self.act_cell[t, self.cell[c]] + np.where(kept, 0, self.move_cost[t])

    def replica_cost(self, t, c) -> np.ndarray:
        """Traffic of a replica (standby or warm-up) of ``t`` on ``c``."""
        t = np.asarray(t, dtype=np.int64)
        return self.rep_cell[t, self.cell[np.asarray(c, dtype=np.int64)]]

    def standby_cost(self, t, c) -> np.ndarray:
        """A standby's cost: its traffic, plus ``noc`` when ``c`` held ``t`` in no role before (a standby move)."""
        t = np.asarray(t, dtype=np.int64)
        c = np.asarray(c, dtype=np.int64)
        held = in_sorted(c * self.T + t, self.held_keys)
        return self.rep_cell[t, self.cell[c]] + np.where(held, 0, self.noc[t])

    def movement_cost(self, t, c) -> np.ndarray:
        """What a movement of ``t`` to target ``c`` costs on its way, beyond the converged assignment's cost.

        Every state restoration costs ``noc`` (the issue's total over a convergence): the task runs on its
        holder now (an active move, unless the holder is its previous client), its state is restored on the
        target (a warm-up, or a covering standby, unless the target held the task in some role), and it moves
        from the holder to the target once caught up. The converged cost counts one move from the previous
        client to the target; this is the rest, so that a plan pays for its path: a task bounced away from a
        lagging previous client and back pays both moves. In learner mode each movement also pays
        ``round_price`` (:func:`round_price`: the fewest movements come first). Callers mask it to movements.

        >>> m = type("M", (), {"T": 1, "round_price": 0})()
        >>> m.noc, m.had, m.owner, m.holder = np.array([1]), np.array([True]), np.array([0]), np.array([0])
        >>> m.held_keys = np.array([0 * 1 + 0])         # client 0 ran the task; client 1 held it in no role
        >>> StreamsModel.movement_cost(m, [0], [1]).tolist()   # warm-up on 1 (a restoration), then the move
        [1]
        >>> m.holder = np.array([2])                    # client 0 fell behind: it runs on 2 meanwhile
        >>> StreamsModel.movement_cost(m, [0, 0], [0, 1]).tolist()   # back to 0: 2 moves; to 1: 3 less 1 counted
        [2, 2]
        """
        t = np.asarray(t, dtype=np.int64)
        c = np.asarray(c, dtype=np.int64)
        if not len(t):
            return np.zeros(0, dtype=np.int64)
        fresh = ~in_sorted(c * self.T + t, self.held_keys)
        had, owner = self.had[t], self.owner[t]
        away = had & (self.holder[t] != owner)       # it runs elsewhere meanwhile: one more move
        counted = had & (c != owner)                  # the move the converged cost counts already
        return self.noc[t] * (fresh.astype(np.int64) + 1 + away.astype(np.int64) - counted.astype(np.int64)) \
            + self.round_price

    def subtopology_boxes(self) -> list[list[tuple[np.ndarray, np.ndarray]]]:
        """Per subtopology, its Balanced boxes (``balance_subtopology``)."""
        n_g = np.bincount(self.sub, minlength=self.G)
        return [balance_boxes(int(n_g[g]), self.threads, self.bf) for g in range(self.G)]


def round_price(m: StreamsModel) -> int:
    """What a movement pays on top of its way where the fewest movements come first (``movements_first``:
    learner mode unless the option says otherwise): one more than any plan's cost can be (the converged cost
    and the way, :func:`waiting_cost` included, every term at its dearest), so that the fewest movements come
    first and the cost decides among them; 0 otherwise, where the cost comes first (the spec's order).

    In learner mode each movement takes a rebalance of its own (one learner a rebalance), so rounds are
    movements. Priced at their cost alone, plans moved tasks one probing rebalance after another to save
    traffic: on 8 of the benchmark's 288 plays the greedy settled in fewer rounds (35 against 1 on `lag_skew`
    t118-c7), at least as balanced, where issue 37 asks for no more rounds as well as no higher total. With
    the fewest movements first, both hold on all 288 (docs/streams.md, "Learner mode: rounds first").

    >>> m = type("M", (), {"movements_first": True, "constrained": np.array([True, False]),
    ...                    "stateful": np.array([True, False]),
    ...                    "act_cell": np.array([[0, 10], [0, 1]]), "rep_cell": np.array([[0, 10], [0, 0]]),
    ...                    "move_cost": np.array([1, 0]), "noc": np.array([1, 0]), "want": 1})()
    >>> round_price(m)   # task 0: 10 + 1 + 4 (way, lost state) + 12 (a standby, another this round); task 1: 1; +1
    29
    """
    if not m.movements_first or not m.constrained.any():
        return 0
    act = m.act_cell.max(axis=1, initial=0) + m.move_cost + 4 * np.where(m.constrained, m.noc, 0)
    rep = m.rep_cell.max(axis=1, initial=0) + 2 * m.noc
    return int((act + m.want * np.where(m.stateful, rep, 0)).sum()) + 1


def build_model(snap: StreamsSnapshot, options: SolveOptions | None = None) -> StreamsModel:
    """Arrays of ``snap`` for the formulations; see :class:`StreamsModel`."""
    options = options or SolveOptions()
    extra = dict(options.extra or {})
    idx = snap.index
    cfg = snap.config
    T, C = len(idx.task_ids), len(idx.client_ids)
    stateful = np.asarray(idx.stateful, dtype=bool)
    threads = np.asarray(idx.threads, dtype=np.int64)
    subs = np.fromiter((t.subtopology for t in snap.tasks), dtype=np.int64, count=T)
    sub_ids, sub = np.unique(subs, return_inverse=True) if T else (np.zeros(0, dtype=np.int64),
                                                                  np.zeros(0, dtype=np.int64))
    G = max(1, len(sub_ids))
    racks = rack_tables(snap)
    R = len(racks.racks)
    cell = np.asarray(racks.client_rack, dtype=np.int64)
    rack_aware = cfg.rack_aware
    had = np.zeros(T, dtype=bool)
    had[idx.prev_active_task] = True
    if rack_aware:
        tc = np.where(stateful, cfg.traffic_cost(), cfg.traffic_cost(stateless=True)).astype(np.int64)
        noc = np.where(stateful, cfg.non_overlap_cost(), cfg.non_overlap_cost(stateless=True)).astype(np.int64)
        if racks.known:
            act_cell = tc[:, None] * racks.input_cross
            rep_cell = tc[:, None] * racks.changelog_cross
        else:
            act_cell = np.zeros((T, R + 1), dtype=np.int64)
            rep_cell = np.zeros((T, R + 1), dtype=np.int64)
    else:
        noc = np.ones(T, dtype=np.int64)
        act_cell = np.zeros((T, R + 1), dtype=np.int64)
        rep_cell = np.zeros((T, R + 1), dtype=np.int64)
    move_cost = np.where(had, noc, 0).astype(np.int64)
    prev_c = np.asarray(idx.prev_active_client, dtype=np.int64)
    prev_t = np.asarray(idx.prev_active_task, dtype=np.int64)
    prev_keys = np.unique(prev_c * T + prev_t)
    owner = np.full(T, -1, dtype=np.int64)
    owner[prev_t] = prev_c
    held_keys = np.unique(np.concatenate([prev_keys, np.asarray(idx.prev_standby_client, dtype=np.int64) * T
                                          + np.asarray(idx.prev_standby_task, dtype=np.int64)]))
    held_c, held_t = (held_keys // T, held_keys % T) if T else (held_keys, held_keys)

    el = eligible_pairs(snap)
    constrained = stateful & ~np.asarray(el.free, dtype=bool)
    cu_c = np.asarray(el.client, dtype=np.int64)
    cu_t = np.asarray(el.task, dtype=np.int64)
    cu_keys = np.unique(cu_c * T + cu_t)

    bf = cfg.balance_factor
    model = StreamsModel(
        snap=snap, T=T, C=C, threads=threads, stateful=stateful, sub=sub.astype(np.int64), G=G, cell=cell, R=R,
        act_cell=np.ascontiguousarray(act_cell, dtype=np.int64),
        rep_cell=np.ascontiguousarray(rep_cell, dtype=np.int64),
        move_cost=move_cost, noc=noc.astype(np.int64), had=had, prev_c=prev_c, prev_t=prev_t, prev_keys=prev_keys,
        owner=owner,
        held_c=held_c, held_t=held_t, held_keys=held_keys,
        constrained=constrained, cu_c=cu_c, cu_t=cu_t, cu_keys=cu_keys,
        holder=np.full(T, -1, dtype=np.int64), hold_cost=np.zeros(T, dtype=np.int64),
        bf=bf, boxes=[], boxes_stateful=[],
        sub_balance=cfg.rack_aware_assignment_strategy == "balance_subtopology" and G > 1,
        want=snap.standbys_per_task(),
        budget=1 if cfg.rebalancing_mode == "learner" else cfg.max_warmup_replicas,
        learner=cfg.rebalancing_mode == "learner",
        standby_slack=int(extra.get("standby_slack", DEFAULT_STANDBY_SLACK)),
        state_c=np.zeros(0, dtype=np.int64), state_t=np.zeros(0, dtype=np.int64),
        state_tie=np.zeros(0, dtype=np.int64), tag_keys=(), combos=np.zeros((1, 0), dtype=np.int64),
        client_combo=np.zeros(C, dtype=np.int64), combo_count=np.array([C], dtype=np.int64),
        max_moves=None, rack_aware=rack_aware)
    if not isinstance(model.standby_slack, int) or model.standby_slack < 0:
        raise StickyflowError(f"standby_slack: must be an integer >= 0, not {model.standby_slack!r}")
    mm = extra.get("max_moves")
    if mm is not None:
        if not isinstance(mm, int) or isinstance(mm, bool) or mm < 0:
            raise StickyflowError(f"max_moves: must be an integer >= 0, not {mm!r}")
        model.max_moves = mm

    # holders: the previous owner where it is eligible, else the cheapest eligible client (then snapshot
    # order). A holder that reads from the task's own rack saves traffic only for the rounds the movement
    # waits, which the issue-37 total leaves out, and costs a move (a restoration) that it counts; so the
    # previous owner keeps a waiting task (docs/streams.md, "Over a whole convergence")
    if len(cu_t):
        cost = model.active_cost(cu_t, cu_c)
        not_prev = ~in_sorted(cu_c * T + cu_t, prev_keys)
        order = np.lexsort((cu_c, cost, not_prev, cu_t))
        first = order[np.unique(cu_t[order], return_index=True)[1]]
        model.holder[cu_t[first]] = cu_c[first]
        model.hold_cost[cu_t[first]] = cost[first]

    if C:
        model.boxes = balance_boxes(T, threads, bf)
        model.boxes_stateful = balance_boxes(int(stateful.sum()), threads, bf)
    mf = extra.get("movements_first")
    if mf is not None and not isinstance(mf, bool):
        raise StickyflowError(f"movements_first: must be true, false or None (learner mode), not {mf!r}")
    model.movements_first = model.learner if mf is None else mf
    model.round_price = round_price(model)

    # local state, for where standbys go on ties
    st_mask = stateful[idx.lag_task] if len(idx.lag_task) else np.zeros(0, dtype=bool)
    model.state_c = np.asarray(idx.lag_client, dtype=np.int64)[st_mask]
    model.state_t = np.asarray(idx.lag_task, dtype=np.int64)[st_mask]
    model.state_tie = (np.asarray(idx.lag_value)[st_mask] > cfg.acceptable_recovery_lag).astype(np.int64)

    # tag spreading (KIP-708); racks as one more key on request
    keys = tuple(cfg.rack_aware_assignment_tags)
    if extra.get("spread_racks") and C and all(c.rack is not None for c in snap.clients):
        keys = keys + (RACK_KEY,)
    if keys and model.want and C:
        combos, client_combo, counts = tag_combinations(snap, keys)
        if len(combos) > 1:
            model.tag_keys = keys
            model.combos, model.client_combo, model.combo_count = combos, client_combo.astype(np.int64), counts
    return model


# --------------------------------------------------------------------------- what a solver returns

@dataclass(slots=True, eq=False)
class StreamsPlan:
    """A solved round: per task its target, what runs, warm-up and standbys (client indexes, -1 for none).

    ``standby`` is (T, want), this round's. ``converged`` is (T, want), the
    standbys once every movement has moved, or None where they follow from
    this round's (:func:`converged_standbys`: a movement's standby on its
    target is its holder's once it moved); a task that waits may hold its
    standbys this round elsewhere than once converged (CP-SAT's plans say
    so). ``bound`` is a proven lower bound on the cost of the converged
    (target) assignment among those the rules allow, or None.
    """

    target: np.ndarray
    active: np.ndarray
    warmup: np.ndarray
    standby: np.ndarray
    method: str
    status: str
    bound: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    converged: np.ndarray | None = None


def _standby_pairs(m: StreamsModel, plan: StreamsPlan, converged: bool = False
                   ) -> tuple[np.ndarray, np.ndarray]:
    if not m.want:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    st = np.repeat(np.arange(m.T), m.want)
    sc = (plan_standbys(m, plan) if converged else plan.standby).reshape(-1)
    ok = sc >= 0
    return st[ok], sc[ok]


def round_standbys(m: StreamsModel, target: np.ndarray, converged: np.ndarray) -> np.ndarray:
    """This round's standbys (T x want) from the converged ones, which sit on clients other than the target.

    A movement runs on its holder this round; a converged standby on the holder is, this round, a standby on
    the target instead, catching up there in a warm-up's place (the holder takes the standby once the task
    has moved). Every client's replica count is the same either way.

    >>> m = type("M", (), {"want": 1, "T": 2})()
    >>> m.constrained, m.holder = np.array([True, False]), np.array([0, -1])
    >>> m.cu_keys, m.T = np.array([0 * 2 + 0]), 2   # client 0 is caught up on task 0
    >>> round_standbys(m, np.array([1, 1]), np.array([[0], [0]])).tolist()   # task 0 moves 0 -> 1
    [[1], [0]]
    """
    if not m.want or not m.T:
        return converged
    moving = movements(m, target)
    swap = moving[:, None] & (converged == m.holder[:, None])
    return np.where(swap, target[:, None], converged)


def plan_standbys(m: StreamsModel, plan: StreamsPlan) -> np.ndarray:
    """A plan's converged standbys (T x want): its own where it says, else :func:`converged_standbys`."""
    if plan.converged is not None:
        return plan.converged
    return converged_standbys(m, plan.target, plan.standby)


def converged_standbys(m: StreamsModel, target: np.ndarray, standby: np.ndarray) -> np.ndarray:
    """The inverse of :func:`round_standbys`: a movement's standby on its target is the holder's once it moved."""
    if not m.want or not m.T:
        return standby
    moving = movements(m, target)
    swap = moving[:, None] & (standby == target[:, None])
    return np.where(swap, m.holder[:, None], standby)


def plan_cost(model: StreamsModel, plan: StreamsPlan) -> int:
    """The spec's cost of what runs this round (``streams_metrics(...)["cost"]`` of the decision)."""
    m = model
    if not m.T or not m.C:
        return 0
    t = np.arange(m.T)
    cost = int(m.active_cost(t, plan.active).sum())
    w = plan.warmup >= 0
    cost += int(m.replica_cost(t[w], plan.warmup[w]).sum())
    st, sc = _standby_pairs(m, plan)
    cost += int(m.standby_cost(st, sc).sum())
    return cost


def target_cost(model: StreamsModel, plan: StreamsPlan) -> int:
    """What the plan costs until it has converged: the converged assignment (targets as actives, the converged
    standbys, :func:`plan_standbys`) and the way there (:func:`path_cost`, :func:`waiting_cost`)."""
    m = model
    if not m.T or not m.C:
        return 0
    cost = int(m.active_cost(np.arange(m.T), plan.target).sum())
    st, sc = _standby_pairs(m, plan, converged=True)
    return cost + int(m.standby_cost(st, sc).sum()) + path_cost(m, plan.target) + waiting_cost(m, plan)


def waiting_cost(m: StreamsModel, plan: StreamsPlan) -> int:
    """What this round of a plan costs on the way beyond :func:`path_cost`, every restoration at ``noc``.

    A client keeps no state of a task it no longer holds. So a standby of a waiting task this round on a
    client that neither held the task nor keeps it once converged is restored for this round alone (one on
    the movement's target is the movement's own restoration, in its way); a converged standby on a client that
    held the task but does not keep it this round is restored once the task has moved (not on the holder,
    which runs it meanwhile); and a movement whose target held the task, with neither a warm-up nor a standby
    there this round, loses that state: its turn restores it again. A plan whose standbys follow
    :func:`round_standbys` pays none of the first two, and with warm-ups first where the target held the task
    (:func:`choose_warmups`) the third only beyond the warm-up budget.

    >>> m = type("M", (), {"T": 1, "C": 3, "want": 1, "budget": 1, "noc": np.array([1])})()
    >>> m.constrained, m.cu_keys = np.array([True]), np.array([0 * 1 + 0])   # client 0 caught up on the task
    >>> m.holder = np.array([0])                      # ... and runs it while it waits
    >>> m.held_keys = np.array([0, 1])                # clients 0 and 1 held it; client 2 did not
    >>> plan = type("P", (), {"target": np.array([1]), "warmup": np.array([-1]), "converged": np.array([[0]])})()
    >>> plan.standby = np.array([[1]]); waiting_cost(m, plan)   # a standby on the target keeps its state
    0
    >>> plan.standby = np.array([[2]]); waiting_cost(m, plan)   # 2 only this round, and 1's state is lost
    2
    >>> plan.converged, plan.target = np.array([[1]]), np.array([2])
    >>> plan.standby = np.array([[2]]); waiting_cost(m, plan)   # 1 drops its state, taken up again later
    1
    """
    if not m.T or not m.C:
        return 0
    T = m.T
    mv = np.flatnonzero(movements(m, plan.target))
    if not len(mv):
        return 0
    tg = plan.target[mv]
    kept = plan.warmup[mv] == tg
    cost = 0
    if m.want:
        now = plan.standby[mv]
        conv = plan_standbys(m, plan)[mv]
        kept |= (now == tg[:, None]).any(axis=1)
        rt = np.repeat(mv, m.want)
        rc = now.reshape(-1)
        only_now = (rc >= 0) & (rc != np.repeat(tg, m.want)) & ~(now[:, :, None] == conv[:, None, :]).any(axis=2
                                                                                                       ).reshape(-1)
        only_now &= ~in_sorted(rc * T + rt, m.held_keys)
        cost += int(m.noc[rt[only_now]].sum())
        cc = conv.reshape(-1)
        dropped = (cc >= 0) & (cc != np.repeat(m.holder[mv], m.want)) & in_sorted(cc * T + rt, m.held_keys) & \
            ~(conv[:, :, None] == now[:, None, :]).any(axis=2).reshape(-1)
        cost += int(m.noc[rt[dropped]].sum())
    lost = in_sorted(tg * T + mv, m.held_keys) & ~kept
    return cost + int(m.noc[mv[lost]].sum())


def path_cost(m: StreamsModel, target: np.ndarray) -> int:
    """What the movements of ``target`` cost on the way, beyond the converged assignment
    (:meth:`StreamsModel.movement_cost`): the restorations of their state and the moves of waiting."""
    if not m.T:
        return 0
    mv = np.flatnonzero(movements(m, target))
    return int(m.movement_cost(mv, target[mv]).sum())


def movements(model: StreamsModel, target: np.ndarray) -> np.ndarray:
    """Tasks whose target client is not eligible (caught up, or least lag) while some client is (mask)."""
    m = model
    if not m.T:
        return np.zeros(0, dtype=bool)
    keys = target * m.T + np.arange(m.T)
    return m.constrained & ~in_sorted(keys, m.cu_keys)


def choose_warmups(model: StreamsModel, target: np.ndarray, moving: np.ndarray, active: np.ndarray) -> np.ndarray:
    """Warm-ups for up to ``budget`` movements (-1 elsewhere): first those whose target held the task in some
    role (its state there goes on restoring; a movement left waiting loses it, and pays a restoration when its
    turn comes), then the cheapest, ties in TaskId order.

    In learner mode the one learner is a task of the most loaded client (active tasks per thread).
    """
    m = model
    warm = np.full(m.T, -1, dtype=np.int64)
    tasks = np.flatnonzero(moving)
    if not len(tasks) or m.budget <= 0:
        return warm
    rank = task_rank(m)
    cost = m.replica_cost(tasks, target[tasks])
    fresh = ~in_sorted(target[tasks] * m.T + tasks, m.held_keys)
    if m.learner:
        load = np.bincount(active, minlength=m.C) / m.threads
        order = np.lexsort((rank[tasks], cost, fresh, -load[active[tasks]]))
    else:
        order = np.lexsort((rank[tasks], cost, fresh))
    pick = tasks[order[:m.budget]]
    warm[pick] = target[pick]
    return warm


def task_rank(model: StreamsModel) -> np.ndarray:
    """Each task's position in Kafka's TaskId order."""
    r = model.extra.get("task_rank")
    if r is None:
        ids = model.snap.index.task_ids
        order = sorted(range(model.T), key=lambda i: task_key(ids[i]))
        r = np.empty(model.T, dtype=np.int64)
        r[np.asarray(order, dtype=np.int64)] = np.arange(model.T)
        model.extra["task_rank"] = r
    return r


def plan_decision(model: StreamsModel, plan: StreamsPlan) -> Decision:
    """The :class:`Decision` of a plan: process id -> roles, cost, bound, follow-up.

    ``objective`` is the cost of what runs (the result's ``metrics.cost``);
    ``bound`` is the proven bound when nothing waits (what runs is then the
    converged assignment), else None. ``extra`` carries ``target_cost`` and
    ``target_bound``: the converged assignment's cost and the proven bound on
    it, which ``status`` (``"optimal"`` when they meet) is about. In learner
    mode the fewest movements come first (:func:`round_price`): the bound is
    then on the plans with no more movements than this one.
    """
    m = model
    snap = m.snap
    idx = snap.index
    ids = idx.task_ids
    rank = task_rank(m)
    roles: dict[str, list[list[int]]] = {pid: [[], [], []] for pid in idx.client_ids}
    if m.T and m.C:
        t = np.arange(m.T)
        pairs = [(plan.active, t, 0)]
        w = plan.warmup >= 0
        pairs.append((plan.warmup[w], t[w], 2))
        st, sc = _standby_pairs(m, plan)
        pairs.append((sc, st, 1))
        cids = idx.client_ids
        for cs, ts, role in pairs:
            order = np.lexsort((rank[ts], cs))
            cs, ts = cs[order], ts[order]
            bounds = np.searchsorted(cs, np.arange(m.C + 1))
            tl = ts.tolist()
            for c in np.flatnonzero(np.diff(bounds)).tolist():
                roles[cids[c]][role] = tl[bounds[c]:bounds[c + 1]]
    assignment = {pid: ClientAssignment(active=tuple(ids[i] for i in a), standby=tuple(ids[i] for i in s),
                                        warmup=tuple(ids[i] for i in w))
                  for pid, (a, s, w) in roles.items()}
    moving = movements(m, plan.target) if m.T and m.C else np.zeros(0, dtype=bool)
    covered = moving & (plan.standby == plan.target[:, None]).any(axis=1) if m.want and m.T else \
        np.zeros(m.T, dtype=bool)
    waits = bool((plan.warmup >= 0).any() or covered.any())
    followup = snap.followup_deadline() if waits else None
    cost = plan_cost(m, plan)
    tcost = target_cost(m, plan)
    bound = plan.bound
    status = plan.status
    extra = dict(plan.extra)
    extra.pop("task_rank", None)
    extra.update(movements=int(moving.sum()), covered_by_standby=int(covered.sum()),
                 warmups=int((plan.warmup >= 0).sum()))
    if bound is not None and bound > tcost:  # never claim a bound the solution beats: a bug, not a bound
        bound = None
    if status == "optimal" and bound is not None and bound != tcost:
        status = "feasible"
    # learner mode: the round price of the plan's movements, out of what is reported; a bound less that price
    # still bounds the cost of every plan with no more movements (each pays the price at least that often)
    paid = m.round_price * int(moving.sum())
    if m.round_price:
        extra["round_price"] = m.round_price
    tcost -= paid
    bound = None if bound is None else bound - paid
    extra.update(target_cost=tcost, target_bound=bound)
    if waits:  # what runs is not the converged assignment: the bound (on that one) is in extra only
        bound = None
    return Decision(assignment=assignment, method=plan.method, status=status, objective=cost, bound=bound,
                    reason=extra.get("reason"), followup_rebalance_deadline_ms=followup, extra=extra)


def replica_counts(m: StreamsModel, plan: StreamsPlan) -> np.ndarray:
    """Replicas (active + standby) per client in the converged assignment the plan aims for: targets as
    actives, the converged standbys (:func:`converged_standbys`)."""
    sc = plan_standbys(m, plan).reshape(-1)
    return np.bincount(plan.target, minlength=m.C) + np.bincount(sc[sc >= 0], minlength=m.C)


def count_excess(m: StreamsModel, plan: StreamsPlan) -> dict[str, int]:
    """How far each count of the converged assignment (targets as actives, converged standbys) is from
    **Balanced** (:func:`balance_excess`): active tasks, stateful actives, replicas, and under
    ``balance_subtopology`` the subtopologies' summed."""
    C, bf, th = m.C, m.bf, m.threads
    tg = plan.target
    out = {"active": balance_excess(np.bincount(tg, minlength=C), th, bf),
           "stateful": balance_excess(np.bincount(tg[m.stateful], minlength=C), th, bf),
           "replicas": balance_excess(replica_counts(m, plan), th, bf)}
    if m.sub_balance:
        out["subtopology"] = sum(balance_excess(np.bincount(tg[m.sub == g], minlength=C), th, bf) for g in range(m.G))
    return out


def decision_plan(model: StreamsModel, decision: Decision, method: str = "greedy") -> StreamsPlan:
    """The plan of another assignor's decision (roughly the inverse of :func:`plan_decision`), e.g. a hint.

    A task's target is its warm-up's client where it has one, else where it runs;
    a standby catching up in a warm-up's place reads as an ordinary standby.
    Run it through :func:`plan_decision` and the check before relying on it.
    """
    m = model
    arr = assignment_arrays(m.snap, decision.assignment)
    warmup = np.full(m.T, -1, dtype=np.int64)
    warmup[arr.warmup_task] = arr.warmup_client
    standby = np.full((m.T, m.want), -1, dtype=np.int64)
    order = np.argsort(arr.standby_task, kind="stable")  # each task's standbys in the decision's order
    st, sc = arr.standby_task[order], arr.standby_client[order]
    rank = np.arange(len(st)) - np.searchsorted(st, st)  # a standby's place among its task's
    keep = rank < m.want
    standby[st[keep], rank[keep]] = sc[keep]
    target = np.where(warmup >= 0, warmup, arr.active)
    return StreamsPlan(target=target, active=arr.active.copy(), warmup=warmup, standby=standby, method=method,
                       status="feasible")
