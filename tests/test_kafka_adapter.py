"""The kafka-python / aiokafka assignors, driven through the clients' real protocol classes, no broker.

A rebalance here does what kafka-python 3's ConsumerCoordinator does: every
member's ``metadata(topics)`` is encoded, decoded with
``ConsumerProtocolSubscription.decode`` and handed to the leader's ``assign``
as ``JoinGroupResponseMember`` objects; each returned assignment is encoded,
decoded with ``ConsumerProtocolAssignment.decode`` and passed to that member's
``on_assignment(assignment, generation)``. The aiokafka test does the same with
aiokafka's structs and ClusterMetadata.
"""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

pytest.importorskip("kafka", reason="kafka-python is not installed")

from kafka.cluster import ClusterMetadata  # noqa: E402
from kafka.protocol.consumer.group import JoinGroupResponse  # noqa: E402
from kafka.protocol.consumer.metadata import (  # noqa: E402
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)
from kafka.protocol.metadata import MetadataResponse  # noqa: E402

import stickyflow  # noqa: E402
from stickyflow.adapters import kafka as sk  # noqa: E402
from stickyflow.adapters.kafka import CooperativeOptimalAssignor, OptimalAssignor  # noqa: E402
from tests.checker import check_result  # noqa: E402

TOPICS = {"orders": 6, "payments": 4}


# --------------------------------------------------------------------------- a coordinator in miniature

def make_cluster(topics: dict[str, int], racks: tuple[str | None, ...] = (None, None, None)) -> ClusterMetadata:
    """kafka-python's ClusterMetadata fed a real MetadataResponse: partition p's single replica is on broker p % 3."""
    R = MetadataResponse
    T = R.MetadataResponseTopic
    P = T.MetadataResponsePartition
    brokers = [R.MetadataResponseBroker(version=8, node_id=i, host="127.0.0.1", port=9092 + i, rack=r)
               for i, r in enumerate(racks)]
    ts = [T(version=8, error_code=0, name=t, is_internal=False,
            partitions=[P(version=8, error_code=0, partition_index=p, leader_id=p % len(racks), leader_epoch=0,
                          replica_nodes=[p % len(racks)], isr_nodes=[p % len(racks)], offline_replicas=[])
                        for p in range(n)])
          for t, n in topics.items()]
    cluster = ClusterMetadata()
    cluster.update_metadata(R(version=8, throttle_time_ms=0, brokers=brokers, cluster_id="c", controller_id=0,
                              topics=ts))
    return cluster


class MiniGroup:
    """Members (id -> assignor), their subscriptions, and the group generation, as a coordinator keeps them."""

    def __init__(self, cluster, cls=OptimalAssignor, topics=TOPICS):
        self.cluster = cluster
        self.cls = cls
        self.topics = set(topics)
        self.members: dict[str, OptimalAssignor] = {}
        self.subscriptions: dict[str, set[str]] = {}
        self.generation = 0
        self.sent: dict[str, ConsumerProtocolSubscription] = {}

    def join(self, member_id: str, **kw) -> OptimalAssignor:
        self.members[member_id] = a = self.cls(**kw)
        self.subscriptions[member_id] = set(self.topics)
        return a

    def leave(self, member_id: str) -> None:
        del self.members[member_id]
        del self.subscriptions[member_id]

    def rebalance(self, leader: str | None = None) -> dict[str, dict[str, list[int]]]:
        """One JoinGroup/SyncGroup round; returns member -> topic -> partitions as the members decoded it."""
        self.generation += 1
        Member = JoinGroupResponse.JoinGroupResponseMember
        self.sent = {mid: ConsumerProtocolSubscription.decode(a.metadata(self.subscriptions[mid]))
                     for mid, a in self.members.items()}
        members = [Member(version=7, member_id=mid, group_instance_id=None, metadata=md)
                   for mid, md in self.sent.items()]
        leader = leader or sorted(self.members)[0]
        encoded = self.members[leader].assign(self.cluster, members)
        assert set(encoded) == set(self.members)
        out = {}
        for mid, assignment in encoded.items():
            decoded = ConsumerProtocolAssignment.decode(assignment.encode())
            self.members[mid].on_assignment(decoded, self.generation)
            out[mid] = {tp.topic: tp.partitions for tp in decoded.assigned_partitions}
        return out

    def owned(self) -> dict[str, dict[str, tuple[int, ...]]]:
        return {mid: dict(a.owned) for mid, a in self.members.items()}


