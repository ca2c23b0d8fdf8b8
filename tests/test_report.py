"""``stickyflow report``: the table adds up, the plots render (non-empty PNGs), the HTML page embeds them and the
table, and the Pareto sweep behaves as a parametric optimum must (more weight on traffic: never more cross-rack
reads, never fewer moves)."""

from __future__ import annotations

import base64
import json
import re
import sys

import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("matplotlib")
pytest.importorskip("pyarrow")

import stickyflow  # noqa: E402
from stickyflow.adapters import report  # noqa: E402
from stickyflow.adapters.cli import main  # noqa: E402
from tests.checker import check_result  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"


CONSUMER_ASSIGNORS = ["optimal", "sticky", "range", "roundrobin"]  # every built-in one: none may go missing


def _batch(snapshots, assignors) -> "pd.DataFrame":
    """What ``stickyflow batch`` writes, made in-process by the pandas adapter (the same rows as on Spark),
    plus one snapshot that is broken."""
    from stickyflow.adapters.pandas import solve_frame

    for doc in snapshots:
        snap = stickyflow.as_snapshot(doc)
        for a in assignors:
            check_result(snap, stickyflow.assign(snap, a))
    texts = [json.dumps(d) for d in snapshots] + ['{"format": "stickyflow.snapshot/1", "kind": "consumer", '
                                                  '"topics": {}, "members": [{"id": 3, "subscription": []}]}']
    return solve_frame(pd.DataFrame({"snapshot": texts}), assignors)


@pytest.fixture
def batch(tmp_path, seed):
    frame = _batch(report.pareto_snapshots(5, seed), CONSUMER_ASSIGNORS)
    path = tmp_path / "batch.parquet"
    frame.to_parquet(path)
    return path, frame


def test_summary_table_adds_up(batch):
    _, frame = batch
    table = report.summary_table(frame)
    assert set(table["assignor"]) == set(CONSUMER_ASSIGNORS)
    for _, row in table.iterrows():
        rows = frame[(frame["assignor"] == row["assignor"]) & frame["error"].isna()]
        assert row["solved"] == len(rows)
        assert row["moves_total"] == rows["moves"].sum()
        assert row["cross_rack_total"] == rows["cross_rack"].sum()
        assert row["imbalance_max"] == rows["imbalance"].max()
        assert row["optimal"] + row["feasible"] + row["heuristic"] + row["fallback"] == row["solved"]
    opt = table[table["assignor"] == "optimal"].iloc[0]
    assert opt["errors"] == 1 and opt["snapshots"] == 6


def test_report_renders(batch, tmp_path):
    path, frame = batch
    out = tmp_path / "report"
    rep = report.write_report(path, out, pareto_input="generated", pareto_count=3, pareto_seed=1, ratios=(0, 1, 100))
    for name in ("metrics.png", "time_vs_size.png", "pareto.png"):
        data = (out / name).read_bytes()
        assert data[:8] == PNG and len(data) > 5_000, name
    page = (out / "report.html").read_text(encoding="utf-8")
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(images) == 3
    assert {base64.b64decode(i) for i in images} == {(out / n).read_bytes() for n in
                                                     ("metrics.png", "time_vs_size.png", "pareto.png")}
    assert page.count("<table") >= 3  # summary, sweep totals, rows with errors
    for a in CONSUMER_ASSIGNORS:
        assert f"<td>{a}</td>" in page
    assert "members[0].id: must be a string" in page  # the broken snapshot's row
    assert "src=\"http" not in page and "<script" not in page  # self-contained
    summary = pd.read_csv(out / "summary.csv")
    assert list(summary["assignor"]) == list(rep.summary["assignor"])
    sweep = pd.read_csv(out / "pareto.csv")
    assert set(sweep["ratio"]) == {0, 1, 100}


