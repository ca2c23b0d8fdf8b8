"""Tables and plots: a batch's results per assignor, the traffic-against-moves Pareto front, simulations.

* :func:`summary_table` turns a batch output (one row per snapshot and
  assignor: ``id``, ``kind``, ``assignor``, ``moves``, ``imbalance``,
  ``cross_rack``, ``status``, ``wall_s``, ``error``, and size columns when
  present) into one row per kind and assignor.
* :func:`plot_metrics` draws moves, imbalance, cross-rack reads and solve time
  per assignor; :func:`plot_time_vs_size` the solve time against the size.
* :func:`pareto_sweep` re-solves a set of snapshots with racks while sweeping
  the ratio ``traffic_cost / non_overlap_cost`` (rewriting each snapshot's
  config), and :func:`plot_pareto` draws total cross-rack reads against total
  moves, the optimizer's points joined in ratio order, the greedy ones marked.
* :func:`plot_simulation` draws a :mod:`stickyflow.datasets.simulator` run
  round by round.
* :func:`write_report` and :func:`write_simulation_report` write the PNGs, CSV
  tables and one self-contained HTML page (PNGs embedded as data URIs).

pandas and matplotlib are imported on first use (``pip install stickyflow[plots]``);
matplotlib runs on its Agg backend, so no display is needed.

>>> import pandas as pd
>>> frame = pd.DataFrame({"id": ["a", "a"], "kind": "consumer", "assignor": ["optimal", "range"],
...                       "moves": [0, 3], "imbalance": [0, 2], "cross_rack": [1, 4],
...                       "status": ["optimal", "heuristic"], "wall_s": [0.01, 0.001], "error": None})
>>> summary_table(frame)[["assignor", "moves_total", "imbalance_max"]].to_dict("records")
[{'assignor': 'optimal', 'moves_total': 0, 'imbalance_max': 0}, {'assignor': 'range', 'moves_total': 3, 'imbalance_max': 2}]
"""

from __future__ import annotations

import base64
import html
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from stickyflow.errors import BackendMissingError, InvalidSnapshotError, Problem

__all__ = [
    "DEFAULT_RATIOS",
    "BATCH_COLUMNS",
    "GREEDY",
    "load_batch",
    "summary_table",
    "plot_metrics",
    "plot_time_vs_size",
    "pareto_snapshots",
    "read_snapshots",
    "has_racks",
    "with_cost_ratio",
    "pareto_sweep",
    "pareto_front",
    "plot_pareto",
    "plot_simulation",
    "html_page",
    "Report",
    "write_report",
    "write_simulation_report",
]

DEFAULT_RATIOS = (0.0, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 100.0)
BATCH_COLUMNS = ("id", "kind", "assignor", "moves", "imbalance", "cross_rack", "status", "wall_s", "error")
GREEDY = ("sticky", "range", "roundrobin")
STATUSES = ("optimal", "feasible", "heuristic", "fallback")
UNKNOWN = "(unknown)"  # the kind (or assignor) of an error row that has none, e.g. for input that is not JSON
SUMMARY_COLUMNS = ("kind", "assignor", "snapshots", "solved", "errors") + STATUSES + (
    "moves_total", "moves_mean", "imbalance_mean", "imbalance_max", "cross_rack_total", "cross_rack_mean",
    "wall_s_mean", "wall_s_p50", "wall_s_p95", "wall_s_max")
_SCALE = 10  # non_overlap_cost in the sweep: ratios with one decimal stay exact integers
_SIZE_COLUMNS = {"consumer": ("partitions", "num_partitions", "n_partitions"),
                 "streams": ("tasks", "num_tasks", "n_tasks")}


# --------------------------------------------------------------------------- optional backends

def _pandas():
    try:
        import pandas as pd
    except ImportError as exc:  # pragma: no cover - exercised only without pandas
        raise BackendMissingError("reports need pandas: pip install 'stickyflow[plots]'") from exc
    return pd


def _pyplot():
    """matplotlib's pyplot on the Agg backend, or :class:`BackendMissingError` naming ``stickyflow[plots]``."""
    try:
        import matplotlib
    except ImportError as exc:
        raise BackendMissingError("plots need matplotlib: pip install 'stickyflow[plots]'") from exc
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: str | Path | None) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    import matplotlib.pyplot as plt

    plt.close(fig)
    data = buf.getvalue()
    if path is not None:
        Path(path).write_bytes(data)
    return data


# --------------------------------------------------------------------------- the batch table

