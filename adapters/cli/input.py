"""Bad input on the command line: one line on standard error, exit 2, and a prefix that says what is wrong.

Every ``stickyflow`` command reports a bad argument the same way::

    stickyflow bench: option --sizes: '10xfoo' is not PARTITIONSxMEMBERS (for example 1000x50)
    stickyflow batch: path: nope.jsonl: does not exist
    stickyflow solve: snapshot: members[0].generation: must be an integer <= 2147483647

The word after the command names the culprit: ``option --NAME`` (a value given
to an option), ``argument NAME`` (a positional argument that is not a file),
``path`` (a file or folder that is missing, unreadable or cannot be written),
``snapshot`` or ``scenario`` (the content of the input). Option values are
checked while the command line is parsed (the ``type=`` functions below), so a
bad value costs no import of numpy, Spark or a solver.

This module imports only the standard library, and on the way of ``solve`` not even ``pathlib`` (7 ms of
imports, a twentieth of a small solve's whole process): the command line must start fast.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from typing import TYPE_CHECKING, Callable, Iterable, Sequence

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "BadInput",
    "Parser",
    "describe",
    "seconds",
    "positive_number",
    "int_at_least",
    "names",
    "master_url",
    "key_value",
    "sizes",
    "existing_path",
    "writable_dir",
    "writable_file",
]


class BadInput(Exception):
    """A bad command-line input: ``what`` names the culprit (``"option --sizes"``, ``"path"``), ``rule`` says
    what is wrong. ``str()`` is the one line the command prints after its own name.

    >>> str(BadInput("option --sizes", "'10xfoo' is not PARTITIONSxMEMBERS"))
    "option --sizes: '10xfoo' is not PARTITIONSxMEMBERS"
    """

    def __init__(self, what: str, rule: str):
        super().__init__(f"{what}: {rule}")
        self.what = what
        self.rule = rule


def option(name: str, rule: str) -> BadInput:
    """A bad value of option ``name`` (``"--sizes"``)."""
    return BadInput(f"option {name}", rule)


def path(p: str | os.PathLike, rule: str) -> BadInput:
    """A file or folder ``p`` that is missing, unreadable or cannot be written."""
    return BadInput("path", f"{os.fspath(p)}: {rule}")


# --------------------------------------------------------------------------- the parser

_ARGUMENT = re.compile(r"^argument (?P<names>[^:]+): (?P<rule>.*)$", re.S)


def _columns() -> int:
    """The terminal's width as ``shutil.get_terminal_size`` finds it (``COLUMNS``, else the terminal of
    standard output, else 80), without importing ``shutil``: argparse imports it to ask, for every parser and
    option it builds, and with it ``bz2``, ``lzma`` and ``zlib`` (about 4 ms of a 0.13 s ``stickyflow solve``)."""
    try:
        columns = int(os.environ.get("COLUMNS", 0))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


class _Formatter(argparse.HelpFormatter):
    """argparse's help layout, at the width :func:`_columns` finds."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None,
                 **more):  # whatever later Pythons add (3.14: color), passed on
        super().__init__(prog, indent_increment, max_help_position, _columns() - 2 if width is None else width,
                         **more)


