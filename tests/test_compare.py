"""``stickyflow compare``: a study writes every file, the same command gives the same tables (times aside), on
Spark as in one process; rows follow the assignors that serve each kind; a researcher's own assignor joins by
``module:function``; bad input is one line and exit 2."""

from __future__ import annotations

import json
import textwrap

import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("matplotlib")
pytest.importorskip("pyarrow")

import stickyflow  # noqa: E402
from stickyflow.adapters.cli import main  # noqa: E402
from stickyflow.adapters.compare import ROW_COLUMNS, TIME_COLUMNS, compare, snapshot_rows  # noqa: E402
from stickyflow.datasets.suites import STUDY_SUITES, suite_count, suite_item  # noqa: E402
from tests.checker import check_result  # noqa: E402

TABLES = ("summary", "by_size", "by_suite")
FILES = ("results.parquet", "report.html", "study.json", "summary.csv", "by_size.csv", "by_suite.csv",
         "moves_vs_size.png", "balance_vs_size.png", "cross_rack_vs_size.png", "cost_vs_size.png",
         "time_vs_size.png", "rounds.png", "pareto.png", "pareto.csv")


def _tables(out):
    return {t: pd.read_csv(out / f"{t}.csv").drop(columns=list(TIME_COLUMNS)) for t in TABLES}


def test_same_command_same_tables_and_every_file(tmp_path):
    # small suites on purpose: churn's consumer groups (KIP-341 conflicts, racks on every other one for the
    # Pareto sweep) and rolling's mix of both kinds, whose Streams client plays probing rounds; the standbys
    # suite took 90 s here in CP-SAT, and its snapshots are solved and checked in the suite test below
    args = dict(count=3, seed=5, pareto_count=2)
    a = compare("suite:churn,rolling", "optimal,sticky,range", tmp_path / "a", **args)
    b = compare("suite:churn,rolling", "optimal,sticky,range", tmp_path / "b", **args)
    for name in FILES:
        assert (tmp_path / "a" / name).is_file(), name
    ta, tb = _tables(tmp_path / "a"), _tables(tmp_path / "b")
    for t in TABLES:
        pd.testing.assert_frame_equal(ta[t], tb[t])
    rows = pd.read_parquet(tmp_path / "a" / "results.parquet")
    assert list(rows.columns) == list(ROW_COLUMNS)
    # churn is consumer-only (3 assignors serve it); rolling alternates consumer, Streams, consumer (range does
    # not serve Streams)
    assert len(rows) == a.rows == 3 * 3 + 2 * 3 + 1 * 2
    streams = rows[rows["kind"] == "streams"]
    assert set(streams["assignor"]) == {"optimal", "sticky"}
    assert (streams["rounds"] > 1).any()  # follow-up rebalances were played, and came out the same twice
    assert rows["error"].isna().all()
    summary = ta["summary"]
    for _, row in summary.iterrows():  # the table adds up from the rows
        mine = rows[(rows["kind"] == row["kind"]) & (rows["assignor"] == row["assignor"])]
        assert row["snapshots"] == len(mine) and row["moves_total"] == mine["moves"].sum()
    record = json.loads((tmp_path / "a" / "study.json").read_text())
    assert record["suites"] == {"churn": 3, "rolling": 3} and record["seed"] == 5
    assert {"stickyflow", "ortools", "pyspark", "python", "machine"} <= set(record["versions"])
    # a different seed makes different snapshots
    c = compare("suite:churn", "optimal", tmp_path / "c", count=3, seed=6, pareto_count=0)
    assert c.tables["summary"]["moves_total"].iloc[0] != a.tables["summary"].query(
        "kind == 'consumer' and assignor == 'optimal'")["moves_total"].iloc[0]


def test_rows_play_followups_to_convergence():
    """A cooperative join needs a second rebalance; a Streams scale-out with warm-ups needs probing rounds."""
    coop = {"format": "stickyflow.snapshot/1", "kind": "consumer", "protocol": "cooperative",
            "topics": {"t": {"partitions": 6}},
            "members": [{"id": "a", "subscription": ["t"], "generation": 1, "owned": {"t": [0, 1, 2, 3, 4, 5]}},
                        {"id": "b", "subscription": ["t"]}]}
    (row,) = snapshot_rows(coop, ["optimal"])
    assert row["rounds"] == 2 and row["converged"] and row["converge_moves"] == 3
    streams = suite_item("kip", 6)  # KIP-441's scale-out: B joins with no state, one warm-up at a time
    rows = {r["assignor"]: r for r in snapshot_rows(streams, ["optimal", "sticky", "range"], rounds=20)}
    assert set(rows) == {"optimal", "sticky"}  # range does not serve Streams: no row, not an error row
    for r in rows.values():
        assert r["rounds"] > 1 and r["converged"] and r["converge_min"] > 0
        check_result(stickyflow.as_snapshot(streams), stickyflow.assign(streams, r["assignor"]))


