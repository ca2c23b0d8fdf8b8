"""Datasets of snapshots on disk: a folder of JSON files, a JSON Lines file, or Parquet (one snapshot per row).

Reading yields :class:`Record` s, the raw JSON text of each snapshot with where
it came from, *unparsed*: a dataset may hold broken snapshots, and a batch
turns each into an error row instead of failing (:func:`load_dataset` parses
and raises instead). In Parquet the JSON text is in a string column,
``snapshot`` by default, next to ``id`` and ``kind`` for filtering.

>>> import tempfile, os
>>> from stickyflow.datasets import consumer_snapshot
>>> docs = [consumer_snapshot("fresh", partitions=4, members=2, seed=s) for s in range(3)]
>>> with tempfile.TemporaryDirectory() as tmp:
...     path = write_dataset(docs, os.path.join(tmp, "three.jsonl"))
...     [r.source for r in read_dataset(path)]
['three.jsonl:1', 'three.jsonl:2', 'three.jsonl:3']
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

from stickyflow.errors import BackendMissingError, InvalidSnapshotError, Problem
from stickyflow.model import jsonio

__all__ = [
    "FORMATS",
    "SNAPSHOT_COLUMN",
    "Record",
    "dataset_format",
    "read_dataset",
    "load_dataset",
    "write_dataset",
    "peek_id_kind",
]

FORMATS = ("json", "jsonl", "parquet")
SNAPSHOT_COLUMN = "snapshot"
_JSONL_SUFFIXES = (".jsonl", ".ndjson")
_PARQUET_SUFFIXES = (".parquet", ".pq")


@dataclass(frozen=True, slots=True, kw_only=True)
class Record:
    """One snapshot of a dataset as stored: ``text`` (JSON, not yet parsed) and ``source``.

    ``source`` says where it came from: ``"name.json"`` for a file of a folder,
    ``"name.jsonl:LINE"`` (1-based) for JSON Lines, ``"part.parquet#ROW"`` (0-based) for Parquet.
    """

    source: str
    text: str


def dataset_format(path: str | os.PathLike) -> str:
    """``"json"`` (a folder of ``*.json`` files, or one file), ``"jsonl"`` or ``"parquet"``, from the path.

    A folder holding ``*.parquet`` files (a Spark-written dataset) is Parquet.
    """
    p = Path(path)
    name = p.name.lower()
    if name.endswith(_JSONL_SUFFIXES):
        return "jsonl"
    if name.endswith(_PARQUET_SUFFIXES) and not p.is_dir():
        return "parquet"
    if p.is_dir():
        if any(f.name.lower().endswith(_PARQUET_SUFFIXES) for f in _parquet_files(p)):
            return "parquet"
        return "json"
    if name.endswith(".json"):
        return "json"
    if name.endswith(_PARQUET_SUFFIXES):
        return "parquet"
    raise InvalidSnapshotError(Problem("dataset", f"cannot tell the format of {str(path)!r}: use a folder of "
                                                  f".json files, a .jsonl file or a .parquet file or folder"))


def read_dataset(path: str | os.PathLike, *, column: str = SNAPSHOT_COLUMN) -> Iterator[Record]:
    """Every snapshot of the dataset at ``path``, raw, in a stable order (files sorted by name).

    Blank lines of a JSON Lines file are skipped; a line that is not JSON is
    still yielded (its parse will fail where it is used).
    """
    p = Path(path)
    if not p.exists():
        raise InvalidSnapshotError(Problem("dataset", f"{str(path)!r} does not exist"))
    fmt = dataset_format(p)
    if fmt == "jsonl":
        yield from _read_jsonl(p)
    elif fmt == "json":
        files = [p] if p.is_file() else sorted(f for f in p.iterdir() if f.is_file() and f.name.lower().endswith(".json"))
        base = p if p.is_dir() else p.parent
        for f in files:
            yield Record(source=str(f.relative_to(base)), text=f.read_bytes().decode("utf-8", errors="replace"))
    else:
        yield from _read_parquet(p, column)


def load_dataset(path: str | os.PathLike, *, column: str = SNAPSHOT_COLUMN) -> list[dict[str, Any]]:
    """Every snapshot of the dataset as a parsed JSON dict; a record that is not JSON raises
    :class:`InvalidSnapshotError` naming its source. (Validation is :func:`stickyflow.parse_snapshot`'s job.)"""
    out = []
    for rec in read_dataset(path, column=column):
        try:
            out.append(jsonio.loads(rec.text))
        except ValueError as exc:
            raise InvalidSnapshotError(Problem(rec.source, f"is not valid JSON ({str(exc).splitlines()[0][:120]})")) from None
    return out


def write_dataset(snapshots: Iterable[Any], path: str | os.PathLike, *, format: str | None = None,
                  column: str = SNAPSHOT_COLUMN, row_group_size: int = 1024) -> Path:
    """Write snapshots (spec dicts, snapshot objects or JSON text) as a dataset; returns the path.

    ``format`` defaults from the path: ``*.jsonl`` -> JSON Lines, ``*.parquet`` ->
    one Parquet file, else a folder of JSON files named after the ids (or the
    position). Parquet rows carry ``id``, ``kind`` and the JSON text in ``column``.
    """
    p = Path(path)
    if format is None:
        name = p.name.lower()
        format = ("jsonl" if name.endswith(_JSONL_SUFFIXES) else
                  "parquet" if name.endswith(_PARQUET_SUFFIXES) else "json")
    if format not in FORMATS:
        raise ValueError(f"format: {format!r} is not one of {', '.join(FORMATS)}")
    rows = (as_row(s) for s in snapshots)
    if format == "jsonl":
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(p.name + ".tmp")
        with open(tmp, "wb") as fh:
            for text, _, _ in rows:
                fh.write(text.encode() if isinstance(text, str) else text)
                fh.write(b"\n")
        os.replace(tmp, p)
    elif format == "json":
        p.mkdir(parents=True, exist_ok=True)
        width = 6
        used: set[str] = set()
        for i, (text, ident, _) in enumerate(rows):
            stem = _safe_name(ident) if ident else f"snapshot-{i:0{width}d}"
            if stem in used:
                stem = f"{stem}-{i:0{width}d}"
            used.add(stem)
            (p / f"{stem}.json").write_bytes(text.encode() if isinstance(text, str) else text)
    else:
        pa, pq = _pyarrow()
        p.parent.mkdir(parents=True, exist_ok=True)
        ids, kinds, cols = [], [], []
        for text, ident, kind in rows:
            t = text.decode() if isinstance(text, bytes) else text
            ids.append(ident)
            kinds.append(kind)
            cols.append(t)
        table = pa.table({"id": pa.array(ids, pa.string()), "kind": pa.array(kinds, pa.string()),
                          column: pa.array(cols, pa.large_string())})
        if p.is_dir() or not p.name.lower().endswith(_PARQUET_SUFFIXES):
            p.mkdir(parents=True, exist_ok=True)
            p = p / "part-00000.parquet"
        tmp = p.with_name(p.name + ".tmp")
        pq.write_table(table, tmp, row_group_size=row_group_size)
        os.replace(tmp, p)
        if p.name == "part-00000.parquet":
            p = p.parent
    return p


def peek_id_kind(text: str | bytes) -> tuple[str | None, str | None]:
    """The ``id`` and ``kind`` of a snapshot's JSON text, or None for either when absent, not text, or not JSON."""
    try:
        doc = jsonio.loads(text)
    except ValueError:
        return None, None
    if not isinstance(doc, dict):
        return None, None
    ident, kind = doc.get("id"), doc.get("kind")
    return (ident if isinstance(ident, str) else None, kind if isinstance(kind, str) else None)


# --------------------------------------------------------------------------- helpers

def as_row(s: Any) -> tuple[str | bytes, str | None, str | None]:
    """(JSON text, id, kind) of a snapshot given as text, a path, a dict or a snapshot object.

    As in :func:`stickyflow.as_snapshot`: a string that starts with ``{`` (or ``[``, JSON that is no
    snapshot, kept so its row can say so) is JSON text, any other string (or a ``Path``) names a file,
    which is read here.
    """
    if isinstance(s, os.PathLike) or (isinstance(s, str) and not s.lstrip().startswith(("{", "["))):
        try:
            s = Path(s).read_bytes()
        except OSError as exc:
            raise InvalidSnapshotError(Problem("snapshot", f"cannot be read from {str(s)!r} ({exc.strerror})")) from None
    if isinstance(s, (str, bytes)):
        return (s, *peek_id_kind(s))
    if not isinstance(s, dict):
        from stickyflow.snapshot import snapshot_to_json

        s = snapshot_to_json(s)
    ident, kind = s.get("id"), s.get("kind")
    return (jsonio.dumps(s), ident if isinstance(ident, str) else None, kind if isinstance(kind, str) else None)


def _safe_name(ident: str) -> str:
    keep = "".join(c if c.isalnum() or c in "-_." else "_" for c in ident)
    return keep.strip("._")[:120] or "snapshot"


def _read_jsonl(p: Path) -> Iterator[Record]:
    with open(p, "rb") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            yield Record(source=f"{p.name}:{n}", text=line.decode("utf-8", errors="replace").rstrip("\r\n"))


def _parquet_files(p: Path) -> list[Path]:
    return sorted(f for f in p.rglob("*") if f.is_file() and not f.name.startswith(("_", "."))
                  and f.name.lower().endswith(_PARQUET_SUFFIXES))


def _read_parquet(p: Path, column: str) -> Iterator[Record]:
    _, pq = _pyarrow()
    files = _parquet_files(p) if p.is_dir() else [p]
    for f in files:
        pf = pq.ParquetFile(f)
        names = pf.schema_arrow.names
        col = _text_column(names, column, pf.schema_arrow, f)
        name = str(f.relative_to(p)) if p.is_dir() else f.name
        row = 0
        for batch in pf.iter_batches(columns=[col], batch_size=1024):
            for text in batch.column(0).to_pylist():
                yield Record(source=f"{name}#{row}", text=text if text is not None else "")
                row += 1


def _text_column(names: list[str], column: str, schema: Any, f: Path) -> str:
    if column in names:
        return column
    import pyarrow as pa

    strings = [n for n in names if pa.types.is_string(schema.field(n).type) or pa.types.is_large_string(schema.field(n).type)]
    text_cols = [n for n in strings if n not in ("id", "kind", "source")]
    if len(text_cols) == 1:
        return text_cols[0]
    raise InvalidSnapshotError(Problem("dataset", f"{f.name} has no {column!r} column with the snapshot JSON "
                                                  f"(columns: {', '.join(names)})"))


def _pyarrow():
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise BackendMissingError("Parquet datasets need pyarrow: pip install 'stickyflow[pandas]'") from None
    return pa, pq
