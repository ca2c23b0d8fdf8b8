"""pandas frames of snapshots and results: one row per snapshot, or per snapshot and assignor.

The batch row (:data:`RESULT_COLUMNS`) is the same here, in the Spark adapter
and in ``stickyflow batch``'s Parquet output: ``id``, ``kind``, ``assignor``,
``source``, ``status``, ``method``, ``reason``, ``moves``, ``imbalance``,
``cross_rack``, the load columns (``peak_utilization``, ``peak_bound``,
``moved_load``, ``cross_rack_load``, ``overload``, ``overloaded`` and
``peak_ratio``: :mod:`stickyflow.adapters.load_rows`; null without rates),
``objective``, ``bound``, ``wall_s``,
``followup_rebalance_deadline_ms``, ``metrics`` (every metric, as JSON text),
``error`` and, on request, ``result`` (the whole result JSON).

A snapshot that cannot be solved is a row, not an exception: ``status`` is
``"invalid"`` (not JSON, or breaks the format: ``error`` names the field),
``"unsupported"`` (the assignor does not serve that kind, e.g. ``range`` for
Streams) or ``"error"`` (the assignor failed; the message says how), and the
numbers are null. Otherwise ``status`` is the solver's (``optimal``,
``feasible``, ``heuristic``, ``fallback``) and ``error`` is null.

>>> from stickyflow.datasets import suite
>>> frame = solve_frame(suite("kip")[:3] + ["{not json"], ["optimal", "range"])
>>> frame[["assignor", "status", "moves"]].head(2).to_dict("records")
[{'assignor': 'optimal', 'status': 'optimal', 'moves': 0}, {'assignor': 'range', 'status': 'heuristic', 'moves': 2}]
>>> frame["status"].tolist()[-2:], frame["error"].tolist()[-1][:30]
(['invalid', 'invalid'], 'snapshot: is not valid JSON (u')

pandas is imported inside the functions (install ``stickyflow[pandas]``);
:func:`solve_text` needs only the core, which is what Spark's workers run.
"""

from __future__ import annotations

import os
import time
from typing import Any, Iterable, Mapping, Sequence

from stickyflow.errors import BackendMissingError, InvalidSnapshotError, StickyflowError, UnknownAssignorError
from stickyflow.model import jsonio

from .load_rows import BATCH_LOAD_COLUMNS, load_fields, share_bound

__all__ = [
    "RESULT_COLUMNS",
    "SNAPSHOT_COLUMNS",
    "solve_text",
    "result_row",
    "error_rows",
    "snapshots_frame",
    "frame_snapshots",
    "results_frame",
    "frame_results",
    "solve_frame",
    "assignment_frame",
]

# name -> pandas dtype of a batch row (nullable, so that error rows fit); Spark and Parquet use the same names
RESULT_COLUMNS: dict[str, str] = {
    "id": "string",
    "kind": "string",
    "assignor": "string",
    "source": "string",
    "status": "string",
    "method": "string",
    "reason": "string",
    "moves": "Int64",
    "imbalance": "Float64",  # streams: tasks per thread, a fraction when clients have unequal threads
    "cross_rack": "Int64",
    **BATCH_LOAD_COLUMNS,  # balance by load: peak_utilization, ..., overloaded, peak_ratio (adapters/load_rows.py)
    "objective": "Float64",
    "bound": "Float64",
    "wall_s": "Float64",
    "followup_rebalance_deadline_ms": "Int64",
    "metrics": "string",
    "error": "string",
    "result": "string",
}
SNAPSHOT_COLUMNS: dict[str, str] = {"id": "string", "kind": "string", "source": "string", "snapshot": "string"}
ERROR_STATUSES = ("invalid", "unsupported", "error")


def _pd():
    try:
        import pandas as pd
    except ImportError:
        raise BackendMissingError("the pandas adapter needs pandas and pyarrow: pip install 'stickyflow[pandas]'") from None
    return pd


# --------------------------------------------------------------------------- rows (no pandas needed)

