"""A batch output's tables and plots: :func:`load_batch`, :func:`summary_table`, :func:`plot_metrics`,
:func:`plot_time_vs_size` and :func:`write_report` (``stickyflow report``)."""

from __future__ import annotations

import base64
import html
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from stickyflow.errors import BackendMissingError, InvalidSnapshotError, Problem

from .base import (Html, series_color, from_zero, log_axis, series_marker, pandas_module, pyplot, save_png, html_page,
                   legend_outside)
from .load import (DEFAULT_SLACKS, LOAD_SUMMARY_COLUMNS, first_with_loads, has_loads, load_blocks,
                   load_snapshots, load_summary, with_load_columns)
from .pareto import (DEFAULT_RATIOS, GREEDY, COST_SCALE, batch_input, first_with_racks, has_racks, pareto_snapshots,
                     pareto_sweep, pareto_table, plot_pareto, snapshots_from)

__all__ = ["BATCH_COLUMNS", "STATUSES", "SUMMARY_COLUMNS", "load_batch", "summary_table", "plot_metrics",
           "plot_time_vs_size", "Report", "write_report"]

BATCH_COLUMNS = ("id", "kind", "assignor", "moves", "imbalance", "cross_rack", "status", "wall_s", "error")
STATUSES = ("optimal", "feasible", "heuristic", "fallback")
UNKNOWN = "(unknown)"  # the kind (or assignor) of an error row that has none, e.g. for input that is not JSON
SUMMARY_COLUMNS = ("kind", "assignor", "snapshots", "solved", "errors") + STATUSES + (
    "moves_total", "moves_mean", "imbalance_mean", "imbalance_max", "cross_rack_total", "cross_rack_mean",
    "wall_s_mean", "wall_s_p50", "wall_s_p95", "wall_s_max") + LOAD_SUMMARY_COLUMNS
_SIZE_COLUMNS = {"consumer": ("partitions", "num_partitions", "n_partitions"),
                 "streams": ("tasks", "num_tasks", "n_tasks")}


# --------------------------------------------------------------------------- the batch table

def load_batch(source: Any):
    """A batch output as a pandas DataFrame: a Parquet file or dataset folder, a CSV or JSON Lines file, or a frame.

    Missing optional columns are added (empty); a missing required column is an
    :class:`InvalidSnapshotError` naming it. A row without a ``kind`` or
    ``assignor`` (an error row for input that is not JSON, say) gets
    ``"(unknown)"`` there, so that it is still counted.
    """
    pd = pandas_module()
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
    return with_load_columns(frame)


def _missing(v: Any) -> bool:
    if v is None or (isinstance(v, str) and not v):
        return True
    try:
        return bool(pandas_module().isna(v))
    except (TypeError, ValueError):
        return False


def _size_column(frame):
    pd = pandas_module()
    if "size" in frame.columns:
        return pd.to_numeric(frame["size"], errors="coerce")
    size = pd.Series(float("nan"), index=frame.index)
    for kind, names in _SIZE_COLUMNS.items():
        for name in names:
            if name in frame.columns:
                rows = (frame["kind"] == kind) & size.isna()
                size[rows] = pd.to_numeric(frame.loc[rows, name], errors="coerce")
    if "metrics" in frame.columns and size.isna().any():  # the batch keeps every metric as JSON text
        from stickyflow.model import jsonio

        for i in frame.index[size.isna()]:
            text = frame.at[i, "metrics"]
            if not isinstance(text, str) or not text:
                continue
            try:
                m = jsonio.loads(text)
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
    pd = pandas_module()
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
            **load_summary(ok),
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


_UNITS = {"consumer": ("partitions", "partitions per member"), "streams": ("active tasks", "active tasks per thread")}


