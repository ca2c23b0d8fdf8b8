"""stickyflow as a partition assignor inside kafka-python and aiokafka consumers.

Two assignors that a consumer lists in ``partition_assignment_strategy``:

* :class:`OptimalAssignor` (``"stickyflow-optimal"``): the eager protocol; works
  with kafka-python (2.x and 3.x) and aiokafka.
* :class:`CooperativeOptimalAssignor` (``"stickyflow-cooperative-optimal"``):
  KIP-429's cooperative protocol; needs kafka-python >= 3, whose coordinator
  supports ``RebalanceProtocol.COOPERATIVE``.

How a rebalance runs through them:

1. Every member's JoinGroup metadata (``metadata(topics)``) is a
   ``ConsumerProtocolSubscription`` version 3: its topics, the partitions it
   owns (v1), the generation it received them in (v2) and its rack (v3,
   KIP-881). The same facts travel once more, as JSON, in ``user_data``, because
   aiokafka and kafka-python 2 decode only version 0 of that structure.
2. The leader's ``assign(cluster, members)`` reads them into a
   :class:`stickyflow.ConsumerSnapshot` (partition counts and replica racks come
   from the client's cluster metadata), runs ``stickyflow.assign(snapshot,
   "optimal")`` and encodes the answer back. KIP-341 claim conflicts resolve in
   the core, so ownership survives a leader change. Any exception falls back to
   the greedy ``sticky`` assignor, then to ``range``, then to a plain split of
   the topics: the rebalance never fails because of the optimizer.
3. With the cooperative class, the returned assignment omits every partition
   that a member other than its new owner still claims; that member revokes it
   and rejoins (kafka-python does both), and the follow-up round hands it over.
4. ``on_assignment`` remembers what this member received and in which
   generation, for its next JoinGroup. aiokafka and kafka-python 2 do not pass
   the generation to an assignor, so the leader also stamps an epoch (one more
   than the highest generation any member reported) into each assignment's
   ``user_data``; members use it where the client gives no generation.

Pass an *instance* (aiokafka calls methods on whatever it is given, and only an
instance carries ``client.rack``)::

    from kafka import KafkaConsumer
    from stickyflow.adapters.kafka import OptimalAssignor
    consumer = KafkaConsumer("orders", group_id="g", partition_assignment_strategy=[OptimalAssignor(rack="eu-1a")])

Importing this module needs kafka-python or aiokafka (``pip install
'stickyflow[kafka]'``); ``import stickyflow`` never does.
"""

from __future__ import annotations

import enum
import io
import json
import logging
import struct
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Iterable

import stickyflow
from stickyflow.errors import BackendMissingError
from stickyflow.model.consumer import ConsumerConfig, ConsumerSnapshot, Member, Topic
from stickyflow.result import AssignmentResult

from .kafka_load import (DEFAULT_RATE_WINDOW, LAYOUT, RateMeter, leader_rates, member_capacity, rates_to_json,
                         read_layout, with_load_settings, assigned_rates, inherited_rates)

try:  # kafka-python (3.x has the cooperative protocol; 2.x shares the legacy interface with aiokafka)
    from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor as _Base
except ImportError:
    try:
        from aiokafka.coordinator.assignors.abstract import AbstractPartitionAssignor as _Base
    except ImportError:
        raise BackendMissingError(
            "stickyflow.adapters.kafka needs kafka-python (>= 3 for the cooperative protocol) or aiokafka: "
            "pip install 'stickyflow[kafka]'") from None

try:
    from kafka.coordinator.assignors.abstract import RebalanceProtocol
except ImportError:  # kafka-python 2.x, aiokafka: no KIP-429 in the client
    class RebalanceProtocol(enum.IntEnum):  # type: ignore[no-redef]
        """KIP-429 rebalance protocols, as kafka-python 3 numbers them."""

        EAGER = 0
        COOPERATIVE = 1

__all__ = [
    "OptimalAssignor",
    "CooperativeOptimalAssignor",
    "MemberInfo",
    "read_member",
    "build_snapshot",
    "RebalanceProtocol",
    "encode_subscription",
    "decode_subscription",
    "USER_DATA_MAGIC",
]