def test_own_assignor_by_module_function(tmp_path, monkeypatch):
    (tmp_path / "my_study_assignor.py").write_text(textwrap.dedent('''
        import stickyflow

        def everything_to_first(snapshot, options):
            first = snapshot.members[0].id
            return stickyflow.Decision(assignment={first: {t: range(snapshot.topics[t].partitions)
                                                          for t in snapshot.assignable_topics()}},
                                       method="custom", status="heuristic")
    '''))
    monkeypatch.chdir(tmp_path)
    study = compare("suite:scaling", "optimal,my_study_assignor:everything_to_first", tmp_path / "out",
                    count=4, pareto_count=0)
    mine = study.tables["summary"].query("assignor == 'my_study_assignor:everything_to_first' and kind == 'consumer'")
    assert len(mine) == 1 and mine["snapshots"].iloc[0] == 2
    # it holds nothing back and balances nothing: every snapshot has a positive imbalance
    assert mine["imbalance_mean"].iloc[0] > 0


@pytest.mark.parametrize("argv, needle", [
    (["suite:nope"], "SOURCE: 'nope' is not a suite"),
    (["suite:churn", "--assignors", "optimal,bogus"], "--assignors: 'bogus' is not an assignor"),
    (["suite:churn", "--assignors", "nomodule_xyz:fn"], "cannot import 'nomodule_xyz:fn'"),
    (["suite:churn", "--count", "0"], "--count: must be an integer >= 1"),
    (["suite:churn", "--rounds", "0"], "--rounds: must be an integer >= 1"),
    (["no/such/dataset.jsonl"], "SOURCE: 'no/such/dataset.jsonl' is neither"),
    (["suite:churn", "UNWRITABLE"], "-o: "),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, argv, needle):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    out = str(blocker / "sub")  # a folder under a file cannot be made
    if "UNWRITABLE" in argv:
        argv = [a for a in argv if a != "UNWRITABLE"]
    else:
        out = str(tmp_path / "out")
    code = main(["compare", *argv, "-o", out, "-q"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("stickyflow compare: ") and needle in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize("name", STUDY_SUITES)
def test_study_suites_are_valid_seeded_and_indexable(name):
    n = min(suite_count(name), 6)
    docs = [suite_item(name, i, seed=3) for i in range(n)]
    assert [d["id"] for d in docs] == [suite_item(name, i, seed=3)["id"] for i in range(n)]
    assert len({d["id"] for d in docs}) == n
    assert docs[0] == suite_item(name, 0, seed=3)  # made alone, the same snapshot
    if name != "large":
        for d in docs[:3]:
            snap = stickyflow.parse_snapshot(d)
            check_result(snap, stickyflow.assign(snap, "optimal"))


def test_churn_suite_has_kip341_conflicts():
    doc = suite_item("churn", 0)
    claims: dict[tuple[str, int], list[int]] = {}
    for m in doc["members"]:
        for t, parts in m.get("owned", {}).items():
            for p in parts:
                claims.setdefault((t, p), []).append(m.get("generation", -1))
    doubles = [g for g in claims.values() if len(g) > 1]
    assert doubles, "no partition claimed twice"


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
@pytest.mark.filterwarnings("ignore:The copy keyword is deprecated")
def test_spark_gives_the_local_tables(spark, tmp_path):
    """Snapshots made and solved inside Spark tasks, tables aggregated by Spark: the same as in one process."""
    args = dict(count=3, pareto_count=0)
    compare("suite:rolling", "optimal,sticky", tmp_path / "spark", engine="spark", spark=spark, **args)
    compare("suite:rolling", "optimal,sticky", tmp_path / "local", engine="local", **args)
    ts, tl = _tables(tmp_path / "spark"), _tables(tmp_path / "local")
    for t in TABLES:
        pd.testing.assert_frame_equal(ts[t], tl[t], check_dtype=False)
    rows = spark.read.parquet(str(tmp_path / "spark" / "results.parquet")).count()
    assert rows == 3 * 2
