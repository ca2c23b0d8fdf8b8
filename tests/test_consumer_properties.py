"""Properties of every consumer assignor over random groups (hypothesis, ``tests/strategies.py``).

* every registered consumer assignor returns a result that passes ``check_result``;
* with equal subscriptions the optimum is balanced within one and keeps as many
  partitions as any balanced assignment can (the closed-form bound below);
* no assignor, ours or kafka-python's, reaches a smaller sum of squared loads
  than ``optimal``; where kafka-python's sticky is as balanced, it never has a
  lower secondary cost (so, without rack costs, never fewer moves);
* kafka-python's peers behave as ``stickyflow.adapters.peers`` documents.
"""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings

import stickyflow
from stickyflow.adapters.peers import (PeerError, PeerInvalidError, PeerUnsupportedError, peer_names,
                                       run_peer)
from stickyflow.check.consumer import inspect_consumer
from stickyflow.greedy.range_roundrobin import range_uses_racks
from stickyflow.model.consumer import ConsumerSnapshot
from stickyflow.model.consumer_claims import previous_owners
from stickyflow.registry import available_assignors, get_assignor
from tests.checker import check_result
from tests.strategies import consumer_snapshots

# STICKYFLOW_EXAMPLES=2000 for a long soak; the default keeps the suite fast
SETTINGS = settings(max_examples=int(os.environ.get("STICKYFLOW_EXAMPLES", 80)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(autouse=True)
def _quiet_kafka():
    # kafka-python logs a warning for every subscribed topic that does not exist; the groups do that on purpose
    logger = logging.getLogger("kafka")
    level = logger.level
    logger.setLevel(logging.ERROR)
    yield
    logger.setLevel(level)


# stickyflow's own consumer assignors: one that does not import is a bug, never a skip
BUILTIN = ("optimal", "range", "roundrobin", "sticky")


def test_builtin_assignors_are_registered_and_import():
    assert set(BUILTIN) <= set(available_assignors("consumer"))
    for name in BUILTIN:
        assert callable(get_assignor(name, "consumer").load()), name  # an ImportError fails here


def measure(snap: ConsumerSnapshot, assignment) -> dict:
    violations, metrics = inspect_consumer(snap, assignment)
    assert not violations, violations
    cfg = snap.config
    metrics["cost"] = cfg.non_overlap_cost * metrics["moves"] + cfg.traffic_cost * (metrics["cross_rack"] or 0)
    return metrics


def optimal(snap: ConsumerSnapshot):
    result = stickyflow.assign(snap, "optimal", fallback=False)
    check_result(snap, result)
    assert result.solver.status == "optimal", result.solver
    return result


def rack_costs_apply(snap: ConsumerSnapshot) -> bool:
    return snap.rack_aware and snap.config.traffic_cost > 0


def fewest_moves(snap: ConsumerSnapshot) -> int:
    """With equal subscriptions: the fewest moves of any balanced assignment.

    Each of the M members keeps at most q = P // M of the partitions it validly
    owned, and r = P % M of them one more, so at most
    sum_i min(owned_i, q) + min(r, #{i : owned_i > q}) stay; every other
    validly owned partition (those of topics nobody reads included) moves.
    """
    prev = previous_owners(snap)
    M = len(snap.members)
    readable = set(snap.assignable_topics())
    P = sum(snap.topics[t].partitions for t in readable)
    owned = np.zeros(M, dtype=np.int64)
    valid = 0
    for t, owner in prev.owner.items():
        held = owner[owner >= 0]
        valid += len(held)
        if t in readable:
            owned += np.bincount(held, minlength=M)
    q, r = divmod(P, M)
    kept = int(np.minimum(owned, q).sum()) + min(r, int((owned > q).sum()))
    return valid - kept


# --------------------------------------------------------------------------- every assignor is valid

@pytest.mark.parametrize("name", available_assignors("consumer"))
@SETTINGS
@given(snap=consumer_snapshots())
def test_every_assignor_is_valid(name, snap):
    result = stickyflow.assign(snap, name, fallback=False)
    check_result(snap, result)
    assert result.assignor == name
    if get_assignor(name, "consumer").optimizing:
        assert result.solver.status == "optimal", result.solver


# --------------------------------------------------------------------------- equal subscriptions

@SETTINGS
@given(snap=consumer_snapshots(equal_subscriptions=True, racks=False, min_members=1))
def test_equal_subscriptions_balanced_with_fewest_moves(snap):
    assume(snap.config.non_overlap_cost > 0)  # with free moves any balanced answer is optimal
    result = optimal(snap)
    m = measure(snap, result.target)
    assert m["imbalance"] <= 1
    assert m["moves"] == fewest_moves(snap)


@SETTINGS
@given(snap=consumer_snapshots(equal_subscriptions=True, min_members=1))
def test_equal_subscriptions_with_racks_still_balanced(snap):
    m = measure(snap, optimal(snap).target)
    assert m["imbalance"] <= 1
    assert m["moves"] >= fewest_moves(snap)  # rack costs may buy locality with extra moves, never fewer than the bound
    if not rack_costs_apply(snap) and snap.config.non_overlap_cost > 0:
        assert m["moves"] == fewest_moves(snap)


# --------------------------------------------------------------------------- optimal vs everyone else

@SETTINGS
@given(snap=consumer_snapshots(min_members=1))
def test_optimal_is_most_balanced(snap):
    best = measure(snap, optimal(snap).target)
    for name in available_assignors("consumer"):
        if name == "optimal":
            continue
        other = stickyflow.assign(snap, name, fallback=False)
        check_result(snap, other)
        assert best["sum_squared_loads"] <= measure(snap, other.target)["sum_squared_loads"], name
        assert best["max_load"] <= measure(snap, other.target)["max_load"], name
    for name in peer_names():
        try:
            theirs = run_peer(snap, name)
        except PeerError:
            continue  # documented kafka-python failures; tested below
        assert best["sum_squared_loads"] <= measure(snap, theirs)["sum_squared_loads"], f"kafka-python {name}"


@SETTINGS
@given(snap=consumer_snapshots(min_members=1))
def test_optimal_never_costs_more_than_kafka_python_sticky(snap):
    try:
        theirs = measure(snap, run_peer(snap, "sticky"))
    except PeerError:
        assume(False)  # kafka-python's documented crashes and invalid answers
    ours = measure(snap, optimal(snap).target)
    assert ours["sum_squared_loads"] <= theirs["sum_squared_loads"]
    if ours["sum_squared_loads"] == theirs["sum_squared_loads"]:
        assert ours["cost"] <= theirs["cost"]
        if not rack_costs_apply(snap) and snap.config.non_overlap_cost > 0:
            assert ours["moves"] <= theirs["moves"]


@SETTINGS
@given(snap=consumer_snapshots(equal_subscriptions=True, racks=False, min_members=1))
def test_optimal_never_moves_more_than_kafka_python_sticky_at_equal_subscriptions(snap):
    """KIP-54's home ground: identical subscriptions, where kafka-python's sticky is balanced too."""
    assume(snap.config.non_overlap_cost > 0)
    try:
        theirs = measure(snap, run_peer(snap, "sticky"))
    except PeerError:
        assume(False)
    ours = measure(snap, optimal(snap).target)
    assert theirs["imbalance"] <= 1
    assert ours["moves"] <= theirs["moves"]


# --------------------------------------------------------------------------- kafka-python peers

def snapshot(members, topics=None, **kw):
    doc = {"format": "stickyflow.snapshot/1", "kind": "consumer",
           "topics": topics or {"t": {"partitions": 4}}, "members": members}
    doc.update(kw)
    return stickyflow.parse_snapshot(doc)


@SETTINGS
@given(snap=consumer_snapshots(equal_subscriptions=True, claims=False))
def test_peers_range_and_roundrobin_match_ours_without_static_members(snap):
    """Same algorithm, same answer (static members aside: see the interleaving test)."""
    assume(all(m.instance_id is None for m in snap.members))
    for name in ("range", "roundrobin"):
        ours = stickyflow.assign(snap, name, fallback=False)
        check_result(snap, ours)
        if name == "range" and range_uses_racks(snap):
            continue  # kafka-python's range predates KIP-881: the same layout only where racks do not matter
        assert run_peer(snap, name) == {m: {t: list(p) for t, p in a.items()} for m, a in ours.target.items()}, name


@pytest.mark.parametrize("name", ["range", "roundrobin"])
def test_peers_match_ours_with_static_members_first(name):
    """Kafka (and kafka-python, when static members are not interleaved) order static members first."""
    snap = snapshot([{"id": "a", "subscription": ["t"]}, {"id": "b", "instance_id": "y", "subscription": ["t"]},
                     {"id": "c", "instance_id": "x", "subscription": ["t"]}], {"t": {"partitions": 3}})
    ours = stickyflow.assign(snap, name, fallback=False)
    check_result(snap, ours)
    assert run_peer(snap, name) == {"a": {"t": [2]}, "b": {"t": [1]}, "c": {"t": [0]}}
    assert ours.to_json()["assignment"] == run_peer(snap, name)


def test_peer_roundrobin_refuses_mixed_subscriptions():
    snap = snapshot([{"id": "C0", "subscription": ["t0"]}, {"id": "C1", "subscription": ["t0", "t1"]},
                     {"id": "C2", "subscription": ["t0", "t1", "t2"]}],
                    {"t0": {"partitions": 1}, "t1": {"partitions": 2}, "t2": {"partitions": 3}})
    with pytest.raises(PeerUnsupportedError, match="roundrobin"):
        run_peer(snap, "roundrobin")
    assert run_peer(snap, "range") == {"C0": {"t0": [0]}, "C1": {"t1": [0]}, "C2": {"t1": [1], "t2": [0, 1, 2]}}


def test_kafka_python_roundrobin_really_crashes_on_mixed_subscriptions():
    """What the refusal protects against: kafka-python's own skip loop raises KeyError."""
    from stickyflow.adapters import peers

    snap = snapshot([{"id": "C0", "subscription": ["t0"]}, {"id": "C1", "subscription": ["t0", "t1"]}],
                    {"t0": {"partitions": 1}, "t1": {"partitions": 2}})
    ClusterMetadata, JoinGroupResponse, Subscription, MetadataResponse, TopicPartition = peers.kafka_classes()
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    cluster = peers._cluster(snap, ClusterMetadata, MetadataResponse)
    members = [JoinGroupResponse.JoinGroupResponseMember(
        member_id=m.id, group_instance_id=None,
        metadata=Subscription.decode(RoundRobinPartitionAssignor.metadata(list(m.subscription)).encode()))
        for m in snap.members]
    with pytest.raises(KeyError):
        RoundRobinPartitionAssignor.assign(cluster, members)


def test_peers_drop_members_when_static_and_dynamic_interleave():
    snap = snapshot([{"id": "a", "instance_id": "ia", "subscription": ["t"]}, {"id": "b", "subscription": ["t"]},
                     {"id": "c", "instance_id": "ic", "subscription": ["t"]}])
    for name in ("range", "roundrobin"):
        out = run_peer(snap, name)
        assert out["a"] == {}, name  # kafka-python's unsorted groupby loses the first static run
        assert sum(len(p) for topics in out.values() for p in topics.values()) == 4


def test_peer_sticky_claims_first_claimant_wins_ties():
    members = [{"id": "a", "subscription": ["t"], "generation": 2, "owned": {"t": [0, 1]}},
               {"id": "b", "subscription": ["t"], "generation": 2, "owned": {"t": [0, 2]}}]
    assert run_peer(snapshot(members), "sticky") == {"a": {"t": [0, 1]}, "b": {"t": [2, 3]}}
    assert run_peer(snapshot(members[::-1]), "sticky") == {"b": {"t": [0, 2]}, "a": {"t": [1, 3]}}
    for m in members:
        m["generation"] = 0  # a falsy generation: the last claimant wins instead
    assert run_peer(snapshot(members), "sticky") == {"a": {"t": [1, 3]}, "b": {"t": [0, 2]}}


def test_peer_sticky_gives_partitions_back_to_unsubscribed_runner_up():
    members = [{"id": "a", "subscription": ["u"], "generation": 1, "owned": {"t": [0]}},
               {"id": "b", "subscription": ["t"], "generation": 2, "owned": {"t": [0, 1, 2, 3]}},
               {"id": "c", "subscription": ["t", "u"]}]
    snap = snapshot(members, {"t": {"partitions": 4}, "u": {"partitions": 1}})
    with pytest.raises(PeerInvalidError) as err:
        run_peer(snap, "sticky")
    assert [v.code for v in err.value.violations] == ["UNSUBSCRIBED_TOPIC"]
    assert err.value.assignment["a"]["t"] == [0]
    assert run_peer(snap, "sticky", check=False)["a"]["t"] == [0]
    members[0]["subscription"] = []  # the runner-up reads nothing: kafka-python crashes instead
    with pytest.raises(PeerError, match="KeyError"):
        run_peer(snapshot(members, {"t": {"partitions": 4}, "u": {"partitions": 1}}), "sticky")
    result = optimal(snap)
    assert result.metrics["imbalance"] <= 1 and "t" not in result.target["a"]


def test_peer_sticky_keeps_what_it_can():
    """KIP-54 example 3 as kafka-python plays it: C2 joins, one partition moves."""
    members = [{"id": "C0", "subscription": ["t0", "t1"], "generation": 1, "owned": {"t0": [0], "t1": [0]}},
               {"id": "C1", "subscription": ["t0", "t1"], "generation": 1, "owned": {"t0": [1], "t1": [1]}},
               {"id": "C2", "subscription": ["t0", "t1"]}]
    snap = snapshot(members, {"t0": {"partitions": 2}, "t1": {"partitions": 2}})
    m = measure(snap, run_peer(snap, "sticky"))
    assert (m["moves"], m["imbalance"]) == (1, 1)


def test_peer_errors():
    snap = snapshot([{"id": "a", "subscription": ["t"]}])
    with pytest.raises(stickyflow.UnknownAssignorError, match="known: range, roundrobin, sticky"):
        run_peer(snap, "cooperative")
    assert run_peer(snapshot([]), "sticky") == {}
    assert peer_names() == ["range", "roundrobin", "sticky"]
    assert issubclass(PeerInvalidError, stickyflow.StickyflowError)
