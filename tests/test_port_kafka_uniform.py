"""Kafka's tests of its server-side uniform assignor (KIP-848), ported to ``stickyflow.assign(..., "uniform")``.

Sources (Apache Kafka, group-coordinator, ``org.apache.kafka.coordinator.group.assignor``):
``OptimizedUniformAssignmentBuilderTest`` (the homogeneous builder; the class kept its old name when the
builder became ``UniformHomogeneousAssignmentBuilder``) and ``UniformHeterogeneousAssignmentBuilderTest``.
There is no ``GeneralUniformAssignmentBuilderTest`` in Kafka 4: that builder was replaced by the
heterogeneous one. Each scenario is Kafka's: topics, subscriptions, the previous target assignment (our
``owned``), and the assertion Kafka makes. Every result has passed the front door's validity check.

Where Kafka's expected answer depends on the order of a Java ``HashSet`` of random topic ids (the
homogeneous builder hands out unowned partitions topic by topic in that order), we assert what does not
depend on it: the loads, which member takes the extra slot, and that no partition moves without need;
the test names say so. Kafka's "subscribed to a topic that does not exist" raises an exception; the
snapshot format allows such a subscription (the topic has no partitions), so there we assert that nothing
is assigned.
"""

from __future__ import annotations

import pytest

import stickyflow


def _snap(topics: dict[str, int], members: dict[str, tuple[list[str], dict[str, list[int]]]]) -> dict:
    return {"format": "stickyflow.snapshot/1", "kind": "consumer",
            "topics": {t: {"partitions": n} for t, n in topics.items()},
            "members": [{"id": m, "subscription": sub, "owned": owned}
                        for m, (sub, owned) in members.items()]}


def _solve(doc: dict, **extra) -> tuple[dict, stickyflow.AssignmentResult]:
    r = stickyflow.assign(doc, "uniform", **extra)
    assert r.error == "NONE" and r.solver.method == "uniform"
    out = r.to_json()["assignment"]
    return out, r


def _sizes(assignment: dict) -> dict[str, int]:
    return {m: sum(len(p) for p in a.values()) for m, a in assignment.items()}


def _kafka_balance(assignment: dict) -> None:
    """Kafka's ``checkValidityAndBalance`` for equal subscriptions: loads differ by at most one."""
    sizes = list(_sizes(assignment).values())
    assert max(sizes) - min(sizes) <= 1


T1, T2, T3 = "topic1", "topic2", "topic3"


# --------------------------------------------------------------------------- homogeneous

def test_kafka_OptimizedUniformAssignmentBuilderTest_testOneMemberNoTopicSubscription():
    out, r = _solve(_snap({T1: 3}, {"A": ([], {})}))
    assert out == {"A": {}}


def test_kafka_OptimizedUniformAssignmentBuilderTest_testOneMemberSubscribedToNonexistentTopic():
    # Kafka raises PartitionAssignorException; our format lets a member name a topic that does not exist
    out, r = _solve(_snap({T1: 3}, {"A": ([T2], {})}))
    assert out == {"A": {}}


def test_kafka_OptimizedUniformAssignmentBuilderTest_testFirstAssignmentTwoMembersTwoTopicsNoMemberRacks():
    # Kafka's expected partitions follow its HashSet order of topic ids; the loads do not: A, visited first,
    # takes the extra slot (3 of 5), B takes 2
    out, r = _solve(_snap({T1: 3, T3: 2}, {"A": ([T1, T3], {}), "B": ([T1, T3], {})}))
    assert _sizes(out) == {"A": 3, "B": 2}
    assert r.to_json()["assignment"] == out and r.metrics["imbalance"] == 1


def test_kafka_OptimizedUniformAssignmentBuilderTest_testFirstAssignmentNumMembersGreaterThanTotalNumPartitions():
    out, r = _solve(_snap({T3: 2}, {"A": ([T3], {}), "B": ([T3], {}), "C": ([T3], {})}))
    assert out == {"A": {T3: [0]}, "B": {T3: [1]}, "C": {}}


