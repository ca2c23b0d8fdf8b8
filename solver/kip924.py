"""KIP-924 in Python: write a custom Kafka Streams task assignor and run it through ``stickyflow.assign``.

Read-only views of the input, as in Kafka's ``org.apache.kafka.streams.processor.assignment``:

* :class:`ApplicationState` (``all_tasks()``, ``kafka_streams_states(compute_task_lags)``,
  ``assignment_configs()``), :class:`KafkaStreamsState` (one client), :class:`TaskInfo`
  and :class:`TaskTopicPartition` (one task and its partitions with their racks);

value objects for the output:

* :class:`AssignedTask` (``ACTIVE`` or ``STANDBY``; a warm-up is a standby with
  ``warmup=True``), :class:`KafkaStreamsAssignment` (one client's tasks and its
  follow-up rebalance deadline; every change returns a new object),
  :class:`TaskAssignment` (the collection the assignor returns);

and the utilities of Kafka's ``TaskAssignmentUtils``: :func:`identity_assignment`,
:func:`default_standby_task_assignment`, :func:`optimize_rack_aware_active_tasks`,
:func:`optimize_rack_aware_standby_tasks` (with :class:`RackAwareOptimizationParams`
for the task set and cost overrides) and :func:`validate_task_assignment`.

A custom assignor is any object with ``assign(application_state) -> TaskAssignment``
(or such a function); :func:`as_assignor` turns it into a stickyflow assignor:

>>> import stickyflow
>>> class KeepEverything:
...     def assign(self, app):
...         return TaskAssignment(identity_assignment(app).values())
>>> stickyflow.register_assignor("keep", as_assignor(KeepEverything()), kinds=("streams",))
>>> doc = {"format": "stickyflow.snapshot/1", "kind": "streams",
...        "tasks": [{"id": "0_0", "stateful": False}],
...        "clients": [{"process_id": "a", "previous_active": ["0_0"], "previous_standby": []}]}
>>> stickyflow.assign(doc, "keep").to_json()["assignment"]
{'a': {'active': ['0_0'], 'standby': [], 'warmup': []}}
>>> stickyflow.unregister_assignor("keep")

From the command line, point ``--assignor`` at the adapted object:
``stickyflow solve snap.json --assignor mymodule:assignor`` with
``assignor = as_assignor(MyAssignor())`` in ``mymodule``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping, Protocol, Union

import numpy as np

from .check.kip924 import SHAPE_ERRORS, kip924_violations  # noqa: F401  (SHAPE_ERRORS: re-exported, as before)
from .check.streams import (ERROR_ORDER, KIP924_ERRORS, as_client_assignment, normalize_streams_assignment,
                            streams_metrics, validate_streams)
from .model.streams import ClientAssignment, StreamsConfig, StreamsSnapshot, task_key
from .registry import SolveOptions
from .result import Decision, Finished, Violation

__all__ = [
    "ProcessId",
    "TaskId",
    "AssignmentError",
    "TaskTopicPartition",
    "TaskInfo",
    "KafkaStreamsState",
    "ApplicationState",
    "AssignedTaskType",
    "AssignedTask",
    "KafkaStreamsAssignment",
    "TaskAssignment",
    "TaskAssignor",
    "RackAwareOptimizationParams",
    "identity_assignment",
    "default_standby_task_assignment",
    "optimize_rack_aware_active_tasks",
    "optimize_rack_aware_standby_tasks",
    "validate_task_assignment",
    "kip924_violations",
    "is_custom",
    "finish_custom",
    "as_assignor",
]

ProcessId = str  # Kafka wraps a UUID; the snapshot's process id text here
TaskId = str     # "<subtopology>_<partition>"
_EMPTY: Mapping = MappingProxyType({})


class AssignmentError(str, enum.Enum):
    """KIP-924's ``TaskAssignor.AssignmentError``: why a returned assignment was rejected (``NONE``: it was not)."""

    NONE = "NONE"
    ACTIVE_TASK_ASSIGNED_MULTIPLE_TIMES = "ACTIVE_TASK_ASSIGNED_MULTIPLE_TIMES"
    ACTIVE_AND_STANDBY_TASK_ASSIGNED_TO_SAME_KAFKASTREAMS = "ACTIVE_AND_STANDBY_TASK_ASSIGNED_TO_SAME_KAFKASTREAMS"
    INVALID_STANDBY_TASK = "INVALID_STANDBY_TASK"
    MISSING_PROCESS_ID = "MISSING_PROCESS_ID"
    UNKNOWN_PROCESS_ID = "UNKNOWN_PROCESS_ID"
    UNKNOWN_TASK_ID = "UNKNOWN_TASK_ID"


