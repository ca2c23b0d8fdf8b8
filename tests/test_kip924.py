"""KIP-924 in Python: the read-only views, the value objects, TaskAssignmentUtils, and a custom assignor end to end."""

from __future__ import annotations

import dataclasses
import json
import random

import numpy as np
import pytest

import stickyflow
from stickyflow.adapters.cli import main
from stickyflow.check.streams import streams_metrics
from stickyflow.check.streams_tables import rack_tables
from stickyflow.kip924 import (ApplicationState, AssignedTask, AssignedTaskType, AssignmentError,
                               KafkaStreamsAssignment, RackAwareOptimizationParams, TaskAssignment, as_assignor,
                               default_standby_task_assignment, identity_assignment,
                               optimize_rack_aware_active_tasks, optimize_rack_aware_standby_tasks,
                               validate_task_assignment)
from stickyflow.model.streams import parse_streams
from tests.test_streams_model import streams_examples
from tests.test_streams_support import make_streams, random_streams


def _racks_app() -> ApplicationState:
    path = next(p for p in streams_examples() if "racks" in p.name)
    return ApplicationState.from_snapshot(stickyflow.load_snapshot(path))


# --------------------------------------------------------------------------- a custom assignor written against the API

class StickyRackAssignor:
    """Keep what every client ran, place the rest by lag and load, default standbys, then cut stateless traffic.

    Asks for a probing rebalance while the load is uneven (this assignor never moves state itself).
    """

    name = "sticky-rack"

    def assign(self, app: ApplicationState) -> TaskAssignment:
        cfg = app.assignment_configs()
        states = app.kafka_streams_states(compute_task_lags=True)
        out = identity_assignment(app)
        want = min(cfg.num_standby_replicas, len(states) - 1)
        # only as many standbys as configured, caught-up ones first (none kept when tags must spread them)
        keep = 0 if cfg.rack_aware_assignment_tags else want
        for tid, info in app.all_tasks().items():
            holders = [p for p, a in out.items()
                       if tid in a.tasks and a.tasks[tid].type is AssignedTaskType.STANDBY]
            holders.sort(key=lambda p: (states[p].lag_for(tid) if info.is_stateful else 0, p))
            for p in holders[keep:]:
                out[p] = out[p].remove_task(tid)
        owned = {t for a in out.values() for t, x in a.tasks.items() if x.type is AssignedTaskType.ACTIVE}

        def load(p):
            return sum(x.type is AssignedTaskType.ACTIVE for x in out[p].tasks.values()) / \
                states[p].num_processing_threads

        for tid, info in sorted(app.all_tasks().items()):
            if tid in owned:
                continue
            free = [p for p in states if tid not in out[p].tasks]
            if info.is_stateful:
                best = min(states[p].lag_for(tid) for p in free)
                caught = [p for p in free if states[p].lag_for(tid) <= max(best, cfg.acceptable_recovery_lag)]
                free = caught or free
            p = min(free, key=lambda p: (load(p), p))
            out[p] = out[p].assign_task(AssignedTask.active(tid))
        out = default_standby_task_assignment(app, out)
        out = optimize_rack_aware_active_tasks(RackAwareOptimizationParams.of(app).for_stateless_tasks(), out)
        loads = [load(p) for p in states]
        if loads and max(loads) - min(loads) > cfg.balance_factor:
            deadline = app.now_ms + cfg.probing_rebalance_interval_ms
            out = {p: a.with_followup_rebalance(deadline) for p, a in out.items()}
        return TaskAssignment(out.values())


def check_custom_result(snap, r) -> None:
    """A custom assignor's result: KIP-924-valid, measured like any other, every other broken rule in its metrics."""
    from stickyflow.check.streams import validate_streams

    assert r.error == "NONE" and set(r.assignment) == {c.process_id for c in snap.clients}
    broken = {v.code for v in validate_streams(snap, r.assignment,
                                                followup_rebalance_deadline_ms=r.followup_rebalance_deadline_ms)}
    assert set(r.metrics["broken_rules"]) == broken
    assert not broken & {"UNKNOWN_TASK_ID", "UNKNOWN_PROCESS_ID", "MISSING_PROCESS_ID", "INVALID_STANDBY_TASK",
                         "ACTIVE_TASK_ASSIGNED_MULTIPLE_TIMES"}
    metrics = streams_metrics(snap, r.assignment)
    for key in ("moves", "imbalance", "cross_rack"):
        assert r.metrics[key] == metrics[key], key


