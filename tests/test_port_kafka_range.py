"""Apache Kafka's ``RangeAssignorTest`` and ``AbstractPartitionAssignorTest`` (clients), and kafka-python's
range case, ported: the same scenarios, our snapshots, our assertions.

Source: the Kafka client tests of the October 2024 snapshot (Kafka 3.9/4.0 line), where range is
rack-aware (KIP-881). Every scenario runs ``range`` through the front door and the one checker, asserts
Kafka's exact layout, Kafka's count of partitions placed off their consumer's rack (our ``cross_rack``)
where Kafka checks it, and that ``optimal`` is no worse by the spec's objective (sum of squared loads,
then ``non_overlap_cost x moves + traffic_cost x cross_rack``).

How Kafka's test fixtures map onto a snapshot:

* a replica rack list per partition is built as Kafka's ``partitionInfos`` builds it (broker ``i`` on
  rack ``racks[i % len(racks)]``, partition ``p`` of the ``k``-th topic on brokers ``p + j + offset``);
  a broker without a rack adds nothing to the list;
* the test-only ``preferRackAwareLogic`` switch is ``config.rack_aware = true``; left off, the
  snapshot has no ``rack_aware`` and Kafka's own rule decides;
* ``group.instance.id`` is a member's ``instance_id``; a consumer without a rack has no ``rack``.
"""

from __future__ import annotations

import random

import pytest

import stickyflow
from stickyflow.check.consumer import consumer_metrics
from stickyflow.greedy.range_roundrobin import kafka_member_order, range_needs_racks, range_uses_racks
from stickyflow.model.consumer import Member
from tests.checker import check_result

ALL_RACKS = "abcdef"
RACK_CONFIGS = ["NO_BROKER_RACK", "NO_CONSUMER_RACK", "BROKER_AND_CONSUMER_RACK"]


# --------------------------------------------------------------------------- helpers


def replica_racks(partitions: int, rf: int, broker_racks: list[str | None], offset: int = 0) -> list[list[str]]:
    """Each partition's replica racks, laid out as Kafka's test ``partitionInfos`` places replicas."""
    n = len(broker_racks)
    return [sorted({broker_racks[(p + j + offset) % n] for j in range(rf)} - {None}) for p in range(partitions)]


def snapshot(topics: dict[str, dict], members: list[dict], prefer_racks: bool = False,
             rack_aware: bool | None = None):
    """A consumer snapshot; ``prefer_racks`` is Kafka's ``preferRackAwareLogic`` (``config.rack_aware = true``)."""
    doc = {"format": "stickyflow.snapshot/1", "kind": "consumer", "topics": topics, "members": members}
    if prefer_racks:
        rack_aware = True
    if rack_aware is not None:
        doc["config"] = {"rack_aware": rack_aware}
    return stickyflow.parse_snapshot(doc)


def parse_layout(text: str) -> dict[str, list[int]]:
    """Kafka's ``"t1-0, t1-3, t2-0"`` as ``{"t1": [0, 3], "t2": [0]}``."""
    out: dict[str, list[int]] = {}
    for tp in filter(None, (s.strip() for s in text.split(","))):
        t, _, p = tp.rpartition("-")
        out.setdefault(t, []).append(int(p))
    return {t: sorted(ps) for t, ps in out.items()}


def objective(snap, result) -> tuple[int, int]:
    """The spec's objective past validity, as a tuple to compare: balance first, then the cost."""
    m = result.metrics
    cfg = snap.config
    return m["sum_squared_loads"], cfg.non_overlap_cost * m["moves"] + cfg.traffic_cost * (m["cross_rack"] or 0)


def run_range(snap) -> dict[str, dict[str, list[int]]]:
    """Kafka's range through the front door and the checker; ``optimal`` must be no worse. Returns the layout."""
    ours = stickyflow.assign(snap, "range", fallback=False)
    check_result(snap, ours)
    best = stickyflow.assign(snap, "optimal", fallback=False)
    check_result(snap, best)
    assert objective(snap, best) <= objective(snap, ours), (objective(snap, best), objective(snap, ours))
    return ours.to_json()["assignment"]


class Fixture:
    """``initializeRacks``: replication ``max_consumers``, that many broker racks, consumer ``i`` on rack ``i``.

    It also turns ``preferRackAwareLogic`` on, so with racks on both sides the rack-aware steps run even
    though every partition has a replica on every rack; the layouts must come out as without racks.
    """

    def __init__(self, rack_config: str, max_consumers: int = 3):
        self.rf = max_consumers
        self.broker_racks = max_consumers if rack_config != "NO_BROKER_RACK" else 0
        self.consumer_rack = rack_config != "NO_CONSUMER_RACK"

    def topic(self, partitions: int, rf: int | None = None, broker_racks: int | None = None) -> dict:
        rf = rf or self.rf
        nracks = self.broker_racks if broker_racks is None else broker_racks
        brokers = [ALL_RACKS[i % nracks] for i in range(nracks * rf)] if nracks > 0 else [None] * rf
        racks = replica_racks(partitions, rf, brokers)
        return {"partitions": partitions, "racks": racks} if any(racks) else {"partitions": partitions}

    def member(self, member_id: str, topics: list[str], index: int, instance: str | None = None) -> dict:
        m: dict = {"id": member_id, "subscription": topics}
        if self.consumer_rack:
            m["rack"] = ALL_RACKS[index % (self.broker_racks or len(ALL_RACKS))]
        if instance is not None:
            m["instance_id"] = instance
        return m

    def snapshot(self, topics: dict[str, int | dict], members: list[dict]):
        return snapshot({t: spec if isinstance(spec, dict) else self.topic(spec) for t, spec in topics.items()},
                        members, prefer_racks=True)