def result_row(result: Any, *, source: str | None = None, include_result: bool = False) -> dict[str, Any]:
    """The batch row of one :class:`stickyflow.AssignmentResult`."""
    m = result.metrics
    s = result.solver
    row = {
        "id": result.id,
        "kind": result.kind,
        "assignor": result.assignor,
        "source": source,
        "status": s.status,
        "method": s.method,
        "reason": s.reason,
        "moves": _int_or_none(m.get("moves")),
        "imbalance": _float_or_none(m.get("imbalance")),
        "cross_rack": _int_or_none(m.get("cross_rack")),
        **load_fields(m),
        "objective": _float_or_none(s.objective),
        "bound": _float_or_none(s.bound),
        "wall_s": float(s.wall_s),
        "followup_rebalance_deadline_ms": _int_or_none(result.followup_rebalance_deadline_ms),
        "metrics": jsonio.dumps(dict(m)).decode(),
        "error": None,
    }
    if include_result:
        row["result"] = jsonio.dumps(result.to_json()).decode()
    return row


def error_rows(message: str, assignors: Sequence[str], *, status: str = "invalid", id: str | None = None,
               kind: str | None = None, source: str | None = None, wall_s: float | None = None,
               include_result: bool = False) -> list[dict[str, Any]]:
    """One row per assignor for a snapshot that could not be solved (``status`` in ``invalid``, ``unsupported``, ``error``)."""
    base = dict.fromkeys(RESULT_COLUMNS)
    if not include_result:
        del base["result"]
    base.update(id=id, kind=kind, source=source, status=status, error=message, wall_s=wall_s)
    return [dict(base, assignor=a) for a in assignors]


def solve_text(text: str | bytes | Mapping[str, Any], assignors: Sequence[str], *, source: str | None = None,
               time_limit: float | None = None, seed: int = 0, num_workers: int | None = None,
               include_result: bool = False) -> list[dict[str, Any]]:
    """Solve one snapshot (JSON text or a parsed dict) with every assignor; one row each, never raising for bad input.

    >>> rows = solve_text('{"format": "stickyflow.snapshot/1", "kind": "consumer", "topics": {}, "members": 3}',
    ...                   ["optimal"], source="x.jsonl:1")
    >>> rows[0]["status"], rows[0]["error"]
    ('invalid', 'members: must be an array')
    """
    import stickyflow

    t0 = time.perf_counter()
    doc: Any = text
    if isinstance(text, (str, bytes)):
        try:
            doc = jsonio.loads(text)
        except ValueError as exc:
            return error_rows(f"snapshot: is not valid JSON ({str(exc).splitlines()[0][:120]}; starts {_excerpt(text)})",
                              assignors, source=source, wall_s=time.perf_counter() - t0, include_result=include_result)
    ident, kind = _id_kind(doc)
    try:
        snap = stickyflow.parse_snapshot(doc)
    except InvalidSnapshotError as exc:
        return error_rows(str(exc), assignors, id=ident, kind=kind, source=source, wall_s=time.perf_counter() - t0,
                          include_result=include_result)
    rows: list[dict[str, Any]] = []
    for name in assignors:
        if name.startswith("plan:"):  # a plan method: stickyflow.adapters.plan_rows
            from .plan_rows import plan_batch_row

            rows.append(plan_batch_row(snap, name, source=source, time_limit=time_limit, seed=seed,
                                       num_workers=num_workers, include_result=include_result))
            continue
        t1 = time.perf_counter()
        try:
            result = stickyflow.assign(snap, name, time_limit=time_limit, seed=seed, num_workers=num_workers)
        except UnknownAssignorError as exc:
            rows += error_rows(str(exc), [name], status="unsupported", id=snap.id, kind=snap.kind, source=source,
                               wall_s=0.0, include_result=include_result)
            continue
        except Exception as exc:  # one bad snapshot must not stop a batch of thousands
            status = "invalid" if isinstance(exc, InvalidSnapshotError) else "error"
            detail = str(exc) if isinstance(exc, StickyflowError) else f"{type(exc).__name__}: {exc}"
            rows += error_rows(detail.splitlines()[0] if detail else type(exc).__name__, [name], status=status,
                               id=snap.id, kind=snap.kind, source=source, wall_s=time.perf_counter() - t1,
                               include_result=include_result)
            continue
        rows.append(result_row(result, source=source, include_result=include_result))
    return share_bound(rows)  # every assignor's peak against the snapshot's best proven bound


