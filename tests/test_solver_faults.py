"""Solver faults: whatever happens to the optimizer, the caller gets a valid result that says what happened.

For both kinds of snapshot: OR-Tools missing (a fresh interpreter in which
``import ortools`` fails), a time limit that runs out, an exception inside the
solver; for Streams only, a model that is proven infeasible (a consumer group
has no side constraint that can be infeasible; a Streams ``max_moves`` can be)
and CP-SAT finding no solution in time where the flow's plan breaks a rule
CP-SAT enforces. Each gives a valid result from the greedy fallback,
``solver.status == "fallback"`` and a ``reason`` naming the cause (or, where
the optimizer still has a valid answer in time, that answer with its honest
status). When the fallback fails as well, the one typed error is
:class:`stickyflow.SolverFaultError`, and the CLI exits 1 with one line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import stickyflow
from stickyflow.datasets.generators import consumer_snapshot, streams_snapshot
from tests.checker import check_result

ROOT = Path(__file__).resolve().parent.parent


def consumer_doc(partitions: int = 60, members: int = 6, seed: int = 3) -> dict:
    return consumer_snapshot("scale_out", partitions=partitions, members=members, seed=seed)


def streams_doc(seed: int = 3, **kw) -> dict:
    kw.setdefault("tasks", 40)
    kw.setdefault("clients", 5)
    return streams_snapshot("scale_out", seed=seed, **kw)


def assert_fallback(snap, result, *words: str) -> None:
    check_result(snap, result)
    assert result.solver.status == "fallback", result.solver
    assert result.solver.method in ("sticky", "high_availability"), result.solver  # the greedy of each kind
    for w in words:
        assert w in (result.solver.reason or ""), result.solver.reason
    doc = result.to_json()
    assert doc["solver"]["status"] == "fallback" and doc["solver"]["reason"] == result.solver.reason


# --------------------------------------------------------------------------- OR-Tools unavailable

_BLOCK_ORTOOLS = """
import importlib.abc, sys
class _NoOrTools(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "ortools" or name.startswith("ortools."):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)")
        return None
sys.meta_path.insert(0, _NoOrTools())
"""


def mixed_consumer_doc() -> dict:
    """Members reading different topics: the flow's case (equal subscriptions are solved in closed form)."""
    doc = consumer_doc()
    doc["members"][0]["subscription"] = doc["members"][0]["subscription"][:1]
    return doc


@pytest.mark.parametrize("kind", ["consumer", "streams"])
def test_ortools_missing_falls_back_in_library_and_cli(kind, tmp_path):
    doc = mixed_consumer_doc() if kind == "consumer" else streams_doc(num_standby_replicas=1)
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(doc))
    code = _BLOCK_ORTOOLS + f"""
import json, stickyflow
from stickyflow.adapters.cli import main
from tests.checker import check_result
snap = stickyflow.load_snapshot({str(path)!r})
r = stickyflow.assign(snap)
check_result(snap, r)
print(json.dumps({{"status": r.solver.status, "reason": r.solver.reason, "method": r.solver.method}}))
sys.exit(main(["solve", {str(path)!r}, "-o", {str(tmp_path / "out.json")!r}]))
"""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    lib = json.loads(proc.stdout.strip().splitlines()[-1])
    assert lib["status"] == "fallback" and "OR-Tools" in lib["reason"], lib
    out = json.loads((tmp_path / "out.json").read_text())
    assert out["solver"]["status"] == "fallback" and "OR-Tools" in out["solver"]["reason"]
    snap = stickyflow.parse_snapshot(doc)
    assert out["assignment"] == stickyflow.assign(snap, "sticky").to_json()["assignment"]


# --------------------------------------------------------------------------- a time limit of 1 ms

# Whether a real 1 ms runs out before the consumer flow's check depends on the machine, and timings never go
# in assertions: the time-out path is driven by a clock that moves one second each time it is read, so the
# limit has always run out at the first check. The real 1 ms is also tried, asserting only what holds on
# any machine: a valid result whose status tells the truth.
_SLOW_CLOCK = """
import itertools, types
import stickyflow.formulations.consumer.flow as _cf, stickyflow.formulations.consumer.opt as _co
_ticks = itertools.count()
_cf.time = _co.time = types.SimpleNamespace(perf_counter=lambda: float(next(_ticks)))
"""


@pytest.fixture
def slow_clock(monkeypatch):
    import itertools
    import types

    import stickyflow.formulations.consumer.flow as cf
    import stickyflow.formulations.consumer.opt as co

    ticks = itertools.count()
    clock = types.SimpleNamespace(perf_counter=lambda: float(next(ticks)))
    monkeypatch.setattr(cf, "time", clock)
    monkeypatch.setattr(co, "time", clock)  # the front door sets the deadline, the flow checks it


