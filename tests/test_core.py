"""The core: reading and rejecting snapshots, KIP-341 claims, the cooperative step, the registry, the fallback."""

from __future__ import annotations

import json

import numpy as np
import pytest

import stickyflow
from stickyflow import InvalidSnapshotError, parse_snapshot
from stickyflow.model.consumer import consumer_to_json
from stickyflow.model.consumer_claims import previous_owners
from tests.checker import check_result
from tests.conftest import example_paths


def consumer(**kw):
    doc = {"format": "stickyflow.snapshot/1", "kind": "consumer", "topics": {"t": {"partitions": 4}},
           "members": [{"id": "a", "subscription": ["t"]}, {"id": "b", "subscription": ["t"]}]}
    doc.update(kw)
    return doc


@pytest.mark.parametrize("path", [p for p in example_paths() if "consumer" in p.name], ids=lambda p: p.name)
def test_examples_round_trip(path):
    doc = json.loads(path.read_text())
    snap = parse_snapshot(doc)
    again = parse_snapshot(consumer_to_json(snap))
    assert consumer_to_json(again) == consumer_to_json(snap)


@pytest.mark.parametrize("mutate, field", [
    (lambda d: d.update(format="stickyflow.snapshot/2"), "format"),
    (lambda d: d.pop("format"), "format"),
    (lambda d: d.update(kind="group"), "kind"),
    (lambda d: d.update(topics=[]), "topics"),
    (lambda d: d["topics"].update(t={"partitions": 0}), "topics.t.partitions"),
    (lambda d: d["topics"].update(t={"partitions": True}), "topics.t.partitions"),
    (lambda d: d["topics"].update(t={"partitions": 2, "racks": [["a"]]}), "topics.t.racks"),
    (lambda d: d["topics"].update(t={"partitions": 1, "racks": [[1]]}), "topics.t.racks[0]"),
    (lambda d: d["members"].append({"id": "a", "subscription": ["t"]}), "members[2].id"),
    (lambda d: d["members"][0].pop("subscription"), "members[0].subscription"),
    (lambda d: d["members"][0].update(subscription="t"), "members[0].subscription"),
    (lambda d: d["members"][0].update(owned={"t": [0, -1]}), "members[0].owned.t[1]"),
    (lambda d: d["members"][0].update(owned={"t": [0.5]}), "members[0].owned.t[0]"),
    (lambda d: d["members"][0].update(generation="1"), "members[0].generation"),
    (lambda d: d["members"][0].update(rack=3), "members[0].rack"),
    (lambda d: d.update(config={"trafic_cost": 3}), "config.trafic_cost"),
    (lambda d: d.update(config={"traffic_cost": -1}), "config.traffic_cost"),
    (lambda d: d.update(config={"rack_aware": "yes"}), "config.rack_aware"),
    (lambda d: d.update(protocol="sticky"), "protocol"),
    (lambda d: d.update(now_ms=1.5), "now_ms"),
    (lambda d: d.update(id=7), "id"),
])
def test_bad_input_names_the_field(mutate, field):
    doc = consumer()
    mutate(doc)
    with pytest.raises(InvalidSnapshotError) as err:
        parse_snapshot(doc)
    assert err.value.field == field, err.value.problems
    assert field in str(err.value)


def test_every_problem_is_reported():
    doc = consumer(config={"bogus": 1}, protocol="x")
    doc["members"][1]["id"] = 3
    with pytest.raises(InvalidSnapshotError) as err:
        parse_snapshot(doc)
    assert {p.field for p in err.value.problems} == {"config.bogus", "protocol", "members[1].id"}


def test_stale_and_contradictory_claims_are_not_errors():
    doc = consumer(topics={"t": {"partitions": 3}})
    doc["members"][0].update(generation=4, owned={"t": [0, 1, 9], "gone": [0]})
    doc["members"][1].update(generation=4, owned={"t": [1, 2]})
    snap = parse_snapshot(doc)
    prev = previous_owners(snap)
    assert prev.owner["t"].tolist() == [0, -1, 1]  # equal generations on partition 1: nobody wins
    assert prev.of("t", 1) is None and prev.of("gone", 0) is None
    for name in stickyflow.available_assignors("consumer"):
        check_result(snap, stickyflow.assign(snap, name))


