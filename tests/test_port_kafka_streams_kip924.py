"""KIP-924's own tests as ours: TaskAssignmentUtilsTest and CustomStickyTaskAssignorTest.

``TaskAssignmentUtilsTest`` exercises the utilities a custom assignor builds on;
here they are :mod:`stickyflow.kip924`'s (identity assignment, default standbys,
rack-aware active and standby optimization, ``validate_task_assignment``), on the
same inputs, with the same expected outcomes. Kafka's tasks there have one
partition that is both source and changelog, with the given racks.

``CustomStickyTaskAssignorTest`` runs Kafka's KIP-924 ``StickyTaskAssignor`` (the
pre-KIP-441 sticky algorithm offered as a custom assignor) and checks each answer
with ``validateTaskAssignment`` and some properties. We have no port of that
assignor; its scenarios run through ``optimal`` and ``sticky`` (our HA port), every
answer checked with ``validate_task_assignment`` and the spec's checker, and:

* properties the spec forces (balance by threads, standbys on other clients,
  stickiness where keeping costs nothing and stays balanced) are asserted for
  ``optimal`` and, where Kafka's HA assignor has them too, for ``sticky``;
* properties of the legacy sticky algorithm that neither the spec nor Kafka's HA
  assignor promise (a stateless task kept on its previous client; a stateless task
  going to a client that listed it as a previous standby; each client taking one
  task of each subtopology; no two clients holding the same set of tasks in
  whatever roles) are marked ``LEGACY`` and printed, not asserted; where the
  spec's cost forces one of them (a stateless move counts), it is asserted for
  ``optimal``.

Tasks without lags: stateful tasks have ``end_offset_sum`` 0, so every client is
caught up, as the legacy assignor (which reads no lags) assumes.
``shouldEvenlyDistributeByTaskIdAndPartition`` is an empty placeholder in Kafka
(a TODO) and has nothing to port.
"""

from __future__ import annotations

import pytest

import stickyflow
from stickyflow.kip924 import (ApplicationState, AssignedTask, AssignmentError, KafkaStreamsAssignment,
                               RackAwareOptimizationParams, TaskAssignment, default_standby_task_assignment,
                               identity_assignment, optimize_rack_aware_active_tasks,
                               optimize_rack_aware_standby_tasks, validate_task_assignment)
from tests.test_port_kafka_streams_util import client, pid, solve, streams_doc

A, S = AssignedTask.active, AssignedTask.standby


# =========================================================================== TaskAssignmentUtilsTest

def _utils_app(tasks, clients, *, standbys=1, strategy="none", tags=()):
    """Kafka's TestApplicationState: tasks as (id, stateful, racks); clients as (n, threads, rack, prev active,
    prev standby, tags)."""
    docs = []
    for tid, stateful, racks in tasks:
        d = {"id": tid, "stateful": stateful}
        if stateful:
            part = {"topic": f"test-topic-{tid.split('_')[0]}", "partition": int(tid.split("_")[1])}
            if racks is not None:
                part["racks"] = sorted(racks)
            d["input_partitions"] = [part]
            d["changelog_partitions"] = [dict(part)]
        docs.append(d)
    cl = []
    for n, threads, rack, active, standby, ctags in clients:
        d = {"process_id": pid(n), "threads": threads, "previous_active": list(active),
             "previous_standby": list(standby)}
        if rack is not None:
            d["rack"] = rack
        if ctags:
            d["tags"] = ctags
        cl.append(d)
    doc = {"format": "stickyflow.snapshot/1", "kind": "streams", "tasks": docs, "clients": cl,
           "config": {"acceptable_recovery_lag": 100, "max_warmup_replicas": 1, "num_standby_replicas": standbys,
                      "rack_aware_assignment_strategy": strategy, "rack_aware_assignment_tags": list(tags)}}
    return ApplicationState.from_snapshot(stickyflow.parse_snapshot(doc))