class Parser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` whose errors are :class:`BadInput` (one line, no usage block).

    Sub-parsers made with ``add_subparsers().add_parser`` are of the same class, so every command's
    options fail the same way, and lay out their help the same way.
    """

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # noqa: D401 - argparse's hook
        err = _from_argparse(self.prog, message)
        err.prog = self.prog
        raise err


def _from_argparse(prog: str, message: str) -> BadInput:
    message = " ".join(message.split())
    m = _ARGUMENT.match(message)
    if m:
        flags = m["names"].split("/")
        name = max(flags, key=len)
        rule = m["rule"]
        if name.startswith("-"):
            return BadInput(f"option {name}", rule)
        if name == "COMMAND":
            return BadInput("command", rule.replace("invalid choice: ", "") + " (see stickyflow --help)")
        return BadInput(f"argument {name}", rule)
    if message.startswith("the following arguments are required:"):
        missing = message.split(":", 1)[1].strip()
        what = "option" if missing.startswith("-") else "argument"
        return BadInput(f"{what} {missing}", f"required (see {prog} --help)")
    if message.startswith("unrecognized arguments:"):
        extra = message.split(":", 1)[1].strip()
        what = "option" if extra.startswith("-") else "argument"
        return BadInput(f"{what} {extra}", f"not understood by {prog} (see {prog} --help)")
    return BadInput("usage", f"{message} (see {prog} --help)")


# --------------------------------------------------------------------------- library errors, as one line

def describe(exc: BaseException, *, paths: Iterable[str] = (), arguments: Iterable[str] = (),
             options: Iterable[str] = ()) -> str:
    """The one line (after the command's name) for an :class:`~stickyflow.InvalidSnapshotError` raised by a
    library function on the command's behalf.

    Its ``field`` tells the culprit: a field starting with ``-`` (or one in ``options``, written without
    the dashes) is an option; one in ``paths`` names a file
    (the rule carries the path); one in ``arguments`` a positional argument; ``scenario...`` a scenario file;
    anything else is inside the snapshot.
    """
    field = getattr(exc, "field", None)
    text = str(exc)
    if field is None:
        return text
    rule = text[len(field) + 2:] if text.startswith(f"{field}: ") else text
    if field.startswith("-"):
        return f"option {field}: {rule}"
    if field in set(options):
        return f"option --{field}: {rule}"
    if field in set(paths):
        return f"path: {rule}"
    if field in set(arguments):
        return f"argument {field}: {rule}"
    if field.split(".", 1)[0].split("[", 1)[0] in ("snapshot", "scenario"):
        return text
    return f"snapshot: {text}"


# --------------------------------------------------------------------------- option values

def master_url(text: str) -> str:
    """A Spark master URL: ``local``, ``local[N]``, ``local[*]``, ``local[N,F]``, ``local-cluster[...]``,
    ``spark://HOST:PORT[,HOST:PORT]``, ``yarn``, ``k8s://...`` or ``mesos://...``."""
    if not re.fullmatch(r"local(\[(\*|\d+)(,\d+)?\])?|local-cluster\[\d+,\d+,\d+\]|yarn|"
                        r"spark://[^\s/:]+:\d+(,[^\s/:]+:\d+)*/?|(k8s|mesos)://\S+", text.strip()):
        raise argparse.ArgumentTypeError(f"{text!r} is not a Spark master URL (for example local[2], "
                                         f"spark://host:7077, yarn)")
    return text.strip()


def key_value(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` (a Spark setting)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"must be KEY=VALUE, not {text!r}")
    return key.strip(), value