custom_assignor = as_assignor(StickyRackAssignor())  # for ``--assignor tests.test_kip924:custom_assignor``


def test_custom_assignor_runs_through_assign_and_the_cli(tmp_path):
    stickyflow.register_assignor("sticky-rack", custom_assignor, kinds=("streams",))
    try:
        for path in streams_examples():
            snap = stickyflow.load_snapshot(path)
            r = stickyflow.assign(snap, "sticky-rack")
            check_custom_result(snap, r)
            assert r.solver.method == "kip924:sticky-rack" and r.metrics["stateful_moves"] == 0
        out = tmp_path / "r.json"
        path = next(p for p in streams_examples() if "racks" in p.name)
        assert main(["solve", str(path), "--assignor", "tests.test_kip924:custom_assignor", "-o", str(out)]) == 0
        res = json.loads(out.read_text())
        assert res["error"] == "NONE" and res["solver"]["method"] == "kip924:sticky-rack"
    finally:
        stickyflow.unregister_assignor("sticky-rack")


def test_custom_assignor_on_generated_snapshots(seed):
    rng = random.Random(seed)
    for _ in range(30):
        doc = random_streams(rng.randrange(2**31), tags=None, scenario=rng.choice(["steady", "scale_out", "fresh"]))
        snap = stickyflow.parse_snapshot(doc)
        r = stickyflow.assign(snap, "tests.test_kip924:custom_assignor")
        check_custom_result(snap, r)


def test_a_bad_custom_result_is_a_solver_fault():
    bad = as_assignor(lambda app: [{"active": ["0_0"]}], name="bad")
    with pytest.raises(TypeError):
        bad(_racks_app().snapshot, None)
    stickyflow.register_assignor("bad-kip924", bad, kinds=("streams",))
    try:
        with pytest.raises(stickyflow.SolverFaultError):
            stickyflow.assign(_racks_app().snapshot, "bad-kip924")
    finally:
        stickyflow.unregister_assignor("bad-kip924")
    twice = as_assignor(lambda app: [KafkaStreamsAssignment.of("p1"), KafkaStreamsAssignment.of("p1")])
    with pytest.raises(ValueError):
        twice(_racks_app().snapshot, None)


# --------------------------------------------------------------------------- views

def test_application_state_views():
    app = _racks_app()
    tasks = app.all_tasks()
    assert len(tasks) == 12 and tasks["1_0"].is_stateful and not tasks["0_0"].is_stateful
    src = tasks["1_0"].source_topic_partitions[0]
    cl = tasks["1_0"].changelog_topic_partitions[0]
    assert (src.topic, src.partition, src.is_source, src.rack_ids) == ("app-repartition", 0, True,
                                                                       frozenset({"r2", "r3"}))
    assert cl.is_changelog and not cl.is_source and cl.rack_ids == frozenset({"r1", "r3"})
    no_lags = app.kafka_streams_states(compute_task_lags=False)
    with pytest.raises(RuntimeError):
        no_lags["p1"].lag_for("1_0")
    states = app.kafka_streams_states(compute_task_lags=True)
    p1 = states["p1"]
    assert (p1.num_processing_threads, p1.rack_id, dict(p1.client_tags)) == (2, "r1", {"zone": "z1"})
    assert p1.previous_active_tasks == {"0_0", "0_1", "1_0", "1_1", "1_2"}
    assert p1.previous_assigned_tasks == p1.previous_active_tasks | {"1_3", "1_4"}
    assert (p1.lag_for("1_0"), p1.lag_for("1_3"), p1.lag_for("1_4"), states["p4"].lag_for("1_0")) == \
        (0, 120, 90000, 200000)
    assert set(p1.stateful_tasks_to_lag_sums()) == {t for t, i in tasks.items() if i.is_stateful}
    assert p1.prev_tasks_by_lag()[-1] == "1_4"
    with pytest.raises(KeyError):
        p1.lag_for("0_0")  # stateless: no lag
    assert app.assignment_configs().num_standby_replicas == 1 and app.now_ms == 1700000000000
    with pytest.raises(dataclasses.FrozenInstanceError):
        p1.num_processing_threads = 3


