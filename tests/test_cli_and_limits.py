"""The edges of the contract: custom assignors from the installed command, invalid answers with their KIP-924
code, output paths that cannot be written, numbers beyond Kafka's 32-bit fields, and configured costs too
large for a 64-bit flow. Each ends in a valid result, or a typed error and one line, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import stickyflow
from stickyflow.datasets.generators import consumer_snapshot
from tests.checker import check_result

EXE = Path(sys.executable).with_name("stickyflow")  # the console script the README's set-up installs

CUSTOM = textwrap.dedent('''
    import stickyflow

    def assignor(snapshot, options):
        """Kafka's range assignment, as a user's own assignor would wrap something."""
        return stickyflow.get_assignor("range", snapshot.kind).load()(snapshot, options)

    def broken(snapshot, options):
        """Forgets every partition."""
        return stickyflow.Decision(assignment={m.id: {} for m in snapshot.members}, method="mine",
                                   status="heuristic")
''')

SMALL = {"format": "stickyflow.snapshot/1", "kind": "consumer", "topics": {"t": {"partitions": 4}},
         "members": [{"id": "a", "subscription": ["t"], "generation": 5, "owned": {"t": [0, 1]}},
                     {"id": "b", "subscription": ["t"]}]}


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(EXE), *args], capture_output=True, text=True, cwd=cwd, timeout=120)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "my_assignors.py").write_text(CUSTOM)
    (tmp_path / "snap.json").write_text(json.dumps(SMALL))
    return tmp_path


def test_custom_assignor_from_the_working_directory(workdir):
    proc = run(["solve", "snap.json", "--assignor", "my_assignors:assignor"], workdir)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["assignor"] == "my_assignors:assignor" and doc["error"] == "NONE"
    assert doc["assignment"] == {"a": {"t": [0, 1]}, "b": {"t": [2, 3]}}  # range: the first half to a


KIP924_MODULE = textwrap.dedent('''
    from stickyflow.kip924 import TaskAssignment, as_assignor, identity_assignment

    class KeepEverything:
        """Written against KIP-924's API: every client keeps what it ran."""

        def assign(self, application_state):
            return TaskAssignment(identity_assignment(application_state).values())

    assignor = as_assignor(KeepEverything())
