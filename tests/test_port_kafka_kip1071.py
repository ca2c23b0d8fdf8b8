"""Kafka's ``StickyTaskAssignorTest`` (group coordinator, KIP-1071), ported to ``stickyflow.assign(..., "kip1071")``.

Source: Apache Kafka, group-coordinator, ``org.apache.kafka.coordinator.group.streams.assignor.StickyTaskAssignorTest``.
Each scenario is Kafka's: processes and their members, previous active and standby tasks, the topology
(subtopologies, partitions, stateful or not), ``num.standby.replicas``, and the assertion Kafka makes.

Translation: a Kafka process with ``n`` members is a client with ``threads = n`` (its capacity); the
snapshot holds previous tasks per client, so where Kafka asserts per member we assert the sum over the
process's members (a process with one member is asserted exactly as Kafka does). Subtopology names become
numbers in name order (``test-subtopology`` -> 0, ``test-subtopology1`` -> 1, ...). Every result has been
through the front door's check: KIP-924's rules, every task active once, the standby count.

(Helper D ports further KIP-1071 scenarios against ``optimal`` and ``sticky`` in
``test_port_kafka_streams_kip1071.py``.)
"""

from __future__ import annotations

import pytest

import stickyflow

SUB = "0"  # "test-subtopology"


def _ids(sub, parts) -> list[str]:
    return [f"{sub}_{p}" for p in parts]


def _app(processes: list[tuple], *, partitions: int, subtopologies=(SUB,), stateful=False, standbys=0,
         extra_tasks: dict | None = None) -> dict:
    """``processes``: (process id, threads, previous active ids, previous standby ids)."""
    tasks = [{"id": f"{s}_{p}", "stateful": stateful, "end_offset_sum": 1000 if stateful else 0}
             for s in subtopologies for p in range(partitions)]
    for tid, st in (extra_tasks or {}).items():
        tasks.append({"id": tid, "stateful": st})
    return {"format": "stickyflow.snapshot/1", "kind": "streams", "tasks": tasks,
            "clients": [{"process_id": pid, "threads": n, "previous_active": list(a), "previous_standby": list(s)}
                        for pid, n, a, s in processes],
            "config": {"num_standby_replicas": standbys}}


def _solve(doc: dict) -> tuple[dict, dict]:
    r = stickyflow.assign(doc, "kip1071")
    assert r.error == "NONE" and r.solver.method == "kip1071"
    assert r.followup_rebalance_deadline_ms is None and r.metrics["warmups"] == 0
    j = r.to_json()["assignment"]
    return {c: set(a["active"]) for c, a in j.items()}, {c: set(a["standby"]) for c, a in j.items()}


def test_kafka_StickyTaskAssignorTest_shouldAssignOneActiveTaskToEachProcessWhenTaskCountSameAsProcessCount():
    act, _ = _solve(_app([("process1", 1, [], []), ("process2", 1, [], []), ("process3", 1, [], [])], partitions=3))
    assert all(len(a) == 1 for a in act.values())
    assert set().union(*act.values()) == set(_ids(SUB, range(3)))


@pytest.mark.parametrize("stateful,standbys", [(False, 0), (True, 1)],
                         ids=["test_kafka_StickyTaskAssignorTest_shouldAssignTopicGroupIdEvenlyAcrossClientsWithNoStandByTasks",
                              "test_kafka_StickyTaskAssignorTest_shouldAssignTopicGroupIdEvenlyAcrossClientsWithStandByTasks"])
def test_kafka_StickyTaskAssignorTest_shouldAssignTopicGroupIdEvenlyAcrossClients(stateful, standbys):
    # three processes of two members each; two subtopologies of three tasks: one task per member
    act, _ = _solve(_app([("process1", 2, [], []), ("process2", 2, [], []), ("process3", 2, [], [])],
                         partitions=3, subtopologies=("1", "2"), stateful=stateful, standbys=standbys))
    assert {c: len(a) for c, a in act.items()} == {"process1": 2, "process2": 2, "process3": 2}
    assert set().union(*act.values()) == set(_ids("1", range(3)) + _ids("2", range(3)))


def test_kafka_StickyTaskAssignorTest_shouldNotMigrateActiveTaskToOtherProcess():
    act, _ = _solve(_app([("process1", 1, ["0_0"], []), ("process2", 1, ["0_1"], [])], partitions=3))
    assert "0_0" in act["process1"] and "0_1" in act["process2"]
    assert len(act["process1"]) + len(act["process2"]) == 3
    # the previous actives flipped around (member3 of process1 ran task 2)
    act, _ = _solve(_app([("process2", 1, ["0_1"], []), ("process1", 1, ["0_2"], [])], partitions=3))
    assert "0_1" in act["process2"] and "0_2" in act["process1"]
    assert len(act["process1"]) + len(act["process2"]) == 3