assert tuple(e.value for e in AssignmentError) == KIP924_ERRORS


# --------------------------------------------------------------------------- read-only input views

@dataclass(frozen=True, slots=True, kw_only=True)
class TaskTopicPartition:
    """A partition a task reads (``is_source``) or writes its state to (``is_changelog``), with replica racks."""

    topic: str
    partition: int
    is_source: bool
    is_changelog: bool
    rack_ids: frozenset[str] | None = None  # None: unknown


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskInfo:
    """One task: its id, whether it is stateful, and its partitions."""

    id: TaskId
    is_stateful: bool
    topic_partitions: tuple[TaskTopicPartition, ...] = ()
    end_offset_sum: int = 0

    @property
    def source_topic_partitions(self) -> tuple[TaskTopicPartition, ...]:
        return tuple(p for p in self.topic_partitions if p.is_source)

    @property
    def changelog_topic_partitions(self) -> tuple[TaskTopicPartition, ...]:
        return tuple(p for p in self.topic_partitions if p.is_changelog)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class KafkaStreamsState:
    """One KafkaStreams client as the assignor sees it. Lags are there only when asked for (``compute_task_lags``)."""

    process_id: ProcessId
    num_processing_threads: int
    rack_id: str | None
    client_tags: Mapping[str, str]
    previous_active_tasks: frozenset[TaskId]
    previous_standby_tasks: frozenset[TaskId]
    _lags: Mapping[TaskId, int] | None = field(default=None, repr=False)

    @property
    def previous_assigned_tasks(self) -> frozenset[TaskId]:
        return self.previous_active_tasks | self.previous_standby_tasks

    def lag_for(self, task: TaskId) -> int:
        """Offset lag of this client's state for a stateful ``task`` (0: it was running it).

        Raises ``RuntimeError`` when the states were built without lags, and
        ``KeyError`` for a task that is not stateful, as Kafka does.
        """
        if self._lags is None:
            raise RuntimeError("lag_for: lags were not computed (call kafka_streams_states(compute_task_lags=True))")
        return self._lags[task]

    def stateful_tasks_to_lag_sums(self) -> Mapping[TaskId, int]:
        """Every stateful task -> this client's lag on it."""
        if self._lags is None:
            raise RuntimeError("stateful_tasks_to_lag_sums: lags were not computed")
        return self._lags

    def prev_tasks_by_lag(self) -> tuple[TaskId, ...]:
        """The tasks this client ran before (active or standby), least lagging first."""
        lags = self._lags or {}
        return tuple(sorted(self.previous_assigned_tasks, key=lambda t: (lags.get(t, 0), task_key(t))))


@dataclass(frozen=True, slots=True, eq=False)
class ApplicationState:
    """The whole input of a KIP-924 assignor, read-only: tasks, clients, configs (and the snapshot behind them)."""

    snapshot: StreamsSnapshot

    @classmethod
    def from_snapshot(cls, snapshot: StreamsSnapshot) -> "ApplicationState":
        return cls(snapshot)

    @property
    def now_ms(self) -> int:
        """The rebalance's wall-clock time (for ``with_followup_rebalance``)."""
        return self.snapshot.now_ms

    def assignment_configs(self) -> StreamsConfig:
        return self.snapshot.config

    def all_tasks(self) -> Mapping[TaskId, TaskInfo]:
        return self.snapshot.cached("kip924_tasks", _task_infos)

    def kafka_streams_states(self, compute_task_lags: bool) -> Mapping[ProcessId, KafkaStreamsState]:
        """Every client; with ``compute_task_lags`` their lags on every stateful task too."""
        return self.snapshot.cached(f"kip924_states_{bool(compute_task_lags)}",
                                    lambda s: _states(s, bool(compute_task_lags)))


