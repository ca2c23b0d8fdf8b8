"""The load columns of a batch row and of a ``compare`` row (balance by load, issue 35).

Every consumer result's metrics carry the six load metrics (``peak_utilization``, ``peak_bound``,
``moved_load``, ``cross_rack_load``, ``overload``, ``overloaded``; null without known rates). The rows of
``stickyflow batch`` (:mod:`stickyflow.adapters.pandas`, Spark) and of ``stickyflow compare`` carry them as
columns, and one more:

``peak_ratio``
    the peak over the least possible peak's best proven bound: ``peak_utilization / bound``, where ``bound``
    is the largest ``peak_bound`` among the results of the same snapshot solved together (every bound is a
    proven lower bound on the least possible peak, so the largest is one too, and every assignor is measured
    against the same yardstick: the optimizer often proves more than the checker's cheap bound). 1 means the
    least possible peak, proven; 1.08 at most 8% above it. When every rate read is 0 the peak and the bound
    are 0, and the ratio is 1.

>>> rows = [load_fields({"peak_utilization": 12.0, "peak_bound": 10.0}),
...         load_fields({"peak_utilization": 11.0, "peak_bound": 11.0})]
>>> [r["peak_ratio"] for r in share_bound(rows)]
[1.0909090909090908, 1.0]
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping

__all__ = ["LOAD_METRICS", "BATCH_LOAD_COLUMNS", "COMPARE_LOAD_COLUMNS", "LOAD_AGGREGATES", "load_fields",
           "share_bound", "peak_ratio"]

LOAD_METRICS = ("peak_utilization", "peak_bound", "moved_load", "cross_rack_load", "overload", "overloaded")
# name -> pandas dtype in a batch row (nullable: count snapshots and error rows have none)
BATCH_LOAD_COLUMNS: dict[str, str] = {**{m: "Float64" for m in LOAD_METRICS}, "overloaded": "Int64",
                                      "peak_ratio": "Float64"}
# name -> Arrow type name in a compare row
COMPARE_LOAD_COLUMNS: dict[str, str] = {c: ("int64" if t == "Int64" else "double") for c, t in
                                        BATCH_LOAD_COLUMNS.items()}
# compare's aggregates: output column -> (function, input column), over the solved rows that have loads
LOAD_AGGREGATES = (
    ("peak_ratio_mean", "mean", "peak_ratio"), ("peak_ratio_max", "max", "peak_ratio"),
    ("peak_utilization_mean", "mean", "peak_utilization"), ("moved_load_mean", "mean", "moved_load"),
    ("cross_rack_load_mean", "mean", "cross_rack_load"), ("overload_mean", "mean", "overload"),
    ("overloaded_mean", "mean", "overloaded"),
)


def _number(v: Any) -> float | None:
    if v is None or isinstance(v, bool):
        return None
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def peak_ratio(peak: Any, bound: Any) -> float | None:
    """``peak / bound``, 1.0 where both are 0 (nothing to carry), None where either is unknown.

    >>> peak_ratio(3.0, 2.0), peak_ratio(0.0, 0.0), peak_ratio(None, 1.0)
    (1.5, 1.0, None)
    """
    peak, bound = _number(peak), _number(bound)
    if peak is None or bound is None:
        return None
    if bound <= 0:
        return 1.0 if peak <= 0 else None
    return peak / bound


def load_fields(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The load columns of one result's metrics (``peak_ratio`` against its own bound until :func:`share_bound`
    puts the snapshot's best one in its place)."""
    out: dict[str, Any] = {m: _number(metrics.get(m)) for m in LOAD_METRICS}
    if out["overloaded"] is not None:
        out["overloaded"] = int(out["overloaded"])
    out["peak_ratio"] = peak_ratio(out["peak_utilization"], out["peak_bound"])
    return out


def share_bound(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of one snapshot, each ``peak_ratio`` now against the largest ``peak_bound`` among them
    (in place; the rows are returned). Rows without loads are left as they are."""
    rows = list(rows)
    bounds = [b for b in (_number(r.get("peak_bound")) for r in rows) if b is not None]
    if bounds:
        best = max(bounds)
        for r in rows:
            if _number(r.get("peak_utilization")) is not None:
                r["peak_ratio"] = peak_ratio(r["peak_utilization"], best)
    return rows