log = logging.getLogger(__name__)

SUBSCRIPTION_VERSION = 3  # v1 owned partitions (KIP-429), v2 generation, v3 rack (KIP-881)
ASSIGNMENT_VERSION = 3
USER_DATA_MAGIC = b"stickyflow/1\n"  # then UTF-8 JSON; anything else in user_data is foreign and ignored
_EMPTY: Mapping = MappingProxyType({})


# --------------------------------------------------------------------------- wire format

def _put_string(buf: list[bytes], s: str | None) -> None:
    if s is None:
        buf.append(struct.pack(">h", -1))
    else:
        raw = s.encode("utf-8")
        buf.append(struct.pack(">h", len(raw)))
        buf.append(raw)


def encode_subscription(topics: Iterable[str], *, owned: Mapping[str, Iterable[int]] | None = None,
                        generation: int = -1, rack: str | None = None, user_data: bytes | None = b"",
                        version: int = SUBSCRIPTION_VERSION) -> bytes:
    """A ``ConsumerProtocolSubscription`` (Kafka's consumer JoinGroup metadata) as bytes, versions 0 to 3.

    Byte-for-byte what kafka-python 3 encodes, so every client and broker reads it.

    >>> raw = encode_subscription(["t"], owned={"t": [0]}, generation=4, rack="r1", user_data=None)
    >>> decode_subscription(raw)["generation"], decode_subscription(raw)["owned"]
    (4, {'t': (0,)})
    """
    if not 0 <= version <= 3:
        raise ValueError(f"version: must be 0 to 3, not {version}")
    buf: list[bytes] = [struct.pack(">h", version)]
    topics = list(topics)
    buf.append(struct.pack(">i", len(topics)))
    for t in topics:
        _put_string(buf, t)
    if user_data is None:
        buf.append(struct.pack(">i", -1))
    else:
        buf.append(struct.pack(">i", len(user_data)))
        buf.append(bytes(user_data))
    if version >= 1:
        items = [(t, sorted(int(p) for p in ps)) for t, ps in (owned or {}).items()]
        buf.append(struct.pack(">i", len(items)))
        for t, ps in items:
            _put_string(buf, t)
            buf.append(struct.pack(f">i{len(ps)}i", len(ps), *ps))
    if version >= 2:
        buf.append(struct.pack(">i", generation))
    if version >= 3:
        _put_string(buf, rack)
    return b"".join(buf)


def _read(stream: io.BytesIO, fmt: str):
    size = struct.calcsize(fmt)
    raw = stream.read(size)
    if len(raw) != size:
        raise ValueError("truncated ConsumerProtocolSubscription")
    return struct.unpack(fmt, raw)


def _get_string(stream: io.BytesIO) -> str | None:
    (n,) = _read(stream, ">h")
    if n < 0:
        return None
    raw = stream.read(n)
    if len(raw) != n:
        raise ValueError("truncated ConsumerProtocolSubscription")
    return raw.decode("utf-8")


def decode_subscription(raw: bytes) -> dict[str, Any]:
    """Read a ``ConsumerProtocolSubscription`` of any version (later fields are ignored, as Kafka does).

    Returns ``version``, ``topics``, ``user_data``, ``owned`` (topic -> partitions),
    ``generation`` (-1 when absent) and ``rack``.
    """
    stream = io.BytesIO(raw)
    (version,) = _read(stream, ">h")
    (n,) = _read(stream, ">i")
    topics = [_get_string(stream) for _ in range(max(n, 0))]
    (n,) = _read(stream, ">i")
    user_data = None if n < 0 else stream.read(n)
    out: dict[str, Any] = {"version": version, "topics": topics, "user_data": user_data, "owned": {},
                           "generation": -1, "rack": None}
    if version >= 1:
        (n,) = _read(stream, ">i")
        owned: dict[str, tuple[int, ...]] = {}
        for _ in range(max(n, 0)):
            t = _get_string(stream)
            (k,) = _read(stream, ">i")
            owned[t] = tuple(_read(stream, f">{max(k, 0)}i"))
        out["owned"] = owned
    if version >= 2:
        (out["generation"],) = _read(stream, ">i")
    if version >= 3:
        out["rack"] = _get_string(stream)
    return out


