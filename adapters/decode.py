"""Kafka's own group-member metadata, decoded from bytes into plain JSON-ready dicts (and encoded back).

What a Kafka client sends its group coordinator, and what ``DescribeGroups``
returns verbatim, in every version Kafka has shipped:

* ``ConsumerProtocolSubscription`` (versions 0-3: topics, user data, owned
  partitions, generation id, rack id) and ``ConsumerProtocolAssignment``
  (versions 0-3: assigned partitions, user data), from Kafka's message schemas;
* the user data of Kafka's ``StickyAssignor`` (version 0: the previous
  assignment; version 1: plus the generation) and ``CooperativeStickyAssignor``
  (the generation alone);
* Kafka Streams' ``SubscriptionInfoData`` (versions 1-11: process id, previous
  active and standby tasks up to version 6, then task offset sums, the user end
  point, unique field, error code, client tags) and ``AssignmentInfo``
  (versions 1-11: active tasks, standby tasks with their partitions, partitions
  by host, error code, next rebalance time).

Keys are the schemas' field names in snake_case; a field appears only in the
versions that carry it. Task ids are text as Kafka prints them (``"0_3"``;
``"<topology>__0_3"`` under a named topology). ``user_data`` is opaque and so
base64; fields Kafka fills with UTF-8 text (the user end point, client tags) are text.

Bad bytes raise :class:`DecodeError` (an :class:`stickyflow.InvalidSnapshotError`)
naming the field and what is wrong, e.g. ``owned_partitions[1].partitions[0]:
truncated: needs 4 bytes at offset 41, 2 left``.

>>> raw = encode_consumer_subscription(["orders"], rack_id="eu-1a", version=3)
>>> d = decode_consumer_subscription(raw)
>>> d["version"], d["topics"], d["rack_id"], d["generation_id"]
(3, ['orders'], 'eu-1a', -1)

Nothing here imports a Kafka client: these functions serve the ``decode`` and
``capture`` commands and anyone holding raw bytes.
"""

from __future__ import annotations

import base64
import json
import struct
import uuid
from typing import Any, Iterable, Mapping, Sequence

from stickyflow.errors import InvalidSnapshotError, Problem

__all__ = [
    "DecodeError",
    "KINDS",
    "decode",
    "decode_consumer_subscription",
    "decode_consumer_assignment",
    "decode_sticky_user_data",
    "decode_cooperative_sticky_user_data",
    "decode_user_data",
    "decode_streams_subscription",
    "decode_streams_assignment",
    "encode_consumer_subscription",
    "encode_consumer_assignment",
    "encode_sticky_user_data",
    "encode_streams_subscription",
    "encode_streams_assignment",
    "task_text",
    "LATEST_OFFSET",
    "STREAMS_LATEST_VERSION",
]

STREAMS_LATEST_VERSION = 11  # the newest SubscriptionInfo / AssignmentInfo version Kafka has shipped
CONSUMER_LATEST_VERSION = 3
LATEST_OFFSET = -2  # Task.LATEST_OFFSET: the offset sum a client reports for a task it runs as active
_PLAUSIBLE_VERSION = 255  # a "future" Streams version above this is corrupt bytes, not a newer Kafka
_NAMED_TOPOLOGY_VERSION = 10  # task ids carry a named topology from this AssignmentInfo version on
STICKYFLOW_USER_DATA = b"stickyflow/1\n"  # what stickyflow's own Kafka assignors put in user_data


class DecodeError(InvalidSnapshotError):
    """Bytes that are not what the named Kafka structure says: ``field`` names where, ``rule`` what."""


# --------------------------------------------------------------------------- reading

