"""Apache Kafka's ``RoundRobinAssignorTest`` (clients) and kafka-python's round-robin case, ported.

Every scenario runs ``roundrobin`` through the front door and the one checker, asserts Kafka's exact
layout, and that ``optimal`` is no worse by the spec's objective. Kafka's round-robin reads no racks;
its tests have none. ``group.instance.id`` is a member's ``instance_id``.
"""

from __future__ import annotations

import pytest

import stickyflow
from tests.checker import check_result

BOTH = ["topic1", "topic2"]


def snapshot(topics: dict[str, int], members: list[dict]):
    return stickyflow.parse_snapshot({"format": "stickyflow.snapshot/1", "kind": "consumer",
                                      "topics": {t: {"partitions": n} for t, n in topics.items()},
                                      "members": members})


def member(member_id: str, topics: list[str], instance: str | None = None) -> dict:
    m: dict = {"id": member_id, "subscription": topics}
    if instance is not None:
        m["instance_id"] = instance
    return m


def objective(snap, result) -> tuple[int, int]:
    m = result.metrics
    cfg = snap.config
    return m["sum_squared_loads"], cfg.non_overlap_cost * m["moves"] + cfg.traffic_cost * (m["cross_rack"] or 0)


def run_roundrobin(snap) -> dict[str, dict[str, list[int]]]:
    """Round-robin through the front door and the checker; ``optimal`` no worse. Returns the layout."""
    ours = stickyflow.assign(snap, "roundrobin", fallback=False)
    check_result(snap, ours)
    best = stickyflow.assign(snap, "optimal", fallback=False)
    check_result(snap, best)
    assert objective(snap, best) <= objective(snap, ours)
    return ours.to_json()["assignment"]


def by_instance(snap, layout: dict) -> dict[str, dict]:
    return {m.instance_id: layout[m.id] for m in snap.members if m.instance_id is not None}


# --------------------------------------------------------------------------- RoundRobinAssignorTest


def test_kafka_RoundRobinAssignorTest_testOneConsumerNoTopic():
    assert run_roundrobin(snapshot({}, [member("consumer", [])])) == {"consumer": {}}


def test_kafka_RoundRobinAssignorTest_testOneConsumerNonexistentTopic():
    assert run_roundrobin(snapshot({}, [member("consumer", ["topic"])])) == {"consumer": {}}


def test_kafka_RoundRobinAssignorTest_testOneConsumerOneTopic():
    assert run_roundrobin(snapshot({"topic": 3}, [member("consumer", ["topic"])])) == {
        "consumer": {"topic": [0, 1, 2]}}


def test_kafka_RoundRobinAssignorTest_testOnlyAssignsPartitionsFromSubscribedTopics():
    assert run_roundrobin(snapshot({"topic": 3, "other": 3}, [member("consumer", ["topic"])])) == {
        "consumer": {"topic": [0, 1, 2]}}


def test_kafka_RoundRobinAssignorTest_testOneConsumerMultipleTopics():
    assert run_roundrobin(snapshot({"topic1": 1, "topic2": 2}, [member("consumer", BOTH)])) == {
        "consumer": {"topic1": [0], "topic2": [0, 1]}}


def test_kafka_RoundRobinAssignorTest_testTwoConsumersOneTopicOnePartition():
    snap = snapshot({"topic": 1}, [member("consumer1", ["topic"]), member("consumer2", ["topic"])])
    assert run_roundrobin(snap) == {"consumer1": {"topic": [0]}, "consumer2": {}}


def test_kafka_RoundRobinAssignorTest_testTwoConsumersOneTopicTwoPartitions():
    snap = snapshot({"topic": 2}, [member("consumer1", ["topic"]), member("consumer2", ["topic"])])
    assert run_roundrobin(snap) == {"consumer1": {"topic": [0]}, "consumer2": {"topic": [1]}}


def test_kafka_RoundRobinAssignorTest_testMultipleConsumersMixedTopics():
    """Mixed subscriptions: a partition skips members that do not read its topic."""
    snap = snapshot({"topic1": 3, "topic2": 2}, [member("consumer1", ["topic1"]), member("consumer2", BOTH),
                                                 member("consumer3", ["topic1"])])
    assert run_roundrobin(snap) == {"consumer1": {"topic1": [0]}, "consumer2": {"topic1": [1], "topic2": [0, 1]},
                                    "consumer3": {"topic1": [2]}}