def _pack_user_data(doc: Mapping[str, Any]) -> bytes:
    return USER_DATA_MAGIC + json.dumps(doc, separators=(",", ":"), sort_keys=True).encode("utf-8")


def _unpack_user_data(raw: Any) -> dict[str, Any] | None:
    """Our JSON from ``user_data``, or None when it is empty or someone else's."""
    if not raw:
        return None
    raw = bytes(raw)
    if not raw.startswith(USER_DATA_MAGIC):
        return None
    doc = json.loads(raw[len(USER_DATA_MAGIC):].decode("utf-8"))
    return doc if isinstance(doc, dict) else None


# --------------------------------------------------------------------------- what the leader reads

@dataclass(frozen=True, slots=True, kw_only=True)
class MemberInfo:
    """One member as the leader reads it from its JoinGroup metadata."""

    member_id: str
    topics: tuple[str, ...]
    owned: Mapping[str, tuple[int, ...]] = field(default_factory=lambda: _EMPTY)
    generation: int | None = None  # None: unknown
    rack: str | None = None
    instance_id: str | None = None
    rates: Mapping[str, Mapping[int, float]] = field(default_factory=lambda: _EMPTY)  # what it measured (load)
    capacity: float | None = None  # its own capacity (balance by load); None: the group's


def _partitions_of(obj: Any) -> tuple[int, ...]:
    return tuple(sorted({int(p) for p in obj}))


def _owned_from_doc(raw: Any) -> dict[str, tuple[int, ...]]:
    if not isinstance(raw, Mapping):
        raise ValueError("user_data.owned: must be an object of topic -> partitions")
    return {str(t): _partitions_of(ps) for t, ps in raw.items() if ps}


def read_member(member_id: str, metadata: Any, instance_id: str | None = None) -> MemberInfo:
    """A :class:`MemberInfo` from a member's metadata: bytes, or a client's decoded subscription object.

    Our JSON in ``user_data`` wins (it is complete whatever the client decoded);
    else the v1-v3 fields; a member whose metadata cannot be read has no claims. Layout 2 of that JSON adds the
    rates the member measured and its capacity (:mod:`stickyflow.adapters.kafka_load`); bad ones are dropped
    with a warning (the leader estimates those rates), its claims kept.
    """
    if isinstance(metadata, (bytes, bytearray, memoryview)):
        d = decode_subscription(bytes(metadata))
        topics, user_data = d["topics"], d["user_data"]
        owned, generation, rack = d["owned"], d["generation"], d["rack"]
    else:  # kafka-python 3: .topics; aiokafka and kafka-python 2 (version 0 only): .subscription
        topics = getattr(metadata, "topics", None)
        if topics is None:
            topics = getattr(metadata, "subscription")
        user_data = getattr(metadata, "user_data", None)
        owned = {tp.topic: _partitions_of(tp.partitions) for tp in (getattr(metadata, "owned_partitions", None) or ())}
        generation = getattr(metadata, "generation_id", -1)
        rack = getattr(metadata, "rack_id", None)
    topics = tuple(dict.fromkeys(str(t) for t in topics))
    try:
        doc = _unpack_user_data(user_data)
    except (ValueError, UnicodeDecodeError) as exc:
        log.warning("stickyflow: member %s sent unreadable user_data (%s); ignoring its claims", member_id, exc)
        doc, owned, generation = None, {}, -1
    if doc is not None:
        try:
            owned = _owned_from_doc(doc.get("owned", {}))
            generation = int(doc.get("generation", -1))
            rack = doc.get("rack") if isinstance(doc.get("rack"), str) else None
        except (TypeError, ValueError) as exc:
            log.warning("stickyflow: member %s sent malformed user_data (%s); ignoring its claims", member_id, exc)
            owned, generation = {}, -1
    rates, capacity = {}, None
    if doc is not None:
        try:
            load = read_layout(doc)
            rates, capacity = load["rates"], load["capacity"]
        except ValueError as exc:
            log.warning("stickyflow: member %s sent malformed rates (%s); estimating them", member_id, exc)
    generation = None if generation is None or generation < 0 else int(generation)
    return MemberInfo(member_id=str(member_id), topics=topics, owned=MappingProxyType(dict(owned)),
                      generation=generation, rack=rack, instance_id=instance_id, rates=MappingProxyType(rates),
                      capacity=capacity)


