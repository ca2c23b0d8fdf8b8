"""A simulation's pictures and page: :func:`plot_simulation` and :func:`write_simulation_report`
(``stickyflow simulate -o``)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping, Sequence

from .base import EXTRA_COLORS, PALETTE, Html, series_color, pandas_module, pyplot, save_png, html_page
from .batch import Report

__all__ = ["plot_simulation", "convergence_bars", "write_simulation_report"]

# --------------------------------------------------------------------------- simulations

def plot_simulation(simulation: Any, path: str | Path | None = None) -> bytes:
    """Round-by-round panels of a simulation (a :class:`~stickyflow.datasets.simulator.Simulation` or its rows):
    moves, imbalance, cross-rack reads, warm-ups or withheld partitions, and rounds to converge per episode."""
    plt = pyplot()
    pd = pandas_module()
    rows = pd.DataFrame(simulation.rows() if hasattr(simulation, "rows") else list(simulation))
    summary = pd.DataFrame(simulation.summary()) if hasattr(simulation, "summary") else None
    streams = bool(len(rows)) and (rows["kind"] == "streams").any()
    if len(rows):
        rows = rows.assign(moves_cumulative=rows.groupby("label", sort=False)["moves"].cumsum())
    unit = "tasks" if streams else "partitions"
    kind_panels = ([("warmups", "warm-up replicas"), ("restoring_actives", "active tasks still restoring")]
                   if streams else
                   [("revoked", "partitions revoked (cooperative)"), ("withheld", "partitions withheld (cooperative)")])
    panels = [("moves", f"moves this round ({unit})"), ("moves_cumulative", f"moves since start ({unit})"),
              ("imbalance", "imbalance (tasks per thread)" if streams else "imbalance (partitions per member)"),
              ("cross_rack", "cross-rack reads (partitions)"), *kind_panels, ("wall_ms", "solve time (ms)")]
    if len(rows):
        rows = rows.assign(wall_ms=1000 * pd.to_numeric(rows["wall_s"], errors="coerce"))
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
                    linestyle=["-", "--", ":", "-."][i % 4])
        _mark_events(ax, rows)
        ax.set_ylabel(title, fontsize=9)
        ax.set_xlabel("round (one rebalance each; dotted: an event)", fontsize=8)
        ax.grid(alpha=0.3)
        if col != "wall_ms":
            ax.set_ylim(bottom=0)
        ax.yaxis.get_major_locator().set_params(integer=col != "wall_ms" and col != "imbalance")
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], marker=".", color=colors[label], linestyle=["-", "--", ":", "-."][i % 4])
               for i, label in enumerate(labels)] if len(labels) > 1 else []
    names = list(labels) if len(labels) > 1 else []
    ax = axes.flat[7]
    if summary is not None and len(summary):
        never = _convergence_panel(ax, summary, rows, labels, colors)
        if never:
            from matplotlib.patches import Patch

            handles.append(Patch(facecolor="white", edgecolor="#c0392b", hatch="xxx"))
            names.append("not converged within the run (bar: the rebalances watched)")
    else:
        ax.axis("off")
    name = rows["scenario"].iloc[0] if len(rows) else "simulation"
    fig.suptitle(f"Simulation: {name}", fontsize=12, y=0.995)
    # one legend for every panel, above them: a legend inside a panel covers its lines
    if handles:
        fig.legend(handles, names, loc="upper center", bbox_to_anchor=(0.5, 0.965), ncol=len(handles), fontsize=8,
                   frameon=False, title="run", title_fontsize=8)
    fig.tight_layout(rect=(0, 0, 1, 0.91 if handles else 0.97))
    return save_png(fig, path)


def convergence_bars(summary, rows) -> list[dict[str, Any]]:
    """The bars of the rounds-to-converge panel: one per run (``label``) and disturbance (``episode``), with its
    ``height`` and whether the run ``converged``. A run that never settles within the run gets the rebalances
    watched after the disturbance (up to the next one, or the end) as its height: at least that many, never 0.

    >>> import pandas as pd
    >>> s = pd.DataFrame({"label": ["a", "a"], "episode": [0, 1], "start_round": [0, 4],
    ...                   "rounds_to_converge": [2, None]})
    >>> [(b["height"], b["converged"]) for b in convergence_bars(s, pd.DataFrame({"label": "a", "round": range(10)}))]
    [(2.0, True), (6.0, False)]
    """
    bars = []
    for label in dict.fromkeys(summary["label"]):
        g = summary[summary["label"] == label]
        last = int(rows.loc[rows["label"] == label, "round"].max()) if len(rows) else 0
        for e, start, v in zip(g["episode"], g["start_round"], g["rounds_to_converge"]):
            converged = v is not None and not (isinstance(v, float) and math.isnan(v))
            if not converged:
                nxt = [s for s in g["start_round"] if s > start]
                v = max(1, (min(nxt) if nxt else last + 1) - int(start))
            bars.append({"label": label, "episode": e, "height": float(v), "converged": converged})
    return bars


def _convergence_panel(ax, summary, rows, labels: Sequence[str], colors: Mapping[str, str]) -> int:
    """Rebalances to converge per disturbance and run (:func:`convergence_bars`); a run that never settles is a
    hatched bar that says "not converged", not a bar of height 0 (the look of the best result). Returns how many
    such bars were drawn."""
    episodes = list(dict.fromkeys(zip(summary["episode"], summary["cause"])))
    n = max(1, len(labels))
    width = 0.8 / n
    never = 0
    for bar in convergence_bars(summary, rows):
        i = labels.index(bar["label"]) if bar["label"] in labels else 0
        x = bar["episode"] + (i - (n - 1) / 2) * width
        if bar["converged"]:
            ax.bar(x, bar["height"], width=width, color=colors.get(bar["label"]), hatch=["", "//", "..", "xx"][i % 4])
            continue
        ax.bar(x, bar["height"], width=width, facecolor="white", edgecolor="#c0392b", hatch="xxx", linewidth=1.2)
        ax.text(x, bar["height"], "not\nconverged", ha="center", va="bottom", fontsize=6.5, color="#c0392b")
        never += 1
    ax.set_xticks([e for e, _ in episodes], [_short(c) for _, c in episodes], fontsize=7, rotation=30, ha="right")
    ax.set_xlabel("disturbance", fontsize=8)
    ax.set_ylabel("rebalances to converge", fontsize=9)
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.margins(y=0.18)
    ax.set_ylim(bottom=0)
    ax.grid(axis="y", alpha=0.3)
    return never


def _run_colors(labels: Sequence[str]) -> dict[str, str]:
    """An assignor's own colour, unless two runs share an assignor (readiness compared): then one colour each."""
    bases = [label.split(" ")[0] for label in labels]
    if len(set(bases)) == len(bases):
        return {label: series_color(label) for label in labels}
    cycle = list(PALETTE.values()) + list(EXTRA_COLORS)
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
    pd = pandas_module()
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
    page = html_page(title or f"stickyflow simulation: {name}", [
        ("Rounds to converge", _readable_summary(summary, simulation)),
        ("What the columns mean", Html(_definitions(simulation.scenario.kind))),
        ("Per round", png),
        ("Rounds", _readable_rounds(rounds)),
    ])
    files["simulation.html"].write_text(page, encoding="utf-8")
    return Report(files=files, summary=summary)