def test_higher_generation_wins_and_unsubscribed_owner_still_counts_for_moves():
    doc = consumer(topics={"t": {"partitions": 2}, "u": {"partitions": 1}})
    doc["members"][0].update(generation=3, owned={"t": [0, 1], "u": [0]}, subscription=["t"])
    doc["members"][1].update(generation=5, owned={"t": [1]}, subscription=["t", "u"])
    snap = parse_snapshot(doc)
    assert previous_owners(snap).owner["t"].tolist() == [0, 1]
    r = stickyflow.assign(snap)
    check_result(snap, r)
    assert r.metrics["moves"] == 1  # u-0 must leave a, which no longer subscribes to u
    assert r.to_json()["assignment"] == {"a": {"t": [0]}, "b": {"t": [1], "u": [0]}}


def test_cooperative_withholds_and_revokes():
    doc = consumer(protocol="cooperative", now_ms=1234)
    doc["members"][0].update(generation=2, owned={"t": [0, 1, 2, 3]})
    snap = parse_snapshot(doc)
    r = stickyflow.assign(snap)
    check_result(snap, r)
    out = r.to_json()
    assert out["revocations"] == {"a": {"t": [2, 3]}}
    assert out["assignment"] == {"a": {"t": [0, 1]}, "b": {}}
    assert out["followup_rebalance_deadline_ms"] == 1234
    assert r.metrics["moves"] == 2 and r.metrics["withheld"] == 2
    # the follow-up round: a reports what it kept, nothing is revoked any more
    doc["members"][0]["owned"] = {"t": [0, 1]}
    r2 = stickyflow.assign(doc)
    assert r2.revocations == {} and r2.followup_rebalance_deadline_ms is None
    assert r2.to_json()["assignment"] == {"a": {"t": [0, 1]}, "b": {"t": [2, 3]}}


def test_unknown_assignor_lists_known_ones():
    with pytest.raises(stickyflow.UnknownAssignorError) as err:
        stickyflow.assign(consumer(), "greedy")
    assert "optimal" in str(err.value) and "range" in str(err.value)


def test_custom_assignor_by_registration_and_by_path():
    def last_member_takes_all(snapshot, options):
        last = snapshot.members[-1].id
        return stickyflow.Decision(assignment={last: {"t": range(4)}}, method="custom", status="heuristic")

    stickyflow.register_assignor("last", last_member_takes_all, kinds=("consumer",))
    try:
        r = stickyflow.assign(consumer(), "last")
        assert r.to_json()["assignment"] == {"a": {}, "b": {"t": [0, 1, 2, 3]}}
        assert r.metrics["imbalance"] == 4
    finally:
        stickyflow.unregister_assignor("last")
    r = stickyflow.assign(consumer(), "stickyflow.greedy.range_roundrobin:assign_range")
    assert r.solver.method == "range"


def test_invalid_custom_assignor_is_a_solver_fault():
    def broken(snapshot, options):
        return stickyflow.Decision(assignment={"a": {"t": [0, 0]}}, method="broken", status="heuristic")

    stickyflow.register_assignor("broken", broken, kinds=("consumer",))
    try:
        with pytest.raises(stickyflow.SolverFaultError, match="PARTITION_ASSIGNED_MULTIPLE_TIMES"):
            stickyflow.assign(consumer(), "broken")
    finally:
        stickyflow.unregister_assignor("broken")


@pytest.mark.parametrize("fault", ["missing", "crash", "invalid"])
def test_optimizer_faults_fall_back_to_sticky(monkeypatch, fault):
    import stickyflow.formulations.consumer.flow as cf
    from stickyflow.errors import BackendMissingError

    def missing(*a, **k):
        raise BackendMissingError("OR-Tools is not installed")

    def crash(*a, **k):
        raise RuntimeError("boom")

    def invalid(snapshot, options=None):
        return stickyflow.Decision(assignment={"a": {"t": [0]}}, method="flow", status="optimal")

    monkeypatch.setattr(cf, "solve_flow", {"missing": missing, "crash": crash, "invalid": invalid}[fault])
    snap = parse_snapshot(consumer())
    r = stickyflow.assign(snap)
    check_result(snap, r)
    assert r.solver.status == "fallback" and r.solver.method == "sticky"
    assert r.solver.reason and {"missing": "OR-Tools", "crash": "boom", "invalid": "PARTITION_UNASSIGNED"}[fault] in r.solver.reason
    with pytest.raises(stickyflow.StickyflowError):
        stickyflow.assign(snap, fallback=False)