def _replica_racks(cluster: Any, topic: str, n: int) -> tuple[frozenset[str], ...] | None:
    """Racks of each partition's replicas, from the client's cluster metadata; None when none are known."""
    table = getattr(cluster, "_partitions", None)  # both clients keep topic -> partition -> metadata here
    if not isinstance(table, Mapping) or topic not in table:
        return None
    racks: list[frozenset[str]] = []
    seen_any = False
    for p in range(n):
        meta = table[topic].get(p)
        nodes = getattr(meta, "replica_nodes", None)
        if nodes is None:
            nodes = getattr(meta, "replicas", None) or ()
        rs = set()
        for node in nodes:
            broker = cluster.broker_metadata(node)
            rack = getattr(broker, "rack", None)
            if rack:
                rs.add(rack)
        seen_any = seen_any or bool(rs)
        racks.append(frozenset(rs))
    return tuple(racks) if seen_any else None


def build_snapshot(cluster: Any, members: Iterable[MemberInfo], *, protocol: str = "eager",
                   config: ConsumerConfig | None = None) -> ConsumerSnapshot:
    """The :class:`ConsumerSnapshot` of one rebalance: members sorted by id, topics as the cluster knows them;
    balancing by load, every topic's ``rates`` from what the members measured (:func:`leader_rates`)."""
    infos = sorted(members, key=lambda m: m.member_id)
    sizes: dict[str, int] = {}
    for name in sorted({t for m in infos for t in m.topics}):
        parts = cluster.partitions_for_topic(name)
        if parts:  # else unknown to the cluster (yet): it has no partitions to assign
            sizes[name] = max(parts) + 1
    by_load = config is not None and config.balance == "load"
    rates = leader_rates(sizes, [m.rates for m in infos]) if by_load else {}
    topics = {name: Topic(name=name, partitions=n, racks=_replica_racks(cluster, name, n), rates=rates.get(name))
              for name, n in sizes.items()}
    snap_members = tuple(Member(id=m.member_id, subscription=m.topics, rack=m.rack, generation=m.generation,
                                owned=m.owned, instance_id=m.instance_id, capacity=m.capacity if by_load else None)
                         for m in infos)
    return ConsumerSnapshot(topics=MappingProxyType(topics), members=snap_members, protocol=protocol,
                            config=config or ConsumerConfig(), now_ms=int(time.time() * 1000))


# --------------------------------------------------------------------------- the assignors

ResultHook = Callable[[ConsumerSnapshot, AssignmentResult], None]


