"""``bench/streams_gap_probe.py``'s role-swap polish and LP as further checks of the flows' bound.

Every plan the probe builds is another balanced assignment, so it can cost no less than the flows' proven
bound, and the LP relaxation, being one, no more than the optimum the plan stands for (here: no more than
the plan). Either failing would mean a wrong bound, a wrong swap or a wrong LP.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _probe_module():
    spec = importlib.util.spec_from_file_location("streams_gap_probe", ROOT / "bench" / "streams_gap_probe.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("scenario,variant", [("steady", "stateful"), ("scale_out", "plain"),
                                              ("rolling_restart", "tags")])
def test_probe_plans_respect_the_bound_and_the_lp_stays_below(scenario, variant, seed):
    probe = _probe_module()
    row = probe.probe(60, 8, scenario, variant, seed=seed % 10_000, lp=True, lp_pairs=10_000, lp_time=60.0)
    assert row["plan"] == row["placement"] + row["covering"]
    if row["bound"] is not None:
        assert row["bound"] <= row["plan"]
        if row.get("swap_balanced"):
            assert row["swap_plan"] >= row["bound"]
    assert row["lp"] is not None and row["lp"] <= row["plan"] + 1e-6