def loads(assignment) -> list[int]:
    return [sum(len(p) for p in topics.values()) for topics in assignment.values()]


def complete(assignment, topics=TOPICS) -> bool:
    seen = sorted((t, p) for topics_ in assignment.values() for t, ps in topics_.items() for p in ps)
    return seen == sorted((t, p) for t, n in topics.items() for p in range(n))


def moved(before, after) -> int:
    """Partitions whose previous owner is still here and lost them."""
    n = 0
    for mid, topics in before.items():
        if mid not in after:
            continue
        for t, ps in topics.items():
            n += len(set(ps) - set(after[mid].get(t, ())))
    return n


def min_moves(before_loads: list[int], members: int, partitions: int) -> int:
    """Fewest moves for equal subscriptions: the extra partition of the ceiling goes to the fullest survivors."""
    q, r = divmod(partitions, members)
    kept = sum(min(load, q + (1 if i < r else 0)) for i, load in enumerate(sorted(before_loads, reverse=True)))
    return sum(before_loads) - kept


# --------------------------------------------------------------------------- the wire format

@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_bytes_match_kafka_python(version):
    owned = {"orders": [5, 1], "payments": [0]}
    ours = sk.encode_subscription(["orders", "payments"], owned=owned, generation=7, rack="r1", user_data=b"xy",
                                  version=version)
    Sub = ConsumerProtocolSubscription
    theirs = Sub(version=version, topics=["orders", "payments"], user_data=b"xy",
                 owned_partitions=[Sub.TopicPartition(topic=t, partitions=sorted(p)) for t, p in owned.items()],
                 generation_id=7, rack_id="r1").encode()
    assert ours == theirs
    d = sk.decode_subscription(ours)
    assert d["topics"] == ["orders", "payments"] and d["user_data"] == b"xy"
    assert d["owned"] == ({"orders": (1, 5), "payments": (0,)} if version >= 1 else {})
    assert d["generation"] == (7 if version >= 2 else -1)
    assert d["rack"] == ("r1" if version >= 3 else None)


def test_metadata_round_trip_carries_claims_generation_and_rack():
    a = OptimalAssignor(rack="eu-1a")
    a.on_assignment(ConsumerProtocolAssignment(3, [("orders", [2, 0]), ("gone", [1])], b""), 12)
    raw = a.metadata({"orders", "payments"})
    decoded = ConsumerProtocolSubscription.decode(raw)
    assert decoded.version == 3 and sorted(decoded.topics) == ["orders", "payments"]
    assert [(tp.topic, tp.partitions) for tp in decoded.owned_partitions] == [("orders", [0, 2])]
    assert decoded.generation_id == 12 and decoded.rack_id == "eu-1a"
    # the same facts in user_data, for clients that decode only version 0; "gone" is no longer subscribed
    for source in (decoded, raw):
        info = sk.read_member("m", source)
        assert dict(info.owned) == {"orders": (0, 2)} and info.generation == 12 and info.rack == "eu-1a"
    # a fresh member claims nothing and knows no generation
    fresh = sk.read_member("n", OptimalAssignor().metadata(["orders"]))
    assert fresh.generation is None and not fresh.owned and fresh.rack is None


def test_foreign_or_garbled_user_data_is_ignored():
    Sub = ConsumerProtocolSubscription
    plain = Sub(version=2, topics=["orders"], user_data=b"\x00\x01",
                owned_partitions=[Sub.TopicPartition(topic="orders", partitions=[3])], generation_id=4)
    info = sk.read_member("m", plain)
    assert dict(info.owned) == {"orders": (3,)} and info.generation == 4  # the standard fields count
    garbled = Sub(version=0, topics=["orders"], user_data=sk.USER_DATA_MAGIC + b"{not json")
    info = sk.read_member("m", garbled)
    assert not info.owned and info.generation is None and info.topics == ("orders",)


# --------------------------------------------------------------------------- eager rebalances

