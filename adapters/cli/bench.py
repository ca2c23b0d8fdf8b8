"""``stickyflow bench``: speed and quality at scale, stickyflow next to its peers, on the same input.

The suite runs every case (size x event x subscriptions) through stickyflow's
assignors (``optimal``, ``sticky``, ``range``, ``roundrobin``, and Kafka 4's server-side ``uniform`` and
``kip1071``, each on the kind it serves) and kafka-python's
(``kp-sticky``, ``kp-range``, ``kp-roundrobin``) in the same process, on the
same snapshot, and records for each run the wall time (median of repeated
runs), the peak memory, moves, imbalance, cross-rack reads and the gap to the
lower bound. It writes JSON, a Markdown table and a PNG plot::

    stickyflow bench --quick                 # a smoke run, well under a minute
    stickyflow bench                         # the full suite (long: kafka-python is slow)
    stickyflow bench --goals                 # the speed targets, each pass or fail

The work lives in :mod:`stickyflow.adapters.bench` (``bench-results/`` is git-ignored).

This module is the command: its options are checked while the command line
is parsed (one line and exit 2 for a bad value), and it imports the rest only
when the bench runs.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from ..bench.config import (ASSIGNORS, EVENTS, FULL_CONSUMER_SIZES, FULL_STREAMS_SIZES, QUICK_CONSUMER_SIZES,
                            QUICK_STREAMS_SIZES, STICKYFLOW_ASSIGNORS, SUBSCRIPTIONS)
from .input import BadInput, int_at_least, names, path, seconds, sizes, writable_dir

KINDS = ("consumer", "streams")


# --------------------------------------------------------------------------- the command

def _rack_counts(text: str) -> list[int]:
    parse = int_at_least(0)
    out = [parse(x) for x in text.split(",") if x.strip()]
    if not out:
        raise argparse.ArgumentTypeError("names no rack count (for example 0 or 0,3)")
    return out


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``stickyflow bench`` on the CLI's subparsers."""
    b = subparsers.add_parser(
        "bench", help="benchmark the assignors against kafka-python's at scale",
        description="Benchmark stickyflow's assignors against kafka-python's on seeded consumer groups and "
                    "Streams applications: median wall time, peak memory, moves, balance and the distance to "
                    "the least possible, written as JSON, a Markdown table and a PNG plot.")
    b.add_argument("--quick", action="store_true", help="a small smoke run (well under a minute)")
    b.add_argument("--goals", action="store_true",
                   help="check the speed targets instead, each pass or fail: 1,000,000 partitions x 2,000 "
                        "members in 1 s with the fewest moves; 10,000 x 100 in 30 ms; mixed subscriptions in "
                        "3 s, proven optimal; 100 times kafka-python's sticky speed at 10,000 x 1,000; the "
                        "whole solve command on a 1,000,000-partition file in 10 s and 2 GiB")
    b.add_argument("--kinds", type=names(KINDS, what="kind"), default="consumer,streams",
                   help="consumer, streams or both (default consumer,streams)")
    b.add_argument("--sizes", type=sizes("PARTITIONSxMEMBERS"), default=None, metavar="PxM,...",
                   help="consumer sizes as PARTITIONSxMEMBERS,... (default: the suite's; --quick: 100x10,1000x50)")
    b.add_argument("--streams-sizes", type=sizes("TASKSxCLIENTS"), default=None, metavar="TxC,...",
                   help="Streams sizes as TASKSxCLIENTS,... (default: the suite's; --quick: 100x10)")
    b.add_argument("--events", type=names(EVENTS, what="event"), default=",".join(EVENTS),
                   help="which previous situations: fresh, join, leave (default all)")
    b.add_argument("--subscriptions", type=names(SUBSCRIPTIONS, what="subscription mix"),
                   default=",".join(SUBSCRIPTIONS), help="consumer subscriptions: equal, mixed (default both)")
    b.add_argument("--assignors", type=names(ASSIGNORS, what="bench assignor"), default=",".join(ASSIGNORS),
                   help=f"which assignors (default all: {', '.join(ASSIGNORS)})")
    b.add_argument("--racks", type=_rack_counts, default="0", metavar="R,...",
                   help="rack counts to run, e.g. 0,3 (members and 2 replicas per partition spread over them; 0: none)")
    b.add_argument("--per-topic", type=int_at_least(1), default=2000, help="partitions per topic (default 2000)")
    b.add_argument("--repeats", type=int_at_least(1), default=None,
                   help="runs per measurement; the median is kept (default 5, --quick 3)")
    b.add_argument("--budget", type=seconds, default=3.0, metavar="SECONDS",
                   help="stop repeating once this many seconds are spent (default 3)")
    b.add_argument("--timeout", type=seconds, default=None, metavar="SECONDS",
                   help="give up on one (case, assignor) after this many seconds (default 300, --quick 20)")
    b.add_argument("--seed", type=int_at_least(0), default=0, help="seed of the generated cases (default 0)")
    b.add_argument("--out", default="bench-results", metavar="FOLDER", help="output folder (default bench-results)")
    b.add_argument("--no-plot", action="store_true", help="write no PNG")
    b.add_argument("--from-json", default=None, metavar="FILE",
                   help="do not run: write the table and plot again from a bench JSON file")
    b.set_defaults(func=_cmd_bench, cli_assignor_option="--assignors")
    return b