def spread(values, *, how: str = "mean", scale: float = 1) -> tuple[float, float, float, int]:
    """A bar's height, the two ends of its error bar and its n, over the known ``values`` (times ``scale``):
    ``how="mean"``: the mean, and one standard deviation either side (not below 0 for counts that cannot be);
    ``"median"``: the median, and the 25th to the 75th percentile. Nothing known: zeros and n = 0.

    >>> spread([1, 3])
    (2.0, 0.5857864376269049, 3.414213562373095, 2)
    >>> spread([0.001, 0.002, 0.004], how="median", scale=1000)
    (2.0, 1.5, 3.0, 3)
    """
    pd = pandas_module()
    v = pd.to_numeric(pd.Series(list(values), dtype=object), errors="coerce").dropna().astype(float) * scale
    if not len(v):
        return 0.0, 0.0, 0.0, 0
    if how == "median":
        return float(v.median()), float(v.quantile(0.25)), float(v.quantile(0.75)), int(len(v))
    mean = float(v.mean())
    sd = float(v.std()) if len(v) > 1 else 0.0
    return mean, max(0.0, mean - sd) if v.min() >= 0 else mean - sd, mean + sd, int(len(v))


def plot_metrics(frame, path: str | Path | None = None) -> bytes:
    """One row of panels per kind, one bar per assignor, every panel a mean (or median) per solved snapshot:
    moves, imbalance, cross-rack reads (snapshots with racks) and solve time in ms (median, so that a
    worker's first call, which pays for imports, does not count). Every bar has its spread (:func:`spread`)
    and its n (the snapshots it stands for) under its name.

    A consumer group's partitions and a Streams application's tasks never share an axis. Returns the PNG
    bytes (and writes them to ``path`` when given).
    """
    plt = pyplot()
    frame = frame if "size" in frame.columns else load_batch(frame)
    table = summary_table(frame)
    table = table[table["solved"] > 0] if len(table) else table
    kinds = [k for k in dict.fromkeys(table["kind"])] if len(table) else []
    rows = max(1, len(kinds))
    fig, axes = plt.subplots(rows, 4, figsize=(15, 3.6 * rows), squeeze=False)
    for r, kind in enumerate(kinds or [None]):
        part = table[table["kind"] == kind] if kind is not None else table
        ok = _ok(frame)
        ok = ok[ok["kind"] == kind] if kind is not None else ok
        unit, per = _UNITS.get(kind, ("items", "items per member"))
        names = list(part["assignor"])
        of = {a: ok[ok["assignor"] == a] for a in names}
        panels = [("moves", 1, "mean", f"moves per snapshot\n({unit}, mean ± sd)"),
                  ("imbalance", 1, "mean", f"imbalance per snapshot\n(max - min {per}, mean ± sd)"),
                  ("cross_rack", 1, "mean", f"cross-rack reads per snapshot\n({unit.split()[-1]}, mean ± sd)"),
                  ("wall_s", 1000, "median", "solve time per snapshot\n(ms, median; bar: p25 to p75)")]
        for c, (column, scale, how, label) in enumerate(panels):
            ax = axes[r][c]
            stats = [spread(of[a][column], how=how, scale=scale) for a in names]
            vals = [st[0] for st in stats]
            low = [st[0] - st[1] for st in stats]
            high = [st[2] - st[0] for st in stats]
            ax.bar(range(len(names)), vals, color=[series_color(a) for a in names])
            ax.errorbar(range(len(names)), vals, yerr=[low, high], fmt="none", ecolor="black", elinewidth=1,
                        capsize=4)
            ax.set_xticks(range(len(names)), [f"{a}\nn={st[3]}" for a, st in zip(names, stats)], fontsize=8,
                          rotation=20 if len(names) > 4 else 0)
            ax.set_xlabel(f"assignor ({kind}; n: snapshots)" if kind else "assignor")
            ax.set_ylabel(label, fontsize=9)
            ax.grid(axis="y", alpha=0.3)
            from_zero(ax, [st[2] for st in stats])
            if not names:
                ax.text(0.5, 0.5, "no solved rows", ha="center", va="center", transform=ax.transAxes)
    fig.tight_layout()
    return save_png(fig, path)