def test_fresh_group_gets_complete_balanced_optimal_assignment():
    g = MiniGroup(make_cluster(TOPICS))
    for m in ("m1", "m2", "m3"):
        g.join(m)
    out = g.rebalance()
    leader = g.members["m1"]
    check_result(leader.last_snapshot, leader.last_result)
    assert complete(out) and max(loads(out)) - min(loads(out)) <= 1
    assert leader.last_result.solver.status == "optimal" and leader.last_fallback is None
    assert leader.last_snapshot.protocol == "eager"
    assert {t: tp.partitions for t, tp in leader.last_snapshot.topics.items()} == TOPICS
    # members remember what they got, with the generation the client passed
    assert all(a.generation == 1 for a in g.members.values())
    assert {mid: {t: tuple(p) for t, p in ts.items()} for mid, ts in out.items()} == g.owned()
    # user_data carries the leader's epoch and status
    assert ConsumerProtocolAssignment.decode(
        leader.assign(g.cluster, [JoinGroupResponse.JoinGroupResponseMember(
            version=7, member_id="m1", group_instance_id=None, metadata=g.sent["m1"])])["m1"].encode()
    ).user_data.startswith(sk.USER_DATA_MAGIC)


def test_join_and_leave_move_the_fewest_partitions_and_survive_a_leader_change():
    g = MiniGroup(make_cluster(TOPICS))
    for m in ("m1", "m2", "m3"):
        g.join(m)
    first = g.rebalance(leader="m1")
    g.join("m4")
    second = g.rebalance(leader="m2")  # a different leader: the claims travel in the metadata
    check_result(g.members["m2"].last_snapshot, g.members["m2"].last_result)
    assert complete(second) and max(loads(second)) - min(loads(second)) <= 1
    assert moved(first, second) == min_moves(loads(first), 4, 10) == g.members["m2"].last_result.metrics["moves"]
    g.leave("m3")
    third = g.rebalance(leader="m4")  # the newcomer leads now
    assert complete(third) and max(loads(third)) - min(loads(third)) <= 1
    before = {m: second[m] for m in third}
    assert moved(before, third) == min_moves(loads(before), 3, 10) == 0


def test_leave_of_the_leader_keeps_everyone_else_in_place():
    g = MiniGroup(make_cluster({"t": 12}), topics={"t": 12})
    for m in ("a", "b", "c", "d"):
        g.join(m)
    first = g.rebalance(leader="a")
    g.leave("a")
    second = g.rebalance(leader="b")
    assert complete(second, {"t": 12})
    for m in ("b", "c", "d"):
        assert set(first[m]["t"]) <= set(second[m]["t"])


def test_kip341_higher_generation_wins_a_conflicting_claim():
    cluster = make_cluster({"t": 4})
    g = MiniGroup(cluster, topics={"t": 4})
    a, b = g.join("a"), g.join("b")
    # "a" is a zombie from generation 3; "b" got the same partitions in generation 5
    a.on_assignment(ConsumerProtocolAssignment(3, [("t", [0, 1])], b""), 3)
    b.on_assignment(ConsumerProtocolAssignment(3, [("t", [0, 1, 2, 3])], b""), 5)
    g.generation = 5
    out = g.rebalance(leader="a")
    snap, result = a.last_snapshot, a.last_result
    check_result(snap, result)
    owners = stickyflow.previous_owners(snap).owner["t"].tolist()
    ids = [m.id for m in snap.members]
    assert [ids[o] for o in owners] == ["b", "b", "b", "b"]
    assert loads(out) == [2, 2] and result.metrics["moves"] == 2  # b gives up two; a's stale claims count for nothing


def test_equal_generations_conflict_has_no_winner():
    g = MiniGroup(make_cluster({"t": 2}), topics={"t": 2})
    a, b = g.join("a"), g.join("b")
    a.on_assignment(ConsumerProtocolAssignment(3, [("t", [0, 1])], b""), 4)
    b.on_assignment(ConsumerProtocolAssignment(3, [("t", [1])], b""), 4)
    g.generation = 4
    g.rebalance()
    owners = stickyflow.previous_owners(a.last_snapshot).owner["t"].tolist()
    assert owners[1] == -1 and owners[0] == 0


def test_racks_come_from_the_members_and_the_cluster(seed):
    rng = random.Random(seed)
    racks = ("r0", "r1", "r2")
    cluster = make_cluster({"t": 9}, racks=racks)
    g = MiniGroup(cluster, topics={"t": 9})
    order = list(racks)
    rng.shuffle(order)
    for i, r in enumerate(order):
        g.join(f"m{i}", rack=r)
    out = g.rebalance()
    leader = g.members["m0"]
    assert leader.last_snapshot.rack_aware
    assert leader.last_snapshot.topics["t"].racks[4] == frozenset({"r1"})
    assert leader.last_result.metrics["cross_rack"] == 0
    for i, r in enumerate(order):  # broker p % 3 holds partition p, on rack r{p % 3}
        assert all(f"r{p % 3}" == r for p in out[f"m{i}"]["t"])


