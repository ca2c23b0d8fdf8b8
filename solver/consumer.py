"""Consumer-group snapshots: the frozen model, reading and writing the spec's JSON.

A :class:`ConsumerSnapshot` is one moment of one consumer group: the topics
(partition counts, replica racks), the members (subscriptions, racks, the
partitions they owned and the generation they owned them in) and the group's
configuration. See ``snapshot-format.md`` (kind ``"consumer"``).

>>> snap = parse_consumer({
...     "format": "stickyflow.snapshot/1", "kind": "consumer",
...     "topics": {"t": {"partitions": 2}},
...     "members": [{"id": "a", "subscription": ["t"]}]})
>>> snap.topics["t"].partitions, snap.members[0].id
(2, 'a')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

import numpy as np

from ._check import Checker, is_int, join

__all__ = [
    "SNAPSHOT_FORMAT",
    "Topic",
    "Member",
    "ConsumerConfig",
    "ConsumerSnapshot",
    "parse_consumer",
    "consumer_to_json",
    "PreviousOwners",
    "previous_owners",
]

SNAPSHOT_FORMAT = "stickyflow.snapshot/1"
_EMPTY: Mapping = MappingProxyType({})


@dataclass(frozen=True, slots=True, kw_only=True)
class Topic:
    """A topic: its partition count and, optionally, the racks holding each partition's replicas."""

    name: str
    partitions: int
    racks: tuple[frozenset[str], ...] | None = None  # index = partition number


@dataclass(frozen=True, slots=True, kw_only=True)
class Member:
    """A group member as the leader sees it in a JoinGroup round."""

    id: str
    subscription: tuple[str, ...]
    rack: str | None = None
    generation: int | None = None  # None: unknown (the wire format's -1)
    owned: Mapping[str, tuple[int, ...]] = field(default_factory=lambda: _EMPTY)
    instance_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerConfig:
    """Problem settings of a consumer group (``config`` in the snapshot)."""

    rack_aware: bool | None = None  # None: decide from the data (true when members and partitions carry racks)
    traffic_cost: int = 10
    non_overlap_cost: int = 1


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class ConsumerSnapshot:
    """One moment of one consumer group. Read-only; build it with :func:`parse_consumer` or directly."""

    topics: Mapping[str, Topic]
    members: tuple[Member, ...]
    protocol: str = "eager"
    config: ConsumerConfig = field(default_factory=ConsumerConfig)
    id: str | None = None
    now_ms: int = 0
    kind: str = field(default="consumer", init=False)

    @property
    def rack_aware(self) -> bool:
        """Whether rack costs apply: the config's choice, else true when racks are known on both sides."""
        if self.config.rack_aware is not None:
            return self.config.rack_aware
        return any(m.rack is not None for m in self.members) and any(
            t.racks is not None and any(t.racks) for t in self.topics.values()
        )

    def member_index(self) -> dict[str, int]:
        return {m.id: i for i, m in enumerate(self.members)}

    def subscribers(self) -> dict[str, list[int]]:
        """Topic name -> indexes of the members subscribing to it (existing topics only)."""
        subs: dict[str, list[int]] = {t: [] for t in self.topics}
        for i, m in enumerate(self.members):
            for t in m.subscription:
                if t in subs:
                    subs[t].append(i)
        return subs

    def assignable_topics(self) -> list[str]:
        """Existing topics that at least one member subscribes to, in snapshot order."""
        subs = self.subscribers()
        return [t for t in self.topics if subs[t]]

    def __repr__(self) -> str:
        return (f"ConsumerSnapshot(id={self.id!r}, topics={len(self.topics)}, "
                f"partitions={sum(t.partitions for t in self.topics.values())}, members={len(self.members)}, "
                f"protocol={self.protocol!r})")


# --------------------------------------------------------------------------- reading

_CONFIG_KEYS = frozenset({"rack_aware", "traffic_cost", "non_overlap_cost"})


def parse_consumer(doc: Mapping[str, Any], chk: Checker | None = None) -> ConsumerSnapshot:
    """Build a :class:`ConsumerSnapshot` from parsed JSON, or raise :class:`InvalidSnapshotError`.

    Every problem is collected; the error names the first field and counts the rest.
    """
    own_checker = chk is None
    chk = chk or Checker()
    snap_id = chk.string(doc, "id", "", required=False)
    now_ms = chk.integer(doc, "now_ms", "", required=False, default=0)
    protocol = chk.choice(doc, "protocol", "", ("eager", "cooperative"), default="eager")

    topics = _parse_topics(doc, chk)
    members = _parse_members(doc, chk)
    config = _parse_config(doc, chk)
    if own_checker:
        chk.raise_if_any()
    return ConsumerSnapshot(topics=topics, members=members, protocol=protocol, config=config,
                            id=snap_id, now_ms=now_ms)