def test_pareto_sweep_is_monotone(seed):
    snaps = report.pareto_snapshots(6, seed)
    sweep = report.pareto_sweep(snaps, assignors=("optimal", "range"))
    opt = sweep[(sweep["assignor"] == "optimal")].sort_values("ratio")
    assert list(opt["ratio"]) == list(report.DEFAULT_RATIOS)
    assert (opt["snapshots"] == 6).all() and (opt["fallbacks"] == 0).all()
    moves, cross = opt["moves"].tolist(), opt["cross_rack"].tolist()
    print("moves", moves, "cross-rack", cross)
    # a parametric optimum: raising the price of traffic never buys more traffic or fewer moves
    assert all(a >= b for a, b in zip(cross, cross[1:]))
    assert all(a <= b for a, b in zip(moves, moves[1:]))
    # the weighted cost is minimal among balanced answers; range is never cheaper where it is as balanced
    for doc in snaps:
        for ratio in (0.1, 1, 10):
            s = report.with_cost_ratio(doc, ratio)
            o, g = stickyflow.assign(s, "optimal"), stickyflow.assign(s, "range")
            check_result(stickyflow.as_snapshot(s), o)
            if g.metrics["sum_squared_loads"] == o.metrics["sum_squared_loads"]:
                cost = lambda r: 10 * r.metrics["moves"] + round(ratio * 10) * r.metrics["cross_rack"]  # noqa: E731
                assert cost(o) <= cost(g)
    # the greedy assignors do not read the costs: one point each
    assert sweep[sweep["assignor"] == "range"][["moves", "cross_rack"]].drop_duplicates().shape[0] == 1


def test_pareto_front():
    assert report.pareto_front([]) == []
    assert report.pareto_front([(1, 1), (1, 1), (0, 5), (2, 0), (3, 3)]) == [(0, 5), (1, 1), (2, 0)]


def test_with_cost_ratio_rewrites_only_the_costs(seed):
    doc = report.pareto_snapshots(1, seed)[0]
    out = report.with_cost_ratio(doc, 2.5)
    assert out["config"]["traffic_cost"] == 25 and out["config"]["non_overlap_cost"] == 10
    before = stickyflow.snapshot_to_json(stickyflow.as_snapshot(doc))
    assert {k: v for k, v in out.items() if k != "config"} == {k: v for k, v in before.items() if k != "config"}
    streams = {"format": "stickyflow.snapshot/1", "kind": "streams", "tasks": [], "clients": []}
    cfg = report.with_cost_ratio(streams, 0.1)["config"]
    assert (cfg["rack_aware_assignment_traffic_cost"], cfg["rack_aware_assignment_non_overlap_cost"],
            cfg["rack_aware_assignment_strategy"]) == (1, 10, "min_traffic")
    stickyflow.as_snapshot(report.with_cost_ratio(streams, 0.1))  # still a valid snapshot


def test_sizes_and_missing_columns(tmp_path):
    frame = pd.DataFrame({"kind": ["consumer", "streams"], "assignor": ["optimal", "optimal"],
                          "tasks": [None, 40], "partitions": [100, None], "wall_s": [0.1, 0.2], "moves": [1, 2],
                          "imbalance": [0, 0]})
    loaded = report.load_batch(frame)
    assert loaded["size"].tolist() == [100, 40]
    assert loaded["cross_rack"].isna().all() and loaded["error"].isna().all()
    assert report.plot_time_vs_size(loaded)[:8] == PNG
    with pytest.raises(stickyflow.InvalidSnapshotError) as err:
        report.load_batch(pd.DataFrame({"kind": ["consumer"]}))
    assert err.value.field == "batch.assignor"


def test_missing_matplotlib_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(stickyflow.BackendMissingError, match=r"stickyflow\[plots\]"):
        report.plot_pareto(pd.DataFrame())


def test_cli_report(batch, tmp_path, capsys):
    path, _ = batch
    out = tmp_path / "cli"
    assert main(["report", str(path), "-o", str(out), "--pareto-input", "generated", "--pareto-count", "2",
                 "--ratios", "0,1"]) == 0
    text = capsys.readouterr().out
    assert "optimal" in text and "moves_total" in text
    for name in ("summary.csv", "metrics.png", "time_vs_size.png", "pareto.png", "pareto.csv", "report.html"):
        assert (out / name).stat().st_size > 0, name
    # the sweep from a dataset of snapshots (the batch's own input)
    from stickyflow.datasets.io import write_dataset

    data = write_dataset(report.pareto_snapshots(2, 3), tmp_path / "input.jsonl")
    assert main(["report", str(path), "-o", str(tmp_path / "cli2"), "--pareto-input", str(data),
                 "--ratios", "0,10", "--pareto-assignors", "optimal,range"]) == 0
    sweep = pd.read_csv(tmp_path / "cli2" / "pareto.csv")
    assert set(sweep["assignor"]) == {"optimal", "range"} and (sweep["snapshots"] == 2).all()
    assert main(["report", str(path), "-o", str(tmp_path / "cli3"), "--no-pareto"]) == 0
    assert not (tmp_path / "cli3" / "pareto.png").exists()
    assert main(["report", str(tmp_path / "nope.parquet"), "-o", str(out)]) == 2
    assert main(["report", str(path), "-o", str(out), "--ratios", "a,b"]) == 2