def test_unknown_topics_and_empty_subscriptions(seed):
    g = MiniGroup(make_cluster({"t": 3}), topics={"t": 3})
    g.join("a")
    g.join("b")
    g.subscriptions["b"] = {"not-yet-created"}
    out = g.rebalance()
    assert out["a"] == {"t": [0, 1, 2]} and out["b"] == {}
    check_result(g.members["a"].last_snapshot, g.members["a"].last_result)


# --------------------------------------------------------------------------- cooperative

def test_cooperative_revocation_never_gives_a_claimed_partition_to_a_new_owner(seed):
    rng = random.Random(seed)
    topics = {"orders": rng.randint(4, 12), "payments": rng.randint(1, 8)}
    total = sum(topics.values())
    g = MiniGroup(make_cluster(topics), cls=CooperativeOptimalAssignor, topics=topics)
    for m in ("m1", "m2", "m3"):
        g.join(m)
    settled = g.rebalance()
    assert complete(settled, topics)
    g.join("m4")
    rounds = 0
    while True:
        rounds += 1
        lid = rng.choice(sorted(g.members))
        out = g.rebalance(leader=lid)
        leader = g.members[lid]
        claims = {mid: {(tp.topic, p) for tp in md.owned_partitions for p in tp.partitions}
                  for mid, md in g.sent.items()}  # what each member told the leader it owns
        check_result(leader.last_snapshot, leader.last_result)
        assert leader.last_snapshot.protocol == "cooperative"
        for mid, ts in out.items():
            got = {(t, p) for t, ps in ts.items() for p in ps}
            for other, claimed in claims.items():
                if other != mid:
                    assert not got & claimed, f"{mid} was given {got & claimed}, still claimed by {other}"
        if complete(out, topics):
            break
        assert leader.last_result.followup_rebalance_deadline_ms is not None  # someone must revoke and rejoin
        assert rounds < 4
    assert rounds == 2  # one round of revocations, one to hand the partitions over
    assert max(loads(out)) - min(loads(out)) <= 1
    assert moved(settled, out) == min_moves(loads(settled), 4, total)


def test_cooperative_supports_only_the_cooperative_protocol():
    from kafka.coordinator.assignors.abstract import RebalanceProtocol

    assert CooperativeOptimalAssignor().supported_protocols() == [RebalanceProtocol.COOPERATIVE]
    assert OptimalAssignor().supported_protocols() == [RebalanceProtocol.EAGER]
    assert OptimalAssignor.name != CooperativeOptimalAssignor.name


def test_a_real_kafka_consumer_accepts_the_instances():
    from kafka import KafkaConsumer
    from kafka.errors import KafkaConfigurationError

    consumer = KafkaConsumer(bootstrap_servers="127.0.0.1:9", group_id="g", api_version=(3, 0),
                             partition_assignment_strategy=[CooperativeOptimalAssignor(rack="r1")])
    try:
        assert consumer._coordinator._rebalance_protocol == 1  # COOPERATIVE
    finally:
        consumer.close(timeout_ms=100)
    with pytest.raises(KafkaConfigurationError):
        KafkaConsumer(bootstrap_servers="127.0.0.1:9", group_id="g", api_version=(3, 0),
                      partition_assignment_strategy=[CooperativeOptimalAssignor(), OptimalAssignor()])


# --------------------------------------------------------------------------- never fail the rebalance

@pytest.mark.parametrize("cls", [OptimalAssignor, CooperativeOptimalAssignor])
def test_optimizer_failure_falls_back_to_a_greedy_assignor(monkeypatch, cls):
    import stickyflow.formulations.consumer.opt as cf

    def broken(snapshot, options):
        raise RuntimeError("solver exploded")

    monkeypatch.setattr(cf, "solve_consumer", broken)
    g = MiniGroup(make_cluster(TOPICS), cls=cls)
    for m in ("m1", "m2", "m3"):
        g.join(m)
    out = g.rebalance()
    leader = g.members["m1"]
    assert complete(out) and max(loads(out)) - min(loads(out)) <= 1
    check_result(leader.last_snapshot, leader.last_result)
    assert leader.last_result.solver.status in ("fallback", "heuristic")
    assert leader.last_result.assignor in ("optimal", "sticky", "range")
    assert "solver exploded" in (leader.last_fallback or "")


