"""Snapshots of live groups, read from a Kafka cluster through its admin API.

:func:`capture` asks the cluster (kafka-python's admin client) for each group's
description, its topics' partitions and replica racks, the brokers' racks and,
for Kafka Streams, the changelog end offsets, and builds one snapshot per
group:

* **consumer groups**: every member's subscription, rack (a version-3
  subscription's ``rack_id``), static ``instance_id`` and owned partitions.
  ``owned`` is the member's current assignment when the coordinator holds one
  (``generation`` then stays unknown, the same for every member:
  DescribeGroups does not return the group's generation); while a group is
  between generations it is the subscription's ``owned_partitions`` with its
  ``generation_id`` (or the sticky assignors' user data).
* **Kafka Streams applications** (protocol ``stream``): a client per process
  id with as many threads as it has members, its tags and rack, previous
  active tasks (offset sum -2, or the pre-version-7 lists) and previous
  standbys (the other reported tasks), and lags. With ``topology`` (the text of
  ``Topology#describe()``) the tasks, their statefulness and their changelog end
  offset sums come from the topology and the cluster; without it the tasks are
  those the members report, a task is stateful when someone reports state for
  it, and lags are relative to the most caught-up client: the snapshot's ``id``
  then ends in ``(lags relative to the most caught-up client)``.

DescribeGroups goes out as our own request without authorized operations, and
its member bytes are decoded here (:mod:`stickyflow.adapters.decode`):
kafka-python 3.0's ``describe_groups`` asks for authorized operations and fails
on a broker that answers with operation codes it does not know. Group ids,
member ids and metadata are untrusted: whatever cannot be read becomes that
group's ``error``; the other groups are captured.

>>> groups = capture("127.0.0.1:9092", groups=["orders-app"])   # doctest: +SKIP
>>> groups[0].snapshot["kind"], groups[0].error                 # doctest: +SKIP
('consumer', None)
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from stickyflow.errors import BackendMissingError, InvalidSnapshotError, Problem

from .decode import (LATEST_OFFSET, DecodeError, decode_consumer_assignment, decode_consumer_subscription,
                     decode_user_data)

__all__ = ["capture", "CapturedGroup", "parse_topology", "Subtopology", "snapshot_from_description",
           "current_metrics", "solve_summary", "BASIS_NOTE"]

BASIS_NOTE = " (lags relative to the most caught-up client)"
STREAMS_PROTOCOL = "stream"  # the assignment protocol name a KafkaStreams client's consumers join with


@dataclass(frozen=True, slots=True, kw_only=True)
class CapturedGroup:
    """One group: its snapshot (a JSON-ready dict) or why there is none, plus remarks on how it was read."""

    group_id: str
    snapshot: dict[str, Any] | None = None
    error: str | None = None
    notes: tuple[str, ...] = ()
    state: str | None = None


# --------------------------------------------------------------------------- topology text

@dataclass(frozen=True, slots=True, kw_only=True)
class Subtopology:
    """One sub-topology of ``Topology#describe()``: its id, source topics and state stores."""

    id: int
    source_topics: tuple[str, ...] = ()
    stores: tuple[str, ...] = ()


_SUB = re.compile(r"^\s*Sub-topology:\s*(\d+)(.*)$")
_TOPICS = re.compile(r"\(topics:\s*\[([^\]]*)\]\)")
_STORES = re.compile(r"\(stores:\s*\[([^\]]*)\]\)")


