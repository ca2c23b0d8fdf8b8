"""The streams model: reading the spec's JSON, Kafka's defaults, the one lag rule, input errors naming the field."""

from __future__ import annotations

import copy
import json

import pytest

import stickyflow
from stickyflow.adapters.cli import main
from stickyflow.greedy.streams_rank import rank
from stickyflow.model.streams import (ClientAssignment, StreamsConfig, parse_streams, parse_task_id, streams_to_json,
                                      task_key)
from tests.conftest import example_paths

BASE = {
    "format": "stickyflow.snapshot/1", "kind": "streams", "id": "m", "now_ms": 5,
    "tasks": [
        {"id": "0_0", "stateful": True, "end_offset_sum": 50_000,
         "input_partitions": [{"topic": "in", "partition": 0, "racks": ["r1"]}],
         "changelog_partitions": [{"topic": "cl", "partition": 0, "racks": ["r1", "r2"]}]},
        {"id": "0_1", "stateful": True, "end_offset_sum": 50_000},
        {"id": "1_0", "stateful": False},
    ],
    "clients": [
        {"process_id": "a", "threads": 2, "rack": "r1", "tags": {"zone": "z1"},
         "previous_active": ["0_0", "1_0"], "previous_standby": ["0_1"], "lags": {"0_1": 700}},
        {"process_id": "b", "previous_active": ["0_1"], "previous_standby": [], "lags": {"0_1": 20_000, "0_0": -2}},
        {"process_id": "c", "previous_active": [], "previous_standby": []},
    ],
}


def streams_examples():
    return [p for p in example_paths() if json.loads(p.read_text()).get("kind") == "streams"]


@pytest.mark.parametrize("path", streams_examples(), ids=lambda p: p.name)
def test_every_shared_streams_example_reads_and_round_trips(path):
    snap = stickyflow.load_snapshot(path)
    assert snap.kind == "streams"
    again = parse_streams(streams_to_json(snap))
    assert streams_to_json(again) == streams_to_json(snap)
    for c in snap.clients:
        for t in snap.tasks:
            assert c.lag(t) == again.client(c.process_id).lag(t)


def test_defaults_are_kafkas():
    cfg = StreamsConfig()
    assert (cfg.acceptable_recovery_lag, cfg.max_warmup_replicas, cfg.num_standby_replicas,
            cfg.probing_rebalance_interval_ms, cfg.balance_factor) == (10000, 2, 0, 600000, 1)
    assert cfg.rack_aware_assignment_strategy == "none" and cfg.rack_aware_assignment_tags == ()
    assert cfg.rebalancing_mode == "warmup"
    assert (cfg.traffic_cost(), cfg.non_overlap_cost()) == (10, 1)
    assert (cfg.traffic_cost(stateless=True), cfg.non_overlap_cost(stateless=True)) == (1, 0)
    over = StreamsConfig(rack_aware_assignment_traffic_cost=3, rack_aware_assignment_non_overlap_cost=0)
    assert (over.traffic_cost(stateless=True), over.non_overlap_cost()) == (3, 0)
    snap = parse_streams({k: v for k, v in BASE.items()})
    assert snap.config == StreamsConfig()
    assert snap.clients[1].threads == 1


def test_lags_are_translated_once_at_the_edge():
    snap = parse_streams(BASE)
    t00, t01, t10 = snap.tasks
    a, b, c = snap.clients
    assert a.lag(t00) == 0              # previous active, absent from lags: -2, running it
    assert a.lag(t01) == 700            # reported
    assert b.lag(t01) == 20_000         # a reported lag beats "previous active"
    assert b.lag(t00) == 0              # -2 reported for a task it did not list
    assert c.lag(t00) == 50_000         # no local state: the end offset sum
    assert a.lag(t10) == c.lag(t10) == 0  # stateless
    assert [snap.is_caught_up(x, t01) for x in (a, b, c)] == [True, False, False]
    assert "0_0" in a.running and "0_1" not in b.running
    idx = snap.index
    assert idx.lag(2, 0) == 50_000 and idx.lag(1, 1) == 20_000
    assert list(idx.caught_up_clients(1)) == [0]
    assert idx.prev_active.tolist() == [0, 1, 0]


