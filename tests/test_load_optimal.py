"""``optimal`` with ``"balance": "load"`` through the front door: the shared example, the cooperative protocol, the
fallback, the count path left as it was, and seeded snapshots held to the rules the result claims."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import stickyflow
from stickyflow.check.load import cheap_peak_bound
from stickyflow.datasets.generators import consumer_snapshot
from stickyflow.datasets.rates import with_rates
from tests.checker import check_result

HOT = Path(__file__).resolve().parent.parent / "examples" / "consumer-load-hot-partition.json"


def hot_example(**config) -> dict:
    doc = json.loads(HOT.read_text())
    doc["config"].update(config)
    return doc


def test_hot_partition_example():
    """The 120 partition alone on c1 is the least peak (1.2), and least overload (20) keeps c1 at exactly 120: c1
    gives up its 5 and both orders (25 of load, 3 moves), though the slack would have let it keep the 5."""
    snap = stickyflow.parse_snapshot(hot_example())
    r = stickyflow.assign(snap)
    check_result(snap, r)
    assert r.solver.status == "optimal" and r.solver.method == "cpsat"
    assert r.to_json()["assignment"]["c1"] == {"clicks": [0]}
    m = r.metrics
    assert (m["peak_utilization"], m["peak_bound"], m["overload"], m["moved_load"], m["moves"]) == (1.2, 1.2, 20.0,
                                                                                                    25.0, 3)
    assert r.solver.objective == 1.2 and r.solver.bound == 1.2


def test_cooperative_target_rounds_and_revocations():
    """The load decision is the target; this round withholds what leaves c1, which c1 revokes (KIP-429)."""
    eager = stickyflow.assign(hot_example())
    snap = stickyflow.parse_snapshot(dict(hot_example(), protocol="cooperative"))
    r = stickyflow.assign(snap)
    check_result(snap, r)
    out = r.to_json()
    assert out["target"] == eager.to_json()["assignment"]
    assert out["revocations"] == {"c1": {"clicks": [1], "orders": [0, 1]}}
    assert r.followup_rebalance_deadline_ms == snap.now_ms
    assert r.metrics["withheld"] == 3 and r.metrics["peak_utilization"] == 1.2  # the metrics describe the target


def test_fallback_is_load_aware(monkeypatch):
    """The optimizer failing, the sticky load greedy stands in, not the count-based sticky (which keeps every
    partition where it was, the hot one beside three others)."""
    import stickyflow.formulations.load.opt as load_opt

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(load_opt, "optimize", broken)
    rates = [40.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    doc = {"format": "stickyflow.snapshot/1", "kind": "consumer", "topics": {"t": {"partitions": 8, "rates": rates}},
           "members": [{"id": "a", "subscription": ["t"], "generation": 1, "owned": {"t": [0, 1, 2, 3]}},
                       {"id": "b", "subscription": ["t"], "generation": 1, "owned": {"t": [4, 5, 6, 7]}}],
           "config": {"balance": "load"}}
    snap = stickyflow.parse_snapshot(doc)
    r = stickyflow.assign(snap)
    check_result(snap, r)
    assert r.solver.status == "fallback" and r.solver.method == "greedy"
    assert "boom" in r.solver.reason
    # the least possible peak is 40 (the hot partition alone); the slack lets a keep two of its others (42)
    assert r.metrics["peak_utilization"] == 42.0 and r.metrics["moved_load"] == 1.0
    assert stickyflow.assign(snap, "sticky").metrics["peak_utilization"] == 43.0


def test_count_balance_is_untouched():
    """``"balance": "count"`` with rates: the count flow, as before; the load metrics only measure it."""
    doc = hot_example(balance="count")
    r = stickyflow.assign(doc)
    assert r.solver.method == "flow" and r.solver.status == "optimal"
    assert r.metrics["moves"] == 0 and r.metrics["peak_utilization"] == 1.45


def _load_snapshot(seed: int, scenario: str, **kw) -> stickyflow.ConsumerSnapshot:
    rng = np.random.default_rng(seed)
    doc = consumer_snapshot(scenario, partitions=int(rng.integers(8, 60)), members=int(rng.integers(2, 7)),
                            topics=int(rng.integers(1, 4)), seed=seed, **kw)
    shape = ["lognormal", "zipf", "hot_topic", "uniform"][seed % 4]
    capacity = None if seed % 3 else float(rng.integers(5, 40))
    return stickyflow.parse_snapshot(with_rates(doc, shape, seed=seed, capacity=capacity,
                                                load_slack=float(rng.choice([0.0, 0.05, 0.2]))))


@pytest.mark.parametrize("scenario", ["scale_out", "scale_in", "mixed", "rolling_restart", "rack_outage"])
def test_seeded_snapshots(seed, scenario):
    """Generated groups (hot partitions, a hot topic, racks, conflicts): every result valid and checked; where it
    claims ``optimal``, its peak is within the slack of the proven bound's limit, hence of lpt's peak too."""
    for k in range(2):
        snap = _load_snapshot(seed + k, scenario)
        r = stickyflow.assign(snap, time_limit=0.25)  # (CP-SAT's deterministic seconds: claims only what it proved)
        check_result(snap, r)
        m = r.metrics
        assert m["peak_bound"] >= cheap_peak_bound(snap) and r.solver.bound == m["peak_bound"]
        assert m["peak_bound"] <= m["peak_utilization"] * (1 + 1e-12)
        if r.solver.status == "optimal":
            lpt = stickyflow.assign(snap, "lpt").metrics["peak_utilization"]
            assert m["peak_utilization"] <= (1 + snap.config.load_slack) * lpt * (1 + 1e-9)
        else:
            assert r.solver.status == "feasible" and r.solver.reason


def test_same_answer_every_time(seed):
    snap = _load_snapshot(seed, "scale_out")
    first, again = stickyflow.assign(snap, time_limit=0.25), stickyflow.assign(snap, time_limit=0.25)
    assert first.to_json()["assignment"] == again.to_json()["assignment"]
    assert first.solver.status == again.solver.status


def test_bench_side_by_side_smoke():
    """bench/load_compare.py's suites at its smaller size: every assignor's peak at or above the best proven
    bound, and optimal's within the slack of it (the script's own figures come from the same code)."""
    from tests.conftest import bench_module

    compare = bench_module("load_compare")
    for suite in compare.SUITES:
        rows = compare.run(*compare.SIZES[0], suite, 1)
        assert {r["assignor"] for r in rows} == set(compare.ASSIGNORS)
        assert all(r["over_bound"] >= 1 - 1e-9 for r in rows)
        assert next(r for r in rows if r["assignor"] == "optimal")["over_bound"] <= 1.05 + 1e-9
