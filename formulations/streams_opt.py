r"""The optimizing Kafka Streams assignor (``optimal`` for ``kind = "streams"``): model, dispatch, decoding.

One rebalance under KIP-441's high-availability rules, solved by min-cost
flows (:mod:`.streams_flow`) or CP-SAT (:mod:`.streams_cpsat`). The decision is
a *target* ``x[t, c]`` (task ``t`` active on client ``c``) that is balanced,
and what the clients run this round follows from it:

    band        lo_c <= sum_t x[t, c] <= hi_c          (active tasks per thread within balance_factor: the
                                                        most even floor / ceiling split of the thread
                                                        shares, unless a looser band needs fewer movements)
    subtopology lo_cg <= sum_{t in g} x[t, c] <= hi_cg (balance_subtopology: floor / ceiling, laminar)
    movement    a stateful task with caught-up clients whose target client is not caught up is a
                *movement*: it stays active on its holder (its cheapest caught-up client, the previous
                owner when that one is caught up) and the target gets a warm-up, at most
                ``max_warmup_replicas`` warm-ups (one learner in learner mode), cheapest first
    standbys    s[t, c]: min(num_standby_replicas, clients - 1) per stateful task on clients other
                than its active and warm-up clients; with ``rack_aware_assignment_tags`` spread over
                as many tag values as the clients allow
    objective   lexicographic: (1) fewest movements (each one costs a probing rebalance), (2) fewest
                movements whose target gets neither a standby nor a warm-up, (3) KIP-925 cost
                traffic_cost * cross_rack + non_overlap_cost * moves  of what runs this round (with
                strategy "none": moves), (4) fewest standbys above ``cap_c`` (the client's thread
                share of all standbys, rounded up, plus ``standby_slack``), (5) standbys where local
                state is

So when nothing needs a warm-up the target is what runs, it is balanced and no
follow-up is asked for; otherwise each round turns up to the budget of
warm-ups into caught-up clients, and the assignment converges in
``ceil(movements / budget) + 1`` rounds with the fewest movements any balanced
target needs.

``solve_streams(snapshot, options)`` picks the backend from
``options.method``: ``None`` (the flow, or CP-SAT when a side constraint needs
it: ``max_moves`` in ``options.extra``, tags with two or more standbys, or tags
on an instance of at most :data:`CPSAT_AUTO_PAIRS` (task, client) pairs),
``"flow"`` or ``"cpsat"``. The flow keeps the tag rule for one standby
exactly. ``options.extra`` also takes ``standby_slack`` (default 1),
``spread_racks`` (spread standbys over racks as well, as Kafka's rack-aware
standby assignor does; default False) and ``deterministic`` (CP-SAT:
deterministic time and interleaved search, reproducible across runs; default
True, False for the free-running parallel portfolio).

>>> import stickyflow
>>> r = stickyflow.assign({"format": "stickyflow.snapshot/1", "kind": "streams", "now_ms": 0,
...     "tasks": [{"id": f"0_{i}", "stateful": True, "end_offset_sum": 10**6} for i in range(4)],
...     "clients": [{"process_id": "a", "previous_active": ["0_0", "0_1", "0_2", "0_3"],
...                  "previous_standby": []},
...                 {"process_id": "b", "previous_active": [], "previous_standby": []}]})
>>> r.to_json()["assignment"]["b"]
{'active': [], 'standby': [], 'warmup': ['0_2', '0_3']}
>>> r.solver.status, r.followup_rebalance_deadline_ms
('optimal', 600000)
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from stickyflow.errors import StickyflowError, UnknownAssignorError
from stickyflow.registry import SolveOptions
from stickyflow.result import Decision
from stickyflow.streams import ClientAssignment, StreamsSnapshot, task_key
from stickyflow.streams_check import RACK_KEY, rack_tables, tag_combinations

__all__ = ["solve_streams", "METHODS", "StreamsModel", "StreamsPlan", "build_model", "balance_bands",
           "plan_cost", "plan_decision"]

METHODS = ("flow", "cpsat")
DEFAULT_STANDBY_SLACK = 1
MAX_WINDOWS = 12  # balance windows tried when the most even bands need movements
CPSAT_AUTO_PAIRS = 20_000  # tags on instances up to this many (task, client) pairs go to CP-SAT by default


def solve_streams(snapshot: StreamsSnapshot, options: SolveOptions | None = None) -> Decision:
    """The optimal streams assignment of ``snapshot`` (see the module docstring for the model).

    Raises :class:`stickyflow.InfeasibleError` when the model has no solution
    (e.g. ``max_moves`` below what balance needs) and
    :class:`stickyflow.StickyflowError` when the time limit ends with none;
    the front door then falls back to the greedy assignor.
    """
    options = options or SolveOptions()
    method = options.method
    if method not in (None, *METHODS):
        raise UnknownAssignorError(f"method: {method!r} is not a streams method (known: {', '.join(METHODS)})")
    t0 = time.perf_counter()
    model = build_model(snapshot, options)
    needs_cpsat = model.max_moves is not None or bool(model.tag_keys and model.want >= 2)
    if method is None:
        # tags with one standby: the flow keeps the tag rule exactly but places actives and standbys in
        # two stages; CP-SAT places them jointly, as long as the instance is small enough for it
        small = model.T * model.C <= CPSAT_AUTO_PAIRS
        method = "cpsat" if needs_cpsat or (model.tag_keys and small) else "flow"
    if method == "flow":
        if needs_cpsat:
            what = "max_moves" if model.max_moves is not None else "tag spreading with two or more standbys"
            raise StickyflowError(f"method: the flow cannot enforce {what}; use method='cpsat'")
        from .streams_flow import solve_flow

        plan = solve_flow(model)
    else:
        from .streams_cpsat import solve_cpsat

        plan = solve_cpsat(model, options, started=t0)
    return plan_decision(model, plan)


# --------------------------------------------------------------------------- data

@dataclass(slots=True, eq=False)
class StreamsModel:
    """A snapshot as arrays for the formulations (tasks and clients by index, snapshot order).

    Cells: ``cell[c]`` is the client's rack index, ``R`` for a client without a
    rack; ``act_cell[t, r]`` and ``rep_cell[t, r]`` are the KIP-925 traffic cost
    of task ``t`` active / as a replica on a client of cell ``r`` (zero unless a
    rack-aware strategy is set and racks are known); ``move_cost[t]`` is what
    it costs when ``t`` leaves its previous active client(s).
    """

    snap: StreamsSnapshot
    T: int
    C: int
    threads: np.ndarray
    stateful: np.ndarray
    sub: np.ndarray                 # task -> subtopology index 0..G-1
    G: int
    cell: np.ndarray                # client -> cell (rack index, R = no rack)
    R: int
    act_cell: np.ndarray            # (T, R + 1)
    rep_cell: np.ndarray            # (T, R + 1)
    move_cost: np.ndarray           # (T,)
    had: np.ndarray                 # task had a previous active client
    prev_c: np.ndarray              # previous active pairs (every claimer)
    prev_t: np.ndarray
    prev_keys: np.ndarray           # sorted c * T + t of the previous active pairs
    constrained: np.ndarray         # stateful, some but not every client caught up
    cu_c: np.ndarray                # caught-up pairs of constrained tasks
    cu_t: np.ndarray
    cu_keys: np.ndarray             # sorted c * T + t
    holder: np.ndarray              # constrained task -> its cheapest caught-up client (-1 otherwise)
    hold_cost: np.ndarray
    bands: list[tuple[np.ndarray, np.ndarray]]   # (lo, hi) active bands per client, most even first
    sub_lo: np.ndarray | None       # (C, G) with balance_subtopology
    sub_hi: np.ndarray | None
    want: int                       # standbys per stateful task
    budget: int                     # warm-ups this round
    learner: bool
    standby_slack: int
    state_c: np.ndarray             # clients with local state for a stateful task, and how good it is
    state_t: np.ndarray
    state_tie: np.ndarray           # 0 caught up, 1 lagging (no state: 2)
    tag_keys: tuple[str, ...]
    combos: np.ndarray              # (M, K) tag value codes
    client_combo: np.ndarray        # (C,)
    combo_count: np.ndarray         # (M,)
    max_moves: int | None
    rack_aware: bool
    extra: dict[str, Any] = field(default_factory=dict)

    def active_cost(self, t: np.ndarray, c: np.ndarray) -> np.ndarray:
        """KIP-925 cost of task(s) ``t`` active on client(s) ``c`` (traffic plus the move, if it is one)."""
        t = np.asarray(t, dtype=np.int64)
        c = np.asarray(c, dtype=np.int64)
        kept = np.isin(c * self.T + t, self.prev_keys)
        return self.act_cell[t, self.cell[c]] + np.where(kept, 0, self.move_cost[t])

    def replica_cost(self, t: np.ndarray, c: np.ndarray) -> np.ndarray:
        t = np.asarray(t, dtype=np.int64)
        return self.rep_cell[t, self.cell[np.asarray(c, dtype=np.int64)]]

    def standby_cap(self, slack: int) -> np.ndarray:
        """Standbys each client may hold: its thread share of all standbys, rounded up, plus ``slack``."""
        total = self.want * int(self.stateful.sum())
        TH = int(self.threads.sum())
        return -(-total * self.threads // max(TH, 1)) + slack


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

    # caught-up clients; a task is constrained when some, but not every, client is caught up
    has_cu = np.zeros(T, dtype=bool)
    has_cu[idx.caught_up_task] = True
    constrained = stateful & has_cu & ~np.asarray(idx.everyone_caught_up, dtype=bool)
    sel = constrained[idx.caught_up_task]
    cu_c = np.asarray(idx.caught_up_client, dtype=np.int64)[sel]
    cu_t = np.asarray(idx.caught_up_task, dtype=np.int64)[sel]
    cu_keys = np.unique(cu_c * T + cu_t)

    model = StreamsModel(
        snap=snap, T=T, C=C, threads=threads, stateful=stateful, sub=sub.astype(np.int64), G=G, cell=cell, R=R,
        act_cell=np.ascontiguousarray(act_cell, dtype=np.int64),
        rep_cell=np.ascontiguousarray(rep_cell, dtype=np.int64),
        move_cost=move_cost, had=had, prev_c=prev_c, prev_t=prev_t, prev_keys=prev_keys,
        constrained=constrained, cu_c=cu_c, cu_t=cu_t, cu_keys=cu_keys,
        holder=np.full(T, -1, dtype=np.int64), hold_cost=np.zeros(T, dtype=np.int64),
        bands=[], sub_lo=None, sub_hi=None, want=snap.standbys_per_task(),
        budget=1 if cfg.rebalancing_mode == "learner" else cfg.max_warmup_replicas,
        learner=cfg.rebalancing_mode == "learner",
        standby_slack=int(extra.get("standby_slack", DEFAULT_STANDBY_SLACK)),
        state_c=np.zeros(0, dtype=np.int64), state_t=np.zeros(0, dtype=np.int64),
        state_tie=np.zeros(0, dtype=np.int64), tag_keys=(), combos=np.zeros((1, 0), dtype=np.int64),
        client_combo=np.zeros(C, dtype=np.int64), combo_count=np.array([C], dtype=np.int64),
        max_moves=None, rack_aware=rack_aware)
    if model.standby_slack < 0:
        raise StickyflowError(f"standby_slack: must be an integer >= 0, not {model.standby_slack!r}")
    mm = extra.get("max_moves")
    if mm is not None:
        if not isinstance(mm, int) or isinstance(mm, bool) or mm < 0:
            raise StickyflowError(f"max_moves: must be an integer >= 0, not {mm!r}")
        model.max_moves = mm

    # holders: the cheapest caught-up client (the previous owner first on ties, then snapshot order)
    if len(cu_t):
        cost = model.active_cost(cu_t, cu_c)
        not_prev = ~np.isin(cu_c * T + cu_t, prev_keys)
        order = np.lexsort((cu_c, not_prev, cost, cu_t))
        first = order[np.unique(cu_t[order], return_index=True)[1]]
        model.holder[cu_t[first]] = cu_c[first]
        model.hold_cost[cu_t[first]] = cost[first]

    # balance
    if C:
        model.bands = balance_bands(T, threads, cfg.balance_factor)
        if cfg.rack_aware_assignment_strategy == "balance_subtopology" and G > 1:
            n_g = np.bincount(sub, minlength=G).astype(np.int64)
            TH = int(threads.sum())
            num = n_g[None, :] * threads[:, None]
            model.sub_lo = num // TH
            model.sub_hi = -(-num // TH)

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


def balance_bands(n: int, threads: np.ndarray, balance_factor: int = 1) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per-client bounds ``(lo, hi)`` on active tasks, from the most even to the loosest within ``balance_factor``.

    1. each client the floor or the ceiling of its thread share
       ``n * threads_c / sum(threads)``, restricted to the most even choice (the
       smallest spread of tasks per thread any such split reaches);
    2. the floor or the ceiling, unrestricted (tasks per thread then differ by at most one);
    3. windows ``[L, L + balance_factor]`` of tasks per thread that hold the mean
       (at most :data:`MAX_WINDOWS`, centred ones first).

    Every band keeps active tasks per thread within ``balance_factor`` of each
    other; duplicates are dropped. The solvers take the first band that needs
    the fewest movements.

    >>> [(lo.tolist(), hi.tolist()) for lo, hi in balance_bands(4, np.array([1, 2]))][:2]
    [([1, 2], [1, 3]), ([1, 2], [2, 3])]
    >>> [(lo.tolist(), hi.tolist()) for lo, hi in balance_bands(6, np.array([1, 1, 1]))]
    [([2, 2, 2], [2, 2, 2]), ([1, 1, 1], [2, 2, 2]), ([2, 2, 2], [3, 3, 3])]
    """
    threads = np.asarray(threads, dtype=np.int64)
    C = len(threads)
    if not C:
        return []
    TH = int(threads.sum())
    lo = n * threads // TH
    hi = -(-n * threads // TH)
    out = [_most_even(n, threads, lo, hi), (lo, hi)]
    # windows [L, L + balance_factor] of tasks per thread holding the mean; the bounds change only where
    # threads * L crosses an integer, so L = k / threads covers them all (centred windows first)
    mean = Fraction(n, TH)
    starts: set[Fraction] = set()
    for th in sorted(set(threads.tolist())):
        for k in range(max(0, math.ceil((mean - balance_factor) * th)), math.floor(mean * th) + 1):
            starts.add(max(Fraction(k, th), Fraction(0)))
    for L in sorted(starts, key=lambda x: (abs(x + Fraction(balance_factor, 2) - mean), x))[:MAX_WINDOWS]:
        wl = np.array([math.ceil(L * th) for th in threads.tolist()], dtype=np.int64)
        wh = np.array([math.floor((L + balance_factor) * th) for th in threads.tolist()], dtype=np.int64)
        if wl.sum() <= n <= wh.sum():
            out.append((wl, wh))
    seen: set[tuple] = set()
    bands = []
    for a, b in out:
        key = (tuple(a.tolist()), tuple(b.tolist()))
        if key not in seen:
            seen.add(key)
            bands.append((a.astype(np.int64), b.astype(np.int64)))
    return bands


def _most_even(n: int, threads: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The floor / ceiling band restricted to the smallest spread of tasks per thread it can reach."""
    TH = int(threads.sum())
    k = n - int(lo.sum())  # clients that take the ceiling
    if k == 0 or (hi == lo).all():
        return lo, hi
    # the per-thread values a client can take depend on its thread count only: search windows over them
    kinds = sorted(set(threads.tolist()))
    a = {th: Fraction(n * th // TH, th) for th in kinds}
    b = {th: Fraction(-(-n * th // TH), th) for th in kinds}
    count = {th: int((threads == th).sum()) for th in kinds}
    flex = {th: (n * th) % TH != 0 for th in kinds}
    values = sorted(set(a.values()) | set(b.values()))
    best: tuple[Fraction, Fraction] | None = None
    for i, L in enumerate(values):
        for H in values[i:]:
            if best is not None and H - L >= best[1] - best[0]:
                break
            forced = optional = 0
            ok = True
            for th in kinds:
                fa, fb = L <= a[th] <= H, L <= b[th] <= H
                if not flex[th]:
                    ok &= fa
                elif fa and fb:
                    optional += count[th]
                elif fb:
                    forced += count[th]
                elif not fa:
                    ok = False
            if ok and forced <= k <= forced + optional:
                best = (L, H)
                break
    assert best is not None  # the full window always works
    L, H = best
    floor_ok = np.array([L <= a[th] <= H for th in threads.tolist()])
    ceil_ok = np.array([L <= b[th] <= H for th in threads.tolist()])
    return np.where(floor_ok, lo, hi), np.where(ceil_ok, hi, lo)


# --------------------------------------------------------------------------- what a solver returns

@dataclass(slots=True, eq=False)
class StreamsPlan:
    """A solved round: per task its target, what runs, warm-up and standbys (client indexes, -1 for none).

    ``standby`` is (T, want). ``bound`` is a proven lower bound on the cost
    among assignments with as few movements, or None.
    """

    target: np.ndarray
    active: np.ndarray
    warmup: np.ndarray
    standby: np.ndarray
    method: str
    status: str
    bound: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def plan_cost(model: StreamsModel, plan: StreamsPlan) -> int:
    """The KIP-925 cost of what runs (``streams_metrics(...)["cost"]`` of the decision)."""
    m = model
    if not m.T or not m.C:
        return 0
    t = np.arange(m.T)
    cost = int(m.active_cost(t, plan.active).sum())
    w = plan.warmup >= 0
    cost += int(m.replica_cost(t[w], plan.warmup[w]).sum())
    if m.want:
        st = np.repeat(t, m.want)
        sc = plan.standby.reshape(-1)
        ok = sc >= 0
        cost += int(m.replica_cost(st[ok], sc[ok]).sum())
    return cost


def movements(model: StreamsModel, target: np.ndarray) -> np.ndarray:
    """Tasks whose target client is not caught up while some client is (boolean mask)."""
    m = model
    if not m.T:
        return np.zeros(0, dtype=bool)
    keys = target * m.T + np.arange(m.T)
    return m.constrained & ~np.isin(keys, m.cu_keys)


def choose_warmups(model: StreamsModel, target: np.ndarray, moving: np.ndarray, active: np.ndarray) -> np.ndarray:
    """Warm-ups for up to ``budget`` movements (-1 elsewhere): cheapest first, ties in TaskId order.

    In learner mode the one learner is a task of the most loaded client (active tasks per thread).
    """
    m = model
    warm = np.full(m.T, -1, dtype=np.int64)
    tasks = np.flatnonzero(moving)
    if not len(tasks) or m.budget <= 0:
        return warm
    rank = _task_rank(m)
    cost = m.replica_cost(tasks, target[tasks])
    if m.learner:
        load = np.bincount(active, minlength=m.C) / m.threads
        order = np.lexsort((rank[tasks], cost, -load[active[tasks]]))
    else:
        order = np.lexsort((rank[tasks], cost))
    pick = tasks[order[:m.budget]]
    warm[pick] = target[pick]
    return warm


def _task_rank(model: StreamsModel) -> np.ndarray:
    r = model.extra.get("task_rank")
    if r is None:
        ids = model.snap.index.task_ids
        order = sorted(range(model.T), key=lambda i: task_key(ids[i]))
        r = np.empty(model.T, dtype=np.int64)
        r[np.asarray(order, dtype=np.int64)] = np.arange(model.T)
        model.extra["task_rank"] = r
    return r


def plan_decision(model: StreamsModel, plan: StreamsPlan) -> Decision:
    """The :class:`Decision` of a plan: process id -> roles, cost, bound, follow-up."""
    m = model
    snap = m.snap
    idx = snap.index
    ids = idx.task_ids
    rank = _task_rank(m)
    roles: dict[str, list[list[int]]] = {pid: [[], [], []] for pid in idx.client_ids}
    if m.T and m.C:
        t = np.arange(m.T)
        pairs = [(plan.active, t, 0)]
        w = plan.warmup >= 0
        pairs.append((plan.warmup[w], t[w], 2))
        if m.want:
            sc = plan.standby.reshape(-1)
            st = np.repeat(t, m.want)
            ok = sc >= 0
            pairs.append((sc[ok], st[ok], 1))
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
    moving = int(plan.extra.get("movements", 0))
    followup = snap.followup_deadline() if moving or (plan.warmup >= 0).any() else None
    cost = plan_cost(m, plan)
    bound = plan.bound
    status = plan.status
    if bound is not None and bound > cost:  # never claim a bound the solution beats: a bug, not a bound
        bound = None
    if status == "optimal" and bound is not None and bound != cost:
        status = "feasible"
    extra = dict(plan.extra)
    extra.pop("task_rank", None)
    return Decision(assignment=assignment, method=plan.method, status=status, objective=cost, bound=bound,
                    followup_rebalance_deadline_ms=followup, extra=extra)