def test_a_small_end_offset_makes_everyone_caught_up():
    doc = copy.deepcopy(BASE)
    doc["tasks"][1]["end_offset_sum"] = 10
    snap = parse_streams(doc)
    assert list(snap.index.caught_up_clients(1)) == [0, 1, 2]
    # b reported 20,000 on a task whose end offset sum is 10: its lag is 10, caught up on every path
    assert snap.clients[1].lag(snap.tasks[1]) == 10
    assert all(snap.is_caught_up(c, snap.tasks[1]) for c in snap.clients)


def _one_task_doc(end_offset_sum, arl, lag_a, lag_b=0, stateful=True):
    return {"format": "stickyflow.snapshot/1", "kind": "streams",
            "tasks": [{"id": "0_0", "stateful": stateful, "end_offset_sum": end_offset_sum}],
            "clients": [{"process_id": "a", "previous_active": [], "previous_standby": [], "lags": {"0_0": lag_a}},
                        {"process_id": "b", "previous_active": [], "previous_standby": [], "lags": {"0_0": lag_b}}],
            "config": {"acceptable_recovery_lag": arl}}


def _caught_up_everywhere(snap, pid):
    """Whether ``pid`` is caught up on task 0_0 by each path: the model, the rank, the index, the check."""
    c, t = snap.client(pid), snap.task("0_0")
    ranked = {r.process_id: r for r in rank(snap).get("0_0", ())} if t.stateful else {}
    ci = snap.index.client_pos[pid]
    on_it = {p: {"active": ["0_0"] if p == pid else []} for p in ("a", "b")}
    violations = [v.code for v in stickyflow.validate_streams(snap, on_it)]
    return {
        "model": snap.is_caught_up(c, t),
        "rank": ranked[pid].rank == 0 if ranked else True,  # stateless tasks are not ranked: no state to wait for
        "index": ci in snap.index.caught_up_clients(0).tolist(),
        "check": "ACTIVE_TASK_NOT_CAUGHT_UP" not in violations,
    }


def test_a_reported_lag_above_the_end_offset_sum_is_clamped_on_every_path():
    """The audit's repro: end offset sum 50, acceptable lag 100, a reports 20,000 and b 0.

    a's state cannot be further behind than "no state at all" (lag 50), so it is
    caught up: the model, the rank, the index and the check must all say so.
    Before the one lag rule, rank gave a rank 20,000 and is_caught_up said False
    while the check accepted 0_0 active on a.
    """
    snap = parse_streams(_one_task_doc(end_offset_sum=50, arl=100, lag_a=20_000))
    a = snap.client("a")
    assert a.lag(snap.tasks[0]) == 50 and snap.index.lag(0, 0) == 50
    assert a.lags["0_0"] == 20_000  # the report itself is kept as sent
    assert [(r.process_id, r.rank, r.lag) for r in rank(snap)["0_0"]] == [("a", 0, 50), ("b", 0, 0)]
    assert _caught_up_everywhere(snap, "a") == dict.fromkeys(("model", "rank", "index", "check"), True)
    assert stickyflow.validate_streams(snap, {"a": {"active": ["0_0"]}, "b": {}}) == []
    assert streams_to_json(parse_streams(streams_to_json(snap))) == streams_to_json(snap)  # still round-trips
    # and the other way: with acceptable lag 10 the clamped lag 50 is too much everywhere, b (lag 0) is caught up
    tight = parse_streams(_one_task_doc(end_offset_sum=50, arl=10, lag_a=20_000))
    assert _caught_up_everywhere(tight, "a") == dict.fromkeys(("model", "rank", "index", "check"), False)
    assert _caught_up_everywhere(tight, "b") == dict.fromkeys(("model", "rank", "index", "check"), True)
    assert [(r.process_id, r.rank) for r in rank(tight)["0_0"]] == [("b", 0), ("a", 50)]


def test_a_reported_lag_on_a_stateless_task_is_ignored():
    """A stateless task has no state to restore: every client has lag 0 on it, whatever it reports."""
    snap = parse_streams(_one_task_doc(end_offset_sum=0, arl=100, lag_a=20_000, lag_b=7, stateful=False))
    t = snap.tasks[0]
    assert [c.lag(t) for c in snap.clients] == [0, 0] and [snap.index.lag(c, 0) for c in (0, 1)] == [0, 0]
    assert rank(snap) == {}  # only stateful tasks are ranked
    assert _caught_up_everywhere(snap, "a") == dict.fromkeys(("model", "rank", "index", "check"), True)
    assert stickyflow.validate_streams(snap, {"a": {"active": ["0_0"]}, "b": {}}) == []
    # even with no slack at all
    strict = parse_streams(_one_task_doc(end_offset_sum=0, arl=0, lag_a=20_000, stateful=False))
    assert all(strict.is_caught_up(c, strict.tasks[0]) for c in strict.clients)


