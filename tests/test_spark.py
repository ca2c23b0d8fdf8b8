"""The Spark adapter and ``stickyflow batch`` on a real local Spark session."""

from __future__ import annotations

import json
import os
import shutil

import pytest

pytest.importorskip("pyspark")
pd = pytest.importorskip("pandas")
if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
    pytest.skip("Spark needs Java", allow_module_level=True)

import stickyflow
from stickyflow.adapters.pandas import solve_frame
from stickyflow.adapters.spark import (BatchSummary, read_snapshots, result_schema, run_batch, solve_dataframe,
                                       write_results)
from stickyflow.datasets import consumer_snapshot, streams_snapshot, suite, write_dataset

pytestmark = [
    pytest.mark.spark,
    pytest.mark.xdist_group("spark"),  # with --dist loadgroup, one worker (one JVM) runs them all
    pytest.mark.filterwarnings("ignore:The copy keyword is deprecated"),  # pyspark's toPandas on pandas 3
]

BAD_MEMBERS = {"format": "stickyflow.snapshot/1", "kind": "consumer", "id": "bad-members", "topics": {}, "members": 5}
KEY = ["id", "assignor"]
NUMBERS = ["status", "moves", "imbalance", "cross_rack", "error"]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """A JSON Lines dataset of good snapshots of both kinds, with corrupted lines between them."""
    docs = suite("kip") + [consumer_snapshot(sc, partitions=60, members=6, topics=3, seed=i, racks=3 if i % 2 else 0)
                           for i, sc in enumerate(("scale_out", "rack_outage", "mixed", "rolling_restart"))]
    docs.append(streams_snapshot("lag_skew", tasks=16, clients=4, seed=9))
    lines = [json.dumps(d) for d in docs]
    bad = ["{broken", json.dumps(BAD_MEMBERS), '"just a string"', json.dumps(dict(docs[0], id="bad-kind", kind="x"))]
    for i, b in enumerate(bad):
        lines.insert(3 * i + 2, b)
    root = tmp_path_factory.mktemp("batch")
    path = root / "snapshots.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return {"docs": docs, "bad": len(bad), "jsonl": path, "root": root}


def sorted_rows(frame):
    return frame.sort_values(KEY, na_position="last").reset_index(drop=True)


def test_batch_writes_every_good_row_and_an_error_row_per_bad_one(spark, dataset):
    out = dataset["root"] / "out.parquet"
    lines: list[str] = []
    summary = run_batch(str(dataset["jsonl"]), str(out), ["optimal", "range"], spark=spark, partitions=3,
                        progress=lines.append)
    docs, bad = dataset["docs"], dataset["bad"]
    assert isinstance(summary, BatchSummary) and summary.rows == 2 * (len(docs) + bad)
    assert summary.by_status["invalid"] == 2 * bad
    assert lines and lines[-1].startswith("wrote ")
    frame = pd.read_parquet(out)
    for column in ("id", "kind", "assignor", "moves", "imbalance", "cross_rack", "status", "wall_s", "error"):
        assert column in frame.columns
    good = frame[frame["status"] != "invalid"]
    assert sorted(set(good["id"])) == sorted(d["id"] for d in docs)
    assert good.groupby("id").size().eq(2).all()
    invalid = frame[frame["status"] == "invalid"]
    assert invalid["error"].notna().all()
    assert set(invalid["source"]) == {f"snapshots.jsonl:{3 * i + 3}" for i in range(bad)}  # the file and line
    assert {"members: must be an array", "snapshot: must be a JSON object"} <= set(invalid["error"])
    assert set(invalid["id"].dropna()) == {"bad-members", "bad-kind"}
    # the same numbers as the in-process loop
    local = solve_frame(docs, ["optimal", "range"])
    got = sorted_rows(good.astype({"moves": "Int64", "imbalance": "Int64", "cross_rack": "Int64"}))[KEY + NUMBERS]
    want = sorted_rows(local)[KEY + NUMBERS]
    pd.testing.assert_frame_equal(got.astype(object).where(got.notna(), None),
                                  want.astype(object).where(want.notna(), None), check_dtype=False)


