"""The report's load section (issue 35): load columns in the summary, the bar chart, the load_slack front."""

import json

import pandas as pd
import pytest

from stickyflow.adapters.pandas import solve_text
from stickyflow.adapters.report import write_report
from stickyflow.adapters.report.load import slack_table
from stickyflow.datasets.load_scenarios import drifted_snapshot

pytest.importorskip("matplotlib")


def test_report_draws_the_load_front_over_load_slack(tmp_path):
    docs = [drifted_snapshot(partitions=16, members=3, topics=2, seed=s, sigma=0.6) for s in range(2)]
    data = tmp_path / "loads.jsonl"
    data.write_text("".join(json.dumps(d) + "\n" for d in docs))
    frame = pd.DataFrame([r for d in docs for r in solve_text(d, ["optimal", "lpt", "sticky"])])
    rep = write_report(frame, tmp_path / "out", pareto_input=str(data), ratios=(1,), load_slacks=(0.1, 0.5),
                       pareto_assignors=("optimal",))
    assert {"load.png", "load_front.png", "load_front.csv"} <= set(rep.files)
    summary = rep.summary.set_index("assignor")
    assert (summary["peak_ratio_mean"] >= 1 - 1e-9).all()
    sweep = pd.read_csv(rep.files["load_front.csv"])
    assert set(sweep["assignor"]) >= {"optimal", "lpt", "sticky"}
    assert (sweep["snapshots"] == 2).all() and (sweep["peak_ratio_mean"] >= 1 - 1e-9).all()
    opt = sweep[sweep["assignor"] == "optimal"].set_index("slack")
    assert opt.loc[0.5, "moved_load"] <= opt.loc[0.1, "moved_load"] + 1e-9  # more slack never moves more
    assert len(slack_table(sweep)[lambda t: t["assignor"] == "lpt"]) == 1  # blind to the slack: one row


def test_count_batch_has_no_load_section(tmp_path):
    doc = {"format": "stickyflow.snapshot/1", "kind": "consumer", "topics": {"t": {"partitions": 4}},
           "members": [{"id": "a", "subscription": ["t"]}]}
    rep = write_report(pd.DataFrame(solve_text(doc, ["sticky"])), tmp_path / "out", pareto_input=None)
    assert "load.png" not in rep.files and rep.summary["peak_ratio_mean"].isna().all()