def test_kafka_OptimizedUniformAssignmentBuilderTest_testValidityAndBalanceForLargeSampleSet():
    topics = {f"topic-{i}": 3 for i in range(1, 100)}
    members = {f"member{i}": (list(topics), {}) for i in range(1, 50)}
    out, r = _solve(_snap(topics, members))
    _kafka_balance(out)
    assert sum(_sizes(out).values()) == 297


def test_kafka_OptimizedUniformAssignmentBuilderTest_testReassignmentForTwoMembersTwoTopicsGivenUnbalancedPrevAssignment():
    out, r = _solve(_snap({T1: 3, T2: 3}, {"A": ([T1, T2], {T1: [0, 1], T2: [0, 1]}),
                                            "B": ([T1, T2], {T1: [2], T2: [2]})}))
    assert out == {"A": {T1: [0, 1], T2: [0]}, "B": {T1: [2], T2: [1, 2]}}
    assert r.metrics["moves"] == 1


def test_kafka_OptimizedUniformAssignmentBuilderTest_testReassignmentWhenPartitionsAreAddedForTwoMembersTwoTopics():
    # which new partitions go to whom follows Kafka's topic-id hash order; what holds: nobody loses a partition,
    # A (visited first) gets 6 of 11, B 5
    out, r = _solve(_snap({T1: 6, T2: 5}, {"A": ([T1, T2], {T1: [0, 2], T2: [0]}),
                                            "B": ([T1, T2], {T1: [1], T2: [1, 2]})}))
    assert _sizes(out) == {"A": 6, "B": 5}
    assert r.metrics["moves"] == 0
    assert set(out["A"][T1]) >= {0, 2} and 0 in out["A"][T2]
    assert 1 in out["B"][T1] and set(out["B"][T2]) >= {1, 2}


def test_kafka_OptimizedUniformAssignmentBuilderTest_testReassignmentWhenOneMemberAddedAfterInitialAssignmentWithTwoMembersTwoTopics():
    out, r = _solve(_snap({T1: 3, T2: 3}, {"A": ([T1, T2], {T1: [0, 2], T2: [0]}),
                                            "B": ([T1, T2], {T1: [1], T2: [1, 2]}),
                                            "C": ([T1, T2], {})}))
    assert out == {"A": {T1: [0, 2]}, "B": {T1: [1], T2: [1]}, "C": {T2: [0, 2]}}


def test_kafka_OptimizedUniformAssignmentBuilderTest_testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersTwoTopics():
    # C's partitions (topic1-2, topic2-2) are free; which goes to A follows Kafka's topic-id hash order
    out, r = _solve(_snap({T1: 3, T2: 3}, {"A": ([T1, T2], {T1: [0], T2: [0]}),
                                            "B": ([T1, T2], {T1: [1], T2: [1]})}))
    assert _sizes(out) == {"A": 3, "B": 3}
    assert r.metrics["moves"] == 0


def test_kafka_OptimizedUniformAssignmentBuilderTest_testReassignmentWhenOneSubscriptionRemovedAfterInitialAssignmentWithTwoMembersTwoTopics():
    out, r = _solve(_snap({T1: 2, T2: 2}, {"A": ([T2], {T1: [0], T2: [0]}), "B": ([T2], {T1: [1], T2: [1]})}))
    assert out == {"A": {T2: [0]}, "B": {T2: [1]}}


# --------------------------------------------------------------------------- heterogeneous
# Kafka's fixed topic ids sort topic1 < topic2 < topic3 < topic4, as our names do, so these answers are exact.