class _Reader:
    """Big-endian reads with the JSON path of what is being read, for error messages."""

    def __init__(self, raw: bytes, what: str):
        self.raw, self.pos, self.what = memoryview(bytes(raw)), 0, what

    def fail(self, field: str, rule: str) -> DecodeError:
        return DecodeError(Problem(field, f"{rule} (in {self.what})"))

    def take(self, n: int, field: str) -> bytes:
        if n < 0:
            raise self.fail(field, f"negative length {n}")
        left = len(self.raw) - self.pos
        if n > left:
            raise self.fail(field, f"truncated: needs {n} bytes at offset {self.pos}, {left} left")
        out = bytes(self.raw[self.pos:self.pos + n])
        self.pos += n
        return out

    def unpack(self, fmt: str, field: str) -> Any:
        return struct.unpack(">" + fmt, self.take(struct.calcsize(">" + fmt), field))[0]

    def int8(self, field: str) -> int:
        return self.unpack("b", field)

    def int16(self, field: str) -> int:
        return self.unpack("h", field)

    def int32(self, field: str) -> int:
        return self.unpack("i", field)

    def int64(self, field: str) -> int:
        return self.unpack("q", field)

    def count(self, field: str, item_size: int = 1, nullable: bool = False) -> int | None:
        """An int32 array length, checked against the bytes left (a corrupt length fails here, not in memory)."""
        n = self.int32(field)
        if n < 0:
            if nullable and n == -1:
                return None
            raise self.fail(field, f"array length {n} is negative")
        if n * item_size > len(self.raw) - self.pos:
            raise self.fail(field, f"array of {n} entries cannot fit in the {len(self.raw) - self.pos} bytes left")
        return n

    def text(self, raw: bytes, field: str) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.fail(field, f"not UTF-8 text: {exc.reason} at byte {exc.start}") from None

    def string(self, field: str, nullable: bool = False) -> str | None:
        n = self.int16(field)
        if n == -1 and nullable:
            return None
        if n < 0:
            raise self.fail(field, f"string length {n} is negative" + ("" if nullable else " (not nullable here)"))
        return self.text(self.take(n, field), field)

    def utf(self, field: str) -> str:
        """Java's DataOutputStream.writeUTF: an unsigned 16-bit length, then (modified) UTF-8."""
        return self.text(self.take(self.unpack("H", field), field), field)

    def bytes_(self, field: str, nullable: bool = False) -> bytes | None:
        n = self.int32(field)
        if n == -1 and nullable:
            return None
        return self.take(n, field)

    def uuid(self, field: str) -> str:
        return str(uuid.UUID(bytes=self.take(16, field)))

    def left(self) -> int:
        return len(self.raw) - self.pos


def _b64(raw: bytes | None) -> str | None:
    return None if raw is None else base64.b64encode(raw).decode("ascii")


def _topic_partitions(r: _Reader, field: str) -> list[dict[str, Any]]:
    out = []
    for i in range(r.count(field, 6)):
        topic = r.string(f"{field}[{i}].topic")
        n = r.count(f"{field}[{i}].partitions", 4)
        out.append({"topic": topic, "partitions": [r.int32(f"{field}[{i}].partitions[{j}]") for j in range(n)]})
    return out


def _version(r: _Reader, field: str, read, low: int) -> int:
    v = read(field)
    if v < low:
        raise r.fail(field, f"{v} is not a version (>= {low})")
    return v


# --------------------------------------------------------------------------- the consumer protocol

def decode_consumer_subscription(raw: bytes) -> dict[str, Any]:
    """A ``ConsumerProtocolSubscription``: ``version``, ``topics``, ``user_data`` (base64 or None) and, by
    version, ``owned_partitions`` (1+), ``generation_id`` (2+), ``rack_id`` (3+).

    A version above 3 is read as version 3, and bytes after the known fields are ignored, as Kafka does.
    """
    r = _Reader(raw, "ConsumerProtocolSubscription")
    version = _version(r, "version", r.int16, 0)
    topics = [r.string(f"topics[{i}]") for i in range(r.count("topics", 2))]
    out: dict[str, Any] = {"version": version, "topics": topics, "user_data": _b64(r.bytes_("user_data", True))}
    if version >= 1:
        out["owned_partitions"] = _topic_partitions(r, "owned_partitions")
    if version >= 2:
        out["generation_id"] = r.int32("generation_id")
    if version >= 3:
        out["rack_id"] = r.string("rack_id", nullable=True)
    return out


def decode_consumer_assignment(raw: bytes) -> dict[str, Any]:
    """A ``ConsumerProtocolAssignment``: ``version``, ``assigned_partitions``, ``user_data`` (base64 or None).

    Every version (0-3) has the same fields (2 and 3 exist to match the subscription's versions).
    """
    r = _Reader(raw, "ConsumerProtocolAssignment")
    version = _version(r, "version", r.int16, 0)
    parts = _topic_partitions(r, "assigned_partitions")
    return {"version": version, "assigned_partitions": parts, "user_data": _b64(r.bytes_("user_data", True))}


