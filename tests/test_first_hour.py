"""What a new user meets in the first hour (issue 38): messages that start the same way, hints for typos and for
hex given as bytes, plots that draw non-convergence as such, progress while a study solves."""

from __future__ import annotations

import json

import pytest

import stickyflow
from stickyflow.adapters.cli import main

CONSUMER = {"format": "stickyflow.snapshot/1", "kind": "consumer", "topics": {"t": {"partitions": 2}},
            "members": [{"id": "a", "subscription": ["t"]}]}


def _stderr_lines(capsys) -> list[str]:
    return capsys.readouterr().err.strip().splitlines()


@pytest.mark.parametrize("argv,command", [
    (["solve", "{snap}", "--bogus"], "solve"),
    (["assignors", "extra"], "assignors"),
    (["batch", "in", "out", "more"], "batch"),
    (["solve", "{warn}"], "solve"),
])
def test_every_line_on_stderr_starts_with_the_command(argv, command, tmp_path, capsys):
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps(CONSUMER))
    warn = tmp_path / "warn.json"
    warn.write_text(json.dumps({**CONSUMER, "memebrs": []}))
    main([a.format(snap=snap, warn=warn) for a in argv])
    lines = _stderr_lines(capsys)
    assert lines and all(line.startswith(f"stickyflow {command}: ") for line in lines), lines


@pytest.mark.parametrize("where,typo,field", [
    ("member", "subscripton", "members[0].subscription"),
    ("top", "topcs", "topics"),
])
def test_a_misspelt_required_field_gets_a_did_you_mean(where, typo, field):
    doc = json.loads(json.dumps(CONSUMER))
    holder = doc["members"][0] if where == "member" else doc
    good = field.rsplit(".", 1)[-1]
    holder[typo] = holder.pop(good)
    with pytest.raises(stickyflow.InvalidSnapshotError) as err:
        stickyflow.parse_snapshot(doc)
    assert err.value.field == field
    assert f'"{typo}"' in err.value.rule and f'did you mean "{good}"' in err.value.rule


def test_a_missing_field_with_no_look_alike_gets_no_hint():
    doc = json.loads(json.dumps(CONSUMER))
    del doc["members"][0]["subscription"]
    with pytest.raises(stickyflow.InvalidSnapshotError) as err:
        stickyflow.parse_snapshot(doc)
    assert err.value.rule == "is required"


# --------------------------------------------------------------------------- capture and decode


@pytest.mark.parametrize("groups", [[], ["failed"]], ids=["none-listed", "none-readable"])
def test_a_capture_of_no_group_writes_no_file_and_says_so(groups, tmp_path, capsys, monkeypatch):
    from stickyflow.adapters import capture as capture_module

    found = [capture_module.CapturedGroup(group_id=g, error="no members") for g in groups]
    monkeypatch.setattr(capture_module, "capture", lambda *a, **k: found)
    out = tmp_path / "groups.jsonl"
    main(["capture", "--bootstrap", "127.0.0.1:9092", "--all-groups", "-o", str(out)])
    last = _stderr_lines(capsys)[-1]
    assert not out.exists()
    assert "nothing written" in last and str(out) not in last and "into" not in last, last


def test_an_unreachable_cluster_names_the_timeout_once():
    from stickyflow.adapters.cli.capture import cluster_failure

    class KafkaTimeoutError(Exception):
        def __str__(self):
            return "KafkaTimeoutError: Unable to bootstrap from b:9092"

    line = cluster_failure(KafkaTimeoutError(), "b:9092", 15.0)
    assert line == "cannot reach the cluster at b:9092 within 15 s (Unable to bootstrap from b:9092)"
    assert cluster_failure(OSError("disk"), "b:9092", 15.0) == "cannot read the cluster at b:9092: OSError: disk"