def test_folder_and_parquet_inputs_give_the_same_rows(spark, dataset, tmp_path):
    docs = dataset["docs"]
    folder = write_dataset(docs, tmp_path / "folder")
    parquet = write_dataset(docs, tmp_path / "in.parquet")
    frames = []
    for i, source in enumerate((folder, parquet)):
        out = tmp_path / f"out{i}"
        run_batch(str(source), str(out), "roundrobin,optimal", spark=spark, partitions=2)
        frames.append(sorted_rows(pd.read_parquet(out))[KEY + NUMBERS])
    pd.testing.assert_frame_equal(frames[0], frames[1])
    assert len(frames[0]) == 2 * len(docs)
    assert (frames[0]["status"] == "unsupported").sum() == sum(d["kind"] == "streams" for d in docs)


def test_rerun_replaces_output_and_interrupted_write_leaves_it_intact(spark, dataset, tmp_path):
    src = str(dataset["jsonl"])
    out = tmp_path / "res"
    first = run_batch(src, str(out), ["range"], spark=spark, partitions=2)
    again = run_batch(src, str(out), ["range"], spark=spark, partitions=2)
    assert first.rows == again.rows == len(pd.read_parquet(out))

    rows = solve_dataframe(read_snapshots(spark, src), ["optimal", "range"], partitions=2)

    class Interrupted(Exception):
        pass

    def crash():
        raise Interrupted

    with pytest.raises(Interrupted):
        write_results(rows, str(out), on_tmp_written=crash)
    assert len(pd.read_parquet(out)) == first.rows  # still the previous run's output
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".res.stickyflow-tmp-")]
    assert len(leftovers) == 1
    write_results(rows, str(out))
    assert len(pd.read_parquet(out)) == 2 * first.rows
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".res.stickyflow-tmp-")]


def test_pandas_strategy_matches_arrow(spark, dataset):
    df = read_snapshots(spark, str(dataset["jsonl"]))
    assert df.columns == ["source", "snapshot"]
    arrow = solve_dataframe(df, ["optimal"], partitions=2, include_result=True).toPandas()
    grouped = solve_dataframe(df, ["optimal"], partitions=2, strategy="pandas", include_result=True).toPandas()
    cols = KEY + NUMBERS
    pd.testing.assert_frame_equal(sorted_rows(arrow)[cols], sorted_rows(grouped)[cols])
    ok = arrow[arrow["status"] != "invalid"]
    for text in ok["result"]:
        result = json.loads(text)
        assert result["format"] == "stickyflow.result/1" and result["error"] == "NONE"
    assert "result string" in result_schema(True) and "result" not in result_schema(False)


