"""Reports by load (issue 35): the load columns of a batch summary, a bar chart of how far each assignor's peak
lies above the least possible one, and the front of peak utilization against moved load over ``load_slack``.

``load_slack`` is what a balance-by-load group trades: how far above the least possible peak ``optimal`` may
stay so that partitions (and their load) need not move. :func:`slack_sweep` solves the same load snapshots at
each slack and totals, per assignor and slack, the load moved (as a share of all the load read) and the peak
over the snapshot's best proven bound on the least possible peak (:mod:`stickyflow.adapters.load_rows`); the
assignors that ignore the slack (every built-in one but ``optimal``) are solved once and drawn as one point.
:func:`plot_load_front` draws it: ``optimal``'s points joined in slack order, its front boxed, the others marked.

>>> import pandas as pd
>>> frame = pd.DataFrame({"kind": "consumer", "assignor": ["optimal", "lpt"], "error": None,
...                       "peak_ratio": [1.04, 1.0], "moved_load": [3.5, 40.0], "overload": [0.0, 0.0],
...                       "overloaded": [0, 0], "peak_utilization": [1.04, 1.0]})
>>> [load_summary(frame[frame["assignor"] == a])["peak_ratio_mean"] for a in ("optimal", "lpt")]
[1.04, 1.0]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..load_rows import BATCH_LOAD_COLUMNS, LOAD_METRICS, load_fields, peak_ratio
from .base import pandas_module, place_labels, pyplot, save_png, series_color, series_marker

__all__ = ["DEFAULT_SLACKS", "SLACK_ASSIGNORS", "LOAD_SUMMARY_COLUMNS", "has_loads", "with_load_columns",
           "load_summary", "plot_load_metrics", "with_load_slack", "first_with_loads", "load_snapshots",
           "slack_sweep", "slack_table", "plot_load_front", "LoadBlocks", "load_blocks"]

DEFAULT_SLACKS = (0.0, 0.02, 0.05, 0.1, 0.2, 0.5)
SLACK_ASSIGNORS = ("optimal", "sticky", "uniform", "lpt", "lag-based")
SLACK_BLIND = frozenset({"sticky", "range", "roundrobin", "uniform", "lpt", "lag-based", "kp-sticky", "kp-range",
                         "kp-roundrobin"})  # built-in assignors whose answer does not depend on load_slack
LOAD_SUMMARY_COLUMNS = ("peak_ratio_mean", "peak_ratio_max", "moved_load_total", "overload_total",
                        "overloaded_max")


# --------------------------------------------------------------------------- batch rows

def with_load_columns(frame):
    """``frame`` (a batch output) with the load columns as numbers; a batch written before they existed gets
    them from its ``metrics`` JSON text (``peak_ratio`` then against each row's own bound)."""
    pd = pandas_module()
    missing = [c for c in BATCH_LOAD_COLUMNS if c not in frame.columns]
    if missing and "metrics" in frame.columns:
        from stickyflow.model import jsonio

        def fields(text: Any) -> dict[str, Any]:
            try:
                return load_fields(jsonio.loads(text)) if isinstance(text, str) and text else {}
            except ValueError:
                return {}

        derived = [fields(t) for t in frame["metrics"].tolist()]
        for c in missing:
            frame[c] = [d.get(c) for d in derived]
    for c in BATCH_LOAD_COLUMNS:
        frame[c] = pd.to_numeric(frame[c], errors="coerce") if c in frame.columns else float("nan")
    return frame


def load_summary(ok) -> dict[str, Any]:
    """The load columns of one summary row, over its solved rows ``ok`` (None where no row has loads):
    ``peak_ratio`` mean and largest, total ``moved_load`` and ``overload``, the most members ``overloaded``."""
    def number(x: Any) -> float | None:
        return None if x is None or x != x else float(x)

    ratio = ok["peak_ratio"].dropna() if "peak_ratio" in ok.columns else ok.iloc[0:0]
    if not len(ratio):
        return dict.fromkeys(LOAD_SUMMARY_COLUMNS)
    overloaded = number(ok["overloaded"].max())
    return {"peak_ratio_mean": number(ratio.mean()), "peak_ratio_max": number(ratio.max()),
            "moved_load_total": number(ok["moved_load"].sum()), "overload_total": number(ok["overload"].sum()),
            "overloaded_max": None if overloaded is None else int(overloaded)}


def plot_load_metrics(frame, path: str | Path | None = None) -> bytes:
    """Consumer groups with loads, one bar per assignor (mean ± sd over the solved snapshots, n under each
    name): the peak over the best proven bound on the least possible peak, the load moved, and the members
    above their capacity. Returns the PNG bytes (and writes them to ``path`` when given)."""
    from .batch import spread

    plt = pyplot()
    ok = frame[frame["error"].isna() | (frame["error"].astype(str) == "")]
    ok = ok[ok["peak_ratio"].notna()] if "peak_ratio" in ok.columns else ok.iloc[0:0]
    names = sorted(set(ok["assignor"]))
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2), squeeze=False)
    panels = [("peak_ratio", "peak / least-possible bound\n(mean ± sd; 1 = least possible)"),
              ("moved_load", "load moved per snapshot\n(the rates' unit, mean ± sd)"),
              ("overloaded", "members above capacity\nper snapshot (mean ± sd)")]
    for ax, (column, label) in zip(axes[0], panels):
        stats = [spread(ok[ok["assignor"] == a][column]) for a in names]
        vals = [st[0] for st in stats]
        ax.bar(range(len(names)), vals, color=[series_color(a) for a in names])
        ax.errorbar(range(len(names)), vals, yerr=[[st[0] - st[1] for st in stats], [st[2] - st[0] for st in stats]],
                    fmt="none", ecolor="black", elinewidth=1, capsize=4)
        ax.set_xticks(range(len(names)), [f"{a}\nn={st[3]}" for a, st in zip(names, stats)], fontsize=8,
                      rotation=20 if len(names) > 4 else 0)
        ax.set_xlabel("assignor (consumer groups with rates; n: snapshots)")
        ax.set_ylabel(label, fontsize=9)
        ax.grid(axis="y", alpha=0.3)
        top = max([st[2] for st in stats] + [0.0])
        low = 0.0 if column != "peak_ratio" else min([1.0] + [st[1] for st in stats])
        ax.set_ylim(low - (0.02 if column == "peak_ratio" else 0), top * 1.08 + (0.02 if column == "peak_ratio" else 1))
        if column == "peak_ratio" and names:
            ax.axhline(1.0, color="black", lw=0.8, ls=":")
        if not names:
            ax.text(0.5, 0.5, "no rows with rates", ha="center", va="center", transform=ax.transAxes)
        elif column == "overloaded" and top == 0:
            ax.text(0.5, 0.5, "no member above its capacity", ha="center", va="center", transform=ax.transAxes)
    fig.tight_layout()
    return save_png(fig, path)