def test_consumer_time_limit_runs_out(slow_clock):
    snap = stickyflow.parse_snapshot(consumer_doc(partitions=2_000, members=40))
    r = stickyflow.assign(snap, time_limit=0.001)
    assert_fallback(snap, r, "TimeLimitError", "time limit")
    with pytest.raises(stickyflow.TimeLimitError):
        stickyflow.assign(snap, time_limit=0.001, fallback=False)
    # no limit: the clock does not matter, the optimum comes back
    r = stickyflow.assign(snap)
    check_result(snap, r)
    assert r.solver.status == "optimal"


@pytest.mark.parametrize("size", [(6, 2), (20_000, 200)])
def test_consumer_one_millisecond_limit(size):
    # in time: the optimum, never a partial answer; out of time: the greedy, saying so
    snap = stickyflow.parse_snapshot(consumer_doc(partitions=size[0], members=size[1]))
    r = stickyflow.assign(snap, time_limit=0.001)
    check_result(snap, r)
    assert r.solver.status in ("optimal", "fallback"), r.solver
    if r.solver.status == "fallback":
        assert_fallback(snap, r, "TimeLimitError", "time limit")
    else:
        assert r.solver.method == "flow" and r.solver.bound == r.solver.objective


def test_streams_one_millisecond_limit():
    snap = stickyflow.parse_snapshot(streams_doc(tasks=120, clients=8, racks=3, num_standby_replicas=2,
                                                 config={"rack_aware_assignment_tags": ["zone"]}))
    r = stickyflow.assign(snap, method="cpsat", time_limit=0.001)
    check_result(snap, r)
    # CP-SAT's best in time, the flow's solution when it keeps every rule, or the greedy with the reason
    assert r.solver.status in ("feasible", "optimal", "fallback"), r.solver
    if r.solver.status == "fallback":
        assert "time limit" in r.solver.reason


def _cpsat_finds_nothing(monkeypatch) -> None:
    """CP-SAT, as :mod:`stickyflow.formulations.streams.cpsat` reaches it (``_cp()``), returns UNKNOWN at once:
    what a time limit that runs out before the first solution looks like, on any machine."""
    import types

    from ortools.sat.python import cp_model

    import stickyflow.formulations.streams.cpsat as sc

    class NoSolutionInTime(cp_model.CpSolver):
        def solve(self, model, *args, **kwargs):
            return cp_model.UNKNOWN

        @property
        def response_proto(self):  # what the stages read after each solve: no time spent
            return types.SimpleNamespace(deterministic_time=0.0)

    fake = types.SimpleNamespace(**{k: getattr(cp_model, k) for k in dir(cp_model) if not k.startswith("__")})
    fake.CpSolver = NoSolutionInTime
    monkeypatch.setattr(sc, "cp_model_module", lambda: fake)


def _flow_plan_kept(snap) -> bool:
    """Whether CP-SAT, finding nothing, would keep the flow's plan (tags and the move cap relaxed)."""
    import stickyflow.formulations.streams.cpsat_data as sc_data
    import stickyflow.formulations.streams.cpsat_start as sc_start
    from stickyflow.formulations.streams.flow import solve_flow
    from stickyflow.formulations.streams.opt import build_model

    model = build_model(snap)
    return sc_start.valid_hint(model, solve_flow(sc_data.relaxed(model))) is not None


def test_streams_cpsat_without_a_solution_falls_back(monkeypatch):
    # two standbys and a zone tag: the flow places standbys without the tags, so its plan cannot stand in; and
    # here no valid start either (the tag repair and the greedy's answer are switched off)
    import stickyflow.formulations.streams.cpsat as sc

    snap = stickyflow.parse_snapshot(streams_doc(tasks=20, clients=5, racks=3, num_standby_replicas=2,
                                                 config={"rack_aware_assignment_tags": ["zone"]}))
    assert not _flow_plan_kept(snap)
    _cpsat_finds_nothing(monkeypatch)
    monkeypatch.setattr(sc, "valid_start", lambda m, hint, options: (hint, "flow"))
    r = stickyflow.assign(snap, method="cpsat", time_limit=5)
    assert_fallback(snap, r, "TimeLimitError", "CP-SAT found no solution within the time limit")
    assert r.solver.method == "high_availability"
    with pytest.raises(stickyflow.TimeLimitError, match="no solution within the time limit"):
        stickyflow.assign(snap, method="cpsat", time_limit=5, fallback=False)


def test_streams_cpsat_without_a_solution_keeps_its_valid_start(monkeypatch):
    # the same snapshot: the flow's plan breaks the tags, so CP-SAT starts from a valid one (the flow's with its
    # standbys repaired, or the greedy's), and that start is the answer when CP-SAT finds nothing
    snap = stickyflow.parse_snapshot(streams_doc(tasks=20, clients=5, racks=3, num_standby_replicas=2,
                                                 config={"rack_aware_assignment_tags": ["zone"]}))
    assert not _flow_plan_kept(snap)
    _cpsat_finds_nothing(monkeypatch)
    r = stickyflow.assign(snap, method="cpsat", time_limit=5, fallback=False)
    check_result(snap, r)
    assert r.solver.status == "feasible" and r.solver.method in ("flow", "high_availability"), r.solver