def test_cli_batch(spark, dataset, tmp_path, capsys):
    from stickyflow.adapters.cli import main

    out = tmp_path / "cli-out"
    code = main(["batch", str(dataset["jsonl"]), str(out), "--assignors", "optimal,sticky", "--partitions", "2"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "stickyflow batch: wrote" in err and "invalid: " in err
    frame = pd.read_parquet(out)
    assert set(frame["assignor"]) == {"optimal", "sticky"}
    assert len(frame) == 2 * (len(dataset["docs"]) + dataset["bad"])
    assert main(["batch", str(tmp_path / "missing.jsonl"), str(out)]) == 2
    assert main(["batch", str(dataset["jsonl"]), str(out), "--assignors", "optimel"]) == 2
    assert "optimel" in capsys.readouterr().err


def _withheld(snap, doc: dict) -> dict:
    """Topic -> mask of the partitions a cooperative round leaves unassigned: revoked and given to nobody yet."""
    import numpy as np

    held: dict[str, set[int]] = {}
    for topics in doc["assignment"].values():
        for t, parts in topics.items():
            held.setdefault(t, set()).update(parts)
    masks: dict[str, np.ndarray] = {}
    for topics in doc["revocations"].values():
        for t, parts in topics.items():
            for p in parts:
                if t in snap.topics and p not in held.get(t, ()):
                    masks.setdefault(t, np.zeros(snap.topics[t].partitions, dtype=bool))[p] = True
    return masks


def check_written_result(snap, doc: dict, row) -> None:
    """``doc``, a result JSON a Spark worker wrote, is a valid answer for ``snap``, judged from the JSON alone;
    its row's columns agree with it; and it is the checked result of the same (deterministic) solve here."""
    from stickyflow.check.consumer import inspect_consumer
    from stickyflow.check.streams import streams_metrics, validate_streams
    from stickyflow.model.consumer_claims import previous_owners
    from tests.checker import check_result

    assert doc["format"] == "stickyflow.result/1" and doc["error"] == "NONE"
    assert (doc["kind"], doc["id"], doc["assignor"]) == (snap.kind, snap.id, row.assignor)
    assert (doc["solver"]["status"], doc["metrics"]["moves"]) == (row.status, row.moves)
    if snap.kind == "consumer":
        assert set(doc["assignment"]) == {m.id for m in snap.members}
        violations, measured = inspect_consumer(snap, doc["assignment"], withheld=_withheld(snap, doc),
                                                prev=previous_owners(snap))
        assert (doc["followup_rebalance_deadline_ms"] is not None) == bool(doc["revocations"])
        if snap.protocol != "cooperative":
            assert not doc["revocations"]
        measure = not doc["revocations"]  # a cooperative round's metrics are those of its target, not of the round
    else:
        assert set(doc["assignment"]) == {c.process_id for c in snap.clients}
        violations = validate_streams(snap, doc["assignment"],
                                      followup_rebalance_deadline_ms=doc["followup_rebalance_deadline_ms"])
        measured, measure = streams_metrics(snap, doc["assignment"]), True
    assert not violations, (snap.id, violations)
    if measure:
        for key in ("moves", "imbalance", "cross_rack"):
            assert doc["metrics"][key] == measured[key], (snap.id, key, doc["metrics"][key], measured[key])
    local = stickyflow.assign(snap, row.assignor, seed=0, num_workers=1)  # as the batch solves (run_batch defaults)
    check_result(snap, local)
    want = local.to_json()
    for d in (doc, want):
        d["solver"] = {k: v for k, v in d["solver"].items() if k != "wall_s"}
    if snap.kind == "streams" and doc["solver"]["method"] == "cpsat":
        # CP-SAT's stages also stop at a wall-clock guard, which two solves at once on a loaded machine can
        # reach at different points: then an equal-cost optimum may place a standby elsewhere. Proven
        # optimal both times, the objective must agree; the rest of the result is checked above
        if doc["solver"]["status"] == want["solver"]["status"] == "optimal":
            assert doc["solver"]["objective"] == want["solver"]["objective"], snap.id
        return
    assert doc == want, snap.id


def test_written_results_check_out(spark, dataset, tmp_path):
    """The result JSON that the batch wrote (not a fresh solve) is valid for its snapshot, row by row."""
    out = tmp_path / "with-results"
    run_batch(str(dataset["jsonl"]), str(out), ["sticky", "optimal"], spark=spark, partitions=2, include_result=True)
    rows = pd.read_parquet(out)
    by_id = {d["id"]: d for d in dataset["docs"]}
    good = rows[rows["status"] != "invalid"]
    assert len(good) == 2 * len(by_id) and set(good["id"]) == set(by_id)
    assert rows.loc[rows["status"] == "invalid", "result"].isna().all()
    for row in good.itertuples():
        assert isinstance(row.result, str) and row.result, row.id
        check_written_result(stickyflow.parse_snapshot(by_id[row.id]), json.loads(row.result), row)


def test_folder_of_pretty_printed_json_is_one_snapshot_per_file(spark, tmp_path):
    """The project's own examples/ (indented JSON, and a .py file beside them): one valid row per file and
    assignor, none invalid. Before the fix every line of every file was read as a snapshot."""
    from tests.conftest import EXAMPLES

    assert EXAMPLES and all(b"\n  " in p.read_bytes() for p in EXAMPLES)  # really pretty-printed
    out = tmp_path / "examples.parquet"
    summary = run_batch(str(EXAMPLES[0].parent), str(out), ["optimal", "sticky"], spark=spark, partitions=2)
    frame = pd.read_parquet(out)
    assert summary.rows == len(frame) == 2 * len(EXAMPLES)
    assert frame["error"].isna().all() and not frame["status"].isin(["invalid", "error", "unsupported"]).any()
    want = {json.loads(p.read_text())["id"] for p in EXAMPLES}
    assert set(frame["id"]) == want and frame.groupby("id").size().eq(2).all()
    assert set(frame["source"]) == {p.name for p in EXAMPLES}
