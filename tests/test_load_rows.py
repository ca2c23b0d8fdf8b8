"""The load columns of batch rows (issue 35): every assignor of a snapshot measured against one bound."""

import pytest

from stickyflow.adapters.load_rows import BATCH_LOAD_COLUMNS, share_bound
from stickyflow.adapters.pandas import RESULT_COLUMNS, solve_text
from stickyflow.datasets.load_scenarios import drifted_snapshot


def test_batch_rows_carry_the_load_columns_against_one_bound():
    doc = drifted_snapshot(partitions=30, members=3, topics=2, seed=5)
    rows = solve_text(doc, ["sticky", "lpt", "range"], source="x")
    assert set(BATCH_LOAD_COLUMNS) <= set(RESULT_COLUMNS)
    best = max(r["peak_bound"] for r in rows)
    for r in rows:
        assert r["error"] is None, r["error"]
        assert r["peak_utilization"] >= best - 1e-9  # no assignor beats a proven lower bound
        assert r["peak_ratio"] == pytest.approx(r["peak_utilization"] / best)
        assert r["moved_load"] >= 0 and r["overloaded"] >= 0


def test_count_snapshots_have_null_load_columns():
    doc = {"format": "stickyflow.snapshot/1", "kind": "consumer", "topics": {"t": {"partitions": 4}},
           "members": [{"id": "a", "subscription": ["t"]}]}
    (row,) = solve_text(doc, ["sticky"])
    assert row["error"] is None
    assert all(row[c] is None for c in BATCH_LOAD_COLUMNS)


def test_share_bound_leaves_rows_without_loads_alone():
    rows = share_bound([{"peak_utilization": None, "peak_bound": None, "peak_ratio": None},
                        {"peak_utilization": 4.0, "peak_bound": 2.0, "peak_ratio": 2.0}])
    assert rows[0]["peak_ratio"] is None and rows[1]["peak_ratio"] == 2.0