def _assign(**per_client):
    return {pid(int(k[1:])): KafkaStreamsAssignment.of(pid(int(k[1:])), v) for k, v in per_client.items()}


def _keys(assignments):
    return {p: set(a.tasks) for p, a in assignments.items()}


STRATEGIES = ["min_traffic", "balance_subtopology"]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_kafka_TaskAssignmentUtilsTest_shouldOptimizeActiveTaskSimple(strategy):
    app = _utils_app([("0_0", True, {"rack-2"}), ("0_1", True, {"rack-1"})],
                     [(1, 1, "rack-1", (), (), None), (2, 1, "rack-2", (), (), None)], strategy=strategy)
    out = optimize_rack_aware_active_tasks(RackAwareOptimizationParams.of(app), _assign(c1=[A("0_0")], c2=[A("0_1")]))
    assert _keys(out) == {pid(1): {"0_1"}, pid(2): {"0_0"}}
    again = optimize_rack_aware_active_tasks(RackAwareOptimizationParams.of(app), out)  # nothing shifts the 2nd time
    assert _keys(again) == _keys(out)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_kafka_TaskAssignmentUtilsTest_shouldOptimizeStandbyTasksBasic(strategy):
    app = _utils_app([("0_0", True, {"rack-2"}), ("0_1", True, {"rack-3"})],
                     [(1, 2, "rack-1", (), (), None), (2, 2, "rack-2", (), (), None), (3, 2, "rack-3", (), (), None)],
                     strategy=strategy)
    out = optimize_rack_aware_standby_tasks(RackAwareOptimizationParams.of(app),
                                            _assign(c1=[A("0_0"), A("0_1")], c2=[S("0_1")], c3=[S("0_0")]))
    assert _keys(out) == {pid(1): {"0_0", "0_1"}, pid(2): {"0_0"}, pid(3): {"0_1"}}


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_kafka_TaskAssignmentUtilsTest_shouldOptimizeStandbyTasksBasic_as_a_snapshot(strategy):
    """The same scenario as the group's state (issue 37): Kafka's starting assignment as the previous one, every
    client caught up, traffic cost 100. Kafka's answer (both actives kept on client 1, the standbys swapped to
    their racks) costs 202 by the spec's cost, but it is not **Balanced**: two actives on a two-thread client
    while the others hold none (2 > 2 x 0 + 1), though per thread they differ by 1. ``optimal`` spreads the
    actives, Balanced, at the same 202."""
    from stickyflow.check.streams import streams_metrics

    tasks = [{"id": t, "stateful": True, "end_offset_sum": 0, **{
        f"{k}_partitions": [{"topic": "test-topic-0", "partition": int(t[2]), "racks": [r]}]
        for k in ("input", "changelog")}} for t, r in (("0_0", "rack-2"), ("0_1", "rack-3"))]
    clients = [client(1, threads=2, active=["0_0", "0_1"], rack="rack-1"),
               client(2, threads=2, standby=["0_1"], rack="rack-2"), client(3, threads=2, standby=["0_0"], rack="rack-3")]
    doc = {"format": "stickyflow.snapshot/1", "kind": "streams", "tasks": tasks, "clients": clients,
           "config": {"num_standby_replicas": 1, "rack_aware_assignment_strategy": strategy,
                      "rack_aware_assignment_traffic_cost": 100, "rack_aware_assignment_non_overlap_cost": 1}}
    snap, r = solve(doc, "optimal")
    kafka = streams_metrics(snap, {pid(1): {"active": ["0_0", "0_1"]}, pid(2): {"standby": ["0_0"]},
                                   pid(3): {"standby": ["0_1"]}})
    print(f"[{strategy}] optimal {r.metrics['cost']}, Balanced {r.metrics['balanced']}; Kafka's answer "
          f"{kafka['cost']}, Balanced in active tasks {kafka['balanced_active']}")
    assert not kafka["balanced_active"]  # Kafka's answer breaks a rule of ours: no cost bound to meet
    assert r.metrics["balanced"] and r.followup_rebalance_deadline_ms is None
    assert r.metrics["cost"] <= kafka["cost"]  # and yet no costlier


