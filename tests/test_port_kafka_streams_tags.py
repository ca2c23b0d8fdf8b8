"""Kafka Streams' ClientTagAwareStandbyTaskAssignorTest (KIP-708) as our own tests.

Kafka tests its tag-aware standby assignor alone: actives are placed by hand,
every client's capacity is its thread count, and the test checks how many standbys
each client gets and which sets of clients may hold a task's standbys (those that
spread the task's replicas over the most tag values). Here:

* the unit: :func:`stickyflow.greedy.streams_state.assign_standbys` on the same actives
  (tags as the spreading keys), checked against Kafka's counts and allowed sets;
* the snapshot: the same clients, the actives as previous actives (caught up), run
  through ``sticky`` and ``optimal``; the checker enforces the spec's tag rule
  (a task's replicas over as many distinct tag values as the clients allow) and
  every task has ``min(num_standby_replicas, clients - 1)`` standbys.

Kafka's movement predicates: ``isAllowedTaskMovement(source, destination)`` (the
balancing step may move a standby only between clients with the same tag values)
is our ``balance_standbys`` rule and is ported; the four-argument variant that
Kafka's rack-aware standby optimizer uses also lets a standby move to a client
whose tags differ if the task's count of distinct tag values does not drop. Our
standby optimizer keeps a standby within its tag-value group, which is stricter:
``shouldPermitSingleTaskMoveWhenDifferentClientTagCountNotChange`` is therefore a
documented difference, checked here as "declined". The two tests on Kafka's
internal bookkeeping (``tasksToRemainingStandbys``, ``pendingStandbyTasksToClientId``)
become their outcome: every standby placed when enough clients exist, as many as
the clients allow otherwise.
"""

from __future__ import annotations

import pytest

import stickyflow
from stickyflow.check.streams_tables import RACK_KEY, tag_combinations
from stickyflow.greedy.streams_state import HAState, assign_standbys
from tests.test_port_kafka_streams_util import client, pid, solve, streams_doc

Z, K = "zone", "cluster"


def c(n, threads, tags, *active, rack=None):
    return dict(n=n, threads=threads, tags=tags, active=list(active), rack=rack)


def zk(z, k=None):
    return {Z: f"zone{z}"} if k is None else {Z: f"zone{z}", K: f"cluster{k}"}


def kz(k, z):
    return {K: f"cluster{k}", Z: f"zone{z}"}


NINE_SAME_ZONE = [c(1, 2, zk(1, 1), "0_0", "1_0"), c(2, 2, zk(2, 1)), c(3, 2, zk(3, 1)),
                  c(4, 2, zk(1, 2), "0_1", "1_1"), c(5, 2, zk(2, 2)), c(6, 2, zk(3, 2)),
                  c(7, 2, zk(1, 3), "0_2", "1_2"), c(8, 2, zk(2, 3)), c(9, 2, zk(3, 3))]
NINE_SAME_CLUSTER = [c(1, 2, zk(1, 1), "0_0", "1_0"), c(2, 2, zk(2, 1), "0_1", "1_1"),
                     c(3, 2, zk(3, 1), "0_2", "1_2"), c(4, 2, zk(1, 2)), c(5, 2, zk(2, 2)), c(6, 2, zk(3, 2)),
                     c(7, 2, zk(1, 3)), c(8, 2, zk(2, 3)), c(9, 2, zk(3, 3))]