def _minutes(ms: Any) -> str:
    if ms is None or (isinstance(ms, float) and math.isnan(ms)):
        return "never (within the run)"
    minutes = float(ms) / 60_000.0
    return "at once" if minutes == 0 else f"{minutes:,.1f} min"


def _readiness(value: Any, kind: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "not applicable (consumer group)" if kind == "consumer" else "the mode's own"
    return str(value)


def _readable_summary(summary, simulation):
    """The convergence table in words: readiness spelled out, rounds 'not converged', times in minutes."""
    pd = pandas_module()
    kind = simulation.scenario.kind
    if not len(summary):
        return summary
    out = pd.DataFrame({
        "run": summary["label"],
        "disturbance": summary["cause"],
        "starts at round": summary["start_round"],
        "rebalances to converge": [("not converged" if v is None or (isinstance(v, float) and math.isnan(v))
                                    else int(v)) for v in summary["rounds_to_converge"]],
        "time to converge": [_minutes(v) for v in summary["time_to_converge_ms"]],
        "moves": summary["moves"],
        "largest imbalance": summary["max_imbalance"],
    })
    if kind == "streams":
        out.insert(1, "warm-up readiness", [_readiness(v, kind) for v in summary["readiness"]])
    return out


def _readable_rounds(rounds):
    pd = pandas_module()
    if not len(rounds):
        return rounds
    start = rounds.groupby("label")["time_ms"].transform("min")
    out = pd.DataFrame({"run": rounds["label"], "round": rounds["round"],
                        "minutes since start": ((rounds["time_ms"] - start) / 60_000.0).round(1),
                        "why": rounds["trigger"], "events": rounds["events"]})
    for c, name in (("members", "members"), ("status", "status"), ("moves", "moves"), ("imbalance", "imbalance"),
                    ("cross_rack", "cross-rack"), ("revoked", "revoked"), ("withheld", "withheld"),
                    ("warmups", "warm-ups"), ("standbys", "standbys"), ("restoring_actives", "actives restoring")):
        if c in rounds.columns and rounds[c].notna().any():
            out[name] = rounds[c]
    out["follow-up asked"] = rounds["followup"].map({True: "yes", False: "no"})
    out["solve ms"] = (1000 * rounds["wall_s"]).round(2)
    return out


def _definitions(kind: str) -> str:
    import html

    rows = [("rebalances to converge", "rebalances from the disturbance to the first one that asks for no "
                                       "follow-up, both counted; not converged: none within the run"),
            ("time to converge", "simulated time from the disturbance to that rebalance"),
            ("moves", "moves summed over the rebalances of the episode")]
    if kind == "streams":
        rows += [("warm-up readiness", "eager: a warm-up that has caught up triggers a rebalance at once (the "
                                       "early KIP-441 draft's learners); conservative: it waits for the next "
                                       "probing rebalance (KIP-441 as shipped)"),
                 ("warm-ups", "warm-up replicas in the round's assignment (state being copied before a move)"),
                 ("actives restoring", "stateful active tasks on a client that is not yet caught up")]
    else:
        rows += [("revoked", "partitions members must give up this round (cooperative protocol)"),
                 ("withheld", "partitions given to nobody this round while their owner revokes them")]
    return "<dl>" + "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in rows) + "</dl>"
