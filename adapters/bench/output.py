"""What the bench writes besides its JSON: Markdown tables (time, memory) and the PNG plot."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from .config import EVENTS
from .suite import format_seconds

__all__ = ["markdown_table", "plot"]

# --------------------------------------------------------------------------- outputs

def markdown_table(records: Sequence[dict[str, Any]], assignors: Sequence[str], *, what: str = "time") -> str:
    """One row per case, one column per assignor.

    ``what="time"``: median wall time and moves (plus imbalance when not the most
    balanced, cross-rack reads when racks are on); ``what="memory"``: peak
    resident memory of the run, and in brackets what it added to the input.
    """
    cases: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        cases.setdefault(r["case"], []).append(r)
    present = [a for a in assignors if any(r["assignor"] == a and r.get("status") != "skipped" for r in records)]
    head = "| case | least moves (or cost) | " + " | ".join(present) + " |"
    lines = [head, "|" + "---|" * (2 + len(present))]
    for name, recs in cases.items():
        r0 = recs[0]
        unit = " tasks" if r0["kind"] == "streams" else ""
        racks = f", {r0['racks']} racks" if r0.get("racks") else ""
        label = f"{r0['kind']} {r0['size']:,}{unit} x {r0['members']:,}, {r0['event']}, {r0['subscriptions']}{racks}"
        opt = next((r for r in recs if r["assignor"] == "optimal"), {})
        bound = "-"
        if r0.get("bound_moves") is not None:
            bound = f"{r0['bound_moves']:,}"
        elif opt.get("status") == "optimal":  # the proven optimum: moves, or the cost when racks count too
            bound = f"{opt['moves']:,}" if not opt.get("cross_rack") and not r0.get("racks") else f"cost {opt['cost']:,}"
        cells = []
        for a in present:
            r = next((x for x in recs if x["assignor"] == a), None)
            cells.append(_cell(r) if what == "time" else _mem_cell(r))
        lines.append(f"| {label} | {bound} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _mem_cell(r: dict[str, Any] | None) -> str:
    if r is None or r.get("peak_mib") is None:
        return "" if r is None else {"skipped": "n/a"}.get(r.get("status"), r.get("status") or "")
    return f"{r['peak_mib']:,.0f} ({r['extra_mib']:,.0f})"


def _cell(r: dict[str, Any] | None) -> str:
    if r is None:
        return ""
    st = r.get("status")
    if st == "skipped":
        return "n/a"
    if st == "timeout":
        return "timeout"
    if st == "error" or r.get("error"):
        return "error"
    out = f"{format_seconds(r['wall_s'])}, {r['moves']:,} mv"
    if r.get("gap_sumsq"):
        out += f", imb {r['imbalance']}"
    if r.get("cross_rack"):
        out += f", {r['cross_rack']:,} xr"
    return out


def _short_n(n: int) -> str:
    return f"{n // 1_000_000}M" if n >= 1_000_000 and n % 1_000_000 == 0 else (
        f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else str(n))


def plot(records: Sequence[dict[str, Any]], path: Path, assignors: Sequence[str]) -> Path | None:
    """Median wall time (ms) against size, one panel per (kind, subscriptions, event), one line per assignor
    (no racks). A panel with a single size is a bar per assignor instead of a one-point line; log axes only
    where the values span enough, with plain tick labels (ms)."""
    try:
        from ..report.base import series_color, from_zero, log_axis, series_marker, pyplot, legend_outside
        plt = pyplot()
    except Exception:  # noqa: BLE001 - no matplotlib: no plot
        return None
    panels = sorted({(r["kind"], r["subscriptions"], r["event"]) for r in records},
                    key=lambda k: (k[0], k[1], EVENTS.index(k[2]) if k[2] in EVENTS else 9))
    if not panels:
        return None
    cols = min(3, len(panels))
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.9 * rows), squeeze=False)
    for ax, (kind, subs, event) in zip(axes.flat, panels):
        mine = [r for r in records if (r["kind"], r["subscriptions"], r["event"]) == (kind, subs, event)
                and r.get("wall_s") is not None and not r.get("error") and not r.get("racks")]
        sizes = sorted({(r["size"], r["members"]) for r in mine})
        unit = "tasks x clients" if kind == "streams" else "partitions x members"
        ax.set_title(f"{kind}: {subs} subscriptions, {event}" if kind == "consumer" else f"{kind}: {subs}, {event}",
                     fontsize=10)
        ax.set_ylabel("wall time per solve (ms, median of the runs)")
        ax.grid(True, alpha=0.3)
        if len(sizes) == 1:
            names = [a for a in assignors if any(r["assignor"] == a for r in mine)]
            picked = [next(r for r in mine if r["assignor"] == a) for a in names]
            ms = [1000 * r["wall_s"] for r in picked]
            ax.bar(range(len(names)), ms, color=[series_color(a) for a in names])
            # the spread of the repeated runs (fastest to slowest) and how many there were
            low = [max(0.0, m - 1000 * r.get("wall_min_s", r["wall_s"])) for m, r in zip(ms, picked)]
            high = [max(0.0, 1000 * r.get("wall_max_s", r["wall_s"]) - m) for m, r in zip(ms, picked)]
            ax.errorbar(range(len(names)), ms, yerr=[low, high], fmt="none", ecolor="black", elinewidth=1, capsize=4)
            ax.set_xticks(range(len(names)), [f"{a} (n={r.get('runs', 1)})" for a, r in zip(names, picked)],
                          rotation=30, fontsize=8, ha="right")
            ax.set_ylabel("wall time per solve (ms, median\nof n runs; bar: fastest to slowest)")
            p, m = sizes[0]
            ax.set_xlabel(f"assignor ({unit}: {_short_n(p)} x {_short_n(m)})")
            if ms and min(ms) > 0 and max(ms) >= 30 * min(ms):
                log_axis(ax, "y")
            else:
                from_zero(ax, ms)
            continue
        ys: list[float] = []
        for a in assignors:
            pts = sorted((r["size"] * r["members"], 1000 * r["wall_s"]) for r in mine if r["assignor"] == a)
            if not pts:
                continue
            ys += [p[1] for p in pts]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=series_marker(a), color=series_color(a), label=a,
                    linestyle="--" if a.startswith("kp-") else "-")
        ax.set_xscale("log")
        ax.set_xticks([p * m for p, m in sizes], [f"{_short_n(p)}x{_short_n(m)}" for p, m in sizes],
                      rotation=30, fontsize=7)
        ax.xaxis.set_minor_locator(plt.NullLocator())
        ax.set_xlabel(unit)
        if ys and min(ys) > 0 and max(ys) >= 30 * min(ys):
            log_axis(ax, "y")
        else:
            from_zero(ax, ys)
        if len(ax.get_legend_handles_labels()[1]) > 1:
            legend_outside(ax, fontsize=7, title="assignor", title_fontsize=7)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
