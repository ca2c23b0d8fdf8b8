"""What every report module shares: the optional backends (pandas, matplotlib on Agg), colours and
markers per assignor, axis helpers (log scales with plain tick labels, non-negative axes), and the
self-contained HTML page."""

from __future__ import annotations

import base64
import html
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from stickyflow.errors import BackendMissingError, InvalidSnapshotError, Problem

__all__ = ["Html", "PAGE_CSS", "MISSING", "html_page", "legend_outside", "without_na", "pyplot", "pandas_module",
           "save_png", "series_color", "series_marker", "place_labels", "log_axis", "from_zero", "PALETTE",
           "EXTRA_COLORS"]

MISSING = "\u2014"  # an em dash: how a table shows a value that is missing (pandas would print <NA> or NaN)


def without_na(frame):
    """``frame`` with every missing value (``pd.NA``, NaN, None) shown as :data:`MISSING`, for ``to_html`` and
    ``to_string``: pandas prints ``<NA>`` for the nullable dtypes' missing values, and ``None`` in object
    columns, whatever ``na_rep`` says. The other values keep their types (floats stay floats for
    ``float_format``).

    >>> import pandas as pd
    >>> t = pd.DataFrame({"n": pd.array([1, None], dtype="Int64"), "x": pd.array([0.5, None], dtype="Float64")})
    >>> without_na(t).to_string(index=False).splitlines()[-1].split()
    ['\u2014', '\u2014']
    """
    pd = pandas_module()
    out = frame.copy()
    for c in out.columns:
        col = out[c]
        if col.isna().any():
            out[c] = pd.Series([MISSING if v is pd.NA or (isinstance(v, float) and v != v) or v is None
                                else (v.item() if hasattr(v, "item") else v) for v in col.tolist()],
                               index=out.index, dtype=object)
    return out


# --------------------------------------------------------------------------- optional backends

def pandas_module():
    """pandas, or :class:`BackendMissingError` naming ``stickyflow[plots]``."""
    try:
        import pandas as pd
    except ImportError as exc:  # pragma: no cover - exercised only without pandas
        raise BackendMissingError("reports need pandas: pip install 'stickyflow[plots]'") from exc
    return pd


def pyplot():
    """matplotlib's pyplot on the Agg backend, or :class:`BackendMissingError` naming ``stickyflow[plots]``."""
    try:
        import matplotlib
    except ImportError as exc:
        raise BackendMissingError("plots need matplotlib: pip install 'stickyflow[plots]'") from exc
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def save_png(fig, path: str | Path | None) -> bytes:
    """The figure as PNG bytes, written to ``path`` too unless it is None; the figure is closed."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    import matplotlib.pyplot as plt

    plt.close(fig)
    data = buf.getvalue()
    if path is not None:
        Path(path).write_bytes(data)
    return data


PALETTE = {"optimal": "#1f77b4", "sticky": "#ff7f0e", "range": "#2ca02c", "roundrobin": "#d62728",
           "uniform": "#9467bd", "kip1071": "#8c564b", "kp-sticky": "#e6a25c", "kp-range": "#7fbf7b",
           "kp-roundrobin": "#e7969c", "lpt": "#17becf", "lag-based": "#bcbd22"}
EXTRA_COLORS = ("#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")


def series_color(name: str) -> str:
    """The colour of an assignor's series (:data:`PALETTE`; another name gets one of :data:`EXTRA_COLORS`).

    >>> series_color("optimal"), series_color("optimal (warm)")
    ('#1f77b4', '#1f77b4')
    """
    base = name.split(" ")[0]
    if base in PALETTE:
        return PALETTE[base]
    return EXTRA_COLORS[sum(map(ord, name)) % len(EXTRA_COLORS)]


_MARKERS = {"optimal": "o", "sticky": "D", "range": "^", "roundrobin": "v", "uniform": "s", "kip1071": "P",
            "kp-sticky": "x", "kp-range": "1", "kp-roundrobin": "2", "lpt": "*", "lag-based": "p"}


def series_marker(name: str) -> str:
    """The marker of an assignor's points (``h`` for a name without one of its own)."""
    return _MARKERS.get(name.split(" ")[0], "h")


def _plain_number(x: float, _pos: Any = None) -> str:
    """A tick label without exponents: 100, 1,000, 0.5, 0.002."""
    if x == 0:
        return "0"
    if abs(x) >= 1:
        return f"{x:,.0f}" if x == int(x) else f"{x:,.1f}"
    return f"{x:.3g}"


def log_axis(ax, which: str = "x") -> None:
    """A log axis labelled at powers of ten (and 2x, 5x when few decades) in plain numbers, minor labels off."""
    import matplotlib.ticker as mt

    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    lo, hi = (ax.get_xlim() if which == "x" else ax.get_ylim())
    decades = math.log10(hi / lo) if lo > 0 and hi > 0 else 3
    axis.set_major_locator(mt.LogLocator(base=10, subs=(1.0, 2.0, 5.0) if decades < 2.5 else (1.0,)))
    axis.set_major_formatter(mt.FuncFormatter(_plain_number))
    axis.set_minor_formatter(mt.NullFormatter())