def parse_topology(text: str) -> list[Subtopology]:
    """The sub-topologies of a ``Topology#describe()`` text (global-store sub-topologies make no tasks: skipped).

    >>> t = '''Topologies:
    ...    Sub-topology: 0
    ...     Source: KSTREAM-SOURCE-0000000000 (topics: [orders])
    ...       --> KSTREAM-AGGREGATE-0000000001
    ...     Processor: KSTREAM-AGGREGATE-0000000001 (stores: [counts])
    ...       <-- KSTREAM-SOURCE-0000000000'''
    >>> parse_topology(t)
    [Subtopology(id=0, source_topics=('orders',), stores=('counts',))]
    """
    subs: list[Subtopology] = []
    cur: dict[str, Any] | None = None
    for n, line in enumerate(text.splitlines(), 1):
        m = _SUB.match(line)
        if m:
            if cur is not None:
                subs.append(Subtopology(**cur))
            cur = None if "global" in m.group(2).lower() else {"id": int(m.group(1)), "source_topics": (), "stores": ()}
            continue
        if cur is None:
            continue
        for pattern, key in ((_TOPICS, "source_topics"), (_STORES, "stores")):
            for found in pattern.findall(line):
                names = tuple(x.strip() for x in found.split(",") if x.strip())
                cur[key] = tuple(dict.fromkeys(cur[key] + names))
        if "(topic pattern:" in line:
            raise InvalidSnapshotError(Problem(f"--topology line {n}", "a source topic pattern cannot be resolved "
                                                                       "to tasks here; name the topics"))
    if cur is not None:
        subs.append(Subtopology(**cur))
    if not subs:
        raise InvalidSnapshotError(Problem("--topology", "no 'Sub-topology: N' line: not the text of Topology#describe()"))
    return subs


# --------------------------------------------------------------------------- cluster access

def _admin(bootstrap: str, timeout_s: float):
    try:
        from kafka import KafkaAdminClient
    except ImportError:
        raise BackendMissingError("capture needs kafka-python: pip install 'stickyflow[kafka]'") from None
    ms = int(timeout_s * 1000)
    settings = {"request_timeout_ms": ms, "bootstrap_timeout_ms": ms}
    known = getattr(KafkaAdminClient, "DEFAULT_CONFIG", settings)  # bootstrap_timeout_ms is kafka-python 3's
    return KafkaAdminClient(bootstrap_servers=bootstrap, client_id="stickyflow-capture",
                            **{k: v for k, v in settings.items() if k in known})


def _describe_groups(admin: Any, group_ids: Sequence[str]) -> tuple[list[Any], dict[str, str]]:
    """DescribeGroups without authorized operations: the raw response's groups (member bytes undecoded), and
    group -> why for the groups whose coordinator could not be found or asked."""
    from kafka.protocol.admin import DescribeGroupsRequest

    errors: dict[str, str] = {}

    async def coordinators():
        try:
            return await admin._find_coordinator_ids(list(group_ids))
        except Exception:  # one bad group id must not cost the others: look them up one by one
            found = {}
            for g in group_ids:
                try:
                    found.update(await admin._find_coordinator_ids([g]))
                except Exception as exc:
                    errors[g] = f"FindCoordinator: {type(exc).__name__}: {exc}"
            return found

    async def go():
        by_node: dict[Any, list[str]] = {}
        for g, node in (await coordinators()).items():
            by_node.setdefault(node, []).append(g)
        out = []
        for node, groups in by_node.items():
            request = DescribeGroupsRequest(groups=groups, include_authorized_operations=False, max_version=5)
            try:
                response = await admin._manager.send(request, node_id=node)
            except Exception as exc:
                errors.update({g: f"DescribeGroups: {type(exc).__name__}: {exc}" for g in groups})
                continue
            out.extend(response.groups)
        return out

    return admin._manager.run(go), errors


