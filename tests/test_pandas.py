"""The pandas adapter: snapshot and result frames, in-process batch rows, bad rows."""

from __future__ import annotations

import json

import pytest

pd = pytest.importorskip("pandas")

import stickyflow
from stickyflow.adapters.pandas import (RESULT_COLUMNS, frame_results, frame_snapshots, results_frame, snapshots_frame,
                                        solve_frame, solve_text)
from stickyflow.datasets import consumer_snapshot, read_dataset, streams_snapshot, suite, write_dataset
from tests.checker import check_result

BAD_MEMBERS = {"format": "stickyflow.snapshot/1", "kind": "consumer", "id": "bad-members", "topics": {}, "members": 5}


def test_solve_frame_rows_shape_and_metrics(seed):
    docs = [consumer_snapshot(sc, partitions=40, members=5, topics=2, seed=seed + i)
            for i, sc in enumerate(("scale_out", "rolling_restart", "mixed"))]
    docs.append(streams_snapshot("scale_out", tasks=12, clients=3, seed=seed))
    frame = solve_frame(docs, ["optimal", "range"])
    assert list(frame.columns) == [c for c in RESULT_COLUMNS if c != "result"]
    assert len(frame) == 2 * len(docs)
    assert frame["assignor"].tolist() == ["optimal", "range"] * len(docs)
    for doc, (_, rows) in zip(docs, frame.groupby("id", sort=False)):
        snap = stickyflow.parse_snapshot(doc)
        for row in rows.itertuples():
            if snap.kind == "streams" and row.assignor == "range":
                assert row.status == "unsupported" and "not an assignor for streams" in row.error
                assert pd.isna(row.moves)
                continue
            result = stickyflow.assign(snap, row.assignor)
            check_result(snap, result)
            assert row.status == result.status and pd.isna(row.error)
            assert (row.moves, row.imbalance) == (result.metrics["moves"], result.metrics["imbalance"])
            assert json.loads(row.metrics)["moves"] == result.metrics["moves"]
            assert row.kind == snap.kind and row.wall_s >= 0


def test_bad_snapshots_become_rows():
    good = suite("kip")[0]
    texts = [json.dumps(good), "{broken", json.dumps(BAD_MEMBERS), "[1, 2]", json.dumps(dict(good, kind="producer"))]
    frame = solve_frame(texts, ["optimal", "sticky"])
    assert len(frame) == 10
    status = frame["status"].tolist()
    assert status[:2] != ["invalid", "invalid"] and status[2:] == ["invalid"] * 8
    errors = frame["error"].tolist()
    assert errors[2].startswith("snapshot: is not valid JSON") and "'{broken'" in errors[2]
    assert errors[4] == "members: must be an array" and frame["id"].tolist()[4] == "bad-members"
    assert errors[6] == "snapshot: must be a JSON object"
    assert errors[8].startswith("kind: must be") and frame["kind"].tolist()[8] == "producer"
    assert frame["moves"].iloc[2:].isna().all()


def test_dtypes_are_nullable_and_missing_text_is_a_row():
    frame = pd.DataFrame({"snapshot": pd.array([json.dumps(suite("kip")[2]), None], dtype="string"),
                          "source": ["a.jsonl:1", "a.jsonl:2"]})
    out = solve_frame(frame, ["optimal"])
    assert str(out["moves"].dtype) == "Int64" and str(out["id"].dtype) == "string"
    assert out["status"].tolist() == ["optimal", "invalid"]
    assert out["error"].tolist()[1] == "snapshot: is missing (null)"
    assert out["source"].tolist() == ["a.jsonl:1", "a.jsonl:2"]
    assert out["error"].isna().tolist() == [True, False]  # <NA>, never the text "nan"


def test_snapshot_frames_round_trip(tmp_path):
    docs = suite("kip")
    frame = snapshots_frame(docs)
    assert list(frame.columns) == ["id", "kind", "source", "snapshot"]
    assert frame["id"].tolist() == [d["id"] for d in docs]
    assert frame_snapshots(frame) == docs
    path = write_dataset(docs, tmp_path / "k.jsonl")
    from_records = snapshots_frame(read_dataset(path))
    assert from_records["source"].tolist()[:2] == ["k.jsonl:1", "k.jsonl:2"]
    out = solve_frame(from_records, ["roundrobin"])
    assert out["source"].tolist()[0] == "k.jsonl:1"
    bad = pd.DataFrame({"snapshot": ["{"]})
    with pytest.raises(stickyflow.InvalidSnapshotError, match=r"snapshot\[0\]: is not valid JSON"):
        frame_snapshots(bad)


def test_results_frame_round_trip():
    docs = suite("smoke")
    snaps = [stickyflow.parse_snapshot(d) for d in docs[:4] + docs[18:21]]  # the last three have racks
    results = [stickyflow.assign(s, a) for s in snaps for a in ("optimal", "roundrobin")]
    for s, r in zip([s for s in snaps for _ in range(2)], results):
        check_result(s, r)
    frame = results_frame(results, include_result=True)
    assert len(frame) == len(results)
    cross = [None if pd.isna(v) else v for v in frame["cross_rack"].tolist()]
    assert cross == [r.metrics["cross_rack"] for r in results]
    assert cross[-1] is not None and cross[0] is None
    back = frame_results(frame)
    assert back == [json.loads(json.dumps(r.to_json())) for r in results]
    with pytest.raises(ValueError, match="include_result=True"):
        frame_results(results_frame(results))


def test_solve_text_never_raises_for_an_assignor_failure():
    def broken(snapshot, options):
        raise RuntimeError("boom")

    stickyflow.register_assignor("broken-test", broken, kinds=("consumer",))
    try:
        rows = solve_text(json.dumps(suite("kip")[0]), ["broken-test", "range"])
    finally:
        stickyflow.unregister_assignor("broken-test")
    assert [r["status"] for r in rows] == ["error", "heuristic"]
    assert "boom" in rows[0]["error"]


def test_assignor_list_validation():
    with pytest.raises(ValueError, match="assignors: name at least one"):
        solve_frame(suite("kip")[:1], [])
    frame = solve_frame(suite("kip")[:1], "optimal, range,optimal")
    assert frame["assignor"].tolist() == ["optimal", "range"]