def test_value_objects_are_immutable():
    a = KafkaStreamsAssignment.of("p", [AssignedTask.active("0_1")])
    b = a.assign_task(AssignedTask.standby("0_2")).assign_task(AssignedTask.standby("0_3", warmup=True))
    assert list(a.tasks) == ["0_1"] and list(b.tasks) == ["0_1", "0_2", "0_3"]
    c = b.remove_task("0_1").with_followup_rebalance(99)
    assert "0_1" in b.tasks and "0_1" not in c.tasks and b.followup_rebalance_deadline is None
    assert c.to_client_assignment().to_json() == {"active": [], "standby": ["0_2"], "warmup": ["0_3"]}
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.process_id = "q"
    with pytest.raises(TypeError):
        a.tasks["0_9"] = AssignedTask.active("0_9")
    with pytest.raises(ValueError):
        AssignedTask("0_1", AssignedTaskType.ACTIVE, warmup=True)
    assert AssignedTask("0_1", "STANDBY").type is AssignedTaskType.STANDBY
    back = KafkaStreamsAssignment.from_client_assignment("p", b.to_client_assignment())
    assert dict(back.tasks) == dict(b.tasks)


# --------------------------------------------------------------------------- utilities

def test_identity_assignment_and_validation():
    app = _racks_app()
    ident = identity_assignment(app)
    for c in app.snapshot.clients:
        ca = ident[c.process_id].to_client_assignment()
        assert set(ca.active) == set(c.previous_active) and set(ca.standby) == set(c.previous_standby)
    assert validate_task_assignment(app, ident.values()) is AssignmentError.NONE
    assert validate_task_assignment(app, TaskAssignment(ident.values())) == "NONE"


def test_validate_task_assignment_reports_each_kip924_error():
    app = _racks_app()
    ident = identity_assignment(app)

    def err(mutate):
        a = dict(ident)
        mutate(a)
        return validate_task_assignment(app, a.values())

    assert err(lambda a: a.pop("p4")) is AssignmentError.MISSING_PROCESS_ID
    assert err(lambda a: a.update(zz=KafkaStreamsAssignment.of("zz"))) is AssignmentError.UNKNOWN_PROCESS_ID
    assert err(lambda a: a.update(p4=a["p4"].assign_task(AssignedTask.active("9_9")))) is \
        AssignmentError.UNKNOWN_TASK_ID
    assert err(lambda a: a.update(p4=a["p4"].assign_task(AssignedTask.active("1_0")))) is \
        AssignmentError.ACTIVE_TASK_ASSIGNED_MULTIPLE_TIMES
    assert err(lambda a: a.update(p4=a["p4"].assign_task(AssignedTask.standby("0_0")))) is \
        AssignmentError.INVALID_STANDBY_TASK
    # one client listed twice, holding the same task active in one entry and standby in the other
    dup = list(ident.values()) + [KafkaStreamsAssignment.of("p1", [AssignedTask.standby("1_0")])]
    assert validate_task_assignment(app, dup) is AssignmentError.ACTIVE_AND_STANDBY_TASK_ASSIGNED_TO_SAME_KAFKASTREAMS