def decode_sticky_user_data(raw: bytes) -> dict[str, Any]:
    """Kafka ``StickyAssignor`` user data: ``previous_assignment`` and, in version 1, ``generation``.

    The bytes carry no version number; as Kafka does, version 1 is tried first, then version 0.
    """
    r = _Reader(raw, "StickyAssignor user data")
    previous = _topic_partitions(r, "previous_assignment")
    if r.left() >= 4:
        return {"version": 1, "previous_assignment": previous, "generation": r.int32("generation")}
    return {"version": 0, "previous_assignment": previous}


def decode_cooperative_sticky_user_data(raw: bytes) -> dict[str, Any]:
    """Kafka ``CooperativeStickyAssignor`` user data: the ``generation`` (one int32)."""
    r = _Reader(raw, "CooperativeStickyAssignor user data")
    return {"generation": r.int32("generation")}


def decode_user_data(raw: bytes | str | None, hint: str = "auto") -> dict[str, Any] | None:
    """``user_data`` (bytes, or base64 text as the decoders return it) read as ``hint`` says.

    ``hint``: ``"sticky"``, ``"cooperative-sticky"``, ``"streams-subscription"``,
    ``"streams-assignment"``, ``"stickyflow"``, or ``"auto"`` (stickyflow's JSON,
    then a Streams ``SubscriptionInfo``, then the cooperative sticky assignor's
    four bytes, then the sticky assignor's; the first that reads every byte).
    Returns ``{"format": ..., ...fields}``, or None when auto finds no reading.
    """
    if raw is None:
        return None
    if isinstance(raw, str):
        raw = base64.b64decode(raw)
    readers = {"stickyflow": _stickyflow_user_data, "streams-subscription": decode_streams_subscription,
               "streams-assignment": decode_streams_assignment,
               "cooperative-sticky": decode_cooperative_sticky_user_data, "sticky": decode_sticky_user_data}
    if hint != "auto":
        if hint not in readers:
            raise ValueError(f"hint: {hint!r} is not one of auto, {', '.join(readers)}")
        return {"format": hint, **readers[hint](raw)}
    if raw.startswith(STICKYFLOW_USER_DATA):
        try:
            return {"format": "stickyflow", **_stickyflow_user_data(raw)}
        except DecodeError:
            return None
    for name in ("streams-subscription", "cooperative-sticky", "sticky"):
        if name == "cooperative-sticky" and len(raw) != 4:
            continue
        try:
            doc = readers[name](raw)
            if _consumed(name, raw):
                return {"format": name, **doc}
        except DecodeError:
            continue
    return None


def _consumed(name: str, raw: bytes) -> bool:
    """Whether a reading uses every byte (auto-detection accepts only exact readings)."""
    if name == "cooperative-sticky":
        return len(raw) == 4
    if name == "sticky":
        r = _Reader(raw, "StickyAssignor user data")
        _topic_partitions(r, "previous_assignment")
        return r.left() in (0, 4)
    if name == "streams-subscription":
        return _streams_subscription(raw)[1] == len(raw)
    return True