def _id_kind(doc: Any) -> tuple[str | None, str | None]:
    if not isinstance(doc, dict):
        return None, None
    ident, kind = doc.get("id"), doc.get("kind")
    return (ident if isinstance(ident, str) else None, kind if isinstance(kind, str) else None)


def _excerpt(text: str | bytes, n: int = 40) -> str:
    s = text.decode("utf-8", errors="replace") if isinstance(text, bytes) else text
    s = " ".join(s.split())
    return repr(s[:n] + ("..." if len(s) > n else ""))


def _int_or_none(v: Any) -> int | None:
    return None if v is None else int(v)


def _float_or_none(v: Any) -> float | None:
    return None if v is None else float(v)


# --------------------------------------------------------------------------- frames

def typed_frame(rows: list[dict[str, Any]], columns: Mapping[str, str]):
    """A frame with exactly ``columns`` and their nullable dtypes (pandas 3's default ``str`` dtype
    turns missing text into NaN; the ``string`` dtype keeps ``<NA>``, and Arrow sees plain strings)."""
    pd = _pd()
    data = {c: pd.array([r.get(c) for r in rows], dtype=dt) for c, dt in columns.items()}
    return pd.DataFrame(data, columns=list(columns))


def snapshots_frame(snapshots: Iterable[Any]):
    """A frame with one row per snapshot: ``id``, ``kind``, ``source`` and the JSON text in ``snapshot``.

    ``snapshots`` may hold whatever :func:`stickyflow.assign` takes (spec dicts,
    snapshot objects, JSON text, paths: the path becomes ``source``) or
    :class:`stickyflow.datasets.Record` s (their ``source`` is kept).

    >>> from stickyflow.datasets import suite
    >>> snapshots_frame(suite("kip"))["kind"].value_counts().to_dict()
    {'consumer': 6, 'streams': 5}
    """
    from stickyflow.datasets.io import Record, as_row

    rows = []
    for s in snapshots:
        source = None
        if isinstance(s, Record):
            source, s = s.source, s.text
        elif isinstance(s, os.PathLike) or (isinstance(s, str) and not s.lstrip().startswith(("{", "["))):
            source = str(s)
        text, ident, kind = as_row(s)
        rows.append({"id": ident, "kind": kind, "source": source,
                     "snapshot": text.decode() if isinstance(text, bytes) else text})
    return typed_frame(rows, SNAPSHOT_COLUMNS)


def frame_snapshots(frame: Any, *, column: str = "snapshot") -> list[dict[str, Any]]:
    """The snapshots of a frame's JSON text column as spec dicts (the inverse of :func:`snapshots_frame`).

    A row that is not JSON raises :class:`InvalidSnapshotError` naming its row.
    """
    from stickyflow.errors import Problem

    out = []
    for i, text in enumerate(frame[column].tolist()):
        try:
            out.append(jsonio.loads(text))
        except (ValueError, TypeError) as exc:
            raise InvalidSnapshotError(Problem(f"{column}[{i}]", f"is not valid JSON ({str(exc)[:120]})")) from None
    return out


def results_frame(results: Iterable[Any], *, include_result: bool = False):
    """A frame with one row per :class:`stickyflow.AssignmentResult` (the batch row).

    >>> import stickyflow
    >>> from stickyflow.datasets import suite
    >>> snap = suite("kip")[2]
    >>> f = results_frame([stickyflow.assign(snap, a) for a in ("optimal", "roundrobin")])
    >>> f[["assignor", "moves", "imbalance"]].to_dict("records")
    [{'assignor': 'optimal', 'moves': 1, 'imbalance': 1.0}, {'assignor': 'roundrobin', 'moves': 2, 'imbalance': 1.0}]
    """
    rows = [result_row(r, include_result=include_result) for r in results]
    return typed_frame(rows, result_columns(include_result))


def frame_results(frame: Any) -> list[dict[str, Any] | None]:
    """The result JSON of every row of a frame made with ``include_result=True`` (None for error rows)."""
    if "result" not in frame.columns:
        raise ValueError("frame: has no 'result' column (make it with include_result=True)")
    pd = _pd()
    return [None if v is None or v is pd.NA or (isinstance(v, float) and v != v) else jsonio.loads(v)
            for v in frame["result"].tolist()]