def test_kafka_RoundRobinAssignorTest_testTwoDynamicConsumersTwoTopicsSixPartitions():
    snap = snapshot({"topic1": 3, "topic2": 3}, [member("consumer1", BOTH), member("consumer2", BOTH)])
    assert run_roundrobin(snap) == {"consumer1": {"topic1": [0, 2], "topic2": [1]},
                                    "consumer2": {"topic1": [1], "topic2": [0, 2]}}


def test_kafka_RoundRobinAssignorTest_testTwoStaticConsumersTwoTopicsSixPartitions():
    """Static members are dealt to by instance id: consumer-b (instance1) before consumer-a (instance2)."""
    snap = snapshot({"topic1": 3, "topic2": 3}, [member("consumer-b", BOTH, "instance1"),
                                                 member("consumer-a", BOTH, "instance2")])
    assert run_roundrobin(snap) == {"consumer-b": {"topic1": [0, 2], "topic2": [1]},
                                    "consumer-a": {"topic1": [1], "topic2": [0, 2]}}


def test_kafka_RoundRobinAssignorTest_testOneStaticConsumerAndOneDynamicConsumerTwoTopicsSixPartitions():
    snap = snapshot({"topic1": 3, "topic2": 3}, [member("consumer-b", BOTH, "instance1"),
                                                 member("consumer-a", BOTH)])
    assert run_roundrobin(snap) == {"consumer-b": {"topic1": [0, 2], "topic2": [1]},
                                    "consumer-a": {"topic1": [1], "topic2": [0, 2]}}


def test_kafka_RoundRobinAssignorTest_testStaticMemberRoundRobinAssignmentPersistent():
    """Three static members keep their partitions when the dynamic fourth is replaced by a fifth."""
    statics = [member(f"consumer{i}", BOTH, f"instance{i}") for i in (1, 2, 3)]
    topics = {"topic1": 3, "topic2": 3}
    expected = {"consumer1": {"topic1": [0], "topic2": [1]}, "consumer2": {"topic1": [1], "topic2": [2]},
                "consumer3": {"topic1": [2]}}
    assert run_roundrobin(snapshot(topics, statics + [member("consumer4", BOTH)])) == {
        **expected, "consumer4": {"topic2": [0]}}
    assert run_roundrobin(snapshot(topics, statics + [member("consumer5", BOTH)])) == {
        **expected, "consumer5": {"topic2": [0]}}


def test_kafka_RoundRobinAssignorTest_testStaticMemberRoundRobinAssignmentPersistentAfterMemberIdChanges():
    """Each instance keeps its partitions when consumer3's instance returns as consumer4, consumer2's as 5."""
    topics = {"topic1": 5, "topic2": 5}
    members = [member(f"consumer{i}", BOTH, f"instance{i}") for i in (1, 2, 3)]
    snap = snapshot(topics, members)
    before = by_instance(snap, run_roundrobin(snap))
    assert before == {"instance1": {"topic1": [0, 3], "topic2": [1, 4]},
                      "instance2": {"topic1": [1, 4], "topic2": [2]},
                      "instance3": {"topic1": [2], "topic2": [0, 3]}}
    swapped = [members[0], {**members[2], "id": "consumer4"}, {**members[1], "id": "consumer5"}]
    snap = snapshot(topics, swapped)
    assert by_instance(snap, run_roundrobin(snap)) == before


# ----------------------------------------------------------------- kafka-python test/consumer/test_assignors.py


def test_kafka_python_test_assignors_test_assignor_roundrobin():
    snap = snapshot({"t0": 3, "t1": 3}, [member("C0", ["t0", "t1"]), member("C1", ["t0", "t1"])])
    assert run_roundrobin(snap) == {"C0": {"t0": [0, 2], "t1": [1]}, "C1": {"t0": [1], "t1": [0, 2]}}


# --------------------------------------------------------------------------- beyond the peers' tests


@pytest.mark.parametrize("racks", [False, True], ids=["no-racks", "racks"])
def test_roundrobin_reads_no_racks(racks):
    """Kafka's round-robin has no rack logic (KIP-881 left it alone): racks never change its layout."""
    doc = {"format": "stickyflow.snapshot/1", "kind": "consumer",
           "topics": {"t": {"partitions": 4, **({"racks": [["b"], ["a"], ["b"], ["a"]]} if racks else {})}},
           "members": [{"id": "C0", "subscription": ["t"], **({"rack": "a"} if racks else {})},
                       {"id": "C1", "subscription": ["t"], **({"rack": "b"} if racks else {})}]}
    snap = stickyflow.parse_snapshot(doc)
    assert run_roundrobin(snap) == {"C0": {"t": [0, 2]}, "C1": {"t": [1, 3]}}