def test_kafka_TaskAssignmentUtilsTest_shouldAssignStandbyTasksWithClientTags():
    app = _utils_app([("0_0", True, None)],
                     [(1, 2, None, (), (), {"az": "1"}), (2, 2, None, (), (), {"az": "1"}),
                      (3, 2, None, (), (), {"az": "2"}), (4, 2, None, (), (), {"az": "3"})], standbys=2, tags=["az"])
    out = default_standby_task_assignment(app, {p: KafkaStreamsAssignment.of(p) for p in app.kafka_streams_states(False)}
                                          | _assign(c1=[A("0_0")]))
    assert _keys(out) == {pid(1): {"0_0"}, pid(2): set(), pid(3): {"0_0"}, pid(4): {"0_0"}}
    assert out[pid(1)].tasks["0_0"].type is A("0_0").type


def test_kafka_TaskAssignmentUtilsTest_shouldAssignStandbyTasksByClientLoad():
    app = _utils_app([("0_0", True, None)] + [(f"0_{i}", False, None) for i in range(1, 6)],
                     [(n, 5, None, (), (), None) for n in range(1, 6)], standbys=3)
    base = {p: KafkaStreamsAssignment.of(p) for p in app.kafka_streams_states(False)}
    out = default_standby_task_assignment(app, base | _assign(c1=[A("0_0"), A("0_1"), A("0_2")],
                                                              c2=[A("0_3"), A("0_4"), A("0_5")]))
    assert _keys(out)[pid(2)] == {"0_3", "0_4", "0_5"}
    assert all(_keys(out)[pid(n)] == {"0_0"} for n in (3, 4, 5))


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_kafka_TaskAssignmentUtilsTest_shouldNotViolateClientTagsAssignmentDuringStandbyOptimization(strategy):
    app = _utils_app([("0_0", True, {"r1"}), ("0_1", True, {"r1"})],
                     [(1, 2, "r1", (), (), {"az": "1"}), (2, 2, "r1", (), (), {"az": "2"}),
                      (3, 2, "r1", (), (), {"az": "3"}), (4, 2, "r1", (), (), {"az": "2"})],
                     standbys=2, strategy=strategy, tags=["az"])
    out = optimize_rack_aware_standby_tasks(RackAwareOptimizationParams.of(app),
                                            _assign(c1=[A("0_0"), S("0_1")], c2=[S("0_0"), A("0_1")],
                                                    c3=[S("0_0"), S("0_1")], c4=[]))
    assert _keys(out) == {pid(1): {"0_0", "0_1"}, pid(2): {"0_0", "0_1"}, pid(3): {"0_0", "0_1"}, pid(4): set()}


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_kafka_TaskAssignmentUtilsTest_shouldOptimizeStandbyTasksWithMultipleRacks(strategy):
    app = _utils_app([("0_0", True, {"rack-1", "rack-2"}), ("0_1", True, {"rack-2", "rack-3"}),
                      ("0_2", True, {"rack-3", "rack-4"})],
                     [(1, 2, "rack-1", (), (), None), (2, 2, "rack-2", (), (), None), (3, 2, "rack-3", (), (), None)],
                     strategy=strategy)
    out = optimize_rack_aware_active_tasks(RackAwareOptimizationParams.of(app).for_tasks(["0_0", "0_1", "0_2"]),
                                           _assign(c1=[A("0_0")], c2=[A("0_1")], c3=[A("0_2")]))
    assert _keys(out) == {pid(1): {"0_0"}, pid(2): {"0_1"}, pid(3): {"0_2"}}


def _identity_app(balance_factor=1):
    three = ["0_0", "0_1", "0_2"]
    doc = streams_doc(three, [client(1, threads=5, active=three), client(2, threads=5, standby=three,
                                                                      lags={t: 0 for t in three})]
                      + [client(n, threads=5) for n in (3, 4, 5)], eos=0, acceptable_recovery_lag=100,
                      max_warmup_replicas=1, num_standby_replicas=1, balance_factor=balance_factor)
    return doc