def _write_outputs(out: Path, doc: dict[str, Any], assignors: Sequence[str], log: Callable[[str], None], *,
                   plot_too: bool) -> None:
    """``bench-MODE.json``, ``.md`` (time and memory tables) and ``.png`` in ``out``."""
    from ..bench.measure import json_default
    from ..bench.output import markdown_table, plot

    mode, records, command = doc.get("mode", "full"), doc["records"], doc.get("command", "stickyflow bench")
    json_path = out / f"bench-{mode}.json"
    json_path.write_text(json.dumps(doc, indent=1, default=json_default))
    table = markdown_table(records, assignors)
    memory = markdown_table(records, assignors, what="memory")
    env = doc.get("environment", {})
    (out / f"bench-{mode}.md").write_text(
        f"Command: `{command}` ({env.get('cpu')}, {env.get('cpus')} CPUs, Python {env.get('python')}, "
        f"{doc.get('elapsed_s', '?')} s)\n\nMedian wall time and moves:\n\n{table}\n\n"
        f"Peak resident memory in MiB (in brackets: above the process holding the input):\n\n{memory}\n")
    log("")
    log(table)
    log(f"\nwrote {json_path} and {out / f'bench-{mode}.md'}")
    if plot_too:
        png = plot(records, out / f"bench-{mode}.png", assignors)
        if png:
            log(f"wrote {png}")


def _word(value: Any) -> str:
    """An option's value as typed on the command line (lists comma-separated, sizes as AxB)."""
    if isinstance(value, (list, tuple)):
        return ",".join(f"{v[0]}x{v[1]}" if isinstance(v, tuple) else str(v) for v in value)
    return str(value)


def _command_line(args: argparse.Namespace) -> str:
    """The command that reproduces this run: ``stickyflow bench`` and every option not left at its default."""
    from .input import Parser

    parser = Parser()
    add_parser(parser.add_subparsers())
    defaults = vars(parser.parse_args(["bench"]))
    words = ["stickyflow", "bench"]
    for key, value in vars(args).items():
        if key in defaults and key not in ("func", "command") and not key.startswith("cli_") \
                and value != defaults[key]:
            flag = "--" + key.replace("_", "-")
            words += [flag] if value is True else [flag, _word(value)]
    return " ".join(words)


def _read_bench_json(file: str) -> dict[str, Any]:
    p = Path(file)
    try:
        doc = json.loads(p.read_text())
    except FileNotFoundError:
        raise path(file, "no such file") from None
    except OSError as exc:
        raise path(file, f"cannot be read ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise path(file, f"is not JSON ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("records"), list):
        raise path(file, "is not a bench JSON file (no 'records' list)")
    return doc


def _cmd_bench(args: argparse.Namespace) -> int:
    log = lambda s: print(s, flush=True)  # noqa: E731
    if args.from_json:
        doc = _read_bench_json(args.from_json)
        out = writable_dir(args.out)
        _write_outputs(out, doc, args.assignors, log, plot_too=not args.no_plot)
        return 0
    out = writable_dir(args.out)
    command = _command_line(args)
    if args.goals:
        from ..bench.goals import run_goals
        from ..bench.measure import json_default
        from ..runtime import environment

        goals = run_goals(out, repeats=args.repeats or 5, log=log, per_topic=args.per_topic,
                          timeout_s=args.timeout or 1800.0)
        doc = {"command": command, "environment": environment(),
               "goals": [{"name": g.name, "passed": g.passed, "detail": g.detail, "numbers": g.numbers}
                         for g in goals]}
        (out / "goals.json").write_text(json.dumps(doc, indent=2, default=json_default))
        log(f"wrote {out / 'goals.json'}")
        return 0 if all(g.passed is not False for g in goals) else 1

    from ..bench.cases import consumer_cases, streams_cases

    cases = []
    if "consumer" in args.kinds:
        consumer_sizes = args.sizes or list(QUICK_CONSUMER_SIZES if args.quick else FULL_CONSUMER_SIZES)
        for racks in args.racks:
            cases += consumer_cases(consumer_sizes, args.events, args.subscriptions, racks=racks,
                                    per_topic=args.per_topic, seed=args.seed)
    if "streams" in args.kinds:
        streams_sizes = args.streams_sizes or list(QUICK_STREAMS_SIZES if args.quick else FULL_STREAMS_SIZES)
        cases += streams_cases(streams_sizes, args.events, seed=args.seed)
    if not cases:
        raise BadInput("option --kinds", "selects no case to run")

    from ..bench.measure import json_default
    from ..runtime import environment
    from ..bench.suite import run_suite

    repeats = args.repeats or (3 if args.quick else 5)
    timeout = args.timeout or (20.0 if args.quick else 300.0)
    t0 = time.perf_counter()
    mode = "quick" if args.quick else "full"
    partial = out / f"bench-{mode}.partial.json"

    def save(records: list[dict[str, Any]]) -> None:  # a long run keeps what it measured so far
        partial.write_text(json.dumps({"command": command, "mode": mode, "records": records}, default=json_default))

    records = run_suite(cases, args.assignors, repeats=repeats, budget_s=args.budget, timeout_s=timeout, log=log,
                        progress=save)
    partial.unlink(missing_ok=True)
    doc = {"command": command, "environment": environment(), "mode": mode, "repeats": repeats,
           "timeout_s": timeout, "elapsed_s": round(time.perf_counter() - t0, 1), "records": records}
    _write_outputs(out, doc, args.assignors, log, plot_too=not args.no_plot)
    bad = [r for r in records if r["assignor"] in STICKYFLOW_ASSIGNORS and r.get("status") == "error"]
    return 1 if bad else 0
