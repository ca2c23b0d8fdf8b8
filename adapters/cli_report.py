"""``stickyflow report``: a batch output as a table, PNG plots and one self-contained HTML page.

``stickyflow report BATCH -o OUTDIR [--pareto-input DATASET | suite:NAME] [--no-pareto]``

BATCH is what ``stickyflow batch`` wrote (a Parquet dataset; CSV and JSON Lines
are read too). OUTDIR receives ``summary.csv``, ``metrics.png``,
``time_vs_size.png``, ``pareto.png``, ``pareto.csv`` and ``report.html``.
The Pareto sweep re-solves rack-aware snapshots at each ratio
``traffic_cost / non_overlap_cost``: by default a seeded set of rack-aware
consumer groups (``--pareto-count``, ``--pareto-seed``); ``--pareto-input``
takes the batch's own input dataset or a bundled suite instead.

Exit status: 0 when the report is written and at least one row of the batch
was solved; 1 when the batch has no rows or no solved row (the report is
still written and says so, and one line on stderr tells why); 2 for bad
arguments or a batch that cannot be read.
"""

from __future__ import annotations

import argparse
import sys

EXIT_OK = 0
EXIT_NOTHING_SOLVED = 1
EXIT_BAD_INPUT = 2


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``report`` on the ``stickyflow`` command's subparsers."""
    p = subparsers.add_parser("report", help="tables and plots (PNG, HTML) of a batch output",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("batch", help="batch output: a Parquet dataset (or .csv / .jsonl)")
    p.add_argument("-o", "--output", default="report", help="output folder (default: ./report)")
    p.add_argument("--pareto-input", default=None, metavar="DATASET",
                   help="snapshots for the Pareto sweep: a dataset (folder of JSON, JSON Lines, Parquet) or "
                        "suite:NAME; default: a seeded set of rack-aware consumer groups")
    p.add_argument("--no-pareto", action="store_true", help="skip the Pareto sweep")
    p.add_argument("--pareto-count", type=int, default=12, help="snapshots in the default sweep set (default 12)")
    p.add_argument("--pareto-seed", type=int, default=0, help="seed of the default sweep set")
    p.add_argument("--ratios", default=None, metavar="R,R,...",
                   help="traffic_cost / non_overlap_cost values (default 0,0.1,0.5,1,2,5,10,100)")
    p.add_argument("--pareto-assignors", default="optimal,sticky,range,roundrobin",
                   help="assignors in the sweep (default optimal,sticky,range,roundrobin; unknown ones are skipped)")
    p.add_argument("--time-limit", type=float, default=10.0, metavar="SECONDS",
                   help="time limit of each solve in the sweep (default 10)")
    p.add_argument("--title", default="stickyflow batch report", help="title of the HTML page")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    from stickyflow.errors import InvalidSnapshotError

    from .report import DEFAULT_RATIOS, write_report

    try:
        ratios = DEFAULT_RATIOS if args.ratios is None else tuple(float(x) for x in args.ratios.split(",") if x)
    except ValueError:
        print("stickyflow report: --ratios: must be numbers separated by commas", file=sys.stderr)
        return EXIT_BAD_INPUT
    if any(r < 0 for r in ratios) or not ratios:
        print("stickyflow report: --ratios: must be one or more numbers >= 0", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not args.time_limit > 0:
        print("stickyflow report: --time-limit: must be a number of seconds > 0", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.pareto_count < 1:
        print("stickyflow report: --pareto-count: must be an integer >= 1", file=sys.stderr)
        return EXIT_BAD_INPUT
    pareto = None if args.no_pareto else (args.pareto_input or "default")
    try:
        rep = write_report(args.batch, args.output, pareto_input=pareto, pareto_seed=args.pareto_seed,
                           pareto_count=args.pareto_count, ratios=ratios,
                           pareto_assignors=[a for a in args.pareto_assignors.split(",") if a],
                           time_limit=args.time_limit, title=args.title)
    except InvalidSnapshotError as exc:
        print(f"stickyflow report: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    cols = ["kind", "assignor", "snapshots", "errors", "moves_total", "imbalance_max", "cross_rack_total",
            "wall_s_mean", "wall_s_max"]
    if len(rep.summary):
        print(rep.summary[cols].to_string(index=False))
    for note in rep.notes:
        print(f"note: {note}", file=sys.stderr)
    print(f"wrote {', '.join(str(p) for p in rep.files.values())}", file=sys.stderr)
    if not rep.rows:
        print(f"stickyflow report: {args.batch}: the batch output has no rows", file=sys.stderr)
        return EXIT_NOTHING_SOLVED
    if not rep.solved:
        print(f"stickyflow report: {args.batch}: no row was solved (all {rep.rows} rows are errors)", file=sys.stderr)
        return EXIT_NOTHING_SOLVED
    return EXIT_OK