def test_range_and_roundrobin_follow_kafka():
    doc = {"format": "stickyflow.snapshot/1", "kind": "consumer",
           "topics": {"t0": {"partitions": 3}, "t1": {"partitions": 3}},
           "members": [{"id": "C1", "subscription": ["t0", "t1"]}, {"id": "C0", "subscription": ["t0", "t1"]}]}
    assert stickyflow.assign(doc, "range").to_json()["assignment"] == {
        "C1": {"t0": [2], "t1": [2]}, "C0": {"t0": [0, 1], "t1": [0, 1]}}
    assert stickyflow.assign(doc, "roundrobin").to_json()["assignment"] == {
        "C1": {"t0": [1], "t1": [0, 2]}, "C0": {"t0": [0, 2], "t1": [1]}}
    # mixed subscriptions: round-robin skips members that do not subscribe (kafka-python's crashes here)
    doc["members"].append({"id": "C2", "subscription": ["t1"]})
    r = stickyflow.assign(doc, "roundrobin")
    check_result(parse_snapshot(doc), r)
    assert r.to_json()["assignment"]["C2"] == {"t1": [1]}


def test_empty_group_and_nothing_to_assign():
    for doc in (consumer(members=[]), consumer(topics={}), consumer(members=[{"id": "x", "subscription": []}])):
        snap = parse_snapshot(doc)
        for name in stickyflow.available_assignors("consumer"):
            r = stickyflow.assign(snap, name)
            check_result(snap, r)
            assert all(not t for t in r.assignment.values())


def test_rack_aware_default_and_cross_rack_metric():
    doc = consumer(topics={"t": {"partitions": 2, "racks": [["r1"], ["r2"]]}})
    doc["members"][0]["rack"] = "r1"
    doc["members"][1]["rack"] = "r2"
    r = stickyflow.assign(doc)
    assert r.metrics["cross_rack"] == 0 and r.to_json()["assignment"] == {"a": {"t": [0]}, "b": {"t": [1]}}
    doc["config"] = {"rack_aware": False}
    assert stickyflow.assign(doc).metrics["cross_rack"] is None


def test_result_json_shape():
    r = stickyflow.assign(consumer(id="x"))
    out = json.loads(stickyflow.dumps_result(r))
    assert out["format"] == "stickyflow.result/1" and out["id"] == "x" and out["kind"] == "consumer"
    assert set(out) >= {"assignor", "assignment", "revocations", "followup_rebalance_deadline_ms", "error",
                        "solver", "metrics"}
    assert set(out["solver"]) >= {"method", "status", "reason", "objective", "bound", "wall_s"}
    assert set(out["metrics"]) >= {"moves", "imbalance", "cross_rack"}
    assert out["solver"]["status"] == "optimal" and out["solver"]["bound"] == out["solver"]["objective"]


def test_owned_as_numpy_and_big_numbers_are_fine():
    snap = parse_snapshot(consumer(topics={"t": {"partitions": 1000}}))
    r = stickyflow.assign(snap)
    assert sum(len(p) for t in r.assignment.values() for p in t.values()) == 1000
    assert np.array_equal(np.sort(np.concatenate([np.asarray(r.assignment[m]["t"]) for m in ("a", "b")])),
                          np.arange(1000))


@pytest.mark.parametrize("seed", range(40))
def test_nonzero_pairs_is_numpys_nonzero(seed):
    """The flat-position helper gives what NumPy's 2-D nonzero gives (row-major, int64), on empty, full,
    transposed and sliced masks alike."""
    from stickyflow.model.arrays import nonzero_pairs

    rng = np.random.default_rng(seed)
    shape = (int(rng.integers(0, 30)), int(rng.integers(0, 30)))
    mask = rng.random(shape) < rng.choice([0.0, 0.1, 0.5, 1.0])
    for view in (mask, mask.T, mask[:, ::2], mask[::-1]):
        rows, cols = nonzero_pairs(view)
        want_rows, want_cols = np.nonzero(view)
        assert rows.dtype == cols.dtype == np.int64
        assert rows.tolist() == want_rows.tolist() and cols.tolist() == want_cols.tolist()