@pytest.mark.parametrize("cls", [OptimalAssignor, CooperativeOptimalAssignor])
def test_when_stickyflow_itself_fails_an_emergency_split_keeps_the_group_going(monkeypatch, cls):
    g = MiniGroup(make_cluster(TOPICS), cls=cls)
    for m in ("m1", "m2", "m3"):
        g.join(m)
    first = g.rebalance()

    def broken(*args, **kwargs):
        raise RuntimeError("no stickyflow today")

    monkeypatch.setattr(sk.stickyflow, "assign", broken)
    g.join("m4")
    claims = {m: {(t, p) for t, ps in a.owned.items() for p in ps} for m, a in g.members.items()}
    out = g.rebalance(leader="m2")
    leader = g.members["m2"]
    assert leader.last_result is None and "no stickyflow today" in leader.last_fallback
    given = [(t, p) for ts in out.values() for t, ps in ts.items() for p in ps]
    assert len(given) == len(set(given))  # never twice
    if cls is OptimalAssignor:
        assert complete(out)
    else:  # cooperative: a claimed partition stays with its claimant, nobody else gets it
        for mid, ts in out.items():
            got = {(t, p) for t, ps in ts.items() for p in ps}
            assert all(not got & c for other, c in claims.items() if other != mid)
        assert complete(first)


# --------------------------------------------------------------------------- packaging

def test_missing_clients_raise_backend_missing_with_the_extra():
    code = ("import sys\n"
            "sys.modules['kafka'] = None; sys.modules['aiokafka'] = None\n"
            "import stickyflow\n"
            "try:\n"
            "    import stickyflow.adapters.kafka\n"
            "except stickyflow.BackendMissingError as e:\n"
            "    print('missing:', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "missing:" in out and "stickyflow[kafka]" in out


# --------------------------------------------------------------------------- aiokafka

def _aiokafka_cluster(topics: dict[str, int]):
    from aiokafka.cluster import ClusterMetadata as AioCluster
    from aiokafka.protocol.metadata import MetadataResponse_v1

    response = MetadataResponse_v1(
        brokers=[(i, "127.0.0.1", 9092 + i, None) for i in range(3)], controller_id=0,
        topics=[(0, t, False, [(0, p, p % 3, [p % 3], [p % 3]) for p in range(n)]) for t, n in topics.items()])
    cluster = AioCluster()
    cluster.update_metadata(response)
    return cluster


@pytest.mark.parametrize("cls", [OptimalAssignor, CooperativeOptimalAssignor])
def test_aiokafka_structs_and_cluster(cls, caplog):
    pytest.importorskip("aiokafka", reason="aiokafka is not installed")
    from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment, ConsumerProtocolMemberMetadata

    cluster = _aiokafka_cluster(TOPICS)
    members = {m: cls() for m in ("m1", "m2", "m3")}

    def rebalance(leader):
        # aiokafka decodes the version-0 prefix only and never passes a generation to the assignor
        metadata = {m: ConsumerProtocolMemberMetadata.decode(a.metadata(set(TOPICS))) for m, a in members.items()}
        encoded = members[leader].assign(cluster, metadata)
        out = {}
        for m, asg in encoded.items():
            assert isinstance(asg, ConsumerProtocolMemberAssignment)
            decoded = ConsumerProtocolMemberAssignment.decode(asg.encode())
            members[m].on_assignment(decoded)
            out[m] = {t: list(ps) for t, ps in decoded.assignment}
        return out

    first = rebalance("m1")
    assert complete(first) and max(loads(first)) - min(loads(first)) <= 1
    assert all(a.generation == 0 for a in members.values())  # the leader's epoch stands in
    check_result(members["m1"].last_snapshot, members["m1"].last_result)
    assert members["m1"].last_snapshot.protocol == "eager"  # no KIP-429 in aiokafka
    if cls is CooperativeOptimalAssignor:
        assert "eager" in caplog.text
    members["m4"] = cls()
    second = rebalance("m3")
    assert complete(second)
    assert moved(first, second) == min_moves(loads(first), 4, 10)
    assert all(a.generation == 1 for a in members.values())