SCENARIOS = {
    "shouldNotAssignStatelessTasksToAnyClients": dict(
        clients=NINE_SAME_ZONE, standbys=2, keys=(Z, K), stateless=["0_0", "0_1", "0_2"]),
    "shouldRemoveClientToRemainingStandbysAndNotPopulatePendingStandbyTasksToClientIdWhenAllStandbyTasksWereAssigned":
        dict(clients=[c(1, 2, zk(1, 1), "0_0"), c(2, 2, zk(1, 2), "0_1"), c(3, 2, zk(1, 3), "0_2")],
             standbys=2, keys=(Z, K), per_task=2),
    "shouldUpdateClientToRemainingStandbysAndPendingStandbyTasksToClientIdWhenNotAllStandbyTasksWereAssigned":
        dict(clients=[c(1, 2, zk(1, 1), "0_0"), c(2, 2, zk(1, 2), "0_1"), c(3, 2, zk(1, 3), "0_2")],
             standbys=3, keys=(Z, K), per_task=2),
    "shouldDistributeStandbyTasksWhenActiveTasksAreLocatedOnSameZone": dict(
        clients=NINE_SAME_ZONE, standbys=2, keys=(Z, K), counts={1: 0, 4: 0, 7: 0, 2: 2, 3: 2, 5: 2, 6: 2, 8: 2, 9: 2},
        total=12, honor={"0_0": [{9, 5}, {6, 8}], "1_0": [{9, 5}, {6, 8}], "0_1": [{2, 9}, {3, 8}],
                         "1_1": [{2, 9}, {3, 8}], "0_2": [{5, 3}, {2, 6}], "1_2": [{5, 3}, {2, 6}]}),
    "shouldDistributeStandbyTasksWhenActiveTasksAreLocatedOnSameCluster": dict(
        clients=NINE_SAME_CLUSTER, standbys=2, keys=(Z, K), counts={1: 0, 2: 0, 3: 0, 4: 2, 5: 2, 6: 2, 7: 2, 8: 2, 9: 2},
        total=12, honor={"0_0": [{9, 5}, {6, 8}], "1_0": [{9, 5}, {6, 8}], "0_1": [{4, 9}, {6, 7}],
                         "1_1": [{4, 9}, {6, 7}], "0_2": [{5, 7}, {4, 8}], "1_2": [{5, 7}, {4, 8}]}),
    "shouldDoThePartialRackAwareness": dict(
        clients=[c(1, 1, kz(1, 1), "0_0"), c(2, 1, kz(1, 2)), c(3, 1, kz(1, 3)), c(4, 1, kz(2, 1)),
                 c(5, 1, kz(2, 2)), c(6, 1, kz(2, 3), "1_0")],
        standbys=2, keys=(K, Z), counts={2: 1, 5: 1}, ranges={1: (0, 1), 3: (0, 1), 4: (0, 1), 6: (0, 1)}, total=4),
    "shouldDistributeClientsOnDifferentZoneTagsEvenWhenClientsReachedCapacity": dict(
        clients=[c(1, 1, zk(1, 1), "0_0"), c(2, 1, zk(2, 1), "0_1"), c(3, 1, zk(3, 1), "0_2"),
                 c(4, 1, zk(1, 1), "1_0"), c(5, 1, zk(2, 1), "1_1"), c(6, 1, zk(3, 1), "1_2")],
        standbys=1, keys=(Z, K), counts={n: 1 for n in range(1, 7)}, total=6,
        honor={"0_0": [{2}, {5}, {3}, {6}], "1_0": [{2}, {5}, {3}, {6}], "0_1": [{1}, {4}, {3}, {6}],
               "1_1": [{1}, {4}, {3}, {6}], "0_2": [{1}, {4}, {2}, {5}], "1_2": [{1}, {4}, {2}, {5}]}),
    "shouldIgnoreTagsThatAreNotPresentInRackAwareness": dict(
        clients=[c(1, 1, kz(1, 1), "0_0"), c(2, 2, kz(1, 2)), c(3, 1, kz(2, 1))],
        standbys=1, keys=(K,), counts={3: 1}, total=1),
    "shouldHandleOverlappingTagValuesBetweenDifferentTagKeys": dict(
        clients=[c(1, 2, zk(1, 1), "0_0"), c(2, 2, {Z: "cluster1", K: "cluster3"})],
        standbys=1, keys=(Z, K), total=1, honor={"0_0": [{2}]}),
    "shouldDistributeStandbyTasksOnLeastLoadedClientsWhenClientsAreNotOnDifferentTagDimensions": dict(
        clients=[c(1, 3, kz(1, 1), "0_0"), c(2, 3, kz(1, 1), "0_1"), c(3, 3, kz(1, 1), "0_2"),
                 c(4, 3, kz(1, 1), "1_0")],
        standbys=1, keys=(K, Z), counts={1: 1, 2: 1, 3: 1, 4: 1}, total=4),
    "shouldNotAssignStandbyTasksIfThereAreNoEnoughClients": dict(
        clients=[c(1, 3, kz(1, 1), "0_0")], standbys=1, keys=(K, Z), counts={1: 0}, total=0),
}