def test_kafka_TaskAssignmentUtilsTest_shouldCorrectlyReturnIdentityAssignment():
    app = ApplicationState.from_snapshot(stickyflow.parse_snapshot(_identity_app()))
    out = identity_assignment(app)
    three = {"0_0", "0_1", "0_2"}
    assert _keys(out) == {pid(1): three, pid(2): three, pid(3): set(), pid(4): set(), pid(5): set()}
    assert all(t.type is A("x").type for t in out[pid(1)].tasks.values())
    assert all(t.type is S("x").type for t in out[pid(2)].tasks.values())


def test_optimal_keeps_the_identity_assignment_within_the_balance_factor():
    """The issue's case: with balance_factor 3 the identity assignment is Balanced (3 <= 5 x 0 + 3 on every
    count) and costs nothing, so the optimizer keeps it."""
    snap, r = solve(_identity_app(balance_factor=3), "optimal")
    assert r.metrics["moves"] == 0 and r.metrics["standby_moves"] == 0
    assert set(r.assignment[pid(1)].active) == {"0_0", "0_1", "0_2"}


def test_kafka_TaskAssignmentUtilsTest_testValidateTaskAssignment():
    app = _utils_app([("1_1", False, None)], [(1, 5, None, (), (), None), (2, 5, None, (), (), None)])
    p1, p2 = pid(1), pid(2)
    ok = [KafkaStreamsAssignment.of(p1, [A("1_1")]), KafkaStreamsAssignment.of(p2)]
    assert validate_task_assignment(app, TaskAssignment(ok)) is AssignmentError.NONE
    assert validate_task_assignment(app, ok[:1]) is AssignmentError.MISSING_PROCESS_ID
    assert validate_task_assignment(app, ok + [KafkaStreamsAssignment.of("some-random-process")]) is \
        AssignmentError.UNKNOWN_PROCESS_ID
    assert validate_task_assignment(app, [ok[0], KafkaStreamsAssignment.of(p2, [A("13_13")])]) is \
        AssignmentError.UNKNOWN_TASK_ID
    assert validate_task_assignment(app, [ok[0], KafkaStreamsAssignment.of(p2, [A("1_1")])]) is \
        AssignmentError.ACTIVE_TASK_ASSIGNED_MULTIPLE_TIMES


# =========================================================================== CustomStickyTaskAssignorTest

LEGACY = "legacy"  # the legacy sticky algorithm's habit: asserted for optimal only where the spec's cost forces it
BOTH = "both"
OPTIMAL = "optimal"  # forced by the spec's cost, not something Kafka's HA assignor does


def st(n, threads=1, active=(), standby=()):
    return dict(n=n, threads=threads, active=list(active), standby=list(standby))


def _sticky_doc(tasks, clients, standbys=0):
    stateful = [t for t, s in tasks if s]
    stateless = [t for t, s in tasks if not s]
    cl = [client(c["n"], threads=c["threads"], active=c["active"], standby=c["standby"],
                 lags={t: 0 for t in c["standby"] if t in stateful}) for c in clients]
    return streams_doc(stateful, cl, stateless=stateless, eos=0, acceptable_recovery_lag=0, max_warmup_replicas=1,
                       num_standby_replicas=standbys)


def _tasks(ids, stateful=False):
    return [(t, stateful) for t in ids]


def active(r, n):
    return set(r.assignment[pid(n)].active)


def standby(r, n):
    a = r.assignment[pid(n)]
    return set(a.standby) | set(a.warmup)


def held(r, n):
    return active(r, n) | standby(r, n)