T4 = "topic4"
HETERO = [
    ("testTwoMembersNoTopicSubscription",
     {T1: 3}, {"A": ([], {}), "B": ([], {})},
     {"A": {}, "B": {}}),
    # Kafka raises (nonexistent topics); here the subscriptions simply have no partitions
    ("testTwoMembersSubscribedToNonexistentTopics",
     {T1: 3}, {"A": ([T3], {}), "B": ([T2], {})},
     {"A": {}, "B": {}}),
    ("testFirstAssignmentTwoMembersTwoTopics",
     {T1: 3, T3: 6}, {"A": ([T1, T3], {}), "B": ([T3], {})},
     {"A": {T1: [0, 1, 2], T3: [4]}, "B": {T3: [0, 1, 2, 3, 5]}}),
    ("testFirstAssignmentNumMembersGreaterThanTotalNumPartitions",
     {T3: 1, T1: 2}, {"A": ([T3], {}), "B": ([T3], {}), "C": ([T1], {})},
     {"A": {T3: [0]}, "B": {}, "C": {T1: [0, 1]}}),
    ("testReassignmentForTwoMembersThreeTopicsGivenUnbalancedPrevAssignment",
     {T1: 6, T2: 4, T3: 4},
     {"A": ([T1], {T1: [0, 1, 2]}), "B": ([T1, T2], {T1: [3], T2: [0]}),
      "C": ([T1, T2, T3], {T1: [4, 5], T2: [1, 2, 3], T3: [0, 1, 2, 3]})},
     {"A": {T1: [0, 1, 2, 5]}, "B": {T1: [3], T2: [0, 1, 2, 3]}, "C": {T1: [4], T3: [0, 1, 2, 3]}}),
    ("testReassignmentWhenPartitionsAreAddedForTwoMembers",
     {T1: 6, T2: 5, T3: 3, T4: 3},
     {"A": ([T1, T3], {T1: [0, 1, 2, 3], T3: [0, 1]}),
      "B": ([T1, T2, T3, T4], {T2: [0, 1, 2], T4: [0, 1, 2]})},
     {"A": {T1: [0, 1, 2, 3, 4, 5], T3: [0, 1, 2]}, "B": {T2: [0, 1, 2, 3, 4], T4: [0, 1, 2]}}),
    ("testReassignmentWhenOneMemberAddedAndPartitionsAddedTwoMembersTwoTopics",
     {T1: 6, T2: 7},
     {"A": ([T1], {T1: [0, 2], T2: [0]}), "B": ([T1, T2], {T1: [1], T2: [1, 2]}), "C": ([T1, T2], {})},
     {"A": {T1: [0, 2, 3, 4, 5]}, "B": {T1: [1], T2: [1, 2, 6]}, "C": {T2: [0, 3, 4, 5]}}),
    ("testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersThreeTopics",
     {T1: 3, T2: 8, T3: 3},
     {"A": ([T1, T3], {T1: [0, 1, 2], T3: [0, 1]}), "B": ([T2], {T2: [3, 4, 5, 6]})},
     {"A": {T1: [0, 1, 2], T3: [0, 1, 2]}, "B": {T2: [0, 1, 2, 3, 4, 5, 6, 7]}}),
    ("testReassignmentWhenOneSubscriptionRemovedAfterInitialAssignmentWithTwoMembersTwoTopics",
     {T1: 3, T2: 5},
     {"A": ([T1], {T1: [0, 2], T2: [1, 3]}), "B": ([T1, T2], {T1: [1], T2: [0, 2, 4]})},
     {"A": {T1: [0, 1, 2]}, "B": {T2: [0, 1, 2, 3, 4]}}),
    # equal subscriptions, but Kafka hands the heterogeneous builder a HETEROGENEOUS group spec
    ("testReassignmentWhenTopicPartitionsRunOutAndMembersHaveNoPartitions",
     {T1: 2, T2: 2, T3: 2},
     {"A": ([T1, T2, T3], {T1: [0, 1], T2: [0, 1], T3: [0, 1]}), "B": ([T1, T2, T3], {})},
     {"A": {T2: [0], T3: [0, 1]}, "B": {T1: [0, 1], T2: [1]}}),
    ("testFirstAssignmentWithTwoMembersIncludingOneWithoutSubscriptions",
     {T1: 3}, {"A": ([T1], {}), "B": ([], {})},
     {"A": {T1: [0, 1, 2]}, "B": {}}),
]


