"""The ``stickyflow`` command line.

``stickyflow solve SNAPSHOT.json [-o RESULT.json] [--assignor NAME] [--time-limit SECONDS]``
writes one result. Bad input exits 2 with one line naming the field; never a traceback.
Further subcommands (``batch``, ``report``, ``simulate``, ``bench``, ``assignors``)
live in their own modules and are imported only when used.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="stickyflow", description="Optimal Kafka consumer-group and Streams task assignment.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser("solve", help="solve one snapshot and write its result JSON")
    s.add_argument("snapshot", help="snapshot JSON file ('-' reads standard input)")
    s.add_argument("-o", "--output", help="result file (default: standard output)")
    s.add_argument("--assignor", default="optimal",
                   help="optimal (default), sticky, range, roundrobin, a registered name or module:function")
    s.add_argument("--time-limit", type=float, default=None, metavar="SECONDS", help="solver time limit")
    s.add_argument("--method", default=None, help="optimizer backend: flow (default), networkx, cpsat")
    s.add_argument("--seed", type=int, default=0, help="solver seed (CP-SAT)")
    s.add_argument("--workers", type=int, default=None, help="solver worker threads (CP-SAT)")
    s.add_argument("--compact", action="store_true", help="write JSON without indentation")
    s.set_defaults(func=_cmd_solve)

    a = sub.add_parser("assignors", help="list the registered assignors")
    a.set_defaults(func=_cmd_assignors)

    for name, module in _EXTENSIONS.items():
        try:
            mod = __import__(f"stickyflow.adapters.{module}", fromlist=["add_parser"])
        except ImportError:
            continue
        mod.add_parser(sub)
    return p


# subcommands defined in other modules of this package: name -> module with add_parser(subparsers)
_EXTENSIONS = {"batch": "cli_batch", "report": "cli_report", "simulate": "cli_simulate", "bench": "cli_bench",
               "compare": "cli_compare", "decode, capture": "cli_capture"}


def _cmd_solve(args: argparse.Namespace) -> int:
    import stickyflow
    from stickyflow.snapshot import dumps_result, loads_snapshot

    if ":" in args.assignor:
        _importable_from_here()
    data = sys.stdin.buffer.read() if args.snapshot == "-" else None
    snap = loads_snapshot(data) if data is not None else stickyflow.load_snapshot(args.snapshot)
    for line in snap.warnings:
        print(f"stickyflow: warning: {line}", file=sys.stderr)
    if args.time_limit is not None and not args.time_limit > 0:
        raise stickyflow.InvalidSnapshotError(stickyflow.Problem("--time-limit", "must be a number of seconds > 0"))
    result = stickyflow.assign(snap, args.assignor, time_limit=args.time_limit, method=args.method,
                               seed=args.seed, num_workers=args.workers)
    out = dumps_result(result, indent=not args.compact)
    if args.output:
        Path(args.output).write_bytes(out + b"\n")
    else:
        sys.stdout.buffer.write(out + b"\n")
        sys.stdout.flush()
    return EXIT_OK


def _importable_from_here() -> None:
    """Let ``--assignor module:function`` name a module in the working directory, as ``python -m`` would.

    The console script's ``sys.path`` starts with its own ``bin`` folder, not the working directory; it goes
    last, so that a file there never shadows an installed package.
    """
    here = str(Path.cwd())
    if here not in sys.path:
        sys.path.append(here)


def _cmd_assignors(args: argparse.Namespace) -> int:
    from stickyflow.registry import _REGISTRY

    for (name, kind), spec in sorted(_REGISTRY.items()):
        print(f"{name:12s} {kind:9s} {spec.description}")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    from stickyflow.errors import InvalidSnapshotError, StickyflowError, UnknownAssignorError

    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except InvalidSnapshotError as exc:
        print(f"stickyflow: invalid snapshot: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except UnknownAssignorError as exc:
        print(f"stickyflow: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except StickyflowError as exc:
        print(f"stickyflow: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except OSError as exc:  # an output path that cannot be written, an input that cannot be read
        where = f" {exc.filename}" if getattr(exc, "filename", None) else ""
        print(f"stickyflow: cannot write or read{where}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("stickyflow: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
