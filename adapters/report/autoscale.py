"""The autoscaling study: runs of plan methods over rate traces as tables, plots and the issue's checks.

:func:`write_autoscale_report` writes, into one folder:

* ``runs.csv``: one row per trace and method (:meth:`TraceRun.summary`, and ``at_fewest``: the steps at which
  the method used the fewest members, as the exact plan proved them);
* ``steps.csv``: one row per trace, method and step (consumers, moved load, R-score,
  moves, plan ran, count proven, bound);
* ``table.md``: per delta, each method's means over the traces (consumers, R-score,
  p50/p90/p99 latency), Markdown for docs/study.md;
* ``checks.json``: the study's criteria (:func:`autoscale_checks`) and how the study was run;
* ``consumers.png`` (consumers over time, first trace of each delta) and
  ``p99_vs_consumers.png`` (p99 latency against mean consumers, Kafka's static
  round-robin as a curve over its sizes, each plan method a point).

>>> _order(["optimal", "kafka:12", "bfd", "kafka:10"])
['optimal', 'bfd', 'kafka:10', 'kafka:12']
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from .base import legend_outside, pyplot

__all__ = ["write_autoscale_report", "autoscale_checks", "summary_table"]

_STYLE = {"optimal": ("#1f77b4", "o", "stickyflow least moved"), "latency": ("#17becf", "D", "stickyflow latency-aware"),
          "bfd": ("#d62728", "s", "BFD"), "mwf": ("#2ca02c", "^", "MWF"), "mbfp": ("#9467bd", "v", "MBFP"),
          "least-loaded": ("#8c564b", "P", "least-loaded (Ezzeddine)")}
_STEP_FIELDS = ("trace", "delta", "method", "step", "consumers", "moved_load", "rscore", "moves", "planned",
                "proven", "bound")


def _order(methods: Sequence[str]) -> list[str]:
    plans = [m for m in methods if not m.startswith("kafka:")]
    kafka = sorted((m for m in methods if m.startswith("kafka:")), key=lambda m: int(m[6:]))
    return plans + kafka


def _label(method: str) -> str:
    if method.startswith("kafka:"):
        return f"Kafka static k={method[6:]}"
    return _STYLE.get(method, (None, None, method))[2]


def summary_table(rows: Sequence[Mapping[str, Any]], delta: float) -> str:
    """Markdown: per method (plans first, then Kafka by size), the means over the traces of ``delta``."""
    picked = [r for r in rows if r["delta"] == delta]
    lines = ["| method | consumers | R-score | p50 (s) | p90 (s) | p99 (s) | steps at the proven fewest |",
             "|---|---|---|---|---|---|---|"]
    for m in _order(list(dict.fromkeys(r["method"] for r in picked))):
        mine = [r for r in picked if r["method"] == m]
        avg = {k: float(np.mean([r[k] for r in mine])) for k in ("consumers", "rscore", "p50_s", "p90_s", "p99_s")}
        fewest = [r.get("at_fewest") for r in mine]
        proven = "-" if m.startswith("kafka:") or None in fewest else f"{sum(fewest)}/{sum(r['steps'] for r in mine)}"
        lines.append(f"| {_label(m)} | {avg['consumers']:.2f} | {avg['rscore']:.3f} | {avg['p50_s']:.2f} | "
                     f"{avg['p90_s']:.2f} | {avg['p99_s']:.2f} | {proven} |")
    return "\n".join(lines) + "\n"


def autoscale_checks(runs: Mapping[tuple[str, float | None], Mapping[str, Any]],
                     exact: str = "optimal") -> dict[str, Any]:
    """The study's criteria over every trace (``runs``: (trace id, delta) -> method -> :class:`TraceRun`):

    * ``never_more_consumers``: at no step of any trace does ``exact`` use more consumers than the better of
      BFD and MWF;
    * ``proven_95``: at least 95% of ``exact``'s plan steps prove their member count;
    * ``rscore_mwf_1.25`` and ``rscore_bfd_0.6``: per delta, ``exact``'s mean R-score over the traces is at
      most 1.25 x MWF's and 0.6 x BFD's (the thesis's average R-score of a stream, per delta); the worst
      single trace is reported beside;
    * ``p99_bfd``: on every trace, ``exact``'s p99 latency is at most BFD's.
    """
    worse_steps = plans = proven = 0
    per_trace_mwf, per_trace_bfd, p99 = [], [], []
    by_delta: dict[Any, list[tuple[float, float, float]]] = {}
    for (trace, delta), by in runs.items():
        e, b, w = by[exact], by["bfd"], by["mwf"]
        worse_steps += int((e.consumers > np.minimum(b.consumers, w.consumers)).sum())
        plans += int(e.planned.sum())
        proven += int(e.proven.sum())
        per_trace_mwf.append(_ratio(e.rscore.mean(), w.rscore.mean()))
        per_trace_bfd.append(_ratio(e.rscore.mean(), b.rscore.mean()))
        p99.append(_ratio(e.latency.p99, b.latency.p99))
        by_delta.setdefault(delta, []).append((e.rscore.mean(), w.rscore.mean(), b.rscore.mean()))
    deltas = {}
    for delta, trios in by_delta.items():
        mean = np.mean(np.array(trios), axis=0)
        deltas[_delta_name(delta)] = {"rscore": float(mean[0]), "rscore_mwf": float(mean[1]),
                                      "rscore_bfd": float(mean[2]), "vs_mwf": _ratio(mean[0], mean[1]),
                                      "vs_bfd": _ratio(mean[0], mean[2])}
    out = {"traces": len(runs), "steps_with_more_consumers": worse_steps,
           "proven_share": proven / plans if plans else 1.0, "per_delta": deltas,
           "rscore_vs_mwf_worst_trace": max(per_trace_mwf), "rscore_vs_bfd_worst_trace": max(per_trace_bfd),
           "p99_vs_bfd_worst_trace": max(p99)}
    out["met"] = {"never_more_consumers": worse_steps == 0, "proven_95": out["proven_share"] >= 0.95,
                  "rscore_mwf_1.25": all(d["vs_mwf"] <= 1.25 for d in deltas.values()),
                  "rscore_bfd_0.6": all(d["vs_bfd"] <= 0.6 for d in deltas.values()),
                  "p99_bfd": out["p99_vs_bfd_worst_trace"] <= 1.0}
    return out


def _proven_fewest(by: Mapping[str, Any]) -> np.ndarray | None:
    """Per step, the fewest members the exact plan proved (-1 where it proved none): the least count depends
    on the step's rates alone, so it holds for every method's run of the trace."""
    exact = by.get("optimal")
    if exact is None:
        return None
    return np.where(exact.proven, exact.consumers, -1)


def _delta_name(delta: float | None) -> str:
    return "the trace" if delta is None else f"delta {delta:g}"


def _ratio(a: float, b: float) -> float:
    if b == 0:
        return 0.0 if a == 0 else float("inf")
    return float(a) / float(b)


def _plot_consumers(runs: Mapping[str, Any], trace: str, path: Path) -> None:
    """One panel per plan method (so that no line hides another): its consumers over time, and the proven
    fewest (the exact plan's bound) as a grey band behind."""
    plt = pyplot()
    methods = [m for m in _order(list(runs)) if not m.startswith("kafka:")]
    fig, axes = plt.subplots(len(methods), 1, figsize=(9.0, 1.45 * len(methods) + 0.9), sharex=True, sharey=True,
                             squeeze=False)
    any_run = runs[methods[0]]
    minutes = np.arange(len(any_run.consumers)) * any_run.step_s / 60.0
    bound = runs["optimal"].bound if "optimal" in runs else None
    for ax, m in zip(axes[:, 0], methods):
        color, marker, label = _STYLE.get(m, ("#7f7f7f", "x", m))
        if bound is not None and np.isfinite(bound).any():
            ax.fill_between(minutes, bound - 0.5, bound, step="post", color="#cccccc", linewidth=0,
                            label="proven fewest")
        ax.plot(minutes, runs[m].consumers, drawstyle="steps-post", color=color, marker=marker, markevery=10,
                markersize=4, linewidth=1.2, label=label)
        ax.set_ylabel("consumers", fontsize=8)
        legend_outside(ax)
        ax.grid(True, axis="y", alpha=0.3)
    axes[-1, 0].set_xlabel("time (minutes)")
    fig.suptitle(f"Consumers over time, trace {trace} (grey: the proven fewest, from the exact plan's bound)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _plot_p99(rows: Sequence[Mapping[str, Any]], delta: float, path: Path) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9.5, 4.6))
    picked = [r for r in rows if r["delta"] == delta]
    kafka = sorted({r["method"] for r in picked if r["method"].startswith("kafka:")}, key=lambda m: int(m[6:]))

    def mean(m: str, key: str) -> float:
        return float(np.mean([r[key] for r in picked if r["method"] == m]))

    if kafka:
        ax.plot([mean(m, "consumers") for m in kafka], [mean(m, "p99_s") for m in kafka], color="#ff7f0e",
                marker=".", linewidth=1.2, label="Kafka static round-robin, k = 10 .. 32")
    for m in _order(list(dict.fromkeys(r["method"] for r in picked))):
        if m.startswith("kafka:"):
            continue
        color, marker, label = _STYLE.get(m, ("#7f7f7f", "x", m))
        ax.plot([mean(m, "consumers")], [mean(m, "p99_s")], linestyle="none", color=color, marker=marker,
                markersize=8, markerfacecolor="none", markeredgewidth=1.6, label=label)
    ax.set_yscale("symlog", linthresh=1.0)
    ax.set_xlabel("consumers (mean over the trace)")
    ax.set_ylabel("p99 latency (s, log above 1 s)")
    ax.set_title(f"p99 latency against consumers, {_delta_name(delta)}, mean over the traces")
    legend_outside(ax)
    ax.grid(True, which="major", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_autoscale_report(out: str | Path, runs: Mapping[tuple[str, float], Mapping[str, Any]], *,
                           record: Mapping[str, Any] | None = None, plots: bool = True,
                           checks: bool = True) -> dict[str, Path]:
    """Write the study of ``runs`` ((trace id, delta) -> method -> :class:`TraceRun`) into ``out``; returns
    file name -> path."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    rows = []
    with open(out / "steps.csv", "w", newline="") as fh:
        steps = csv.writer(fh)
        steps.writerow(_STEP_FIELDS)
        for (trace, delta), by in runs.items():
            fewest = _proven_fewest(by)
            for m, run in by.items():
                at = None if fewest is None else int((run.consumers == fewest).sum())
                rows.append({**run.summary(), "delta": delta, "at_fewest": at})
                for k in range(len(run.consumers)):
                    steps.writerow([trace, delta, m, k, int(run.consumers[k]), f"{run.moved_load[k]:g}",
                                    f"{run.rscore[k]:.6g}", int(run.moves[k]), int(run.planned[k]),
                                    int(run.proven[k]), "" if np.isnan(run.bound[k]) else int(run.bound[k])])
    files["steps.csv"] = out / "steps.csv"
    with open(out / "runs.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    files["runs.csv"] = out / "runs.csv"
    deltas = sorted({d for _, d in runs}, key=lambda d: -1 if d is None else d)
    table = "".join(f"{_delta_name(d)}, {sum(1 for _, x in runs if x == d)} traces:\n\n{summary_table(rows, d)}\n"
                    for d in deltas)
    (out / "table.md").write_text(table)
    files["table.md"] = out / "table.md"
    found = autoscale_checks(runs) if checks else {}
    (out / "checks.json").write_text(json.dumps({**found, "record": dict(record or {})}, indent=1) + "\n")
    files["checks.json"] = out / "checks.json"
    if plots:
        for d in deltas:
            suffix = "" if len(deltas) == 1 or d == deltas[0] else f"_delta{d:g}"
            first = next(k for k in runs if k[1] == d)
            _plot_consumers(runs[first], first[0], out / f"consumers{suffix}.png")
            _plot_p99(rows, d, out / f"p99_vs_consumers{suffix}.png")
            files[f"consumers{suffix}.png"] = out / f"consumers{suffix}.png"
            files[f"p99_vs_consumers{suffix}.png"] = out / f"p99_vs_consumers{suffix}.png"
    return files