''')


def test_kip924_assignor_module_from_the_command_line(tmp_path):
    (tmp_path / "keep_assignor.py").write_text(KIP924_MODULE)
    snap = {"format": "stickyflow.snapshot/1", "kind": "streams",
            "tasks": [{"id": "0_0", "stateful": False}, {"id": "0_1", "stateful": False}],
            "clients": [{"process_id": "a", "previous_active": ["0_0"], "previous_standby": []},
                        {"process_id": "b", "previous_active": ["0_1"], "previous_standby": []}]}
    (tmp_path / "snap.json").write_text(json.dumps(snap))
    proc = run(["solve", "snap.json", "--assignor", "keep_assignor:assignor"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["error"] == "NONE" and doc["solver"]["method"] == "kip924:KeepEverything"
    assert doc["assignment"]["a"]["active"] == ["0_0"] and doc["assignment"]["b"]["active"] == ["0_1"]


def test_invalid_custom_answer_is_one_line_with_its_code(workdir):
    proc = run(["solve", "snap.json", "--assignor", "my_assignors:broken"], workdir)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "InvalidAssignmentError" in lines[0] and "PARTITION_UNASSIGNED" in lines[0]


def test_invalid_custom_answer_in_the_library_carries_every_violation():
    def broken(snapshot, options):
        # a Decision may leave out a member that gets nothing; a stranger holding a partition is an error
        return stickyflow.Decision(assignment={"a": {"t": [0, 0, 9]}, "ghost": {"t": [1]}}, method="mine",
                                   status="heuristic")

    with pytest.raises(stickyflow.InvalidAssignmentError) as info:
        _assign_with(broken)
    err = info.value
    assert isinstance(err, stickyflow.SolverFaultError)  # the documented family still catches it
    codes = {v.code for v in err.violations}
    assert {"UNKNOWN_MEMBER_ID", "UNKNOWN_PARTITION", "PARTITION_ASSIGNED_MULTIPLE_TIMES"} <= codes, codes
    assert err.error in codes


def _assign_with(fn):
    stickyflow.register_assignor("test-broken", fn, kinds=("consumer",), replace=True)
    try:
        return stickyflow.assign(SMALL, "test-broken")
    finally:
        stickyflow.unregister_assignor("test-broken")


def test_streams_invalid_answer_names_the_kip924_error():
    snap = {"format": "stickyflow.snapshot/1", "kind": "streams",
            "tasks": [{"id": "0_0", "stateful": False}],
            "clients": [{"process_id": "p", "previous_active": [], "previous_standby": []}]}

    def unknown_task(snapshot, options):
        return stickyflow.Decision(assignment={"p": {"active": ["0_0", "9_9"], "standby": [], "warmup": []}},
                                   method="mine", status="heuristic")

    stickyflow.register_assignor("test-unknown", unknown_task, kinds=("streams",), replace=True)
    try:
        with pytest.raises(stickyflow.InvalidAssignmentError) as info:
            stickyflow.assign(snap, "test-unknown")
    finally:
        stickyflow.unregister_assignor("test-unknown")
    assert info.value.error == "UNKNOWN_TASK_ID"


def test_unwritable_output_is_one_line(workdir):
    # a path the user gave that cannot be written is bad input (exit 2), found before any solving
    proc = run(["solve", "snap.json", "-o", str(workdir / "no" / "such" / "dir" / "out.json")], workdir)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("stickyflow solve: path: ")


# --------------------------------------------------------------------------- Kafka's 32-bit fields

@pytest.mark.parametrize("field, value", [("generation", 2**63 + 5), ("generation", 2**31), ("partitions", 2**31)])
def test_numbers_beyond_kafkas_int32_are_named(field, value, tmp_path):
    doc = json.loads(json.dumps(SMALL))
    if field == "generation":
        doc["members"][0]["generation"] = value
        where = "members[0].generation"
    else:
        doc["topics"]["t"]["partitions"] = value
        where = "topics.t.partitions"
    with pytest.raises(stickyflow.InvalidSnapshotError) as info:
        stickyflow.parse_snapshot(doc)
    assert info.value.field == where and "2147483647" in info.value.rule
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(doc))
    proc = run(["solve", str(path)], tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and where in proc.stderr, proc.stderr


def test_owned_partitions_beyond_int32_are_stale_claims():
    doc = json.loads(json.dumps(SMALL))
    doc["members"][0]["owned"] = {"t": [0, 1, 2**31, 2**63 + 5]}
    snap = stickyflow.parse_snapshot(doc)
    assert snap.members[0].owned["t"] == (0, 1)
    for name in ("optimal", "sticky", "range", "roundrobin"):
        r = stickyflow.assign(snap, name)
        check_result(snap, r)
    assert stickyflow.assign(snap).metrics["moves"] == 0


# --------------------------------------------------------------------------- large configured costs

def _costly(traffic: int, overlap: int) -> dict:
    doc = consumer_snapshot("scale_out", partitions=20_000, members=100, seed=1, racks=3)
    doc["config"] = dict(doc.get("config", {}), traffic_cost=traffic, non_overlap_cost=overlap)
    return doc


def test_large_costs_keep_the_exact_optimum():
    # the same ratio in small and in large numbers: the same assignment, the cost scaled exactly
    small = stickyflow.assign(_costly(10, 1))
    for factor in (10**7, 10**9):
        big = stickyflow.assign(_costly(10 * factor, factor))
        check_result(stickyflow.parse_snapshot(_costly(10 * factor, factor)), big)
        assert big.solver.status == "optimal"
        assert big.to_json()["assignment"] == small.to_json()["assignment"]
        assert big.solver.objective == factor * small.solver.objective
    # a ratio whose unit costs pass 2**53 at this size: exact too (no float rounding on the way to the solver)
    r = stickyflow.assign(_costly(10**8, 1))
    assert r.solver.status == "optimal"
    assert r.solver.objective == r.metrics["moves"] + 10**8 * r.metrics["cross_rack"]


def test_costs_beyond_64_bits_fall_back_and_say_why():
    doc = _costly(10**12, 1)
    r = stickyflow.assign(doc)
    check_result(stickyflow.parse_snapshot(doc), r)
    assert r.solver.status == "fallback" and r.solver.reason.startswith("CostRangeError")
    with pytest.raises(stickyflow.CostRangeError):
        stickyflow.assign(doc, fallback=False)


# --------------------------------------------------------------------------- a checked result stays checked

@pytest.mark.parametrize("path", ["consumer-cooperative-conflicts.json", "streams-racks-standbys.json"])
def test_results_are_read_only(path):
    r = stickyflow.assign(Path(__file__).resolve().parent.parent / "examples" / path)
    some = next(iter(r.assignment))
    with pytest.raises(TypeError):
        r.metrics["moves"] = 0
    with pytest.raises(TypeError):
        r.assignment[some] = {}
    if r.kind == "consumer":
        with pytest.raises(TypeError):
            r.assignment[some]["t0"] = (0,)
        with pytest.raises(TypeError):
            r.revocations["x"] = {}
    assert json.loads(json.dumps(r.to_json()))["error"] == "NONE"  # and still plain JSON out
