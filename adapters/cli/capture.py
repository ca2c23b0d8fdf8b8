"""``stickyflow decode KIND FILE`` and ``stickyflow capture --bootstrap HOST:PORT ...``.

``decode`` prints one JSON object: Kafka's member metadata bytes read by
:mod:`stickyflow.adapters.decode`. ``capture`` writes one snapshot per group
(:mod:`stickyflow.adapters.capture`): JSON for one group, JSON Lines for more.
Bad input (bytes that do not decode, a bad option) is one line on standard
error and exit 2; a group that cannot be captured is a line naming it, and the
others are still written (exit 1 only when none could be).

    stickyflow decode consumer-subscription metadata.bin
    stickyflow capture --bootstrap 127.0.0.1:9092 --all-groups -o groups.jsonl --solve
    stickyflow capture --bootstrap 127.0.0.1:9092 --group orders-app --rates 10 -o orders.json
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import sys
from pathlib import Path

__all__ = ["add_parser"]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``decode`` and ``capture`` (called by :mod:`stickyflow.adapters.cli`)."""
    from ..decode import KINDS
    from .input import seconds

    d = subparsers.add_parser(
        "decode", help="decode Kafka group-member metadata bytes (consumer or Streams) into JSON",
        description="Decode the bytes of a Kafka ConsumerProtocolSubscription or ConsumerProtocolAssignment, or a "
                    "Kafka Streams SubscriptionInfo or AssignmentInfo (alone or inside the consumer structure that "
                    "carries it), every version Kafka has shipped; print one JSON object with the schema's field "
                    "names in snake_case (task ids as \"0_3\", user data as base64).")
    d.add_argument("kind", metavar="KIND", choices=list(KINDS), help=", ".join(KINDS))
    d.add_argument("file", metavar="FILE", help="the bytes ('-' reads standard input)")
    d.add_argument("--input", choices=("raw", "base64", "hex"), default="raw",
                   help="how FILE holds the bytes (default: raw)")
    d.add_argument("--user-data", default="auto",
                   choices=("auto", "none", "sticky", "cooperative-sticky", "streams-subscription",
                            "streams-assignment", "stickyflow"),
                   help="consumer kinds: how to read user_data into user_data_decoded (default: auto)")
    d.add_argument("--compact", action="store_true", help="one line of JSON")
    d.set_defaults(func=_cmd_decode)

    c = subparsers.add_parser(
        "capture", help="read live groups from a Kafka cluster into snapshots",
        description="Describe consumer groups and Kafka Streams applications through Kafka's admin API "
                    "(kafka-python) and write one snapshot per group: JSON for one, JSON Lines for several.")
    c.add_argument("--bootstrap", required=True, metavar="HOST:PORT", help="a broker to bootstrap from")
    which = c.add_mutually_exclusive_group(required=True)
    which.add_argument("--group", action="append", metavar="G", help="a group id (repeatable)")
    which.add_argument("--all-groups", action="store_true", help="every group the cluster lists")
    c.add_argument("--topology", metavar="FILE", help="Kafka Streams: the text of Topology#describe()")
    c.add_argument("-o", "--output", metavar="OUT", help="where to write (default: standard output)")
    c.add_argument("--solve", action="store_true",
                   help="also report, per group, what optimal and sticky would change (on standard error)")
    c.add_argument("--rates", type=seconds, metavar="SECONDS",
                   help="also measure every partition's rate (records/s, into the snapshots' topic rates) from its "
                        "log-end offset, read twice SECONDS apart")
    c.add_argument("--timeout", type=float, default=15.0, metavar="SECONDS", help="request timeout (default 15)")
    c.set_defaults(func=_cmd_capture)


def _say(command: str, line: str) -> None:
    print(f"stickyflow {command}: {line}", file=sys.stderr, flush=True)


def _read_input(path: str, how: str) -> bytes:
    data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    if how == "raw":
        return data
    text = b"".join(data.split())
    return base64.b64decode(text, validate=True) if how == "base64" else binascii.unhexlify(text)