def plot_time_vs_size(frame, path: str | Path | None = None) -> bytes:
    """Solve time against size, one panel per kind (partitions for consumer groups, tasks for Streams), one line
    per assignor through the median of each size band (powers of two), so that a worker's first call, which
    pays for imports, does not show as solve time; the band's points are drawn faintly behind."""
    plt = pyplot()
    frame = frame if "size" in frame.columns else load_batch(frame)
    ok = _ok(frame)
    ok = ok[ok["size"].notna() & ok["wall_s"].notna() & (ok["wall_s"] > 0) & (ok["size"] > 0)]
    kinds = list(dict.fromkeys(ok["kind"])) if len(ok) else [None]
    fig, axes = plt.subplots(1, len(kinds), figsize=(6.4 * len(kinds), 4.6), squeeze=False)
    for ax, kind in zip(axes[0], kinds):
        part = ok[ok["kind"] == kind] if kind is not None else ok
        series = 0
        for assignor in sorted(set(part["assignor"])):
            g = part[part["assignor"] == assignor]
            band = g["size"].map(lambda s: 1 << (int(s).bit_length() - 1))
            med = g.assign(band=band).groupby("band").agg(size=("size", "median"), ms=("wall_s", "median"))
            ax.scatter(g["size"], 1000 * g["wall_s"], s=8, alpha=0.18, color=series_color(assignor),
                       marker=series_marker(assignor))
            ax.plot(med["size"], 1000 * med["ms"], marker=series_marker(assignor), color=series_color(assignor),
                    label=assignor)
            series += 1
        if len(part):
            if part["size"].max() >= 20 * part["size"].min():
                log_axis(ax, "x")
            if part["wall_s"].max() >= 30 * part["wall_s"].min():
                log_axis(ax, "y")
            if series > 1:
                legend_outside(ax, title="assignor\n(line: band median)", title_fontsize=8)
        else:
            ax.text(0.5, 0.5, "no size columns (partitions / tasks) in the batch output",
                    ha="center", va="center", transform=ax.transAxes)
        unit = {"consumer": "partitions", "streams": "tasks"}.get(kind, "partitions or tasks")
        ax.set_xlabel(f"size ({unit} per snapshot)")
        ax.set_ylabel("solve time per snapshot (ms)")
        ax.set_title(f"{kind or ''} solve time against size".strip(), fontsize=10)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return save_png(fig, path)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Report:
    """What :func:`write_report` wrote: name -> path, and the tables (``rows`` and ``solved``: batch rows)."""

    files: Mapping[str, Path]
    summary: Any
    pareto: Any = None
    notes: tuple[str, ...] = field(default=())
    rows: int | None = None
    solved: int | None = None


SUMMARY_DEFINITIONS = (
    ("snapshots, solved, errors", "rows of the batch for that kind and assignor; solved ones have no error"),
    ("optimal, feasible, heuristic, fallback", "solver statuses: proven optimal; valid, not proven; a greedy "
                                               "assignor by choice; the greedy assignor stood in for the optimizer"),
    ("moves", "consumer: partitions whose valid previous owner lost them; Streams: active tasks that left their "
              "client (total over the solved snapshots, and mean per snapshot)"),
    ("imbalance", "consumer: most minus fewest partitions per member; Streams: most minus fewest active tasks "
                  "per thread (mean and largest per snapshot)"),
    ("cross-rack", "partitions (Streams: input and changelog partitions) read from another rack, where racks "
                   "are known (total and mean per snapshot)"),
    ("solve ms", "the assignor's wall time per snapshot in milliseconds: mean, median (p50), 95th percentile, "
                 "largest (summary.csv: in seconds). "
                "A worker's first solve includes imports: read the median"),
)


def _definitions() -> str:
    import html as _html

    return "<dl>" + "".join(f"<dt>{_html.escape(k)}</dt><dd>{_html.escape(v)}</dd>"
                            for k, v in SUMMARY_DEFINITIONS) + "</dl>"


