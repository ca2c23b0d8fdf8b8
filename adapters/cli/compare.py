"""``stickyflow compare``: one command from a suite (or any dataset) to a finished study.

    stickyflow compare suite:NAME[,NAME...] --assignors optimal,sticky,uniform,... -o OUT
                       [--master URL] [--count N] [--seed S] [--rounds R]

Writes OUT/results.parquet (one row per snapshot and assignor), the tables as
CSV, PNG plots, OUT/report.html and OUT/study.json (everything needed to run it
again). With ``--master`` (or ``--engine spark``) it runs on Spark, each task
making and solving its own share of the snapshots; else in this process.
Exit 0 when written; 2 with one line on stderr for bad input (an unknown suite
or assignor, an unwritable OUT, a bad option); 1 when Spark itself fails.
"""

from __future__ import annotations

import argparse
import sys

from .input import int_at_least, master_url, seconds

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
PREFIX = "stickyflow compare"


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``compare`` on the ``stickyflow`` command's subparsers."""
    p = subparsers.add_parser(
        "compare", help="a study: solve a suite or dataset with several assignors, tables, plots, HTML",
        description="Solve a suite (suite:NAME, several with commas) or a dataset with every assignor, play "
                    "follow-up rebalances to convergence, and write results.parquet, CSV tables, PNG plots, "
                    "report.html and study.json into OUT.")
    p.add_argument("source", metavar="SOURCE", help="suite:NAME[,NAME...] or a dataset (JSON folder, .jsonl, Parquet)")
    p.add_argument("--assignors", default="optimal,sticky,range,roundrobin",
                   help="comma-separated: registered names (stickyflow assignors), kp-sticky, kp-range, "
                        "kp-roundrobin (kafka-python's), plan:METHOD (a plan method, e.g. plan:optimal, plan:mwf), "
                        "or module:function (default optimal,sticky,range,roundrobin)")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="output folder (created; files replaced)")
    p.add_argument("--master", type=master_url, default=None, help="Spark master URL (runs on Spark), e.g. local[2]")
    p.add_argument("--engine", choices=("auto", "spark", "local"), default="auto",
                   help="spark, local (this process) or auto: Spark when --master is given (default)")
    p.add_argument("--count", type=int_at_least(1), default=None, metavar="N",
                   help="snapshots per suite (default: each suite's own count)")
    p.add_argument("--seed", type=int_at_least(0), default=0, metavar="S", help="suite seed (default 0)")
    p.add_argument("--rounds", type=int_at_least(1), default=30, metavar="R",
                   help="most rebalances played per snapshot to converge (default 30)")
    p.add_argument("--time-limit", type=seconds, default=None, metavar="SECONDS", help="solver time limit per solve")
    p.add_argument("--partitions", type=int_at_least(1), default=None, metavar="N", help="Spark tasks (default 4 per core)")
    p.add_argument("--pareto-count", type=int_at_least(0), default=12, metavar="N",
                   help="rack-aware snapshots of each kind in the Pareto sweep (default 12; 0: none)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=run, cli_arguments=("SOURCE",), cli_assignor_option="--assignors")
    return p


def run(args: argparse.Namespace) -> int:
    # option values were checked while parsing; the library checks SOURCE, the assignors and OUT
    engine = args.engine
    if engine == "spark" and args.master is None:
        args.master = "local[*]"

    def say(line: str) -> None:
        if not args.quiet:
            print(f"{PREFIX}: {line}", file=sys.stderr, flush=True)

    from ..compare import compare

    try:
        study = compare(args.source, args.assignors, args.output, engine=engine, master=args.master,
                        count=args.count, seed=args.seed, rounds=args.rounds, time_limit=args.time_limit,
                        partitions=args.partitions, pareto_count=args.pareto_count,
                        command=["stickyflow", "compare", *sys.argv[2:]] if _from_console() else None,
                        progress=say)
    except Exception as exc:  # noqa: BLE001 - Spark's own failures: one line, not a JVM stack
        if type(exc).__module__.startswith(("py4j", "pyspark")):
            text = str(exc).strip().splitlines()
            print(f"{PREFIX}: Spark failed: {type(exc).__name__}: {text[0] if text else ''}"[:500], file=sys.stderr)
            return EXIT_FAILED
        raise
    s = study.tables["summary"]
    cols = [c for c in ("kind", "assignor", "snapshots", "errors", "moves_mean", "imbalance_mean", "cross_rack_mean",
                        "cost_mean", "rounds_mean", "wall_ms_p50") if c in s.columns]
    if len(s):
        from ..report.base import without_na

        print(without_na(s[cols]).to_string(index=False))
    say(f"wrote {study.out}/ (report.html, study.json, results.parquet, {len(study.files) - 3} more)")
    return EXIT_OK


def _from_console() -> bool:
    return len(sys.argv) > 1 and sys.argv[1] == "compare"