def load_batch(source: Any):
    """A batch output as a pandas DataFrame: a Parquet file or dataset folder, a CSV or JSON Lines file, or a frame.

    Missing optional columns are added (empty); a missing required column is an
    :class:`InvalidSnapshotError` naming it. A row without a ``kind`` or
    ``assignor`` (an error row for input that is not JSON, say) gets
    ``"(unknown)"`` there, so that it is still counted.
    """
    pd = _pandas()
    if isinstance(source, pd.DataFrame):
        frame = source.copy()
    else:
        path = Path(source)
        if not path.exists():
            raise InvalidSnapshotError(Problem("batch", f"{str(path)!r} does not exist"))
        try:
            if path.is_file() and path.suffix == ".csv":
                frame = pd.read_csv(path)
            elif path.is_file() and path.suffix in (".jsonl", ".ndjson"):
                frame = pd.read_json(path, lines=True)
            else:
                frame = pd.read_parquet(path)
        except pd.errors.EmptyDataError:  # an empty CSV file: an empty batch
            frame = pd.DataFrame()
        except (ValueError, OSError) as exc:  # pyarrow's errors are ValueError / OSError too
            raise InvalidSnapshotError(Problem("batch", f"{str(path)!r} cannot be read as a batch output "
                                                        f"({type(exc).__name__}: {str(exc).splitlines()[0][:200]})"))
    missing = [c for c in ("kind", "assignor") if c not in frame.columns]
    if missing and len(frame):
        raise InvalidSnapshotError(Problem(f"batch.{missing[0]}", "is a required column of a batch output"))
    for c in BATCH_COLUMNS:
        if c not in frame.columns:
            frame[c] = None
    for c in ("moves", "imbalance", "cross_rack", "wall_s"):
        frame[c] = pd.to_numeric(frame[c], errors="coerce")
    for c in ("kind", "assignor"):
        # not astype(str): on pandas 3 a string column keeps its missing values missing, and groupby drops them
        frame[c] = pd.Series([UNKNOWN if _missing(v) else str(v) for v in frame[c].tolist()], index=frame.index,
                             dtype=object)
    frame["size"] = _size_column(frame)
    return frame


def _missing(v: Any) -> bool:
    if v is None or (isinstance(v, str) and not v):
        return True
    try:
        return bool(_pandas().isna(v))
    except (TypeError, ValueError):
        return False


def _size_column(frame):
    pd = _pandas()
    if "size" in frame.columns:
        return pd.to_numeric(frame["size"], errors="coerce")
    size = pd.Series(float("nan"), index=frame.index)
    for kind, names in _SIZE_COLUMNS.items():
        for name in names:
            if name in frame.columns:
                rows = (frame["kind"] == kind) & size.isna()
                size[rows] = pd.to_numeric(frame.loc[rows, name], errors="coerce")
    if "metrics" in frame.columns and size.isna().any():  # the batch keeps every metric as JSON text
        from stickyflow import _jsonio

        for i in frame.index[size.isna()]:
            text = frame.at[i, "metrics"]
            if not isinstance(text, str) or not text:
                continue
            try:
                m = _jsonio.loads(text)
            except ValueError:
                continue
            value = m.get("partitions") if frame.at[i, "kind"] == "consumer" else m.get("tasks")
            if isinstance(value, (int, float)):
                size[i] = value
    return size


def _ok(frame):
    """Rows that were solved: no error text."""
    err = frame["error"]
    return frame[err.isna() | (err.astype(str).str.len() == 0)]


def summary_table(frame):
    """One row per kind and assignor: counts, statuses, moves, imbalance, cross-rack reads, solve times.

    Totals and means are over solved rows only (``error`` empty); ``cross_rack``
    sums are empty where no snapshot had racks. An assignor that does not serve
    a kind at all (every row ``"unsupported"``) gets no row for it. Error rows
    without a kind count under kind ``"(unknown)"``. An empty batch gives an
    empty table (with the columns).
    """
    pd = _pandas()
    frame = frame if "size" in frame.columns else load_batch(frame)
    rows = []
    for (kind, assignor), g in frame.groupby(["kind", "assignor"], sort=True, dropna=False):
        if len(g) and (g["status"].astype(str) == "unsupported").all():
            continue  # e.g. range on Streams snapshots: not a comparison, just a name the batch was given
        ok = _ok(g)
        status = ok["status"].astype(str)
        cross = ok["cross_rack"].dropna()
        wall = ok["wall_s"].dropna()
        row: dict[str, Any] = {
            "kind": kind, "assignor": assignor, "snapshots": int(len(g)), "solved": int(len(ok)),
            "errors": int(len(g) - len(ok)),
        }
        for s in STATUSES:
            row[s] = int((status == s).sum())
        row.update({
            "moves_total": _int(ok["moves"].sum()), "moves_mean": _num(ok["moves"].mean()),
            "imbalance_mean": _num(ok["imbalance"].mean()), "imbalance_max": _intish(ok["imbalance"].max()),
            "cross_rack_total": _int(cross.sum()) if len(cross) else None,
            "cross_rack_mean": _num(cross.mean()) if len(cross) else None,
            "wall_s_mean": _num(wall.mean()), "wall_s_p50": _num(wall.median()),
            "wall_s_p95": _num(wall.quantile(0.95)) if len(wall) else None, "wall_s_max": _num(wall.max()),
        })
        rows.append(row)
    return pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))