class OptimalAssignor(_Base):
    """stickyflow's optimal assignor for kafka-python and aiokafka consumers (eager protocol).

    Example (one instance per consumer; ``rack`` is this consumer's ``client.rack``)::

        from stickyflow.adapters.kafka import OptimalAssignor
        consumer = KafkaConsumer("orders", "payments", group_id="g",
                                 partition_assignment_strategy=[OptimalAssignor(rack="eu-1a")])

    Parameters: ``rack`` (this member's rack, sent in the KIP-881 field);
    ``config`` (a :class:`stickyflow.ConsumerConfig` or a dict of its fields:
    ``traffic_cost``, ``non_overlap_cost``, ``rack_aware``); ``assignor`` (any
    stickyflow consumer assignor name, default ``"optimal"``); ``time_limit``
    and ``method`` (passed to :func:`stickyflow.assign`); ``on_result`` (called
    on the leader with the snapshot and the result of every rebalance it runs).

    Balance by load: ``balance="load"`` (default ``"count"``, Kafka's), ``capacity`` (this member's, in
    records/s; None: the group's ``config`` capacity), ``load_slack`` (the group's, default 0.05; both as in
    the snapshot format) and ``rate_window`` (seconds, default 30). The member then measures the records/s it
    consumes per owned partition: hand every poll to :meth:`observe`::

        assignor = OptimalAssignor(balance="load", rate_window=30)
        consumer = KafkaConsumer("orders", group_id="g", partition_assignment_strategy=[assignor])
        while True:
            for tp, records in assignor.observe(consumer.poll(timeout_ms=100)).items():
                ...

    and its next JoinGroup carries the rates (:mod:`stickyflow.adapters.kafka_load`: the window, the
    ``user_data`` layout, the leader's estimate for partitions nobody reports). The leader balances by load when
    its own assignor was made with ``balance="load"``; give every member the same settings.

    After a rebalance it led, ``last_snapshot`` and ``last_result`` hold what it
    solved and ``last_fallback`` why a stand-in ran (None when none did).
    """

    name = "stickyflow-optimal"
    version = SUBSCRIPTION_VERSION
    protocol = "eager"

    def __init__(self, *, rack: str | None = None, config: ConsumerConfig | Mapping[str, Any] | None = None,
                 assignor: str = "optimal", time_limit: float | None = None, method: str | None = None,
                 on_result: ResultHook | None = None, balance: str | None = None, capacity: float | None = None,
                 load_slack: float | None = None, rate_window: float = DEFAULT_RATE_WINDOW):
        if isinstance(config, Mapping):
            config = ConsumerConfig(**config)
        if balance is not None or load_slack is not None:
            config = with_load_settings(config or ConsumerConfig(), balance, load_slack)
        self.capacity = member_capacity(capacity)
        self.meter = RateMeter(rate_window)
        self.rack = rack
        self.config = config
        self.assignor = assignor
        self.time_limit = time_limit
        self.method = method
        self.on_result = on_result
        # this member's side: what it owns and since which generation
        self.owned: dict[str, tuple[int, ...]] = {}
        self.generation: int = -1
        # the leader's side: the last rebalance it ran
        self.last_snapshot: ConsumerSnapshot | None = None
        self.last_result: AssignmentResult | None = None
        self.last_fallback: str | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, rack={self.rack!r}, assignor={self.assignor!r})"

    # ---- protocol selection (kafka-python 3)

    def supported_protocols(self) -> list:
        """The rebalance protocols this assignor supports (kafka-python 3 reads this)."""
        return [RebalanceProtocol.EAGER]

    # ---- member side

    def metadata(self, topics: Iterable[str]) -> bytes:
        """This member's JoinGroup metadata: topics, owned partitions, generation, rack (encoded bytes).

        Owned partitions of topics it no longer subscribes to are left out: the
        client has already given those up, and a claim on them would only hold
        them back from their next owner under the cooperative protocol.
        """
        topics = sorted(set(topics))
        wanted = set(topics)
        owned = {t: list(ps) for t, ps in sorted(self.owned.items()) if t in wanted and ps}
        doc: dict[str, Any] = {"generation": self.generation, "rack": self.rack, "owned": owned}
        if self.config is not None and self.config.balance == "load":  # layout 2: what this member measured
            doc.update(layout=LAYOUT, rates=rates_to_json(self.meter.report(owned, topics=wanted)),
                       rate_window=self.meter.window, capacity=self.capacity)
            self.meter.pause()  # the JoinGroup: consuming stops until the assignment
        user_data = _pack_user_data(doc)
        return encode_subscription(topics, owned=owned, generation=self.generation, rack=self.rack,
                                   user_data=user_data)

    def on_assignment(self, assignment: Any, generation: int | None = None) -> None:
        """Remember what this member received (kafka-python 3 passes the generation, the others do not)."""
        if isinstance(assignment, (bytes, bytearray, memoryview)):
            assignment = _decode_assignment(bytes(assignment))
        owned: dict[str, set[int]] = {}
        for tp in assignment.partitions():
            owned.setdefault(tp.topic, set()).add(int(tp.partition))
        self.owned = {t: tuple(sorted(ps)) for t, ps in owned.items()}
        try:
            doc = _unpack_user_data(getattr(assignment, "user_data", None))
        except (ValueError, UnicodeDecodeError):
            doc = None
        self.meter.owning(self.owned, known=inherited_rates(doc))
        if generation is None:
            epoch = doc.get("epoch") if doc else None
            if isinstance(epoch, int):
                generation = epoch
        if generation is not None:
            self.generation = int(generation)

    def observe(self, polled: Any) -> Any:
        """Count the records of one ``consumer.poll()`` per partition (balance by load); returns ``polled``."""
        return self.meter.observe(polled)

    def on_generation_assignment(self, generation: int) -> None:
        """The generation of the last assignment, where a client reports it separately (kafka-python 2 style)."""
        self.generation = int(generation)

    # ---- leader side

    def assign(self, cluster: Any, members: Any) -> dict[str, Any]:
        """Assign the group's partitions: ``{member_id: assignment}`` in the calling client's own types.

        ``members`` is kafka-python 3's list of JoinGroup members (``member_id``,
        ``group_instance_id``, decoded ``metadata``) or, for aiokafka and
        kafka-python 2, a dict of member id -> decoded metadata.
        """
        legacy = isinstance(members, Mapping)
        entries = list(members.items()) if legacy else [
            (m.member_id, m.metadata, getattr(m, "group_instance_id", None)) for m in members]
        infos: list[MemberInfo] = []
        for entry in entries:
            member_id, metadata = entry[0], entry[1]
            instance_id = entry[2] if len(entry) > 2 else None
            try:
                infos.append(read_member(member_id, metadata, instance_id))
            except Exception as exc:  # one unreadable member must not stop the group
                log.warning("stickyflow: cannot read the metadata of member %s (%s)", member_id, exc)
                topics = getattr(metadata, "topics", None) or getattr(metadata, "subscription", None) or ()
                infos.append(MemberInfo(member_id=str(member_id), topics=tuple(topics), instance_id=instance_id))
        protocol = self.protocol
        if protocol == "cooperative" and legacy:
            log.warning("stickyflow: %s needs kafka-python >= 3 (KIP-429); this client is eager-only, "
                        "so this rebalance runs the eager protocol", self.name)
            protocol = "eager"
        epoch = max((m.generation for m in infos if m.generation is not None), default=-1) + 1
        self.last_fallback = None
        try:
            snap = build_snapshot(cluster, infos, protocol=protocol, config=self.config)
            result = self._solve(snap)
            partitions = {mid: {t: list(ps) for t, ps in topics.items() if len(ps)}
                          for mid, topics in result.assignment.items()}
            self.last_snapshot, self.last_result = snap, result
            status = result.solver.status
        except Exception as exc:  # the last resort: never fail the rebalance
            log.exception("stickyflow: every assignor failed; splitting the topics plainly")
            self.last_fallback = f"emergency split ({type(exc).__name__}: {exc})"
            partitions = _emergency_split(cluster, infos, cooperative=protocol == "cooperative")
            self.last_snapshot, self.last_result, status = None, None, "emergency"
        rates = self.last_snapshot is not None and self.last_snapshot.config.balance == "load"
        return {m.member_id: _encode_assignment(partitions.get(m.member_id, {}), _pack_user_data(
                    {"epoch": epoch, "status": status, **(assigned_rates(self.last_snapshot, partitions.get(
                        m.member_id, {})) if rates else {})}), legacy, members)
                for m in infos}

    def _solve(self, snap: ConsumerSnapshot) -> AssignmentResult:
        """``optimal`` (the front door already stands in ``sticky`` when it fails), else ``sticky``, else ``range``."""
        chain = [self.assignor] + [a for a in ("sticky", "range") if a != self.assignor]
        errors: list[str] = []
        for name in chain:
            try:
                result = stickyflow.assign(snap, name, time_limit=self.time_limit,
                                           method=self.method if name == self.assignor else None)
            except Exception as exc:
                errors.append(f"{name}: {type(exc).__name__}: {exc}")
                log.warning("stickyflow: assignor %r failed (%s: %s)", name, type(exc).__name__, exc)
                continue
            if errors or result.solver.status == "fallback":
                self.last_fallback = "; ".join(errors + ([result.solver.reason] if result.solver.reason else []))
            if self.on_result is not None:
                try:
                    self.on_result(snap, result)
                except Exception:  # a monitoring hook must not fail the rebalance
                    log.exception("stickyflow: on_result hook failed")
            return result
        raise RuntimeError("; ".join(errors))


