"""Every option of every command, given a bad value: one line on standard error, exit 2, a prefix naming the
culprit (``option --x:``, ``argument NAME:``, ``path:``, ``snapshot:``/``scenario:``), no traceback, nothing
written. Run in-process through the command's ``main`` (fast), and a few in a real process. Also: ``--version``
works, help is plain words, and ``--help``/``--version`` import no numpy, pandas, Spark, OR-Tools or
matplotlib."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stickyflow.adapters.cli import main

ROOT = Path(__file__).resolve().parent.parent
SNAP = ROOT / "examples" / "consumer-kip54-join.json"
EXE = Path(sys.executable).with_name("stickyflow")

# (argv, the text the one line starts with after "stickyflow COMMAND: "); placeholders filled per test:
# {snap} a good snapshot, {dir} a folder of good snapshots, {missing} a path with nothing there, {file} a plain
# text file, {tmp} a fresh folder, {badsnap} a snapshot that breaks the format, {badscenario} likewise a scenario
CASES = {
    # the command itself
    "no-command": ([], "stickyflow: argument COMMAND: required"),
    "unknown-command": (["nope"], "stickyflow: command: 'nope'"),
    "unknown-option": (["solve", "{snap}", "--bogus"], "option --bogus: not understood by stickyflow solve"),
    "assignors-extra": (["assignors", "extra"], "argument extra: not understood by stickyflow assignors"),
    # solve
    "solve-no-snapshot": (["solve"], "argument SNAPSHOT: required"),
    "solve-missing": (["solve", "{missing}"], "path: "),
    "solve-folder-output": (["solve", "{snap}", "-o", "{tmp}"], "path: "),
    "solve-output-no-folder": (["solve", "{snap}", "-o", "{missing}/x.json"], "path: "),
    "solve-bad-snapshot": (["solve", "{badsnap}"], "snapshot: topics.t.partitions"),
    "solve-assignor": (["solve", "{snap}", "--assignor", "nonesuch"], "option --assignor: 'nonesuch'"),
    "solve-assignor-module": (["solve", "{snap}", "--assignor", "nomodule_xyz:fn"], "option --assignor: cannot import"),
    "solve-time-limit-negative": (["solve", "{snap}", "--time-limit", "-1"], "option --time-limit: must be"),
    "solve-time-limit-zero": (["solve", "{snap}", "--time-limit", "0"], "option --time-limit: must be"),
    "solve-time-limit-nan": (["solve", "{snap}", "--time-limit", "nan"], "option --time-limit: must be"),
    "solve-time-limit-text": (["solve", "{snap}", "--time-limit", "soon"], "option --time-limit: must be"),
    "solve-method": (["solve", "{snap}", "--method", "simplex"], "option --method: 'simplex'"),
    "solve-seed": (["solve", "{snap}", "--seed", "x"], "option --seed: must be an integer >= 0"),
    "solve-seed-negative": (["solve", "{snap}", "--seed", "-3"], "option --seed: must be an integer >= 0"),
    "solve-workers": (["solve", "{snap}", "--workers", "0"], "option --workers: must be an integer >= 1"),
    # batch (all found before Spark starts)
    "batch-missing-input": (["batch", "{missing}", "{tmp}/out"], "path: "),
    "batch-no-output": (["batch", "{dir}"], "argument OUTPUT: required"),
    "batch-output-no-folder": (["batch", "{dir}", "{missing}/out"], "path: "),
    "batch-output-is-file": (["batch", "{dir}", "{file}"], "path: "),
    "batch-assignors": (["batch", "{dir}", "{tmp}/out", "--assignors", "optimel"], "option --assignors: 'optimel'"),
    "batch-assignors-empty": (["batch", "{dir}", "{tmp}/out", "--assignors", ","], "option --assignors: names no"),
    "batch-master": (["batch", "{dir}", "{tmp}/out", "--master", "loca[2]"], "option --master: 'loca[2]'"),
    "batch-format": (["batch", "{dir}", "{tmp}/out", "--format", "xml"], "option --format: invalid choice"),
    "batch-partitions": (["batch", "{dir}", "{tmp}/out", "--partitions", "0"], "option --partitions: must be"),
    "batch-strategy": (["batch", "{dir}", "{tmp}/out", "--strategy", "rdd"], "option --strategy: invalid choice"),
    "batch-time-limit": (["batch", "{dir}", "{tmp}/out", "--time-limit", "-1"], "option --time-limit: must be"),
    "batch-seed": (["batch", "{dir}", "{tmp}/out", "--seed", "1.5"], "option --seed: must be"),
    "batch-workers": (["batch", "{dir}", "{tmp}/out", "--workers", "-2"], "option --workers: must be"),
    "batch-conf": (["batch", "{dir}", "{tmp}/out", "--conf", "spark.sql.shuffle.partitions"],
                   "option --conf: must be KEY=VALUE"),
    # report
    "report-missing-batch": (["report", "{missing}", "-o", "{tmp}/r"], "path: "),
    "report-output-under-file": (["report", "{file}", "-o", "{file}/sub"], "path: "),
    "report-unreadable-batch": (["report", "{file}", "-o", "{tmp}/r", "--no-pareto"], "path: "),
    "report-pareto-suite": (["report", "{file}", "-o", "{tmp}/r", "--pareto-input", "suite:nope"],
                            "option --pareto-input: 'nope' is not a suite"),
    "report-pareto-missing": (["report", "{file}", "-o", "{tmp}/r", "--pareto-input", "{missing}"], "path: "),
    "report-pareto-count": (["report", "{file}", "--pareto-count", "0"], "option --pareto-count: must be"),
    "report-pareto-seed": (["report", "{file}", "--pareto-seed", "x"], "option --pareto-seed: must be"),
    "report-ratios-text": (["report", "{file}", "--ratios", "0,ten"], "option --ratios: must be numbers >= 0"),
    "report-ratios-negative": (["report", "{file}", "--ratios", "-1"], "option --ratios: must be numbers >= 0"),
    "report-load-slacks": (["report", "{file}", "--load-slacks", "0.1,x"], "option --load-slacks: must be numbers >= 0"),
    "report-pareto-assignors": (["report", "{file}", "-o", "{tmp}/r", "--pareto-assignors", "optimal,bogus"],
                                "option --pareto-assignors: 'bogus'"),
    "report-time-limit": (["report", "{file}", "--time-limit", "0"], "option --time-limit: must be"),
    # simulate
    "simulate-missing": (["simulate", "{missing}"], "path: "),
    "simulate-bad-scenario": (["simulate", "{badscenario}"], "scenario"),
    "simulate-preset": (["simulate", "preset:nope"], "argument SCENARIO: 'nope' is not a preset"),
    "simulate-preset-seed": (["simulate", "preset:consumer-eager:x"], "argument SCENARIO: "),
    "simulate-output-under-file": (["simulate", "preset:consumer-eager", "-o", "{file}/sub"], "path: "),
    "simulate-assignors": (["simulate", "preset:consumer-eager", "--assignors", "no-such-assignor"],
                           "option --assignors: 'no-such-assignor'"),
    "simulate-readiness": (["simulate", "preset:streams-warmup", "--readiness", "eager,fast"],
                           "option --readiness: 'fast'"),
    "simulate-rounds": (["simulate", "preset:consumer-eager", "--rounds", "0"], "option --rounds: must be"),
    "simulate-seed": (["simulate", "preset:consumer-eager", "--seed", "x"], "option --seed: must be"),
    "simulate-seed-with-file": (["simulate", "{badscenario}", "--seed", "3"], "option --seed: applies to preset"),
    "simulate-time-limit": (["simulate", "preset:consumer-eager", "--time-limit", "-1"], "option --time-limit: must be"),
    # plan
    "plan-no-snapshot": (["plan"], "argument SNAPSHOT: required"),
    "plan-missing": (["plan", "{missing}"], "path: "),
    "plan-no-capacity": (["plan", "{snap}"], "snapshot: config.capacity: is required for a plan"),
    "plan-output-folder": (["plan", "{snap}", "-o", "{tmp}"], "path: "),
    "plan-method": (["plan", "{snap}", "--method", "nope"], "option --method: 'nope' is not a plan method"),
    "plan-time-limit": (["plan", "{snap}", "--time-limit", "0"], "option --time-limit: must be"),
    "plan-seed": (["plan", "{snap}", "--seed", "-1"], "option --seed: must be"),
    "plan-workers": (["plan", "{snap}", "--workers", "0"], "option --workers: must be"),
    "plan-up": (["plan", "{snap}", "--up", "1.5"], "option --up: "),
    "plan-down": (["plan", "{snap}", "--down", "0"], "option --down: "),
    "plan-down-above-up": (["plan", "{snap}", "--up", "0.5", "--down", "0.8"], "option --down: must be at most"),
    "plan-drain": (["plan", "{snap}", "--drain", "-4"], "option --drain: must be"),
    "plan-pause": (["plan", "{snap}", "--pause", "x"], "option --pause: "),
    # simulate over a rate trace
    "simulate-trace-name": (["simulate", "trace:nope"], "argument SCENARIO: 'nope' is not a trace name"),
    "simulate-trace-methods": (["simulate", "trace:jpdc", "--methods", "nope"], "option --methods: 'nope'"),
    "simulate-trace-kafka": (["simulate", "trace:jpdc", "--methods", "kafka:5-2"], "option --methods: 'kafka:5-2'"),
    "simulate-trace-every": (["simulate", "trace:jpdc", "--every", "0"], "option --every: must be"),
    "simulate-trace-trigger": (["simulate", "trace:jpdc", "--trigger", "-3"], "option --trigger: must be"),
    "simulate-trace-drain": (["simulate", "trace:jpdc", "--drain", "0"], "option --drain: must be"),
    "simulate-trace-pause": (["simulate", "trace:jpdc", "--pause", "-1"], "option --pause: "),
    "simulate-trace-seeds": (["simulate", "trace:jpdc", "--seeds", "1-x"], "option --seeds: "),
    "simulate-trace-deltas": (["simulate", "trace:jpdc", "--deltas", "5,200"], "option --deltas: "),
    "simulate-trace-readiness": (["simulate", "trace:jpdc", "--readiness", "eager"], "option --readiness: "),
    "simulate-methods-on-scenario": (["simulate", "preset:consumer-eager", "--methods", "mwf"],
                                     "option --methods: applies to a rate trace"),
    # bench (--out {tmp}/bench is added: nothing may be written there)
    "bench-sizes-text": (["bench", "--sizes", "10xfoo"], "option --sizes: '10xfoo' is not PARTITIONSxMEMBERS"),
    "bench-sizes-one-number": (["bench", "--sizes", "100"], "option --sizes: '100' is not"),
    "bench-sizes-zero": (["bench", "--sizes", "0x5"], "option --sizes: '0x5' is not"),
    "bench-streams-sizes": (["bench", "--streams-sizes", "axb"], "option --streams-sizes: 'axb' is not TASKSxCLIENTS"),
    "bench-kinds": (["bench", "--kinds", "foo"], "option --kinds: 'foo' is not a kind"),
    "bench-kinds-empty": (["bench", "--kinds", ","], "option --kinds: names no kind"),
    "bench-events": (["bench", "--events", "join,explode"], "option --events: 'explode'"),
    "bench-subscriptions": (["bench", "--subscriptions", "some"], "option --subscriptions: 'some'"),
    "bench-assignors": (["bench", "--assignors", "optimal,kp-nope"], "option --assignors: 'kp-nope'"),
    "bench-racks": (["bench", "--racks", "0,-1"], "option --racks: must be an integer >= 0"),
    "bench-per-topic": (["bench", "--per-topic", "0"], "option --per-topic: must be"),
    "bench-repeats": (["bench", "--repeats", "0"], "option --repeats: must be"),
    "bench-budget": (["bench", "--budget", "0"], "option --budget: must be"),
    "bench-timeout": (["bench", "--timeout", "-5"], "option --timeout: must be"),
    "bench-seed": (["bench", "--seed", "x"], "option --seed: must be"),
    "bench-from-json-missing": (["bench", "--from-json", "{missing}"], "path: "),
    "bench-from-json-not-json": (["bench", "--from-json", "{file}"], "path: "),
    "bench-out-under-file": (["bench", "--quick", "--out", "{file}/sub"], "path: "),
    # compare
    "compare-suite": (["compare", "suite:nope", "-o", "{tmp}/c"], "argument SOURCE: 'nope' is not a suite"),
    "compare-source-missing": (["compare", "{missing}", "-o", "{tmp}/c"], "argument SOURCE: "),
    "compare-no-output": (["compare", "suite:churn"], "option -o/--output: required"),
    "compare-output-under-file": (["compare", "suite:churn", "-o", "{file}/sub"], "option -o: "),
    "compare-assignors": (["compare", "suite:churn", "-o", "{tmp}/c", "--assignors", "optimal,bogus"],
                          "option --assignors: 'bogus'"),
    "compare-master": (["compare", "suite:churn", "-o", "{tmp}/c", "--master", "spark:/x"], "option --master: "),
    "compare-engine": (["compare", "suite:churn", "-o", "{tmp}/c", "--engine", "dask"], "option --engine: "),
    "compare-count": (["compare", "suite:churn", "-o", "{tmp}/c", "--count", "0"], "option --count: must be"),
    "compare-seed": (["compare", "suite:churn", "-o", "{tmp}/c", "--seed", "x"], "option --seed: must be"),
    "compare-rounds": (["compare", "suite:churn", "-o", "{tmp}/c", "--rounds", "0"], "option --rounds: must be"),
    "compare-time-limit": (["compare", "suite:churn", "-o", "{tmp}/c", "--time-limit", "0"],
                           "option --time-limit: must be"),
    "compare-partitions": (["compare", "suite:churn", "-o", "{tmp}/c", "--partitions", "0"],
                           "option --partitions: must be"),
    "compare-pareto-count": (["compare", "suite:churn", "-o", "{tmp}/c", "--pareto-count", "-1"],
                             "option --pareto-count: must be"),
    # decode and capture: what the parser itself refuses
    "decode-kind": (["decode", "nope", "{file}"], "argument KIND: invalid choice"),
    "decode-input": (["decode", "consumer-subscription", "{file}", "--input", "octal"], "option --input: invalid"),
    "capture-no-bootstrap": (["capture", "--all-groups"], "option --bootstrap: required"),
    "capture-timeout": (["capture", "--bootstrap", "127.0.0.1:9", "--all-groups", "--timeout", "soon"],
                        "option --timeout: "),
    "capture-rates": (["capture", "--bootstrap", "127.0.0.1:9", "--all-groups", "--rates", "0"],
                      "option --rates: must be a number of seconds > 0"),
}


@pytest.fixture
def places(tmp_path: Path) -> dict[str, str]:
    good = tmp_path / "good"
    good.mkdir()
    (good / "a.json").write_text(SNAP.read_text())
    text = tmp_path / "notes.txt"
    text.write_text("not a batch, not JSON\n")
    bad = json.loads(SNAP.read_text())
    bad["topics"] = {"t": {"partitions": -4}}
    bad["members"] = [{"id": "a", "subscription": ["t"]}]
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    (tmp_path / "scenario.json").write_text(json.dumps({"snapshot": str(SNAP), "rounds": -2}))
    work = tmp_path / "work"
    work.mkdir()
    return {"snap": str(SNAP), "dir": str(good), "missing": str(tmp_path / "no" / "such"), "file": str(text),
            "tmp": str(work), "badsnap": str(tmp_path / "bad.json"), "badscenario": str(tmp_path / "scenario.json")}


def _fill(argv: list[str], places: dict[str, str]) -> list[str]:
    return [a.format(**places) for a in argv]


@pytest.mark.parametrize("argv, starts", list(CASES.values()), ids=list(CASES))
def test_bad_input_is_one_line_and_exit_2(argv, starts, places, capsys):
    argv = _fill(argv, places)
    if argv and argv[0] == "bench" and "--out" not in argv:
        argv += ["--out", str(Path(places["tmp"]) / "bench")]
    code = main(argv)
    out = capsys.readouterr()
    assert code == 2, out.err
    lines = out.err.splitlines()
    assert len(lines) == 1 and "Traceback" not in out.err, out.err
    line = lines[0]
    command = argv[0] if argv and not argv[0].startswith("-") else None
    expected = starts if starts.startswith("stickyflow") else f"stickyflow {command}: {starts}"
    assert line.startswith(expected), (line, expected)
    if "snapshot" not in starts:
        assert "invalid snapshot" not in line and not line.split(": ", 2)[1].startswith("snapshot"), line
    assert out.out == ""
    assert list(Path(places["tmp"]).iterdir()) == [], "bad input wrote something"


def test_every_option_of_every_command_has_a_bad_value_case():
    """Each option of each command appears in a case above (the table grows with the commands)."""
    from stickyflow.adapters.cli import _parser

    import argparse

    parser = _parser([])
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    argvs = [v[0] for v in CASES.values()]
    untested = []
    for name, cmd in sub.choices.items():
        mine = [a for a in argvs if a and a[0] == name]
        for action in cmd._actions:
            if isinstance(action, (argparse._HelpAction, argparse._StoreTrueAction)) or action.dest == "group":
                continue  # flags take no value; capture's --group is any text
            if action.option_strings:
                covered = any(set(action.option_strings) & set(a) for a in mine) or any(
                    c.endswith(f"{max(action.option_strings, key=len)}: required") for _, c in CASES.values())
            else:
                covered = bool(mine)
            if not covered and action.dest not in _FREE_TEXT.get(name, ()):
                untested.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
    assert not untested, untested


# options whose value is free text that no value can make wrong at parse time (a title, a column name, a
# user-data decoder hint, a Spark master given only by engine, a capture output path, a topology file)
_FREE_TEXT = {"batch": ("column",), "report": ("title",), "decode": ("user_data", "file"),
              "capture": ("output", "topology", "bootstrap", "solve")}


# --------------------------------------------------------------------------- a real process

@pytest.mark.parametrize("argv, starts", [
    (["bench", "--sizes", "10xfoo"], "stickyflow bench: option --sizes: "),
    (["batch", "nope.jsonl", "out"], "stickyflow batch: path: nope.jsonl: "),
    (["batch", str(ROOT / "examples"), "out", "--time-limit", "-1"], "stickyflow batch: option --time-limit: "),
    (["solve", str(SNAP), "--time-limit", "-1"], "stickyflow solve: option --time-limit: "),
], ids=["bench-sizes", "batch-missing", "batch-time-limit", "solve-time-limit"])
def test_the_installed_command_says_one_line(argv, starts, tmp_path):
    proc = subprocess.run([str(EXE), *argv], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(starts), proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_version(tmp_path):
    import stickyflow

    proc = subprocess.run([str(EXE), "--version"], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"stickyflow {stickyflow.__version__}\n"
    assert stickyflow.__version__.count(".") == 2


# --------------------------------------------------------------------------- help in plain words, started fast

COMMANDS = ["solve", "assignors", "batch", "report", "simulate", "bench", "compare", "decode", "capture", "plan"]


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_help_is_plain_words(command, capsys):
    with pytest.raises(SystemExit) as info:
        main(["--help"] if command is None else [command, "--help"])
    assert info.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith("usage: stickyflow")
    for raw in ("``", ":func:", ":mod:", ":class:", "issue"):
        assert raw not in text, f"{raw!r} in the help of {command}"


HEAVY = ("numpy", "pandas", "pyarrow", "pyspark", "ortools", "matplotlib", "networkx", "kafka")


def test_help_and_version_import_nothing_heavy():
    probe = (
        "import sys\n"
        "from stickyflow.adapters.cli import main\n"
        f"for argv in [['--version'], ['--help'], *[[c, '--help'] for c in {COMMANDS!r}]]:\n"
        "    try:\n"
        "        main(argv)\n"
        "    except SystemExit:\n"
        "        pass\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))\n")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]", proc.stdout[-500:]


def test_simulate_readiness_words_match_the_simulator():
    from stickyflow.adapters.cli import simulate as cli_simulate
    from stickyflow.datasets import simulator

    assert cli_simulate.READINESS == simulator.READINESS


@pytest.mark.parametrize("text", ["preset:consumer-eager:x", "preset:consumer-eager:1:2", "preset:nope"])
def test_a_bad_preset_name_is_a_typed_error(text):
    import stickyflow
    from stickyflow.datasets.simulator import load_scenario

    with pytest.raises(stickyflow.InvalidSnapshotError) as info:
        load_scenario(text)
    assert info.value.field == "preset"


@pytest.mark.parametrize("columns", [None, "57", "0", "wide"])
def test_help_width_is_shutils_without_importing_shutil(columns):
    """The command line lays its help out at the width ``shutil.get_terminal_size`` would find (``COLUMNS``,
    else the terminal, else 80), and a solve never imports ``shutil`` (argparse would, for every parser it
    builds: about 4 ms of a small solve's 0.13 s)."""
    probe = (
        "import sys\n"
        "from stickyflow.adapters.cli import main\n"
        "from stickyflow.adapters.cli import input as cli_input\n"
        f"main(['solve', {str(SNAP)!r}, '-o', {os.devnull!r}])\n"
        "print('shutil' in sys.modules)\n"
        "import shutil\n"
        "print(cli_input._columns() == shutil.get_terminal_size().columns)\n")
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = columns
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "True"]