def _doc(sc, *, rack_tags=False):
    tasks = sorted({t for x in sc["clients"] for t in x["active"]})
    stateless = sc.get("stateless", [])
    clients = []
    for x in sc["clients"]:
        kw = dict(rack=x["tags"].get(Z)) if rack_tags else dict(tags=x["tags"])
        clients.append(client(x["n"], threads=x["threads"], active=x["active"],
                              lags={t: 0 for t in x["active"] if t not in stateless}, **kw))
    return streams_doc([t for t in tasks if t not in stateless], clients, stateless=stateless,
                       num_standby_replicas=sc["standbys"], rack_aware_assignment_tags=[] if rack_tags else
                       list(sc["keys"]))


def _unit(sc, keys=None):
    """Kafka's set-up: actives placed by hand, then only the standby assignment."""
    snap = stickyflow.parse_snapshot(_doc(sc, rack_tags=keys == (RACK_KEY,)))
    st = HAState(snap)
    idx = snap.index
    for x in sc["clients"]:
        for t in x["active"]:
            st.set_active(idx.task_pos[t], idx.client_pos[pid(x["n"])])
    stateful = [t for t in st.task_order if st.stateful[t]]
    # Kafka's test hands the assignor a java.util.HashSet of its tasks (findAllActiveTasks): the standbys are
    # placed in that set's iteration order, and the per-client counts Kafka asserts follow from it
    by_id = {snap.tasks[t].id: t for t in stateful}
    stateful = [by_id[i] for i in java_hashset_order(list(by_id))]
    assign_standbys(st, stateful, snap.standbys_per_task(), keys or tuple(sc["keys"]))
    return snap, st.to_assignment()


def java_hashset_order(task_ids: list[str]) -> list[str]:
    """The order in which a ``java.util.HashSet<TaskId>`` filled with ``task_ids`` (in this order) iterates.

    ``TaskId.hashCode()`` is ``Objects.hash(subtopology, partition, topologyName)`` with no named topology:
    ``((31 + subtopology) * 31 + partition) * 31``; a ``HashMap`` spreads it (``h ^ h >>> 16``), keeps
    ``2^k >= 16`` buckets with a load factor of 0.75, and iterates bucket by bucket, each in insertion order.
    """
    cap = 16
    while len(task_ids) > 0.75 * cap:
        cap *= 2

    def bucket(tid: str) -> int:
        sub, part = (int(x) for x in tid.split("_"))
        h = (((31 + sub) * 31 + part) * 31) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (cap - 1)

    return sorted(task_ids, key=bucket)  # sorted() is stable: insertion order within a bucket


def test_java_hashset_order_of_kafka_task_ids():
    """The six tasks of Kafka's nine-client tag tests, in the order Java 17's HashSet iterates them."""
    assert java_hashset_order(["0_0", "0_1", "0_2", "1_0", "1_1", "1_2"]) == ["1_0", "0_2", "0_1", "1_2", "0_0", "1_1"]


def _standbys(out, n):
    return out[pid(n)].standby


# Kafka's nine-client tests end with exactly two standbys on each of the six free clients only because its
# HashSet hands the tasks over in hash order (in TaskId order the same algorithm puts three on one client, as
# ours did): _unit now feeds them in that order, and nothing is expected to fail
UNIT_XFAIL: dict[str, str] = {}


@pytest.mark.parametrize("name", [
    pytest.param(n, id=f"kafka_ClientTagAwareStandbyTaskAssignorTest_{n}",
                 marks=[pytest.mark.xfail(strict=False, reason=UNIT_XFAIL[n])] if n in UNIT_XFAIL else [])
    for n in sorted(SCENARIOS)])