def test_streams_cpsat_without_a_solution_keeps_a_valid_flow_plan(monkeypatch):
    # the contrast: one standby and no tags, so the flow's plan keeps every rule and is returned, not the greedy
    snap = stickyflow.parse_snapshot(streams_doc(tasks=20, clients=5, racks=3, num_standby_replicas=1))
    assert _flow_plan_kept(snap)
    _cpsat_finds_nothing(monkeypatch)
    r = stickyflow.assign(snap, method="cpsat", time_limit=5, fallback=False)
    check_result(snap, r)
    assert r.solver.method == "flow" and r.solver.status in ("optimal", "feasible"), r.solver


def test_cli_time_limit(tmp_path):
    path = tmp_path / "big.json"
    path.write_text(json.dumps(consumer_doc(partitions=2_000, members=40)))
    out = tmp_path / "out.json"
    code = _SLOW_CLOCK + f"""
import sys
from stickyflow.adapters.cli import main
sys.exit(main(["solve", {str(path)!r}, "-o", {str(out)!r}, "--time-limit", "0.001"]))
"""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["solver"]["status"] == "fallback" and "time limit" in doc["solver"]["reason"]
    assert doc["error"] == "NONE"


# --------------------------------------------------------------------------- proven infeasible

def test_streams_infeasible_move_cap():
    # balance needs moves that max_moves = 0 forbids: CP-SAT proves it, the greedy stands in
    snap = stickyflow.parse_snapshot(streams_doc(tasks=30, clients=4, stateful_fraction=0.0))
    free = stickyflow.assign(snap)
    assert free.metrics["moves"] > 0
    r = stickyflow.assign(snap, max_moves=0)
    assert_fallback(snap, r, "InfeasibleError", "infeasible")
    with pytest.raises(stickyflow.InfeasibleError):
        stickyflow.assign(snap, max_moves=0, fallback=False)


# --------------------------------------------------------------------------- the solver raises

@pytest.mark.parametrize("where", ["flow", "cpsat"])
def test_streams_solver_exception(monkeypatch, where):
    import stickyflow.formulations.streams.cpsat as sc
    import stickyflow.formulations.streams.flow as sf

    def boom(*a, **k):
        raise RuntimeError("solver exploded")

    if where == "flow":
        monkeypatch.setattr(sf, "solve_flow", boom)
    else:
        monkeypatch.setattr(sc, "solve_cpsat", boom)
    snap = stickyflow.parse_snapshot(streams_doc(num_standby_replicas=1))
    r = stickyflow.assign(snap, method=where)
    assert_fallback(snap, r, "RuntimeError", "solver exploded")
    with pytest.raises(stickyflow.SolverFaultError, match="solver exploded"):
        stickyflow.assign(snap, method=where, fallback=False)


@pytest.mark.parametrize("kind", ["consumer", "streams"])
def test_fallback_failing_too_is_one_typed_error(monkeypatch, kind, tmp_path, capsys):
    """Both the optimizer and the greedy fail: a SolverFaultError naming both; the CLI exits 1 with one line."""
    import stickyflow.formulations.consumer.flow as cf
    import stickyflow.formulations.streams.opt as so
    from stickyflow import registry

    def boom(*a, **k):
        raise RuntimeError("optimizer down")

    def greedy_down(*a, **k):
        raise ValueError("greedy down")

    if kind == "consumer":
        monkeypatch.setattr(cf, "solve_flow", boom)
        doc = consumer_doc()
    else:
        monkeypatch.setattr(so, "build_model", boom)
        doc = streams_doc()
    import dataclasses

    spec = registry.get_assignor("sticky", kind)
    monkeypatch.setitem(registry._REGISTRY, ("sticky", kind), dataclasses.replace(spec, target=greedy_down))
    with pytest.raises(stickyflow.SolverFaultError) as info:
        stickyflow.assign(doc)
    assert "optimizer down" in str(info.value) and "greedy down" in str(info.value)
    from stickyflow.adapters.cli import main

    path = tmp_path / "snap.json"
    path.write_text(json.dumps(doc))
    assert main(["solve", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "SolverFaultError" in err and "Traceback" not in err



def test_equal_subscriptions_need_no_ortools(tmp_path):
    """With equal subscriptions (and no rack to weigh) the optimum has a closed form: proven optimal without
    OR-Tools, the same assignment as with it."""
    doc = consumer_doc()
    assert len({tuple(m["subscription"]) for m in doc["members"]}) == 1
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(doc))
    code = _BLOCK_ORTOOLS + f"""
import json, stickyflow
r = stickyflow.assign(stickyflow.load_snapshot({str(path)!r}))
assert "ortools" not in sys.modules
print(json.dumps(r.to_json()))
"""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["solver"]["status"] == "optimal"
    want = stickyflow.assign(stickyflow.parse_snapshot(doc)).to_json()
    assert out["assignment"] == want["assignment"] and out["solver"]["objective"] == want["solver"]["objective"]