def test_kafka_StickyTaskAssignorTest_shouldMigrateActiveTasksToNewProcessWithoutChangingAllAssignments():
    act, _ = _solve(_app([("process1", 1, ["0_0", "0_2"], []), ("process2", 1, ["0_1"], []),
                          ("process3", 1, [], [])], partitions=3))
    assert act["process1"] & {"0_0", "0_2"} and "0_1" in act["process2"]
    assert act["process3"] & {"0_0", "0_2"}
    assert sum(len(a) for a in act.values()) == 3


def test_kafka_StickyTaskAssignorTest_shouldAssignBasedOnCapacity():
    act, _ = _solve(_app([("process1", 1, [], []), ("process2", 2, [], [])], partitions=3))
    assert {c: len(a) for c, a in act.items()} == {"process1": 1, "process2": 2}


def test_kafka_StickyTaskAssignorTest_shouldAssignTasksEvenlyWithUnequalTopicGroupSizes():
    prev = _ids("1", range(6)) + _ids("2", [0])
    act, _ = _solve(_app([("process1", 1, prev, []), ("process2", 1, [], [])], partitions=6, subtopologies=("1",),
                         extra_tasks={"2_0": False}))
    assert {c: len(a) for c, a in act.items()} == {"process1": 4, "process2": 3}
    assert act["process1"] | act["process2"] == set(prev)


def test_kafka_StickyTaskAssignorTest_shouldKeepActiveTaskStickinessWhenMoreClientThanActiveTasks():
    procs = [("process1", 1, ["0_0"], []), ("process2", 1, ["0_2"], []), ("process3", 1, ["0_1"], []),
             ("process4", 1, [], []), ("process5", 1, [], [])]
    act, _ = _solve(_app(procs, partitions=3))
    assert act == {"process1": {"0_0"}, "process2": {"0_2"}, "process3": {"0_1"}, "process4": set(), "process5": set()}
    procs = [("process1", 1, [], []), ("process2", 1, ["0_0"], []), ("process3", 1, [], []),
             ("process4", 1, ["0_2"], []), ("process5", 1, ["0_1"], [])]
    act, _ = _solve(_app(procs, partitions=3))
    assert act == {"process1": set(), "process2": {"0_0"}, "process3": set(), "process4": {"0_2"}, "process5": {"0_1"}}


def test_kafka_StickyTaskAssignorTest_shouldAssignTasksToClientWithPreviousStandbyTasks():
    procs = [("process1", 1, [], ["0_2"]), ("process2", 1, [], ["0_1"]), ("process3", 1, [], ["0_0"])]
    act, _ = _solve(_app(procs, partitions=3))
    assert act == {"process1": {"0_2"}, "process2": {"0_1"}, "process3": {"0_0"}}


def test_kafka_StickyTaskAssignorTest_shouldNotAssignStandbyTasksToClientWithPreviousStandbyTasksAndCurrentActiveTasks():
    procs = [("process1", 1, [], ["0_0"]), ("process2", 1, [], ["0_1"])]
    act, sb = _solve(_app(procs, partitions=2, stateful=True, standbys=1))
    assert act == {"process1": {"0_0"}, "process2": {"0_1"}}
    assert sb == {"process1": {"0_1"}, "process2": {"0_0"}}


def test_kafka_StickyTaskAssignorTest_shouldAssignBasedOnCapacityWhenMultipleClientHaveStandbyTasks():
    # Kafka: member1 gets 0, member2_1 gets 2, member2_2 gets 1 -- process2 (two members) gets 1 and 2
    procs = [("process1", 1, ["0_0"], ["0_1"]), ("process2", 2, ["0_2"], ["0_1"])]
    act, _ = _solve(_app(procs, partitions=3))
    assert act == {"process1": {"0_0"}, "process2": {"0_1", "0_2"}}


def test_kafka_StickyTaskAssignorTest_shouldAssignStandbyTasksToDifferentClientThanCorrespondingActiveTaskIsAssignedTo():
    procs = [(f"process{i + 1}", 1, [f"0_{i}"], []) for i in range(4)]
    act, sb = _solve(_app(procs, partitions=4, stateful=True, standbys=1))
    for i in range(4):
        p = f"process{i + 1}"
        assert f"0_{i}" not in sb[p] and len(sb[p]) <= 2
    assert sum(1 for s in sb.values() if s) >= 3
    assert set().union(*sb.values()) == set(_ids(SUB, range(4)))


