"""``bench/streams_gap_probe.py``'s role-swap polish, client LNS and LP as further checks of the flows' bound.

Every plan the probe builds is another balanced assignment, so it can cost no less than the flows' proven
bound, and the LP relaxation, being one, no more than the optimum the plan stands for (here: no more than
the plan). Either failing would mean a wrong bound, a wrong neighbourhood model or a wrong LP.
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import bench_module


def _probe_module():
    return bench_module("streams_gap_probe")


@pytest.mark.parametrize("scenario,variant", [("steady", "stateful"), ("scale_out", "plain"),
                                              ("rolling_restart", "tags")])
def test_probe_plans_respect_the_bound_and_the_lp_stays_below(scenario, variant, seed):
    probe = _probe_module()
    row = probe.probe(60, 8, scenario, variant, seed=seed % 10_000, lp=True, lp_pairs=10_000, lp_time=60.0,
                      lns=5, lns_clients=3, lns_seconds=30.0)
    assert row["plan"] == row["placement"] + row["way"]
    if row["bound"] is not None:
        assert row["bound"] <= row["plan"]
        if row.get("swap_balanced"):
            assert row["swap_plan"] >= row["bound"]
        if "lns_plan" in row:
            assert row["bound"] <= row["lns_plan"] <= row["plan"]
    assert row["lp"] is not None and row["lp"] <= row["plan"] + 1e-6


@pytest.mark.parametrize("scenario,case_seed", [("steady", 1), ("scale_out", 2)])
def test_client_lns_repairs_a_spoiled_plan_but_not_below_the_bound(scenario, case_seed):
    """Twenty targets shuffled among themselves (counts unchanged, cost about doubled): the neighbourhoods win
    most of it back, and never pass the flows' bound."""
    from stickyflow.formulations.streams import flow as sf
    from stickyflow.formulations.streams.plan import target_cost

    probe = _probe_module()
    m = probe.model_of(60, 8, scenario, "stateful", case_seed)
    plan = sf.solve_flow(m)
    target = plan.target.copy()
    moved = np.random.default_rng(case_seed).permutation(m.T)[:20]
    target[moved] = target[np.roll(moved, 1)]
    spoiled = sf.complete_plan(m, target)
    start = target_cost(m, spoiled)
    assert all(sf._counts_balanced(m, spoiled).values()) and start > target_cost(m, plan)
    out = probe.client_lns(m, spoiled, clients=3, rounds=40, seconds=60.0, seed=case_seed)
    assert out["lns_solved"] > 0
    assert plan.bound <= out["lns_plan"] < start