def _parse_topics(doc: Mapping[str, Any], chk: Checker) -> Mapping[str, Topic]:
    raw = chk.obj(doc, "topics", "")
    topics: dict[str, Topic] = {}
    if raw is None:
        return MappingProxyType(topics)
    interned: dict[tuple[str, ...], frozenset[str]] = {}
    for name, spec in raw.items():
        path = join("topics", name)
        if not isinstance(spec, dict):
            chk.fail(path, "must be an object")
            continue
        n = chk.integer(spec, "partitions", path, minimum=1)
        racks_raw = chk.array(spec, "racks", path, required=False)
        racks = None
        if racks_raw is not None and n is not None:
            if len(racks_raw) != n:
                chk.fail(f"{path}.racks", f"must hold one list per partition ({n}), not {len(racks_raw)}")
            else:
                out = []
                for i, lst in enumerate(racks_raw):
                    if not isinstance(lst, list) or not all(isinstance(r, str) for r in lst):
                        chk.fail(f"{path}.racks[{i}]", "must be an array of rack names (strings)")
                        out = None
                        break
                    key = tuple(lst)
                    fs = interned.get(key)
                    if fs is None:
                        fs = interned[key] = frozenset(lst)
                    out.append(fs)
                racks = tuple(out) if out is not None else None
        if n is not None:
            topics[name] = Topic(name=name, partitions=n, racks=racks)
    return MappingProxyType(topics)


def _parse_members(doc: Mapping[str, Any], chk: Checker) -> tuple[Member, ...]:
    raw = chk.array(doc, "members", "")
    if raw is None:
        return ()
    members: list[Member] = []
    seen: set[str] = set()
    for i, m in enumerate(raw):
        path = f"members[{i}]"
        if not isinstance(m, dict):
            chk.fail(path, "must be an object")
            continue
        mid = chk.string(m, "id", path)
        if mid is not None:
            if mid in seen:
                chk.fail(f"{path}.id", f'must be unique ("{mid}" appears twice)')
            seen.add(mid)
        subs = chk.string_list(m, "subscription", path)
        rack = chk.string(m, "rack", path, required=False, allow_null=True)
        gen = chk.integer(m, "generation", path, required=False, default=-1)
        instance_id = chk.string(m, "instance_id", path, required=False, allow_null=True)
        owned_raw = chk.obj(m, "owned", path, required=False)
        owned: dict[str, tuple[int, ...]] = {}
        if owned_raw:
            for topic, parts in owned_raw.items():
                ppath = f"{join(path + '.owned', topic)}"
                if not isinstance(parts, list):
                    chk.fail(ppath, "must be an array of partition numbers")
                    continue
                # one pass in C for the common case; the slow scan only finds the culprit
                if not all(type(p) is int for p in parts) or (parts and min(parts) < 0):
                    bad = next(j for j, p in enumerate(parts) if not is_int(p) or p < 0)
                    chk.fail(f"{ppath}[{bad}]", "must be an integer >= 0")
                    continue
                owned[topic] = tuple(parts)
        if mid is None or subs is None:
            continue
        members.append(Member(
            id=mid,
            subscription=tuple(dict.fromkeys(subs)),
            rack=rack,
            generation=None if gen is None or gen < 0 else gen,
            owned=MappingProxyType(owned) if owned else _EMPTY,
            instance_id=instance_id,
        ))
    return tuple(members)


def _parse_config(doc: Mapping[str, Any], chk: Checker) -> ConsumerConfig:
    raw = chk.obj(doc, "config", "", required=False)
    if raw is None:
        return ConsumerConfig()
    chk.unknown_keys(raw, _CONFIG_KEYS, "config")
    rack_aware = chk.boolean(raw, "rack_aware", "config", required=False)
    traffic = chk.integer(raw, "traffic_cost", "config", required=False, minimum=0, default=10)
    overlap = chk.integer(raw, "non_overlap_cost", "config", required=False, minimum=0, default=1)
    return ConsumerConfig(rack_aware=rack_aware, traffic_cost=traffic, non_overlap_cost=overlap)


# --------------------------------------------------------------------------- writing

