"""The ``stickyflow`` command line.

``stickyflow solve SNAPSHOT.json [-o RESULT.json] [--assignor NAME] [--time-limit SECONDS]``
writes one result. The other commands (``batch``, ``report``, ``simulate``,
``bench``, ``compare``, ...) live in their own modules, each with an
``add_parser(subparsers)``; a module is imported only when its command is
used or the whole help is asked for, and none of them imports numpy, pandas,
Spark or a solver before its command runs, so ``--help`` and ``--version``
start in a blink.

Bad input of any command is one line on standard error and exit 2, starting
``stickyflow COMMAND:`` (``stickyflow:`` alone only when no command was named;
warnings and notes begin the same way), then naming the culprit (``option --x:``, ``path:``, ``snapshot:``, see
:mod:`stickyflow.adapters.cli.input`); never a traceback. Exit 1 is a failure
that is not the input's fault (a solver fault, a missing optional package,
Spark failing).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from .input import BadInput, Parser, describe, int_at_least, seconds, writable_file

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2

# the commands defined here; the others come from _EXTENSIONS
_BUILTIN = ("solve", "assignors")


def _parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    from stickyflow import __version__

    p = Parser(prog="stickyflow", description="Optimal Kafka consumer-group and Streams task assignment.")
    p.add_argument("--version", action="version", version=f"stickyflow {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser("solve", help="solve one snapshot and write its result JSON",
                       description="Solve one snapshot (JSON) and write its result (JSON).")
    s.add_argument("snapshot", metavar="SNAPSHOT", help="snapshot JSON file ('-' reads standard input)")
    s.add_argument("-o", "--output", help="result file (default: standard output)")
    s.add_argument("--assignor", default="optimal",
                   help="optimal (default), sticky, range, roundrobin, uniform, kip1071, another registered name "
                        "(see stickyflow assignors), or module:function")
    s.add_argument("--time-limit", type=seconds, default=None, metavar="SECONDS", help="solver time limit")
    s.add_argument("--method", default=None,
                   help="optimizer backend: flow (default), networkx (consumer groups), cpsat (Streams)")
    s.add_argument("--seed", type=int_at_least(0), default=0, help="solver seed (CP-SAT; default 0)")
    s.add_argument("--workers", type=int_at_least(1), default=None, help="solver worker threads (CP-SAT)")
    s.add_argument("--compact", action="store_true", help="write JSON without indentation")
    s.set_defaults(func=_cmd_solve, cli_assignor_option="--assignor")

    a = sub.add_parser("assignors", help="list the registered assignors",
                       description="List the registered assignors: name, kind of snapshot, description.")
    a.set_defaults(func=_cmd_assignors)

    for module in _extensions_for(argv):
        mod = __import__(f"stickyflow.adapters.cli.{module}", fromlist=["add_parser"])
        mod.add_parser(sub)
    p.set_defaults(cli_commands=sub.choices)
    return p


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """The parsed command line. A word the command does not take is reported by that command's own parser
    (``stickyflow solve: option --bogus: ...``), not by the top-level one, which would name no command."""
    args, extra = _parser(argv).parse_known_args(argv)
    if extra:
        args.cli_commands[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    return args


# subcommands defined in the other modules of this package: name(s) -> module with add_parser(subparsers)
_EXTENSIONS = {"batch": "batch", "report": "report", "simulate": "simulate", "bench": "bench",
               "compare": "compare", "decode, capture": "capture", "plan": "plan"}


def _extensions_for(argv: Sequence[str] | None) -> list[str]:
    """The extension modules this command line needs: only the named command's, else every one (help)."""
    words = sys.argv[1:] if argv is None else list(argv)
    command = next((w for w in words if not w.startswith("-")), None)
    if command in _BUILTIN or (command is None and "--version" in words and "-h" not in words
                               and "--help" not in words):
        return []
    for names, module in _EXTENSIONS.items():
        if command in names.split(", "):
            return [module]
    return list(dict.fromkeys(_EXTENSIONS.values()))