def by_instance(snap, layout: dict) -> dict[str, dict]:
    return {m.instance_id: layout[m.id] for m in snap.members if m.instance_id is not None}


# --------------------------------------------------------------------------- RangeAssignorTest: basic shapes


@pytest.mark.parametrize("has_rack", [True, False], ids=["hasConsumerRack=true", "hasConsumerRack=false"])
def test_kafka_RangeAssignorTest_testOneConsumerNoTopic(has_rack):
    f = Fixture("BROKER_AND_CONSUMER_RACK" if has_rack else "NO_CONSUMER_RACK")
    snap = f.snapshot({}, [f.member("consumer1", [], 0)])
    assert run_range(snap) == {"consumer1": {}}


@pytest.mark.parametrize("has_rack", [True, False], ids=["hasConsumerRack=true", "hasConsumerRack=false"])
def test_kafka_RangeAssignorTest_testOneConsumerNonexistentTopic(has_rack):
    f = Fixture("BROKER_AND_CONSUMER_RACK" if has_rack else "NO_CONSUMER_RACK")
    snap = f.snapshot({}, [f.member("consumer1", ["topic1"], 0)])
    assert run_range(snap) == {"consumer1": {}}


@pytest.mark.parametrize("rack_config", RACK_CONFIGS)
def test_kafka_RangeAssignorTest_testOneConsumerOneTopic(rack_config):
    f = Fixture(rack_config)
    snap = f.snapshot({"topic1": 3}, [f.member("consumer1", ["topic1"], 0)])
    assert run_range(snap) == {"consumer1": {"topic1": [0, 1, 2]}}


@pytest.mark.parametrize("rack_config", RACK_CONFIGS)
def test_kafka_RangeAssignorTest_testOnlyAssignsPartitionsFromSubscribedTopics(rack_config):
    f = Fixture(rack_config)
    snap = f.snapshot({"topic1": 3, "other": 3}, [f.member("consumer1", ["topic1"], 0)])
    assert run_range(snap) == {"consumer1": {"topic1": [0, 1, 2]}}


@pytest.mark.parametrize("rack_config", RACK_CONFIGS)
def test_kafka_RangeAssignorTest_testOneConsumerMultipleTopics(rack_config):
    f = Fixture(rack_config)
    snap = f.snapshot({"topic1": 1, "topic2": 2}, [f.member("consumer1", ["topic1", "topic2"], 0)])
    assert run_range(snap) == {"consumer1": {"topic1": [0], "topic2": [0, 1]}}


@pytest.mark.parametrize("rack_config", RACK_CONFIGS)
def test_kafka_RangeAssignorTest_testTwoConsumersOneTopicOnePartition(rack_config):
    f = Fixture(rack_config)
    snap = f.snapshot({"topic1": 1}, [f.member("consumer1", ["topic1"], 0), f.member("consumer2", ["topic1"], 1)])
    assert run_range(snap) == {"consumer1": {"topic1": [0]}, "consumer2": {}}


@pytest.mark.parametrize("rack_config", RACK_CONFIGS)
def test_kafka_RangeAssignorTest_testTwoConsumersOneTopicTwoPartitions(rack_config):
    f = Fixture(rack_config)
    snap = f.snapshot({"topic1": 2}, [f.member("consumer1", ["topic1"], 0), f.member("consumer2", ["topic1"], 1)])
    assert run_range(snap) == {"consumer1": {"topic1": [0]}, "consumer2": {"topic1": [1]}}


@pytest.mark.parametrize("rack_config", RACK_CONFIGS)
def test_kafka_RangeAssignorTest_testMultipleConsumersMixedTopics(rack_config):
    f = Fixture(rack_config)
    snap = f.snapshot({"topic1": 3, "topic2": 2}, [f.member("consumer1", ["topic1"], 0),
                                                   f.member("consumer2", ["topic1", "topic2"], 1),
                                                   f.member("consumer3", ["topic1"], 2)])
    assert run_range(snap) == {"consumer1": {"topic1": [0]}, "consumer2": {"topic1": [1], "topic2": [0, 1]},
                               "consumer3": {"topic1": [2]}}