@pytest.mark.parametrize("encoding,hint", [("hex", "--input hex"), ("base64", "--input base64")])
def test_decode_hints_at_input_when_bytes_come_as_text(encoding, hint, tmp_path, capsys):
    import base64

    raw = bytes.fromhex("0000" "00000001" "0001" "74" "ffffffff")  # version 0, topics ["t"], no user data
    text = raw.hex() if encoding == "hex" else base64.b64encode(raw).decode()
    path = tmp_path / "bytes.txt"
    path.write_text(text + "\n")
    assert main(["decode", "consumer-subscription", str(path)]) == 2
    (line,) = _stderr_lines(capsys)
    assert line.startswith("stickyflow decode: ") and line.endswith(f"add {hint})"), line
    assert main(["decode", "--input", encoding, "consumer-subscription", str(path)]) == 0


# --------------------------------------------------------------------------- plots


def test_a_run_that_never_converges_is_a_tall_flagged_bar_not_a_zero():
    pytest.importorskip("pandas")
    from stickyflow.adapters.report.simulation import convergence_bars
    from stickyflow.datasets.simulator import preset, simulate

    sim = simulate(preset("streams-warmup"), ["sticky"])
    summary = __import__("pandas").DataFrame(sim.summary())
    rows = __import__("pandas").DataFrame(sim.rows())
    bars = convergence_bars(summary, rows)
    never = [b for b in bars if not b["converged"]]
    assert never, "the preset's sticky run has a disturbance it never settles from"
    assert all(b["height"] >= 1 for b in bars)
    assert len(bars) == len(summary)


# --------------------------------------------------------------------------- progress


def test_progress_lines_come_while_one_step_hangs():
    import threading

    from stickyflow.adapters.progress import Ticker

    said: list[str] = []
    two = threading.Event()

    def say(line: str) -> None:
        said.append(line)
        if len(said) >= 2:
            two.set()

    with Ticker(say, "solving snapshots", total=3, every=0.01) as tick:
        tick.step()
        assert two.wait(30), said  # the second item "hangs" until the ticker has spoken twice
        tick.step(2)
    assert said[0].startswith("solving snapshots: 1/3, ") and said[0].endswith(" s")
    assert said[-1].startswith("solving snapshots: 3/3 done in ")


def test_the_pareto_sweep_counts_every_solve():
    pytest.importorskip("pandas")
    from stickyflow.adapters.report.pareto import pareto_snapshots, pareto_sweep

    calls = []
    sweep = pareto_sweep(pareto_snapshots(2), (0.0, 1.0), ("optimal", "range"), progress=lambda: calls.append(1))
    assert len(calls) == 2 * 2 * 2 == int((sweep["snapshots"] + sweep["skipped"]).sum())


# --------------------------------------------------------------------------- examples


def test_an_example_named_for_a_rebalancing_mode_runs_in_it():
    from pathlib import Path

    named = 0
    for path in sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.json")):
        doc = json.loads(path.read_text())
        mode = (doc.get("config") or {}).get("rebalancing_mode", "warmup")
        for word, meant in (("learner", "learner"), ("warmup", "warmup")):
            if word in str(doc.get("id", "")):
                named += 1
                assert mode == meant, (path.name, doc["id"], mode)
    assert named


# --------------------------------------------------------------------------- the report's Pareto sweep


def _batch_folder(tmp_path, with_record: bool):
    """A batch output as stickyflow batch leaves it (rows, and the record of its input), over a JSON Lines input
    of three snapshots: two with racks, one without."""
    pd = pytest.importorskip("pandas")
    pytest.importorskip("matplotlib")
    from stickyflow.adapters.report.pareto import pareto_snapshots
    from stickyflow.adapters.spark import BATCH_RECORD, batch_record

    docs = pareto_snapshots(2, seed=5) + [dict(CONSUMER, id="no-racks")]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(d) + "\n" for d in docs))
    out = tmp_path / "out.parquet"
    out.mkdir()
    pd.DataFrame({"id": [d["id"] for d in docs], "kind": "consumer", "assignor": "optimal", "moves": 1,
                  "imbalance": 0, "cross_rack": 1, "status": "optimal", "wall_s": 0.01,
                  "error": None}).to_parquet(out / "part-0.parquet")
    if with_record:
        (out / BATCH_RECORD).write_bytes(batch_record(str(source), "jsonl", "snapshot", ["optimal"]))
    return out


