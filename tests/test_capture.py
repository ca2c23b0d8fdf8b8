"""Decoding Kafka's member metadata (every shipped version), ``stickyflow decode``, and building snapshots from
DescribeGroups answers offline (the live capture is in tests/test_kafka_live.py).

Byte fixtures: the consumer protocol's come from kafka-python's encoder, which is generated from Kafka's
message schemas (an implementation independent of ours); the Streams ones are laid out here field by field
from Kafka's ``SubscriptionInfoData.json`` schema and ``AssignmentInfo``'s encoder, version by version.
"""

from __future__ import annotations

import json
import struct
import uuid
from types import SimpleNamespace

import pytest

import stickyflow
from stickyflow.adapters import decode as dec
from stickyflow.adapters.capture import (BASIS_NOTE, current_metrics, parse_topology, snapshot_from_description,
                                         solve_summary)
from stickyflow.adapters.decode import DecodeError

PID = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"


# --------------------------------------------------------------------------- consumer protocol, versions 0-3

def kp_subscription(version, topics, user_data, owned, generation, rack):
    meta = pytest.importorskip("kafka.protocol.consumer.metadata")
    S = meta.ConsumerProtocolSubscription
    return bytes(S(topics=topics, user_data=user_data, version=version, generation_id=generation, rack_id=rack,
                   owned_partitions=[S.TopicPartition(topic=t, partitions=ps) for t, ps in owned.items()]).encode())


def kp_assignment(version, assigned, user_data):
    meta = pytest.importorskip("kafka.protocol.consumer.metadata")
    A = meta.ConsumerProtocolAssignment
    return bytes(A(assigned_partitions=[A.TopicPartition(topic=t, partitions=ps) for t, ps in assigned.items()],
                   user_data=user_data, version=version).encode())


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_consumer_subscription_every_version(version):
    raw = kp_subscription(version, ["orders", "pay"], b"\x01\x02", {"orders": [0, 3]}, 7, "eu-1a")
    got = dec.decode_consumer_subscription(raw)
    want = {"version": version, "topics": ["orders", "pay"], "user_data": "AQI="}
    if version >= 1:
        want["owned_partitions"] = [{"topic": "orders", "partitions": [0, 3]}]
    if version >= 2:
        want["generation_id"] = 7
    if version >= 3:
        want["rack_id"] = "eu-1a"
    assert got == want
    assert dec.encode_consumer_subscription(["orders", "pay"], user_data=b"\x01\x02", owned_partitions={"orders": [0, 3]},
                                            generation_id=7, rack_id="eu-1a", version=version) == raw


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_consumer_assignment_every_version(version):
    raw = kp_assignment(version, {"orders": [1, 2], "pay": [0]}, None)
    assert dec.decode_consumer_assignment(raw) == {
        "version": version, "user_data": None,
        "assigned_partitions": [{"topic": "orders", "partitions": [1, 2]}, {"topic": "pay", "partitions": [0]}]}
    assert dec.encode_consumer_assignment({"orders": [1, 2], "pay": [0]}, version=version) == raw


def test_null_rack_and_newer_version_read_as_kafka_does():
    raw = kp_subscription(3, ["t"], None, {}, -1, None)
    assert dec.decode_consumer_subscription(raw)["rack_id"] is None
    newer = struct.pack(">h", 4) + raw[2:] + b"future field"
    assert dec.decode_consumer_subscription(newer)["version"] == 4  # read as version 3, the rest ignored


def sticky_bytes(previous, generation=None):
    out = struct.pack(">i", len(previous))
    for t, ps in previous.items():
        out += struct.pack(">h", len(t)) + t.encode() + struct.pack(">i", len(ps)) + b"".join(struct.pack(">i", p) for p in ps)
    return out + (b"" if generation is None else struct.pack(">i", generation))