@pytest.mark.parametrize("rack_config", RACK_CONFIGS)
def test_kafka_RangeAssignorTest_testTwoConsumersTwoTopicsSixPartitions(rack_config):
    f = Fixture(rack_config)
    both = ["topic1", "topic2"]
    snap = f.snapshot({"topic1": 3, "topic2": 3}, [f.member("consumer1", both, 0), f.member("consumer2", both, 1)])
    assert run_range(snap) == {"consumer1": {"topic1": [0, 1], "topic2": [0, 1]},
                               "consumer2": {"topic1": [2], "topic2": [2]}}


# --------------------------------------------------------------------------- RangeAssignorTest: static members


@pytest.mark.parametrize("rack_config", RACK_CONFIGS)
def test_kafka_RangeAssignorTest_testTwoStaticConsumersTwoTopicsSixPartitions(rack_config):
    """Static members are ordered by instance id, not member id: consumer-b (instance1) comes first."""
    f = Fixture(rack_config)
    both = ["topic1", "topic2"]
    snap = f.snapshot({"topic1": 3, "topic2": 3}, [f.member("consumer-b", both, 0, "instance1"),
                                                   f.member("consumer-a", both, 1, "instance2")])
    assert run_range(snap) == {"consumer-b": {"topic1": [0, 1], "topic2": [0, 1]},
                               "consumer-a": {"topic1": [2], "topic2": [2]}}


@pytest.mark.parametrize("rack_config", RACK_CONFIGS)
def test_kafka_RangeAssignorTest_testOneStaticConsumerAndOneDynamicConsumerTwoTopicsSixPartitions(rack_config):
    """A static member comes before a dynamic one whatever their member ids."""
    f = Fixture(rack_config)
    both = ["topic1", "topic2"]
    snap = f.snapshot({"topic1": 3, "topic2": 3}, [f.member("consumer-b", both, 0, "instance1"),
                                                   f.member("consumer-a", both, 1)])
    assert run_range(snap) == {"consumer-b": {"topic1": [0, 1], "topic2": [0, 1]},
                               "consumer-a": {"topic1": [2], "topic2": [2]}}


@pytest.mark.parametrize("rack_config", RACK_CONFIGS)
def test_kafka_RangeAssignorTest_testStaticMemberRangeAssignmentPersistent(rack_config):
    """Three static members keep their ranges when the dynamic fourth member is replaced by a fifth."""
    f = Fixture(rack_config, max_consumers=5)
    both = ["topic1", "topic2"]
    statics = [f.member(f"consumer{i}", both, i - 1, f"instance{i}") for i in (1, 2, 3)]
    topics = {"topic1": 5, "topic2": 4}
    expected = {"consumer1": {"topic1": [0, 1], "topic2": [0]}, "consumer2": {"topic1": [2], "topic2": [1]},
                "consumer3": {"topic1": [3], "topic2": [2]}}
    first = run_range(f.snapshot(topics, statics + [f.member("consumer4", both, 3)]))
    assert first == {**expected, "consumer4": {"topic1": [4], "topic2": [3]}}
    second = run_range(f.snapshot(topics, statics + [f.member("consumer5", both, 4)]))
    assert second == {**expected, "consumer5": {"topic1": [4], "topic2": [3]}}


def _member_id_swap(f: Fixture, topics: dict, expected: dict) -> None:
    """Kafka's member-id swap: consumer3's subscription returns as consumer4's, consumer2's as consumer5's."""
    both = ["topic1", "topic2"]
    members = [f.member(f"consumer{i}", both, i - 1, f"instance{i}") for i in (1, 2, 3)]
    snap = f.snapshot(topics, members)
    before = by_instance(snap, run_range(snap))
    assert before == expected
    swapped = [members[0], {**members[2], "id": "consumer4"}, {**members[1], "id": "consumer5"}]
    snap = f.snapshot(topics, swapped)
    assert by_instance(snap, run_range(snap)) == before


@pytest.mark.parametrize("rack_config", RACK_CONFIGS)
def test_kafka_RangeAssignorTest_testStaticMemberRangeAssignmentPersistentAfterMemberIdChanges(rack_config):
    _member_id_swap(Fixture(rack_config), {"topic1": 5, "topic2": 5},
                    {"instance1": {"topic1": [0, 1], "topic2": [0, 1]},
                     "instance2": {"topic1": [2, 3], "topic2": [2, 3]},
                     "instance3": {"topic1": [4], "topic2": [4]}})


def test_kafka_RangeAssignorTest_testRackAwareStaticMemberRangeAssignmentPersistentAfterMemberIdChanges():
    """Replication 2 over 3 racks: co-partitioned topics follow the racks, and the instances keep them."""
    f = Fixture("BROKER_AND_CONSUMER_RACK")
    topics = {"topic1": f.topic(5, rf=2, broker_racks=3), "topic2": f.topic(5, rf=2, broker_racks=3)}
    assert topics["topic1"]["racks"] == [["a", "b"], ["b", "c"], ["a", "c"], ["a", "b"], ["b", "c"]]
    _member_id_swap(f, topics, {"instance1": {"topic1": [0, 2], "topic2": [0, 2]},
                                "instance2": {"topic1": [1, 3], "topic2": [1, 3]},
                                "instance3": {"topic1": [4], "topic2": [4]}})