def _task_infos(snap: StreamsSnapshot) -> Mapping[TaskId, TaskInfo]:
    out = {}
    for t in snap.tasks:
        parts = tuple(TaskTopicPartition(topic=p.topic, partition=p.partition, is_source=True, is_changelog=False,
                                         rack_ids=p.racks) for p in t.input_partitions)
        parts += tuple(TaskTopicPartition(topic=p.topic, partition=p.partition, is_source=False, is_changelog=True,
                                          rack_ids=p.racks) for p in t.changelog_partitions)
        out[t.id] = TaskInfo(id=t.id, is_stateful=t.stateful, topic_partitions=parts, end_offset_sum=t.end_offset_sum)
    return MappingProxyType(out)


def _states(snap: StreamsSnapshot, lags: bool) -> Mapping[ProcessId, KafkaStreamsState]:
    stateful = snap.stateful_tasks
    known = snap.index.task_pos
    out = {}
    for c in snap.clients:
        out[c.process_id] = KafkaStreamsState(
            process_id=c.process_id, num_processing_threads=c.threads, rack_id=c.rack, client_tags=c.tags,
            previous_active_tasks=frozenset(t for t in c.previous_active if t in known),
            previous_standby_tasks=frozenset(t for t in c.previous_standby if t in known),
            _lags=MappingProxyType({t.id: c.lag(t) for t in stateful}) if lags else None)
    return MappingProxyType(out)


# --------------------------------------------------------------------------- output value objects

class AssignedTaskType(str, enum.Enum):
    ACTIVE = "ACTIVE"
    STANDBY = "STANDBY"


@dataclass(frozen=True, slots=True)
class AssignedTask:
    """A task given to a client as ``ACTIVE`` or ``STANDBY``; a warm-up is a standby with ``warmup=True``."""

    id: TaskId
    type: AssignedTaskType
    warmup: bool = False

    def __post_init__(self):
        if not isinstance(self.type, AssignedTaskType):
            object.__setattr__(self, "type", AssignedTaskType(self.type))
        if self.warmup and self.type is not AssignedTaskType.STANDBY:
            raise ValueError(f"AssignedTask {self.id}: a warm-up must be a STANDBY task")

    @classmethod
    def active(cls, task: TaskId) -> "AssignedTask":
        return cls(task, AssignedTaskType.ACTIVE)

    @classmethod
    def standby(cls, task: TaskId, *, warmup: bool = False) -> "AssignedTask":
        return cls(task, AssignedTaskType.STANDBY, warmup)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class KafkaStreamsAssignment:
    """What one client gets: task id -> :class:`AssignedTask` (one role per task), and a follow-up deadline.

    Immutable: :meth:`assign_task`, :meth:`remove_task` and
    :meth:`with_followup_rebalance` return new objects.

    >>> a = KafkaStreamsAssignment.of("p1", [AssignedTask.active("0_1")])
    >>> a = a.assign_task(AssignedTask.standby("0_2", warmup=True)).with_followup_rebalance(60_000)
    >>> a.to_client_assignment().to_json(), a.followup_rebalance_deadline
    ({'active': ['0_1'], 'standby': [], 'warmup': ['0_2']}, 60000)
    """

    process_id: ProcessId
    tasks: Mapping[TaskId, AssignedTask] = field(default_factory=lambda: _EMPTY)
    followup_rebalance_deadline: int | None = None

    @classmethod
    def of(cls, process_id: ProcessId, assigned_tasks: Iterable[AssignedTask] = ()) -> "KafkaStreamsAssignment":
        return cls(process_id=process_id, tasks=MappingProxyType({t.id: t for t in assigned_tasks}))

    def assign_task(self, task: AssignedTask) -> "KafkaStreamsAssignment":
        """A copy with ``task`` added (replacing any role this client had for that task id)."""
        return replace(self, tasks=MappingProxyType({**self.tasks, task.id: task}))

    def remove_task(self, task: AssignedTask | TaskId) -> "KafkaStreamsAssignment":
        tid = task.id if isinstance(task, AssignedTask) else task
        return replace(self, tasks=MappingProxyType({k: v for k, v in self.tasks.items() if k != tid}))

    def with_followup_rebalance(self, deadline_ms: int | None) -> "KafkaStreamsAssignment":
        return replace(self, followup_rebalance_deadline=deadline_ms)

    def tasks_of(self, type_: AssignedTaskType, *, warmup: bool | None = None) -> tuple[TaskId, ...]:
        return tuple(sorted((t.id for t in self.tasks.values()
                             if t.type is type_ and (warmup is None or t.warmup == warmup)), key=task_key))

    def to_client_assignment(self) -> ClientAssignment:
        return ClientAssignment(active=self.tasks_of(AssignedTaskType.ACTIVE),
                                standby=self.tasks_of(AssignedTaskType.STANDBY, warmup=False),
                                warmup=self.tasks_of(AssignedTaskType.STANDBY, warmup=True))

    @classmethod
    def from_client_assignment(cls, process_id: ProcessId, ca: ClientAssignment) -> "KafkaStreamsAssignment":
        return cls.of(process_id, [AssignedTask.active(t) for t in ca.active]
                      + [AssignedTask.standby(t) for t in ca.standby]
                      + [AssignedTask.standby(t, warmup=True) for t in ca.warmup])