def _readable(table):
    """The summary with short column names, solve times in ms (narrow cells: the whole table, p50 to max
    included, fits a 1400-pixel window); the CSV keeps the machine names and seconds."""
    names = {"moves_total": "moves", "moves_mean": "moves mean", "imbalance_mean": "imbalance mean",
             "imbalance_max": "imbalance max", "cross_rack_total": "cross-rack", "cross_rack_mean": "cross-rack mean",
             "wall_s_mean": "solve ms mean", "wall_s_p50": "solve ms p50", "wall_s_p95": "solve ms p95",
             "wall_s_max": "solve ms max"}
    out = table.copy()
    for c in ("wall_s_mean", "wall_s_p50", "wall_s_p95", "wall_s_max"):
        if c in out.columns:
            out[c] = pandas_module().to_numeric(out[c], errors="coerce") * 1000
    return out.rename(columns=names)


def write_report(batch: Any, out_dir: str | Path, *, pareto_input: Any = "batch", pareto_seed: int = 0,
                 pareto_count: int = 12, ratios: Sequence[float] = DEFAULT_RATIOS,
                 pareto_assignors: Sequence[str] = ("optimal",) + GREEDY, time_limit: float | None = 10.0,
                 title: str = "stickyflow batch report", batch_source: str | Path | None = None,
                 load_slacks: Sequence[float] | None = DEFAULT_SLACKS) -> Report:
    """Write ``summary.csv``, ``metrics.png``, ``time_vs_size.png``, ``pareto.png``, ``pareto.csv`` and
    ``report.html`` (everything embedded) into ``out_dir``.

    ``pareto_input``: ``"batch"`` (the default: the first ``pareto_count``
    snapshots with racks of each kind in the batch's own input, found through
    the record ``stickyflow batch`` leaves in its output, :func:`batch_input`),
    ``"generated"`` (``pareto_count`` seeded :func:`pareto_snapshots`; the
    plot says so; ``"default"`` is an old name for it), a dataset path or
    ``suite:NAME`` (its snapshots with racks, :func:`snapshots_from`), a list
    of snapshots, or None (no sweep). ``time_limit`` bounds each solve of the
    sweep (seconds; None: none). ``batch_source``: where ``batch`` was read
    from, when it is given as a frame.

    A batch with load columns (consumer groups with rates) adds ``load.png`` and, over the consumer groups with
    rates of the same ``pareto_input`` (``generated``: seeded load-suite groups), a sweep of ``load_slack``
    over ``load_slacks`` (None: none): ``load_front.png``, ``load_front.csv``
    (:mod:`stickyflow.adapters.report.load`).
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
    errors = pandas_module().DataFrame()
    bad = frame[~frame.index.isin(_ok(frame).index)]
    if len(bad):
        # one row per distinct (status, kind, assignor, error), with how many rows share it and one example id:
        # an assignor that does not serve a kind (range for Streams) is one line, not one per snapshot
        cols = ["status", "kind", "assignor", "error"] if "status" in bad.columns else ["kind", "assignor", "error"]
        keyed = bad.assign(**{c: bad[c].astype("string").fillna("") for c in cols})
        errors = (keyed.groupby(cols, sort=False, dropna=False)
                  .agg(rows=("id", "size"), example_id=("id", "first")).reset_index().head(50))
    blocks: list[tuple[str, Any]] = [("What the columns mean", Html(_definitions())),
                                     ("Summary per assignor", _readable(table)),
                                     ("Moves, imbalance, cross-rack reads, solve time", metrics_png),
                                     ("Solve time against size", size_png)]
    sweep = None
    label = None
    if isinstance(pareto_input, str) and pareto_input == "batch":
        where = batch_input(batch_source if batch_source is not None else batch)
        if where is None:
            notes.append("No Pareto sweep: the batch output does not say where its snapshots are (it is not a "
                         "folder written by stickyflow batch). Name them with --pareto-input DATASET, or sweep "
                         "generated groups with --pareto-input generated.")
            pareto_input = None
        elif "://" in where and not where.startswith("file://"):
            notes.append(f"No Pareto sweep: the batch's input {where} is not a local path. Copy it here and name "
                         f"it with --pareto-input DATASET.")
            pareto_input = None
        elif not Path(where.removeprefix("file://")).exists():
            notes.append(f"No Pareto sweep: the batch's input {where} is no longer there. Name its snapshots with "
                         f"--pareto-input DATASET.")
            pareto_input = None
    load_input = _load_input(pareto_input, where if pareto_input == "batch" else None, pareto_count, pareto_seed)
    if pareto_input is not None:
        if isinstance(pareto_input, str) and pareto_input in ("generated", "default"):
            snaps = pareto_snapshots(pareto_count, pareto_seed)
            label = "generated"
            source = (f"{pareto_count} generated rack-aware consumer groups (seed {pareto_seed}; "
                      f"--pareto-input generated), not the batch's own snapshots")
        elif isinstance(pareto_input, str) and pareto_input == "batch":
            snaps, read = first_with_racks(where.removeprefix("file://"), pareto_count)
            if not snaps:
                notes.append(f"Pareto sweep: none of the {read} snapshots of the batch's input has racks on both "
                             f"sides (members or clients, and partitions): there is no traffic to trade.")
            source = (f"{len(snaps)} of the batch's own snapshots: the first with racks (at most {pareto_count} "
                      f"of each kind) among the {read} read from its input {where}")
        else:
            every = snapshots_from(pareto_input)
            snaps = [s for s in every if has_racks(s)]
            source = f"the {len(snaps)} snapshots with racks of the {len(every)} in {pareto_input}"
        sweep = pareto_sweep(snaps, ratios, pareto_assignors, time_limit=time_limit)
        files["pareto.csv"] = out / "pareto.csv"
        sweep.to_csv(files["pareto.csv"], index=False)
        pareto_png = plot_pareto(sweep, out / "pareto.png", source=label)
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
                                    f"{', '.join(f'{r:g}' for r in ratios)} (non_overlap_cost = {COST_SCALE})."),
                   ("Pareto sweep totals (one row per assignor and result; ratios: where it gave that result)",
                    pareto_table(sweep))]
    loads = load_blocks(frame, out, snapshots=load_input[0], source=load_input[1], slacks=load_slacks,
                        time_limit=time_limit)
    blocks += list(loads.blocks)
    files.update(loads.files)
    notes += list(loads.notes)
    if len(errors):
        blocks.append(("Rows not solved (grouped by reason; first 50 reasons)", errors))
    for note in notes:
        blocks.append(("Note", note))
    files["report.html"] = out / "report.html"
    files["report.html"].write_text(html_page(title, blocks), encoding="utf-8")
    return Report(files=files, summary=table, pareto=sweep, notes=tuple(notes), rows=int(len(frame)),
                  solved=int(solved))


def _load_input(pareto_input: Any, where: str | None, count: int, seed: int) -> tuple[list[Any] | None, str]:
    """The consumer groups with rates for the ``load_slack`` sweep, from the same input as the Pareto sweep."""
    if pareto_input is None:
        return None, ""
    if isinstance(pareto_input, str) and pareto_input in ("generated", "default"):
        return load_snapshots(count, seed), f"{count} generated load-suite consumer groups (seed {seed})"
    if isinstance(pareto_input, str) and pareto_input == "batch":
        snaps, read = first_with_loads(where.removeprefix("file://"), count)
        return snaps, f"the first {len(snaps)} with rates of the {read} snapshots read from the batch's input {where}"
    every = snapshots_from(pareto_input)
    snaps = [s for s in every if has_loads(s)]
    return snaps, f"the {len(snaps)} consumer groups with rates of the {len(every)} snapshots in {pareto_input}"


