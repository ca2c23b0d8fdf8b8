"""The streams validity check (every violation, KIP-924 names first), the error mapping, metrics and finish."""

from __future__ import annotations

import copy

import pytest

import stickyflow
from stickyflow.check.streams import (ERROR_ORDER, KIP924_ERRORS, assignment_error, finish_streams,
                                      normalize_streams_assignment, streams_metrics, validate_streams)
from stickyflow.model.streams import parse_streams
from stickyflow.result import Decision

DOC = {
    "format": "stickyflow.snapshot/1", "kind": "streams", "now_ms": 1000,
    "tasks": [
        {"id": "0_0", "stateful": True, "end_offset_sum": 100_000,
         "input_partitions": [{"topic": "in", "partition": 0, "racks": ["r1"]},
                              {"topic": "in2", "partition": 0, "racks": ["r1", "r2"]}],
         "changelog_partitions": [{"topic": "cl", "partition": 0, "racks": ["r2"]}]},
        {"id": "0_1", "stateful": True, "end_offset_sum": 100_000,
         "input_partitions": [{"topic": "in", "partition": 1, "racks": ["r2"]}],
         "changelog_partitions": [{"topic": "cl", "partition": 1, "racks": ["r1"]}]},
        {"id": "1_0", "stateful": False, "input_partitions": [{"topic": "x", "partition": 0}]},
    ],
    "clients": [
        {"process_id": "a", "rack": "r1", "tags": {"zone": "z1"}, "previous_active": ["0_0"],
         "previous_standby": ["0_1"], "lags": {"0_1": 50}},
        {"process_id": "b", "rack": "r2", "tags": {"zone": "z1"}, "previous_active": ["0_1"],
         "previous_standby": []},
        {"process_id": "c", "rack": "r2", "tags": {"zone": "z2"}, "previous_active": ["1_0"],
         "previous_standby": []},
    ],
    "config": {"num_standby_replicas": 1},
}
SNAP = parse_streams(DOC)
GOOD = {"a": {"active": ["0_0"], "standby": ["0_1"]},
        "b": {"active": ["0_1"]},
        "c": {"active": ["1_0"], "standby": ["0_0"]}}
DUE = 1000 + 600000


def codes(assignment, snap=SNAP, followup=None):
    return [v.code for v in validate_streams(snap, assignment, followup_rebalance_deadline_ms=followup)]


def with_(changes):
    a = copy.deepcopy(GOOD)
    for pid, roles in changes.items():
        if roles is None:
            a.pop(pid)
        else:
            a.setdefault(pid, {}).update(roles)
    return a


def test_a_valid_assignment_has_no_violation():
    assert codes(GOOD) == []
    assert assignment_error(validate_streams(SNAP, GOOD)) == "NONE"


@pytest.mark.parametrize("change,code", [
    ({"zz": {"active": []}}, "UNKNOWN_PROCESS_ID"),
    ({"c": None}, "MISSING_PROCESS_ID"),
    ({"c": {"active": ["1_0", "5_5"]}}, "UNKNOWN_TASK_ID"),
    ({"c": {"active": ["1_0", "0_1"]}}, "ACTIVE_TASK_ASSIGNED_MULTIPLE_TIMES"),
    ({"b": {"active": ["0_1"], "standby": ["0_1"]}}, "ACTIVE_AND_STANDBY_TASK_ASSIGNED_TO_SAME_KAFKASTREAMS"),
    ({"b": {"active": ["0_1"], "warmup": ["0_1"]}}, "ACTIVE_AND_STANDBY_TASK_ASSIGNED_TO_SAME_KAFKASTREAMS"),
    ({"a": {"active": ["0_0"], "standby": ["0_1", "1_0"]}}, "INVALID_STANDBY_TASK"),
    ({"a": {"active": ["0_0"], "standby": ["0_1"], "warmup": ["1_0"]}}, "INVALID_STANDBY_TASK"),
    ({"c": {"active": ["1_0"], "standby": ["0_0"], "warmup": ["0_0"]}}, "STANDBY_TASK_ASSIGNED_MULTIPLE_TIMES"),
    ({"c": {"active": []}}, "ACTIVE_TASK_UNASSIGNED"),
    ({"c": {"active": ["1_0"], "standby": []}}, "STANDBY_TASK_COUNT"),
    ({"b": {"active": ["0_1"], "standby": ["0_0"]}}, "STANDBY_TASK_COUNT"),
    ({"a": {"active": [], "standby": ["0_1"]}, "b": {"active": ["0_1", "0_0"]}, "c": {"standby": ["0_0"]}},
     "ACTIVE_TASK_NOT_CAUGHT_UP"),
])
def test_each_rule_is_reported(change, code):
    assert code in codes(with_(change))