def test_default_standby_assignment_tops_up(seed):
    rng = random.Random(seed)
    for _ in range(20):
        snap = stickyflow.parse_snapshot(random_streams(rng.randrange(2**31)))
        app = ApplicationState.from_snapshot(snap)
        actives = {p: KafkaStreamsAssignment.of(p, [x for x in a.tasks.values() if x.type is AssignedTaskType.ACTIVE])
                   for p, a in identity_assignment(app).items()}
        owned = {t for a in actives.values() for t in a.tasks}
        for t in snap.tasks:  # give the orphans to the first client
            if t.id not in owned:
                first = snap.clients[0].process_id
                actives[first] = actives[first].assign_task(AssignedTask.active(t.id))
        out = default_standby_task_assignment(app, actives)
        assert validate_task_assignment(app, out.values()) is AssignmentError.NONE
        want = snap.standbys_per_task()
        for t in snap.stateful_tasks:
            holders = [p for p, a in out.items() if t.id in a.tasks and a.tasks[t.id].type is AssignedTaskType.STANDBY]
            assert len(holders) == want


def _rack_snapshot(seed, standbys=1):
    return stickyflow.parse_snapshot(make_streams(np.random.default_rng(seed), "steady", tasks=30, clients=5,
                                                  subtopologies=3, standbys=standbys, racks=3,
                                                  strategy="min_traffic", stateful_fraction=0.67))


def test_rack_aware_active_optimization_with_overrides(seed):
    snap = _rack_snapshot(seed)
    app = ApplicationState.from_snapshot(snap)
    ident = identity_assignment(app)
    base = streams_metrics(snap, {p: a.to_client_assignment() for p, a in ident.items()})
    # non-overlap is all that counts: nothing moves
    same = optimize_rack_aware_active_tasks(RackAwareOptimizationParams.of(app).with_traffic_cost_override(0)
                                            .with_non_overlap_cost_override(1), ident)
    assert {p: a.to_client_assignment() for p, a in same.items()} == {p: a.to_client_assignment()
                                                                      for p, a in ident.items()}
    # traffic alone: counts per client kept, cross-rack reads never go up
    opt = optimize_rack_aware_active_tasks(RackAwareOptimizationParams.of(app).with_non_overlap_cost_override(0), ident)
    after = streams_metrics(snap, {p: a.to_client_assignment() for p, a in opt.items()})
    assert after["cross_rack"] <= base["cross_rack"]
    for p in ident:
        assert len(opt[p].to_client_assignment().active) == len(ident[p].to_client_assignment().active)
        assert opt[p].to_client_assignment().standby == ident[p].to_client_assignment().standby
    # for_tasks: only those may move
    chosen = sorted(t.id for t in snap.tasks)[:6]
    part = optimize_rack_aware_active_tasks(RackAwareOptimizationParams.of(app).for_tasks(chosen)
                                            .with_non_overlap_cost_override(0), ident)
    for p in ident:
        was = set(ident[p].to_client_assignment().active) - set(chosen)
        now = set(part[p].to_client_assignment().active) - set(chosen)
        assert was == now
    with pytest.raises(ValueError):
        RackAwareOptimizationParams.of(app).with_traffic_cost_override(-1)


def test_rack_aware_standby_optimization(seed):
    snap = _rack_snapshot(seed, standbys=2)
    app = ApplicationState.from_snapshot(snap)
    ident = identity_assignment(app)
    out = optimize_rack_aware_standby_tasks(RackAwareOptimizationParams.of(app).with_non_overlap_cost_override(0),
                                            ident)
    assert validate_task_assignment(app, out.values()) is AssignmentError.NONE
    rt = rack_tables(snap)
    idx = snap.index

    def standby_cross(assign):
        return sum(int(rt.changelog_cross[idx.task_pos[t], rt.client_rack[idx.client_pos[p]]])
                   for p, a in assign.items() for t in a.to_client_assignment().standby)

    assert standby_cross(out) <= standby_cross(ident)
    for p in ident:
        a, b = ident[p].to_client_assignment(), out[p].to_client_assignment()
        assert len(a.standby) == len(b.standby) and a.active == b.active


# --------------------------------------------------------------------------- KIP-924's validation only, at the front door