def test_kafka_StickyTaskAssignorTest_shouldAssignMultipleReplicasOfStandbyTask():
    procs = [(f"process{i + 1}", 1, [f"0_{i}"], []) for i in range(3)]
    _, sb = _solve(_app(procs, partitions=3, stateful=True, standbys=2))
    assert sb == {"process1": {"0_1", "0_2"}, "process2": {"0_0", "0_2"}, "process3": {"0_0", "0_1"}}


def test_kafka_StickyTaskAssignorTest_shouldNotAssignStandbyTaskReplicasWhenNoClientAvailableWithoutHavingTheTaskAssigned():
    _, sb = _solve(_app([("process1", 1, [], [])], partitions=1, stateful=True, standbys=1))
    assert sb == {"process1": set()}


def test_kafka_StickyTaskAssignorTest_shouldAssignActiveAndStandbyTasks():
    procs = [(f"process{i + 1}", 1, [], []) for i in range(3)]
    act, sb = _solve(_app(procs, partitions=3, stateful=True, standbys=1))
    assert set().union(*act.values()) == set(_ids(SUB, range(3)))
    assert set().union(*sb.values()) == set(_ids(SUB, range(3)))


def test_kafka_StickyTaskAssignorTest_shouldAssignAtLeastOneTaskToEachClientIfPossible():
    act, _ = _solve(_app([("process1", 3, [], []), ("process2", 1, [], []), ("process3", 1, [], [])], partitions=3))
    assert {c: len(a) for c, a in act.items()} == {"process1": 1, "process2": 1, "process3": 1}


def test_kafka_StickyTaskAssignorTest_shouldAssignEachActiveTaskToOneClientWhenMoreClientsThanTasks():
    act, _ = _solve(_app([(f"process{i + 1}", 1, [], []) for i in range(6)], partitions=3))
    assert sorted(t for a in act.values() for t in a) == _ids(SUB, range(3))


def test_kafka_StickyTaskAssignorTest_shouldBalanceActiveAndStandbyTasksAcrossAvailableClients():
    act, sb = _solve(_app([(f"process{i + 1}", 1, [], []) for i in range(6)], partitions=3, stateful=True, standbys=1))
    assert all(len(act[p]) + len(sb[p]) == 1 for p in act)


def test_kafka_StickyTaskAssignorTest_shouldAssignMoreTasksToClientWithMoreCapacity():
    act, _ = _solve(_app([("process1", 1, [], []), ("process2", 2, [], [])], partitions=3,
                         subtopologies=("0", "1", "2", "3")))
    assert {c: len(a) for c, a in act.items()} == {"process1": 4, "process2": 8}


@pytest.mark.parametrize("procs", [
    [(f"process{i + 1}", 1, [], []) for i in range(4)],
    [("process1", 1, ["0_1", "0_2"], []), ("process2", 1, ["0_3"], []), ("process3", 1, ["0_0"], []),
     ("process4", 1, [], [])],
    [("process1", 1, ["0_1", "0_2"], ["0_3", "0_0"]), ("process2", 1, ["0_3", "0_0"], ["0_1", "0_2"]),
     ("process3", 1, [], []), ("process4", 1, [], [])],
], ids=["test_kafka_StickyTaskAssignorTest_shouldNotHaveSameAssignmentOnAnyTwoHosts",
        "test_kafka_StickyTaskAssignorTest_shouldNotHaveSameAssignmentOnAnyTwoHostsWhenThereArePreviousActiveTasks",
        "test_kafka_StickyTaskAssignorTest_shouldNotHaveSameAssignmentOnAnyTwoHostsWhenThereArePreviousStandbyTasks"])
def test_kafka_StickyTaskAssignorTest_shouldNotHaveSameAssignmentOnAnyTwoHosts(procs):
    act, sb = _solve(_app(procs, partitions=4, stateful=True, standbys=1))
    held = [(frozenset(act[p]), frozenset(sb[p])) for p in act]  # Kafka compares actives, then standbys
    assert len(set(held)) == len(held)


def test_kafka_StickyTaskAssignorTest_shouldReBalanceTasksAcrossAllClientsWhenCapacityAndTaskCountTheSame():
    procs = [("process1", 1, [], []), ("process2", 1, [], []), ("process3", 1, _ids(SUB, range(4)), []),
             ("process4", 1, [], [])]
    act, _ = _solve(_app(procs, partitions=4))
    assert all(len(a) == 1 for a in act.values())


