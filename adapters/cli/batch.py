"""``stickyflow batch INPUT OUTPUT``: solve a dataset on Spark, one Parquet row per snapshot and assignor.

``INPUT`` is a folder of JSON files, a JSON Lines file, or a Parquet dataset
with the JSON text in a column (``--column``, default ``snapshot``). Progress
goes to standard error; a bad snapshot becomes a row with its error and the
job goes on (exit 0). Exit 2, with one line naming it, when INPUT is
missing, OUTPUT cannot be written, an assignor name is unknown or an
option's value is bad (all checked before Spark starts); 1 when Spark itself
fails. Re-running replaces OUTPUT whole.

    stickyflow batch snapshots.jsonl results.parquet --assignors optimal,sticky --master local[2]
"""

from __future__ import annotations

import argparse
import sys

from .input import (assignor_names, existing_path, int_at_least, key_value, local_path, master_url,
                    output_location, seconds)

__all__ = ["add_parser"]


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register the ``batch`` subcommand (called by :mod:`stickyflow.adapters.cli`)."""
    b = subparsers.add_parser(
        "batch", help="solve every snapshot of a dataset on Spark and write a Parquet dataset of results",
        description="Solve every snapshot of INPUT with every assignor on Spark; write OUTPUT as Parquet "
                    "(one row per snapshot and assignor; a bad snapshot is a row with its error).")
    b.add_argument("input", metavar="INPUT", help="folder of .json files, a .jsonl file, or a Parquet dataset")
    b.add_argument("output", metavar="OUTPUT", help="Parquet dataset to write (replaced if it exists)")
    b.add_argument("--assignors", default="optimal,sticky",
                   help="comma-separated assignor names, module:function, or plan:METHOD for a plan method "
                        "(default: optimal,sticky)")
    b.add_argument("--master", type=master_url, default=None,
                   help="Spark master URL, e.g. local[2] or spark://host:7077 (default: local[*])")
    b.add_argument("--format", choices=("json", "jsonl", "parquet"), default=None,
                   help="input format (default: from the path)")
    b.add_argument("--column", default="snapshot", help="Parquet input: the column with the JSON text")
    b.add_argument("--partitions", type=int_at_least(1), default=None, metavar="N",
                   help="solve tasks (default: 4 per core)")
    b.add_argument("--strategy", choices=("arrow", "pandas"), default="arrow",
                   help="arrow: mapInArrow (default); pandas: groupBy().applyInPandas")
    b.add_argument("--time-limit", type=seconds, default=None, metavar="SECONDS",
                   help="solver time limit per snapshot")
    b.add_argument("--seed", type=int_at_least(0), default=0, help="solver seed (CP-SAT; default 0)")
    b.add_argument("--workers", type=int_at_least(1), default=1, help="solver threads per task (CP-SAT; default 1)")
    b.add_argument("--include-result", action="store_true", help="add a 'result' column with the whole result JSON")
    b.add_argument("--conf", type=key_value, action="append", default=[], metavar="KEY=VALUE",
                   help="extra Spark setting (repeatable)")
    b.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    b.set_defaults(func=_cmd_batch, cli_paths=("INPUT",), cli_assignor_option="--assignors")
    return b


def _cmd_batch(args: argparse.Namespace) -> int:
    local = local_path(args.input)
    if local is not None:
        existing_path(local, kind="file or folder (INPUT)")
    output_location(args.output)
    assignor_names(args.assignors, "--assignors")
    from ..plan_rows import check_plan_names

    check_plan_names(args.assignors.split(","))  # plan:METHOD names a plan method
    conf = dict(args.conf)

    from stickyflow.adapters.spark import run_batch

    def say(line: str) -> None:
        print(f"stickyflow batch: {line}", file=sys.stderr, flush=True)

    try:
        summary = run_batch(args.input, args.output, args.assignors, master=args.master, column=args.column,
                            format=args.format, partitions=args.partitions, strategy=args.strategy,
                            time_limit=args.time_limit, seed=args.seed, num_workers=args.workers,
                            include_result=args.include_result, progress=None if args.quiet else say, conf=conf)
    except Exception as exc:
        from stickyflow.errors import StickyflowError

        if isinstance(exc, StickyflowError):
            raise
        text = str(exc).strip().splitlines()
        say(f"failed: {type(exc).__name__}: {text[0] if text else ''}"[:500])
        return 1
    if args.quiet:
        say(f"{summary.rows} rows, {summary.failed} with errors")
    return 0
