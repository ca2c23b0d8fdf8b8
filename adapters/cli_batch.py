"""``stickyflow batch INPUT OUTPUT``: solve a dataset on Spark, one Parquet row per snapshot and assignor.

``INPUT`` is a folder of JSON files, a JSON Lines file, or a Parquet dataset
with the JSON text in a column (``--column``, default ``snapshot``). Progress
goes to standard error; a bad snapshot becomes a row with its error and the
job goes on (exit 0). Exit 2 when INPUT is missing or an assignor name is
unknown, 1 when Spark itself fails. Re-running replaces OUTPUT whole.

    stickyflow batch snapshots.jsonl results.parquet --assignors optimal,sticky --master local[2]
"""

from __future__ import annotations

import argparse
import sys

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
                   help="comma-separated assignor names (default: optimal,sticky)")
    b.add_argument("--master", default=None, help="Spark master URL (default: local[*])")
    b.add_argument("--format", choices=("json", "jsonl", "parquet"), default=None,
                   help="input format (default: from the path)")
    b.add_argument("--column", default="snapshot", help="Parquet input: the column with the JSON text")
    b.add_argument("--partitions", type=int, default=None, metavar="N",
                   help="solve tasks (default: 4 per core)")
    b.add_argument("--strategy", choices=("arrow", "pandas"), default="arrow",
                   help="arrow: mapInArrow (default); pandas: groupBy().applyInPandas")
    b.add_argument("--time-limit", type=float, default=None, metavar="SECONDS", help="solver time limit per snapshot")
    b.add_argument("--seed", type=int, default=0, help="solver seed (CP-SAT)")
    b.add_argument("--workers", type=int, default=1, help="solver threads per task (CP-SAT; default 1)")
    b.add_argument("--include-result", action="store_true", help="add a 'result' column with the whole result JSON")
    b.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="extra Spark setting (repeatable)")
    b.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    b.set_defaults(func=_cmd_batch)
    return b


def _cmd_batch(args: argparse.Namespace) -> int:
    from stickyflow.errors import InvalidSnapshotError, Problem

    conf = {}
    for item in args.conf:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InvalidSnapshotError(Problem("--conf", f"must be KEY=VALUE, not {item!r}"))
        conf[key.strip()] = value
    if args.partitions is not None and args.partitions < 1:
        raise InvalidSnapshotError(Problem("--partitions", "must be an integer >= 1"))
    if args.time_limit is not None and not args.time_limit > 0:
        raise InvalidSnapshotError(Problem("--time-limit", "must be a number of seconds > 0"))

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
