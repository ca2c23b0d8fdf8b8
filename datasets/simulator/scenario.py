"""A simulator scenario: a first snapshot, the events that follow, and how fast local state restores.

Read from JSON with :func:`scenario_from_json` / :func:`load_scenario`; every
problem is an :class:`~stickyflow.InvalidSnapshotError` naming the field
(``scenario.events[1].member``, ...). Played by
:func:`stickyflow.datasets.simulator.simulate`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from stickyflow.check.input import Checker, is_int
from stickyflow.errors import InvalidSnapshotError, Problem

__all__ = ["ACTIONS", "READINESS", "DEFAULT_RESTORE_PER_MS", "DEFAULT_IDLE_MS", "Event", "Scenario",
           "scenario_from_json", "load_scenario"]

ACTIONS = ("join", "leave", "crash", "leader_lost")
READINESS = ("eager", "conservative")
DEFAULT_RESTORE_PER_MS = 100.0  # offsets per ms (100k records/s) when the scenario gives no rate
DEFAULT_IDLE_MS = 600_000
_EMPTY: Mapping = MappingProxyType({})


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
        from .presets import preset

        _, name, *rest = text.split(":")
        if len(rest) > 1 or (rest and not rest[0].strip().isdigit()):
            raise InvalidSnapshotError(Problem("preset", f"{text!r} is not preset:NAME or preset:NAME:SEED "
                                                         f"(SEED an integer >= 0)"))
        return preset(name, seed=int(rest[0]) if rest else 0)
    from stickyflow.model import jsonio

    try:
        doc = jsonio.loads(Path(path).read_bytes())
    except OSError as exc:
        raise InvalidSnapshotError(Problem("scenario", f"cannot be read from {text!r} ({exc.strerror})")) from None
    except ValueError as exc:
        raise InvalidSnapshotError(Problem("scenario", f"is not valid JSON ({str(exc).splitlines()[0][:200]})")) from None
    return scenario_from_json(doc, base=Path(path).parent)