def test_sticky_and_cooperative_sticky_user_data():
    v0, v1 = sticky_bytes({"a": [2, 0]}), sticky_bytes({"a": [2, 0]}, 9)
    assert dec.decode_user_data(v0) == {"format": "sticky", "version": 0,
                                        "previous_assignment": [{"topic": "a", "partitions": [2, 0]}]}
    assert dec.decode_user_data(v1)["generation"] == 9 and dec.decode_user_data(v1)["version"] == 1
    assert dec.decode_user_data(struct.pack(">i", 12)) == {"format": "cooperative-sticky", "generation": 12}
    assert dec.decode_user_data(b"\x00\x01") is None  # nothing reads it exactly
    raw = kp_subscription(0, ["a"], v1, {}, -1, None)
    doc = dec.decode("consumer-subscription", raw)
    assert doc["user_data_decoded"]["previous_assignment"] == [{"topic": "a", "partitions": [2, 0]}]
    assert "user_data_decoded" not in dec.decode("consumer-subscription", raw, user_data="none")


# --------------------------------------------------------------------------- Kafka Streams, versions 1-11

def task_pair(t):
    g, p = t.split("_")
    return int(g), int(p)


def streams_sub_fixture(version, active, standby, sums, tags):
    """SubscriptionInfoData as its schema lays it out (flexibleVersions none: int32 lengths, 16-byte uuid)."""
    b = struct.pack(">i", version)
    if version >= 3:
        b += struct.pack(">i", 11)
    b += uuid.UUID(PID).bytes
    if version <= 6:
        for tasks in (active, standby):
            b += struct.pack(">i", len(tasks)) + b"".join(struct.pack(">ii", *task_pair(t)) for t in tasks)
    if version >= 2:
        b += struct.pack(">i", 11) + b"host-a:8080"
    if 7 <= version <= 9:
        groups = {}
        for t, s in sums.items():
            groups.setdefault(task_pair(t)[0], []).append((task_pair(t)[1], s))
        b += struct.pack(">i", len(groups))
        for g, items in groups.items():
            b += struct.pack(">ii", g, len(items)) + b"".join(struct.pack(">iq", p, s) for p, s in items)
    if version >= 10:
        b += struct.pack(">i", len(sums)) + b"".join(struct.pack(">iiqh", *task_pair(t), s, -1) for t, s in sums.items())
    if version >= 8:
        b += struct.pack(">b", 3)
    if version >= 9:
        b += struct.pack(">i", 0)
    if version >= 11:
        b += struct.pack(">i", len(tags))
        for k, v in tags.items():
            b += struct.pack(">i", len(k)) + k.encode() + struct.pack(">i", len(v)) + v.encode()
    return b


@pytest.mark.parametrize("version", range(1, 12))
def test_streams_subscription_every_version(version):
    active, standby = ["0_1", "1_0"], ["0_2"]
    sums = {"0_1": -2, "1_0": -2, "0_2": 1234}
    raw = streams_sub_fixture(version, active, standby, sums, {"zone": "eu-1a"})
    got = dec.decode_streams_subscription(raw)
    assert got["version"] == version and got["process_id"] == PID
    assert ("latest_supported_version" in got) == (version >= 3)
    assert ("prev_tasks" in got) == (version <= 6) and ("task_offset_sums" in got) == (version >= 7)
    if version <= 6:
        assert got["prev_tasks"] == active and got["standby_tasks"] == standby
    else:
        assert {e["task_id"]: e["offset_sum"] for e in got["task_offset_sums"]} == sums
    assert got.get("user_end_point") == ("host-a:8080" if version >= 2 else None)
    assert got.get("unique_field") == (3 if version >= 8 else None)
    assert got.get("error_code") == (0 if version >= 9 else None)
    assert got.get("client_tags") == ({"zone": "eu-1a"} if version >= 11 else None)
    # our encoder lays the same bytes (offset sums from 7 on; actives -2, standbys as given)
    mine = dec.encode_streams_subscription(process_id=PID, version=version, latest_supported_version=11,
                                           prev_tasks=active, standby_tasks=standby, user_end_point="host-a:8080",
                                           task_offset_sums=sums, unique_field=3, client_tags={"zone": "eu-1a"})
    assert mine == raw
    # wrapped in the consumer subscription that carries it, as DescribeGroups returns it
    wrapped = dec.decode("streams-subscription", kp_subscription(3, ["in"], raw, {}, -1, "r1"))
    assert wrapped["process_id"] == PID and wrapped["consumer_protocol"]["rack_id"] == "r1"