T3 = ["0_0", "0_1", "0_2"]
CUSTOM = {
    "shouldAssignOneActiveTaskToEachProcessWhenTaskCountSameAsProcessCount": (
        _sticky_doc(_tasks(T3), [st(1), st(2), st(3)]),
        [(BOTH, lambda r: all(len(held(r, n)) == 1 for n in (1, 2, 3)))]),
    "shouldAssignTopicGroupIdEvenlyAcrossClientsWithNoStandByTasks": (
        _sticky_doc(_tasks(["1_0", "1_1", "2_2", "2_0", "2_1", "1_2"]), [st(1, 2), st(2, 2), st(3, 2)]),
        [(LEGACY, lambda r: all(sorted(int(t[0]) for t in active(r, n)) == [1, 2] for n in (1, 2, 3))),
         (BOTH, lambda r: all(len(active(r, n)) == 2 for n in (1, 2, 3)))]),
    "shouldAssignTopicGroupIdEvenlyAcrossClientsWithStandByTasks": (
        _sticky_doc(_tasks(["2_0", "1_1", "1_2", "1_0", "2_1", "2_2"]), [st(1, 2), st(2, 2), st(3, 2)], 1),
        [(LEGACY, lambda r: all(sorted(int(t[0]) for t in active(r, n)) == [1, 2] for n in (1, 2, 3))),
         (BOTH, lambda r: all(len(active(r, n)) == 2 and not standby(r, n) for n in (1, 2, 3)))]),
    "shouldNotMigrateActiveTaskToOtherProcess": (
        _sticky_doc(_tasks(T3), [st(1, active=["0_0"]), st(2, active=["0_1"])]),
        [(OPTIMAL, lambda r: "0_0" in active(r, 1) and "0_1" in active(r, 2))]),
    "shouldNotMigrateActiveTaskToOtherProcess_swapped": (
        _sticky_doc(_tasks(T3), [st(1, active=["0_1"]), st(2, active=["0_0"])]),
        [(OPTIMAL, lambda r: "0_1" in active(r, 1) and "0_0" in active(r, 2))]),
    "shouldMigrateActiveTasksToNewProcessWithoutChangingAllAssignments": (
        _sticky_doc(_tasks(T3), [st(1, active=["0_0", "0_2"]), st(2, active=["0_1"]), st(3)]),
        [(BOTH, lambda r: all(len(held(r, n)) == 1 for n in (1, 2, 3))), (OPTIMAL, lambda r: active(r, 2) == {"0_1"})]),
    "shouldAssignBasedOnCapacity": (
        _sticky_doc(_tasks(T3), [st(1, 1), st(2, 2)]),
        [(BOTH, lambda r: len(held(r, 1)) == 1 and len(held(r, 2)) == 2)]),
    "shouldAssignTasksEvenlyWithUnequalTopicGroupSizes": (
        _sticky_doc(_tasks(["1_0"] + [f"0_{i}" for i in range(6)]),
                    [st(1, active=["1_0"] + [f"0_{i}" for i in range(6)]), st(2)]),
        [(BOTH, lambda r: sorted((len(active(r, 1)), len(active(r, 2)))) == [3, 4]),
         (BOTH, lambda r: active(r, 1) | active(r, 2) == {"1_0"} | {f"0_{i}" for i in range(6)})]),
    "shouldKeepActiveTaskStickinessWhenMoreClientThanActiveTasks": (
        _sticky_doc(_tasks(T3), [st(1, active=["0_0"]), st(2, active=["0_2"]), st(3, active=["0_1"]), st(4), st(5)]),
        [(OPTIMAL, lambda r: active(r, 1) == {"0_0"} and active(r, 2) == {"0_2"} and active(r, 3) == {"0_1"}),
         (OPTIMAL, lambda r: not held(r, 4) and not held(r, 5))]),
    "shouldKeepActiveTaskStickinessWhenMoreClientThanActiveTasks_second": (
        _sticky_doc(_tasks(T3), [st(1), st(2), st(3, active=["0_1"]), st(4, active=["0_0"]), st(5, active=["0_2"])]),
        [(OPTIMAL, lambda r: active(r, 3) == {"0_1"} and active(r, 4) == {"0_0"} and active(r, 5) == {"0_2"})]),
    "shouldAssignTasksToClientWithPreviousStandbyTasks": (
        _sticky_doc(_tasks(T3), [st(1, standby=["0_2"]), st(2, standby=["0_1"]), st(3, standby=["0_0"])]),
        [(LEGACY, lambda r: active(r, 1) == {"0_2"} and active(r, 2) == {"0_1"} and active(r, 3) == {"0_0"})]),
    "shouldAssignBasedOnCapacityWhenMultipleClientHaveStandbyTasks": (
        _sticky_doc(_tasks(T3), [st(1, 1, active=["0_0"], standby=["0_1"]), st(2, 2, active=["0_2"], standby=["0_1"])]),
        [(BOTH, lambda r: len(held(r, 1)) == 1 and len(held(r, 2)) == 2),
         (OPTIMAL, lambda r: active(r, 1) == {"0_0"} and active(r, 2) == {"0_1", "0_2"})]),
    "shouldAssignStandbyTasksToDifferentClientThanCorrespondingActiveTaskIsAssignedTo": (
        _sticky_doc(_tasks(["0_0", "0_1", "0_2", "0_3"], True),
                    [st(1, active=["0_0"]), st(2, active=["0_1"]), st(3, active=["0_2"]), st(4, active=["0_3"])], 1),
        [(BOTH, lambda r: all(len(standby(r, n)) <= 2 and not (standby(r, n) & active(r, n)) for n in range(1, 5)))]),
    "shouldAssignMultipleReplicasOfStandbyTask": (
        _sticky_doc(_tasks(T3, True), [st(1, active=["0_0"]), st(2, active=["0_1"]), st(3, active=["0_2"])], 2),
        [(BOTH, lambda r: [active(r, n) for n in (1, 2, 3)] == [{"0_0"}, {"0_1"}, {"0_2"}]),
         (BOTH, lambda r: [standby(r, n) for n in (1, 2, 3)] == [{"0_1", "0_2"}, {"0_0", "0_2"}, {"0_0", "0_1"}])]),
    "shouldNotAssignStandbyTaskReplicasWhenNoClientAvailableWithoutHavingTheTaskAssigned": (
        _sticky_doc(_tasks(["0_0"], True), [st(1, active=["0_0"])], 2),
        [(BOTH, lambda r: active(r, 1) == {"0_0"} and not standby(r, 1))]),
    "shouldAssignActiveAndStandbyTasks": (
        _sticky_doc(_tasks(T3, True), [st(1), st(2), st(3)], 1),
        [(BOTH, lambda r: set().union(*(active(r, n) for n in (1, 2, 3))) == set(T3)),
         (BOTH, lambda r: set().union(*(standby(r, n) for n in (1, 2, 3))) == set(T3))]),
    "shouldAssignAtLeastOneTaskToEachClientIfPossible": (
        _sticky_doc(_tasks(T3), [st(1, 3), st(2), st(3)]),
        [(BOTH, lambda r: all(len(active(r, n)) == 1 for n in (1, 2, 3)))]),
    "shouldAssignEachActiveTaskToOneClientWhenMoreClientsThanTasks": (
        _sticky_doc(_tasks(T3), [st(n) for n in range(1, 7)]),
        [(BOTH, lambda r: set().union(*(active(r, n) for n in range(1, 7))) == set(T3)),
         (BOTH, lambda r: not set().union(*(standby(r, n) for n in range(1, 7)))),
         (BOTH, lambda r: sum(bool(held(r, n)) for n in range(1, 7)) == 3)]),
    "shouldBalanceActiveAndStandbyTasksAcrossAvailableClients": (
        _sticky_doc(_tasks(T3, True), [st(n) for n in range(1, 7)], 1),
        [(BOTH, lambda r: all(held(r, n) for n in range(1, 7)))]),
    "shouldAssignMoreTasksToClientWithMoreCapacity": (
        _sticky_doc(_tasks([f"{s}_{p}" for s in range(4) for p in range(3)]), [st(1, 1), st(2, 2)]),
        [(BOTH, lambda r: len(active(r, 1)) == 4 and len(active(r, 2)) == 8)]),
    "shouldNotHaveSameAssignmentOnAnyTwoHosts": (
        _sticky_doc(_tasks(["0_0", "0_1", "0_2", "0_3"], True), [st(n) for n in range(1, 5)], 1),
        [(LEGACY, lambda r: len({frozenset(held(r, n)) for n in range(1, 5)}) == 4)]),
    "shouldNotHaveSameAssignmentOnAnyTwoHostsWhenThereArePreviousActiveTasks": (
        _sticky_doc(_tasks(["0_0", "0_1", "0_2", "0_3"], True),
                    [st(1, active=["0_1", "0_2"]), st(2, active=["0_3"]), st(3, active=["0_0"]), st(4)], 1),
        [(LEGACY, lambda r: len({frozenset(held(r, n)) for n in range(1, 5)}) == 4)]),
    "shouldAssignMultipleStandbys": (
        _sticky_doc([("0_0", True), ("0_1", False), ("0_2", False)], [st(n) for n in range(1, 5)], 3),
        [(BOTH, lambda r: all(standby(r, n) == ({"0_0"} if "0_0" not in active(r, n) else set())
                              for n in range(1, 5)))]),
}


