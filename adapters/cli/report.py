"""``stickyflow report``: a batch output as a table, PNG plots and one self-contained HTML page.

``stickyflow report BATCH -o OUTDIR [--pareto-input DATASET | suite:NAME] [--no-pareto]
[--load-slacks S,S,...] [--no-load-front]``

BATCH is what ``stickyflow batch`` wrote (a Parquet dataset; CSV and JSON Lines
are read too). OUTDIR receives ``summary.csv``, ``metrics.png``,
``time_vs_size.png``, ``pareto.png``, ``pareto.csv`` and ``report.html``; a
batch of consumer groups with rates adds ``load.png`` and the front of peak
utilization against moved load over ``--load-slacks`` (``load_front.png``,
``load_front.csv``), on the same input as the Pareto sweep.
The Pareto sweep re-solves rack-aware snapshots at each ratio
``traffic_cost / non_overlap_cost``: by default the batch's own (the first
``--pareto-count`` with racks of each kind in the input that ``stickyflow
batch`` recorded in its output); ``--pareto-input`` takes another dataset, a
bundled suite, or ``generated`` (a seeded set of rack-aware consumer groups,
``--pareto-seed``; the plot says so).

Exit status: 0 when the report is written and at least one row of the batch
was solved; 1 when the batch has no rows or no solved row (the report is
still written and says so, and one line on stderr tells why); 2, with one
line naming it, for a bad option, a missing path or a batch that cannot be
read.
"""

from __future__ import annotations

import argparse
import sys

from .input import BadInput, assignor_names, existing_path, int_at_least, output_location, seconds

EXIT_OK = 0
EXIT_NOTHING_SOLVED = 1
EXIT_BAD_INPUT = 2


def _ratios(text: str) -> tuple[float, ...]:
    parse = _nonnegative
    out = tuple(parse(x) for x in text.split(",") if x.strip())
    if not out:
        raise argparse.ArgumentTypeError("must be one or more numbers >= 0 separated by commas")
    return out


def _nonnegative(text: str) -> float:
    import math

    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be numbers >= 0 separated by commas, not {text.strip()!r}") from None
    if not math.isfinite(x) or x < 0:
        raise argparse.ArgumentTypeError(f"must be numbers >= 0 separated by commas, not {text.strip()!r}")
    return x


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``report`` on the ``stickyflow`` command's subparsers."""
    p = subparsers.add_parser(
        "report", help="tables and plots (PNG, HTML) of a batch output",
        description="Read what stickyflow batch wrote and write a summary table (CSV), plots (PNG) and one "
                    "self-contained HTML page into a folder, with a Pareto sweep of cross-rack traffic against "
                    "moves.")
    p.add_argument("batch", metavar="BATCH", help="batch output: a Parquet dataset (or .csv / .jsonl)")
    p.add_argument("-o", "--output", default="report", help="output folder (default: ./report)")
    p.add_argument("--pareto-input", default="batch", metavar="DATASET",
                   help="snapshots for the Pareto sweep: batch (default: the batch's own input), a dataset (folder "
                        "of JSON, JSON Lines, Parquet), suite:NAME, or generated (seeded rack-aware consumer groups)")
    p.add_argument("--no-pareto", action="store_true", help="skip the Pareto sweep")
    p.add_argument("--pareto-count", type=int_at_least(1), default=12,
                   help="batch: the first N snapshots with racks of each kind; generated: N groups (default 12)")
    p.add_argument("--pareto-seed", type=int_at_least(0), default=0,
                   help="seed of --pareto-input generated (default 0)")
    p.add_argument("--ratios", type=_ratios, default=None, metavar="R,R,...",
                   help="traffic_cost / non_overlap_cost values (default 0,0.1,0.5,1,2,5,10,100)")
    p.add_argument("--pareto-assignors", default="optimal,sticky,range,roundrobin",
                   help="consumer assignors in the sweep (default optimal,sticky,range,roundrobin)")
    p.add_argument("--load-slacks", type=_ratios, default=None, metavar="S,S,...",
                   help="load_slack values of the peak-against-moved-load front, drawn when the batch has consumer "
                        "groups with rates (default 0,0.02,0.05,0.1,0.2,0.5)")
    p.add_argument("--no-load-front", action="store_true", help="skip the load_slack sweep")
    p.add_argument("--time-limit", type=seconds, default=10.0, metavar="SECONDS",
                   help="time limit of each solve in the sweep (default 10)")
    p.add_argument("--title", default="stickyflow batch report", help="title of the HTML page")
    p.set_defaults(func=run, cli_paths=("batch", "BATCH"), cli_options=("pareto-input",),
                   cli_assignor_option="--pareto-assignors")
    return p


def _check_pareto_input(text: str) -> None:
    if text in ("batch", "generated"):
        return
    if text.startswith("suite:"):
        from stickyflow.datasets.suites import SUITES

        name = text[len("suite:"):]
        if name not in SUITES:
            raise BadInput("option --pareto-input", f"{name!r} is not a suite (known: {', '.join(SUITES)})")
    else:
        existing_path(text, kind="dataset (--pareto-input)")


def run(args: argparse.Namespace) -> int:
    existing_path(args.batch, kind="batch output")
    output_location(args.output)  # made by the report, once the batch has been read
    pareto_assignors = assignor_names(args.pareto_assignors, "--pareto-assignors", kind="consumer")
    if args.pareto_input and not args.no_pareto:
        _check_pareto_input(args.pareto_input)

    from ..report import DEFAULT_RATIOS, load_batch, write_report
    from ..report.load import DEFAULT_SLACKS

    frame = load_batch(args.batch)  # read before anything is written: an unreadable batch leaves no folder behind
    pareto = None if args.no_pareto else args.pareto_input
    rep = write_report(frame, args.output, pareto_input=pareto, pareto_seed=args.pareto_seed,
                       pareto_count=args.pareto_count, ratios=args.ratios or DEFAULT_RATIOS,
                       pareto_assignors=pareto_assignors, time_limit=args.time_limit, title=args.title,
                       batch_source=args.batch,
                       load_slacks=None if args.no_load_front else (args.load_slacks or DEFAULT_SLACKS))
    cols = ["kind", "assignor", "snapshots", "errors", "moves_total", "imbalance_max", "cross_rack_total",
            "wall_s_mean", "wall_s_max"]
    if len(rep.summary):
        from ..report.base import without_na

        print(without_na(rep.summary[cols]).to_string(index=False))
    for note in rep.notes:
        print(f"stickyflow report: note: {note}", file=sys.stderr)
    print(f"stickyflow report: wrote {', '.join(str(p) for p in rep.files.values())}", file=sys.stderr)
    if not rep.rows:
        print(f"stickyflow report: {args.batch}: the batch output has no rows", file=sys.stderr)
        return EXIT_NOTHING_SOLVED
    if not rep.solved:
        print(f"stickyflow report: {args.batch}: no row was solved (all {rep.rows} rows are errors)", file=sys.stderr)
        return EXIT_NOTHING_SOLVED
    return EXIT_OK