# --------------------------------------------------------------------------- RangeAssignorTest: verifyRackAssignment


def racks(n: int) -> list[str]:
    return [ALL_RACKS[i % len(ALL_RACKS)] for i in range(n)]


def null_racks(n: int) -> list[None]:
    return [None] * n


def rack_snapshot(topics: dict[str, int], rf: int, broker_racks: list, consumer_racks: list,
                  consumer_topics: list, prefer: bool = False, rack_aware: bool | None = None):
    """``verifyRackAssignment``'s group: members ``consumer0..``, topics placed one after another on brokers."""
    spec = {}
    offset = 0
    for t, n in topics.items():
        spec[t] = {"partitions": n, "racks": replica_racks(n, rf, broker_racks, offset)}
        offset += n
    members = [{"id": f"consumer{i}", "subscription": ts, **({"rack": r} if r is not None else {})}
               for i, (ts, r) in enumerate(zip(consumer_topics, consumer_racks))]
    return snapshot(spec, members, prefer_racks=prefer, rack_aware=rack_aware)


def rack_case(topics: dict[str, int], rf: int, broker_racks: list, consumer_racks: list, consumer_topics: list,
              expected: list[str], mismatch: int, prefer: bool = False, case_id: str = ""):
    """One ``verifyRackAssignment`` call, as a parameter set ``(snapshot, layout, mismatch)``."""
    snap = rack_snapshot(topics, rf, broker_racks, consumer_racks, consumer_topics, prefer)
    want = {f"consumer{i}": parse_layout(e) for i, e in enumerate(expected)}
    name = case_id or (f"rf{rf}-brokers={''.join(r or '-' for r in broker_racks)}-consumers="
                       f"{''.join(r or '-' for r in consumer_racks)}{'-prefer' if prefer else ''}")
    return pytest.param(snap, want, mismatch, id=name)


def non_rack_aware_cases(topics, consumer_topics, expected) -> list:
    """``verifyNonRackAwareAssignment``: the seven rack set-ups under which Kafka's layout is the plain one."""
    return [
        rack_case(topics, 3, null_racks(3), racks(3), consumer_topics, expected, -1),
        rack_case(topics, 3, racks(3), null_racks(3), consumer_topics, expected, -1),
        rack_case(topics, 3, racks(3), racks(3), consumer_topics, expected, 0),
        rack_case(topics, 4, racks(4), racks(3), consumer_topics, expected, 0),
        rack_case(topics, 3, racks(3), ["d", "e", "f"], consumer_topics, expected, -1),
        rack_case(topics, 3, racks(3), [None, "e", "f"], consumer_topics, expected, -1),
        rack_case(topics, 3, racks(3), racks(3), consumer_topics, expected, 0, prefer=True),
    ]


def check_rack_case(snap, want, mismatch) -> None:
    ours = stickyflow.assign(snap, "range", fallback=False)
    check_result(snap, ours)
    assert ours.to_json()["assignment"] == want
    if mismatch >= 0:  # Kafka counts partitions off their consumer's rack: our cross_rack
        assert ours.metrics["cross_rack"] == mismatch
    best = stickyflow.assign(snap, "optimal", fallback=False)
    check_result(snap, best)
    assert objective(snap, best) <= objective(snap, ours), (objective(snap, best), objective(snap, ours))


ALL3 = ["t1", "t2", "t3"]
T675 = {"t1": 6, "t2": 7, "t3": 2}
T555 = {"t1": 5, "t2": 5, "t3": 5}

UNIFORM_SUBSCRIPTION = non_rack_aware_cases(
    T675, [ALL3] * 3, ["t1-0, t1-1, t2-0, t2-1, t2-2, t3-0", "t1-2, t1-3, t2-3, t2-4, t3-1", "t1-4, t1-5, t2-5, t2-6"]
) + [
    rack_case(T675, 1, racks(3), racks(3), [ALL3] * 3,
              ["t1-0, t1-3, t2-0, t2-3, t2-6", "t1-1, t1-4, t2-1, t2-4, t3-0", "t1-2, t1-5, t2-2, t2-5, t3-1"], 0),
    rack_case(T675, 2, racks(3), racks(3), [ALL3] * 3,
              ["t1-0, t1-2, t2-0, t2-2, t2-3, t3-1", "t1-1, t1-3, t2-1, t2-4, t3-0", "t1-4, t1-5, t2-5, t2-6"], 1),
    rack_case(T675, 3, racks(2), racks(3), [ALL3] * 3,  # consumer2's rack c holds no replica
              ["t1-0, t1-1, t2-0, t2-1, t2-2, t3-0", "t1-2, t1-3, t2-3, t2-4, t3-1", "t1-4, t1-5, t2-5, t2-6"], 4),
]


@pytest.mark.parametrize("snap,want,mismatch", UNIFORM_SUBSCRIPTION)
def test_kafka_RangeAssignorTest_testRackAwareAssignmentWithUniformSubscription(snap, want, mismatch):
    check_rack_case(snap, want, mismatch)