class CooperativeOptimalAssignor(OptimalAssignor):
    """stickyflow's optimal assignor under KIP-429's cooperative protocol (kafka-python >= 3).

    Example::

        from stickyflow.adapters.kafka import CooperativeOptimalAssignor
        consumer = KafkaConsumer("orders", "payments", group_id="g",
                                 partition_assignment_strategy=[CooperativeOptimalAssignor(rack="eu-1a")])

    The leader solves for the optimal target but hands a moving partition to
    its new owner only after the old owner has revoked it: the first round
    leaves it out, the old owner sees its assignment shrink, revokes and
    rejoins, and the follow-up round completes the move. No partition is ever
    owned by two consumers at once. Under aiokafka or kafka-python 2, which have
    no cooperative protocol, it runs eagerly and logs a warning.
    """

    name = "stickyflow-cooperative-optimal"
    protocol = "cooperative"

    def supported_protocols(self) -> list:
        return [RebalanceProtocol.COOPERATIVE]


# --------------------------------------------------------------------------- helpers

def _decode_assignment(raw: bytes) -> Any:
    """A ``ConsumerProtocolAssignment`` from bytes with kafka-python 3's class, else a minimal stand-in."""
    try:
        from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment

        return ConsumerProtocolAssignment.decode(raw)
    except ImportError:
        from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment

        return ConsumerProtocolMemberAssignment.decode(raw)


