"""``stickyflow plan SNAPSHOT [-o PLAN.json] [--method NAME]``: how many consumers a group needs, and who takes what.

The snapshot is a consumer group with ``rates`` on every subscribed topic, a
``config.capacity`` and members that subscribe alike (the spec's "Plans"); the plan
JSON goes to standard output, or to ``-o``. ``--method`` picks the method
(``optimal`` by default, proven where it can be; the greedy ones of the literature:
``stickyflow plan --methods`` lists them). Exit 0 on success; 2 with one line on
standard error naming the field, option or path that is wrong; never a traceback.

    stickyflow plan group.json -o plan.json
    stickyflow plan group.json --method mwf
"""

from __future__ import annotations

import argparse
import json
import sys

from .input import BadInput, existing_path, int_at_least, positive_number, seconds, writable_file
from .trace import NON_NEGATIVE, bounded_number

__all__ = ["add_parser"]


_FRACTION = bounded_number(0.0, 1.0, "must be a fraction of the capacity, above 0 and at most 1", open_low=True)


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``plan`` on the ``stickyflow`` command's subparsers."""
    p = subparsers.add_parser(
        "plan", help="how many members a group needs for its rates, and which partitions each takes",
        description="Plan a consumer group for an autoscaler: the fewest members of the configured capacity "
                    "that hold every partition's rate, then the least moved load, then the fewest moves.")
    p.add_argument("snapshot", metavar="SNAPSHOT", nargs="?", help="snapshot JSON file ('-' reads standard input)")
    p.add_argument("-o", "--output", help="plan file (default: standard output)")
    p.add_argument("--method", default="optimal", help="optimal (default), latency, or a greedy method "
                   "(see --methods)")
    p.add_argument("--methods", action="store_true", help="list the plan methods and exit")
    p.add_argument("--time-limit", type=seconds, default=None, metavar="SECONDS",
                   help="CP-SAT's budget in deterministic seconds (optimal, latency; default 2)")
    p.add_argument("--seed", type=int_at_least(0), default=0, help="CP-SAT's seed (default 0)")
    p.add_argument("--workers", type=int_at_least(1), default=None, help="CP-SAT's workers (default 1)")
    p.add_argument("--up", type=_FRACTION, default=None, help="least-loaded: pack to this fraction of the "
                   "capacity (default 1)")
    p.add_argument("--down", type=_FRACTION, default=None, help="least-loaded: shrink only if the group fits "
                   "this fraction (default 0.9)")
    p.add_argument("--drain", type=positive_number, default=None, help="latency: what a member consumes per "
                   "second (default: the capacity)")
    p.add_argument("--pause", type=NON_NEGATIVE, default=None, help="latency: seconds a member pauses per "
                   "partition it gains (default 5)")
    p.add_argument("--compact", action="store_true", help="write JSON without indentation")
    p.set_defaults(func=run, cli_assignor_option="--method")
    return p


def run(args: argparse.Namespace) -> int:
    if args.methods:
        from stickyflow.planning.methods import PLAN_METHODS

        for name, description in PLAN_METHODS.items():
            print(f"{name:13s} {description}")
        return 0
    if args.snapshot is None:
        raise BadInput("argument SNAPSHOT", "required")
    from stickyflow.planning.methods import PLAN_METHODS

    if args.method not in PLAN_METHODS:
        raise BadInput("option --method", f"{args.method!r} is not a plan method (known: {', '.join(PLAN_METHODS)})")
    if args.snapshot != "-":
        existing_path(args.snapshot, kind="snapshot file")
    if args.output:
        writable_file(args.output)
    extra = {k: v for k, v in (("up", args.up), ("down", args.down), ("drain", args.drain), ("pause", args.pause))
             if v is not None}
    if extra.get("up", 1.0) < extra.get("down", 0.0):
        raise BadInput("option --down", "must be at most --up")
    import stickyflow
    from stickyflow.snapshot import loads_snapshot

    snap = loads_snapshot(sys.stdin.buffer.read()) if args.snapshot == "-" else stickyflow.load_snapshot(args.snapshot)
    for line in snap.warnings:
        print(f"stickyflow: warning: {line}", file=sys.stderr)
    plan = stickyflow.plan(snap, args.method, time_limit=args.time_limit, seed=args.seed,
                           num_workers=args.workers, **extra)
    text = json.dumps(plan.to_json(), indent=None if args.compact else 2)
    if args.output:
        with open(args.output, "w") as fh:
            fh.write(text + "\n")
    else:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    return 0