def test_warmup_budget_and_followup_rules():
    snap = parse_streams({**DOC, "config": {"num_standby_replicas": 0, "max_warmup_replicas": 1}})
    base = {"a": {"active": ["0_0"]}, "b": {"active": ["0_1"]}, "c": {"active": ["1_0"]}}
    one = copy.deepcopy(base)
    one["c"]["warmup"] = ["0_0"]
    assert codes(one, snap, DUE) == []
    assert codes(one, snap, None) == ["FOLLOWUP_DEADLINE"]
    assert codes(one, snap, DUE + 1) == ["FOLLOWUP_DEADLINE"]
    two = copy.deepcopy(one)
    two["c"]["warmup"] = ["0_0", "0_1"]
    assert codes(two, snap, DUE) == ["WARMUP_BUDGET_EXCEEDED"]
    # a follow-up is due exactly when a move waits: with no warm-up and no lagging standby, nothing does
    assert codes(base, snap, DUE) == ["FOLLOWUP_DEADLINE"]
    assert codes(base, snap, 5) == ["FOLLOWUP_DEADLINE"]
    learner = parse_streams({**DOC, "config": {"rebalancing_mode": "learner"}})
    assert "WARMUP_BUDGET_EXCEEDED" in codes(two, learner, DUE)
    # without the follow-up arguments these rules are not checked
    assert [v.code for v in validate_streams(snap, two)] == ["WARMUP_BUDGET_EXCEEDED"]


def test_unbalanced_without_followup():
    snap = parse_streams({**DOC, "config": {}})
    lopsided = {"a": {"active": ["0_0", "0_1", "1_0"]}, "b": {}, "c": {}}
    # a is caught up for everything it holds (0_1: lag 50), so only the balance rule breaks
    assert codes(lopsided, snap) == ["UNBALANCED_WITHOUT_FOLLOWUP"]
    assert codes(lopsided, snap, DUE) == ["FOLLOWUP_DEADLINE"]  # a follow-up, yet no move waits
    wide = parse_streams({**DOC, "config": {"balance_factor": 3}})
    assert "UNBALANCED_WITHOUT_FOLLOWUP" not in codes(lopsided, wide)


def test_imbalance_counts_threads():
    doc = copy.deepcopy(DOC)
    doc["clients"][0]["threads"] = 2
    snap = parse_streams(doc)
    m = streams_metrics(snap, {"a": {"active": ["0_0", "1_0"], "standby": ["0_1"]}, "b": {"active": ["0_1"]},
                               "c": {"standby": ["0_0"]}})
    assert m["imbalance"] == 1.0 and m["max_active_per_thread"] == 1.0 and m["min_active_per_thread"] == 0.0


def test_tag_spread_rule():
    doc = copy.deepcopy(DOC)
    doc["config"] = {"num_standby_replicas": 1, "rack_aware_assignment_tags": ["zone"]}
    snap = parse_streams(doc)
    # 0_0 active on a (z1) with its standby on b (z1) while c (z2) is free: not spread
    bad = {"a": {"active": ["0_0"], "standby": ["0_1"]}, "b": {"active": ["0_1"], "standby": ["0_0"]},
           "c": {"active": ["1_0"]}}
    assert "STANDBY_TAGS_NOT_SPREAD" in codes(bad, snap)
    good = {"a": {"active": ["0_0"]}, "b": {"active": ["0_1"]},
            "c": {"active": ["1_0"], "standby": ["0_0", "0_1"]}}
    assert codes(good, snap) == []
    # only one zone value among clients that could take it: nothing to spread onto
    doc["clients"][2]["tags"] = {"zone": "z1"}
    assert "STANDBY_TAGS_NOT_SPREAD" not in codes(bad, parse_streams(doc))


def test_error_mapping_prefers_kip924_names():
    assert ERROR_ORDER[0] == "MALFORMED_ASSIGNMENT"
    assert ERROR_ORDER[1:7] == ("UNKNOWN_PROCESS_ID", "MISSING_PROCESS_ID", "UNKNOWN_TASK_ID",
                               "ACTIVE_TASK_ASSIGNED_MULTIPLE_TIMES",
                               "ACTIVE_AND_STANDBY_TASK_ASSIGNED_TO_SAME_KAFKASTREAMS", "INVALID_STANDBY_TASK")
    assert set(KIP924_ERRORS) - {"NONE"} <= set(ERROR_ORDER)
    v = validate_streams(SNAP, with_({"c": {"active": []}, "zz": {"active": ["0_0"]}}))
    assert assignment_error(v) == "UNKNOWN_PROCESS_ID"
    assert {x.code for x in v} >= {"UNKNOWN_PROCESS_ID", "ACTIVE_TASK_UNASSIGNED"}


