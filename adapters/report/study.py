"""A study's pictures and page (``stickyflow compare``): metrics against size, rounds to converge, the
traffic-against-moves Pareto sweep, tables with every metric defined, and ``study.json``.

Every plot has one quantity per axis with its unit, one panel per kind (a consumer
group's partitions and a Streams application's tasks never share an axis), a
legend when it shows more than one series, and solve times that exclude each
worker's first-call warm-up (see :mod:`stickyflow.adapters.compare`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping, Sequence

from .base import (Html, series_color, from_zero, log_axis, series_marker, pandas_module, pyplot, save_png, html_page,
                   legend_outside)
from .pareto import DEFAULT_RATIOS

__all__ = ["DEFINITIONS", "plot_vs_size", "plot_rounds", "pareto_for_study", "pareto_table", "write_study_report"]

SIZE_UNIT = {"consumer": "partitions", "streams": "tasks"}
GROUP_UNIT = {"consumer": "members", "streams": "clients"}
# column -> (axis label, plot file stem)
SIZE_PLOTS = {
    "moves_mean": ("moves per snapshot (mean)", "moves_vs_size"),
    "imbalance_mean": ("imbalance per snapshot (mean)", "balance_vs_size"),
    "cross_rack_mean": ("cross-rack reads per snapshot (mean)", "cross_rack_vs_size"),
    "cost_mean": ("cost per snapshot (mean)", "cost_vs_size"),
    "wall_ms_p50": ("solve time per snapshot, ms (median)", "time_vs_size"),
}
DEFINITIONS = (
    ("snapshots", "snapshots of this kind the assignor was given (an assignor that does not serve a kind has none)"),
    ("errors", "snapshots it could not solve (the row's error says why); every other metric is over solved ones"),
    ("moves", "consumer: partitions whose valid previous owner (KIP-341) lost them; Streams: active tasks that left "
              "their previous client. Per snapshot, in the first rebalance"),
    ("standby moves", "Streams: standbys placed on a client that held the task in no role before"),
    ("imbalance", "consumer: most minus fewest partitions per member; Streams: most minus fewest active tasks per "
                  "thread"),
    ("balanced", "Streams: snapshots whose assignment is balanced in active, stateful-active and all replicas "
                 "(the spec's Balanced rule)"),
    ("cross-rack", "partitions (consumer) or input/changelog partitions (Streams) read from another rack, where "
                   "racks are known"),
    ("cost", "consumer: non_overlap_cost x moves + traffic_cost x cross-rack reads; Streams: KIP-925's cost of "
             "the assignment. With the snapshot's own costs (defaults 1 and 10)"),
    ("rounds", "rebalances until no follow-up is asked for, played by the simulator (1: settled at once). "
               "Cooperative consumers take a second round after revoking; Streams warm-ups take probing "
               "rebalances until their state has caught up"),
    ("not converged", "snapshots still asking for a follow-up after the round cap"),
    ("minutes to converge", "simulated time from the first rebalance to the converged one (probing interval "
                            "10 minutes by default)"),
    ("solve time", "the assignor's own wall time per snapshot in milliseconds (median, 95th percentile), "
                   "after each worker's warm-up solve; start-up and reading are not included"),
)


def _finite(v: Any) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v)) and v is not pandas_module().NA


def plot_vs_size(by_size, column: str, path: str | Path | None = None, *, ylabel: str | None = None) -> bytes:
    """One panel per kind: ``column`` of :data:`by_size` (a size band's mean) against the band's mean size,
    one line per assignor."""
    plt = pyplot()
    label = ylabel or SIZE_PLOTS.get(column, (column, ""))[0]
    t = by_size[by_size["solved"].fillna(0) > 0] if len(by_size) else by_size
    kinds = [k for k in ("consumer", "streams") if len(t) and (t["kind"] == k).any()] or ["consumer"]
    fig, axes = plt.subplots(1, len(kinds), figsize=(6.2 * len(kinds), 4.4), squeeze=False)
    for ax, kind in zip(axes[0], kinds):
        part = t[t["kind"] == kind] if len(t) else t
        series = 0
        xs_all: list[float] = []
        ys_all: list[float] = []
        for assignor in sorted(set(part["assignor"])) if len(part) else []:
            g = part[part["assignor"] == assignor].sort_values("size_mean")
            pts = [(float(x), float(y)) for x, y in zip(g["size_mean"], g[column]) if _finite(x) and _finite(y)]
            if not pts:
                continue
            series += 1
            xs_all += [p[0] for p in pts]
            ys_all += [p[1] for p in pts]
            optimal = assignor == "optimal"
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=series_marker(assignor), ms=7 if optimal else 5,
                    mfc=series_color(assignor) if optimal else "none", color=series_color(assignor), label=assignor,
                    linestyle="--" if assignor.startswith("kp-") else "-", lw=2.2 if optimal else 1.3,
                    zorder=2 if optimal else 3, alpha=0.9, clip_on=False)  # a point at 0 is drawn whole
        if not series:
            ax.text(0.5, 0.5, "no solved snapshots with this metric", ha="center", va="center",
                    transform=ax.transAxes)
        else:
            if max(xs_all) >= 20 * min(xs_all):
                log_axis(ax, "x")
            pos = [y for y in ys_all if y > 0]
            if column.startswith("wall_ms") and pos and max(pos) >= 30 * min(pos) and min(ys_all) > 0:
                log_axis(ax, "y")
            else:
                from_zero(ax, ys_all)
            if series > 1:
                legend_outside(ax, title="assignor", title_fontsize=8)
        ax.set_xlabel(f"size: {SIZE_UNIT.get(kind, 'items')} per snapshot (band mean)")
        ax.set_ylabel(label)
        ax.set_title(f"{kind} {'groups' if kind == 'consumer' else 'applications'}", fontsize=10)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return save_png(fig, path)


def plot_rounds(summary, path: str | Path | None = None) -> bytes:
    """Rebalances to converge per assignor (mean, and the most any snapshot took), one panel per kind."""
    plt = pyplot()
    t = summary[summary["rounds_mean"].map(_finite)] if len(summary) else summary
    kinds = [k for k in ("consumer", "streams") if len(t) and (t["kind"] == k).any()] or ["consumer"]
    fig, axes = plt.subplots(1, len(kinds), figsize=(6.2 * len(kinds), 4.2), squeeze=False)
    for ax, kind in zip(axes[0], kinds):
        part = t[t["kind"] == kind].sort_values("assignor") if len(t) else t
        names = list(part["assignor"]) if len(part) else []
        means = [float(v) for v in part["rounds_mean"]] if len(part) else []
        maxes = [float(v) for v in part["rounds_max"]] if len(part) else []
        x = list(range(len(names)))
        ax.bar(x, means, color=[series_color(n) for n in names], label="mean over snapshots")
        ax.scatter(x, maxes, marker="_", s=400, color="black", zorder=3, label="most for one snapshot")
        played = part["snapshots"] - part["errors"].fillna(0) if "errors" in part.columns else part["snapshots"]
        ax.set_xticks(x, [f"{a}\nn={int(n)}" for a, n in zip(names, played)], fontsize=9,
                      rotation=20 if len(names) > 4 else 0)
        ax.set_xlabel("assignor (n: snapshots played)")
        ax.set_ylabel("rebalances to converge")
        ax.set_title(f"{kind}", fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        ax.yaxis.get_major_locator().set_params(integer=True)
        ax.set_ylim(0, (max(maxes) if maxes else 1) * 1.1 + 0.2)
        if names:
            legend_outside(ax)
        else:
            ax.text(0.5, 0.5, "nothing played", ha="center", va="center", transform=ax.transAxes)
    fig.tight_layout()
    return save_png(fig, path)


def pareto_for_study(src: Any, assignors: Sequence[str], *, count: int = 12, ratios: Sequence[float] | None = None,
                     time_limit: float | None = 10.0, progress: Any = None):
    """The traffic-against-moves sweep over the study's first ``count`` rack-aware snapshots of each kind
    (None when ``count`` is 0 or none has racks). ``progress``: a :class:`~stickyflow.adapters.progress.Ticker`
    to count the solves with (its ``total`` is set once the snapshots are chosen)."""
    if not count:
        return None
    import stickyflow

    from .pareto import has_racks, pareto_sweep

    found: dict[str, list[Any]] = {"consumer": [], "streams": []}

    def take(doc: Any) -> bool:
        try:
            snap = stickyflow.as_snapshot(doc)
        except Exception:  # noqa: BLE001 - a bad snapshot is not swept
            return False
        if has_racks(snap) and len(found[snap.kind]) < count:
            found[snap.kind].append(snap)
        return all(len(v) >= count for v in found.values())

    if src.suites:
        from stickyflow.datasets.suites import suite_item

        for name, n in zip(src.suites, src.counts):
            for i in range(min(n, 50 * count)):
                if take(suite_item(name, i, src.seed)):
                    break
    else:
        from stickyflow.model import jsonio
        from stickyflow.datasets.io import read_dataset

        for k, rec in enumerate(read_dataset(src.path)):
            try:
                if take(jsonio.loads(rec.text)) or k > 50 * count:
                    break
            except ValueError:
                continue
    snaps = found["consumer"] + found["streams"]
    if not snaps:
        return None
    names = [a for a in assignors if a not in ("kp-roundrobin",)]
    ratios = tuple(ratios or DEFAULT_RATIOS)
    if progress is not None:
        progress.total = len(ratios) * sum(  # the solves pareto_sweep makes: an assignor serves its kinds only
            len(found[kind]) * sum(a in stickyflow.available_assignors(kind) or ":" in a for a in names)
            for kind in found)
    return pareto_sweep(snaps, ratios, names, time_limit=time_limit,
                        progress=None if progress is None else progress.step)


def pareto_table(sweep):
    """The sweep with no repeated rows: an assignor whose totals are the same at several ratios (a greedy one
    that ignores the costs, say) gets one row listing those ratios."""
    from .pareto import pareto_table as collapse

    return collapse(sweep)


def _fmt_table(frame, columns: Mapping[str, str]):
    """The columns renamed for reading; absent ones skipped; empty ones dropped."""
    keep = [c for c in columns if c in frame.columns and frame[c].map(_finite).any()]
    return frame[keep].rename(columns={c: columns[c] for c in keep})


QUALITY = {"kind": "kind", "assignor": "assignor", "snapshots": "snapshots", "errors": "errors",
           "moves_mean": "moves", "standby_moves_mean": "standby moves", "imbalance_mean": "imbalance",
           "imbalance_max": "imbalance max", "balanced": "balanced", "cross_rack_mean": "cross-rack",
           "cost_mean": "cost"}
SPEED = {"kind": "kind", "assignor": "assignor", "rounds_mean": "rounds", "rounds_max": "rounds max",
         "not_converged": "not converged", "converge_moves_mean": "moves until converged",
         "converge_min_mean": "minutes to converge", "wall_ms_p50": "solve ms (median)",
         "wall_ms_p95": "solve ms (p95)"}
BY_SUITE = {"suite": "suite", "kind": "kind", "assignor": "assignor", "snapshots": "snapshots", "errors": "errors",
            "moves_mean": "moves", "imbalance_mean": "imbalance", "cross_rack_mean": "cross-rack",
            "cost_mean": "cost", "rounds_mean": "rounds", "wall_ms_p50": "solve ms (median)"}


def write_study_report(out: str | Path, tables: Mapping[str, Any], record: Mapping[str, Any]) -> dict[str, Path]:
    """Write the CSV tables, the PNGs, ``report.html`` and ``study.json`` into ``out``; name -> path."""
    from stickyflow.model import jsonio

    out = Path(out)
    files: dict[str, Path] = {}
    for name, table in tables.items():
        files[f"{name}.csv"] = out / f"{name}.csv"
        table.to_csv(files[f"{name}.csv"], index=False)
    pngs: dict[str, bytes] = {}
    for column, (_, stem) in SIZE_PLOTS.items():
        files[f"{stem}.png"] = out / f"{stem}.png"
        pngs[stem] = plot_vs_size(tables["by_size"], column, files[f"{stem}.png"])
    files["rounds.png"] = out / "rounds.png"
    pngs["rounds"] = plot_rounds(tables["summary"], files["rounds.png"])
    pareto = tables.get("pareto")
    if pareto is not None and len(pareto):
        from .pareto import plot_pareto

        files["pareto.png"] = out / "pareto.png"
        pngs["pareto"] = plot_pareto(pareto, files["pareto.png"])
    files["study.json"] = out / "study.json"
    files["study.json"].write_bytes(jsonio.dumps(dict(record), indent=True) + b"\n")

    summary = tables["summary"]
    source = record.get("suites") or record.get("dataset")
    intro = (f"Source {record.get('source')}: " +
             (", ".join(f"{k} ({v})" for k, v in source.items()) if isinstance(source, dict) else str(source)) +
             f"; seed {record.get('seed', '-')}; assignors {', '.join(record['assignors'])}; "
             f"{record['rows']} rows on {record['engine']}"
             + (f" ({record['master']})" if record.get("master") else "") +
             f" in {record['wall_s']:.1f} s. Rounds played up to {record['rounds']} per snapshot.")
    command = record.get("command")
    blocks: list[tuple[str, Any]] = [("Study", intro)]
    if command:
        blocks.append(("Command", Html("<pre>" + _esc(" ".join(command)) + "</pre>")))
    blocks += [
        ("What the columns mean", Html(_definitions())),
        ("Quality per kind and assignor (means per solved snapshot)", _fmt_table(summary, QUALITY)),
        ("Convergence and speed", _fmt_table(summary, SPEED)),
        ("Moves against size", pngs["moves_vs_size"]),
        ("Balance against size", pngs["balance_vs_size"]),
        ("Cross-rack reads against size", pngs["cross_rack_vs_size"]),
        ("Cost against size", pngs["cost_vs_size"]),
        ("Solve time against size", pngs["time_vs_size"]),
        ("Rebalances to converge", pngs["rounds"]),
    ]
    if "pareto" in pngs:
        blocks += [("Traffic against moves (sweeping traffic_cost / non_overlap_cost)", pngs["pareto"]),
                   ("Pareto sweep totals", pareto_table(pareto))]
    by_suite = tables.get("by_suite")
    if by_suite is not None and len(set(by_suite["suite"])) > 1:
        blocks.append(("Per suite", _fmt_table(by_suite, BY_SUITE)))
    errors = int(summary["errors"].fillna(0).sum()) if len(summary) else 0
    if errors:
        blocks.append(("Note", f"{errors} rows could not be solved; results.parquet holds each one's error."))
    files["report.html"] = out / "report.html"
    files["report.html"].write_text(html_page("stickyflow study", blocks), encoding="utf-8")
    return files


def _esc(text: str) -> str:
    import html

    return html.escape(text)


def _definitions() -> str:
    return "<dl>" + "".join(f"<dt>{_esc(k)}</dt><dd>{_esc(v)}</dd>" for k, v in DEFINITIONS) + "</dl>"
