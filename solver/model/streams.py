"""Kafka Streams snapshots: the frozen model, reading and writing the spec's JSON.

A :class:`StreamsSnapshot` is one rebalance of one Kafka Streams application:
its tasks (stateful or not, changelog end offsets, input and changelog
partitions with the racks of their replicas), its clients (threads, rack,
tags, the tasks they ran and the lag of their local state) and the
assignment configs (:class:`StreamsConfig`, Kafka's names and defaults). See
``snapshot-format.md`` (kind ``"streams"``). The readers of tasks, clients and
config are :mod:`stickyflow.model.streams_read`'s.

The wire format's ``-2`` lag (Kafka's ``Task.LATEST_OFFSET``: "I was running
it") is translated once, in the reader. There is one lag rule, in
:meth:`Client.lag`, and everything else (:meth:`StreamsSnapshot.is_caught_up`,
the :class:`StreamsIndex` that the check and the greedy assignors read, and
``streams_rank.rank``) goes through it: 0 for a task the client was running
and for every stateless task (no state, nothing to restore); the reported lag,
at most the task's ``end_offset_sum``, for a task with local state (a client's
offset sum cannot be negative, so its lag never exceeds the end offset sum, and
Kafka's own lag computation never reports more); ``end_offset_sum`` for a
stateful task the client has no state for. "Caught up" is then lag at most
``acceptable_recovery_lag``, and a task whose ``end_offset_sum`` is within it has
every client caught up as a consequence, not as a separate rule.

>>> snap = parse_streams({
...     "format": "stickyflow.snapshot/1", "kind": "streams",
...     "tasks": [{"id": "0_0", "stateful": True, "end_offset_sum": 500}],
...     "clients": [{"process_id": "a", "previous_active": ["0_0"], "previous_standby": []},
...                 {"process_id": "b", "previous_active": [], "previous_standby": [],
...                  "lags": {"0_0": 400}},
...                 {"process_id": "c", "previous_active": [], "previous_standby": [],
...                  "lags": {"0_0": 20000}}],
...     "config": {"acceptable_recovery_lag": 100}})
>>> t = snap.tasks[0]
>>> [c.lag(t) for c in snap.clients], [snap.is_caught_up(c, t) for c in snap.clients]
([0, 400, 500], [True, False, False])
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType
from typing import Any, Iterable, Mapping

import numpy as np

from ..check.input import Checker, built_by_reader, names, objects_of, read_back, reading, same_type
from ..errors import InvalidSnapshotError, Problem
from .jsonio import SNAPSHOT_FORMAT, snapshot_head

__all__ = [
    "SNAPSHOT_FORMAT",
    "LATEST_OFFSET",
    "TASK_ID_PATTERN",
    "STRATEGIES",
    "REBALANCING_MODES",
    "TopicPartitionRef",
    "Task",
    "Client",
    "StreamsConfig",
    "StreamsSnapshot",
    "StreamsIndex",
    "ClientAssignment",
    "parse_streams",
    "streams_to_json",
    "task_key",
    "sort_tasks",
    "parse_task_id",
]

LATEST_OFFSET = -2  # the wire format's "was running it as active"
TASK_ID_PATTERN = re.compile(r"^([0-9]+)_([0-9]+)$")
STRATEGIES = ("none", "min_traffic", "balance_subtopology")
REBALANCING_MODES = ("warmup", "learner")
EMPTY: Mapping = MappingProxyType({})


def parse_task_id(task_id: str) -> tuple[int, int] | None:
    """``"<subtopology>_<partition>"`` as a pair of ints, or None when the text is not a TaskId.

    >>> parse_task_id("1_10"), parse_task_id("1-10")
    ((1, 10), None)
    """
    m = TASK_ID_PATTERN.match(task_id) if isinstance(task_id, str) else None
    return (int(m.group(1)), int(m.group(2))) if m else None


def task_key(task_id: str) -> tuple[int, int, str]:
    """Sort key of Kafka's ``TaskId`` order: subtopology, then partition, numerically.

    Text that is not a TaskId sorts after every TaskId, by its text. The keys of recent ids are remembered
    (a regular expression per id was most of sorting every client's tasks of a 10,000-task answer).

    >>> sorted(["1_10", "0_2", "1_2"], key=task_key)
    ['0_2', '1_2', '1_10']
    """
    try:
        return _remembered_task_key(task_id)
    except TypeError:  # unhashable: not a TaskId, never remembered
        return _task_key(task_id)


def _task_key(task_id: str) -> tuple[int, int, str]:
    p = parse_task_id(task_id)
    if p is None:
        return (1 << 62, 0, str(task_id))
    return (p[0], p[1], "")


_remembered_task_key = lru_cache(maxsize=1 << 16, typed=True)(_task_key)  # ids repeat across an answer's checks and rounds


def sort_tasks(ids: Iterable[str]) -> tuple[str, ...]:
    """Task ids deduplicated and in :func:`task_key` order, as a tuple."""
    return tuple(sorted(set(ids), key=task_key))


# --------------------------------------------------------------------------- the model

@dataclass(frozen=True, slots=True, kw_only=True)
class TopicPartitionRef:
    """An input or changelog partition of a task and the racks holding its replicas (None: unknown)."""

    topic: str
    partition: int
    racks: frozenset[str] | None = None

    def __post_init__(self) -> None:
        if self.racks is not None and type(self.racks) is not frozenset:
            object.__setattr__(self, "racks", frozenset(names(self.racks, "TopicPartitionRef.racks")))

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"topic": self.topic, "partition": self.partition}
        if self.racks is not None:
            d["racks"] = sorted(self.racks)
        return d


@dataclass(frozen=True, slots=True, kw_only=True)
class Task:
    """A task of the topology: ``id`` is Kafka's TaskId text ``"<subtopology>_<partition>"``."""

    id: str
    stateful: bool
    end_offset_sum: int = 0
    input_partitions: tuple[TopicPartitionRef, ...] = ()
    changelog_partitions: tuple[TopicPartitionRef, ...] = ()

    def __post_init__(self) -> None:
        for name in ("input_partitions", "changelog_partitions"):
            value = getattr(self, name)
            if type(value) is not tuple:
                object.__setattr__(self, name, names(value, f"Task(id={self.id!r}).{name}"))

    @property
    def subtopology(self) -> int:
        return int(self.id.split("_", 1)[0])

    @property
    def partition(self) -> int:
        return int(self.id.split("_", 1)[1])


@dataclass(frozen=True, slots=True, kw_only=True)
class Client:
    """A KafkaStreams client (process) as the leader sees it in a rebalance.

    ``lags`` holds the lags the client reported, with the wire format's ``-2``
    already translated: tasks it was running are in ``running`` (lag 0) and not
    in ``lags``. ``lags`` keeps the reported values as sent (so that a snapshot
    writes back as it was read); use :meth:`lag`, the one lag rule, rather than
    reading ``lags`` directly.
    """

    process_id: str
    threads: int = 1
    rack: str | None = None
    tags: Mapping[str, str] = field(default_factory=lambda: EMPTY)
    previous_active: tuple[str, ...] = ()
    previous_standby: tuple[str, ...] = ()
    lags: Mapping[str, int] = field(default_factory=lambda: EMPTY)
    running: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        where = f"Client(process_id={self.process_id!r})"
        for name in ("previous_active", "previous_standby"):
            value = getattr(self, name)
            if type(value) is not tuple:
                object.__setattr__(self, name, names(value, f"{where}.{name}"))
        if type(self.running) is not frozenset:
            object.__setattr__(self, "running", frozenset(names(self.running, f"{where}.running")))
        for name in ("tags", "lags"):
            value = getattr(self, name)
            if type(value) is not MappingProxyType:
                if not isinstance(value, Mapping):
                    raise InvalidSnapshotError(Problem(f"{where}.{name}", f"must be a mapping, not {type(value).__name__}"))
                object.__setattr__(self, name, MappingProxyType(dict(value)))

    def lag(self, task: Task) -> int:
        """Offset lag of this client's local state for ``task``: the one lag rule (see the module docstring).

        0 for a stateless task (a reported lag is ignored: there is no state to
        restore) and for a task it was running; the reported lag clamped to
        ``task.end_offset_sum`` when it has local state (lag = end - offsets with
        offsets >= 0, so a larger report is impossible and Kafka never makes one);
        else ``task.end_offset_sum``. The clamp lives here, where the lag is
        computed, so that every reader of lags (caught-up, rank, the index, the
        check) agrees.
        """
        if not task.stateful or task.id in self.running:
            return 0
        reported = self.lags.get(task.id)
        if reported is None:
            return task.end_offset_sum
        return min(reported, task.end_offset_sum)

    def reported_lag(self, task_id: str) -> int | None:
        """The lag this client reported for ``task_id`` as sent (0: it was running it), None when it has no state.

        Raw, for display and round-trips: not clamped to the end offset sum and
        not zeroed for stateless tasks. Decisions use :meth:`lag`.
        """
        if task_id in self.running:
            return 0
        return self.lags.get(task_id)


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamsConfig:
    """The assignment configs (``config`` in the snapshot), Kafka's names with dots as underscores.

    ``rack_aware_assignment_traffic_cost`` and ``..._non_overlap_cost`` are None
    for "the assignor's own default": see :meth:`traffic_cost` and :meth:`non_overlap_cost`.
    """

    acceptable_recovery_lag: int = 10000
    max_warmup_replicas: int = 2
    num_standby_replicas: int = 0
    probing_rebalance_interval_ms: int = 600000
    balance_factor: int = 1
    rack_aware_assignment_strategy: str = "none"
    rack_aware_assignment_traffic_cost: int | None = None
    rack_aware_assignment_non_overlap_cost: int | None = None
    rack_aware_assignment_tags: tuple[str, ...] = ()
    rebalancing_mode: str = "warmup"

    def __post_init__(self) -> None:
        if type(self.rack_aware_assignment_tags) is not tuple:
            object.__setattr__(self, "rack_aware_assignment_tags",
                               names(self.rack_aware_assignment_tags, "StreamsConfig.rack_aware_assignment_tags"))

    def traffic_cost(self, *, stateless: bool = False) -> int:
        """The traffic cost in force: the config's, else Kafka's default (10; 1 for stateless tasks)."""
        if self.rack_aware_assignment_traffic_cost is not None:
            return self.rack_aware_assignment_traffic_cost
        return 1 if stateless else 10

    def non_overlap_cost(self, *, stateless: bool = False) -> int:
        """The non-overlap cost in force: the config's, else Kafka's default (1; 0 for stateless tasks)."""
        if self.rack_aware_assignment_non_overlap_cost is not None:
            return self.rack_aware_assignment_non_overlap_cost
        return 0 if stateless else 1

    @property
    def rack_aware(self) -> bool:
        return self.rack_aware_assignment_strategy != "none"

    def to_json(self) -> dict[str, Any]:
        return {
            "acceptable_recovery_lag": self.acceptable_recovery_lag,
            "max_warmup_replicas": self.max_warmup_replicas,
            "num_standby_replicas": self.num_standby_replicas,
            "probing_rebalance_interval_ms": self.probing_rebalance_interval_ms,
            "balance_factor": self.balance_factor,
            "rack_aware_assignment_strategy": self.rack_aware_assignment_strategy,
            "rack_aware_assignment_traffic_cost": self.rack_aware_assignment_traffic_cost,
            "rack_aware_assignment_non_overlap_cost": self.rack_aware_assignment_non_overlap_cost,
            "rack_aware_assignment_tags": list(self.rack_aware_assignment_tags),
            "rebalancing_mode": self.rebalancing_mode,
        }


@dataclass(frozen=True, slots=True, eq=False)
class StreamsIndex:
    """Array views of a snapshot for assignors and checks (built once per snapshot, read-only by convention).

    Tasks and clients are numbered in snapshot order. Pair arrays list
    (client index, task index) facts; a task no client reported on has no pair.

    * ``stateful[t]``, ``end_offset[t]``, ``threads[c]``
    * ``prev_active_client/task``: previous active pairs (stale task ids dropped);
      ``prev_active[t]``: the previous active client of ``t`` (the first one
      listed when two claim it), -1 for none (internal arrays only)
    * ``prev_standby_client/task``
    * ``lag_client/task/value``: the pairs a client reported on (running tasks
      included), sorted by task, with :meth:`Client.lag` as the value (running
      and stateless at 0, reports clamped to ``end_offset_sum``)
    * ``caught_up_client/task``: reported pairs with lag at most the acceptable lag
    * ``everyone_caught_up[t]``: a stateful task whose ``end_offset_sum`` is within
      the acceptable lag, and every stateless task. Not a second rule: every lag
      is at most ``end_offset_sum`` (0 when stateless), so every client is caught up
    """

    task_ids: tuple[str, ...]
    client_ids: tuple[str, ...]
    task_pos: Mapping[str, int]
    client_pos: Mapping[str, int]
    stateful: np.ndarray
    end_offset: np.ndarray
    threads: np.ndarray
    prev_active_client: np.ndarray
    prev_active_task: np.ndarray
    prev_active: np.ndarray
    prev_standby_client: np.ndarray
    prev_standby_task: np.ndarray
    lag_client: np.ndarray
    lag_task: np.ndarray
    lag_value: np.ndarray
    caught_up_client: np.ndarray
    caught_up_task: np.ndarray
    everyone_caught_up: np.ndarray

    def lag(self, c: int, t: int) -> int:
        """Lag of client ``c`` on task ``t`` (indexes)."""
        lo, hi = np.searchsorted(self.lag_task, [t, t + 1])
        hit = np.flatnonzero(self.lag_client[lo:hi] == c)
        if len(hit):
            return int(self.lag_value[lo + hit[0]])
        return int(self.end_offset[t]) if self.stateful[t] else 0

    def caught_up_clients(self, t: int) -> np.ndarray:
        """Indexes of the clients caught up for task ``t`` (every client when ``everyone_caught_up[t]``)."""
        if self.everyone_caught_up[t]:
            return np.arange(len(self.client_ids))
        lo, hi = np.searchsorted(self.caught_up_task, [t, t + 1])
        return np.sort(self.caught_up_client[lo:hi])


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class StreamsSnapshot:
    """One rebalance of one Kafka Streams application. Read-only; build it with :func:`parse_streams` or directly."""

    tasks: tuple[Task, ...]
    clients: tuple[Client, ...]
    config: StreamsConfig = field(default_factory=StreamsConfig)
    id: str | None = None
    now_ms: int = 0
    kind: str = field(default="streams", init=False)
    #: unknown fields the reader ignored, one line each (see ``AssignmentResult.warnings``)
    warnings: tuple[str, ...] = field(default=(), init=False, repr=False, compare=False)
    _cache: dict = field(default_factory=dict, init=False, repr=False, compare=False)  # derived data, built once

    def __post_init__(self) -> None:
        if not built_by_reader():
            _check_objects(self)

    @property
    def index(self) -> StreamsIndex:
        """The :class:`StreamsIndex` of this snapshot (built on first use)."""
        idx = self._cache.get("index")
        if idx is None:
            idx = self._cache["index"] = _build_index(self)
        return idx

    def cached(self, key: str, build):
        """``build(self)`` computed once per snapshot and kept (for derived tables such as rack costs)."""
        value = self._cache.get(key)
        if value is None:
            value = self._cache[key] = build(self)
        return value

    def task(self, task_id: str) -> Task | None:
        i = self.index.task_pos.get(task_id)
        return None if i is None else self.tasks[i]

    def client(self, process_id: str) -> Client | None:
        i = self.index.client_pos.get(process_id)
        return None if i is None else self.clients[i]

    @property
    def stateful_tasks(self) -> tuple[Task, ...]:
        return tuple(t for t in self.tasks if t.stateful)

    @property
    def stateless_tasks(self) -> tuple[Task, ...]:
        return tuple(t for t in self.tasks if not t.stateful)

    def is_caught_up(self, client: Client, task: Task) -> bool:
        """Whether ``client`` is caught up for ``task``: :meth:`Client.lag` at most ``acceptable_recovery_lag``.

        Through :meth:`Client.lag`, so a running or stateless task is caught up and
        a report above ``end_offset_sum`` counts as ``end_offset_sum``, as in the index.
        """
        return client.lag(task) <= self.config.acceptable_recovery_lag

    def standbys_per_task(self) -> int:
        """``min(num_standby_replicas, clients - 1)``: the standbys every stateful task must have."""
        return max(0, min(self.config.num_standby_replicas, len(self.clients) - 1))

    def racks_known(self) -> bool:
        """True when some client has a rack and some task partition lists racks (cross-rack counts apply)."""
        if not any(c.rack is not None for c in self.clients):
            return False
        return any(p.racks for t in self.tasks for p in t.input_partitions + t.changelog_partitions)

    def followup_deadline(self) -> int:
        """``now_ms + probing_rebalance_interval_ms``: when a probing rebalance is due while warm-ups run."""
        return self.now_ms + self.config.probing_rebalance_interval_ms

    def __repr__(self) -> str:
        return (f"StreamsSnapshot(id={self.id!r}, tasks={len(self.tasks)} "
                f"({sum(t.stateful for t in self.tasks)} stateful), clients={len(self.clients)})")


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientAssignment:
    """What one client runs: sorted tuples of task ids (Kafka's TaskId order) per role.

    A warm-up is a standby that exists only to catch up before an active task
    moves; Kafka ships it as a standby, we keep it apart.

    >>> ClientAssignment.of(active=["1_10", "1_2"], standby=["0_0"]).to_json()
    {'active': ['1_2', '1_10'], 'standby': ['0_0'], 'warmup': []}
    """

    active: tuple[str, ...] = ()
    standby: tuple[str, ...] = ()
    warmup: tuple[str, ...] = ()

    @classmethod
    def of(cls, active: Iterable[str] = (), standby: Iterable[str] = (), warmup: Iterable[str] = ()) -> "ClientAssignment":
        """Build from any iterables, sorting them (duplicates are kept for the check to report)."""
        return cls(active=tuple(sorted(active, key=task_key)), standby=tuple(sorted(standby, key=task_key)),
                   warmup=tuple(sorted(warmup, key=task_key)))

    def to_json(self) -> dict[str, list[str]]:
        return {"active": list(self.active), "standby": list(self.standby), "warmup": list(self.warmup)}

    @property
    def all_tasks(self) -> tuple[str, ...]:
        return self.active + self.standby + self.warmup


# --------------------------------------------------------------------------- reading

_TOP_KEYS = frozenset({"format", "kind", "id", "now_ms", "tasks", "clients", "config"})


def parse_streams(doc: Mapping[str, Any], chk: Checker | None = None) -> StreamsSnapshot:
    """Build a :class:`StreamsSnapshot` from parsed JSON, or raise :class:`InvalidSnapshotError`.

    With a ``chk`` the problems are recorded there (the caller raises);
    without one, every problem is collected and raised here.
    """
    own_checker = chk is None
    chk = chk or Checker()
    chk.extra_keys(doc, _TOP_KEYS, "")
    snap_id = chk.string(doc, "id", "", required=False)
    now_ms = chk.integer(doc, "now_ms", "", required=False, default=0)
    from .streams_read import parse_clients, parse_config, parse_tasks  # they build this module's classes

    tasks = parse_tasks(doc, chk)
    clients = parse_clients(doc, chk)
    config = parse_config(doc, chk)
    _check_limits(tasks, clients, chk)
    if own_checker:
        chk.raise_if_any()
    with reading():
        snap = StreamsSnapshot(tasks=tasks, clients=clients, config=config, id=snap_id, now_ms=now_ms or 0)
    if chk.warnings:
        object.__setattr__(snap, "warnings", chk.warnings)
    return snap


def _check_limits(tasks: tuple[Task, ...], clients: tuple[Client, ...], chk: Checker) -> None:
    """The size limits of one solve (:mod:`stickyflow.limits`), checked before anything is built from the sizes."""
    from .. import limits

    if len(tasks) > limits.MAX_TASKS:
        chk.fail("tasks", f"{len(tasks):,} tasks: one solve takes at most {limits.MAX_TASKS:,} "
                          "(stickyflow.limits.MAX_TASKS)")
    if len(clients) > limits.MAX_CLIENTS:
        chk.fail("clients", f"{len(clients):,} clients: one solve takes at most {limits.MAX_CLIENTS:,} "
                            "(stickyflow.limits.MAX_CLIENTS)")
    elif len(tasks) * len(clients) > limits.MAX_TASK_CLIENT_PAIRS:
        chk.fail("tasks", f"{len(tasks):,} tasks x {len(clients):,} clients: one solve takes at most "
                          f"{limits.MAX_TASK_CLIENT_PAIRS:,} pairs (stickyflow.limits.MAX_TASK_CLIENT_PAIRS)")


def _check_objects(snap: StreamsSnapshot) -> None:
    """Check a snapshot built from Python objects by the reader's rules (write it as JSON, read it back).

    Lists are taken wherever tuples are; the checked, normalized parts replace the given ones.
    """
    tasks = names(snap.tasks, "tasks")
    for i, t in enumerate(tasks):
        same_type(t, Task, f"tasks[{i}]")
        for name in ("input_partitions", "changelog_partitions"):
            for j, p in enumerate(getattr(t, name)):
                same_type(p, TopicPartitionRef, f"tasks[{i}].{name}[{j}]")
    clients = objects_of(snap.clients, Client, "clients")
    same_type(snap.config, StreamsConfig, "config")
    object.__setattr__(snap, "tasks", tasks)
    object.__setattr__(snap, "clients", clients)
    read_back(snap, streams_to_json(snap), parse_streams, ("tasks", "clients", "config", "id", "now_ms"))


# --------------------------------------------------------------------------- the index

def _build_index(snap: StreamsSnapshot) -> StreamsIndex:
    task_ids = tuple(t.id for t in snap.tasks)
    client_ids = tuple(c.process_id for c in snap.clients)
    task_pos = {tid: i for i, tid in enumerate(task_ids)}
    client_pos = {cid: i for i, cid in enumerate(client_ids)}
    T = len(task_ids)
    stateful = np.fromiter((t.stateful for t in snap.tasks), dtype=bool, count=T)
    end_offset = np.fromiter((t.end_offset_sum for t in snap.tasks), dtype=np.int64, count=T)
    threads = np.fromiter((c.threads for c in snap.clients), dtype=np.int64, count=len(client_ids))

    def pairs(getter) -> tuple[np.ndarray, np.ndarray]:
        cs: list[int] = []
        ts: list[int] = []
        for ci, c in enumerate(snap.clients):
            idx = [task_pos[t] for t in getter(c) if t in task_pos]
            cs.extend([ci] * len(idx))
            ts.extend(idx)
        return np.asarray(cs, dtype=np.int64), np.asarray(ts, dtype=np.int64)

    pa_c, pa_t = pairs(lambda c: c.previous_active)
    ps_c, ps_t = pairs(lambda c: c.previous_standby)
    prev_active = np.full(T, -1, dtype=np.int64)
    if len(pa_t):
        # the first client listing a task wins; later (stale, contradictory) claims do not overwrite it
        first = np.unique(pa_t, return_index=True)[1]
        prev_active[pa_t[first]] = pa_c[first]

    lc: list[int] = []
    lt: list[int] = []
    lv: list[int] = []
    for ci, c in enumerate(snap.clients):
        for tid in c.running.union(c.lags):  # one pair per task, whichever way it was reported
            ti = task_pos.get(tid)
            if ti is not None:
                # Client.lag is the one lag rule (running/stateless 0, reports clamped to the end offset sum)
                lc.append(ci), lt.append(ti), lv.append(c.lag(snap.tasks[ti]))
    lag_client = np.asarray(lc, dtype=np.int64)
    lag_task = np.asarray(lt, dtype=np.int64)
    lag_value = np.asarray(lv, dtype=np.int64)
    order = np.lexsort((lag_client, lag_task))
    lag_client, lag_task, lag_value = lag_client[order], lag_task[order], lag_value[order]
    arl = snap.config.acceptable_recovery_lag
    # follows from Client.lag (every lag <= end_offset_sum, 0 when stateless); kept as an array for speed
    everyone = ~stateful | (end_offset <= arl)
    cu = (lag_value <= arl) & ~everyone[lag_task] if len(lag_task) else np.zeros(0, dtype=bool)
    ro = lambda a: (a.setflags(write=False), a)[1]  # noqa: E731
    return StreamsIndex(
        task_ids=task_ids, client_ids=client_ids,
        task_pos=MappingProxyType(task_pos), client_pos=MappingProxyType(client_pos),
        stateful=ro(stateful), end_offset=ro(end_offset), threads=ro(threads),
        prev_active_client=ro(pa_c), prev_active_task=ro(pa_t), prev_active=ro(prev_active),
        prev_standby_client=ro(ps_c), prev_standby_task=ro(ps_t),
        lag_client=ro(lag_client), lag_task=ro(lag_task), lag_value=ro(lag_value),
        caught_up_client=ro(lag_client[cu]), caught_up_task=ro(lag_task[cu]),
        everyone_caught_up=ro(everyone),
    )


# --------------------------------------------------------------------------- writing

def streams_to_json(snap: StreamsSnapshot) -> dict[str, Any]:
    """The snapshot as spec JSON (a plain dict), the inverse of :func:`parse_streams`."""
    tasks = []
    for t in snap.tasks:
        d: dict[str, Any] = {"id": t.id, "stateful": t.stateful}
        if t.end_offset_sum:
            d["end_offset_sum"] = t.end_offset_sum
        if t.input_partitions:
            d["input_partitions"] = [p.to_json() for p in t.input_partitions]
        if t.changelog_partitions:
            d["changelog_partitions"] = [p.to_json() for p in t.changelog_partitions]
        tasks.append(d)
    clients = []
    for c in snap.clients:
        d = {"process_id": c.process_id, "threads": c.threads}
        if c.rack is not None:
            d["rack"] = c.rack
        if c.tags:
            d["tags"] = dict(c.tags)
        d["previous_active"] = list(c.previous_active)
        d["previous_standby"] = list(c.previous_standby)
        # -2 for a previous active task is implied by its absence from lags
        prev = set(c.previous_active)
        lags: dict[str, int] = {tid: LATEST_OFFSET for tid in c.running if tid not in prev}
        lags.update(c.lags)
        if lags:
            d["lags"] = dict(sorted(lags.items(), key=lambda kv: task_key(kv[0])))
        clients.append(d)
    out = snapshot_head("streams", snap)
    out["tasks"] = tasks
    out["clients"] = clients
    out["config"] = snap.config.to_json()
    return out