@dataclass(frozen=True, slots=True, eq=False)
class TaskAssignment:
    """What a KIP-924 assignor returns: one :class:`KafkaStreamsAssignment` per client."""

    assignments: tuple[KafkaStreamsAssignment, ...]

    def __init__(self, assignments: Iterable[KafkaStreamsAssignment]):
        object.__setattr__(self, "assignments", tuple(assignments))

    def __iter__(self):
        return iter(self.assignments)

    def __len__(self) -> int:
        return len(self.assignments)


class TaskAssignor(Protocol):
    """KIP-924's ``TaskAssignor``: ``assign(application_state) -> TaskAssignment``."""

    def assign(self, application_state: ApplicationState) -> TaskAssignment: ...


Assignments = Mapping[ProcessId, KafkaStreamsAssignment]


# --------------------------------------------------------------------------- TaskAssignmentUtils

def _to_ca(assignments: Assignments) -> dict[str, ClientAssignment]:
    return {pid: a.to_client_assignment() for pid, a in assignments.items()}


def _from_ca(original: Assignments, cas: Mapping[str, ClientAssignment]) -> dict[ProcessId, KafkaStreamsAssignment]:
    out = {}
    for pid, ca in cas.items():
        a = KafkaStreamsAssignment.from_client_assignment(pid, ca)
        old = original.get(pid)
        out[pid] = a.with_followup_rebalance(old.followup_rebalance_deadline) if old is not None else a
    return out


def identity_assignment(application_state: ApplicationState) -> dict[ProcessId, KafkaStreamsAssignment]:
    """Every client keeps what it ran: previous actives as ACTIVE, previous standbys (stateful tasks) as STANDBY.

    A task two clients claim as active stays with the first one listed.
    """
    snap = application_state.snapshot
    idx = snap.index
    taken: set[str] = set()
    out = {}
    for c in snap.clients:
        tasks = []
        for t in c.previous_active:
            if t in idx.task_pos and t not in taken:
                taken.add(t)
                tasks.append(AssignedTask.active(t))
        out[c.process_id] = tasks
    for c in snap.clients:
        held = {t.id for t in out[c.process_id]}
        for t in c.previous_standby:
            i = idx.task_pos.get(t)
            if i is not None and idx.stateful[i] and t not in held:
                out[c.process_id].append(AssignedTask.standby(t))
    return {pid: KafkaStreamsAssignment.of(pid, tasks) for pid, tasks in out.items()}


def default_standby_task_assignment(application_state: ApplicationState,
                                    assignments: Assignments) -> dict[ProcessId, KafkaStreamsAssignment]:
    """Top every stateful task up to ``min(num_standby_replicas, clients - 1)`` standbys, Kafka's default way.

    Least loaded clients first ((active + standby) tasks per thread); with
    ``rack_aware_assignment_tags``, clients that add tag values first (KIP-708).
    Existing standbys and warm-ups are kept.
    """
    from .greedy.streams_state import HAState, assign_standbys, spread_keys

    snap = application_state.snapshot
    st = _state_from(snap, _to_ca(assignments))
    want = snap.standbys_per_task()
    keys = spread_keys(snap)
    for t in st.task_order:
        if st.stateful[t] and st.owner[t] >= 0 and len(st.standby[t]) < want:
            assign_standbys(st, [t], want - len(st.standby[t]), keys)
    return _from_ca(assignments, st.to_assignment())


