"""A simulation's pictures and page: :func:`plot_simulation` and :func:`write_simulation_report`
(``stickyflow simulate -o``)."""

from __future__ import annotations

import base64
import html
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from stickyflow.errors import BackendMissingError, InvalidSnapshotError, Problem

from .report_base import _EXTRA, _PALETTE, _color, _pandas, _pyplot, _save, html_page
from .report_batch import Report

__all__ = ["plot_simulation", "write_simulation_report"]

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

