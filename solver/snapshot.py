"""Reading snapshots of either kind from JSON text, files or dicts, and writing results.

>>> snap = parse_snapshot({"format": "stickyflow.snapshot/1", "kind": "consumer",
...                        "topics": {}, "members": []})
>>> snap.kind
'consumer'
"""

from __future__ import annotations

import os
from typing import Any, Union

from .check.input import Checker, missing_rule
from .errors import InvalidSnapshotError, Problem
from .model import jsonio
from .model.arrays import gc_paused
from .model.consumer import SNAPSHOT_FORMAT, ConsumerSnapshot, consumer_to_json, parse_consumer

__all__ = ["Snapshot", "parse_snapshot", "loads_snapshot", "load_snapshot", "as_snapshot", "snapshot_to_json",
           "dumps_result"]

Snapshot = Union[ConsumerSnapshot, Any]  # Any: stickyflow.model.streams.StreamsSnapshot (imported lazily)


def parse_snapshot(doc: Any) -> Snapshot:
    """A snapshot of either kind from parsed JSON; :class:`InvalidSnapshotError` names the field on bad input."""
    if not isinstance(doc, dict):
        raise InvalidSnapshotError(Problem("snapshot", "must be a JSON object"))
    with gc_paused():
        return _parse(doc)


def _parse(doc: dict) -> Snapshot:
    chk = Checker()
    fmt = doc.get("format")
    if fmt != SNAPSHOT_FORMAT:
        rule = missing_rule(doc, "format") if "format" not in doc else f'must be "{SNAPSHOT_FORMAT}"'
        chk.fail("format", rule)
    kind = doc.get("kind")
    if kind == "consumer":
        snap = parse_consumer(doc, chk)
    elif kind == "streams":
        from .model.streams import parse_streams

        snap = parse_streams(doc, chk)
    else:
        chk.fail("kind", missing_rule(doc, "kind") if "kind" not in doc else 'must be "consumer" or "streams"')
        snap = None
    chk.raise_if_any()
    return snap


def loads_snapshot(text: bytes | str) -> Snapshot:
    """A snapshot from JSON text."""
    with gc_paused():  # JSON makes millions of lists and dicts, none in a cycle: collecting meanwhile only costs
        try:
            doc = jsonio.loads(text)
        except ValueError as exc:
            raise InvalidSnapshotError(Problem("snapshot", f"is not valid JSON ({_short(exc)})")) from None
        return parse_snapshot(doc)


def load_snapshot(path: str | os.PathLike) -> Snapshot:
    """A snapshot from a JSON file."""
    try:
        # os.fspath: a str or path-like only (open() would take an int for a file descriptor); open, not
        # pathlib, whose imports cost a command line's start 7 ms
        with open(os.fspath(path), "rb") as f:
            data = f.read()
    except OSError as exc:
        raise InvalidSnapshotError(Problem("snapshot", f"cannot be read from {str(path)!r} ({exc.strerror})")) from None
    return loads_snapshot(data)


def as_snapshot(obj: Any) -> Snapshot:
    """Accept a snapshot object, a parsed-JSON dict, JSON text/bytes, or a path to a JSON file."""
    if getattr(obj, "kind", None) in ("consumer", "streams") and not isinstance(obj, dict):
        return obj
    if isinstance(obj, dict):
        return parse_snapshot(obj)
    if isinstance(obj, (bytes, bytearray)):
        return loads_snapshot(bytes(obj))
    if isinstance(obj, str) and obj.lstrip().startswith("{"):
        return loads_snapshot(obj)
    if isinstance(obj, (str, os.PathLike)):
        return load_snapshot(obj)
    raise InvalidSnapshotError(Problem("snapshot", f"must be a snapshot, a dict, JSON text or a path, not {type(obj).__name__}"))


def snapshot_to_json(snap: Snapshot) -> dict[str, Any]:
    """The snapshot as the spec's JSON object."""
    if snap.kind == "consumer":
        return consumer_to_json(snap)
    from .model.streams import streams_to_json

    return streams_to_json(snap)


def dumps_result(result: Any, *, indent: bool = True) -> bytes:
    """A result (or any JSON-able object) as UTF-8 JSON bytes."""
    obj = result.to_json() if hasattr(result, "to_json") else result
    return jsonio.dumps(obj, indent=indent)


def _short(exc: Exception) -> str:
    return str(exc).splitlines()[0][:200]