# --------------------------------------------------------------------------- the sweep over load_slack

def has_loads(snapshot: Any) -> bool:
    """A consumer snapshot whose loads are known (rates on every topic someone reads)."""
    from stickyflow.check.load import loads_known

    return snapshot.kind == "consumer" and loads_known(snapshot)


def with_load_slack(snapshot: Any, slack: float) -> dict[str, Any]:
    """The snapshot's JSON balanced by load with ``config.load_slack = slack``.

    >>> doc = {"format": "stickyflow.snapshot/1", "kind": "consumer", "topics": {"t": {"partitions": 1,
    ...        "rates": [2]}}, "members": []}
    >>> config = with_load_slack(doc, 0.1)["config"]
    >>> config["balance"], config["load_slack"]
    ('load', 0.1)
    """
    import stickyflow

    doc = stickyflow.snapshot_to_json(stickyflow.as_snapshot(snapshot))
    doc["config"] = {**(doc.get("config") or {}), "balance": "load", "load_slack": float(slack)}
    return doc


def _parsed(text: Any) -> Any:
    import stickyflow
    from stickyflow.errors import InvalidSnapshotError
    from stickyflow.model import jsonio

    try:
        return stickyflow.as_snapshot(jsonio.loads(text) if isinstance(text, (str, bytes)) else text)
    except (InvalidSnapshotError, ValueError):
        return None


