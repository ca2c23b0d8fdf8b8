"""One way in: every entry point takes what stickyflow.assign takes (issue 18, item 4), and results go
into pandas as they are."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import stickyflow
from stickyflow.adapters.pandas import assignment_frame, snapshots_frame
from stickyflow.greedy.streams_rank import rank, should_rebalance

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
STREAMS = EXAMPLES / "streams-scale-out.json"
CONSUMER = EXAMPLES / "consumer-cooperative-conflicts.json"


def _forms(path: Path):
    text = path.read_text()
    return {"path": path, "str-path": str(path), "text": text, "bytes": text.encode(), "dict": json.loads(text),
            "object": stickyflow.load_snapshot(path)}


@pytest.mark.parametrize("form", ["path", "str-path", "text", "bytes", "dict", "object"])
def test_rank_and_should_rebalance_take_every_form(form):
    snap = _forms(STREAMS)[form]
    expected = rank(stickyflow.load_snapshot(STREAMS))
    assert rank(snap) == expected
    assert should_rebalance(snap).proposed == should_rebalance(stickyflow.load_snapshot(STREAMS)).proposed


def test_rank_of_a_consumer_snapshot_names_the_kind():
    with pytest.raises(stickyflow.InvalidSnapshotError) as exc:
        rank(CONSUMER)
    assert exc.value.problems[0].field == "kind"


def test_rank_of_a_missing_file_is_an_invalid_snapshot(tmp_path):
    with pytest.raises(stickyflow.InvalidSnapshotError, match="cannot be read"):
        should_rebalance(tmp_path / "nope.json")


def test_snapshots_frame_reads_paths_and_keeps_them_as_source():
    frame = snapshots_frame([CONSUMER, str(STREAMS)])
    assert frame["id"].notna().all()
    assert frame["kind"].tolist() == ["consumer", "streams"]
    assert frame["source"].tolist() == [str(CONSUMER), str(STREAMS)]
    assert json.loads(frame["snapshot"][0]) == json.loads(CONSUMER.read_text())


def test_assignment_frame_lists_the_whole_decision_and_marks_withheld_partitions():
    result = stickyflow.assign(CONSUMER)
    frame = assignment_frame(result)
    target = {(m, t, p) for m, ts in result.target.items() for t, ps in ts.items() for p in ps}
    now = {(m, t, p) for m, ts in result.assignment.items() for t, ps in ts.items() for p in ps}
    rows = set(zip(frame["member"], frame["topic"], frame["partition"]))
    assert rows == target and len(frame) == len(target)
    assert set(frame.loc[frame["this_round"], ["member", "topic", "partition"]].itertuples(index=False, name=None)) == now
    assert not frame["this_round"].all()  # this example withholds something


def test_assignment_frame_for_streams_has_one_row_per_role():
    result = stickyflow.assign(EXAMPLES / "streams-racks-standbys.json")
    frame = assignment_frame(result)
    for role in ("active", "standby", "warmup"):
        expected = sorted((c, t) for c, a in result.assignment.items() for t in getattr(a, role))
        got = sorted(zip(frame.loc[frame["role"] == role, "client"], frame.loc[frame["role"] == role, "task"]))
        assert got == expected


def test_metrics_go_into_pandas_directly_and_stay_read_only():
    results = [stickyflow.assign(p) for p in (CONSUMER, STREAMS)]
    flat = pd.json_normalize([r.metrics for r in results])
    assert flat.loc[0, "moves"] == results[0].metrics["moves"]
    assert pd.DataFrame([results[1].metrics]).loc[0, "moves"] == results[1].metrics["moves"]
    with pytest.raises(TypeError):
        results[0].metrics["moves"] = 0


@pytest.mark.parametrize("form", ["path", "str-path", "text", "dict", "object"])
def test_the_simulator_takes_a_bare_snapshot_in_every_form(form):
    from stickyflow.datasets.simulator import run_scenario, simulate

    snap = _forms(STREAMS)[form]
    run = run_scenario(snap, "sticky")
    assert len(run.rounds) > 0 and run.kind == "streams"
    sim = simulate(_forms(CONSUMER)[form if form != "text" else "dict"], ["sticky"])
    assert sim.runs[0].kind == "consumer"


def test_the_simulator_names_a_bad_snapshot(tmp_path):
    from stickyflow.datasets.simulator import simulate

    with pytest.raises(stickyflow.InvalidSnapshotError, match="cannot be read"):
        simulate(tmp_path / "nope.json")