NON_EQUAL = [ALL3, ALL3, ["t1", "t3"]]
NON_EQUAL_SUBSCRIPTION = non_rack_aware_cases(
    T675, NON_EQUAL, ["t1-0, t1-1, t2-0, t2-1, t2-2, t2-3, t3-0", "t1-2, t1-3, t2-4, t2-5, t2-6, t3-1", "t1-4, t1-5"]
) + [
    rack_case(T675, 1, racks(3), racks(3), NON_EQUAL,
              ["t1-0, t1-3, t2-0, t2-2, t2-3, t2-6", "t1-1, t1-4, t2-1, t2-4, t2-5, t3-0", "t1-2, t1-5, t3-1"], 2),
    rack_case(T675, 2, racks(3), racks(3), NON_EQUAL,
              ["t1-0, t1-2, t2-0, t2-2, t2-3, t2-5, t3-1", "t1-1, t1-3, t2-1, t2-4, t2-6, t3-0", "t1-4, t1-5"], 0),
    rack_case(T675, 3, racks(2), racks(3), NON_EQUAL,
              ["t1-0, t1-1, t2-0, t2-1, t2-2, t2-3, t3-0", "t1-2, t1-3, t2-4, t2-5, t2-6, t3-1", "t1-4, t1-5"], 2),
]


@pytest.mark.parametrize("snap,want,mismatch", NON_EQUAL_SUBSCRIPTION)
def test_kafka_RangeAssignorTest_testRackAwareAssignmentWithNonEqualSubscription(snap, want, mismatch):
    check_rack_case(snap, want, mismatch)


PLAIN_555 = ["t1-0, t1-1, t2-0, t2-1, t3-0, t3-1", "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3", "t1-4, t2-4, t3-4"]
UNIFORM_PARTITIONS = non_rack_aware_cases(T555, [ALL3] * 3, PLAIN_555) + [
    # co-partitioning (same members, same partition count) wins over rack alignment
    rack_case(T555, 1, racks(3), racks(3), [ALL3] * 3, PLAIN_555, 10),
    rack_case(T555, 2, racks(3), racks(3), [ALL3] * 3, PLAIN_555, 5),
    rack_case(T555, 3, racks(2), racks(3), [ALL3] * 3, PLAIN_555, 3),
]


@pytest.mark.parametrize("snap,want,mismatch", UNIFORM_PARTITIONS)
def test_kafka_RangeAssignorTest_testRackAwareAssignmentWithUniformPartitions(snap, want, mismatch):
    check_rack_case(snap, want, mismatch)


UNIFORM_PARTITIONS_NON_EQUAL = non_rack_aware_cases(
    T555, NON_EQUAL, ["t1-0, t1-1, t2-0, t2-1, t2-2, t3-0, t3-1", "t1-2, t1-3, t2-3, t2-4, t3-2, t3-3", "t1-4, t3-4"]
) + [
    rack_case(T555, 1, racks(3), racks(3), NON_EQUAL,
              ["t1-0, t1-1, t2-0, t2-1, t2-4, t3-0, t3-1", "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3", "t1-4, t3-4"], 9),
    rack_case(T555, 2, racks(3), racks(3), NON_EQUAL,
              ["t1-2, t2-0, t2-1, t2-3, t3-2", "t1-0, t1-3, t2-2, t2-4, t3-0, t3-3", "t1-1, t1-4, t3-1, t3-4"], 0),
    rack_case(T555, 3, racks(2), racks(3), NON_EQUAL,
              ["t1-0, t1-1, t2-0, t2-1, t2-2, t3-0, t3-1", "t1-2, t1-3, t2-3, t2-4, t3-2, t3-3", "t1-4, t3-4"], 2),
]


@pytest.mark.parametrize("snap,want,mismatch", UNIFORM_PARTITIONS_NON_EQUAL)
def test_kafka_RangeAssignorTest_testRackAwareAssignmentWithUniformPartitionsNonEqualSubscription(snap, want,
                                                                                                   mismatch):
    check_rack_case(snap, want, mismatch)