def test_stale_references_are_not_errors():
    doc = copy.deepcopy(BASE)
    doc["clients"][2]["previous_active"] = ["9_9", "not-a-task"]
    doc["clients"][2]["lags"] = {"7_7": 3}
    snap = parse_snapshot_ok(doc)
    assert snap.index.prev_active_task.tolist() == [0, 2, 1]


def parse_snapshot_ok(doc):
    return stickyflow.parse_snapshot(doc)


def test_task_ids_sort_as_kafka_taskids():
    assert sorted(["1_10", "1_2", "0_11", "10_0"], key=task_key) == ["0_11", "1_2", "1_10", "10_0"]
    assert parse_task_id("003_4") == (3, 4) and parse_task_id("a_1") is None and parse_task_id("1_-1") is None
    assert ClientAssignment.of(active=["1_10", "1_2"]).active == ("1_2", "1_10")


def test_racks_known_and_standbys_per_task():
    snap = parse_streams(BASE)
    assert snap.racks_known()
    assert snap.standbys_per_task() == 0
    doc = copy.deepcopy(BASE)
    doc["config"] = {"num_standby_replicas": 5}
    assert parse_streams(doc).standbys_per_task() == 2  # clients - 1
    doc["clients"][0].pop("rack")
    assert not parse_streams(doc).racks_known()


def _bad(path_fn, value=None, *, delete=False):
    doc = copy.deepcopy(BASE)
    *parents, last = path_fn
    node = doc
    for p in parents:
        node = node[p]
    if delete:
        del node[last]
    else:
        node[last] = value
    return doc


MALFORMED = [
    (("tasks",), "nope", "tasks"),
    (("tasks", 0, "id"), "0-0", "tasks[0].id"),
    (("tasks", 0, "id"), "x_1", "tasks[0].id"),
    (("tasks", 1, "id"), "0_0", "tasks[1].id"),
    (("tasks", 0, "stateful"), "yes", "tasks[0].stateful"),
    (("tasks", 0, "end_offset_sum"), -1, "tasks[0].end_offset_sum"),
    (("tasks", 0, "end_offset_sum"), 1.5, "tasks[0].end_offset_sum"),
    (("tasks", 0, "input_partitions"), {"topic": "x"}, "tasks[0].input_partitions"),
    (("tasks", 0, "input_partitions", 0, "partition"), -3, "tasks[0].input_partitions[0].partition"),
    (("tasks", 0, "changelog_partitions", 0, "racks"), "r1", "tasks[0].changelog_partitions[0].racks"),
    (("tasks", 0, "changelog_partitions", 0, "topic"), 7, "tasks[0].changelog_partitions[0].topic"),
    (("clients", 0, "process_id"), 12, "clients[0].process_id"),
    (("clients", 1, "process_id"), "a", "clients[1].process_id"),
    (("clients", 0, "threads"), 0, "clients[0].threads"),
    (("clients", 0, "threads"), True, "clients[0].threads"),
    (("clients", 0, "rack"), 3, "clients[0].rack"),
    (("clients", 0, "tags"), ["zone"], "clients[0].tags"),
    (("clients", 0, "tags", "zone"), 1, "clients[0].tags.zone"),
    (("clients", 0, "previous_active"), "0_0", "clients[0].previous_active"),
    (("clients", 0, "previous_standby"), [1], "clients[0].previous_standby[0]"),
    (("clients", 0, "lags", "0_1"), -1, 'clients[0].lags["0_1"]'),
    (("clients", 0, "lags", "0_1"), "5", 'clients[0].lags["0_1"]'),
    (("clients", 0, "lags"), [1], "clients[0].lags"),
    (("clients", 2), "c", "clients[2]"),
    (("config",), {"num_standby": 1}, "config.num_standby"),
    (("config",), {"traffic_cost": 1}, "config.traffic_cost"),
    (("config",), {"acceptable_recovery_lag": -1}, "config.acceptable_recovery_lag"),
    (("config",), {"max_warmup_replicas": 0}, "config.max_warmup_replicas"),
    (("config",), {"num_standby_replicas": "1"}, "config.num_standby_replicas"),
    (("config",), {"probing_rebalance_interval_ms": 59_999}, "config.probing_rebalance_interval_ms"),
    (("config",), {"balance_factor": 0}, "config.balance_factor"),
    (("config",), {"rack_aware_assignment_strategy": "min-traffic"}, "config.rack_aware_assignment_strategy"),
    (("config",), {"rack_aware_assignment_traffic_cost": -2}, "config.rack_aware_assignment_traffic_cost"),
    (("config",), {"rack_aware_assignment_non_overlap_cost": 0.5}, "config.rack_aware_assignment_non_overlap_cost"),
    (("config",), {"rack_aware_assignment_tags": "zone"}, "config.rack_aware_assignment_tags"),
    (("config",), {"rebalancing_mode": "learners"}, "config.rebalancing_mode"),
    (("now_ms",), "0", "now_ms"),
]