def _num(x) -> float | None:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) else x


def _intish(x) -> int | float | None:
    """An int where the value is whole (loads), else the float (Streams' active tasks per thread)."""
    x = _num(x)
    return None if x is None else (int(x) if x == int(x) else x)


def _int(x) -> int | None:
    x = _num(x)
    return None if x is None else int(round(x))


def _labels(frame) -> list[tuple[str, str]]:
    return sorted({(k, a) for k, a in zip(frame["kind"], frame["assignor"])})


def plot_metrics(frame, path: str | Path | None = None) -> bytes:
    """Four panels, one bar per kind and assignor: mean moves, mean imbalance, total cross-rack reads, mean solve time.

    Returns the PNG bytes (and writes them to ``path`` when given).
    """
    plt = _pyplot()
    table = summary_table(frame)
    names = [f"{k}\n{a}" for k, a in zip(table["kind"], table["assignor"])]
    colors = [_color(a) for a in table["assignor"]]
    panels = [("moves_mean", "moves (mean per snapshot)"), ("imbalance_mean", "imbalance (mean)"),
              ("cross_rack_total", "cross-rack reads (total)"), ("wall_s_mean", "solve time, s (mean)")]
    fig, axes = plt.subplots(2, 2, figsize=(max(8, 1.3 * len(names) + 4), 7))
    for ax, (col, title) in zip(axes.flat, panels):
        values = [0.0 if v is None or (isinstance(v, float) and math.isnan(v)) else float(v) for v in table[col]]
        ax.bar(range(len(names)), values, color=colors)
        ax.set_xticks(range(len(names)), names, fontsize=8)
        ax.set_title(title, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        if col == "wall_s_mean" and values and max(values) > 0 and min(v for v in values if v > 0) * 100 < max(values):
            ax.set_yscale("log")
    if not len(names):
        for ax in axes.flat:
            ax.text(0.5, 0.5, "no solved rows", ha="center", va="center", transform=ax.transAxes)
    fig.suptitle("Per assignor", fontsize=12)
    fig.tight_layout()
    return _save(fig, path)


def plot_time_vs_size(frame, path: str | Path | None = None) -> bytes:
    """Solve time against size (partitions for consumer groups, tasks for Streams), log-log, one series per assignor."""
    plt = _pyplot()
    frame = frame if "size" in frame.columns else load_batch(frame)
    ok = _ok(frame)
    ok = ok[ok["size"].notna() & ok["wall_s"].notna() & (ok["wall_s"] > 0) & (ok["size"] > 0)]
    fig, ax = plt.subplots(figsize=(7.5, 5))
    markers = {"consumer": "o", "streams": "s"}
    for kind, assignor in _labels(ok):
        g = ok[(ok["kind"] == kind) & (ok["assignor"] == assignor)]
        ax.scatter(g["size"], g["wall_s"], s=18, alpha=0.75, marker=markers.get(kind, "^"), color=_color(assignor),
                   label=f"{assignor} ({kind})")
    if len(ok):
        # log axes only where the values span enough for them to help
        if ok["size"].max() >= 20 * ok["size"].min():
            ax.set_xscale("log")
        if ok["wall_s"].max() >= 20 * ok["wall_s"].min():
            ax.set_yscale("log")
        ax.legend(fontsize=8)
    else:
        ax.text(0.5, 0.5, "no size columns (partitions / tasks) in the batch output",
                ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("size (partitions or tasks)")
    ax.set_ylabel("solve time, s")
    ax.set_title("Solve time against size")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return _save(fig, path)


_PALETTE = {"optimal": "#1f77b4", "sticky": "#ff7f0e", "range": "#2ca02c", "roundrobin": "#d62728"}
_EXTRA = ("#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")


def _color(name: str) -> str:
    base = name.split(" ")[0]
    if base in _PALETTE:
        return _PALETTE[base]
    return _EXTRA[sum(map(ord, name)) % len(_EXTRA)]


# --------------------------------------------------------------------------- the Pareto sweep

def pareto_snapshots(count: int = 12, seed: int = 0) -> list[dict[str, Any]]:
    """``count`` seeded rack-aware consumer-group snapshots where traffic and moves pull apart.

    Every group has three racks, partitions with two replicas, members with
    racks, previous owners placed without regard to racks, and a member that
    just joined or left, so balance forces moves and keeping a partition may
    mean reading it from another rack.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    racks = ["r0", "r1", "r2"]
    out = []
    for k in range(count):
        topics = {}
        for t in range(int(rng.integers(1, 4))):
            n = int(rng.integers(6, 30))
            topics[f"t{t}"] = {"partitions": n, "racks": [sorted(rng.choice(racks, 2, replace=False).tolist())
                                                         for _ in range(n)]}
        names = list(topics)
        n_members = int(rng.integers(3, 8))
        owners = {t: rng.integers(0, n_members, topics[t]["partitions"]) for t in names}
        members = []
        for i in range(n_members):
            owned = {t: np.flatnonzero(owners[t] == i).tolist() for t in names}
            members.append({"id": f"m{i}", "subscription": names, "rack": racks[int(rng.integers(0, 3))],
                            "generation": 1, "owned": {t: p for t, p in owned.items() if p}})
        if rng.random() < 0.5:
            members.append({"id": f"m{n_members}", "subscription": names, "rack": racks[int(rng.integers(0, 3))]})
        else:
            members.pop(int(rng.integers(0, n_members)))
        out.append({"format": "stickyflow.snapshot/1", "kind": "consumer", "id": f"pareto-{seed}-{k}",
                    "topics": topics, "members": members})
    return out


def read_snapshots(source: Any) -> list[Any]:
    """Snapshots from a dataset (a folder of JSON files, a JSON Lines file, a Parquet file or folder with a
    ``snapshot`` column: :func:`stickyflow.datasets.io.read_dataset`), ``suite:NAME`` (a bundled suite), or a list.

    Items that are not valid snapshots are skipped: a report is not the place to fail on one bad row.
    """
    import stickyflow
    from stickyflow import _jsonio

    if isinstance(source, (list, tuple)):
        items = list(source)
    elif isinstance(source, str) and source.startswith("suite:"):
        items = _suite(source[len("suite:"):])
    else:
        from stickyflow.datasets.io import read_dataset

        items = [rec.text for rec in read_dataset(source)]
    out = []
    for item in items:
        try:
            if isinstance(item, (bytes, str)):
                item = _jsonio.loads(item)
            out.append(stickyflow.as_snapshot(item))
        except (InvalidSnapshotError, ValueError):
            continue
    return out


def _suite(name: str) -> list[Any]:
    from stickyflow.datasets.suites import SUITES, suite

    if name not in SUITES:
        raise InvalidSnapshotError(Problem("pareto-input", f"{name!r} is not a suite (known: {', '.join(SUITES)})"))
    return suite(name)


def has_racks(snapshot: Any) -> bool:
    """Whether cross-rack reads can be counted: racks known on both sides (members or clients, and partitions)."""
    if snapshot.kind == "consumer":
        return any(m.rack is not None for m in snapshot.members) and any(
            t.racks is not None and any(t.racks) for t in snapshot.topics.values())
    return snapshot.racks_known()


def with_cost_ratio(snapshot: Any, ratio: float, scale: int = _SCALE) -> dict[str, Any]:
    """The snapshot's JSON with ``traffic_cost = round(ratio * scale)`` and ``non_overlap_cost = scale``.

    Consumer groups get ``rack_aware: true``; Streams applications get the
    ``rack_aware_assignment_*_cost`` keys and, when their strategy is
    ``"none"``, ``"min_traffic"``.

    >>> snap = {"format": "stickyflow.snapshot/1", "kind": "consumer", "topics": {}, "members": []}
    >>> with_cost_ratio(snap, 0.5)["config"]
    {'traffic_cost': 5, 'non_overlap_cost': 10, 'rack_aware': True}
    """
    import stickyflow

    doc = stickyflow.snapshot_to_json(stickyflow.as_snapshot(snapshot))
    config = dict(doc.get("config") or {})
    traffic = int(round(ratio * scale))
    if doc["kind"] == "consumer":
        config.update(traffic_cost=traffic, non_overlap_cost=scale, rack_aware=True)
    else:
        config.update(rack_aware_assignment_traffic_cost=traffic, rack_aware_assignment_non_overlap_cost=scale)
        if config.get("rack_aware_assignment_strategy", "none") == "none":
            config["rack_aware_assignment_strategy"] = "min_traffic"
    doc["config"] = config
    return doc


def pareto_sweep(snapshots: Iterable[Any], ratios: Sequence[float] = DEFAULT_RATIOS,
                 assignors: Sequence[str] = ("optimal",) + GREEDY, *, time_limit: float | None = None):
    """Solve every snapshot at every ratio with every assignor; one row per (kind, assignor, ratio) with totals.

    Columns: ``kind``, ``assignor``, ``ratio``, ``traffic_cost``,
    ``non_overlap_cost``, ``snapshots`` (solved), ``skipped`` (the assignor
    does not serve that kind, or failed), ``moves``, ``cross_rack``,
    ``imbalance_max``, ``proven`` (solves with status ``"optimal"``),
    ``fallbacks``, ``wall_s``. Kinds are totalled apart: a consumer-only
    assignor is compared on the same snapshots as the optimizer. Only proven
    optima make a true front: give large Streams snapshots a ``time_limit``
    and read ``proven``.
    """
    import stickyflow

    pd = _pandas()
    snaps = [stickyflow.as_snapshot(s) for s in snapshots]
    rows = []
    for kind in sorted({s.kind for s in snaps}):
        of_kind = [s for s in snaps if s.kind == kind]
        for assignor in assignors:
            if assignor not in stickyflow.available_assignors(kind) and ":" not in assignor:
                continue
            for ratio in ratios:
                tot = {"kind": kind, "assignor": assignor, "ratio": float(ratio),
                       "traffic_cost": int(round(ratio * _SCALE)), "non_overlap_cost": _SCALE, "snapshots": 0,
                       "skipped": 0, "moves": 0, "cross_rack": 0, "imbalance_max": 0, "proven": 0, "fallbacks": 0,
                       "wall_s": 0.0}
                for snap in of_kind:
                    try:
                        r = stickyflow.assign(with_cost_ratio(snap, ratio), assignor, time_limit=time_limit)
                    except Exception:  # noqa: BLE001 - a failing assignor is a skipped point, not a failed report
                        tot["skipped"] += 1
                        continue
                    tot["snapshots"] += 1
                    tot["moves"] += int(r.metrics["moves"])
                    tot["cross_rack"] += int(r.metrics.get("cross_rack") or 0)
                    tot["imbalance_max"] = max(tot["imbalance_max"], int(r.metrics["imbalance"]))
                    tot["proven"] += r.solver.status == "optimal"
                    tot["fallbacks"] += r.solver.status == "fallback"
                    tot["wall_s"] += r.solver.wall_s
                rows.append(tot)
    return pd.DataFrame(rows)


def pareto_front(points: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """The points no other point beats on both coordinates (fewer moves and fewer cross-rack reads), sorted.

    >>> pareto_front([(0, 9), (2, 5), (3, 5), (5, 1), (4, 7)])
    [(0, 9), (2, 5), (5, 1)]
    """
    front: list[tuple[float, float]] = []
    for x, y in sorted(set(points)):
        if not front or y < front[-1][1]:
            front.append((x, y))
    return front


def plot_pareto(sweep, path: str | Path | None = None, *, optimizer: str = "optimal") -> bytes:
    """Total cross-rack reads against total moves, one panel per kind: the optimizer's points joined in ratio
    order and labelled with their ratio, its Pareto front boxed, every other assignor's points marked."""
    plt = _pyplot()
    sweep = sweep[sweep["snapshots"] > 0] if len(sweep) else sweep
    kinds = sorted(set(sweep["kind"])) if len(sweep) else ["consumer"]
    fig, axes = plt.subplots(1, len(kinds), figsize=(7.5 * len(kinds), 5.5), squeeze=False)
    for ax, kind in zip(axes[0], kinds):
        part = sweep[sweep["kind"] == kind] if len(sweep) else sweep
        if len(part):
            _pareto_panel(ax, part, optimizer)
            n = int(part["snapshots"].max())
            ax.set_title(f"{kind}: {n} snapshot{'s' if n != 1 else ''}", fontsize=10)
        else:
            ax.text(0.5, 0.5, "no snapshots solved", ha="center", va="center", transform=ax.transAxes)
        ax.set_xlabel("moves (total)")
        ax.set_ylabel("cross-rack reads (total)")
        ax.grid(alpha=0.3)
    fig.suptitle("Traffic against moves: sweeping traffic_cost / non_overlap_cost", fontsize=12)
    fig.tight_layout()
    return _save(fig, path)


def _pareto_panel(ax, part, optimizer: str) -> None:
    opt = part[part["assignor"] == optimizer].sort_values("ratio")
    if len(opt):
        ax.plot(opt["moves"], opt["cross_rack"], "-o", color=_color(optimizer), label=f"{optimizer} (ratio sweep)",
                zorder=3)
        labels: dict[tuple[float, float], list[str]] = {}
        for _, row in opt.iterrows():  # ratios that land on the same point share one label; * = not all proven
            star = "" if row.get("proven", row["snapshots"]) == row["snapshots"] else "*"
            labels.setdefault((row["moves"], row["cross_rack"]), []).append(f"{row['ratio']:g}{star}")
        for (x, y), text in labels.items():
            ax.annotate("r=" + ", ".join(text), (x, y), textcoords="offset points", xytext=(6, 4), fontsize=8,
                        color=_color(optimizer))
        front = pareto_front(zip(opt["moves"], opt["cross_rack"]))
        ax.plot([p[0] for p in front], [p[1] for p in front], "s", mfc="none", ms=11, color="black",
                label="Pareto front", zorder=4)
    marks = {"sticky": "D", "range": "^", "roundrobin": "v"}
    others = ["P", "X", "*", "h"]
    for i, (name, g) in enumerate(part[part["assignor"] != optimizer].groupby("assignor", sort=True)):
        pts = g[["moves", "cross_rack"]].drop_duplicates()
        ax.scatter(pts["moves"], pts["cross_rack"], marker=marks.get(name, others[i % len(others)]), s=70,
                   color=_color(name),
                   label=name if len(pts) == 1 else f"{name} ({len(pts)} points)", zorder=5)
    ax.legend(fontsize=8)


# --------------------------------------------------------------------------- simulations

def plot_simulation(simulation: Any, path: str | Path | None = None) -> bytes:
    """Round-by-round panels of a simulation (a :class:`~stickyflow.datasets.simulator.Simulation` or its rows):
    moves, imbalance, cross-rack reads, warm-ups or withheld partitions, and rounds to converge per episode."""
    plt = _pyplot()
    pd = _pandas()
    rows = pd.DataFrame(simulation.rows() if hasattr(simulation, "rows") else list(simulation))
    summary = pd.DataFrame(simulation.summary()) if hasattr(simulation, "summary") else None
    streams = bool(len(rows)) and (rows["kind"] == "streams").any()
    if len(rows):
        rows = rows.assign(moves_cumulative=rows.groupby("label", sort=False)["moves"].cumsum())
    kind_panels = ([("warmups", "warm-ups"), ("restoring_actives", "active tasks still restoring")] if streams else
                   [("revoked", "partitions revoked (cooperative)"), ("withheld", "partitions withheld (cooperative)")])
    panels = [("moves", "moves"), ("moves_cumulative", "moves, cumulative"), ("imbalance", "imbalance"),
              ("cross_rack", "cross-rack reads"), *kind_panels, ("wall_s", "solve time, s")]
    fig, axes = plt.subplots(2, 4, figsize=(18, 7.5))
    labels = list(dict.fromkeys(rows["label"])) if len(rows) else []
    n = max(1, len(labels))
    colors = _run_colors(labels)
    for ax, (col, title) in zip(axes.flat, panels):
        for i, label in enumerate(labels):
            g = rows[rows["label"] == label]
            y = pd.to_numeric(g[col], errors="coerce")
            offset = (i - (n - 1) / 2) * 0.08  # lines that coincide stay visible
            ax.step(g["round"] + offset, y, where="mid", marker=".", color=colors[label],
                    linestyle=["-", "--", ":", "-."][i % 4], label=label)
        _mark_events(ax, rows)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("round")
        ax.grid(alpha=0.3)
    axes.flat[0].legend(fontsize=8)
    ax = axes.flat[7]
    if summary is not None and len(summary):
        episodes = list(dict.fromkeys(zip(summary["episode"], summary["cause"])))
        width = 0.8 / n
        for i, label in enumerate(labels):
            g = summary[summary["label"] == label]
            vals = [float(v) if v is not None and not (isinstance(v, float) and math.isnan(v)) else 0.0
                    for v in g["rounds_to_converge"]]
            ax.bar([e + (i - (n - 1) / 2) * width for e in g["episode"]], vals, width=width, color=colors[label],
                   hatch=["", "//", "..", "xx"][i % 4], label=label)
        ax.set_xticks([e for e, _ in episodes], [_short(c) for _, c in episodes], fontsize=7, rotation=30, ha="right")
        ax.set_title("rounds to converge per disturbance (0: not converged)", fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    else:
        ax.axis("off")
    name = rows["scenario"].iloc[0] if len(rows) else "simulation"
    fig.suptitle(f"Simulation: {name}", fontsize=12)
    fig.tight_layout()
    return _save(fig, path)


def _run_colors(labels: Sequence[str]) -> dict[str, str]:
    """An assignor's own colour, unless two runs share an assignor (readiness compared): then one colour each."""
    bases = [label.split(" ")[0] for label in labels]
    if len(set(bases)) == len(bases):
        return {label: _color(label) for label in labels}
    cycle = list(_PALETTE.values()) + list(_EXTRA)
    return {label: cycle[i % len(cycle)] for i, label in enumerate(labels)}


def _mark_events(ax, rows) -> None:
    if not len(rows):
        return
    first = rows[rows["label"] == rows["label"].iloc[0]]
    for _, r in first.iterrows():
        if r["events"]:
            ax.axvline(r["round"], color="grey", alpha=0.35, linestyle=":")


def _short(text: str, n: int = 22) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


# --------------------------------------------------------------------------- HTML

def html_page(title: str, blocks: Sequence[tuple[str, Any]]) -> str:
    """A self-contained HTML page. Each block is ``(heading, content)`` where content is PNG bytes
    (embedded as a data URI), a pandas DataFrame (a table), or text (a paragraph)."""
    pd = _pandas()
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>",
        "<style>body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px}"
        "table{border-collapse:collapse;font-size:13px}th,td{border:1px solid #ccc;padding:3px 7px;text-align:right}"
        "th{background:#f3f3f3}td:nth-child(-n+2){text-align:left}img{max-width:100%;border:1px solid #eee}"
        "</style></head><body>", f"<h1>{html.escape(title)}</h1>",
    ]
    for heading, content in blocks:
        parts.append(f"<h2>{html.escape(heading)}</h2>")
        if isinstance(content, (bytes, bytearray)):
            data = base64.b64encode(bytes(content)).decode("ascii")
            parts.append(f'<img alt="{html.escape(heading)}" src="data:image/png;base64,{data}">')
        elif isinstance(content, pd.DataFrame):
            parts.append(content.to_html(index=False, na_rep="", float_format=lambda x: f"{x:.4g}",
                                         classes="table", border=0))
        else:
            parts.append(f"<p>{html.escape(str(content))}</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Report:
    """What :func:`write_report` wrote: name -> path, and the tables (``rows`` and ``solved``: batch rows)."""

    files: Mapping[str, Path]
    summary: Any
    pareto: Any = None
    notes: tuple[str, ...] = field(default=())
    rows: int | None = None
    solved: int | None = None


def write_report(batch: Any, out_dir: str | Path, *, pareto_input: Any = "default", pareto_seed: int = 0,
                 pareto_count: int = 12, ratios: Sequence[float] = DEFAULT_RATIOS,
                 pareto_assignors: Sequence[str] = ("optimal",) + GREEDY, time_limit: float | None = 10.0,
                 title: str = "stickyflow batch report") -> Report:
    """Write ``summary.csv``, ``metrics.png``, ``time_vs_size.png``, ``pareto.png``, ``pareto.csv`` and
    ``report.html`` (everything embedded) into ``out_dir``.

    ``pareto_input``: ``"default"`` (the seeded :func:`pareto_snapshots`), a
    dataset path or ``suite:NAME`` (:func:`read_snapshots`), a list of
    snapshots, or None (no sweep). ``time_limit`` bounds each solve of the
    sweep (seconds; None: none).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    frame = load_batch(batch)
    table = summary_table(frame)
    files: dict[str, Path] = {}
    notes: list[str] = []
    files["summary.csv"] = out / "summary.csv"
    table.to_csv(files["summary.csv"], index=False)
    metrics_png = plot_metrics(frame, out / "metrics.png")
    files["metrics.png"] = out / "metrics.png"
    size_png = plot_time_vs_size(frame, out / "time_vs_size.png")
    files["time_vs_size.png"] = out / "time_vs_size.png"
    solved = len(_ok(frame))
    if not len(frame):
        notes.append("The batch output has no rows: nothing to summarize.")
    elif not solved:
        notes.append(f"No row of the batch output was solved: all {len(frame)} rows are errors (listed below).")
    elif frame["size"].isna().all():
        notes.append("The batch output has no size columns (partitions, tasks): the size plot is empty.")
    errors = _pandas().DataFrame()
    bad = frame[~frame.index.isin(_ok(frame).index)]
    if len(bad):
        errors = bad[["id", "kind", "assignor", "error"]].head(50)
    blocks: list[tuple[str, Any]] = [("Summary per assignor", table), ("Moves, imbalance, cross-rack reads, solve time",
                                                                        metrics_png),
                                     ("Solve time against size", size_png)]
    sweep = None
    if pareto_input is not None:
        if isinstance(pareto_input, str) and pareto_input == "default":
            snaps = pareto_snapshots(pareto_count, pareto_seed)
            source = f"{pareto_count} seeded rack-aware consumer groups (seed {pareto_seed})"
        else:
            every = read_snapshots(pareto_input)
            snaps = [s for s in every if has_racks(s)]
            source = f"the {len(snaps)} snapshots with racks of the {len(every)} in {pareto_input}"
        sweep = pareto_sweep(snaps, ratios, pareto_assignors, time_limit=time_limit)
        files["pareto.csv"] = out / "pareto.csv"
        sweep.to_csv(files["pareto.csv"], index=False)
        pareto_png = plot_pareto(sweep, out / "pareto.png")
        files["pareto.png"] = out / "pareto.png"
        unproven = sweep[(sweep["assignor"] == "optimal") & (sweep["proven"] < sweep["snapshots"])] if len(sweep) \
            else sweep
        if len(unproven):
            notes.append(f"Pareto sweep: {int((unproven['snapshots'] - unproven['proven']).sum())} optimal solves "
                         f"were not proven within the time limit ({time_limit} s); their ratios carry a * in the plot.")
        skipped = sweep[sweep["skipped"] > 0] if len(sweep) else sweep
        for _, row in skipped.drop_duplicates(["kind", "assignor"]).iterrows():
            notes.append(f"Pareto sweep: {row['assignor']} could not solve {row['skipped']} of the "
                         f"{row['snapshots'] + row['skipped']} {row['kind']} snapshots (at ratio {row['ratio']:g}).")
        blocks += [("Traffic against moves", pareto_png),
                   ("Pareto sweep", f"Input: {source}; ratios traffic_cost / non_overlap_cost = "
                                    f"{', '.join(f'{r:g}' for r in ratios)} (non_overlap_cost = {_SCALE})."),
                   ("Pareto sweep totals", sweep)]
    if len(errors):
        blocks.append(("Rows with errors (first 50)", errors))
    for note in notes:
        blocks.append(("Note", note))
    files["report.html"] = out / "report.html"
    files["report.html"].write_text(html_page(title, blocks), encoding="utf-8")
    return Report(files=files, summary=table, pareto=sweep, notes=tuple(notes), rows=int(len(frame)),
                  solved=int(solved))


def write_simulation_report(simulation: Any, out_dir: str | Path, *, title: str | None = None) -> Report:
    """Write ``rounds.csv``, ``convergence.csv``, ``simulation.png`` and ``simulation.html`` into ``out_dir``."""
    pd = _pandas()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rounds = pd.DataFrame(simulation.rows())
    summary = pd.DataFrame(simulation.summary())
    files = {"rounds.csv": out / "rounds.csv", "convergence.csv": out / "convergence.csv",
             "simulation.png": out / "simulation.png", "simulation.html": out / "simulation.html"}
    rounds.to_csv(files["rounds.csv"], index=False)
    summary.to_csv(files["convergence.csv"], index=False)
    png = plot_simulation(simulation, files["simulation.png"])
    name = simulation.scenario.name or "simulation"
    cols = [c for c in ("label", "round", "time_ms", "trigger", "events", "leader", "members", "status", "moves",
                        "imbalance", "cross_rack", "revoked", "withheld", "warmups", "standbys", "restoring_actives",
                        "followup", "wall_s") if c in rounds.columns and rounds[c].notna().any()]
    page = html_page(title or f"stickyflow simulation: {name}", [
        ("Rounds to converge", summary.drop(columns=["scenario"], errors="ignore")),
        ("Per round", png),
        ("Rounds", rounds[cols]),
    ])
    files["simulation.html"].write_text(page, encoding="utf-8")
    return Report(files=files, summary=summary)
