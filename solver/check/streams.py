"""Checking and measuring Kafka Streams task assignments.

:func:`validate_streams` returns every broken rule of an assignment, with
KIP-924's ``AssignmentError`` names where KIP-924 has one and our own for the
high-availability rules of the spec; :func:`assignment_error` turns the list
into the result's ``error`` field. :func:`streams_metrics` measures moves,
balance, cross-rack traffic and cost. :func:`finish_streams` is what the front
door calls on an assignor's :class:`~stickyflow.result.Decision`.

The codes, in the order :func:`assignment_error` picks them (a malformed output first, then KIP-924's own
names, then the spec's high-availability rules):

=================================================== =====================================================
``MALFORMED_ASSIGNMENT``                            the assignor's output is not an assignment (bad role names, types)
``UNKNOWN_PROCESS_ID``                              a process id that is not a client of the snapshot
``MISSING_PROCESS_ID``                              a client missing from the assignment
``UNKNOWN_TASK_ID``                                 a task id that is not a task of the snapshot
``ACTIVE_TASK_ASSIGNED_MULTIPLE_TIMES``             a task active on two clients (or twice on one)
``ACTIVE_AND_STANDBY_TASK_ASSIGNED_TO_SAME_KAFKASTREAMS`` a client holding a task as active and as standby or warm-up
``INVALID_STANDBY_TASK``                            a standby or warm-up of a stateless task
``STANDBY_TASK_ASSIGNED_MULTIPLE_TIMES``            a client holding two standby / warm-up replicas of one task
``ACTIVE_TASK_UNASSIGNED``                          a task active nowhere (while there are clients)
``STANDBY_TASK_COUNT``                              a stateful task without ``min(num_standby_replicas, clients - 1)`` standbys
``STANDBY_TAGS_NOT_SPREAD``                         a standby that could move to a client adding a tag value (KIP-708)
``ACTIVE_TASK_NOT_CAUGHT_UP``                       an active on a lagging client while a caught-up client (with none: one with less lag) exists
``WARMUP_BUDGET_EXCEEDED``                          more warm-ups than ``max_warmup_replicas`` (one learner in learner mode)
``FOLLOWUP_DEADLINE``                               warm-ups without the probing follow-up, a wrong deadline, or a follow-up while no move waits
``UNBALANCED_WITHOUT_FOLLOWUP``                     no follow-up asked, yet actives per thread differ by more than ``balance_factor``
=================================================== =====================================================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from ..model.streams import ClientAssignment, StreamsSnapshot, task_key
from ..result import Decision, Finished, Violation
from .streams_tables import eligible_pairs, fully_spread, rack_tables, tag_combinations, tag_spread_improvement

__all__ = [
    "KIP924_ERRORS",
    "ERROR_ORDER",
    "AssignmentArrays",
    "normalize_streams_assignment",
    "as_client_assignment",
    "assignment_arrays",
    "validate_streams",
    "assignment_error",
    "streams_metrics",
    "finish_streams",
    "active_loads_per_thread",
    "is_balanced",
    "balance_excess",
]

KIP924_ERRORS = (
    "NONE",
    "ACTIVE_TASK_ASSIGNED_MULTIPLE_TIMES",
    "ACTIVE_AND_STANDBY_TASK_ASSIGNED_TO_SAME_KAFKASTREAMS",
    "INVALID_STANDBY_TASK",
    "MISSING_PROCESS_ID",
    "UNKNOWN_PROCESS_ID",
    "UNKNOWN_TASK_ID",
)
ERROR_ORDER = (
    "MALFORMED_ASSIGNMENT",
    "UNKNOWN_PROCESS_ID",
    "MISSING_PROCESS_ID",
    "UNKNOWN_TASK_ID",
    "ACTIVE_TASK_ASSIGNED_MULTIPLE_TIMES",
    "ACTIVE_AND_STANDBY_TASK_ASSIGNED_TO_SAME_KAFKASTREAMS",
    "INVALID_STANDBY_TASK",
    "STANDBY_TASK_ASSIGNED_MULTIPLE_TIMES",
    "ACTIVE_TASK_UNASSIGNED",
    "STANDBY_TASK_COUNT",
    "STANDBY_TAGS_NOT_SPREAD",
    "ACTIVE_TASK_NOT_CAUGHT_UP",
    "WARMUP_BUDGET_EXCEEDED",
    "FOLLOWUP_DEADLINE",
    "UNBALANCED_WITHOUT_FOLLOWUP",
)
_UNSET: Any = object()


# --------------------------------------------------------------------------- normal form

def as_client_assignment(value: Any) -> ClientAssignment:
    """One client's answer as a :class:`ClientAssignment`: one already, KIP-924's ``KafkaStreamsAssignment``, or a
    mapping of roles (TypeError/ValueError when it is none of these)."""
    if isinstance(value, ClientAssignment):
        return value
    convert = getattr(value, "to_client_assignment", None)  # KIP-924's KafkaStreamsAssignment
    if convert is not None:
        return convert()
    if isinstance(value, Mapping):
        unknown = set(value) - {"active", "standby", "warmup"}
        if unknown:
            raise ValueError(f"a client's assignment has unknown role(s) {sorted(unknown)}; "
                             "allowed: active, standby, warmup")
        return ClientAssignment.of(value.get("active", ()), value.get("standby", ()), value.get("warmup", ()))
    raise TypeError(f"a client's assignment must be a ClientAssignment or a mapping of roles, not {type(value).__name__}")


def normalize_streams_assignment(snap: StreamsSnapshot, assignment: Mapping[str, Any]) -> dict[str, ClientAssignment]:
    """Every client present (in snapshot order, then unknown ids kept for the check), task ids sorted.

    Values may be :class:`ClientAssignment`, ``{"active": [...], "standby": [...], "warmup": [...]}``
    mappings, or KIP-924 ``KafkaStreamsAssignment`` objects.
    """
    out: dict[str, ClientAssignment] = {c.process_id: ClientAssignment() for c in snap.clients}
    for pid, value in assignment.items():
        ca = as_client_assignment(value)
        key = lambda ids: tuple(sorted(ids, key=task_key))  # noqa: E731
        out[str(pid)] = ClientAssignment(active=key(ca.active), standby=key(ca.standby), warmup=key(ca.warmup))
    return out


@dataclass(frozen=True, slots=True, eq=False)
class AssignmentArrays:
    """An assignment as (client index, task index) pairs per role; unknown ids are left out (and listed).

    ``active[t]`` is the active client of task ``t`` (the last one seen when
    assigned twice), -1 when none (an internal array; the public API speaks ids).
    """

    active: np.ndarray
    active_client: np.ndarray
    active_task: np.ndarray
    standby_client: np.ndarray
    standby_task: np.ndarray
    warmup_client: np.ndarray
    warmup_task: np.ndarray
    unknown_clients: tuple[str, ...]
    unknown_tasks: tuple[tuple[str, str], ...]  # (process id, task id)


def assignment_arrays(snap: StreamsSnapshot, assignment: Mapping[str, ClientAssignment]) -> AssignmentArrays:
    """Index pairs of a (normalized) assignment, for numpy checks and metrics."""
    idx = snap.index
    tpos = idx.task_pos
    cols: dict[str, tuple[list[int], list[int]]] = {"active": ([], []), "standby": ([], []), "warmup": ([], [])}
    unknown_clients: list[str] = []
    unknown_tasks: list[tuple[str, str]] = []
    for pid, ca in assignment.items():
        ci = idx.client_pos.get(pid)
        if ci is None:
            unknown_clients.append(pid)
            continue
        for role in ("active", "standby", "warmup"):
            cs, ts = cols[role]
            ids = getattr(ca, role)
            pos = [tpos.get(t, -1) for t in ids]
            if -1 in pos:
                unknown_tasks.extend((pid, t) for t, p in zip(ids, pos) if p < 0)
                pos = [p for p in pos if p >= 0]
            cs.extend([ci] * len(pos))
            ts.extend(pos)
    arr = {role: (np.asarray(cs, dtype=np.int64), np.asarray(ts, dtype=np.int64)) for role, (cs, ts) in cols.items()}
    active = np.full(len(idx.task_ids), -1, dtype=np.int64)
    ac, at = arr["active"]
    active[at] = ac
    return AssignmentArrays(active=active, active_client=ac, active_task=at,
                            standby_client=arr["standby"][0], standby_task=arr["standby"][1],
                            warmup_client=arr["warmup"][0], warmup_task=arr["warmup"][1],
                            unknown_clients=tuple(unknown_clients), unknown_tasks=tuple(unknown_tasks))


# --------------------------------------------------------------------------- validation

def active_loads_per_thread(snap: StreamsSnapshot, arrays: AssignmentArrays) -> np.ndarray:
    """Active tasks per thread of every client (float array)."""
    counts = np.bincount(arrays.active_client, minlength=len(snap.clients)).astype(np.float64)
    return counts / snap.index.threads


def _imbalance(loads: np.ndarray) -> float:
    if not len(loads):
        return 0.0
    return round(float(loads.max() - loads.min()), 9)


def _dup_keys(keys: np.ndarray) -> np.ndarray:
    """The values that occur more than once in ``keys``."""
    if not len(keys):
        return keys
    u, n = np.unique(keys, return_counts=True)
    return u[n > 1]


def validate_streams(snapshot: StreamsSnapshot, assignment: Mapping[str, Any], *,
                     followup_rebalance_deadline_ms: Any = _UNSET) -> list[Violation]:
    """Every violation of the spec's rules by ``assignment`` (empty when valid).

    ``assignment`` maps process id -> :class:`ClientAssignment` (or a role
    mapping). The follow-up rules are checked when
    ``followup_rebalance_deadline_ms`` is given (None included: "no follow-up").

    Every broken rule is reported, each once: a rule broken by many tasks is one
    :class:`Violation` whose message names the first and counts the rest (a
    100,000-task assignment with one systematic bug gives one line, not 100,000).
    The tag-spread rule (KIP-708) is checked by single moves: a violation is a
    standby that could move to a client holding no replica of the task and so
    gain a tag value on some key without losing one on any. With one standby per
    task (the active stays put) that is the whole rule; with more, an assignment
    that no single move improves passes.

    >>> from stickyflow.model.streams import parse_streams
    >>> s = parse_streams({"format": "stickyflow.snapshot/1", "kind": "streams",
    ...     "tasks": [{"id": "0_0", "stateful": False}, {"id": "0_1", "stateful": False}],
    ...     "clients": [{"process_id": "a", "previous_active": [], "previous_standby": []}]})
    >>> [v.code for v in validate_streams(s, {"a": {"active": ["0_0"], "standby": ["0_1"]}})]
    ['INVALID_STANDBY_TASK', 'ACTIVE_TASK_UNASSIGNED']
    """
    snap = snapshot
    v: list[Violation] = []
    idx = snap.index
    T, C = len(idx.task_ids), len(idx.client_ids)
    cfg = snap.config
    for pid in idx.client_ids:
        if pid not in assignment:
            v.append(Violation("MISSING_PROCESS_ID", f"client {pid!r} is missing from the assignment"))
    norm = normalize_streams_assignment(snap, assignment)
    a = assignment_arrays(snap, norm)
    for pid in a.unknown_clients:
        v.append(Violation("UNKNOWN_PROCESS_ID", f"{pid!r} is not a client of the application"))
    if a.unknown_tasks:
        pid, tid = a.unknown_tasks[0]
        more = f" (and {len(a.unknown_tasks) - 1} more)" if len(a.unknown_tasks) > 1 else ""
        v.append(Violation("UNKNOWN_TASK_ID", f"{pid!r} is assigned {tid!r}, which is not a task{more}"))

    tid = idx.task_ids
    cid = idx.client_ids
    active_count = np.bincount(a.active_task, minlength=T)
    dup = np.flatnonzero(active_count > 1)
    if len(dup):
        v.append(Violation("ACTIVE_TASK_ASSIGNED_MULTIPLE_TIMES",
                           f"{len(dup)} task(s) are active more than once, e.g. {tid[dup[0]]}"))
    # one role per task per client: keys c * T + t
    ak = a.active_client * T + a.active_task
    rk = np.concatenate([a.standby_client * T + a.standby_task, a.warmup_client * T + a.warmup_task])
    both = np.intersect1d(ak, rk)
    if len(both):
        c0, t0 = divmod(int(both[0]), T)
        v.append(Violation("ACTIVE_AND_STANDBY_TASK_ASSIGNED_TO_SAME_KAFKASTREAMS",
                           f"{len(both)} task(s) are active and standby (or warm-up) on one client, "
                           f"e.g. {tid[t0]} on {cid[c0]!r}"))
    replica_tasks = np.concatenate([a.standby_task, a.warmup_task])
    stateless_replicas = replica_tasks[~idx.stateful[replica_tasks]] if len(replica_tasks) else replica_tasks
    if len(stateless_replicas):
        v.append(Violation("INVALID_STANDBY_TASK",
                           f"{len(stateless_replicas)} standby/warm-up replica(s) of stateless tasks, "
                           f"e.g. {tid[stateless_replicas[0]]}"))
    rdup = _dup_keys(rk)
    if len(rdup):
        c0, t0 = divmod(int(rdup[0]), T)
        v.append(Violation("STANDBY_TASK_ASSIGNED_MULTIPLE_TIMES",
                           f"{len(rdup)} time(s) a client holds two standby/warm-up replicas of one task, "
                           f"e.g. {tid[t0]} on {cid[c0]!r}"))
    if C:
        missing = np.flatnonzero(active_count == 0)
        if len(missing):
            v.append(Violation("ACTIVE_TASK_UNASSIGNED",
                               f"{len(missing)} task(s) are active nowhere, e.g. {tid[missing[0]]}"))
    want = snap.standbys_per_task()
    standby_count = np.bincount(a.standby_task, minlength=T)
    wrong = np.flatnonzero(idx.stateful & (standby_count != want))
    if len(wrong):
        t0 = wrong[0]
        v.append(Violation("STANDBY_TASK_COUNT",
                           f"{len(wrong)} stateful task(s) do not have {want} standby(s) "
                           f"(min(num_standby_replicas, clients - 1)), e.g. {tid[t0]} has {int(standby_count[t0])}"))
    if cfg.rack_aware_assignment_tags and want and not len(rdup) and not len(both):
        bad = _tag_spread_failures(snap, a)
        if bad:
            t0, c0 = bad[0]
            v.append(Violation("STANDBY_TAGS_NOT_SPREAD",
                               f"{len(bad)} task(s) could spread their replicas over more values of "
                               f"{list(cfg.rack_aware_assignment_tags)}, e.g. {tid[t0]}'s standby on {cid[c0]!r}"))
    # caught-up actives
    if C and T:
        stuck = _actives_not_caught_up(snap, a)
        if len(stuck):
            v.append(Violation("ACTIVE_TASK_NOT_CAUGHT_UP",
                               f"{len(stuck)} stateful task(s) are active on a lagging client while a caught-up "
                               f"client (or, with none, a client with less lag) exists, e.g. {tid[stuck[0]]} on "
                               f"{cid[a.active[stuck[0]]]!r}"))
    budget = 1 if cfg.rebalancing_mode == "learner" else cfg.max_warmup_replicas
    warmups = len(a.warmup_task)
    if warmups > budget:
        what = "one learner (rebalancing_mode learner)" if cfg.rebalancing_mode == "learner" else \
            f"max_warmup_replicas = {cfg.max_warmup_replicas}"
        v.append(Violation("WARMUP_BUDGET_EXCEEDED", f"{warmups} warm-up replicas; at most {what}"))
    if followup_rebalance_deadline_ms is not _UNSET:
        f = followup_rebalance_deadline_ms
        due = snap.followup_deadline()
        if warmups and f != due:
            v.append(Violation("FOLLOWUP_DEADLINE",
                               f"{warmups} warm-up(s) run but the follow-up deadline is {f}, not now_ms + "
                               f"probing_rebalance_interval_ms = {due}"))
        elif f is not None and f != due:
            v.append(Violation("FOLLOWUP_DEADLINE",
                               f"the follow-up deadline must be now_ms + probing_rebalance_interval_ms = {due}, not {f}"))
        elif f is not None and not warmups and not _lagging_standbys(snap, a):
            v.append(Violation("FOLLOWUP_DEADLINE",
                               "a follow-up rebalance is asked for, yet no move waits: no warm-up runs and every "
                               "standby is caught up"))
        elif f is None:
            imb = _imbalance(active_loads_per_thread(snap, a))
            if imb > cfg.balance_factor:
                v.append(Violation("UNBALANCED_WITHOUT_FOLLOWUP",
                                   f"no follow-up rebalance is asked for, yet active tasks per thread differ by "
                                   f"{imb:g} > balance_factor = {cfg.balance_factor}"))
    return v


def _lagging_standbys(snap: StreamsSnapshot, a: AssignmentArrays) -> int:
    """Standbys on a client that is not caught up for their task (one of them may be catching up for a move)."""
    if not len(a.standby_task):
        return 0
    idx = snap.index
    T = len(idx.task_ids)
    cu = np.isin(a.standby_client * T + a.standby_task, idx.caught_up_client * T + idx.caught_up_task)
    cu |= idx.everyone_caught_up[a.standby_task]
    return int((~cu).sum())


def _actives_not_caught_up(snap: StreamsSnapshot, a: AssignmentArrays) -> np.ndarray:
    """Stateful tasks active on a client that is not caught up while some client is, or, where none is,
    on a client whose lag is above the least lag any client has (KIP-441's rank)."""
    el = eligible_pairs(snap)
    owner = a.active
    ok = el.free.copy()
    hit = owner[el.task] == el.client
    ok[el.task[hit]] = True
    return np.flatnonzero(snap.index.stateful & (owner >= 0) & ~ok)


def _tag_spread_failures(snap: StreamsSnapshot, a: AssignmentArrays) -> list[tuple[int, int]]:
    """(task, standby client) pairs where one standby could move to add a tag value (single-swap Pareto check)."""
    combos, client_combo, counts = tag_combinations(snap)
    if len(combos) <= 1:
        return []
    idx = snap.index
    T = len(idx.task_ids)
    order = np.argsort(a.standby_task, kind="stable")
    st, sc = a.standby_task[order], a.standby_client[order]
    bounds = np.searchsorted(st, np.arange(T + 1))
    wt_order = np.argsort(a.warmup_task, kind="stable")
    wt, wc = a.warmup_task[wt_order], a.warmup_client[wt_order]
    wbounds = np.searchsorted(wt, np.arange(T + 1))
    M = len(combos)
    combo_rows = combos.tolist()
    out: list[tuple[int, int]] = []
    for t in np.flatnonzero(idx.stateful & (a.active >= 0)):
        sb = sc[bounds[t]:bounds[t + 1]]
        if not len(sb):
            continue
        holders = np.concatenate([[a.active[t]], sb, wc[wbounds[t]:wbounds[t + 1]]])
        reps = [int(client_combo[c]) for c in np.concatenate([[a.active[t]], sb])]
        if fully_spread(combo_rows, reps):
            continue
        held = np.bincount(client_combo[holders], minlength=M)
        free = (counts - held > 0).tolist()
        if not any(free):
            continue
        for pos in range(1, len(reps)):
            if tag_spread_improvement(combo_rows, reps, free, pos):
                out.append((int(t), int(sb[pos - 1])))
                break
    return out


def assignment_error(violations: list[Violation] | tuple[Violation, ...]) -> str:
    """The result's ``error`` field: ``"NONE"``, else the most basic violation's code (KIP-924's names first).

    >>> assignment_error([])
    'NONE'
    >>> assignment_error([Violation("STANDBY_TASK_COUNT", "..."), Violation("UNKNOWN_TASK_ID", "...")])
    'UNKNOWN_TASK_ID'
    """
    if not violations:
        return "NONE"
    rank = {c: i for i, c in enumerate(ERROR_ORDER)}
    return min((x.code for x in violations), key=lambda c: rank.get(c, len(rank)))


# --------------------------------------------------------------------------- metrics

def streams_metrics(snapshot: StreamsSnapshot, assignment: Mapping[str, Any]) -> dict[str, Any]:
    """Measure an assignment.

    * ``moves``: active tasks that left their previous active client (stateful and stateless)
    * ``stateful_moves``: those of stateful tasks
    * ``imbalance``: max minus min active tasks per thread over clients (a float)
    * ``cross_rack``: KIP-925's count (actives by input partition, standbys and
      warm-ups by changelog partition), None unless racks are known
    * ``warmups``, ``standbys``: replica counts
    * ``traffic_cost``: ``traffic_cost x cross_rack`` with the costs in force
      (Kafka's defaults: 10 for stateful tasks, 1 for stateless ones), None unless racks are known
    * ``standby_moves``: standbys on a client that held their task in no role (active or standby) before
    * ``cost``: the spec's objective, ``traffic_cost x cross_rack + non_overlap_cost x (moves + standby_moves)``
      with a rack-aware strategy, else ``moves + standby_moves``
    * ``balanced``: **Balanced** (threads as weights, ``balance_factor`` as slack) holds for active tasks,
      stateful active tasks and replicas (active, standby and warm-up) at once; each count apart in
      ``balanced_active``, ``balanced_stateful``, ``balanced_replicas``, and under ``balance_subtopology``
      ``balanced_subtopology`` (every subtopology's active tasks; None otherwise)
    """
    snap = snapshot
    norm = normalize_streams_assignment(snap, assignment)
    a = assignment_arrays(snap, norm)
    idx = snap.index
    cfg = snap.config
    T = len(idx.task_ids)
    kept = np.zeros(T, dtype=bool)
    if len(idx.prev_active_task):
        kept[idx.prev_active_task[a.active[idx.prev_active_task] == idx.prev_active_client]] = True
    had = np.zeros(T, dtype=bool)
    had[idx.prev_active_task] = True
    moved = had & ~kept
    loads = active_loads_per_thread(snap, a)
    racks = rack_tables(snap)
    cross = traffic = None
    if racks.known:
        ac = np.zeros(T, dtype=np.int64)
        np.add.at(ac, a.active_task, racks.active_cost(a.active_client, a.active_task))
        rc = np.zeros(T, dtype=np.int64)
        rt = np.concatenate([a.standby_task, a.warmup_task])
        rcl = np.concatenate([a.standby_client, a.warmup_client])
        np.add.at(rc, rt, racks.replica_cost(rcl, rt))
        per_task = ac + rc
        cross = int(per_task.sum())
        w = np.where(idx.stateful, cfg.traffic_cost(), cfg.traffic_cost(stateless=True))
        traffic = int(np.dot(w, per_task))
    C = len(idx.client_ids)
    held = np.unique(np.concatenate([idx.prev_active_client * T + idx.prev_active_task,
                                     idx.prev_standby_client * T + idx.prev_standby_task]))
    new_sb = ~np.isin(a.standby_client * T + a.standby_task, held)
    standby_moves = int(new_sb.sum())
    if cfg.rack_aware:
        wm = np.where(idx.stateful, cfg.non_overlap_cost(), cfg.non_overlap_cost(stateless=True))
        cost = int(np.dot(wm, moved)) + int(wm[a.standby_task[new_sb]].sum()) + (traffic or 0)
    else:
        cost = int(moved.sum()) + standby_moves
    bf = cfg.balance_factor
    th = idx.threads
    act = np.bincount(a.active_client, minlength=C)
    stf = np.bincount(a.active_client[idx.stateful[a.active_task]], minlength=C) if len(a.active_task) else act
    rep = act + np.bincount(a.standby_client, minlength=C) + np.bincount(a.warmup_client, minlength=C)
    b_act, b_stf, b_rep = (is_balanced(x, th, bf) for x in (act, stf, rep))
    b_sub = None
    if cfg.rack_aware_assignment_strategy == "balance_subtopology" and C and T:
        subs = np.fromiter((t.subtopology for t in snap.tasks), dtype=np.int64, count=T)
        b_sub = all(is_balanced(np.bincount(a.active_client[subs[a.active_task] == g], minlength=C), th, bf)
                    for g in np.unique(subs).tolist())
    return {
        "moves": int(moved.sum()),
        "standby_moves": standby_moves,
        "balanced": bool(b_act and b_stf and b_rep),
        "balanced_active": bool(b_act), "balanced_stateful": bool(b_stf), "balanced_replicas": bool(b_rep),
        "balanced_subtopology": b_sub,
        "stateful_moves": int((moved & idx.stateful).sum()),
        "imbalance": _imbalance(loads),
        "cross_rack": cross,
        "warmups": int(len(a.warmup_task)),
        "standbys": int(len(a.standby_task)),
        "traffic_cost": traffic,
        "cost": cost,
        "max_active_per_thread": round(float(loads.max()), 9) if len(loads) else 0.0,
        "min_active_per_thread": round(float(loads.min()), 9) if len(loads) else 0.0,
        "tasks": T,
        "stateful_tasks": int(idx.stateful.sum()),
        "clients": len(idx.client_ids),
    }


def warming_up(snapshot: StreamsSnapshot, assignment: Mapping[str, ClientAssignment],
               followup_rebalance_deadline_ms: int | None) -> int:
    """The replicas still restoring state while the group converges: every warm-up, and every standby on a
    client that is not caught up for its task (where a move may wait for it), in a result that asks for a
    follow-up rebalance; 0 in one that does not (the group has settled, or a new standby catches up with no
    move waiting on it).

    A result that asks for a follow-up describes a group on its way: ``balanced`` and ``cost`` are this round's,
    not where the group goes. ``metrics["warming_up"] > 0`` says so. ``assignment`` is normalized
    (:func:`normalize_streams_assignment`).
    """
    if followup_rebalance_deadline_ms is None:
        return 0
    a = assignment_arrays(snapshot, assignment)
    return int(len(a.warmup_task)) + _lagging_standbys(snapshot, a)


def is_balanced(counts: np.ndarray, threads: np.ndarray, balance_factor: int = 1) -> bool:
    """**Balanced** (the spec): with ``m`` the least count per thread, every client holds at most
    ``threads x m + balance_factor``.

    >>> is_balanced(np.array([3, 0, 0]), np.array([5, 5, 5]), 3), is_balanced(np.array([4, 0]), np.array([1, 1]), 3)
    (True, False)
    >>> is_balanced(np.array([2, 3]), np.array([1, 2]), 1)   # m = 1.5 per thread: 2 <= 1.5 + 1, 3 <= 3 + 1
    True
    """
    return balance_excess(counts, threads, balance_factor) == 0


def balance_excess(counts: np.ndarray, threads: np.ndarray, balance_factor: int = 1) -> int:
    """How far a count is from **Balanced**: the tasks above ``threads x m + balance_factor``, summed over clients
    (``m`` the least count per thread). 0 exactly when balanced."""
    counts = np.asarray(counts, dtype=np.int64)
    threads = np.asarray(threads, dtype=np.int64)
    if not len(counts):
        return 0
    i = int(np.argmin(counts / threads))
    n0, w0 = int(counts[i]), int(threads[i])
    # counts_c <= threads_c * n0 / w0 + bf  <=>  counts_c * w0 <= threads_c * n0 + bf * w0
    cap = (threads * n0 + balance_factor * w0) // w0
    return int(np.maximum(counts - cap, 0).sum())


def finish_streams(snapshot: StreamsSnapshot, decision: Decision) -> Finished:
    """Check a streams decision and measure it (the front door's step for ``kind == "streams"``)."""
    try:
        norm = normalize_streams_assignment(snapshot, decision.assignment)
    except (TypeError, ValueError, AttributeError) as exc:  # the assignor's output is not an assignment at all
        return Finished(assignment={}, target={}, revocations={}, followup_rebalance_deadline_ms=None,
                        violations=(Violation("MALFORMED_ASSIGNMENT", str(exc)),), metrics={})
    violations = validate_streams(snapshot, norm,
                                  followup_rebalance_deadline_ms=decision.followup_rebalance_deadline_ms)
    waived = decision.extra.get("rules_not_followed") if decision.extra else None
    if waived:  # a baseline that does not follow some high-availability rules (kip1071) names them; only those
        waived = set(waived) & set(ERROR_ORDER[ERROR_ORDER.index("STANDBY_TAGS_NOT_SPREAD"):])
        violations = [v for v in violations if v.code not in waived]
    metrics = streams_metrics(snapshot, norm)
    metrics["warming_up"] = warming_up(snapshot, norm, decision.followup_rebalance_deadline_ms)
    return Finished(assignment=norm, target=norm, revocations={},
                    followup_rebalance_deadline_ms=decision.followup_rebalance_deadline_ms,
                    violations=tuple(violations), metrics=metrics)