def _applies(who, assignor):
    return who == BOTH or (who == OPTIMAL and assignor == "optimal")


@pytest.mark.parametrize("assignor", ["sticky", "optimal"])
@pytest.mark.parametrize("name", sorted(CUSTOM), ids=lambda n: f"kafka_CustomStickyTaskAssignorTest_{n}")
def test_custom_sticky_scenarios(name, assignor):
    doc, checks = CUSTOM[name]
    snap, r = solve(doc, assignor)
    app = ApplicationState.from_snapshot(snap)
    answer = [KafkaStreamsAssignment.from_client_assignment(p, a) for p, a in r.assignment.items()]
    assert validate_task_assignment(app, answer) is AssignmentError.NONE
    failed = [i for i, (who, check) in enumerate(checks) if _applies(who, assignor) and not check(r)]
    legacy = [i for i, (who, check) in enumerate(checks) if who == LEGACY and not check(r)]
    print(f"{name} [{assignor}]: legacy-only properties not shown: {legacy}")
    assert not failed, (failed, {p: a.to_json() for p, a in r.assignment.items()})


@pytest.mark.parametrize("assignor", ["sticky", "optimal"])
def test_kafka_CustomStickyTaskAssignorTest_largeAssignmentShouldTerminateWithinAcceptableTime(assignor):
    """300 stateful tasks in 10 subtopologies, 20 clients of 50 threads over 31 racks, 2 standbys."""
    tasks = []
    for i in range(10):
        for j in range(30):
            part = {"topic": f"t{i}", "partition": j, "racks": [f"rack-{(i * j) % 31}"]}
            tasks.append({"id": f"{i}_{j}", "stateful": True, "input_partitions": [part],
                          "changelog_partitions": [dict(part)]})
    clients = [{"process_id": pid(i + 1) if i < 9 else f"pid_{i + 1:02d}", "threads": 50, "rack": f"rack-{i % 31}",
                "previous_active": [], "previous_standby": []} for i in range(20)]
    doc = {"format": "stickyflow.snapshot/1", "kind": "streams", "tasks": tasks, "clients": clients,
           "config": {"acceptable_recovery_lag": 0, "max_warmup_replicas": 1, "num_standby_replicas": 2,
                      "rack_aware_assignment_strategy": "balance_subtopology"}}
    snap, r = solve(doc, assignor)
    assert sum(len(a.active) for a in r.assignment.values()) == 300
    assert sum(len(a.standby) for a in r.assignment.values()) == 600