def _state_from(snap: StreamsSnapshot, cas: Mapping[str, ClientAssignment]):
    """An HAState holding ``cas`` (unknown clients and tasks are dropped)."""
    from .greedy.streams_state import HAState

    st = HAState(snap)
    idx = snap.index
    for pid, ca in cas.items():
        c = idx.client_pos.get(pid)
        if c is None:
            continue
        for tid in ca.active:
            t = idx.task_pos.get(tid)
            if t is not None:
                st.set_active(t, c)
        for tid in ca.standby:
            t = idx.task_pos.get(tid)
            if t is not None:
                st.add_standby(t, c)
        for tid in ca.warmup:
            t = idx.task_pos.get(tid)
            if t is not None:
                st.add_warmup(t, c)
    return st


@dataclass(frozen=True, slots=True, kw_only=True)
class RackAwareOptimizationParams:
    """Which tasks to optimize and at what costs (Kafka's ``TaskAssignmentUtils.RackAwareOptimizationParams``).

    >>> RackAwareOptimizationParams.of(None).for_stateless_tasks().with_traffic_cost_override(5).traffic_cost_override
    5
    """

    application_state: Any
    tasks_to_optimize: frozenset[TaskId] | None = None  # None: every task of the kind being optimized
    stateful_only: bool | None = None                   # True: stateful tasks, False: stateless, None: all
    traffic_cost_override: int | None = None
    non_overlap_cost_override: int | None = None

    @classmethod
    def of(cls, application_state: ApplicationState) -> "RackAwareOptimizationParams":
        return cls(application_state=application_state)

    def for_tasks(self, tasks: Iterable[TaskId]) -> "RackAwareOptimizationParams":
        return replace(self, tasks_to_optimize=frozenset(tasks))

    def for_stateful_tasks(self) -> "RackAwareOptimizationParams":
        return replace(self, stateful_only=True)

    def for_stateless_tasks(self) -> "RackAwareOptimizationParams":
        return replace(self, stateful_only=False)

    def with_traffic_cost_override(self, cost: int) -> "RackAwareOptimizationParams":
        return replace(self, traffic_cost_override=_cost("traffic_cost_override", cost))

    def with_non_overlap_cost_override(self, cost: int) -> "RackAwareOptimizationParams":
        return replace(self, non_overlap_cost_override=_cost("non_overlap_cost_override", cost))

    def _task_indexes(self, snap: StreamsSnapshot) -> np.ndarray:
        idx = snap.index
        keep = np.ones(len(idx.task_ids), dtype=bool)
        if self.stateful_only is not None:
            keep &= idx.stateful == self.stateful_only
        if self.tasks_to_optimize is not None:
            keep &= np.isin(np.arange(len(idx.task_ids)),
                            [idx.task_pos[t] for t in self.tasks_to_optimize if t in idx.task_pos])
        return np.flatnonzero(keep)

    def _costs(self, snap: StreamsSnapshot, *, stateless: bool) -> tuple[int, int]:
        cfg = snap.config
        traffic = self.traffic_cost_override
        overlap = self.non_overlap_cost_override
        return (cfg.traffic_cost(stateless=stateless) if traffic is None else traffic,
                cfg.non_overlap_cost(stateless=stateless) if overlap is None else overlap)