def _cmd_solve(args: argparse.Namespace) -> int:
    import stickyflow
    from stickyflow.snapshot import dumps_result, loads_snapshot

    from .input import existing_path

    if ":" in args.assignor:
        _importable_from_here()
    if args.snapshot != "-":
        existing_path(args.snapshot, kind="snapshot file")
    if args.output:
        writable_file(args.output)
    data = sys.stdin.buffer.read() if args.snapshot == "-" else None
    snap = loads_snapshot(data) if data is not None else stickyflow.load_snapshot(args.snapshot)
    for line in snap.warnings:
        print(f"stickyflow solve: warning: {line}", file=sys.stderr)
    result = stickyflow.assign(snap, args.assignor, time_limit=args.time_limit, method=args.method,
                               seed=args.seed, num_workers=args.workers)
    out = dumps_result(result, indent=not args.compact)
    if args.output:
        with open(args.output, "wb") as f:
            f.write(out + b"\n")
    else:
        sys.stdout.buffer.write(out + b"\n")
        sys.stdout.flush()
    return EXIT_OK


def _importable_from_here() -> None:
    """Let ``--assignor module:function`` name a module in the working directory, as ``python -m`` would.

    The console script's ``sys.path`` starts with its own ``bin`` folder, not the working directory; it goes
    last, so that a file there never shadows an installed package.
    """
    here = os.getcwd()
    if here not in sys.path:
        sys.path.append(here)


def _cmd_assignors(args: argparse.Namespace) -> int:
    from stickyflow.registry import registered_assignors

    for spec in registered_assignors():
        print(f"{spec.name:12s} {spec.kind:9s} {spec.description}")
    return EXIT_OK


def _assignor_line(args: argparse.Namespace, exc: BaseException) -> str:
    """An unknown assignor (or optimizer method), as the option that named it."""
    text = str(exc.args[0]) if exc.args else str(exc)
    if text.startswith("method: "):
        return f"option --method: {text[len('method: '):]}"
    for head in ("--assignors: ", "--assignor: ", "assignors: ", "assignor: "):
        if text.startswith(head):
            text = text[len(head):]
            break
    return f"option {getattr(args, 'cli_assignor_option', '--assignors')}: {text}"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    prog = "stickyflow"

    def say(line: str) -> None:
        print(f"{prog}: {' '.join(str(line).split())}", file=sys.stderr)

    try:
        args = _parse(argv)
    except BadInput as exc:
        prog = getattr(exc, "prog", prog)
        say(str(exc))
        return EXIT_BAD_INPUT
    prog = f"stickyflow {args.command}"

    from stickyflow.errors import (BackendMissingError, InvalidSnapshotError, StickyflowError,
                                   UnknownAssignorError)

    try:
        return args.func(args)
    except BadInput as exc:
        say(str(exc))
        return EXIT_BAD_INPUT
    except InvalidSnapshotError as exc:
        say(describe(exc, paths=getattr(args, "cli_paths", ()), arguments=getattr(args, "cli_arguments", ()),
                     options=getattr(args, "cli_options", ())))
        return EXIT_BAD_INPUT
    except UnknownAssignorError as exc:
        say(_assignor_line(args, exc))
        return EXIT_BAD_INPUT
    except BackendMissingError as exc:
        say(f"missing package: {exc}")
        return EXIT_FAILED
    except StickyflowError as exc:
        say(f"{type(exc).__name__}: {exc}")
        return EXIT_FAILED
    except KeyboardInterrupt:
        say("interrupted")
        return 130
    except BrokenPipeError:  # a reader such as `head` went away: not an error
        return EXIT_OK
    except OSError as exc:  # a path that cannot be read or written
        if getattr(exc, "filename", None):
            say(f"path: {exc.filename}: {exc.strerror or exc}")
            return EXIT_BAD_INPUT
        say(f"{type(exc).__name__}: {exc}")
        return EXIT_FAILED