def test_kafka_StickyTaskAssignorTest_shouldReBalanceTasksAcrossClientsWhenCapacityLessThanTaskCount():
    procs = [("process1", 1, [], []), ("process2", 1, [], []), ("process3", 1, _ids(SUB, range(4)), [])]
    act, _ = _solve(_app(procs, partitions=4))
    assert {c: len(a) for c, a in act.items()} == {"process1": 1, "process2": 1, "process3": 2}


def test_kafka_StickyTaskAssignorTest_shouldRebalanceTasksToClientsBasedOnCapacity():
    act, _ = _solve(_app([("process2", 1, ["0_0", "0_3", "0_2"], []), ("process3", 2, [], [])], partitions=3))
    assert {c: len(a) for c, a in act.items()} == {"process2": 1, "process3": 2}


def test_kafka_StickyTaskAssignorTest_shouldMoveMinimalNumberOfTasksWhenPreviouslyAboveCapacityAndNewClientAdded():
    p1, p2 = {"0_0", "0_2"}, {"0_1", "0_3"}
    act, _ = _solve(_app([("process1", 1, sorted(p1), []), ("process2", 1, sorted(p2), []), ("process3", 1, [], [])],
                         partitions=4))
    assert len(act["process3"]) == 1
    if p1 & act["process3"]:
        assert act["process2"] == p2
    else:
        assert act["process1"] == p1


def test_kafka_StickyTaskAssignorTest_shouldNotMoveAnyTasksWhenNewTasksAdded():
    act, _ = _solve(_app([("process1", 1, ["0_0", "0_1"], []), ("process2", 1, ["0_2", "0_3"], [])], partitions=6))
    assert {"0_0", "0_1"} <= act["process1"] and {"0_2", "0_3"} <= act["process2"]


def test_kafka_StickyTaskAssignorTest_shouldAssignNewTasksToNewClientWhenPreviousTasksAssignedToOldClients():
    act, _ = _solve(_app([("process1", 1, ["0_2", "0_1"], []), ("process2", 1, ["0_0", "0_3"], []),
                          ("process3", 1, [], [])], partitions=6))
    assert {"0_1", "0_2"} <= act["process1"] and {"0_0", "0_3"} <= act["process2"]
    assert {"0_4", "0_5"} <= act["process3"]


_SUBS = ("0", "1", "2")
_P1 = (["0_1", "1_2", "1_3"], ["0_0", "1_1", "2_0", "2_1", "2_3"])
_P2 = (["0_0", "1_1", "2_2"], ["0_1", "0_2", "0_3", "1_0", "1_2", "1_3", "2_0", "2_1", "2_3"])


@pytest.mark.parametrize("others", [
    [("process3", 1, ["2_0", "2_1", "2_3"], ["0_2", "1_2"]),
     ("process4", 1, [], [f"{s}_{p}" for s in _SUBS for p in range(4)])],
    [("bounce1", 1, [], ["2_0", "2_1", "2_3"]), ("bounce2", 1, [], ["0_2", "0_3", "1_0"])],
], ids=["test_kafka_StickyTaskAssignorTest_shouldAssignTasksNotPreviouslyActiveToNewClient",
        "test_kafka_StickyTaskAssignorTest_shouldAssignTasksNotPreviouslyActiveToMultipleNewClients"])
def test_kafka_StickyTaskAssignorTest_shouldAssignTasksNotPreviouslyActive(others):
    procs = [("process1", 1, *_P1), ("process2", 1, *_P2), *others]
    act, _ = _solve(_app(procs, partitions=4, subtopologies=_SUBS))
    a, b = others[0][0], others[1][0]
    assert act["process1"] == {"0_1", "1_2", "1_3"}
    assert act["process2"] == {"0_0", "1_1", "2_2"}
    assert act[a] == {"2_0", "2_1", "2_3"}
    assert act[b] == {"0_2", "0_3", "1_0"}


def test_kafka_StickyTaskAssignorTest_shouldAssignTasksToNewClient():
    act, _ = _solve(_app([("process1", 1, ["0_1", "0_2"], []), ("process2", 1, [], [])], partitions=2))
    assert len(act["process1"]) == 1


def test_kafka_StickyTaskAssignorTest_shouldAssignTasksToNewClientWithoutFlippingAssignmentBetweenExistingClients():
    act, _ = _solve(_app([("process1", 1, ["0_0", "0_1", "0_2"], []), ("process2", 1, ["0_3", "0_4", "0_5"], []),
                          ("process3", 1, [], [])], partitions=6))
    assert len(act["process1"]) == 2 and act["process1"] <= {"0_0", "0_1", "0_2"}
    assert len(act["process2"]) == 2 and act["process2"] <= {"0_3", "0_4", "0_5"}
    assert len(act["process3"]) == 2


