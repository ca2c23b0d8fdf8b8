"""The multi-round simulator: play a scenario over many rebalances and record what each assignor does.

A :class:`Scenario` is a first snapshot plus what happens next: members
joining, leaving or crashing at given rounds, the group leader lost mid-way,
and how fast local state restores. :func:`simulate` plays it once per
assignor, round after round (one round = one rebalance), building each round's
snapshot from what the members report after the previous one:

* consumer groups: each member reports the partitions it received last round
  as ``owned`` with that round's generation; the cooperative protocol (KIP-429)
  takes a second, immediate round whenever partitions must be revoked first;
* Streams applications: each client reports the tasks it ran as
  ``previous_active`` and its standbys and warm-ups as ``previous_standby``
  (warm-ups travel as standbys in Kafka), and the lag of its local state,
  which shrinks at the restore rate for standbys and warm-ups while the
  changelogs grow at the write rate; tasks it no longer holds keep their state
  on disk (it only falls behind). A client that *leaves* keeps its state for a
  later rejoin under the same process id; one that *crashes* loses it.

When a round asks for a follow-up (a probing rebalance while warm-ups run, or
the second cooperative round), the next round happens at its deadline. A
warm-up's readiness is a simulator option, :attr:`Scenario.readiness`, because
the snapshot format has no key for it (and config keys are strict):
``"eager"`` (the early KIP-441 draft's ``learner.partial.rebalance``: a client
rejoins as soon as a warm-up, its learner, is caught up, so the task moves
before the probing deadline) or ``"conservative"`` (the draft's stable
approach: the caught-up learner waits for the next scheduled, full rebalance).
By default learner mode is eager and warm-up mode (KIP-441 as shipped: probing
rebalances only) conservative. With no follow-up asked for, the next round is
``idle_ms`` later: a no-op rebalance that must change nothing.

Rounds to converge: every disturbance (round 0, and every round with events)
opens an *episode*; it has converged at the first round, before the next
episode, whose result asks for no follow-up, and ``rounds_to_converge`` counts
the rebalances from the disturbance to that round, both included.

The simulator keeps no assignor-side state: every round's snapshot is rebuilt
from the members' reports and handed to :func:`stickyflow.assign` as fresh JSON.
A ``leader_lost`` event (the coordinator hands leadership to another member, as
after a coordinator fail-over or a leader that rejoined late) therefore must not
change any result; it is recorded so that a run with it can be compared with
one without (the tests do).

>>> import stickyflow
>>> from stickyflow.datasets.simulator import Event, Scenario, simulate
>>> snap = {"format": "stickyflow.snapshot/1", "kind": "consumer", "protocol": "cooperative",
...         "topics": {"t": {"partitions": 6}},
...         "members": [{"id": "a", "subscription": ["t"]}, {"id": "b", "subscription": ["t"]}]}
>>> sim = simulate(Scenario(snapshot=snap, rounds=5,
...                         events=(Event(round=2, action="join", member="c"),)), ["optimal"])
>>> run = sim.runs[0]
>>> [r.trigger for r in run.rounds]
['start', 'idle', 'event', 'followup', 'idle']
>>> run.rounds_to_converge  # the join needs two cooperative rounds
(1, 2)
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

from stickyflow import _jsonio
from stickyflow._check import Checker, is_int
from stickyflow.errors import InvalidSnapshotError, Problem

__all__ = [
    "ACTIONS",
    "READINESS",
    "PRESETS",
    "Event",
    "Scenario",
    "RoundRecord",
    "Episode",
    "SimulationRun",
    "Simulation",
    "simulate",
    "run_scenario",
    "scenario_from_json",
    "load_scenario",
    "preset",
]

ACTIONS = ("join", "leave", "crash", "leader_lost")
READINESS = ("eager", "conservative")
DEFAULT_RESTORE_PER_MS = 100.0  # offsets per ms (100k records/s) when the scenario gives no rate
DEFAULT_IDLE_MS = 600_000
_EMPTY: Mapping = MappingProxyType({})


# --------------------------------------------------------------------------- the scenario

@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """Something that happens just before the rebalance of round ``round``.

    ``action`` is ``"join"`` (``member`` joins; ``spec`` holds its subscription,
    rack, threads, tags: a consumer member's or Streams client's JSON fields),
    ``"leave"`` (graceful: a Streams client keeps its local state for a later
    rejoin), ``"crash"`` (a Streams client loses its local state) or
    ``"leader_lost"`` (leadership moves to the next member; ``member`` unused).

    >>> Event(round=3, action="join", member="c9", spec={"subscription": ["t"]}).label
    'join c9'
    """

    round: int
    action: str
    member: str | None = None
    spec: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)

    @property
    def label(self) -> str:
        return "leader lost" if self.action == "leader_lost" else f"{self.action} {self.member}"

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"round": self.round, "action": self.action}
        if self.member is not None:
            d["member"] = self.member
        if self.spec:
            d["spec"] = dict(self.spec)
        return d


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Scenario:
    """A first snapshot and what happens over ``rounds`` rebalances.

    ``snapshot`` is anything :func:`stickyflow.as_snapshot` reads (object, dict,
    JSON text, path). Restoration: ``restore_per_ms`` offsets per millisecond,
    or ``restore_per_round`` offsets per probing interval (converted with the
    snapshot's ``probing_rebalance_interval_ms``); default
    ``DEFAULT_RESTORE_PER_MS``. ``write_per_ms`` is how fast every stateful
    task's changelog grows. ``readiness``: ``"eager"``, ``"conservative"`` or
    None (the mode's own: eager for learner mode, conservative for warm-ups).
    ``idle_ms``: time between rounds when no follow-up is asked for (default:
    the probing interval for Streams, 10 minutes for consumers).

    Raises :class:`InvalidSnapshotError` naming the field (``scenario.events[1].member``, ...).
    """

    snapshot: Any
    events: tuple[Event, ...] = ()
    rounds: int = 12
    restore_per_ms: float | None = None
    restore_per_round: float | None = None
    write_per_ms: float = 0.0
    readiness: str | None = None
    idle_ms: int | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        import stickyflow

        snap = stickyflow.as_snapshot(self.snapshot)
        object.__setattr__(self, "snapshot", snap)
        object.__setattr__(self, "events", tuple(sorted(self.events, key=lambda e: e.round)))
        if self.name is None and snap.id is not None:
            object.__setattr__(self, "name", snap.id)
        problems = _check_scenario(self)
        if problems:
            raise InvalidSnapshotError(problems)

    @property
    def kind(self) -> str:
        return self.snapshot.kind

    @property
    def probing_interval_ms(self) -> int | None:
        return self.snapshot.config.probing_rebalance_interval_ms if self.kind == "streams" else None

    @property
    def rebalancing_mode(self) -> str | None:
        return self.snapshot.config.rebalancing_mode if self.kind == "streams" else None

    def restore_rate(self) -> float:
        """Offsets per ms restored by a standby or warm-up."""
        if self.restore_per_ms is not None:
            return float(self.restore_per_ms)
        if self.restore_per_round is not None:
            return float(self.restore_per_round) / float(self.probing_interval_ms or DEFAULT_IDLE_MS)
        return DEFAULT_RESTORE_PER_MS

    def effective_readiness(self, override: str | None = None) -> str:
        if override is not None:
            return override
        if self.readiness is not None:
            return self.readiness
        return "eager" if self.rebalancing_mode == "learner" else "conservative"

    def effective_idle_ms(self) -> int:
        if self.idle_ms is not None:
            return self.idle_ms
        return self.probing_interval_ms or DEFAULT_IDLE_MS

    def replace(self, **changes: Any) -> "Scenario":
        """A copy with some fields changed (checked again), e.g. ``sc.replace(events=())``."""
        kw = {f.name: getattr(self, f.name) for f in fields(self)}
        kw.update(changes)
        return Scenario(**kw)

    def to_json(self) -> dict[str, Any]:
        """The scenario file's JSON (see :func:`scenario_from_json`)."""
        from stickyflow.snapshot import snapshot_to_json

        out: dict[str, Any] = {"name": self.name, "rounds": self.rounds,
                               "snapshot": snapshot_to_json(self.snapshot),
                               "events": [e.to_json() for e in self.events]}
        for key in ("restore_per_ms", "restore_per_round", "readiness", "idle_ms"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.write_per_ms:
            out["write_per_ms"] = self.write_per_ms
        return out


def _check_scenario(sc: Scenario) -> list[Problem]:
    out: list[Problem] = []
    if not is_int(sc.rounds) or sc.rounds < 1:
        out.append(Problem("scenario.rounds", "must be an integer >= 1"))
    for key in ("restore_per_ms", "restore_per_round", "write_per_ms"):
        v = getattr(sc, key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0
                              or math.isinf(v)):
            out.append(Problem(f"scenario.{key}", "must be a finite number >= 0"))
    if sc.restore_per_ms is not None and sc.restore_per_round is not None:
        out.append(Problem("scenario.restore_per_round", "must not be given together with restore_per_ms"))
    if sc.readiness is not None and sc.readiness not in READINESS:
        out.append(Problem("scenario.readiness", 'must be "eager" or "conservative"'))
    if sc.idle_ms is not None and (not is_int(sc.idle_ms) or sc.idle_ms < 0):
        out.append(Problem("scenario.idle_ms", "must be an integer >= 0"))
    # replay the membership to catch events that cannot happen
    snap = sc.snapshot
    present = [m.id for m in snap.members] if sc.kind == "consumer" else [c.process_id for c in snap.clients]
    known = set(present)
    here = set(present)
    for i, e in enumerate(sc.events):
        path = f"scenario.events[{i}]"
        if not is_int(e.round) or not 0 <= e.round < (sc.rounds if is_int(sc.rounds) else 0):
            out.append(Problem(f"{path}.round", f"must be an integer in [0, rounds) = [0, {sc.rounds})"))
        if e.action not in ACTIONS:
            out.append(Problem(f"{path}.action", "must be one of " + ", ".join(f'"{a}"' for a in ACTIONS)))
            continue
        if not isinstance(e.spec, Mapping):
            out.append(Problem(f"{path}.spec", "must be an object"))
            continue
        if e.action == "leader_lost":
            if not here:
                out.append(Problem(f"{path}.action", "a leader can only be lost while the group has members"))
            continue
        if not isinstance(e.member, str):
            out.append(Problem(f"{path}.member", f'must be a string (the id of the member that does "{e.action}")'))
            continue
        if e.action == "join":
            if e.member in here:
                out.append(Problem(f"{path}.member", f'"{e.member}" is already in the group at round {e.round}'))
            if e.member not in known:
                out.extend(_check_spec(sc.kind, e.spec, f"{path}.spec"))
            here.add(e.member)
            known.add(e.member)
        else:
            if e.member not in here:
                out.append(Problem(f"{path}.member", f'"{e.member}" is not in the group at round {e.round}'))
            here.discard(e.member)
    return out


_CONSUMER_SPEC = frozenset({"subscription", "rack", "instance_id"})
_STREAMS_SPEC = frozenset({"threads", "rack", "tags"})


def _check_spec(kind: str, spec: Mapping[str, Any], path: str) -> list[Problem]:
    chk = Checker()
    raw = dict(spec)
    if kind == "consumer":
        chk.unknown_keys(raw, _CONSUMER_SPEC, path)
        chk.string_list(raw, "subscription", path, required=False)
        chk.string(raw, "rack", path, required=False, allow_null=True)
        chk.string(raw, "instance_id", path, required=False, allow_null=True)
    else:
        chk.unknown_keys(raw, _STREAMS_SPEC, path)
        chk.integer(raw, "threads", path, required=False, minimum=1)
        chk.string(raw, "rack", path, required=False, allow_null=True)
        tags = chk.obj(raw, "tags", path, required=False)
        for k, v in (tags or {}).items():
            if not isinstance(v, str):
                chk.fail(f"{path}.tags.{k}", "must be a string")
    return chk.problems


_SCENARIO_KEYS = frozenset({"name", "rounds", "snapshot", "events", "restore_per_ms", "restore_per_round",
                            "write_per_ms", "readiness", "idle_ms"})


def scenario_from_json(doc: Mapping[str, Any], base: str | Path | None = None) -> Scenario:
    """A :class:`Scenario` from its JSON object.

    ``{"snapshot": {...} or "path.json", "rounds": 12, "events": [{"round": 2,
    "action": "join", "member": "c9", "spec": {...}}, ...], "restore_per_ms": 100,
    "write_per_ms": 0, "readiness": "eager", "idle_ms": 600000, "name": "..."}``;
    a relative snapshot path is read from ``base``. Unknown keys are errors.
    """
    chk = Checker()
    if not isinstance(doc, Mapping):
        raise InvalidSnapshotError(Problem("scenario", "must be a JSON object"))
    doc = dict(doc)
    chk.unknown_keys(doc, _SCENARIO_KEYS, "scenario")
    raw_snap = chk.get(doc, "snapshot", "scenario")
    if isinstance(raw_snap, str) and not raw_snap.lstrip().startswith("{"):
        p = Path(raw_snap)
        raw_snap = str(p if p.is_absolute() or base is None else Path(base) / p)
    events: list[Event] = []
    for i, e in enumerate(chk.array(doc, "events", "scenario", required=False) or []):
        path = f"scenario.events[{i}]"
        if not isinstance(e, dict):
            chk.fail(path, "must be an object")
            continue
        chk.unknown_keys(e, frozenset({"round", "action", "member", "spec"}), path)
        rnd = chk.integer(e, "round", path, minimum=0)
        action = chk.string(e, "action", path)
        member = chk.string(e, "member", path, required=False, allow_null=True)
        spec = chk.obj(e, "spec", path, required=False) or {}
        if rnd is not None and action is not None:
            events.append(Event(round=rnd, action=action, member=member, spec=MappingProxyType(dict(spec))))
    kw: dict[str, Any] = {}
    for key in ("restore_per_ms", "restore_per_round", "write_per_ms"):
        if key in doc:
            kw[key] = doc[key]
    for key in ("rounds", "idle_ms"):
        if key in doc:
            kw[key] = doc[key]
    if "readiness" in doc:
        kw["readiness"] = doc["readiness"]
    if "name" in doc:
        kw["name"] = chk.string(doc, "name", "scenario", allow_null=True)
    chk.raise_if_any()
    try:
        return Scenario(snapshot=raw_snap, events=tuple(events), **kw)
    except InvalidSnapshotError as exc:
        if exc.field.startswith("scenario"):
            raise
        raise InvalidSnapshotError([Problem(f"scenario.snapshot.{p.field}", p.rule) for p in exc.problems]) from None


def load_scenario(path: str | Path) -> Scenario:
    """A scenario from a JSON file (see :func:`scenario_from_json`), or ``preset:NAME[:SEED]``."""
    text = str(path)
    if text.startswith("preset:"):
        _, name, *rest = text.split(":")
        return preset(name, seed=int(rest[0]) if rest else 0)
    from stickyflow import _jsonio

    try:
        doc = _jsonio.loads(Path(path).read_bytes())
    except OSError as exc:
        raise InvalidSnapshotError(Problem("scenario", f"cannot be read from {text!r} ({exc.strerror})")) from None
    except ValueError as exc:
        raise InvalidSnapshotError(Problem("scenario", f"is not valid JSON ({str(exc).splitlines()[0][:200]})")) from None
    return scenario_from_json(doc, base=Path(path).parent)


# --------------------------------------------------------------------------- what a run records

@dataclass(frozen=True, slots=True, kw_only=True)
class RoundRecord:
    """One rebalance of one run: when, why, and what the assignor did.

    ``trigger``: ``"start"``, ``"event"``, ``"followup"`` (the second cooperative
    round), ``"probing"`` (the probing rebalance at its deadline), ``"ready"``
    (eager readiness: a warm-up caught up before the deadline) or ``"idle"``.
    Consumer-only fields (``revoked``, ``withheld``) and Streams-only fields
    (``warmups``, ``standbys``, ``restoring_actives``: stateful active tasks on a
    client that is not caught up) are None for the other kind.
    """

    round: int
    time_ms: int
    trigger: str
    events: tuple[str, ...]
    leader: str | None
    members: int
    status: str
    method: str
    moves: int
    imbalance: int | float  # Streams: active tasks per thread, which need not be whole
    cross_rack: int | None
    followup: bool
    converged: bool
    wall_s: float
    revoked: int | None = None
    withheld: int | None = None
    warmups: int | None = None
    standbys: int | None = None
    restoring_actives: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Episode:
    """The rounds from one disturbance to convergence (``converged_round`` None: not within the run)."""

    start_round: int
    cause: str
    converged_round: int | None

    @property
    def rounds_to_converge(self) -> int | None:
        return None if self.converged_round is None else self.converged_round - self.start_round + 1


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class SimulationRun:
    """One assignor playing one scenario: a record per round, the episodes, and every result JSON."""

    scenario: str | None
    kind: str
    assignor: str
    readiness: str | None
    rounds: tuple[RoundRecord, ...]
    episodes: tuple[Episode, ...]
    results: tuple[dict, ...] = field(repr=False, default=())
    snapshots: tuple[dict, ...] = field(repr=False, default=())

    @property
    def label(self) -> str:
        return self.assignor if self.readiness is None else f"{self.assignor} ({self.readiness})"

    @property
    def rounds_to_converge(self) -> tuple[int | None, ...]:
        return tuple(e.rounds_to_converge for e in self.episodes)

    def rows(self) -> list[dict[str, Any]]:
        """One flat dict per round (for pandas or CSV), with the run's labels."""
        out = []
        for r in self.rounds:
            d = asdict(r)
            d["events"] = "; ".join(r.events)
            out.append({"scenario": self.scenario, "kind": self.kind, "assignor": self.assignor,
                        "readiness": self.readiness, "label": self.label, **d})
        return out

    def summary(self) -> list[dict[str, Any]]:
        """One dict per episode: its cause and rounds to converge, and the moves it took."""
        out = []
        for i, e in enumerate(self.episodes):
            end = self.episodes[i + 1].start_round if i + 1 < len(self.episodes) else len(self.rounds)
            span = self.rounds[e.start_round:end]
            out.append({"scenario": self.scenario, "label": self.label, "assignor": self.assignor,
                        "readiness": self.readiness, "episode": i, "start_round": e.start_round,
                        "cause": e.cause, "rounds_to_converge": e.rounds_to_converge,
                        "converged_round": e.converged_round,
                        "time_to_converge_ms": (None if e.converged_round is None
                                                else self.rounds[e.converged_round].time_ms - span[0].time_ms),
                        "moves": sum(r.moves for r in span), "max_imbalance": max(r.imbalance for r in span),
                        "wall_s": sum(r.wall_s for r in span)})
        return out


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Simulation:
    """A scenario played by several assignors (and readiness settings)."""

    scenario: Scenario
    runs: tuple[SimulationRun, ...]

    def run(self, label: str) -> SimulationRun:
        for r in self.runs:
            if r.label == label or r.assignor == label:
                return r
        raise KeyError(f"no run labelled {label!r} (have: {', '.join(r.label for r in self.runs)})")

    def rows(self) -> list[dict[str, Any]]:
        return [row for r in self.runs for row in r.rows()]

    def summary(self) -> list[dict[str, Any]]:
        return [row for r in self.runs for row in r.summary()]


# --------------------------------------------------------------------------- playing it

def simulate(scenario: Scenario, assignors: Sequence[str] = ("optimal", "sticky"), *,
             readiness: Sequence[str | None] | str | None = None, time_limit: float | None = None,
             seed: int = 0, method: str | None = None, keep: bool = True,
             observe: Callable[[Any, Any], None] | None = None) -> Simulation:
    """Play ``scenario`` once per assignor (and per readiness, when several are given).

    ``readiness`` overrides the scenario's: one value, or a list to compare
    (e.g. ``["eager", "conservative"]``). ``keep`` keeps every snapshot and
    result JSON in the runs (needed to compare runs; costs memory at scale).
    ``observe(snapshot, result)`` is called after every rebalance (tests run
    their checker there).
    """
    if readiness is None or isinstance(readiness, str):
        readiness_list: list[str | None] = [readiness]
    else:
        readiness_list = list(readiness) or [None]
    for r in readiness_list:
        if r is not None and r not in READINESS:
            raise InvalidSnapshotError(Problem("readiness", 'must be "eager" or "conservative"'))
    runs = []
    for a in assignors:
        for r in readiness_list:
            runs.append(run_scenario(scenario, a, readiness=r, time_limit=time_limit, seed=seed, method=method,
                                     keep=keep, observe=observe,
                                     label_readiness=len(readiness_list) > 1 or r is not None))
    return Simulation(scenario=scenario, runs=tuple(runs))


def run_scenario(scenario: Scenario, assignor: str = "optimal", *, readiness: str | None = None,
                 time_limit: float | None = None, seed: int = 0, method: str | None = None, keep: bool = True,
                 observe: Callable[[Any, Any], None] | None = None, label_readiness: bool = False) -> SimulationRun:
    """Play ``scenario`` with one assignor; see the module docstring for the rules."""
    import stickyflow

    ready = scenario.effective_readiness(readiness)
    group: _Group = (_ConsumerGroup if scenario.kind == "consumer" else _StreamsApp)(scenario)
    now = int(scenario.snapshot.now_ms or 0)
    by_round: dict[int, list[Event]] = {}
    for e in scenario.events:
        by_round.setdefault(e.round, []).append(e)
    records: list[RoundRecord] = []
    results: list[dict] = []
    snapshots: list[dict] = []
    episodes: list[list] = []  # [start, cause, converged_round]
    trigger = "start"
    for rnd in range(scenario.rounds):
        events = by_round.get(rnd, [])
        for e in events:
            group.apply(e)
        if rnd == 0:
            episodes.append([0, "; ".join(["start"] + [e.label for e in events]), None])
        elif events:
            trigger = "event"
            episodes.append([rnd, "; ".join(e.label for e in events), None])
        # the member reports, serialized and read back: nothing but them reaches the assignor
        doc = group.snapshot_json(rnd, now)
        snapshot = stickyflow.parse_snapshot(_jsonio.loads(_jsonio.dumps(doc)))  # a JSON round trip: 5-10x a deepcopy
        result = stickyflow.assign(snapshot, assignor, time_limit=time_limit, seed=seed, method=method)
        if observe is not None:
            observe(snapshot, result)
        res = result.to_json()
        deadline = res["followup_rebalance_deadline_ms"]
        record = RoundRecord(
            round=rnd, time_ms=now, trigger=trigger, events=tuple(e.label for e in events), leader=group.leader,
            members=group.size, status=result.solver.status, method=result.solver.method,
            moves=int(res["metrics"]["moves"]), imbalance=_whole(res["metrics"]["imbalance"]),
            cross_rack=res["metrics"].get("cross_rack"), followup=deadline is not None,
            converged=deadline is None, wall_s=float(result.solver.wall_s),
            **group.round_metrics(snapshot, res))
        records.append(record)
        if keep:
            results.append(res)
            snapshots.append(doc)
        if deadline is None and episodes[-1][2] is None:
            episodes[-1][2] = rnd
        group.absorb(res)
        delay, trigger = group.next_delay(res, now, ready, scenario)
        group.advance(delay, scenario)
        now += delay
    return SimulationRun(
        scenario=scenario.name, kind=scenario.kind, assignor=assignor,
        readiness=ready if (label_readiness and scenario.kind == "streams") else None,
        rounds=tuple(records), episodes=tuple(Episode(start_round=s, cause=c, converged_round=k)
                                              for s, c, k in episodes),
        results=tuple(results), snapshots=tuple(snapshots))


def _whole(x: int | float) -> int | float:
    return int(x) if float(x).is_integer() else float(x)


class _Group:
    """The members' side of a group: what each reports, and how that evolves between rounds."""

    leader: str | None
    order: list[str]

    @property
    def size(self) -> int:
        return len(self.order)

    def _lose_leader(self) -> None:
        if not self.order:
            self.leader = None
        elif self.leader in self.order:
            self.leader = self.order[(self.order.index(self.leader) + 1) % len(self.order)]
        else:
            self.leader = self.order[0]

    def apply(self, event: Event) -> None:
        if event.action == "leader_lost":
            self._lose_leader()
            return
        if event.action == "join":
            self.join(event.member, event.spec)
            self.order.append(event.member)
        else:
            self.order.remove(event.member)
            self.depart(event.member, crashed=event.action == "crash")
        if self.leader not in self.order:  # the coordinator picks the first member still there
            self.leader = self.order[0] if self.order else None
        elif self.leader is None and self.order:
            self.leader = self.order[0]

    def join(self, member: str, spec: Mapping[str, Any]) -> None: ...

    def depart(self, member: str, *, crashed: bool) -> None: ...

    def snapshot_json(self, rnd: int, now: int) -> dict[str, Any]: ...

    def round_metrics(self, snapshot: Any, res: Mapping[str, Any]) -> dict[str, Any]: ...

    def absorb(self, res: Mapping[str, Any]) -> None: ...

    def next_delay(self, res: Mapping[str, Any], now: int, readiness: str, sc: Scenario) -> tuple[int, str]: ...

    def advance(self, delay: int, sc: Scenario) -> None: ...


class _ConsumerGroup(_Group):
    def __init__(self, sc: Scenario):
        from stickyflow.consumer import consumer_to_json

        base = consumer_to_json(sc.snapshot)
        self.base = {k: v for k, v in base.items() if k not in ("members", "id", "now_ms")}
        self.name = sc.name or "consumer"
        self.members: dict[str, dict[str, Any]] = {m["id"]: dict(m) for m in base["members"]}
        self.order = list(self.members)
        self.leader = self.order[0] if self.order else None
        self.generation = max([m.generation or 0 for m in sc.snapshot.members], default=0)
        self.idle_ms = sc.effective_idle_ms()
        self.all_topics = list(base["topics"])

    def join(self, member: str, spec: Mapping[str, Any]) -> None:
        d: dict[str, Any] = {"id": member, "subscription": list(spec.get("subscription", self.all_topics))}
        for key in ("rack", "instance_id"):
            if spec.get(key) is not None:
                d[key] = spec[key]
        self.members[member] = d  # a consumer that joins owns nothing yet

    def depart(self, member: str, *, crashed: bool) -> None:
        del self.members[member]

    def snapshot_json(self, rnd: int, now: int) -> dict[str, Any]:
        doc = dict(self.base)
        doc["id"] = f"{self.name}#r{rnd}"
        doc["now_ms"] = now
        doc["members"] = [self.members[m] for m in self.order]
        return doc

    def round_metrics(self, snapshot: Any, res: Mapping[str, Any]) -> dict[str, Any]:
        revoked = sum(len(p) for topics in res["revocations"].values() for p in topics.values())
        return {"revoked": revoked, "withheld": int(res["metrics"].get("withheld", 0))}

    def absorb(self, res: Mapping[str, Any]) -> None:
        self.generation += 1
        for mid, topics in res["assignment"].items():
            m = dict(self.members[mid])
            owned = {t: list(p) for t, p in topics.items() if p}
            if owned:
                m["owned"] = owned
            else:
                m.pop("owned", None)
            m["generation"] = self.generation
            self.members[mid] = m

    def next_delay(self, res: Mapping[str, Any], now: int, readiness: str, sc: Scenario) -> tuple[int, str]:
        deadline = res["followup_rebalance_deadline_ms"]
        if deadline is None:
            return self.idle_ms, "idle"
        return max(0, int(deadline) - now), "followup"

    def advance(self, delay: int, sc: Scenario) -> None:
        return None


class _StreamsApp(_Group):
    def __init__(self, sc: Scenario):
        snap = sc.snapshot
        from stickyflow.streams import streams_to_json

        base = streams_to_json(snap)
        self.name = sc.name or "streams"
        self.config = base["config"]
        self.tasks = base["tasks"]
        self.stateful = {t.id for t in snap.tasks if t.stateful}
        self.end_offset = {t.id: int(t.end_offset_sum) for t in snap.tasks}
        self.arl = snap.config.acceptable_recovery_lag
        self.idle_ms = sc.effective_idle_ms()
        self.clients: dict[str, dict[str, Any]] = {}
        self.departed: dict[str, dict[str, Any]] = {}
        task_of = {t.id: t for t in snap.tasks}
        for c in snap.clients:
            # the snapshot's one lag rule, Client.lag (a report above the end offset sum counts as that sum)
            state = {tid: c.lag(task_of[tid]) for tid in c.lags if tid in self.stateful}
            state.update({tid: 0 for tid in c.running if tid in self.stateful})
            self.clients[c.process_id] = {
                "process_id": c.process_id, "threads": c.threads, "rack": c.rack, "tags": dict(c.tags),
                "active": list(c.previous_active), "standby": list(c.previous_standby), "warmup": [],
                "state": state}
        self.order = list(self.clients)
        self.leader = self.order[0] if self.order else None

    def join(self, member: str, spec: Mapping[str, Any]) -> None:
        old = self.departed.pop(member, None)
        if old is not None:  # a client that left gracefully comes back with its state on disk
            c = old
            for key in ("threads", "rack", "tags"):
                if key in spec:
                    c[key] = spec[key]
        else:
            c = {"process_id": member, "threads": int(spec.get("threads", 1)), "rack": spec.get("rack"),
                 "tags": dict(spec.get("tags") or {}), "state": {}}
        c.update(active=[], standby=[], warmup=[])
        self.clients[member] = c

    def depart(self, member: str, *, crashed: bool) -> None:
        c = self.clients.pop(member)
        if not crashed:
            self.departed[member] = c

    def snapshot_json(self, rnd: int, now: int) -> dict[str, Any]:
        clients = []
        for pid in self.order:
            c = self.clients[pid]
            d: dict[str, Any] = {"process_id": pid, "threads": c["threads"]}
            if c["rack"] is not None:
                d["rack"] = c["rack"]
            if c["tags"]:
                d["tags"] = dict(c["tags"])
            active = set(c["active"])
            d["previous_active"] = list(c["active"])
            d["previous_standby"] = list(c["standby"]) + list(c["warmup"])  # warm-ups travel as standbys
            lags = {tid: lag for tid, lag in c["state"].items() if not (tid in active and lag == 0)}
            if lags:
                d["lags"] = lags
            clients.append(d)
        tasks = []
        for t in self.tasks:
            t = dict(t)
            if t["stateful"]:
                t["end_offset_sum"] = self.end_offset[t["id"]]
            tasks.append(t)
        return {"format": "stickyflow.snapshot/1", "kind": "streams", "id": f"{self.name}#r{rnd}",
                "now_ms": now, "tasks": tasks, "clients": clients, "config": dict(self.config)}

    def _lag(self, pid: str, tid: str) -> int:
        lag = self.clients[pid]["state"].get(tid)
        return self.end_offset[tid] if lag is None else lag

    def round_metrics(self, snapshot: Any, res: Mapping[str, Any]) -> dict[str, Any]:
        warmups = standbys = restoring = 0
        for pid, a in res["assignment"].items():
            warmups += len(a["warmup"])
            standbys += len(a["standby"])
            # the state this client reported before this round (self.clients not yet updated)
            restoring += sum(1 for tid in a["active"] if tid in self.stateful and self._lag(pid, tid) > self.arl)
        return {"warmups": warmups, "standbys": standbys, "restoring_actives": restoring}

    def absorb(self, res: Mapping[str, Any]) -> None:
        for pid, a in res["assignment"].items():
            c = self.clients[pid]
            c["active"], c["standby"], c["warmup"] = list(a["active"]), list(a["standby"]), list(a["warmup"])
            state = c["state"]
            for tid in a["active"]:
                if tid in self.stateful:
                    state[tid] = 0  # it runs the task now: restored first, then processing (Kafka reports -2)
            for tid in a["standby"] + a["warmup"]:
                state.setdefault(tid, self.end_offset[tid])  # no local state: restores from the start

    def _lag_after(self, lag: int, dt: int, restore: float, write: float) -> int:
        return max(0, lag + math.floor(write * dt) - math.floor(restore * dt))

    def _ready_in(self, lag: int, restore: float, write: float) -> int | None:
        """Milliseconds until ``lag`` is at most the acceptable recovery lag (None: never)."""
        if lag <= self.arl:
            return 0
        if restore <= write:
            return None
        dt = max(0, math.ceil((lag - self.arl) / (restore - write)) - 1)
        while self._lag_after(lag, dt, restore, write) > self.arl:
            dt += 1
        return dt

    def next_delay(self, res: Mapping[str, Any], now: int, readiness: str, sc: Scenario) -> tuple[int, str]:
        deadline = res["followup_rebalance_deadline_ms"]
        if deadline is None:
            return self.idle_ms, "idle"
        delay = max(0, int(deadline) - now)
        if readiness == "eager":
            restore, write = sc.restore_rate(), float(sc.write_per_ms)
            ready = [self._ready_in(self._lag(pid, tid), restore, write)
                     for pid, a in res["assignment"].items() for tid in a["warmup"]]
            ready = [r for r in ready if r is not None]
            if ready and min(ready) < delay:
                return min(ready), "ready"
        return delay, "probing"

    def advance(self, delay: int, sc: Scenario) -> None:
        if delay <= 0:
            return
        restore, write = sc.restore_rate(), float(sc.write_per_ms)
        written = math.floor(write * delay)
        for tid in self.stateful:
            self.end_offset[tid] += written
        for c in self.clients.values():
            replicas = set(c["standby"]) | set(c["warmup"])
            active = set(c["active"])
            state = c["state"]
            for tid, lag in state.items():
                if tid in active:
                    state[tid] = 0
                elif tid in replicas:
                    state[tid] = self._lag_after(lag, delay, restore, write)
                else:
                    state[tid] = lag + written
        for c in self.departed.values():
            for tid in c["state"]:
                c["state"][tid] += written


# --------------------------------------------------------------------------- presets

PRESETS = ("consumer-cooperative", "consumer-eager", "streams-warmup", "streams-learner", "streams-standbys")


def preset(name: str, seed: int = 0, **overrides: Any) -> Scenario:
    """A seeded scenario by name (one of :data:`PRESETS`); ``overrides`` replace Scenario fields.

    * ``consumer-cooperative`` / ``consumer-eager``: a rack-aware group over
      three topics; a member joins, one leaves, one crashes, the leader is lost,
      the one that left rejoins.
    * ``streams-warmup`` / ``streams-learner`` / ``streams-standbys``: a
      stateless and a stateful subtopology; two clients scale out, a client
      crashes, the leader is lost, a client leaves and comes back with its
      state. ``streams-standbys`` adds one standby per task and rack tags.

    >>> preset("streams-learner", seed=1).snapshot.config.rebalancing_mode
    'learner'
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    if name in ("consumer-cooperative", "consumer-eager"):
        sc = _consumer_preset(rng, name, seed, protocol="cooperative" if name.endswith("cooperative") else "eager")
    elif name in ("streams-warmup", "streams-learner", "streams-standbys"):
        sc = _streams_preset(rng, name, seed, mode="learner" if name == "streams-learner" else "warmup",
                             standbys=1 if name == "streams-standbys" else 0)
    else:
        raise InvalidSnapshotError(Problem("preset", f"{name!r} is not a preset (known: {', '.join(PRESETS)})"))
    return sc.replace(**overrides) if overrides else sc


def _consumer_preset(rng, name: str, seed: int, *, protocol: str) -> Scenario:
    racks = ["r0", "r1", "r2"]
    topics = {}
    for t in range(3):
        n = int(rng.integers(6, 25))
        topics[f"t{t}"] = {"partitions": n,
                           "racks": [sorted(rng.choice(racks, size=2, replace=False).tolist()) for _ in range(n)]}
    names = list(topics)
    members = []
    for i in range(int(rng.integers(4, 7))):
        members.append({"id": f"m{i}", "subscription": names, "rack": racks[i % len(racks)]})
    snap = {"format": "stickyflow.snapshot/1", "kind": "consumer", "id": f"{name}-{seed}", "protocol": protocol,
            "topics": topics, "members": members}
    k = len(members)
    events = (
        Event(round=2, action="join", member="m-new", spec={"subscription": names, "rack": racks[k % 3]}),
        Event(round=5, action="leave", member="m1"),
        Event(round=7, action="crash", member=f"m{k - 1}"),
        Event(round=9, action="leader_lost"),
        Event(round=10, action="join", member="m1", spec={"subscription": names, "rack": racks[1]}),
    )
    return Scenario(snapshot=snap, events=events, rounds=13, name=f"{name}-{seed}")


def _streams_preset(rng, name: str, seed: int, *, mode: str, standbys: int) -> Scenario:
    racks = ["r0", "r1", "r2"]
    parts = int(rng.integers(4, 9))
    tasks = []
    for p in range(parts):
        tasks.append({"id": f"0_{p}", "stateful": False,
                      "input_partitions": [{"topic": "in", "partition": p,
                                            "racks": sorted(rng.choice(racks, 2, replace=False).tolist())}]})
    for p in range(parts):
        tasks.append({"id": f"1_{p}", "stateful": True, "end_offset_sum": int(rng.integers(100_000, 2_000_000)),
                      "input_partitions": [{"topic": "rep", "partition": p,
                                            "racks": sorted(rng.choice(racks, 2, replace=False).tolist())}],
                      "changelog_partitions": [{"topic": "store-changelog", "partition": p,
                                                "racks": sorted(rng.choice(racks, 2, replace=False).tolist())}]})
    n = int(rng.integers(2, 4))
    clients = []
    for i in range(n):
        c = {"process_id": f"p{i}", "threads": int(rng.integers(1, 3)), "rack": racks[i % 3],
             "previous_active": [], "previous_standby": []}
        if standbys:
            c["tags"] = {"zone": racks[i % 3]}
        clients.append(c)
    config: dict[str, Any] = {"acceptable_recovery_lag": 10_000, "max_warmup_replicas": 2,
                              "num_standby_replicas": standbys, "rebalancing_mode": mode,
                              "rack_aware_assignment_strategy": "min_traffic"}
    if standbys:
        config["rack_aware_assignment_tags"] = ["zone"]
    snap = {"format": "stickyflow.snapshot/1", "kind": "streams", "id": f"{name}-{seed}", "now_ms": 1_700_000_000_000,
            "tasks": tasks, "clients": clients, "config": config}
    biggest = max(t.get("end_offset_sum", 0) for t in tasks)
    events = (
        Event(round=1, action="join", member=f"p{n}", spec={"threads": 1, "rack": racks[n % 3],
                                                             **({"tags": {"zone": racks[n % 3]}} if standbys else {})}),
        Event(round=1, action="join", member=f"p{n + 1}",
              spec={"threads": 2, "rack": racks[(n + 1) % 3],
                    **({"tags": {"zone": racks[(n + 1) % 3]}} if standbys else {})}),
        Event(round=12, action="crash", member="p0"),
        Event(round=18, action="leader_lost"),
        Event(round=19, action="leave", member="p1"),
        Event(round=24, action="join", member="p1", spec={}),
    )
    # a warm-up catches up on the largest store in about two probing intervals; the changelogs grow slowly
    return Scenario(snapshot=snap, events=events, rounds=30, restore_per_round=max(1, biggest // 2),
                    write_per_ms=0.05, name=f"{name}-{seed}")