T6622 = {"t1": 6, "t2": 6, "t3": 2, "t4": 2}
ABBA = ["a", "b", "b", "a"]
PAIRS = [["t1", "t2"], ["t1", "t2"], ["t3", "t4"], ["t3", "t4"]]
PLAIN_PAIRS = ["t1-0, t1-1, t1-2, t2-0, t2-1, t2-2", "t1-3, t1-4, t1-5, t2-3, t2-4, t2-5", "t3-0, t4-0", "t3-1, t4-1"]
ALL4 = [["t1", "t2", "t3", "t4"]] * 4
PLAIN_ALL4 = ["t1-0, t1-1, t2-0, t2-1, t3-0, t4-0", "t1-2, t1-3, t2-2, t2-3, t3-1, t4-1", "t1-4, t2-4", "t1-5, t2-5"]
CO_PARTITIONING = [
    # Kafka runs its first set-up twice; the duplicate is kept so that every call has a case
    rack_case(T6622, 3, racks(2), ABBA, PAIRS, PLAIN_PAIRS, -1, case_id="pairs-rf3-racks2"),
    rack_case(T6622, 3, racks(2), ABBA, PAIRS, PLAIN_PAIRS, -1, case_id="pairs-rf3-racks2-again"),
    rack_case(T6622, 2, racks(2), ABBA, PAIRS, PLAIN_PAIRS, 0, case_id="pairs-rf2-racks2"),
    rack_case(T6622, 1, racks(2), ABBA, PAIRS,
              ["t1-0, t1-2, t1-4, t2-0, t2-2, t2-4", "t1-1, t1-3, t1-5, t2-1, t2-3, t2-5", "t3-1, t4-1",
               "t3-0, t4-0"], 0, case_id="pairs-rf1-racks2"),
    rack_case(T6622, 3, racks(2), ABBA, ALL4, PLAIN_ALL4, -1, case_id="all-rf3-racks2"),
    rack_case(T6622, 3, racks(2), ABBA, ALL4, PLAIN_ALL4, -1, case_id="all-rf3-racks2-again"),
    rack_case(T6622, 2, racks(2), ABBA, ALL4, PLAIN_ALL4, 0, case_id="all-rf2-racks2"),
    rack_case(T6622, 1, racks(2), ABBA, ALL4,
              ["t1-0, t1-2, t2-0, t2-2, t3-0, t4-0", "t1-1, t1-3, t2-1, t2-3, t3-1, t4-1", "t1-5, t2-5", "t1-4, t2-4"],
              0, case_id="all-rf1-racks2"),
    rack_case(T6622, 1, racks(3), ABBA, ALL4,
              ["t1-0, t1-3, t2-0, t2-3, t3-0, t4-0", "t1-1, t1-4, t2-1, t2-4, t3-1, t4-1", "t1-2, t2-2", "t1-5, t2-5"],
              6, case_id="all-rf1-racks3"),
]


@pytest.mark.parametrize("snap,want,mismatch", CO_PARTITIONING)
def test_kafka_RangeAssignorTest_testRackAwareAssignmentWithCoPartitioning(snap, want, mismatch):
    check_rack_case(snap, want, mismatch)


T662244 = {"t1": 6, "t2": 6, "t3": 2, "t4": 2, "t5": 4, "t6": 4}
NINE = [[f"t{i}" for i in range(1, 10)]] * 3  # t7 to t9 do not exist
CO_PARTITIONED_SAME = [
    rack_case(T662244, 3, null_racks(3), racks(3), NINE,
              ["t1-0, t1-1, t2-0, t2-1, t3-0, t4-0, t5-0, t5-1, t6-0, t6-1", "t1-2, t1-3, t2-2, t2-3, t3-1, t4-1, "
               "t5-2, t6-2", "t1-4, t1-5, t2-4, t2-5, t5-3, t6-3"], -1, case_id="no-broker-racks"),
    rack_case(T662244, 3, racks(3), racks(3), NINE,
              ["t1-0, t1-1, t2-0, t2-1, t3-0, t4-0, t5-0, t5-1, t6-0, t6-1", "t1-2, t1-3, t2-2, t2-3, t3-1, t4-1, "
               "t5-2, t6-2", "t1-4, t1-5, t2-4, t2-5, t5-3, t6-3"], 0, prefer=True, case_id="rf3-prefer"),
    rack_case(T662244, 2, racks(3), racks(3), NINE,
              ["t1-0, t1-2, t2-0, t2-2, t3-0, t4-0, t5-1, t6-1", "t1-1, t1-3, t2-1, t2-3, t3-1, t4-1, t5-2, t6-2",
               "t1-4, t1-5, t2-4, t2-5, t5-0, t5-3, t6-0, t6-3"], 0, prefer=True, case_id="rf2-prefer"),
]


@pytest.mark.parametrize("snap,want,mismatch", CO_PARTITIONED_SAME)
def test_kafka_RangeAssignorTest_testCoPartitionedAssignmentWithSameSubscription(snap, want, mismatch):
    check_rack_case(snap, want, mismatch)


def test_rack_aware_range_places_by_rack_where_kafka_does():
    """Replication 1 over racks a, b, c: Kafka's layout reads nothing across racks; the plain one reads 10."""
    snap = rack_snapshot(T675, 1, racks(3), racks(3), [ALL3] * 3)
    ours = stickyflow.assign(snap, "range")
    check_result(snap, ours)
    assert ours.metrics["cross_rack"] == 0
    off = rack_snapshot(T675, 1, racks(3), racks(3), [ALL3] * 3, rack_aware=False)
    plain = stickyflow.assign(off, "range")
    check_result(off, plain)
    assert plain.to_json()["assignment"] == {f"consumer{i}": parse_layout(e) for i, e in enumerate(
        ["t1-0, t1-1, t2-0, t2-1, t2-2, t3-0", "t1-2, t1-3, t2-3, t2-4, t3-1", "t1-4, t1-5, t2-5, t2-6"])}
    assert consumer_metrics(snap, plain.assignment)["cross_rack"] == 10


# --------------------------------------------------------------------------- AbstractPartitionAssignorTest


