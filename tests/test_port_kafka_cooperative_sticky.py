"""Apache Kafka's ``CooperativeStickyAssignorTest`` (clients), ported: the scenarios of
``AbstractStickyAssignorTest`` under the cooperative protocol, and the cooperative assignor's own.

The machinery lives in ``test_port_kafka_sticky.py``. Under ``"protocol": "cooperative"`` a round's
``assignment`` is what Kafka's ``CooperativeStickyAssignor.assignPartitions`` returns (the decision less the
partitions that must first be revoked); every round passes the spec's round rules
(``checker.check_cooperative_round``, which also gives Kafka's ``verifyCooperativeValidity``: no partition is
revoked and handed to someone else in one round). Kafka's cooperative ``verifyValidityAndBalance`` plays
follow-up rebalances, members owning what they were just given, until nothing is revoked (at most four), and
checks the settled assignment; ``Play.verify`` does the same, and the assertions after it read the settled
assignment, as Kafka's do.

Not expressible in a snapshot (they test the subscription's wire encoding, which a snapshot holds already
decoded): ``testEncodeAndDecodeGeneration``, ``testDecodeGeneration``, ``testMemberDataWithInconsistentData``,
``testMemberDataWithEmptyPartitionsAndEqualGeneration``, ``testMemberDataWithEmptyPartitionsAndHigherGeneration``
and the inherited ``testMemberData``.
"""

from __future__ import annotations

import pytest

from test_port_kafka_sticky import (NONE, SHARED_OWN, Play, _testReassignmentWithRandomSubscriptionsAndChanges,
                                    _testSubscriptionNotEqualAndAssignSamePartitionWith3Generation, abstract_cases,
                                    generation_cases, large_cases, owned_doc, random_rounds_cases, run_large, tps)


def _testUniformSubscriptionTransferOwnershipListIsRight(p: Play):
    """Replication factor 1 over two racks (partition ``i`` on rack ``a`` when even, ``b`` when odd); each
    consumer owns two partitions, one of them on the other consumer's rack: both move."""
    topic = {"partitions": 4, "racks": [["a"], ["b"], ["a"], ["b"]]}
    members = [{"id": "c0", "subscription": ["topic1"], "rack": "a", "generation": 1,
                "owned": owned_doc(tps("topic1-0, topic1-1"))},
               {"id": "c1", "subscription": ["topic1"], "rack": "b", "generation": 1,
                "owned": owned_doc(tps("topic1-2, topic1-3"))}]
    r = p.assign({"topic1": topic}, members)
    if p.assignor == "sticky":
        assert len(r.target["c0"] - r.now["c0"]) + len(r.target["c1"] - r.now["c1"]) == 2
    # both assignors: every partition ends on its replica's rack, and the two misplaced ones wait a round
    assert r.target == {"c0": tps("topic1-0, topic1-2"), "c1": tps("topic1-1, topic1-3")}
    assert r.now == {"c0": tps("topic1-0"), "c1": tps("topic1-3")}


COOPERATIVE_OWN = [(_testUniformSubscriptionTransferOwnershipListIsRight, NONE)]


@pytest.mark.parametrize(("scenario", "rack", "assignor"), abstract_cases(SHARED_OWN + COOPERATIVE_OWN))
def test_kafka_CooperativeStickyAssignorTest(scenario, rack, assignor):
    scenario(Play(assignor, "cooperative", rack))


@pytest.mark.parametrize(("gens", "assignor"), generation_cases())
def test_kafka_CooperativeStickyAssignorTest_testSubscriptionNotEqualAndAssignSamePartitionWith3Generation(
        gens, assignor):
    _testSubscriptionNotEqualAndAssignSamePartitionWith3Generation(Play(assignor, "cooperative"), gens)


@pytest.mark.parametrize(("case", "rack", "assignor"), large_cases("cooperative"))
def test_kafka_CooperativeStickyAssignorTest_large(case, rack, assignor):
    run_large(case, Play(assignor, "cooperative", rack))


@pytest.mark.parametrize(("rack", "assignor"), random_rounds_cases("cooperative"))
def test_kafka_CooperativeStickyAssignorTest_random_rounds(rack, assignor):
    _testReassignmentWithRandomSubscriptionsAndChanges(Play(assignor, "cooperative", rack), rounds=100)