def test_simulation_report(tmp_path):
    from stickyflow.datasets.simulator import preset, simulate

    sc = preset("consumer-cooperative", seed=2)
    sc = sc.replace(rounds=6, events=[e for e in sc.events if e.round < 6])
    sim = simulate(sc, CONSUMER_ASSIGNORS[:2])
    rep = report.write_simulation_report(sim, tmp_path)
    png = (tmp_path / "simulation.png").read_bytes()
    assert png[:8] == PNG and len(png) > 5_000
    page = (tmp_path / "simulation.html").read_text()
    assert base64.b64encode(png).decode() in page and "<table" in page
    rounds = pd.read_csv(tmp_path / "rounds.csv")
    assert len(rounds) == 6 * len(sim.runs)
    assert [None if pd.isna(x) else int(x) for x in rep.summary["rounds_to_converge"]] == \
        [c for r in sim.runs for c in r.rounds_to_converge]


def test_pareto_sweep_streams(tmp_path, seed):
    from stickyflow.datasets.generators import streams_snapshot

    # stateless tasks: nothing waits on a warm-up, so what runs is the converged assignment, whose cost the
    # optimizer minimizes at each ratio; with stateful ones the sweep's moves and cross-rack reads are this
    # round's, and need not fall and rise with the ratio (STICKYFLOW_SEED=1769065725: 4 moves at ratio 0, 3 at 100)
    docs = [streams_snapshot("scale_out", tasks=12, clients=4, racks=3, seed=seed + k, stateful_fraction=0.0)
            for k in range(2)]
    docs += report.pareto_snapshots(2, seed)
    sweep = report.pareto_sweep(docs, ratios=(0, 100), assignors=("optimal", "sticky", "range"), time_limit=10)
    print(sweep.to_string())
    assert set(zip(sweep["kind"], sweep["assignor"])) == {("consumer", "optimal"), ("consumer", "sticky"),
                                                          ("consumer", "range"), ("streams", "optimal"),
                                                          ("streams", "sticky")}
    opt = sweep[(sweep["kind"] == "streams") & (sweep["assignor"] == "optimal")].sort_values("ratio")
    assert (opt["snapshots"] == 2).all() and (opt["followups"] == 0).all()
    if (opt["proven"] == opt["snapshots"]).all():
        assert opt["cross_rack"].iloc[1] <= opt["cross_rack"].iloc[0]
        assert opt["moves"].iloc[1] >= opt["moves"].iloc[0]
    png = report.plot_pareto(sweep, tmp_path / "pareto.png")
    assert png[:8] == PNG and (tmp_path / "pareto.png").stat().st_size == len(png)
    # stateful tasks on new clients wait on warm-ups: the sweep counts those answers, whose totals are this round's
    stateful = [streams_snapshot("scale_out", tasks=12, clients=4, racks=3, seed=seed + k) for k in range(2)]
    waits = report.pareto_sweep(stateful, ratios=(0,), assignors=("optimal",), time_limit=10)
    asked = sum(stickyflow.assign(report.with_cost_ratio(d, 0), "optimal", time_limit=10)
                .followup_rebalance_deadline_ms is not None for d in stateful)
    assert waits["followups"].tolist() == [asked]


# --------------------------------------------------------------------------- rows without a kind, nothing solved

NOT_JSON = ["{broken", "", "[1, 2"]


def test_rows_that_are_not_json_count_as_errors(tmp_path, seed):
    """Error rows for input that is not JSON have no kind: they count (kind "(unknown)"), in every input format."""
    from stickyflow.adapters.pandas import solve_frame

    good = [json.dumps(d) for d in report.pareto_snapshots(2, seed)]
    frame = solve_frame(pd.DataFrame({"snapshot": good + NOT_JSON[:1]}), ["optimal", "range"])
    assert frame["kind"].isna().sum() == 2  # the premise: the batch leaves the kind of a non-JSON row empty
    for path in (tmp_path / "b.parquet", tmp_path / "b.csv", tmp_path / "b.jsonl"):
        if path.suffix == ".parquet":
            frame.to_parquet(path)
        elif path.suffix == ".csv":
            frame.to_csv(path, index=False)
        else:
            frame.to_json(path, orient="records", lines=True)
        table = report.summary_table(report.load_batch(path)).set_index(["kind", "assignor"])
        assert table["snapshots"].sum() == len(frame), path.name
        assert table["errors"].sum() == 2 and table["solved"].sum() == 4, (path.name, table)
        for a in ("optimal", "range"):
            assert table.loc[("consumer", a), ["snapshots", "solved", "errors"]].tolist() == [2, 2, 0]
            assert table.loc[(report.UNKNOWN, a), ["snapshots", "solved", "errors"]].tolist() == [1, 0, 1]
    rep = report.write_report(tmp_path / "b.parquet", tmp_path / "out", pareto_input=None)
    assert (rep.rows, rep.solved) == (6, 4)
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "is not valid JSON" in page and f"<td>{report.UNKNOWN}</td>" in page