def _stickyflow_user_data(raw: bytes) -> dict[str, Any]:
    if not raw.startswith(STICKYFLOW_USER_DATA):
        raise DecodeError(Problem("user_data", "does not start with stickyflow's marker"))
    try:
        doc = json.loads(raw[len(STICKYFLOW_USER_DATA):].decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise DecodeError(Problem("user_data", f"stickyflow JSON that does not parse: {exc}")) from None
    if not isinstance(doc, dict):
        raise DecodeError(Problem("user_data", "stickyflow JSON must be an object"))
    from .kafka_load import read_layout  # imports no Kafka client

    try:
        return read_layout(doc)  # layout 1 (claims) or 2 (and the rates measured, the capacity)
    except InvalidSnapshotError as exc:
        raise DecodeError(exc.problems[0]) from None


# --------------------------------------------------------------------------- Kafka Streams

def task_text(subtopology: int, partition: int, named_topology: str | None = None) -> str:
    """A TaskId as Kafka prints it: ``"0_3"``, or ``"<topology>__0_3"`` under a named topology."""
    base = f"{subtopology}_{partition}"
    return f"{named_topology}__{base}" if named_topology else base


def decode_streams_subscription(raw: bytes) -> dict[str, Any]:
    """A Kafka Streams ``SubscriptionInfoData`` (the consumer subscription's ``user_data``), versions 1-11.

    Fields by version: ``version``, ``latest_supported_version`` (3+), ``process_id``,
    ``prev_tasks`` and ``standby_tasks`` (1-6), ``user_end_point`` (2+),
    ``task_offset_sums`` (7+: ``[{"task_id", "offset_sum"}]``, -2 for a task running
    as active), ``unique_field`` (8+), ``error_code`` (9+), ``client_tags`` (11+, an
    object). A version newer than 11 is read as Kafka reads it: its version and latest
    supported version only (``"unreadable": true``).
    """
    return _streams_subscription(raw)[0]


def _streams_subscription(raw: bytes) -> tuple[dict[str, Any], int]:
    """(the reading, bytes read) of a SubscriptionInfoData."""
    r = _Reader(raw, "SubscriptionInfoData")
    version = _version(r, "version", r.int32, 1)
    out: dict[str, Any] = {"version": version}
    if version > STREAMS_LATEST_VERSION:
        out["latest_supported_version"] = r.int32("latest_supported_version")
        out["unreadable"] = True
        return out, len(raw)
    return _streams_subscription_body(r, version, out)


def _streams_subscription_body(r: _Reader, version: int, out: dict[str, Any]) -> tuple[dict[str, Any], int]:
    if version >= 3:
        out["latest_supported_version"] = r.int32("latest_supported_version")
    out["process_id"] = r.uuid("process_id")
    if version <= 6:
        for name in ("prev_tasks", "standby_tasks"):
            n = r.count(name, 8)
            out[name] = [task_text(r.int32(f"{name}[{i}].topic_group_id"), r.int32(f"{name}[{i}].partition"))
                         for i in range(n)]
    if version >= 2:
        out["user_end_point"] = r.text(r.bytes_("user_end_point"), "user_end_point")
    if version >= 7:
        sums: list[dict[str, Any]] = []
        for i in range(r.count("task_offset_sums", 8)):
            f = f"task_offset_sums[{i}]"
            group = r.int32(f"{f}.topic_group_id")
            if version >= 10:
                partition, offset_sum = r.int32(f"{f}.partition"), r.int64(f"{f}.offset_sum")
                named = r.string(f"{f}.named_topology", nullable=True)
                sums.append({"task_id": task_text(group, partition, named), "offset_sum": offset_sum})
            else:
                for j in range(r.count(f"{f}.partition_to_offset_sum", 12)):
                    g = f"{f}.partition_to_offset_sum[{j}]"
                    partition, offset_sum = r.int32(f"{g}.partition"), r.int64(f"{g}.offset_sum")
                    sums.append({"task_id": task_text(group, partition), "offset_sum": offset_sum})
        out["task_offset_sums"] = sums
    if version >= 8:
        out["unique_field"] = r.int8("unique_field")
    if version >= 9:
        out["error_code"] = r.int32("error_code")
    if version >= 11:
        tags: dict[str, str] = {}
        for i in range(r.count("client_tags", 8)):
            key = r.text(r.bytes_(f"client_tags[{i}].key"), f"client_tags[{i}].key")
            tags[key] = r.text(r.bytes_(f"client_tags[{i}].value"), f"client_tags[{i}].value")
        out["client_tags"] = tags
    return out, r.pos


def _task_id(r: _Reader, field: str, version: int) -> str:
    group, partition = r.int32(f"{field}.topic_group_id"), r.int32(f"{field}.partition")
    named = None
    if version >= _NAMED_TOPOLOGY_VERSION:
        chars = r.int32(f"{field}.named_topology")
        named = r.take(2 * chars, f"{field}.named_topology").decode("utf-16-be", "replace") if chars > 0 else None
    return task_text(group, partition, named)


def _utf_partitions(r: _Reader, field: str, topics: Mapping[int, str] | None = None) -> list[dict[str, Any]]:
    out = []
    for i in range(r.count(field, 6 if topics is None else 8)):
        if topics is None:
            topic = r.utf(f"{field}[{i}].topic")
        else:
            index = r.int32(f"{field}[{i}].topic_index")
            if index not in topics:
                raise r.fail(f"{field}[{i}].topic_index", f"{index} is not in the topic dictionary")
            topic = topics[index]
        out.append({"topic": topic, "partition": r.int32(f"{field}[{i}].partition")})
    return out


def _hosts(r: _Reader, field: str, topics: Mapping[int, str] | None = None) -> list[dict[str, Any]]:
    out = []
    for i in range(r.count(field, 10)):
        host = r.utf(f"{field}[{i}].host")
        port = r.int32(f"{field}[{i}].port")
        out.append({"host": host, "port": port, "partitions": _utf_partitions(r, f"{field}[{i}].partitions", topics)})
    return out


def decode_streams_assignment(raw: bytes) -> dict[str, Any]:
    """A Kafka Streams ``AssignmentInfo`` (the consumer assignment's ``user_data``), versions 1-11.

    Fields by version: ``version``, ``commonly_supported_version`` (3+),
    ``active_tasks``, ``standby_tasks`` (``[{"task_id", "partitions"}]``),
    ``partitions_by_host`` (2+), ``standby_partitions_by_host`` (6+), ``error_code``
    (4+), ``next_rebalance_ms`` (7+). Versions 5+ write topic names once, in a
    dictionary; the partitions here carry the names.
    """
    r = _Reader(raw, "AssignmentInfo")
    version = _version(r, "version", r.int32, 1)
    if version > STREAMS_LATEST_VERSION:
        raise r.fail("version", f"{version} is newer than Kafka's latest AssignmentInfo ({STREAMS_LATEST_VERSION})")
    out: dict[str, Any] = {"version": version}
    if version >= 3:
        out["commonly_supported_version"] = r.int32("commonly_supported_version")
    size = 8 if version < _NAMED_TOPOLOGY_VERSION else 12
    out["active_tasks"] = [_task_id(r, f"active_tasks[{i}]", version) for i in range(r.count("active_tasks", size))]
    standbys = []
    for i in range(r.count("standby_tasks", size + 4)):
        task = _task_id(r, f"standby_tasks[{i}]", version)
        standbys.append({"task_id": task, "partitions": _utf_partitions(r, f"standby_tasks[{i}].partitions")})
    out["standby_tasks"] = standbys
    if 2 <= version <= 4:
        out["partitions_by_host"] = _hosts(r, "partitions_by_host")
    elif version >= 5:
        topics: dict[int, str] = {}
        for i in range(r.count("topic_dictionary", 6)):
            index = r.int32(f"topic_dictionary[{i}].index")
            topics[index] = r.utf(f"topic_dictionary[{i}].topic")
        out["partitions_by_host"] = _hosts(r, "partitions_by_host", topics)
        if version >= 6:
            out["standby_partitions_by_host"] = _hosts(r, "standby_partitions_by_host", topics)
    if version >= 4:
        out["error_code"] = r.int32("error_code")
    if version >= 7:
        out["next_rebalance_ms"] = r.int64("next_rebalance_ms")
    return out


# --------------------------------------------------------------------------- one front door

KINDS = {
    "consumer-subscription": decode_consumer_subscription,
    "consumer-assignment": decode_consumer_assignment,
    "streams-subscription": decode_streams_subscription,
    "streams-assignment": decode_streams_assignment,
}


def decode(kind: str, raw: bytes, *, user_data: str = "auto") -> dict[str, Any]:
    """Decode ``raw`` as ``kind`` (one of :data:`KINDS`).

    A consumer structure's ``user_data`` is also read (``user_data_decoded``) as
    ``user_data`` says (see :func:`decode_user_data`; ``"none"`` skips it). A
    Streams kind accepts its bytes alone or wrapped in the consumer structure
    that carries them (as ``DescribeGroups`` returns them); then the consumer
    fields come along under ``consumer_protocol``.
    """
    if kind not in KINDS:
        raise ValueError(f"kind: {kind!r} is not one of {', '.join(KINDS)}")
    raw = bytes(raw)
    if kind.startswith("consumer-"):
        out = KINDS[kind](raw)
        if user_data != "none" and out.get("user_data") is not None:
            decoded = decode_user_data(out["user_data"], user_data)
            if decoded is not None:
                out["user_data_decoded"] = decoded
        return out
    try:
        if kind == "streams-subscription":
            out, used = _streams_subscription(raw)
            exact = used == len(raw) and not out.get("unreadable")  # else perhaps wrapped: a consumer version first
        else:
            out, exact = decode_streams_assignment(raw), True
    except DecodeError as exc:
        out, exact, first = None, False, exc
    if not exact:
        wrapper = decode_consumer_subscription if kind == "streams-subscription" else decode_consumer_assignment
        try:
            outer, why = wrapper(raw), None
        except DecodeError as exc:
            outer, why = None, exc
        if outer is not None and outer.get("user_data") is not None:
            out = KINDS[kind](base64.b64decode(outer.pop("user_data")))
            out["consumer_protocol"] = outer
        elif out is None:
            raise first
        elif out.get("unreadable") and out["version"] > _PLAUSIBLE_VERSION:
            inner = f"; read as the consumer structure that wraps it: {why}" if why else ""
            raise DecodeError(Problem("version", f"{out['version']} is not a SubscriptionInfo version{inner}"))
        elif not out.get("unreadable"):
            raise DecodeError(Problem("(end)", f"{len(raw) - used} bytes left over after the last field "
                                               f"(in SubscriptionInfoData version {out['version']})"))
    return out


# --------------------------------------------------------------------------- encoding (fixtures, test members)

def _s16(s: str | None) -> bytes:
    if s is None:
        return struct.pack(">h", -1)
    raw = s.encode("utf-8")
    return struct.pack(">h", len(raw)) + raw


def _b32(b: bytes | None) -> bytes:
    return struct.pack(">i", -1) if b is None else struct.pack(">i", len(b)) + bytes(b)


def _tps(items: Mapping[str, Iterable[int]]) -> bytes:
    out = [struct.pack(">i", len(items))]
    for t, ps in items.items():
        ps = list(ps)
        out += [_s16(t), struct.pack(f">i{len(ps)}i", len(ps), *ps)]
    return b"".join(out)


def encode_consumer_subscription(topics: Sequence[str], *, user_data: bytes | None = None,
                                 owned_partitions: Mapping[str, Iterable[int]] | None = None,
                                 generation_id: int = -1, rack_id: str | None = None, version: int = 3) -> bytes:
    """A ``ConsumerProtocolSubscription`` of ``version`` (0-3), as Kafka's schema lays it out."""
    out = [struct.pack(">hi", version, len(topics)), *(_s16(t) for t in topics), _b32(user_data)]
    if version >= 1:
        out.append(_tps(owned_partitions or {}))
    if version >= 2:
        out.append(struct.pack(">i", generation_id))
    if version >= 3:
        out.append(_s16(rack_id))
    return b"".join(out)


def encode_consumer_assignment(assigned: Mapping[str, Iterable[int]], *, user_data: bytes | None = None,
                               version: int = 3) -> bytes:
    """A ``ConsumerProtocolAssignment`` of ``version`` (0-3)."""
    return struct.pack(">h", version) + _tps(assigned) + _b32(user_data)


def encode_sticky_user_data(previous: Mapping[str, Iterable[int]], generation: int | None = None) -> bytes:
    """Kafka ``StickyAssignor`` user data: version 1 with a generation, else version 0."""
    return _tps(previous) + (b"" if generation is None else struct.pack(">i", generation))


def _parse_task(task: str) -> tuple[int, int]:
    group, _, partition = task.rpartition("__")[2].partition("_")
    return int(group), int(partition)


def encode_streams_subscription(*, process_id: str, version: int = STREAMS_LATEST_VERSION,
                                latest_supported_version: int | None = None,
                                prev_tasks: Sequence[str] = (), standby_tasks: Sequence[str] = (),
                                user_end_point: str = "", task_offset_sums: Mapping[str, int] | None = None,
                                unique_field: int = 0, error_code: int = 0,
                                client_tags: Mapping[str, str] | None = None) -> bytes:
    """A Streams ``SubscriptionInfoData`` of ``version`` (1-11). From version 7 on, ``task_offset_sums``
    (task id -> offset sum, -2 for a running active task) replaces ``prev_tasks``/``standby_tasks``; when
    only those are given, their offset sums are made up as Kafka's client does (-2 for actives, 0 else)."""
    if not 1 <= version <= STREAMS_LATEST_VERSION:
        raise ValueError(f"version: must be 1 to {STREAMS_LATEST_VERSION}, not {version}")
    out = [struct.pack(">i", version)]
    if version >= 3:
        out.append(struct.pack(">i", version if latest_supported_version is None else latest_supported_version))
    out.append(uuid.UUID(process_id).bytes)
    if version <= 6:
        for tasks in (prev_tasks, standby_tasks):
            out.append(struct.pack(">i", len(tasks)))
            out += [struct.pack(">ii", *_parse_task(t)) for t in tasks]
    if version >= 2:
        out.append(_b32(user_end_point.encode("utf-8")))
    if version >= 7:
        sums = dict(task_offset_sums) if task_offset_sums is not None else {
            **{t: 0 for t in standby_tasks}, **{t: LATEST_OFFSET for t in prev_tasks}}
        by_group: dict[int, list[tuple[int, int]]] = {}
        for t, s in sums.items():
            g, p = _parse_task(t)
            by_group.setdefault(g, []).append((p, s))
        if version >= 10:
            out.append(struct.pack(">i", len(sums)))
            for t, s in sums.items():
                g, p = _parse_task(t)
                out.append(struct.pack(">iiq", g, p, s) + _s16(None))
        else:
            out.append(struct.pack(">i", len(by_group)))
            for g, items in by_group.items():
                out.append(struct.pack(">ii", g, len(items)))
                out += [struct.pack(">iq", p, s) for p, s in items]
    if version >= 8:
        out.append(struct.pack(">b", unique_field))
    if version >= 9:
        out.append(struct.pack(">i", error_code))
    if version >= 11:
        tags = client_tags or {}
        out.append(struct.pack(">i", len(tags)))
        for k, v in tags.items():
            out += [_b32(k.encode("utf-8")), _b32(v.encode("utf-8"))]
    return b"".join(out)


def _utf(s: str) -> bytes:
    raw = s.encode("utf-8")
    return struct.pack(">H", len(raw)) + raw


def encode_streams_assignment(*, active_tasks: Sequence[str] = (), standby_tasks: Mapping[str, Sequence] | None = None,
                              partitions_by_host: Mapping[tuple[str, int], Sequence[tuple[str, int]]] | None = None,
                              standby_partitions_by_host: Mapping[tuple[str, int], Sequence[tuple[str, int]]] | None = None,
                              version: int = STREAMS_LATEST_VERSION, commonly_supported_version: int | None = None,
                              error_code: int = 0, next_rebalance_ms: int = 2**63 - 1) -> bytes:
    """A Streams ``AssignmentInfo`` of ``version`` (1-11), laid out as Kafka's encoder writes it."""
    if not 1 <= version <= STREAMS_LATEST_VERSION:
        raise ValueError(f"version: must be 1 to {STREAMS_LATEST_VERSION}, not {version}")
    standby_tasks = standby_tasks or {}
    hosts, standby_hosts = partitions_by_host or {}, standby_partitions_by_host or {}

    def task(t: str) -> bytes:
        return struct.pack(">ii", *_parse_task(t)) + (struct.pack(">i", 0) if version >= _NAMED_TOPOLOGY_VERSION else b"")

    def plain(tps) -> bytes:
        return struct.pack(">i", len(tps)) + b"".join(_utf(t) + struct.pack(">i", p) for t, p in tps)

    out = [struct.pack(">i", version)]
    if version >= 3:
        out.append(struct.pack(">i", version if commonly_supported_version is None else commonly_supported_version))
    out.append(struct.pack(">i", len(active_tasks)) + b"".join(task(t) for t in active_tasks))
    out.append(struct.pack(">i", len(standby_tasks)))
    out += [task(t) + plain(list(tps)) for t, tps in standby_tasks.items()]
    if 2 <= version <= 4:
        out.append(struct.pack(">i", len(hosts)))
        out += [_utf(h) + struct.pack(">i", port) + plain(list(tps)) for (h, port), tps in hosts.items()]
    elif version >= 5:
        maps = [hosts] + ([standby_hosts] if version >= 6 else [])
        names = list(dict.fromkeys(t for m in maps for tps in m.values() for t, _ in tps))
        index = {t: i for i, t in enumerate(names)}
        out.append(struct.pack(">i", len(names)) + b"".join(struct.pack(">i", i) + _utf(t) for t, i in index.items()))
        for m in maps:
            out.append(struct.pack(">i", len(m)))
            for (h, port), tps in m.items():
                out.append(_utf(h) + struct.pack(">ii", port, len(tps)))
                out += [struct.pack(">ii", index[t], p) for t, p in tps]
    if version >= 4:
        out.append(struct.pack(">i", error_code))
    if version >= 7:
        out.append(struct.pack(">q", next_rebalance_ms))
    return b"".join(out)