def _text_hint(data: bytes) -> str:
    """A hint for bytes given as text without ``--input``: raw bytes of a Kafka structure are never all hex digits
    (nor all base64 letters), so such input failed only because it was read as raw."""
    text = b"".join(data.split())
    if not text:
        return ""
    if len(text) % 2 == 0 and not text.strip(b"0123456789abcdefABCDEF"):
        return " (the input holds hex text: add --input hex)"
    if len(text) % 4 == 0 and not text.rstrip(b"=").strip(
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"):
        return " (the input looks like base64 text: add --input base64)"
    return ""


def _cmd_decode(args: argparse.Namespace) -> int:
    from ..decode import DecodeError, decode

    try:
        raw = _read_input(args.file, args.input)
    except FileNotFoundError:
        _say("decode", f"{args.file}: no such file")
        return 2
    except (binascii.Error, ValueError) as exc:
        _say("decode", f"{args.file}: not {args.input} text: {exc}")
        return 2
    try:
        doc = decode(args.kind, raw, user_data=args.user_data)
    except DecodeError as exc:
        _say("decode", f"{args.file}: {exc}{_text_hint(raw) if args.input == 'raw' else ''}")
        return 2
    sys.stdout.write(json.dumps(doc, indent=None if args.compact else 2, ensure_ascii=False) + "\n")
    sys.stdout.flush()
    return 0


def _cmd_capture(args: argparse.Namespace) -> int:
    from stickyflow.errors import InvalidSnapshotError

    from ..capture import capture, solve_summary

    host, sep, port = args.bootstrap.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        _say("capture", f"--bootstrap: must be HOST:PORT, not {args.bootstrap!r}")
        return 2
    if not args.timeout > 0:
        _say("capture", "--timeout: must be a number of seconds > 0")
        return 2
    topology = None
    if args.topology:
        try:
            topology = Path(args.topology).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            _say("capture", f"--topology: cannot read {args.topology}: {getattr(exc, 'strerror', None) or exc}")
            return 2
    try:
        groups = capture(args.bootstrap, args.group, all_groups=args.all_groups, topology=topology,
                         timeout_s=args.timeout, rates_s=args.rates)
    except InvalidSnapshotError as exc:
        _say("capture", str(exc))
        return 2
    except Exception as exc:  # the cluster cannot be reached or listed
        _say("capture", cluster_failure(exc, args.bootstrap, args.timeout))
        return 1
    docs = []
    for g in groups:
        if g.error:
            _say("capture", f"group {g.group_id!r}: {g.error}")
            continue
        for note in g.notes:
            _say("capture", f"group {g.group_id!r}: note: {note}")
        docs.append(g.snapshot)
        if args.solve:
            summary = solve_summary(g.snapshot)
            _say("capture", f"group {g.group_id!r}: " + "; ".join(
                f"{name} " + ", ".join(f"{k}={v}" for k, v in m.items()) for name, m in summary.items()))
    if args.all_groups and not groups:
        _say("capture", "the cluster lists no groups")
    if docs:
        text = (json.dumps(docs[0], indent=2) + "\n" if len(docs) == 1 and not _wants_lines(args.output)
                else "".join(json.dumps(d, separators=(",", ":")) + "\n" for d in docs))
        if args.output:
            Path(args.output).write_text(text, encoding="utf-8")
        else:
            sys.stdout.write(text)
            sys.stdout.flush()
    if docs:
        _say("capture", f"captured {len(docs)} of {len(groups)} groups" + (f" into {args.output}" if args.output else ""))
    else:  # nothing to write: no file is made, and one left by an earlier run is not touched
        kept = f"; {args.output} was left as it was" if args.output and Path(args.output).exists() else ""
        _say("capture", f"captured none of the {len(groups)} groups: nothing written{kept}" if groups
             else f"no group to capture: nothing written{kept}")
    return 0 if docs or not groups else 1


def cluster_failure(exc: BaseException, bootstrap: str, timeout_s: float) -> str:
    """One line for a cluster that cannot be reached or listed: kafka-python's errors put their own class name
    into their text (``KafkaTimeoutError: Unable to bootstrap ...``), so the name is said once, in words where
    it is a timeout.

    >>> class KafkaTimeoutError(Exception):
    ...     def __str__(self): return "KafkaTimeoutError: Unable to bootstrap from 127.0.0.1:1"
    >>> cluster_failure(KafkaTimeoutError(), "127.0.0.1:1", 3.0)
    'cannot reach the cluster at 127.0.0.1:1 within 3 s (Unable to bootstrap from 127.0.0.1:1)'
    """
    name = type(exc).__name__
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else ""
    while text.startswith(f"{name}: ") or text.startswith(f"{name}:"):
        text = text[len(name) + 1:].strip()
    if "Timeout" in name or name in ("NoBrokersAvailable", "ConnectionRefusedError"):
        return f"cannot reach the cluster at {bootstrap} within {timeout_s:g} s" + (f" ({text})" if text else "")[:500]
    return f"cannot read the cluster at {bootstrap}: {name}" + (f": {text}" if text else "")[:500]


def _wants_lines(output: str | None) -> bool:
    return bool(output) and output.lower().endswith((".jsonl", ".ndjson"))