def test_kafka_StickyTaskAssignorTest_shouldAssignTasksToNewClientWithoutFlippingAssignmentBetweenExistingAndBouncedClients():
    act, _ = _solve(_app([("process1", 1, ["0_0", "0_1", "0_2", "0_6"], []), ("process2", 1, [], ["0_3", "0_4", "0_5"]),
                          ("newProcess", 1, [], [])], partitions=7))
    assert len(act["process1"]) == 3 and not act["process1"] & {"0_3", "0_4", "0_5"}
    assert len(act["process2"]) == 2 and not act["process2"] & {"0_0", "0_1", "0_2"}
    assert len(act["newProcess"]) == 2


# --------------------------------------------------------------------------- beyond Kafka's test file

def test_kip1071_standbys_spread_over_tag_values_first():
    # rack_aware_assignment_tags: the standby goes to a process with a new zone value, even off the previous holder
    doc = _app([("a", 1, ["0_0"], []), ("b", 1, [], ["0_0"]), ("c", 1, [], [])], partitions=1, stateful=True,
               standbys=1)
    for c, z in zip(doc["clients"], ["z1", "z1", "z2"]):
        c["tags"] = {"zone": z}
    doc["config"]["rack_aware_assignment_tags"] = ["zone"]
    act, sb = _solve(doc)
    assert act["a"] == {"0_0"} and sb["c"] == {"0_0"}
    doc["config"]["rack_aware_assignment_tags"] = []
    act, sb = _solve(doc)
    assert sb["b"] == {"0_0"}  # without tags, the previous standby keeps it


def test_kip1071_results_are_checked_but_not_held_to_the_rules_kafka_4_does_not_follow():
    # a lagging client gets the active (the caught-up previous owner is over quota): valid for kip1071,
    # with no warm-up and no follow-up; the high-availability ``sticky`` assignor would warm up instead
    doc = _app([("a", 1, ["0_0", "0_1"], []), ("b", 1, [], [])], partitions=2, stateful=True)
    for t in doc["tasks"]:
        t["end_offset_sum"] = 10**6  # b, with no state, is far behind
    act, _ = _solve(doc)
    assert len(act["a"]) == len(act["b"]) == 1
    from stickyflow.check.streams import validate_streams
    from stickyflow.greedy.kip1071 import assign_kip1071
    from stickyflow.snapshot import as_snapshot

    snap = as_snapshot(doc)
    d = assign_kip1071(snap)
    codes = {v.code for v in validate_streams(snap, d.assignment, followup_rebalance_deadline_ms=None)}
    assert codes == {"ACTIVE_TASK_NOT_CAUGHT_UP"}
    # an assignor may not waive KIP-924's own rules: a task active twice is still refused
    from stickyflow.check.streams import finish_streams
    from stickyflow.model.streams import ClientAssignment
    from stickyflow.result import Decision

    bad = Decision(assignment={"a": ClientAssignment.of(["0_0", "0_1"], [], ()), "b": ClientAssignment.of(["0_0"], [], ())},
                   method="kip1071", status="heuristic",
                   extra={"rules_not_followed": ("ACTIVE_TASK_ASSIGNED_MULTIPLE_TIMES", "ACTIVE_TASK_NOT_CAUGHT_UP")})
    assert [v.code for v in finish_streams(snap, bad).violations] == ["ACTIVE_TASK_ASSIGNED_MULTIPLE_TIMES"]


@pytest.mark.parametrize("scenario", ["fresh", "steady", "scale_out", "scale_in", "rolling_restart", "rack_outage",
                                      "lag_skew", "mixed", "uniform"])
def test_kip1071_on_generated_apps_is_valid_and_deterministic(scenario):
    from stickyflow.datasets.generators import streams_snapshot

    for seed in range(4):
        print("seed", seed)
        doc = streams_snapshot(scenario, tasks=40, clients=5, subtopologies=3, seed=seed, num_standby_replicas=seed % 3,
                               threads=(1, 2, 3) if seed % 2 else 1)
        act, sb = _solve(doc)
        again = stickyflow.assign(doc, "kip1071").to_json()["assignment"]
        assert {c: set(a["active"]) for c, a in again.items()} == act
        clients = len(doc["clients"])
        want = min(seed % 3, clients - 1)
        stateful = {t["id"] for t in doc["tasks"] if t["stateful"]}
        held = [t for s in sb.values() for t in s]
        assert all(held.count(t) == want for t in stateful) and set(held) <= stateful