def members(*pairs) -> list[Member]:
    return [Member(id=mid, subscription=(), instance_id=iid) for mid, iid in pairs]


def test_kafka_AbstractPartitionAssignorTest_testMemberInfoSortingWithoutGroupInstanceId():
    ms = members(("a", None), ("b", None), ("c", None))
    assert kafka_member_order(ms) == ms


def test_kafka_AbstractPartitionAssignorTest_testMemberInfoSortingWithAllGroupInstanceId():
    m1, m2, m3 = members(("a", "y"), ("b", "z"), ("c", "x"))
    assert kafka_member_order([m1, m2, m3]) == [m3, m1, m2]


def test_kafka_AbstractPartitionAssignorTest_testMemberInfoSortingSomeGroupInstanceId():
    m1, m2, m3 = members(("a", None), ("b", "y"), ("c", "x"))
    assert kafka_member_order([m1, m2, m3]) == [m3, m2, m1]


def test_kafka_AbstractPartitionAssignorTest_testMergeSortManyMemberInfo():
    seed = 881
    print(f"[seed] {seed}")
    rng = random.Random(seed)
    ms = [Member(id=str(i + 100), subscription=(), instance_id=str(i + 100) if rng.random() < 0.5 else None)
          for i in range(100)]
    expected = [m for m in ms if m.instance_id is not None] + [m for m in ms if m.instance_id is None]
    rng.shuffle(ms)
    assert kafka_member_order(ms) == expected


def test_kafka_AbstractPartitionAssignorTest_testUseRackAwareAssignment():
    abc = ["a", "b", "c"]
    every = [frozenset(abc)] * 10
    subset = [frozenset(abc[i % 3]) for i in range(10)]
    for prefer in (None, True):
        assert not range_needs_racks(set(), every, prefer)
        assert not range_needs_racks({"a", "b", "c"}, [], prefer)
        assert not range_needs_racks({"d"}, every, prefer)
        assert range_needs_racks(abc, subset, prefer)
        assert range_needs_racks({"a", "b"}, subset, prefer)
    for racks_ in (abc, {"a", "b"}, {"a", "d"}):
        assert not range_needs_racks(racks_, every)  # every partition on every rack: nothing to gain
        assert range_needs_racks(racks_, every, True)
    assert range_needs_racks({"a", "d"}, subset)
    assert not range_needs_racks(abc, subset, False)  # our config.rack_aware = false


def test_member_order_drives_range():
    """Kafka sorts members by MemberInfo for every topic: the same order decides range's ranges."""
    snap = snapshot({"t": {"partitions": 3}}, [{"id": "a", "subscription": ["t"]},
                                               {"id": "b", "subscription": ["t"], "instance_id": "y"},
                                               {"id": "c", "subscription": ["t"], "instance_id": "x"}])
    assert run_range(snap) == {"a": {"t": [2]}, "b": {"t": [1]}, "c": {"t": [0]}}


# ----------------------------------------------------------------- kafka-python test/consumer/test_assignors.py


def test_kafka_python_test_assignors_test_assignor_range():
    snap = snapshot({"t0": {"partitions": 3}, "t1": {"partitions": 3}},
                    [{"id": "C0", "subscription": ["t0", "t1"]}, {"id": "C1", "subscription": ["t0", "t1"]}])
    assert run_range(snap) == {"C0": {"t0": [0, 1], "t1": [0, 1]}, "C1": {"t0": [2], "t1": [2]}}


# --------------------------------------------------------------------------- a literal reading, as a cross-check