def test_the_report_sweeps_the_batchs_own_snapshots_by_default(tmp_path):
    from stickyflow.adapters.report import write_report

    rep = write_report(str(_batch_folder(tmp_path, True)), tmp_path / "rep", ratios=(0.0, 1.0),
                       pareto_assignors=("optimal", "range"))
    assert set(rep.pareto["snapshots"] + rep.pareto["skipped"]) == {2}  # the two with racks, not 12 generated
    page = (tmp_path / "rep" / "report.html").read_text()
    assert "2 of the batch&#x27;s own snapshots" in page and "generated" not in page


def test_a_batch_without_its_record_gets_no_generated_sweep_in_disguise(tmp_path):
    from stickyflow.adapters.report import write_report

    rep = write_report(str(_batch_folder(tmp_path, False)), tmp_path / "rep", ratios=(0.0,),
                       pareto_assignors=("optimal",))
    assert rep.pareto is None and "pareto.png" not in rep.files
    assert any("--pareto-input" in note for note in rep.notes)


def test_tables_show_a_dash_not_na():
    pd = pytest.importorskip("pandas")
    from stickyflow.adapters.report.base import MISSING, html_page, without_na

    t = pd.DataFrame({"assignor": ["optimal", None], "balanced": pd.array([None, 3], dtype="Int64"),
                      "cost": pd.array([0.5, None], dtype="Float64")})
    page = html_page("t", [("table", t)])
    assert "NA&gt;" not in page and "NaN" not in page and f"<td>{MISSING}</td>" in page
    text = without_na(t).to_string(index=False)
    assert "<NA>" not in text and "None" not in text and "NaN" not in text and MISSING in text


def test_no_legend_covers_a_panel(monkeypatch, tmp_path):
    pd = pytest.importorskip("pandas")
    plt = pytest.importorskip("matplotlib.pyplot")
    kept_figures: list = []  # every figure the plot functions close, kept open to be looked at
    monkeypatch.setattr(plt, "close", kept_figures.append)

    from stickyflow.adapters.bench.output import plot as bench_plot
    from stickyflow.adapters.report import plot_metrics, plot_simulation, plot_time_vs_size
    from stickyflow.adapters.report.study import plot_rounds, plot_vs_size
    from stickyflow.datasets.simulator import preset, simulate

    names = ["optimal", "sticky", "range"]
    batch = pd.DataFrame({"id": [f"s{i}" for i in range(6)] * 3, "kind": "consumer",
                          "assignor": [a for a in names for _ in range(6)], "moves": range(18),
                          "imbalance": [0, 1] * 9, "cross_rack": 1, "status": "optimal",
                          "wall_s": [0.001 * (1 + i) for i in range(18)], "error": None,
                          "partitions": [10, 100, 1000] * 6})
    plot_metrics(batch)
    plot_time_vs_size(batch)
    sc = preset("consumer-eager")
    plot_simulation(simulate(sc.replace(rounds=4, events=[e for e in sc.events if e.round < 4]), names[:2]))
    by_size = pd.DataFrame({"kind": "consumer", "assignor": names * 2, "solved": 3, "size_mean": [10] * 3 + [100] * 3,
                            "moves_mean": [1, 2, 3, 2, 4, 6]})
    plot_vs_size(by_size, "moves_mean")
    plot_rounds(pd.DataFrame({"kind": "consumer", "assignor": names, "rounds_mean": [1.0, 1.5, 2.0],
                              "rounds_max": [1, 3, 4], "snapshots": 5, "errors": 0}))
    records = [dict(kind="consumer", subscriptions="equal", event="join", size=n, members=10, assignor=a,
                    wall_s=0.001 * n, racks=0) for n in (100, 1000) for a in names]
    bench_plot(records, tmp_path / "bench.png", names)  # saves and closes its own figure
    assert len(kept_figures) >= 5
    for k, fig in enumerate(kept_figures):
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        panels = [ax for ax in fig.axes if ax.axison]
        legends = [(ax, ax.get_legend()) for ax in panels if ax.get_legend()] + [(None, g) for g in fig.legends]
        for _, legend in legends:
            box = legend.get_window_extent(renderer)
            for ax in panels:
                assert not box.overlaps(ax.get_window_extent(renderer)), (k, ax.get_title(), ax.get_ylabel())
    monkeypatch.undo()
    plt.close("all")