def test_metrics_by_hand():
    m = streams_metrics(SNAP, GOOD)
    assert m["moves"] == 0 and m["warmups"] == 0 and m["standbys"] == 2
    # KIP-925: a (r1) active 0_0: in r1 ok, in2 r1/r2 ok; standby 0_1 changelog r1: ok.
    # b (r2) active 0_1: in r2 ok. c (r2) active 1_0: racks unknown; standby 0_0 changelog r2: ok.
    # c held 0_0 in no role before: its standby there is a standby move, the whole cost
    assert m["cross_rack"] == 0 and m["traffic_cost"] == 0 and m["standby_moves"] == 1 and m["cost"] == 1
    assert m["balanced"] and m["balanced_active"] and m["balanced_replicas"]
    swapped = {"a": {"active": ["0_1"], "standby": ["0_0"]}, "b": {"active": ["0_0"]},
               "c": {"active": ["1_0"], "standby": ["0_1"]}}
    m = streams_metrics(SNAP, swapped)
    # a active 0_1 (in r2): 1; a standby 0_0 (cl r2): 1; b active 0_0 (in r1: 1, in2 ok); c standby 0_1 (cl r1): 1
    assert m["cross_rack"] == 4 and m["moves"] == 2 and m["stateful_moves"] == 2
    # a held 0_0 as active (no standby move), c never held 0_1 (one); strategy none: moves + standby moves
    assert m["traffic_cost"] == 40 and m["standby_moves"] == 1 and m["cost"] == 2 + 1
    ra = parse_streams({**DOC, "config": {"num_standby_replicas": 1, "rack_aware_assignment_strategy": "min_traffic"}})
    assert streams_metrics(ra, swapped)["cost"] == 40 + 2 + 1
    norack = copy.deepcopy(DOC)
    for c in norack["clients"]:
        c.pop("rack")
    assert streams_metrics(parse_streams(norack), GOOD)["cross_rack"] is None


def test_finish_normalizes_and_measures():
    d = Decision(assignment={"a": {"active": ["0_0"], "standby": ["0_1"]}, "b": {"active": ["0_1"]},
                             "c": {"standby": ["0_0"], "active": ["1_0"]}},
                 method="test", status="heuristic")
    f = finish_streams(SNAP, d)
    assert not f.violations and f.followup_rebalance_deadline_ms is None
    assert list(f.assignment) == ["a", "b", "c"]
    assert f.assignment["c"].to_json() == {"active": ["1_0"], "standby": ["0_0"], "warmup": []}
    assert f.metrics["moves"] == 0
    n = normalize_streams_assignment(SNAP, {"a": {"active": ["0_1", "0_0"]}})
    assert n["a"].active == ("0_0", "0_1") and n["c"].active == ()
    with pytest.raises(ValueError):
        normalize_streams_assignment(SNAP, {"a": {"actives": []}})


def test_front_door_rejects_an_invalid_custom_streams_assignor():
    def broken(snapshot, options):
        return Decision(assignment={"a": {"active": ["0_0", "0_1", "1_0"], "standby": ["1_0"]}},
                        method="broken", status="heuristic")

    stickyflow.register_assignor("broken-streams", broken, kinds=("streams",))
    try:
        with pytest.raises(stickyflow.SolverFaultError) as err:
            stickyflow.assign(SNAP, "broken-streams")
        assert "INVALID_STANDBY_TASK" in str(err.value) or "ACTIVE_AND_STANDBY" in str(err.value)
    finally:
        stickyflow.unregister_assignor("broken-streams")


def test_a_malformed_decision_is_a_violation_not_a_crash():
    f = finish_streams(SNAP, Decision(assignment={"a": {"actives": ["0_0"]}}, method="x", status="heuristic"))
    assert [v.code for v in f.violations] == ["MALFORMED_ASSIGNMENT"]
    assert assignment_error(f.violations) == "MALFORMED_ASSIGNMENT"
    stickyflow.register_assignor("malformed-streams", lambda s, o: Decision(assignment={"a": 3}, method="x",
                                                                            status="heuristic"), kinds=("streams",))
    try:
        with pytest.raises(stickyflow.SolverFaultError):
            stickyflow.assign(SNAP, "malformed-streams")
    finally:
        stickyflow.unregister_assignor("malformed-streams")