@pytest.mark.parametrize("case, fmt", [(c, f) for c in ("all-broken", "empty") for f in ("parquet", "csv", "jsonl")]
                         + [("empty-file", "csv"), ("empty-file", "jsonl")])  # an empty file is no Parquet file
def test_nothing_solved_is_a_report_and_exit_1_not_a_traceback(tmp_path, capsys, case, fmt):
    from stickyflow.adapters.pandas import solve_frame

    path = tmp_path / f"batch.{fmt}"
    texts = NOT_JSON if case == "all-broken" else []
    frame = solve_frame(pd.DataFrame({"snapshot": pd.Series(texts, dtype="string")}), ["optimal", "sticky"])
    assert len(frame) == 2 * len(texts)
    if case == "empty-file":
        path.write_text("")
    elif fmt == "parquet":
        frame.to_parquet(path)
    elif fmt == "csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_json(path, orient="records", lines=True)
    rep = report.write_report(path, tmp_path / "lib", pareto_input=None)
    assert rep.rows == len(frame) and rep.solved == 0
    assert len(rep.summary) == (2 if case == "all-broken" else 0)
    assert list(rep.summary.columns) == list(report.SUMMARY_COLUMNS)
    if case == "all-broken":
        assert rep.summary["errors"].tolist() == [3, 3] and set(rep.summary["kind"]) == {report.UNKNOWN}
    page = (tmp_path / "lib" / "report.html").read_text(encoding="utf-8")
    assert ("no rows" if case != "all-broken" else "No row of the batch output was solved") in page
    capsys.readouterr()
    assert main(["report", str(path), "-o", str(tmp_path / "cli"), "--no-pareto"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"stickyflow report: {path}: ")
    assert ("no rows" in last) if case != "all-broken" else ("no row was solved (all 6 rows are errors)" in last)
    assert (tmp_path / "cli" / "report.html").stat().st_size > 0


def test_unreadable_batch_is_one_line_and_exit_2(tmp_path, capsys):
    path = tmp_path / "batch.parquet"
    path.write_bytes(b"not parquet at all")
    with pytest.raises(stickyflow.InvalidSnapshotError, match="cannot be read as a batch output"):
        report.load_batch(path)
    assert main(["report", str(path), "-o", str(tmp_path / "out"), "--no-pareto"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot be read" in err and "Traceback" not in err


# --------------------------------------------------------------------------- pictures and pages a paper can use

@pytest.fixture
def figures(monkeypatch):
    """Every figure the plot functions close, kept open for inspection."""
    import matplotlib.pyplot as plt

    kept = []
    monkeypatch.setattr(plt, "close", lambda fig=None: kept.append(fig))
    yield kept
    monkeypatch.undo()
    plt.close("all")


def _labelled(fig, name):
    """Every panel in use names both axes; a panel with more than one labelled series has a legend; no tick
    label is in scientific notation (``2.05x10^-3``)."""
    fig.canvas.draw()
    for i, ax in enumerate(fig.axes):
        if not ax.axison:
            continue
        where = f"{name} panel {i} ({ax.get_title()!r})"
        assert ax.get_xlabel().strip() and ax.get_ylabel().strip(), where
        series = {h.get_label() for h in ax.get_legend_handles_labels()[0]}
        if len(series) > 1:
            assert ax.get_legend() is not None, where
        for t in ax.get_xticklabels() + ax.get_yticklabels():
            text = t.get_text()
            assert "times" not in text and "^" not in text and "e-" not in text, f"{where}: tick {text!r}"


def test_every_plot_is_labelled(batch, figures, tmp_path):
    from stickyflow.adapters.bench.output import plot as bench_plot
    from stickyflow.adapters.compare import compare
    from stickyflow.datasets.simulator import preset, simulate

    _, frame = batch
    report.plot_metrics(frame)
    report.plot_time_vs_size(frame)
    report.plot_pareto(report.pareto_sweep(report.pareto_snapshots(3, 1), (0, 1, 100), CONSUMER_ASSIGNORS))
    sc = preset("streams-learner", seed=1)
    report.plot_simulation(simulate(sc.replace(rounds=6, events=[e for e in sc.events if e.round < 6]),
                                    ["optimal", "sticky"]))
    n_report = len(figures)
    compare("suite:rack-outage", "optimal,sticky,range", tmp_path / "study", count=4, pareto_count=2)
    assert len(figures) == n_report + 7  # five metrics against size, rounds, Pareto
    records = [dict(kind=k, subscriptions=s, event="join", size=n, members=m, assignor=a, wall_s=0.001 * n / m + j,
                    racks=0) for k, s in (("consumer", "equal"), ("streams", "stateful"))
               for n, m in ((100, 10), (1000, 50))[: 2 if k == "consumer" else 1]
               for j, a in enumerate(("optimal", "sticky"))]
    bench_plot(records, tmp_path / "bench.png", ["optimal", "sticky"])
    for k, fig in enumerate(figures):
        _labelled(fig, f"figure {k}")


def _html_tables(page: str) -> list:
    """The page's tables as DataFrames (header row first), read with the standard library's parser."""
    from html.parser import HTMLParser

    class Tables(HTMLParser):
        def __init__(self):
            super().__init__()
            self.tables, self.cell = [], None

        def handle_starttag(self, tag, attrs):
            if tag == "table":
                self.tables.append([])
            elif tag == "tr":
                self.tables[-1].append([])
            elif tag in ("td", "th"):
                self.cell = ""

        def handle_endtag(self, tag):
            if tag in ("td", "th"):
                self.tables[-1][-1].append(self.cell.strip())
                self.cell = None

        def handle_data(self, data):
            if self.cell is not None:
                self.cell += data

    parser = Tables()
    parser.feed(page)
    return [pd.DataFrame(t[1:], columns=t[0]) for t in parser.tables if t]


def test_report_html_defines_metrics_fits_the_page_and_repeats_no_row(batch, tmp_path):
    path, _ = batch
    report.write_report(path, tmp_path / "r", pareto_input="generated", pareto_count=3, pareto_seed=1,
                        ratios=(0, 0.5, 1, 10, 100))
    page = (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    assert "overflow-x:auto" in page and "max-width:100%" in page  # a wide table scrolls inside the page
    assert "<dl>" in page and "<dt>moves</dt>" in page
    tables = _html_tables(page)
    sweep = next(t for t in tables if "ratios" in t.columns)
    assert not sweep.duplicated(["kind", "assignor", "ratios"]).any()
    # a greedy assignor gives one answer at every ratio: one row, not five
    assert (sweep["assignor"] == "range").sum() == 1
    assert sweep[sweep["assignor"] == "range"]["ratios"].iloc[0].startswith("all")


def test_simulation_page_speaks_in_words_and_minutes(tmp_path):
    from stickyflow.datasets.simulator import preset, simulate

    sc = preset("streams-learner", seed=3)
    sim = simulate(sc.replace(rounds=8, events=[e for e in sc.events if e.round < 8]), ["optimal"],
                   readiness=["eager", "conservative"])
    report.write_simulation_report(sim, tmp_path)
    tables = _html_tables((tmp_path / "simulation.html").read_text(encoding="utf-8"))
    conv = tables[0]
    assert set(conv["warm-up readiness"]) == {"eager", "conservative"}
    assert all(t == "at once" or t.endswith(" min") or t.startswith("never") for t in conv["time to converge"])
    assert "None" not in conv.astype(str).values
    assert "minutes since start" in tables[1].columns and "time_ms" not in tables[1].columns


def test_table_cells_never_print_an_exponent_for_ordinary_numbers():
    """A p95 solve time of 39,050.06 ms printed as 3.905e+04 in the study's table: cells read as numbers."""
    from stickyflow.adapters.report.base import _cell_number

    assert _cell_number(39050.0626) == "39,050"
    assert _cell_number(1023.6664) == "1,024"
    assert _cell_number(24.694444) == "24.69"
    assert _cell_number(5.0) == "5"
    assert _cell_number(float("nan")) == ""
    assert "e" not in "".join(_cell_number(x) for x in (1234.5, 12345678.9, 0.5, 999.99))