@pytest.mark.parametrize("path,value,field", MALFORMED, ids=[m[2] + "=" + repr(m[1])[:12] for m in MALFORMED])
def test_bad_input_names_the_field(path, value, field, tmp_path, capsys):
    doc = _bad(path, value)
    with pytest.raises(stickyflow.InvalidSnapshotError) as err:
        stickyflow.parse_snapshot(doc)
    assert err.value.field == field, [str(p) for p in err.value.problems]
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(doc))
    assert main(["solve", str(f), "--assignor", "sticky"]) == 2
    out = capsys.readouterr()
    assert field in out.err and out.err.count("\n") == 1 and "Traceback" not in out.err


@pytest.mark.parametrize("path,field", [
    (("tasks",), "tasks"), (("clients",), "clients"), (("tasks", 0, "id"), "tasks[0].id"),
    (("tasks", 0, "stateful"), "tasks[0].stateful"), (("clients", 0, "process_id"), "clients[0].process_id"),
    (("clients", 0, "previous_active"), "clients[0].previous_active"),
    (("clients", 0, "previous_standby"), "clients[0].previous_standby"),
])
def test_missing_required_fields_are_named(path, field):
    with pytest.raises(stickyflow.InvalidSnapshotError) as err:
        stickyflow.parse_snapshot(_bad(path, delete=True))
    assert err.value.field == field and err.value.rule == "is required"


def test_every_problem_is_collected():
    doc = _bad(("clients", 0, "threads"), 0)
    doc["tasks"][0]["id"] = "bad"
    doc["config"] = {"balance_factor": 0}
    with pytest.raises(stickyflow.InvalidSnapshotError) as err:
        stickyflow.parse_snapshot(doc)
    assert {p.field for p in err.value.problems} >= {"tasks[0].id", "clients[0].threads", "config.balance_factor"}


def test_streams_config_keys_are_rejected_in_consumer_snapshots_and_vice_versa():
    doc = copy.deepcopy(BASE)
    doc["config"] = {"non_overlap_cost": 1}
    with pytest.raises(stickyflow.InvalidSnapshotError) as err:
        stickyflow.parse_snapshot(doc)
    assert err.value.field == "config.non_overlap_cost"


def test_empty_application_is_fine():
    snap = stickyflow.parse_snapshot({"format": "stickyflow.snapshot/1", "kind": "streams", "tasks": [],
                                      "clients": []})
    r = stickyflow.assign(snap, "sticky")
    assert r.to_json()["assignment"] == {} and r.followup_rebalance_deadline_ms is None


@pytest.mark.parametrize("module", ["model.streams", "check.streams", "greedy.streams_ha", "greedy.streams_rank",
                                    "greedy.streams_learner", "greedy.streams_rack", "kip924"])
def test_docstring_examples_run(module):
    import doctest
    import importlib

    mod = importlib.import_module(f"stickyflow.{module}")
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


@pytest.mark.parametrize("seed", range(50))
def test_in_sorted_is_isin_on_the_models_key_arrays(seed):
    """The streams formulations test membership in the model's sorted, unique key arrays by a binary search
    (``in_sorted``); it must say what ``np.isin`` says, for values below, between, on and above the keys,
    any shape, and no keys at all."""
    import numpy as np

    from stickyflow.model.arrays import in_sorted

    rng = np.random.default_rng(seed)
    keys = np.unique(rng.integers(0, 60, size=int(rng.integers(0, 25))))
    values = rng.integers(-5, 70, size=(int(rng.integers(0, 4)), int(rng.integers(0, 30))))
    assert (in_sorted(values, keys) == np.isin(values, keys)).all()
    assert in_sorted(values, keys).shape == values.shape
    assert (in_sorted(values.ravel().tolist(), keys) == np.isin(values.ravel(), keys)).all()