def reference_range(snap) -> dict[str, dict[str, list[int]]]:
    """Kafka's rack-aware range read literally (lists, loops, no shortcuts), to check ours against.

    Slow on purpose: each step scans every candidate, as the Java streams do.
    """
    prefer = snap.config.rack_aware
    order = kafka_member_order(list(snap.members))
    out: dict[str, dict[str, list[int]]] = {m.id: {} for m in snap.members}
    states = []
    for t, topic in snap.topics.items():
        cons = [m for m in order if t in m.subscription]
        if not cons:
            continue
        n = topic.partitions
        rack_of = {m.id: m.rack or None for m in cons}
        consumer_racks = {r for r in rack_of.values() if r}
        pr = [topic.racks[p] if topic.racks else frozenset() for p in range(n)] if consumer_racks else []
        every = set().union(*pr) if pr else set()
        if prefer is False or not consumer_racks or consumer_racks.isdisjoint(every):
            needs = False
        else:
            needs = bool(prefer) or any(s != every for s in pr)
        states.append({"topic": t, "cons": [m.id for m in cons], "rack": rack_of, "pr": pr, "needs": needs,
                       "free": list(range(n)), "got": {m.id: 0 for m in cons},
                       "base": n // len(cons), "extra": n % len(cons)})

    def cap(s, c):
        return max(0, s["base"] + (1 if s["extra"] > 0 else 0) - s["got"][c])

    def give(s, c, parts):
        out[c].setdefault(s["topic"], []).extend(parts)
        s["got"][c] += len(parts)
        if s["got"][c] > s["base"]:
            s["extra"] -= 1
        for p in parts:
            s["free"].remove(p)

    def match(s, c, p):
        r = s["rack"][c]
        return r is None or (bool(s["pr"]) and r in s["pr"][p])

    def ranges(s, may):
        for c in s["cons"]:
            if not s["free"]:
                break
            parts = [p for p in s["free"] if may(c, p)][:cap(s, c)]
            if parts:
                give(s, c, parts)

    if any(s["needs"] for s in states):
        groups: dict = {}
        for s in states:
            groups.setdefault((tuple(s["cons"]), len(s["pr"])), []).append(s)
        for (cons, n), g in groups.items():
            if len(g) > 1:
                remaining = list(cons)
                for p in range(n):
                    c = next((c for c in remaining if all(match(s, c, p) and cap(s, c) > 0 for s in g)), None)
                    if c is None:
                        continue
                    for s in g:
                        give(s, c, [p])
                    if all(cap(s, c) == 0 for s in g):
                        remaining.remove(c)
                        if not remaining:
                            break
            elif g[0]["needs"]:
                ranges(g[0], lambda c, p, s=g[0]: match(s, c, p))
    for s in states:
        ranges(s, lambda c, p: True)
    return {m: {t: sorted(ps) for t, ps in a.items()} for m, a in out.items()}


def random_rack_group(rng: random.Random):
    """Groups where co-partitioning, rack matching and rack-less members all occur often."""
    rack_pool = ["a", "b", "c", "d"]
    topics = {}
    for j in range(rng.randint(1, 6)):
        n = rng.choice([1, 2, 3, 4, 6, 8])
        spec: dict = {"partitions": n}
        if rng.random() < 0.8:
            spec["racks"] = [rng.sample(rack_pool, rng.randint(0, 2)) for _ in range(n)]
        topics[f"t{j}"] = spec
    names = list(topics)
    patterns = [rng.sample(names, rng.randint(1, len(names))) for _ in range(rng.randint(1, 3))]
    members = []
    for i in range(rng.randint(1, 6)):
        m: dict = {"id": f"m{rng.randint(0, 99):02d}-{i}", "subscription": rng.choice(patterns)}
        rack = rng.choice(rack_pool + [None, ""])
        if rack is not None:
            m["rack"] = rack
        if rng.random() < 0.25:
            m["instance_id"] = f"i{rng.randint(0, 9)}-{i}"
        members.append(m)
    return snapshot(topics, members, rack_aware=rng.choice([None, None, True, False]))


def test_range_matches_a_literal_reading_of_kafka_on_seeded_groups():
    """300 seeded groups: our range equals the literal reading; balanced per topic; optimal no worse."""
    seed = 3_5_0
    print(f"[seed] {seed}")
    rng = random.Random(seed)
    racked = co_partitioned = 0
    for k in range(300):
        snap = random_rack_group(rng)
        ours = stickyflow.assign(snap, "range", fallback=False)
        check_result(snap, ours)
        layout = ours.to_json()["assignment"]
        assert layout == reference_range(snap), (k, snap)
        for t, topic in snap.topics.items():  # every reader gets floor or ceil of the topic, as plain range does
            readers = [m.id for m in snap.members if t in m.subscription]
            if readers:
                sizes = sorted(len(layout[m].get(t, [])) for m in readers)
                assert sizes[-1] - sizes[0] <= 1 and sum(sizes) == topic.partitions, (k, t)
        if range_uses_racks(snap):
            racked += 1
            best = stickyflow.assign(snap, "optimal", fallback=False)
            check_result(snap, best)
            assert objective(snap, best) <= objective(snap, ours), k
            subs = {}
            for t, topic in snap.topics.items():
                readers = tuple(sorted(m.id for m in snap.members if t in m.subscription))
                if readers:
                    subs.setdefault((readers, topic.partitions), []).append(t)
            co_partitioned += any(len(ts) > 1 for ts in subs.values())
    assert racked >= 100 and co_partitioned >= 30, (racked, co_partitioned)
    print(f"{racked} of 300 used racks, {co_partitioned} of them with co-partitioned topics")


def test_co_partitioned_topics_stay_together_with_racks():
    """Topics with the same readers and partition count give partition p of each to the same member.

    Kafka's promise, kept under rack matching: such topics are placed together, then filled in lockstep.
    """
    rng = random.Random(42)
    print("[seed] 42")
    seen = 0
    for _ in range(200):
        snap = random_rack_group(rng)
        if not range_uses_racks(snap):
            continue
        layout = stickyflow.assign(snap, "range").to_json()["assignment"]
        owner = {(t, p): m for m, a in layout.items() for t, ps in a.items() for p in ps}
        groups: dict = {}
        for t, topic in snap.topics.items():
            readers = tuple(sorted(m.id for m in snap.members if t in m.subscription))
            if readers:
                groups.setdefault((readers, topic.partitions), []).append(t)
        for (_, n), ts in groups.items():
            if len(ts) > 1:
                seen += 1
                for p in range(n):
                    assert len({owner[(t, p)] for t in ts}) == 1, (ts, p)
    assert seen >= 20