def _cost(name: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{name}: must be an integer >= 0, not {value!r}")
    return value


def optimize_rack_aware_active_tasks(params: RackAwareOptimizationParams,
                                     assignments: Assignments) -> dict[ProcessId, KafkaStreamsAssignment]:
    """Permute the chosen active tasks among their clients to cut cross-rack traffic (KIP-925), counts kept.

    Uses the configured strategy (``min_traffic`` when it is ``"none"``) and the
    costs in force unless overridden; unchanged when racks are unknown.
    """
    from .greedy.streams_rack import optimize_active_tasks

    snap = params.application_state.snapshot
    st = _state_from(snap, _to_ca(assignments))
    owner = st.owner_array()
    tasks = params._task_indexes(snap)
    tasks = tasks[owner[tasks] >= 0]
    strategy = snap.config.rack_aware_assignment_strategy
    strategy = "min_traffic" if strategy == "none" else strategy
    idx = snap.index
    fc = [c for t in range(st.T) for c in st.standby[t] + st.warmup[t]]
    ft = [t for t in range(st.T) for _ in st.standby[t] + st.warmup[t]]
    forbidden = (np.asarray(fc, dtype=np.int64), np.asarray(ft, dtype=np.int64))  # a client never holds two roles
    for stateful in (True, False):
        part = tasks[idx.stateful[tasks] == stateful]
        if len(part) < 2:
            continue
        traffic, overlap = params._costs(snap, stateless=not stateful)
        owner = optimize_active_tasks(snap, owner, part, traffic_cost=traffic, non_overlap_cost=overlap,
                                      strategy=strategy, forbidden=forbidden)
    st.set_owners(owner, tasks)
    return _from_ca(assignments, st.to_assignment())


def optimize_rack_aware_standby_tasks(params: RackAwareOptimizationParams,
                                      assignments: Assignments) -> dict[ProcessId, KafkaStreamsAssignment]:
    """Move the chosen standbys between clients to cut cross-rack changelog traffic (KIP-925).

    Every client keeps its number of standbys; a standby only moves between
    clients with the same tag values when ``rack_aware_assignment_tags`` is
    set; warm-ups stay. Unchanged when racks are unknown or the graph is too big.
    """
    from .check.streams_tables import tag_combinations
    from .greedy.streams_rack import optimize_standby_tasks

    snap = params.application_state.snapshot
    st = _state_from(snap, _to_ca(assignments))
    chosen = set(params._task_indexes(snap).tolist())
    sc, stt, bc, bt = [], [], [], []
    for t in range(st.T):
        for c in st.standby[t]:
            (sc if t in chosen else bc).append(c)
            (stt if t in chosen else bt).append(t)
        for c in st.warmup[t]:
            bc.append(c), bt.append(t)
    if not sc:
        return dict(assignments)
    keys = snap.config.rack_aware_assignment_tags
    group = tag_combinations(snap, keys)[1] if keys else None
    traffic, overlap = params._costs(snap, stateless=False)
    res = optimize_standby_tasks(snap, st.owner_array(), np.asarray(sc, dtype=np.int64), np.asarray(stt, dtype=np.int64),
                                 np.asarray(bc, dtype=np.int64), np.asarray(bt, dtype=np.int64),
                                 traffic_cost=traffic, non_overlap_cost=overlap, tag_group=group)
    if res is None:
        return dict(assignments)
    for c, t in zip(sc, stt):
        st.remove_standby(t, c)
    for c, t in zip(res[0].tolist(), res[1].tolist()):
        st.add_standby(t, c)
    return _from_ca(assignments, st.to_assignment())


def validate_task_assignment(application_state: ApplicationState,
                             task_assignment: TaskAssignment | Iterable[KafkaStreamsAssignment]) -> AssignmentError:
    """KIP-924's check of a returned assignment, as Kafka's ``validateTaskAssignment``: the error or ``NONE``.

    Only KIP-924's own rules count (:func:`kip924_violations`); a client listed twice
    holding one task in two roles is ``ACTIVE_AND_STANDBY_TASK_ASSIGNED_TO_SAME_KAFKASTREAMS``.
    The high-availability rules are :func:`stickyflow.check.streams.validate_streams`'s.
    """
    snap = application_state.snapshot
    entries = [(a.process_id, a.to_client_assignment()) for a in task_assignment]
    for v in kip924_violations(snap, entries):
        if v.code in AssignmentError.__members__:
            return AssignmentError(v.code)
    return AssignmentError.NONE


def is_custom(spec: Any) -> bool:
    """Whether a registered assignor is a custom one (held to KIP-924's validation only), not stickyflow's own.

    stickyflow's own assignors are registered by ``"stickyflow.<module>:<function>"``;
    anything else (a function, a KIP-924 assignor wrapped by :func:`as_assignor`, a
    ``module:function`` of the user's) is custom.
    """
    target = getattr(spec, "target", None)
    return not (isinstance(target, str) and target.startswith("stickyflow."))


def finish_custom(snapshot: StreamsSnapshot, decision: Decision) -> Finished:
    """The front door's step for a custom streams assignor: KIP-924's validation, then every metric.

    Violations are KIP-924's errors (and the shapes an assignment cannot take),
    Kafka's own answer first. A valid answer is returned as it is, however it fares
    by the high-availability rules: ``metrics["broken_rules"]`` lists the codes of
    those it breaks (``[]`` when none), in :data:`stickyflow.check.streams.ERROR_ORDER`.
    """
    snap = snapshot
    try:
        entries = [(str(pid), as_client_assignment(value)) for pid, value in decision.assignment.items()]
        norm = normalize_streams_assignment(snap, decision.assignment)
    except (TypeError, ValueError, AttributeError) as exc:  # not an assignment at all
        return Finished(assignment={}, target={}, revocations={}, followup_rebalance_deadline_ms=None,
                        violations=(Violation("MALFORMED_ASSIGNMENT", str(exc)),), metrics={})
    followup = decision.followup_rebalance_deadline_ms
    violations = kip924_violations(snap, entries)
    if violations:
        return Finished(assignment=norm, target=norm, revocations={}, followup_rebalance_deadline_ms=followup,
                        violations=tuple(violations), metrics={})
    rank = {c: i for i, c in enumerate(ERROR_ORDER)}
    broken = sorted({v.code for v in validate_streams(snap, norm, followup_rebalance_deadline_ms=followup)},
                    key=lambda c: (rank.get(c, len(rank)), c))
    metrics = dict(streams_metrics(snap, norm))
    metrics["broken_rules"] = broken
    return Finished(assignment=norm, target=norm, revocations={}, followup_rebalance_deadline_ms=followup,
                    violations=(), metrics=metrics)


# --------------------------------------------------------------------------- running a KIP-924 assignor

def as_assignor(custom: Union[TaskAssignor, Callable[[ApplicationState], Any]], *, name: str | None = None
                ) -> Callable[[StreamsSnapshot, SolveOptions], Decision]:
    """A stickyflow assignor ``(snapshot, options) -> Decision`` running a KIP-924 assignor.

    ``custom`` has ``assign(application_state)`` or is such a function; it may
    return a :class:`TaskAssignment`, an iterable of :class:`KafkaStreamsAssignment`
    or a mapping process id -> :class:`KafkaStreamsAssignment`. The follow-up
    deadline is the earliest any client asks for. Register the result with
    :func:`stickyflow.register_assignor` or name it ``module:attribute`` on the command line.
    """
    run = custom.assign if hasattr(custom, "assign") else custom
    label = name or getattr(custom, "name", None) or type(custom).__name__
    if label == "function":
        label = getattr(custom, "__name__", "custom")

    def assignor(snapshot: StreamsSnapshot, options: SolveOptions | None = None) -> Decision:
        app = ApplicationState.from_snapshot(snapshot)
        out = run(app)
        items = list(out.values()) if isinstance(out, Mapping) else list(out)
        assignment: dict[str, KafkaStreamsAssignment] = {}
        for a in items:
            if not isinstance(a, KafkaStreamsAssignment):
                raise TypeError(f"a KIP-924 assignor must return KafkaStreamsAssignment objects, not {type(a).__name__}")
            if a.process_id in assignment:
                raise ValueError(f"the assignment lists process id {a.process_id!r} twice")
            assignment[a.process_id] = a
        deadlines = [a.followup_rebalance_deadline for a in items if a.followup_rebalance_deadline is not None]
        return Decision(assignment=assignment, method=f"kip924:{label}", status="heuristic",
                        followup_rebalance_deadline_ms=min(deadlines) if deadlines else None)

    assignor.__name__ = f"kip924_{label}"
    assignor.__doc__ = f"stickyflow assignor running the KIP-924 assignor {label}"
    return assignor