def test_a_future_streams_version_is_read_as_kafka_reads_it():
    raw = struct.pack(">ii", 12, 12) + b"\x00" * 30
    assert dec.decode_streams_subscription(raw) == {"version": 12, "latest_supported_version": 12, "unreadable": True}


def streams_asg_fixture(version):
    """AssignmentInfo as Kafka's encoder writes it (DataOutputStream: writeUTF strings, a topic dictionary from 5)."""
    def task(t):
        return struct.pack(">ii", *task_pair(t)) + (struct.pack(">i", 0) if version >= 10 else b"")

    def utf(s):
        return struct.pack(">H", len(s)) + s.encode()

    b = struct.pack(">i", version) + (struct.pack(">i", 11) if version >= 3 else b"")
    b += struct.pack(">i", 2) + task("0_1") + task("1_3")
    b += struct.pack(">i", 1) + task("0_2") + struct.pack(">i", 1) + utf("app-store-changelog") + struct.pack(">i", 2)
    if 2 <= version <= 4:
        b += struct.pack(">i", 1) + utf("host-b") + struct.pack(">i", 7) + struct.pack(">i", 1) + utf("in") + struct.pack(">i", 4)
    elif version >= 5:
        b += struct.pack(">i", 1) + struct.pack(">i", 0) + utf("in")
        b += struct.pack(">i", 1) + utf("host-b") + struct.pack(">ii", 7, 1) + struct.pack(">ii", 0, 4)
        if version >= 6:
            b += struct.pack(">i", 1) + utf("host-c") + struct.pack(">ii", 9, 1) + struct.pack(">ii", 0, 5)
    if version >= 4:
        b += struct.pack(">i", 0)
    if version >= 7:
        b += struct.pack(">q", 1_700_000_000_000)
    return b


@pytest.mark.parametrize("version", range(1, 12))
def test_streams_assignment_every_version(version):
    raw = streams_asg_fixture(version)
    got = dec.decode_streams_assignment(raw)
    assert got["version"] == version and got["active_tasks"] == ["0_1", "1_3"]
    assert got["standby_tasks"] == [{"task_id": "0_2", "partitions": [{"topic": "app-store-changelog", "partition": 2}]}]
    if version >= 2:
        assert got["partitions_by_host"] == [{"host": "host-b", "port": 7, "partitions": [{"topic": "in", "partition": 4}]}]
    assert ("standby_partitions_by_host" in got) == (version >= 6)
    assert got.get("error_code") == (0 if version >= 4 else None)
    assert got.get("next_rebalance_ms") == (1_700_000_000_000 if version >= 7 else None)
    mine = dec.encode_streams_assignment(
        active_tasks=["0_1", "1_3"], standby_tasks={"0_2": [("app-store-changelog", 2)]},
        partitions_by_host={("host-b", 7): [("in", 4)]}, standby_partitions_by_host={("host-c", 9): [("in", 5)]},
        version=version, commonly_supported_version=11, next_rebalance_ms=1_700_000_000_000)
    assert mine == raw


@pytest.mark.parametrize("kind, raw", [
    ("consumer-subscription", dec.encode_consumer_subscription(["t", "u"], owned_partitions={"t": [1]}, rack_id="r")),
    ("consumer-assignment", dec.encode_consumer_assignment({"t": [1, 2]}, user_data=b"x")),
    ("streams-subscription", streams_sub_fixture(11, [], [], {"0_1": -2, "0_2": 5}, {"k": "v"})),
    ("streams-assignment", streams_asg_fixture(11)),
])
def test_every_truncation_is_a_decode_error_naming_a_field(kind, raw):
    dec.decode(kind, raw)
    for cut in range(len(raw)):
        with pytest.raises(DecodeError) as info:
            dec.decode(kind, raw[:cut])
        assert info.value.field and info.value.rule, cut


def test_corrupt_lengths_are_named():
    raw = bytearray(dec.encode_consumer_subscription(["t"], version=0))
    raw[2:6] = struct.pack(">i", 10**9)
    with pytest.raises(DecodeError, match=r"topics: array of 1000000000 entries cannot fit"):
        dec.decode_consumer_subscription(bytes(raw))
    bad_text = dec.encode_consumer_subscription(["t"], version=0).replace(b"\x00\x01t", b"\x00\x01\xff")
    with pytest.raises(DecodeError, match=r"topics\[0\]: not UTF-8"):
        dec.decode_consumer_subscription(bad_text)


