"""Cooperative rounds (KIP-429) as the revised spec has them, for every consumer assignor.

The rule: a partition that someone claims goes this round only to its valid previous owner (KIP-341); a
target that sends it anywhere else withholds it; revocations are owned minus assigned. Kafka's
``AbstractStickyAssignorTest.testSubscriptionNotEqualAndAssignSamePartitionWith3Generation`` found the
hole this closes: a stale claimant was handed a partition while its valid owner was told to revoke it.
"""

from __future__ import annotations

import itertools
import random

import pytest

import stickyflow
from checker import check_cooperative_round, check_result

CONSUMER_ASSIGNORS = ["optimal", "sticky", "range", "roundrobin"]


def _three_generations(gens: tuple[int, int, int], protocol: str = "cooperative") -> dict:
    """Kafka's scenario: ``topic`` (6 partitions) claimed by three consumers at three generations, every one of
    them claiming partition 2; a fourth consumer owns the one partition of ``topic1``."""
    return {
        "format": "stickyflow.snapshot/1", "kind": "consumer", "protocol": protocol, "now_ms": 1000,
        "topics": {"topic": {"partitions": 6}, "topic1": {"partitions": 1}},
        "members": [
            {"id": "consumer1", "subscription": ["topic"], "generation": gens[0], "owned": {"topic": [0, 2]}},
            {"id": "consumer2", "subscription": ["topic"], "generation": gens[1], "owned": {"topic": [1, 2, 3]}},
            {"id": "consumer3", "subscription": ["topic"], "generation": gens[2], "owned": {"topic": [2, 4, 5]}},
            {"id": "consumer4", "subscription": ["topic1"], "generation": 2, "owned": {"topic1": [0]}},
        ],
    }


@pytest.mark.parametrize("assignor", CONSUMER_ASSIGNORS)
@pytest.mark.parametrize("gens", list(itertools.permutations((1, 2, 3))), ids=lambda g: "".join(map(str, g)))
def test_kafka_AbstractStickyAssignorTest_testSubscriptionNotEqualAndAssignSamePartitionWith3Generation(
        assignor, gens):
    snap = stickyflow.parse_snapshot(_three_generations(gens))
    result = stickyflow.assign(snap, assignor)
    check_result(snap, result)
    check_cooperative_round(snap, result)
    owner_of_2 = ["consumer1", "consumer2", "consumer3"][gens.index(3)]
    for mid, topics in result.assignment.items():
        if 2 in topics.get("topic", ()):
            assert mid == owner_of_2, f"topic-2 handed to {mid}, its valid owner is {owner_of_2}"
    # Kafka's own assertions, on the whole decision: no partition twice, every member 1 or 2 partitions
    everything = [(t, p) for topics in result.target.values() for t, ps in topics.items() for p in ps]
    assert len(everything) == len(set(everything)) == 7
    if assignor in ("optimal", "sticky"):
        assert all(1 <= sum(len(ps) for ps in topics.values()) <= 2 for topics in result.target.values())


@pytest.mark.parametrize("assignor", CONSUMER_ASSIGNORS)
def test_tied_claims_are_withheld_from_everyone(assignor):
    """Two claims of equal generation: nobody is the valid owner, so the partition waits a round."""
    snap = stickyflow.parse_snapshot({
        "format": "stickyflow.snapshot/1", "kind": "consumer", "protocol": "cooperative", "now_ms": 7,
        "topics": {"t": {"partitions": 2}},
        "members": [{"id": "a", "subscription": ["t"], "generation": 5, "owned": {"t": [0, 1]}},
                    {"id": "b", "subscription": ["t"], "generation": 5, "owned": {"t": [1]}}]})
    result = stickyflow.assign(snap, assignor)
    check_result(snap, result)
    assert all(1 not in topics.get("t", ()) for topics in result.assignment.values())
    assert any(1 in topics.get("t", ()) for topics in result.target.values())
    assert result.revocations["a"]["t"] == (1,) and result.revocations["b"]["t"] == (1,)
    assert result.followup_rebalance_deadline_ms == 7


@pytest.mark.parametrize("assignor", CONSUMER_ASSIGNORS)
def test_unclaimed_partitions_go_at_once(assignor):
    snap = stickyflow.parse_snapshot({
        "format": "stickyflow.snapshot/1", "kind": "consumer", "protocol": "cooperative",
        "topics": {"t": {"partitions": 4}},
        "members": [{"id": "a", "subscription": ["t"]}, {"id": "b", "subscription": ["t"]}]})
    result = stickyflow.assign(snap, assignor)
    check_result(snap, result)
    assert result.assignment == result.target
    assert not result.revocations and result.followup_rebalance_deadline_ms is None


def test_target_is_in_the_json():
    snap = stickyflow.parse_snapshot(_three_generations((1, 2, 3)))
    doc = stickyflow.assign(snap).to_json()
    assert set(doc["target"]) == {"consumer1", "consumer2", "consumer3", "consumer4"}
    eager = stickyflow.assign(stickyflow.parse_snapshot(_three_generations((1, 2, 3), "eager"))).to_json()
    assert "target" not in eager or eager["target"] is None


def _random_group(rng: random.Random) -> dict:
    topics = {f"t{j}": {"partitions": rng.randint(1, 6)} for j in range(rng.randint(1, 3))}
    members = []
    for i in range(rng.randint(1, 5)):
        owned = {t: rng.sample(range(spec["partitions"] + 1), rng.randint(0, 2)) for t, spec in topics.items()
                 if rng.random() < 0.6}
        members.append({"id": f"m{i}", "subscription": rng.sample(sorted(topics), rng.randint(1, len(topics))),
                        "generation": rng.randint(1, 3), "owned": owned})
    return {"format": "stickyflow.snapshot/1", "kind": "consumer", "protocol": "cooperative", "now_ms": 5,
            "topics": topics, "members": members}


@pytest.mark.parametrize("assignor", CONSUMER_ASSIGNORS)
def test_no_partition_ever_has_two_consumers(assignor, seed):
    """Random groups with conflicting claims at random generations (seeded): during the round, a partition is
    consumed by its holder from the snapshot (until it revokes) and by whoever is assigned it; never two."""
    rng = random.Random(seed)
    for _ in range(150):
        snap = stickyflow.parse_snapshot(_random_group(rng))
        result = stickyflow.assign(snap, assignor)
        check_result(snap, result)
        for m in snap.members:
            keeps = {(t, p) for t, ps in m.owned.items() for p in ps} - {
                (t, p) for t, ps in result.revocations.get(m.id, {}).items() for p in ps}
            for other, topics in result.assignment.items():
                if other != m.id:
                    assert not keeps & {(t, p) for t, ps in topics.items() for p in ps}, (m.id, other)