def _encode_assignment(partitions: Mapping[str, list[int]], user_data: bytes, legacy: bool, members: Any) -> Any:
    """An assignment in the client's own type: kafka-python 3's ``ConsumerProtocolAssignment`` or the legacy struct."""
    pairs = sorted((t, sorted(int(p) for p in ps)) for t, ps in partitions.items() if ps)
    if not legacy:
        from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment

        return ConsumerProtocolAssignment(ASSIGNMENT_VERSION, pairs, user_data)
    # the legacy clients' assignment struct lives beside their metadata struct
    sample = next(iter(members.values()), None)
    module = type(sample).__module__ if sample is not None else ""
    if module.startswith("aiokafka"):
        from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment
    else:
        try:
            from kafka.coordinator.protocol import ConsumerProtocolMemberAssignment  # kafka-python 2
        except ImportError:
            from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment
    return ConsumerProtocolMemberAssignment(ASSIGNMENT_VERSION, pairs, user_data)


def _emergency_split(cluster: Any, infos: list[MemberInfo], *, cooperative: bool) -> dict[str, dict[str, list[int]]]:
    """A plain range split per topic, for when stickyflow itself cannot run; cooperative: claimed partitions stay put."""
    out: dict[str, dict[str, list[int]]] = {m.member_id: {} for m in infos}
    for topic in sorted({t for m in infos for t in m.topics}):
        parts = sorted(cluster.partitions_for_topic(topic) or ())
        subs = sorted(m.member_id for m in infos if topic in m.topics)
        if not parts or not subs:
            continue
        claimed = {}
        for m in infos:
            for p in m.owned.get(topic, ()):
                claimed.setdefault(p, []).append(m.member_id)
        free = []
        for p in parts:
            owners = claimed.get(p, [])
            if cooperative and owners:
                if len(owners) == 1 and owners[0] in subs:
                    out[owners[0]].setdefault(topic, []).append(p)
                # else: withheld until the claimants have revoked it
            else:
                free.append(p)
        for k, p in enumerate(free):
            out[subs[k % len(subs)]].setdefault(topic, []).append(p)
    return out