# --------------------------------------------------------------------------- the command

def run(argv):
    """The CLI's exit code (argparse's own usage errors exit 2 by SystemExit or by return, as the CLI has it)."""
    from stickyflow.adapters.cli import main

    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


def test_cli_decode(tmp_path, capsys):
    main = run

    f = tmp_path / "sub.bin"
    f.write_bytes(streams_sub_fixture(11, [], [], {"0_1": -2}, {"zone": "z"}))
    assert main(["decode", "streams-subscription", str(f)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["client_tags"] == {"zone": "z"} and out["task_offset_sums"] == [{"task_id": "0_1", "offset_sum": -2}]
    (tmp_path / "sub.b64").write_text(__import__("base64").b64encode(f.read_bytes()).decode())
    assert main(["decode", "streams-subscription", str(tmp_path / "sub.b64"), "--input", "base64", "--compact"]) == 0
    assert json.loads(capsys.readouterr().out) == out
    f.write_bytes(f.read_bytes()[:-3])
    assert main(["decode", "streams-subscription", str(f)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "client_tags[0].value: truncated" in err[0]
    assert main(["decode", "consumer-assignment", str(tmp_path / "missing")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["decode", "nonsense", str(f)]) == 2


def test_cli_capture_bad_input_is_exit_2(capsys):
    main = run

    assert main(["capture", "--bootstrap", "nohostport", "--group", "g"]) == 2
    assert "--bootstrap: must be HOST:PORT" in capsys.readouterr().err
    assert main(["capture", "--bootstrap", "127.0.0.1:9", "--group", "g", "--topology", "/no/such"]) == 2
    assert main(["capture", "--bootstrap", "127.0.0.1:9"]) == 2  # neither --group nor --all-groups


# --------------------------------------------------------------------------- topology and snapshots, offline

TOPOLOGY = """Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [orders])
      --> KSTREAM-AGGREGATE-0000000002
    Processor: KSTREAM-AGGREGATE-0000000002 (stores: [counts])
      --> none
      <-- KSTREAM-SOURCE-0000000000
   Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000003 (topics: [clicks, views])
      --> KSTREAM-SINK-0000000004
    Sink: KSTREAM-SINK-0000000004 (topic: out)
      <-- KSTREAM-SOURCE-0000000003
   Sub-topology: 2 for global store (will not generate tasks)
    Source: KSTREAM-SOURCE-0000000005 (topics: [global])
"""


def test_parse_topology():
    subs = parse_topology(TOPOLOGY)
    assert [(s.id, s.source_topics, s.stores) for s in subs] == [(0, ("orders",), ("counts",)),
                                                                (1, ("clicks", "views"), ())]
    with pytest.raises(stickyflow.InvalidSnapshotError, match="Sub-topology"):
        parse_topology("hello")


class FakeCluster:
    def __init__(self, topics, racks=None, ends=None):
        self.topics, self.racks, self.ends = topics, racks or {}, ends or {}

    def load(self, topics):
        pass

    def count(self, topic):
        return self.topics.get(topic, 0)

    def replica_racks(self, topic):
        return self.racks.get(topic)

    def end_offsets(self, tps):
        return {tp: self.ends.get(tp, 0) for tp in tps}


def member(mid, metadata, assignment=b"", instance=None):
    return SimpleNamespace(member_id=mid, group_instance_id=instance, client_id=mid, client_host="/127.0.0.1",
                           member_metadata=metadata, member_assignment=assignment)


def group(gid, members, protocol="range", state="Stable"):
    return SimpleNamespace(group_id=gid, error_code=0, group_state=state, protocol_type="consumer",
                           protocol_data=protocol, members=members)


def test_consumer_group_snapshot_from_a_description():
    cluster = FakeCluster({"a": 4, "b": 2}, racks={"a": [["r1"], ["r2"], ["r1"], ["r2"]]})
    desc = group("g", [
        member("m2", dec.encode_consumer_subscription(["a"], rack_id="r1"), dec.encode_consumer_assignment({"a": [0, 1]})),
        member("m1", dec.encode_consumer_subscription(["a", "b"], version=0), dec.encode_consumer_assignment({"a": [2, 3], "b": [0, 1]}),
               instance="static-1"),
        member("m3", dec.encode_consumer_subscription(["b"], owned_partitions={"b": [1]}, generation_id=4, version=2)),
    ])
    got = snapshot_from_description(desc, cluster, now_ms=5)
    assert got.error is None and got.state == "Stable"
    doc = got.snapshot
    assert doc["topics"] == {"a": {"partitions": 4, "racks": [["r1"], ["r2"], ["r1"], ["r2"]]}, "b": {"partitions": 2}}
    by = {m["id"]: m for m in doc["members"]}
    assert [m["id"] for m in doc["members"]] == ["m1", "m2", "m3"]
    assert by["m2"] == {"id": "m2", "subscription": ["a"], "rack": "r1", "owned": {"a": [0, 1]}}
    assert by["m1"]["instance_id"] == "static-1" and by["m1"]["owned"] == {"a": [2, 3], "b": [0, 1]}
    assert by["m3"]["owned"] == {"b": [1]} and by["m3"]["generation"] == 4  # no assignment yet: the subscription's
    snap = stickyflow.parse_snapshot(doc)
    assert current_metrics(snap) == {"imbalance": 3, "cross_rack": 1}  # 4 vs 1; m2 (r1) reads a-1 from r2
    summary = solve_summary(doc)
    assert summary["optimal"]["imbalance"] <= 1 and summary["optimal"]["cross_rack"] == 0


def test_untrusted_metadata_is_a_group_error_not_a_crash():
    good = dec.encode_consumer_subscription(["a"])
    empty = snapshot_from_description(group("g", [member("m1", b""), member("m2", good)]), FakeCluster({"a": 1}))
    assert empty.snapshot is None and "no subscription for 1 of 2 members" in empty.error
    corrupt = snapshot_from_description(group("g", [member("m1", good[:-1])]), FakeCluster({"a": 1}))
    assert corrupt.snapshot is None and "members[0] ('m1').rack_id: truncated" in corrupt.error
    dead = snapshot_from_description(group("gone", [], state="Dead"), FakeCluster({}))
    assert "no such group" in dead.error


def streams_member(mid, pid, sums, rack=None, tags=None):
    info = dec.encode_streams_subscription(process_id=pid, task_offset_sums=sums, client_tags=tags or {})
    return member(mid, dec.encode_consumer_subscription(["orders"], user_data=info, rack_id=rack))


P1, P2 = "11111111-1111-1111-1111-111111111111", "22222222-2222-2222-2222-222222222222"


def test_streams_snapshot_without_topology_is_relative_to_the_most_caught_up_client():
    desc = group("app", [streams_member("a1", P1, {"0_0": -2, "0_1": 900}, rack="r1", tags={"zone": "z1"}),
                         streams_member("a2", P1, {"0_0": -2}, rack="r1", tags={"zone": "z1"}),
                         streams_member("b1", P2, {"0_1": -2, "0_0": 400})], protocol="stream")
    got = snapshot_from_description(desc, FakeCluster({"orders": 2}))
    doc = got.snapshot
    assert doc["kind"] == "streams" and doc["id"] == "app" + BASIS_NOTE
    c1, c2 = doc["clients"]
    assert (c1["process_id"], c1["threads"], c1["rack"], c1["tags"]) == (P1, 2, "r1", {"zone": "z1"})
    assert c1["previous_active"] == ["0_0"] and c1["previous_standby"] == ["0_1"] and c2["previous_active"] == ["0_1"]
    # the most caught-up report of 0_0 is 400 (b1's), of 0_1 is 900 (a1's): lags relative to those
    assert {t["id"]: t["end_offset_sum"] for t in doc["tasks"]} == {"0_0": 400, "0_1": 900}
    assert c1["lags"] == {"0_0": -2, "0_1": 0} and c2["lags"] == {"0_0": 0, "0_1": -2}
    assert got.notes


def test_streams_snapshot_with_topology_uses_changelog_end_offsets():
    cluster = FakeCluster({"orders": 2, "clicks": 2, "views": 2, "app-counts-changelog": 2},
                          ends={("app-counts-changelog", 0): 1000, ("app-counts-changelog", 1): 50})
    desc = group("app", [streams_member("a1", P1, {"0_0": -2, "0_1": 40}), streams_member("b1", P2, {"0_1": -2})],
                 protocol="stream")
    doc = snapshot_from_description(desc, cluster, topology=parse_topology(TOPOLOGY)).snapshot
    assert doc["id"] == "app"
    tasks = {t["id"]: t for t in doc["tasks"]}
    assert sorted(tasks) == ["0_0", "0_1", "1_0", "1_1"]
    assert tasks["0_0"]["stateful"] and not tasks["1_0"]["stateful"]
    assert (tasks["0_0"]["end_offset_sum"], tasks["0_1"]["end_offset_sum"]) == (1000, 50)
    assert [p["topic"] for p in tasks["1_1"]["input_partitions"]] == ["clicks", "views"]
    assert doc["clients"][0]["lags"] == {"0_0": -2, "0_1": 10}
    result = stickyflow.assign(stickyflow.parse_snapshot(doc), "optimal")
    assert result.error == "NONE"


def test_cli_capture_unreachable_cluster_is_one_line_exit_1(capsys):
    pytest.importorskip("kafka")
    import socket

    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert run(["capture", "--bootstrap", f"127.0.0.1:{port}", "--group", "g", "--timeout", "1"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"stickyflow capture: cannot reach the cluster at 127.0.0.1:{port}")
    assert "KafkaTimeoutError" not in err[0], err


# --------------------------------------------------------------------------- ported: Kafka's protocol tests
# Scenarios of Kafka's ConsumerProtocolTest, SubscriptionInfoTest and AssignmentInfoTest (clients/ and streams/
# test sources), with our bytes and our assertions of the property each checks.

def _s16(s):
    return struct.pack(">h", len(s)) + s.encode()


def test_kafka_ConsumerProtocolTest_deserializeFutureSubscriptionVersion():
    raw = (struct.pack(">hi", 100, 1) + _s16("topic") + struct.pack(">i", 0) + struct.pack(">i", 1) + _s16("foo")
           + struct.pack(">ii", 1, 2) + struct.pack(">i", 10) + _s16("rack-a") + _s16("bar"))
    got = dec.decode_consumer_subscription(raw)
    assert (got["topics"], got["owned_partitions"], got["generation_id"], got["rack_id"]) == (
        ["topic"], [{"topic": "foo", "partitions": [2]}], 10, "rack-a")


def test_kafka_ConsumerProtocolTest_deserializeFutureAssignmentVersion():
    raw = struct.pack(">hi", 100, 1) + _s16("foo") + struct.pack(">ii", 1, 1) + struct.pack(">i", 0) + _s16("bar")
    assert dec.decode_consumer_assignment(raw)["assigned_partitions"] == [{"topic": "foo", "partitions": [1]}]


def test_kafka_ConsumerProtocolTest_serializeDeserializeNullSubscriptionUserData():
    assert dec.decode_consumer_subscription(kp_subscription(3, ["foo", "bar"], None, {}, -1, None))["user_data"] is None


def test_kafka_ConsumerProtocolTest_deserializeNullAssignmentUserData():
    assert dec.decode_consumer_assignment(kp_assignment(0, {"foo": [0]}, None))["user_data"] is None


def test_kafka_ConsumerProtocolTest_deserializeOldSubscriptionVersion():
    got = dec.decode_consumer_subscription(kp_subscription(0, ["foo", "bar"], None, {}, -1, None))
    assert got == {"version": 0, "topics": ["foo", "bar"], "user_data": None}  # no owned, generation, rack


def test_kafka_SubscriptionInfoTest_shouldAllowToDecodeFutureSupportedVersion():
    raw = struct.pack(">ii", dec.STREAMS_LATEST_VERSION + 1, dec.STREAMS_LATEST_VERSION + 1)
    got = dec.decode_streams_subscription(raw)
    assert (got["version"], got["latest_supported_version"]) == (12, 12)


def test_kafka_SubscriptionInfoTest_shouldEncodeAndDecodeVersion10WithNamedTopologies():
    raw = (struct.pack(">ii", 10, 10) + uuid.UUID(PID).bytes + struct.pack(">i", 0) + struct.pack(">i", 2)
           + struct.pack(">iiq", 0, 0, -2) + _s16("topology1") + struct.pack(">iiq", 1, 2, 7) + struct.pack(">h", -1)
           + struct.pack(">b", 0) + struct.pack(">i", 0))
    got = dec.decode_streams_subscription(raw)
    assert got["task_offset_sums"] == [{"task_id": "topology1__0_0", "offset_sum": -2}, {"task_id": "1_2", "offset_sum": 7}]


def test_kafka_SubscriptionInfoTest_shouldReturnEncodeDecodeEmptyClientTagsOnVersion11():
    got = dec.decode_streams_subscription(dec.encode_streams_subscription(process_id=PID, client_tags={}))
    assert got["client_tags"] == {}
    older = dec.decode_streams_subscription(dec.encode_streams_subscription(process_id=PID, version=10))
    assert "client_tags" not in older  # shouldReturnEmptyMapOfClientTagsOnOlderVersions: no such field


def test_kafka_SubscriptionInfoTest_shouldConvertTaskOffsetSumMapToTaskSets():
    """Offset sum -2 (LATEST_OFFSET): a previous active task; any other reported task: a previous standby."""
    sums = {"0_0": -2, "0_1": -2, "1_0": 0, "1_1": 15}
    desc = group("app", [streams_member("m", P1, sums)], protocol="stream")
    client = snapshot_from_description(desc, FakeCluster({"orders": 2})).snapshot["clients"][0]
    assert client["previous_active"] == ["0_0", "0_1"] and client["previous_standby"] == ["1_0", "1_1"]


def test_kafka_AssignmentInfoTest_shouldEncodeAndDecodeVersion10WithNamedTopologies():
    name = "topology1"
    raw = (struct.pack(">iii", 10, 10, 1) + struct.pack(">iii", 0, 1, len(name)) + name.encode("utf-16-be")
           + struct.pack(">i", 0) + struct.pack(">i", 0) + struct.pack(">i", 0) + struct.pack(">i", 0)
           + struct.pack(">i", 0) + struct.pack(">q", 2**63 - 1))
    assert dec.decode_streams_assignment(raw)["active_tasks"] == ["topology1__0_1"]


def test_kafka_AssignmentInfoTest_shouldThrowForUnknownVersion1():
    with pytest.raises(DecodeError, match="version: 0 is not a version"):
        dec.decode_streams_assignment(struct.pack(">i", 0) + b"\x00" * 16)


def test_kafka_AssignmentInfoTest_shouldDecodeDefaultNextRebalanceTime():
    got = dec.decode_streams_assignment(dec.encode_streams_assignment(version=7))
    assert got["next_rebalance_ms"] == 2**63 - 1  # Long.MAX_VALUE: no follow-up rebalance asked for


def test_kafka_AssignmentInfoTest_shouldEncodeAndDecodeSmallerCommonlySupportedVersion():
    got = dec.decode_streams_assignment(dec.encode_streams_assignment(version=11, commonly_supported_version=9))
    assert (got["version"], got["commonly_supported_version"]) == (11, 9)


@pytest.mark.parametrize("command", ["decode", "capture"])
def test_help(command, capsys):
    assert run([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert f"stickyflow {command}" in out and ("KIND" in out if command == "decode" else "--bootstrap" in out)


def test_an_empty_current_assignment_is_what_the_member_holds():
    """In a stable group a member with an empty assignment owns nothing now, whatever it claimed when it joined."""
    desc = group("g", [member("m1", dec.encode_consumer_subscription(["a"], owned_partitions={"a": [0]}, generation_id=3),
                              dec.encode_consumer_assignment({})),
                       member("m2", dec.encode_consumer_subscription(["a"]), dec.encode_consumer_assignment({"a": [0]}))])
    doc = snapshot_from_description(desc, FakeCluster({"a": 1})).snapshot
    assert [m.get("owned") for m in doc["members"]] == [None, {"a": [0]}]


def test_a_streams_member_without_subscription_info_is_a_group_error():
    desc = group("app", [member("m", dec.encode_consumer_subscription(["orders"]))], protocol="stream")
    got = snapshot_from_description(desc, FakeCluster({"orders": 1}))
    assert got.snapshot is None and "members[0] ('m').user_data: is empty" in got.error