def consumer_to_json(snap: ConsumerSnapshot) -> dict[str, Any]:
    """The snapshot as spec JSON (a plain dict), the inverse of :func:`parse_consumer`."""
    topics: dict[str, Any] = {}
    for t in snap.topics.values():
        spec: dict[str, Any] = {"partitions": t.partitions}
        if t.racks is not None:
            spec["racks"] = [sorted(r) for r in t.racks]
        topics[t.name] = spec
    members = []
    for m in snap.members:
        d: dict[str, Any] = {"id": m.id, "subscription": list(m.subscription)}
        if m.rack is not None:
            d["rack"] = m.rack
        if m.generation is not None:
            d["generation"] = m.generation
        if m.owned:
            d["owned"] = {t: list(p) for t, p in m.owned.items()}
        if m.instance_id is not None:
            d["instance_id"] = m.instance_id
        members.append(d)
    out: dict[str, Any] = {"format": SNAPSHOT_FORMAT, "kind": "consumer"}
    if snap.id is not None:
        out["id"] = snap.id
    if snap.now_ms:
        out["now_ms"] = snap.now_ms
    out["protocol"] = snap.protocol
    out["topics"] = topics
    out["members"] = members
    cfg = snap.config
    config: dict[str, Any] = {"traffic_cost": cfg.traffic_cost, "non_overlap_cost": cfg.non_overlap_cost}
    if cfg.rack_aware is not None:
        config["rack_aware"] = cfg.rack_aware
    out["config"] = config
    return out


# --------------------------------------------------------------------------- KIP-341 claims

@dataclass(frozen=True, slots=True, eq=False)
class PreviousOwners:
    """The valid previous owner of every existing partition, per KIP-341.

    ``owner[topic]`` is an ``int32`` array of length ``partitions`` holding the
    index (into ``snapshot.members``) of the member whose claim wins, or ``-1``
    where nobody's does (internal arrays only; the public API speaks ``None``).
    ``claims[topic]`` lists every (member index, partitions) claim on existing
    partitions, losing ones included: the cooperative protocol needs them.
    """

    owner: Mapping[str, np.ndarray]
    claims: Mapping[str, tuple[tuple[int, np.ndarray], ...]]

    def of(self, topic: str, partition: int) -> int | None:
        arr = self.owner.get(topic)
        if arr is None or not 0 <= partition < len(arr):
            return None
        o = int(arr[partition])
        return None if o < 0 else o


def previous_owners(snap: ConsumerSnapshot) -> PreviousOwners:
    """Resolve every claim of ``snap`` (KIP-341): the higher generation wins, equal generations: nobody.

    Stale claims (deleted topics, partitions beyond the count) are dropped. A
    claim on a topic the member no longer subscribes to still counts: that
    member is the valid previous owner, and losing the partition is a move.

    >>> s = parse_consumer({"format": "stickyflow.snapshot/1", "kind": "consumer",
    ...     "topics": {"t": {"partitions": 2}},
    ...     "members": [{"id": "a", "subscription": ["t"], "generation": 2, "owned": {"t": [0, 1]}},
    ...                 {"id": "b", "subscription": ["t"], "generation": 3, "owned": {"t": [1, 7]}}]})
    >>> previous_owners(s).owner["t"].tolist()
    [0, 1]
    """
    owner: dict[str, np.ndarray] = {}
    best: dict[str, np.ndarray] = {}
    tie: dict[str, np.ndarray] = {}
    claims: dict[str, list[tuple[int, np.ndarray]]] = {}
    for t, topic in snap.topics.items():
        owner[t] = np.full(topic.partitions, -1, dtype=np.int32)
    for i, m in enumerate(snap.members):
        gen = -1 if m.generation is None else m.generation
        for t, parts in m.owned.items():
            topic = snap.topics.get(t)
            if topic is None or not parts:
                continue
            p = np.unique(np.asarray(parts, dtype=np.int64))
            p = p[p < topic.partitions]
            if not len(p):
                continue
            claims.setdefault(t, []).append((i, p))
            if t not in best:
                best[t] = np.full(topic.partitions, np.iinfo(np.int64).min, dtype=np.int64)
                tie[t] = np.zeros(topic.partitions, dtype=bool)
            b, o, ti = best[t], owner[t], tie[t]
            cur = b[p]
            win = p[gen > cur]
            draw = p[gen == cur]
            b[win] = gen
            o[win] = i
            ti[win] = False
            ti[draw] = True
    for t, ti in tie.items():
        owner[t][ti] = -1
    return PreviousOwners(
        owner=MappingProxyType(owner),
        claims=MappingProxyType({t: tuple(c) for t, c in claims.items()}),
    )