def solve_frame(snapshots: Any, assignors: Sequence[str] = ("optimal", "sticky"), *, column: str = "snapshot",
                time_limit: float | None = None, seed: int = 0, num_workers: int | None = None,
                include_result: bool = False):
    """Solve every snapshot with every assignor, in this process; one batch row per pair.

    ``snapshots`` is a frame with a JSON text column (``column``, and
    ``source`` if present), or any iterable :func:`snapshots_frame` accepts.
    Bad snapshots become rows with ``status`` ``"invalid"`` and the reason in ``error``.
    """
    pd = _pd()
    assignors = assignor_list(assignors)
    if isinstance(snapshots, pd.DataFrame):
        texts = snapshots[column].tolist()
        sources = snapshots["source"].tolist() if "source" in snapshots.columns else [None] * len(texts)
    else:
        frame = snapshots_frame(snapshots)
        texts, sources = frame["snapshot"].tolist(), frame["source"].tolist()
    rows: list[dict[str, Any]] = []
    for text, source in zip(texts, sources):
        if text is None or text is pd.NA or (isinstance(text, float) and text != text):
            rows += error_rows(f"{column}: is missing (null)", assignors, source=_text_or_none(source),
                               include_result=include_result)
            continue
        rows += solve_text(text, assignors, source=_text_or_none(source), time_limit=time_limit, seed=seed,
                           num_workers=num_workers, include_result=include_result)
    return typed_frame(rows, result_columns(include_result))


def assignment_frame(result: Any):
    """Who gets what, one row per assigned item: the table to filter, join and plot.

    Consumer groups: ``member``, ``topic``, ``partition`` and ``this_round``
    (false for a partition a cooperative round withholds until its owner has
    revoked it: it is in ``result.target`` but in nobody's ``assignment`` yet).
    Streams: ``client``, ``task`` and ``role`` (``active``, ``standby``, ``warmup``).

    >>> import stickyflow
    >>> from stickyflow.datasets import suite
    >>> f = assignment_frame(stickyflow.assign(suite("kip")[2]))
    >>> f.groupby("member")["partition"].count().to_dict()
    {'C0': 2, 'C1': 1, 'C2': 1}
    """
    import numpy as np

    pd = _pd()
    if result.kind == "streams":
        rows = [(pid, tid, role) for pid, ca in result.assignment.items()
                for role in ("active", "standby", "warmup") for tid in getattr(ca, role)]
        frame = pd.DataFrame(rows, columns=["client", "task", "role"])
        return frame.astype({"client": "string", "task": "string", "role": "string"})
    whole = result.target if result.target is not None else result.assignment
    members, topics, parts, now = [], [], [], []
    for member, by_topic in whole.items():
        given = result.assignment.get(member, {})
        for topic, ps in by_topic.items():
            arr = np.asarray(ps, dtype=np.int64)
            members.append(np.full(len(arr), member, dtype=object))
            topics.append(np.full(len(arr), topic, dtype=object))
            parts.append(arr)
            now.append(np.isin(arr, np.asarray(given.get(topic, ()), dtype=np.int64)))
    cat = (lambda xs, dt: np.concatenate(xs) if xs else np.array([], dtype=dt))
    return pd.DataFrame({"member": pd.array(cat(members, object), dtype="string"),
                         "topic": pd.array(cat(topics, object), dtype="string"),
                         "partition": cat(parts, np.int64), "this_round": cat(now, bool)})


def result_columns(include_result: bool) -> dict[str, str]:
    """:data:`RESULT_COLUMNS`, without ``result`` unless ``include_result``."""
    cols = dict(RESULT_COLUMNS)
    if not include_result:
        del cols["result"]
    return cols


def _text_or_none(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def assignor_list(assignors: str | Sequence[str]) -> list[str]:
    """The assignor names of ``"a,b"`` or a sequence, stripped and without repeats; ValueError when none.

    >>> assignor_list("optimal, sticky,optimal")
    ['optimal', 'sticky']
    """
    names = [a.strip() for a in assignors.split(",")] if isinstance(assignors, str) else [str(a) for a in assignors]
    names = [a for a in names if a]
    if not names:
        raise ValueError("assignors: name at least one assignor")
    return list(dict.fromkeys(names))