class _Cluster:
    """Topic metadata, broker racks and end offsets, fetched once per capture and cached."""

    def __init__(self, admin: Any):
        self.admin = admin
        self.partitions: dict[str, list[list[int]]] = {}  # topic -> per partition, replica node ids
        self.racks: dict[int, str | None] = {}
        self._ends: dict[tuple[str, int], int] = {}

    def load(self, topics: Iterable[str]) -> None:
        want = sorted(set(topics) - set(self.partitions))
        if not want:
            return
        md = self.admin._manager.run(self.admin._get_cluster_metadata, want)
        for b in md.get("brokers", ()):
            self.racks[b["node_id"]] = b.get("rack")
        for t in md.get("topics", ()):
            if t.get("error_code", 0) == 0 and t.get("partitions"):
                parts = sorted(t["partitions"], key=lambda p: p["partition_index"])
                n = parts[-1]["partition_index"] + 1
                table: list[list[int]] = [[] for _ in range(n)]
                for p in parts:
                    table[p["partition_index"]] = list(p.get("replica_nodes") or ())
                self.partitions[t["name"]] = table

    def count(self, topic: str) -> int:
        return len(self.partitions.get(topic, ()))

    def replica_racks(self, topic: str) -> list[list[str]] | None:
        table = self.partitions.get(topic)
        if not table:
            return None
        racks = [sorted({self.racks.get(n) for n in nodes} - {None}) for nodes in table]
        return racks if any(racks) else None

    def end_offsets(self, tps: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
        from kafka import TopicPartition
        from kafka.protocol.consumer import OffsetSpec

        want = [tp for tp in set(tps) if tp not in self._ends]
        if want:
            got = self.admin.list_partition_offsets({TopicPartition(t, p): OffsetSpec.LATEST for t, p in want})
            for tp, o in got.items():
                self._ends[(tp.topic, tp.partition)] = max(0, int(o.offset))
        return {tp: self._ends.get(tp, 0) for tp in tps}


# --------------------------------------------------------------------------- the capture

def capture(bootstrap: str, groups: Sequence[str] | None = None, *, all_groups: bool = False,
            topology: str | None = None, timeout_s: float = 15.0, now_ms: int | None = None,
            admin: Any = None, rates_s: float | None = None) -> list[CapturedGroup]:
    """Capture ``groups`` (or every group the cluster lists, with ``all_groups``) as snapshots.

    ``topology`` is the text of ``Topology#describe()`` of a Kafka Streams
    application (used for every Streams group captured). Raises only when the
    cluster cannot be reached or listed; a group that cannot be read is a
    :class:`CapturedGroup` with its ``error``. ``rates_s``: also measure every consumer group's partition rates
    (records/s) from log-end offsets read that many seconds apart
    (:mod:`stickyflow.adapters.capture_rates`).
    """
    if bool(groups) == bool(all_groups):
        raise InvalidSnapshotError(Problem("--group", "name one or more groups, or ask for --all-groups (not both)"))
    subs = parse_topology(topology) if topology is not None else None
    own = admin is None
    admin = admin or _admin(bootstrap, timeout_s)
    try:
        if all_groups:
            listed = admin.list_groups()
            groups = sorted({g["group_id"] for g in listed if g.get("protocol_type") in ("consumer", "")})
        groups = list(dict.fromkeys(groups or ()))
        if not groups:
            return []
        cluster = _Cluster(admin)
        answers, failed = _describe_groups(admin, groups)
        described = {g.group_id: g for g in answers}
        now = int(time.time() * 1000) if now_ms is None else now_ms
        out = []
        for gid in groups:
            desc = described.get(gid)
            if desc is None:
                out.append(CapturedGroup(group_id=gid, error=failed.get(gid, "the coordinator did not describe "
                                                                              "this group")))
                continue
            out.append(snapshot_from_description(desc, cluster, topology=subs, now_ms=now))
        if rates_s is not None:
            from .capture_rates import log_end_offsets, with_measured_rates

            out = with_measured_rates(out, lambda tps: log_end_offsets(admin, tps), rates_s)
        return out
    finally:
        if own:
            admin.close()


def _error_name(code: int) -> str:
    try:
        import kafka.errors as errors

        return errors.for_code(code).__name__
    except Exception:
        return f"error code {code}"


def snapshot_from_description(desc: Any, cluster: Any, *, topology: Sequence[Subtopology] | None = None,
                              now_ms: int = 0) -> CapturedGroup:
    """One DescribeGroups group (kafka-python's response object: ``group_id``, ``group_state``,
    ``protocol_type``, ``protocol_data``, ``members`` with raw ``member_metadata``/``member_assignment``)
    as a :class:`CapturedGroup`; ``cluster`` answers ``load``, ``count``, ``replica_racks``, ``end_offsets``.
    Whatever cannot be read is the group's ``error``: this never raises on bad member bytes."""
    try:
        return _from_description(desc, cluster, topology, now_ms)
    except (DecodeError, InvalidSnapshotError) as exc:
        return CapturedGroup(group_id=str(desc.group_id), state=desc.group_state, error=str(exc))
    except Exception as exc:  # untrusted bytes must cost one group, never the capture
        return CapturedGroup(group_id=str(desc.group_id), state=desc.group_state, error=f"{type(exc).__name__}: {exc}")


def _from_description(desc: Any, cluster: Any, topology: Sequence[Subtopology] | None, now_ms: int) -> CapturedGroup:
    import stickyflow

    gid = desc.group_id
    if desc.error_code:
        return CapturedGroup(group_id=gid, error=f"DescribeGroups: {_error_name(desc.error_code)}")
    state = desc.group_state
    if state == "Dead":
        return CapturedGroup(group_id=gid, state=state, error="no such group (the coordinator says Dead)")
    if desc.protocol_type not in ("consumer", ""):
        return CapturedGroup(group_id=gid, state=state,
                             error=f"protocol type {desc.protocol_type!r} is not a consumer group")
    members = list(desc.members)
    if not members:
        return CapturedGroup(group_id=gid, state=state, error=f"no members (state {state or 'unknown'}): "
                                                              f"nothing to assign, no snapshot taken")
    empty = [m.member_id for m in members if not m.member_metadata]
    if empty:
        return CapturedGroup(group_id=gid, state=state, error=(
            f"the coordinator returned no subscription for {len(empty)} of {len(members)} members "
            f"(e.g. {empty[0]!r}); Apache Kafka returns what each member sent (Tansu returns nothing)"))
    subs = []
    for i, m in enumerate(members):
        try:
            sub = decode_consumer_subscription(bytes(m.member_metadata))
            assignment = decode_consumer_assignment(bytes(m.member_assignment)) if m.member_assignment else None
        except DecodeError as exc:
            raise DecodeError(Problem(f"members[{i}] ({m.member_id!r}).{exc.field}", exc.rule)) from None
        subs.append((m, sub, assignment))
    streams = desc.protocol_data == STREAMS_PROTOCOL or (
        subs and all((decode_user_data(s["user_data"]) or {}).get("format") == "streams-subscription"
                     for _, s, _ in subs))
    notes: list[str] = []
    if streams:
        doc = _streams_doc(gid, subs, cluster, topology, notes)
    else:
        doc = _consumer_doc(gid, subs, cluster, notes)
    doc["now_ms"] = now_ms
    stickyflow.parse_snapshot(doc)  # what we write must read back: raises InvalidSnapshotError naming the field
    return CapturedGroup(group_id=gid, snapshot=doc, state=state, notes=tuple(notes))


def _partitions(items: Iterable[Mapping[str, Any]]) -> dict[str, list[int]]:
    out: dict[str, set[int]] = {}
    for tp in items:
        out.setdefault(tp["topic"], set()).update(int(p) for p in tp["partitions"])
    return {t: sorted(ps) for t, ps in sorted(out.items())}


def _consumer_doc(gid: str, subs: list, cluster: Any, notes: list[str]) -> dict[str, Any]:
    topics = sorted({t for _, s, _ in subs for t in s["topics"]})
    cluster.load(topics)
    members = []
    for m, s, a in subs:
        member: dict[str, Any] = {"id": m.member_id, "subscription": list(dict.fromkeys(s["topics"]))}
        if s.get("rack_id"):
            member["rack"] = s["rack_id"]
        instance = getattr(m, "group_instance_id", None)
        if instance:
            member["instance_id"] = instance
        if a is not None:  # the current assignment, even an empty one, is what it holds now
            if a["assigned_partitions"]:
                member["owned"] = _partitions(a["assigned_partitions"])
        else:
            owned, generation = _partitions(s.get("owned_partitions", ())), s.get("generation_id", -1)
            extra = decode_user_data(s["user_data"]) if s["user_data"] else None
            if extra and extra.get("format") == "sticky" and not owned:
                owned = _partitions(extra["previous_assignment"])
                generation = extra.get("generation", -1)
            elif extra and extra.get("format") == "cooperative-sticky" and generation < 0:
                generation = extra["generation"]
            if owned:
                member["owned"] = owned
            if generation is not None and generation >= 0:
                member["generation"] = generation
        members.append(member)
    members.sort(key=lambda m: m["id"])
    doc_topics: dict[str, Any] = {}
    for t in topics:
        n = cluster.count(t)
        if n:
            doc_topics[t] = {"partitions": n}
            racks = cluster.replica_racks(t)
            if racks:
                doc_topics[t]["racks"] = racks
        else:
            notes.append(f"topic {t!r} is subscribed but unknown to the cluster")
    return {"format": "stickyflow.snapshot/1", "kind": "consumer", "id": gid, "topics": doc_topics,
            "members": members}


def _streams_doc(gid: str, subs: list, cluster: Any, topology: Sequence[Subtopology] | None,
                 notes: list[str]) -> dict[str, Any]:
    clients: dict[str, dict[str, Any]] = {}
    reported: dict[str, dict[str, int]] = {}  # process -> task -> offset sum (-2: running active)
    seen_tasks: set[str] = set()
    for i, (m, s, a) in enumerate(subs):
        info = decode_user_data(s["user_data"], "streams-subscription")
        if info is None:
            raise DecodeError(Problem(f"members[{i}] ({m.member_id!r}).user_data",
                                      "is empty: a Kafka Streams member sends its SubscriptionInfo there"))
        if info.get("unreadable"):
            raise DecodeError(Problem(f"members[{i}].user_data.version",
                                      f"{info['version']} is newer than this reader knows"))
        pid = info["process_id"]
        c = clients.setdefault(pid, {"process_id": pid, "threads": 0, "previous_active": set(),
                                     "previous_standby": set()})
        c["threads"] += 1
        if s.get("rack_id"):
            c["rack"] = s["rack_id"]
        if info.get("client_tags"):
            c["tags"] = dict(info["client_tags"])
        sums = reported.setdefault(pid, {})
        if "task_offset_sums" in info:
            for e in info["task_offset_sums"]:
                sums[e["task_id"]] = int(e["offset_sum"])
                (c["previous_active"] if e["offset_sum"] == LATEST_OFFSET else c["previous_standby"]).add(e["task_id"])
        else:
            c["previous_active"].update(info.get("prev_tasks", ()))
            c["previous_standby"].update(info.get("standby_tasks", ()))
        seen_tasks |= c["previous_active"] | c["previous_standby"]
        if a is not None and a["user_data"]:
            got = decode_user_data(a["user_data"], "streams-assignment")
            seen_tasks.update(got["active_tasks"])
            seen_tasks.update(t["task_id"] for t in got["standby_tasks"])
    for c in clients.values():
        c["previous_standby"] -= c["previous_active"]
    if topology is not None:
        tasks = _topology_tasks(gid, topology, cluster)
    else:
        stateful = {t for sums in reported.values() for t in sums} | {
            t for c in clients.values() for t in c["previous_standby"]}
        best: dict[str, int] = {}
        for sums in reported.values():
            for t, s in sums.items():
                if s >= 0:
                    best[t] = max(best.get(t, 0), s)
        tasks = {t: {"id": t, "stateful": t in stateful, "end_offset_sum": best.get(t, 0)}
                 for t in sorted(seen_tasks, key=_task_key)}
        gid = gid + BASIS_NOTE
        notes.append("no --topology: tasks are those the members report; lags relative to the most caught-up client")
    for pid, c in clients.items():
        lags = {}
        for t, s in reported.get(pid, {}).items():
            task = tasks.get(t)
            if task is None or not task["stateful"]:
                continue
            lags[t] = -2 if s == LATEST_OFFSET else max(0, task.get("end_offset_sum", 0) - max(s, 0))
        c["previous_active"] = sorted(c["previous_active"], key=_task_key)
        c["previous_standby"] = sorted(c["previous_standby"], key=_task_key)
        if lags:
            c["lags"] = dict(sorted(lags.items(), key=lambda kv: _task_key(kv[0])))
    return {"format": "stickyflow.snapshot/1", "kind": "streams", "id": gid,
            "tasks": list(tasks.values()), "clients": sorted(clients.values(), key=lambda c: c["process_id"])}


def _task_key(task: str) -> tuple:
    head, _, p = task.rpartition("_")
    g = head.rpartition("_")[2]
    try:
        return (int(g), int(p), task)
    except ValueError:
        return (1 << 62, 0, task)


def _topology_tasks(app: str, topology: Sequence[Subtopology], cluster: Any) -> dict[str, dict[str, Any]]:
    def resolve(topic: str) -> str:
        cluster.load([topic, f"{app}-{topic}"])
        return topic if cluster.count(topic) else f"{app}-{topic}"  # internal topics carry the app id as prefix

    tasks: dict[str, dict[str, Any]] = {}
    for sub in topology:
        sources = [resolve(t) for t in sub.source_topics]
        n = max((cluster.count(t) for t in sources), default=0)
        changelogs = [f"{app}-{store}-changelog" for store in sub.stores]
        cluster.load(changelogs)
        logged = [t for t in changelogs if cluster.count(t)]
        ends = cluster.end_offsets([(t, p) for t in logged for p in range(n) if p < cluster.count(t)])
        for p in range(n):
            tid = f"{sub.id}_{p}"
            task: dict[str, Any] = {"id": tid, "stateful": bool(logged),
                                    "end_offset_sum": sum(ends.get((t, p), 0) for t in logged)}
            inputs = [{"topic": t, "partition": p, "racks": _racks(cluster, t, p)} for t in sources if p < cluster.count(t)]
            if inputs:
                task["input_partitions"] = inputs
            if logged:
                task["changelog_partitions"] = [{"topic": t, "partition": p, "racks": _racks(cluster, t, p)}
                                                for t in logged if p < cluster.count(t)]
            tasks[tid] = task
    return tasks


def _racks(cluster: Any, topic: str, p: int) -> list[str]:
    racks = cluster.replica_racks(topic)
    return list(racks[p]) if racks and p < len(racks) else []


# --------------------------------------------------------------------------- what a solve would change

def current_metrics(snapshot: Any) -> dict[str, Any]:
    """Balance and cross-rack reads of the assignment the group holds now (a parsed snapshot's owned
    partitions or previous active tasks), measured as a result's metrics are: ``imbalance`` and ``cross_rack``."""
    if snapshot.kind == "consumer":
        loads = {m.id: sum(len(ps) for t, ps in m.owned.items() if t in snapshot.topics) for m in snapshot.members}
        cross = None
        racked = any(t.racks for t in snapshot.topics.values()) and any(m.rack for m in snapshot.members)
        if racked:
            cross = 0
            for m in snapshot.members:
                for t, ps in m.owned.items():
                    topic = snapshot.topics.get(t)
                    if topic is None or not topic.racks or not m.rack:
                        continue
                    cross += sum(1 for p in ps if p < topic.partitions and topic.racks[p]
                                 and m.rack not in topic.racks[p])
        values = list(loads.values()) or [0]
        return {"imbalance": max(values) - min(values), "cross_rack": cross}
    per_thread = [len(c.previous_active) / c.threads for c in snapshot.clients] or [0]
    return {"imbalance": round(max(per_thread) - min(per_thread), 3), "cross_rack": None}


def solve_summary(doc: Mapping[str, Any], assignors: Sequence[str] = ("optimal", "sticky")) -> dict[str, Any]:
    """What each assignor would change against the current assignment: moves, imbalance, cross-rack."""
    import stickyflow

    snap = stickyflow.parse_snapshot(dict(doc))
    out: dict[str, Any] = {"current": current_metrics(snap)}
    for name in assignors:
        try:
            r = stickyflow.assign(snap, name)
            out[name] = {k: r.metrics.get(k) for k in ("moves", "imbalance", "cross_rack")}
        except Exception as exc:
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
    return out