def first_with_loads(source: Any, count: int) -> tuple[list[Any], int]:
    """The first ``count`` snapshots with loads (:func:`has_loads`) in the dataset ``source``, and how many
    records were read to find them. Records that are not valid snapshots are passed over."""
    from stickyflow.datasets.io import read_dataset

    found: list[Any] = []
    read = 0
    for rec in read_dataset(source):
        read += 1
        snap = _parsed(rec.text)
        if snap is not None and has_loads(snap):
            found.append(snap)
            if len(found) >= count:
                break
    return found, read


def load_snapshots(count: int = 12, seed: int = 0) -> list[Any]:
    """``count`` seeded load snapshots: the load suites' first ones in turn (hot partitions, skewed topics,
    drifted rates), for a report whose batch carries none of its own."""
    import stickyflow
    from stickyflow.datasets.load_scenarios import LOAD_SUITES

    makers = [make for make, _, _ in LOAD_SUITES.values()]
    return [stickyflow.as_snapshot(makers[i % len(makers)](i // len(makers), seed)) for i in range(count)]


def _total_read(snap: Any) -> float:
    read = {t for m in snap.members for t in m.subscription}
    return float(sum(t.rates.sum() for name, t in snap.topics.items() if name in read and t.rates is not None))


def slack_sweep(snapshots: Iterable[Any], slacks: Sequence[float] = DEFAULT_SLACKS,
                assignors: Sequence[str] = SLACK_ASSIGNORS, *, time_limit: float | None = None,
                progress: Callable[[], None] | None = None):
    """Solve every load snapshot at every ``load_slack`` with every assignor; one row per (assignor, slack).

    Columns: ``assignor``, ``slack``, ``snapshots`` (solved), ``skipped`` (failed), ``moved_load`` (total),
    ``moved_pct`` (that total as a percentage of all the load read), ``peak_ratio_mean`` and
    ``peak_ratio_max`` (each snapshot's peak over the largest bound any solve of it proved), ``overloaded``
    (members above capacity, total), ``proven`` (solves with status ``"optimal"``), ``wall_s``. An assignor
    in :data:`SLACK_BLIND` is solved once per snapshot, its row repeated at every slack with ``slack_blind``
    true. ``progress()`` is called after each solve.
    """
    import stickyflow

    pd = pandas_module()
    snaps = [s for s in (stickyflow.as_snapshot(x) for x in snapshots) if has_loads(s)]
    slacks = tuple(float(x) for x in slacks)
    solved: dict[tuple[str, float], list[Any]] = {}  # (assignor, slack) -> per snapshot: result or None
    bounds = [0.0] * len(snaps)
    for assignor in assignors:
        if assignor not in stickyflow.available_assignors("consumer") and ":" not in assignor:
            continue
        for slack in slacks[:1] if assignor in SLACK_BLIND else slacks:
            got = []
            for k, snap in enumerate(snaps):
                try:
                    r = stickyflow.assign(with_load_slack(snap, slack), assignor, time_limit=time_limit)
                    bounds[k] = max(bounds[k], float(r.metrics["peak_bound"]))
                except Exception:  # noqa: BLE001 - a failing assignor is a skipped point, not a failed report
                    r = None
                finally:
                    if progress is not None:
                        progress()
                got.append(r)
            solved[(assignor, slack)] = got
    totals = [_total_read(s) for s in snaps]
    rows = []
    for (assignor, slack), got in solved.items():
        ok = [(k, r) for k, r in enumerate(got) if r is not None]
        ratios = [peak_ratio(r.metrics["peak_utilization"], bounds[k]) for k, r in ok]
        ratios = [x for x in ratios if x is not None]
        moved = sum(float(r.metrics["moved_load"]) for _, r in ok)
        whole = sum(totals[k] for k, _ in ok)
        row = {"assignor": assignor, "slack": slack, "slack_blind": assignor in SLACK_BLIND,
               "snapshots": len(ok), "skipped": len(got) - len(ok), "moved_load": moved,
               "moved_pct": 100.0 * moved / whole if whole > 0 else 0.0,
               "peak_ratio_mean": sum(ratios) / len(ratios) if ratios else None,
               "peak_ratio_max": max(ratios) if ratios else None,
               "overloaded": sum(int(r.metrics["overloaded"]) for _, r in ok),
               "proven": sum(r.solver.status == "optimal" for _, r in ok),
               "wall_s": sum(float(r.solver.wall_s) for _, r in ok)}
        rows += [dict(row, slack=s) for s in slacks] if assignor in SLACK_BLIND else [row]
    return pd.DataFrame(rows, columns=["assignor", "slack", "slack_blind", "snapshots", "skipped", "moved_load",
                                       "moved_pct", "peak_ratio_mean", "peak_ratio_max", "overloaded", "proven",
                                       "wall_s"])


def slack_table(sweep):
    """The sweep with one row per assignor and distinct result: an assignor that ignores the slack is one row
    (``slacks`` "all"); ``optimal``'s equal results at consecutive slacks are one row listing them."""
    pd = pandas_module()
    if sweep is None or not len(sweep):
        return sweep
    keys = ["snapshots", "skipped", "moved_load", "peak_ratio_mean", "peak_ratio_max", "overloaded", "proven"]
    out = []
    for assignor, g in sweep.groupby("assignor", sort=True):
        g = g.sort_values("slack")
        runs: list[tuple[tuple, list[float], float]] = []
        for rec in g.to_dict("records"):
            key = tuple(rec[c] for c in keys)
            if runs and runs[-1][0] == key:
                runs[-1][1].append(rec["slack"])
            else:
                runs.append((key, [rec["slack"]], rec["wall_s"]))
        for key, at, wall in runs:
            text = "all" if len(at) == len(g) else ", ".join(f"{x:g}" for x in at)
            out.append({"assignor": assignor, "slacks": text, **dict(zip(keys, key)), "wall_s": wall})
    return pd.DataFrame(out)


def plot_load_front(sweep, path: str | Path | None = None, *, optimizer: str = "optimal",
                    source: str | None = None) -> bytes:
    """The peak over the least possible (mean over the snapshots) against the load moved (as a percentage of
    all the load read): ``optimizer``'s points joined in slack order and labelled with their slack, the points
    no other of its points beats on both boxed, every other assignor one marker."""
    from .pareto import pareto_front

    plt = pyplot()
    part = sweep[sweep["snapshots"] > 0] if len(sweep) else sweep
    fig, ax = plt.subplots(figsize=(8, 6.4))
    n = int(part["snapshots"].max()) if len(part) else 0
    title = "Peak against moved load: sweeping load_slack"
    ax.set_title(f"{title}\n{n} consumer group{'s' if n != 1 else ''} with rates" + (f" ({source})" if source else ""),
                 fontsize=10)
    ax.set_xlabel("load moved (% of all the load read, over the snapshots)")
    ax.set_ylabel("peak utilization / least-possible bound (mean over the snapshots)")
    ax.grid(alpha=0.3)
    if not len(part):
        ax.text(0.5, 0.5, "no snapshots with rates solved", ha="center", va="center", transform=ax.transAxes)
    opt = part[part["assignor"] == optimizer].sort_values("slack") if len(part) else part
    if len(opt):
        ax.plot(opt["moved_pct"], opt["peak_ratio_mean"], "-o", color=series_color(optimizer),
                label=f"{optimizer}, s = load_slack", zorder=3)
        front = pareto_front(zip(opt["moved_pct"], opt["peak_ratio_mean"]))
        ax.plot([p[0] for p in front], [p[1] for p in front], "s", mfc="none", ms=11, color="black",
                label="front (nothing better on both)", zorder=4)
    others = part[part["assignor"] != optimizer].drop_duplicates(["assignor", "moved_pct", "peak_ratio_mean"]) \
        if len(part) else part
    for name, g in others.groupby("assignor", sort=True):
        ax.scatter(g["moved_pct"], g["peak_ratio_mean"], marker=series_marker(name), s=90, color=series_color(name),
                   label=name if len(g) == 1 else f"{name} ({len(g)} points)", zorder=5)
    if len(part):
        ax.axhline(1.0, color="black", lw=0.8, ls=":", zorder=1)
        ys = [float(y) for y in part["peak_ratio_mean"].dropna()]
        xs = [float(x) for x in part["moved_pct"].dropna()]
        ax.set_ylim(min(ys + [1.0]) - 0.02, max(ys) + 0.05 * (max(ys) - 1.0) + 0.03)
        ax.set_xlim(-2, max(xs + [1.0]) * 1.08 + 1)
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3, frameon=False)
    if len(opt):
        labels: dict[tuple[float, float], list[str]] = {}
        for rec in opt.to_dict("records"):
            labels.setdefault((rec["moved_pct"], rec["peak_ratio_mean"]), []).append(f"{rec['slack']:g}")
        place_labels(ax, [(x, y, "s=" + ", ".join(t)) for (x, y), t in labels.items()],
                     color=series_color(optimizer))
    fig.tight_layout()
    return save_png(fig, path)


# --------------------------------------------------------------------------- a batch report's load section

@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class LoadBlocks:
    """What :func:`load_blocks` adds to a report: page blocks, files written, notes, and the sweep."""

    blocks: tuple[tuple[str, Any], ...] = ()
    files: Mapping[str, Path] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    sweep: Any = None


def load_blocks(frame, out: Path, *, snapshots: Sequence[Any] | None, source: str,
                slacks: Sequence[float] | None = DEFAULT_SLACKS, assignors: Sequence[str] = SLACK_ASSIGNORS,
                time_limit: float | None = 10.0) -> LoadBlocks:
    """The load section of a batch report, when the batch has rows with loads: the bar chart
    (``load.png``) and, given ``snapshots`` and ``slacks``, the front (``load_front.png``, ``load_front.csv``)."""
    if "peak_ratio" not in frame.columns or not frame["peak_ratio"].notna().any():
        return LoadBlocks()
    files = {"load.png": out / "load.png"}
    blocks: list[tuple[str, Any]] = [("Balance by load: the peak against the least possible, the load moved",
                                      plot_load_metrics(frame, files["load.png"]))]
    notes: list[str] = []
    sweep = None
    if slacks and snapshots is not None:
        if not snapshots:
            notes.append(f"No load_slack front: {source} holds no consumer group with rates.")
        else:
            sweep = slack_sweep(snapshots, slacks, assignors, time_limit=time_limit)
            files["load_front.csv"] = out / "load_front.csv"
            sweep.to_csv(files["load_front.csv"], index=False)
            files["load_front.png"] = out / "load_front.png"
            blocks += [("Peak against moved load (sweeping load_slack)",
                        plot_load_front(sweep, files["load_front.png"], source=source)),
                       ("load_slack sweep", f"Input: {source}; load_slack = {', '.join(f'{s:g}' for s in slacks)}."),
                       ("load_slack sweep totals (one row per assignor and result)", slack_table(sweep))]
    return LoadBlocks(blocks=tuple(blocks), files=files, notes=tuple(notes), sweep=sweep)


_ = LOAD_METRICS  # the metrics these columns come from (adapters/load_rows.py)