def place_labels(ax, items: Sequence[tuple[float, float, str]], *, color: str = "black", fontsize: int = 8) -> None:
    """Annotate points so that no two labels overlap each other: each label takes the first of a few offsets
    around its point whose box is clear of the labels already placed (else the least crowded one)."""
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    offsets = [(7, 5, "left"), (7, -13, "left"), (-7, 5, "right"), (-7, -13, "right"), (7, 17, "left"),
               (7, -25, "left"), (-7, 17, "right"), (-7, -25, "right"), (0, 29, "center"), (0, -37, "center")]
    placed: list[Any] = []
    for x, y, text in items:
        best = None
        for dx, dy, ha in offsets:
            ann = ax.annotate(text, (x, y), textcoords="offset points", xytext=(dx, dy), ha=ha, fontsize=fontsize,
                              color=color, bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.8),
                              zorder=6)
            box = ann.get_window_extent(renderer)
            hits = sum(box.overlaps(b) for b in placed)
            if best is None or hits < best[0]:
                if best is not None:
                    best[1].remove()
                best = (hits, ann, box)
            else:
                ann.remove()
            if hits == 0:
                break
        placed.append(best[2])


def legend_outside(ax, **kwargs: Any) -> Any:
    """The panel's legend to the right of it, outside the axes: inside, it covers whatever data falls under it
    (``fig.tight_layout`` makes room for it).

    ``kwargs`` go to ``ax.legend`` (``title``, ``fontsize``, ...)."""
    kwargs.setdefault("fontsize", 8)
    return ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, frameon=False, **kwargs)


def from_zero(ax, values: Sequence[float]) -> None:
    """Counts start at zero; an all-zero panel shows 0 to 1, not +-0.04."""
    finite = [v for v in values if v is not None and v == v]
    top = max(finite) if finite else 0
    ax.set_ylim(bottom=0, top=None if top > 0 else 1)


# --------------------------------------------------------------------------- HTML

class Html(str):
    """Text that :func:`html_page` inserts as HTML (already escaped), not as a paragraph."""


PAGE_CSS = (
    "body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1320px;padding:0 1em;line-height:1.4}"
    "table{border-collapse:collapse;font-size:12.5px;max-width:100%;display:block;overflow-x:auto}"
    "th,td{border:1px solid #ccc;padding:2px 5px;text-align:right}"
    "th{background:#f3f3f3;white-space:normal;vertical-align:bottom}"
    "td:first-child{white-space:nowrap}"
    "img{max-width:100%;height:auto;border:1px solid #eee}"
    "dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;font-size:14px}dt{font-weight:600}dd{margin:0}"
    "pre{white-space:pre-wrap;word-break:break-all;background:#f6f6f6;padding:6px}"
)


def html_page(title: str, blocks: Sequence[tuple[str, Any]]) -> str:
    """A self-contained HTML page. Each block is ``(heading, content)`` where content is PNG bytes
    (embedded as a data URI), a pandas DataFrame (a table, never wider than the page: it scrolls inside
    its box), :class:`Html`, or text (a paragraph)."""
    pd = pandas_module()
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{PAGE_CSS}</style></head><body>", f"<h1>{html.escape(title)}</h1>",
    ]
    for heading, content in blocks:
        parts.append(f"<h2>{html.escape(heading)}</h2>")
        if isinstance(content, (bytes, bytearray)):
            data = base64.b64encode(bytes(content)).decode("ascii")
            parts.append(f'<img alt="{html.escape(heading)}" src="data:image/png;base64,{data}">')
        elif isinstance(content, pd.DataFrame):
            n_tables = sum(p.startswith("<table") or 'class="dataframe' in p for p in parts)
            table_id = f"t{n_tables}"
            text_cols = [i + 1 for i, c in enumerate(content.columns)
                         if not pd.api.types.is_numeric_dtype(content[c]) or pd.api.types.is_bool_dtype(content[c])]
            if text_cols:  # words read left to right; numbers line up on the right
                parts.append("<style>" + ",".join(f"#{table_id} td:nth-child({i}),#{table_id} th:nth-child({i})"
                                                  for i in text_cols) + "{text-align:left}</style>")
            parts.append(without_na(content).to_html(index=False, na_rep=MISSING, float_format=_cell_number,
                                                     classes="table", border=0, table_id=table_id))
        elif isinstance(content, Html):
            parts.append(str(content))
        else:
            parts.append(f"<p>{html.escape(str(content))}</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _cell_number(x: float) -> str:
    """Table cells: whole numbers without decimals, 1,000 and above rounded to a whole number with thousands
    separators (4 significant digits of 39,050.06 would print as 3.905e+04), others with 4 significant digits."""
    if x != x:  # NaN
        return ""
    if x == int(x) and abs(x) < 1e15:
        return f"{int(x):,}"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) < 1e-3:
        return f"{x:.3g}"
    return f"{x:.4g}"