def _number(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, not {text!r}") from None
    if not math.isfinite(x):
        raise argparse.ArgumentTypeError(f"must be a finite number, not {text!r}")
    return x


def seconds(text: str) -> float:
    """A time in seconds: a finite number > 0."""
    x = _number(text)
    if not x > 0:
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, not {text!r}")
    return x


def positive_number(text: str) -> float:
    """A finite number > 0."""
    x = _number(text)
    if not x > 0:
        raise argparse.ArgumentTypeError(f"must be a number > 0, not {text!r}")
    return x


def int_at_least(low: int) -> Callable[[str], int]:
    """An integer >= ``low``."""

    def parse(text: str) -> int:
        try:
            n = int(text.strip().replace("_", ""))
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer >= {low}, not {text!r}") from None
        if n < low:
            raise argparse.ArgumentTypeError(f"must be an integer >= {low}, not {text!r}")
        return n

    parse.__name__ = f"integer >= {low}"
    return parse


def names(known: Sequence[str], *, what: str = "name", allow_empty: bool = False) -> Callable[[str], list[str]]:
    """Comma-separated names, each one of ``known``."""

    def parse(text: str) -> list[str]:
        items = [x.strip() for x in text.split(",") if x.strip()]
        bad = [x for x in items if x not in known]
        if bad:
            raise argparse.ArgumentTypeError(f"{bad[0]!r} is not a {what} (known: {', '.join(known)})")
        if not items and not allow_empty:
            raise argparse.ArgumentTypeError(f"names no {what} (known: {', '.join(known)})")
        return items

    return parse


def sizes(unit: str) -> Callable[[str], list[tuple[int, int]]]:
    """Comma-separated ``AxB`` pairs of positive integers (``unit`` is ``"PARTITIONSxMEMBERS"``, say)."""

    def parse(text: str) -> list[tuple[int, int]]:
        out = []
        for part in text.split(","):
            if not part.strip():
                continue
            a, sep, b = part.strip().lower().replace("_", "").partition("x")
            try:
                pair = (int(a), int(b)) if sep else None
            except ValueError:
                pair = None
            if pair is None or min(pair) < 1:
                raise argparse.ArgumentTypeError(f"{part.strip()!r} is not {unit} with two integers >= 1 "
                                                 f"(for example 1000x50)")
            out.append(pair)
        if not out:
            raise argparse.ArgumentTypeError(f"names no size (expected {unit},...)")
        return out

    return parse


# --------------------------------------------------------------------------- paths

def existing_path(p: str, *, kind: str = "file or folder") -> str:
    """``p`` itself; :class:`BadInput` when nothing is there."""
    if not os.path.exists(p):
        raise path(p, f"no such {kind}")
    return p


def writable_dir(p: str) -> Path:
    """A folder that exists or can be made (made here); :class:`BadInput` naming the path otherwise."""
    from pathlib import Path

    q = Path(p)
    try:
        q.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise path(p, f"cannot be made a folder ({exc.strerror or exc})") from None
    if not os.access(q, os.W_OK):
        raise path(p, "is a folder that cannot be written")
    return q


def writable_file(p: str) -> str:
    """``p`` itself when it can be written as a file: its folder exists and is writable, and it is not a folder
    itself; :class:`BadInput` naming the path otherwise."""
    if os.path.isdir(p or "."):  # an empty name is the working folder, as pathlib reads it
        raise path(p, "is a folder, not a file")
    parent = os.path.dirname(p) or "."
    if not os.path.isdir(parent):
        raise path(p, f"its folder {parent} does not exist")
    if not os.access(parent, os.W_OK) or (os.path.exists(p) and not os.access(p, os.W_OK)):
        raise path(p, "cannot be written (permission denied)")
    return p


def assignor_names(text: str, option: str, *, kind: str | None = None) -> list[str]:
    """Comma-separated assignor names, each registered (for ``kind``, or for some kind) or ``module:function``;
    :class:`BadInput` naming ``option`` otherwise. Checked before any work starts."""
    from stickyflow.registry import available_assignors

    items = [a.strip() for a in text.split(",") if a.strip()]
    known = available_assignors(kind) if kind else available_assignors()
    if not items:
        raise BadInput(f"option {option}", f"names no assignor (known: {', '.join(sorted(known))})")
    for name in items:
        if name not in known and ":" not in name:
            raise BadInput(f"option {option}", f"{name!r} is not an assignor (known: {', '.join(sorted(known))})")
    return items


def local_path(text: str) -> str | None:
    """The local file-system path of ``text``, or None for a URL (``hdfs://``, ``s3a://``) that only Spark can
    check."""
    if text.startswith("file://"):
        return text[len("file://"):]
    return None if "://" in text else text


def output_location(text: str) -> str:
    """An output that a command replaces whole (a Parquet dataset, a folder): its parent folder must exist and
    be writable, and it must not be an existing plain file. URLs pass unchecked."""
    local = local_path(text)
    if local is None:
        return text
    from pathlib import Path

    q = Path(local)
    if q.is_file():
        raise path(text, "is a file; the output is a folder that is replaced whole")
    parent = q.resolve().parent
    if not parent.is_dir():
        raise path(text, f"its folder {os.fspath(parent)} does not exist")
    if not os.access(parent, os.W_OK):
        raise path(text, "cannot be written (permission denied)")
    return text