@pytest.mark.parametrize("name,topics,members,expected", HETERO, ids=[f"test_kafka_UniformHeterogeneousAssignmentBuilderTest_{c[0]}" for c in HETERO])
def test_kafka_UniformHeterogeneousAssignmentBuilderTest(name, topics, members, expected):
    out, r = _solve(_snap(topics, members), builder="heterogeneous")
    assert out == expected
    assert r.solver.method == "uniform"


def test_uniform_picks_the_builder_by_subscriptions_and_reports_it():
    same = _snap({T1: 4}, {"A": ([T1], {}), "B": ([T1], {})})
    mixed = _snap({T1: 4, T2: 2}, {"A": ([T1], {}), "B": ([T1, T2], {})})
    from stickyflow.greedy.uniform import assign_uniform
    from stickyflow.snapshot import as_snapshot

    assert assign_uniform(as_snapshot(same)).extra["builder"] == "homogeneous"
    assert assign_uniform(as_snapshot(mixed)).extra["builder"] == "heterogeneous"


def test_uniform_homogeneous_extra_slot_goes_by_visiting_order_not_ownership():
    # Kafka's quota: the first P % N members visited get the extra slot, even when a later member owns more;
    # so a balanced group can move a partition (the sticky assignor would not)
    doc = _snap({T1: 5}, {"A": ([T1], {T1: [0, 1]}), "B": ([T1], {T1: [2, 3, 4]})})
    out, r = _solve(doc)
    assert _sizes(out) == {"A": 3, "B": 2} and r.metrics["moves"] == 1
    assert stickyflow.assign(doc, "sticky").metrics["moves"] == 0


@pytest.mark.parametrize("protocol", ["eager", "cooperative"])
def test_uniform_cooperative_goes_through_the_same_round_split(protocol):
    doc = _snap({T1: 3, T2: 3}, {"A": ([T1, T2], {T1: [0, 2], T2: [0]}),
                                  "B": ([T1, T2], {T1: [1], T2: [1, 2]}), "C": ([T1, T2], {})})
    doc["protocol"] = protocol
    for m in doc["members"]:
        m["generation"] = 1
    j = stickyflow.assign(doc, "uniform").to_json()
    if protocol == "eager":
        assert j["revocations"] == {} and "target" not in j
    else:
        # C's partitions are revoked from A and B this round and given to nobody yet (KIP-429)
        assert j["target"]["C"] == {T2: [0, 2]} and j["assignment"]["C"] == {}
        assert j["revocations"] == {"A": {T2: [0]}, "B": {T2: [2]}}
        assert j["followup_rebalance_deadline_ms"] == 0


@pytest.mark.parametrize("scenario", ["fresh", "steady", "scale_out", "scale_in", "rolling_restart", "rack_outage",
                                      "mixed", "uniform"])
def test_uniform_on_generated_groups_is_valid_and_balanced_as_kafka_promises(scenario):
    # Kafka's checkValidityAndBalance on our generators: every answer passes the front door's check, and with
    # equal subscriptions the loads differ by at most one
    from stickyflow.datasets.generators import consumer_snapshot

    for seed in range(6):
        print("seed", seed)
        doc = consumer_snapshot(scenario, partitions=120, members=9, topics=4, seed=seed,
                                protocol=("eager", "cooperative")[seed % 2])
        out, r = _solve(doc)
        if r.solver.method == "uniform" and len({frozenset(m["subscription"]) for m in doc["members"]}) == 1:
            _kafka_balance(r.to_json().get("target", out))