def test_unit_assign_standbys(name):
    sc = SCENARIOS[name]
    snap, out = _unit(sc)
    stateless = set(sc.get("stateless", []))
    assert not any(set(a.standby) & stateless for a in out.values())
    for n, want in sc.get("counts", {}).items():
        assert len(_standbys(out, n)) == want, (n, out)
    for n, (lo, hi) in sc.get("ranges", {}).items():
        assert lo <= len(_standbys(out, n)) <= hi, (n, out)
    if "total" in sc:
        assert sum(len(a.standby) for a in out.values()) == sc["total"]
    for t, allowed in sc.get("honor", {}).items():
        holders = {int(p.split("_")[1]) for p, a in out.items() if t in a.standby}
        assert holders in allowed, (t, holders, allowed)
    if "per_task" in sc:
        for t in snap.stateful_tasks:
            assert sum(t.id in a.standby for a in out.values()) == sc["per_task"]


@pytest.mark.parametrize("assignor", ["sticky", "optimal"])
@pytest.mark.parametrize("name", sorted(SCENARIOS), ids=lambda n: f"kafka_ClientTagAwareStandbyTaskAssignorTest_{n}")
def test_snapshot(name, assignor):
    """The whole assignor on the scenario's snapshot: the checker holds it to the spec's tag rule."""
    sc = SCENARIOS[name]
    snap, r = solve(_doc(sc), assignor)
    want = snap.standbys_per_task()
    for t in snap.stateful_tasks:
        assert sum(t.id in a.standby for a in r.assignment.values()) == want
    assert not any(set(a.standby) & set(sc.get("stateless", [])) for a in r.assignment.values())


def test_kafka_ClientTagAwareStandbyTaskAssignorTest_shouldDistributeStandbyTasksUsingFunctionAndSupplierTags():
    """Racks handed in as the one tag spread standbys exactly as a ``zone`` tag with the same values does."""
    sc = dict(clients=[c(1, 2, zk(1), "0_0", "1_0"), c(2, 2, zk(2), "0_1", "1_1"), c(3, 2, zk(3), "0_2", "1_2")]
              + [c(n, 2, zk((n - 1) % 3 + 1)) for n in range(4, 10)], standbys=2, keys=(Z,))
    by_rack = _unit(sc, keys=(RACK_KEY,))[1]
    by_tag = _unit(sc)[1]
    assert {p: a.standby for p, a in by_rack.items()} == {p: a.standby for p, a in by_tag.items()}
    assert all(len(by_tag[pid(n)].standby) == (0 if n <= 3 else 2) for n in range(1, 10))


def _same_tags(a, b):
    """Kafka's isAllowedTaskMovement(source, destination): our balance_standbys moves within one tag combination."""
    doc = streams_doc([], [client(1, tags=a), client(2, tags=b)], rack_aware_assignment_tags=[Z, K])
    combo = tag_combinations(stickyflow.parse_snapshot(doc))[1]
    return combo[0] == combo[1]


@pytest.mark.parametrize("source, destination, allowed", [
    pytest.param(zk(1, 1), zk(1, 1), True, id="kafka_ClientTagAwareStandbyTaskAssignorTest_shouldPermitTaskMovementWhenClientTagsMatch"),
    pytest.param(zk(1, 1), zk(2, 1), False, id="kafka_ClientTagAwareStandbyTaskAssignorTest_shouldDeclineTaskMovementWhenClientTagsDoNotMatch"),
    pytest.param(zk(1, 1), zk(1, 1), True, id="kafka_ClientTagAwareStandbyTaskAssignorTest_shouldPermitSingleTaskMoveWhenClientTagMatch"),
    # Kafka permits this one (the task's distinct tag count stays the same); we keep standbys within their
    # tag-value group, which is stricter: a documented difference
    pytest.param(zk(1, 1), zk(2, 1), False, id="kafka_ClientTagAwareStandbyTaskAssignorTest_shouldPermitSingleTaskMoveWhenDifferentClientTagCountNotChange"),
    pytest.param(zk(1, 1), zk(3, 1), False, id="kafka_ClientTagAwareStandbyTaskAssignorTest_shouldDeclineSingleTaskMoveWhenReduceClientTagCount"),
])
def test_movement_predicate(source, destination, allowed):
    assert _same_tags(source, destination) == allowed