def _readme_snippet() -> str:
    """The user guide's KIP-924 example, as written there (docs/guide.md, the ``KeepEverything`` block)."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "guide.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    return next(b for b in blocks if "class KeepEverything" in b)


@pytest.mark.parametrize("path", streams_examples(), ids=lambda p: p.name)
def test_readme_keep_everything_runs_on_every_bundled_streams_example(path, tmp_path):
    """The guide's custom assignor, run as the guide says, exits 0 and returns what every client ran."""
    import subprocess
    import sys

    (tmp_path / "keep_assignor.py").write_text(_readme_snippet())
    proc = subprocess.run([sys.executable, "-m", "stickyflow", "solve", str(path), "--assignor",
                           "keep_assignor:assignor"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    snap = stickyflow.load_snapshot(path)
    assert res["error"] == "NONE" and res["metrics"]["moves"] == 0
    for c in snap.clients:
        assert set(res["assignment"][c.process_id]["active"]) <= set(c.previous_active)
    # what KIP-441 would object to shows in the metrics instead of failing the rebalance
    assert isinstance(res["metrics"]["broken_rules"], list)
    assert "UNBALANCED_WITHOUT_FOLLOWUP" in res["metrics"]["broken_rules"]


def _tiny():
    return {"format": "stickyflow.snapshot/1", "kind": "streams",
            "tasks": [{"id": "0_0", "stateful": False}, {"id": "1_0", "stateful": True, "end_offset_sum": 10**6},
                      {"id": "1_1", "stateful": True, "end_offset_sum": 10**6}],
            "clients": [{"process_id": "a", "previous_active": [], "previous_standby": []},
                        {"process_id": "b", "previous_active": [], "previous_standby": []}],
            "config": {"num_standby_replicas": 1, "max_warmup_replicas": 1}}


def _run_custom(answer, doc=None):
    fn = as_assignor(lambda app: answer, name="fixed")
    stickyflow.register_assignor("fixed-kip924", fn, kinds=("streams",), replace=True)
    try:
        return stickyflow.assign(doc or _tiny(), "fixed-kip924")
    finally:
        stickyflow.unregister_assignor("fixed-kip924")


def test_a_custom_answer_breaking_only_ha_rules_is_returned_with_them_in_its_metrics():
    a, s = AssignedTask.active, AssignedTask.standby
    # 1_1 active nowhere, no standbys, three warm-ups (budget 1), everything on a: KIP-924 has no objection
    r = _run_custom([KafkaStreamsAssignment.of("a", [a("0_0"), a("1_0")]),
                     KafkaStreamsAssignment.of("b", [s("1_0", warmup=True), s("1_1", warmup=True)])])
    assert r.error == "NONE" and r.solver.method == "kip924:fixed"
    assert r.metrics["broken_rules"] == ["ACTIVE_TASK_UNASSIGNED", "STANDBY_TASK_COUNT", "WARMUP_BUDGET_EXCEEDED",
                                         "FOLLOWUP_DEADLINE"]
    assert r.to_json()["assignment"]["b"] == {"active": [], "standby": [], "warmup": ["1_0", "1_1"]}
    # any follow-up deadline the assignor asks for is kept
    ok = [KafkaStreamsAssignment.of("a", [a("0_0"), a("1_0"), s("1_1")]).with_followup_rebalance(5),
          KafkaStreamsAssignment.of("b", [a("1_1"), s("1_0")])]
    r = _run_custom(ok)
    assert r.followup_rebalance_deadline_ms == 5 and r.metrics["broken_rules"] == ["FOLLOWUP_DEADLINE"]
    r = _run_custom([x.with_followup_rebalance(None) for x in ok])
    assert r.followup_rebalance_deadline_ms is None and r.metrics["broken_rules"] == []


@pytest.mark.parametrize("answer, code", [
    pytest.param(lambda a, s: [KafkaStreamsAssignment.of("a", [a("0_0"), a("9_9")]), KafkaStreamsAssignment.of("b")],
                 "UNKNOWN_TASK_ID", id="unknown-task"),
    pytest.param(lambda a, s: [KafkaStreamsAssignment.of("a", [a("1_0")]), KafkaStreamsAssignment.of("b", [a("1_0")])],
                 "ACTIVE_TASK_ASSIGNED_MULTIPLE_TIMES", id="active-twice"),
    pytest.param(lambda a, s: [KafkaStreamsAssignment.of("a", [a("1_0")]), KafkaStreamsAssignment.of("b", [s("0_0")])],
                 "INVALID_STANDBY_TASK", id="stateless-standby"),
    pytest.param(lambda a, s: [KafkaStreamsAssignment.of("a", [a("1_0")])], "MISSING_PROCESS_ID", id="missing"),
    pytest.param(lambda a, s: [KafkaStreamsAssignment.of("a"), KafkaStreamsAssignment.of("b"),
                               KafkaStreamsAssignment.of("zz")], "UNKNOWN_PROCESS_ID", id="unknown-process"),
    # Kafka's order when several are broken: the task walk first, then standbys, then clients
    pytest.param(lambda a, s: [KafkaStreamsAssignment.of("zz", [s("0_0")]), KafkaStreamsAssignment.of("a", [a("7_7")])],
                 "UNKNOWN_TASK_ID", id="order-task-first"),
    pytest.param(lambda a, s: [KafkaStreamsAssignment.of("zz"), KafkaStreamsAssignment.of("a", [s("0_0")])],
                 "INVALID_STANDBY_TASK", id="order-standby-before-clients"),
    pytest.param(lambda a, s: [KafkaStreamsAssignment.of("zz"), KafkaStreamsAssignment.of("a")],
                 "MISSING_PROCESS_ID", id="order-missing-before-unknown"),
])
def test_a_custom_answer_breaking_kip924_is_rejected_with_kafkas_error(answer, code):
    with pytest.raises(stickyflow.InvalidAssignmentError) as info:
        _run_custom(answer(AssignedTask.active, AssignedTask.standby))
    assert info.value.error == code
    app = ApplicationState.from_snapshot(stickyflow.parse_snapshot(_tiny()))
    assert validate_task_assignment(app, answer(AssignedTask.active, AssignedTask.standby)) is AssignmentError(code)


def test_a_plain_custom_function_is_held_to_kip924_only_and_builtins_to_every_rule(monkeypatch):
    def lazy(snapshot, options):  # everything active on the first client, no standbys
        first = snapshot.clients[0].process_id
        out = {c.process_id: {} for c in snapshot.clients}
        out[first] = {"active": [t.id for t in snapshot.tasks]}
        return stickyflow.Decision(assignment=out, method="lazy", status="heuristic")

    stickyflow.register_assignor("lazy-streams", lazy, kinds=("streams",), replace=True)
    try:
        r = stickyflow.assign(_tiny(), "lazy-streams")
    finally:
        stickyflow.unregister_assignor("lazy-streams")
    assert r.error == "NONE" and r.metrics["broken_rules"] == ["STANDBY_TASK_COUNT", "UNBALANCED_WITHOUT_FOLLOWUP"]
    # the same answer from a built-in assignor is refused: stickyflow's own meet every rule
    import stickyflow.greedy.streams_ha as ha

    monkeypatch.setattr(ha, "assign_high_availability", lazy)
    with pytest.raises(stickyflow.InvalidAssignmentError) as info:
        stickyflow.assign(_tiny(), "sticky")
    assert info.value.error == "STANDBY_TASK_COUNT"


def test_readme_keep_everything_on_every_streams_snapshot_of_the_bundled_dataset(tmp_path, monkeypatch):
    """The same guide assignor, through ``stickyflow.assign``, on every streams snapshot of the starter dataset."""
    import importlib
    import sys
    from pathlib import Path

    (tmp_path / "keep_assignor_ds.py").write_text(_readme_snippet())
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("keep_assignor_ds")
    data = Path(__file__).resolve().parents[1] / "datasets" / "bundled" / "starter.jsonl"
    docs = [json.loads(line) for line in data.read_text().splitlines() if line.strip()]
    streams = [d for d in docs if d.get("kind") == "streams"]
    assert streams
    stickyflow.register_assignor("keep-readme", module.assignor, kinds=("streams",), replace=True)
    try:
        for d in streams:
            r = stickyflow.assign(d, "keep-readme")
            assert r.error == "NONE" and r.metrics["moves"] == 0, d.get("id")
    finally:
        stickyflow.unregister_assignor("keep-readme")
        sys.modules.pop("keep_assignor_ds", None)
