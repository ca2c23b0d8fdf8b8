"""The tables of a study (summary, by size, by suite), aggregated by pandas or by Spark alike."""

from __future__ import annotations

import math
from typing import Any, Mapping

from ..load_rows import LOAD_AGGREGATES
from ..report.base import pandas_module
from .rows import ERROR_STATUSES


# output column -> (function, input column); metrics over solved rows only
METRICS = (
    ("moves_mean", "mean", "moves"), ("moves_total", "sum", "moves"),
    ("standby_moves_mean", "mean", "standby_moves"),
    ("imbalance_mean", "mean", "imbalance"), ("imbalance_max", "max", "imbalance"),
    ("cross_rack_mean", "mean", "cross_rack"), ("cost_mean", "mean", "cost"),
    ("balanced", "sum", "balanced_int"),
    ("rounds_mean", "mean", "rounds"), ("rounds_max", "max", "rounds"), ("not_converged", "sum", "stuck"),
    ("converge_moves_mean", "mean", "converge_moves"), ("converge_min_mean", "mean", "converge_min"),
    ("size_mean", "mean", "size"),
    ("plan_members_mean", "mean", "plan_members"), ("plan_moved_load_mean", "mean", "plan_moved_load"),
    ("wall_ms_mean", "mean", "wall_ms"), ("wall_ms_p50", "median", "wall_ms"), ("wall_ms_p95", "p95", "wall_ms"),
    ("wall_ms_max", "max", "wall_ms"),
) + LOAD_AGGREGATES
TIME_COLUMNS = ("wall_ms_mean", "wall_ms_p50", "wall_ms_p95", "wall_ms_max")
TABLES = {"summary": ("kind", "assignor"), "by_size": ("kind", "assignor", "size_band"),
          "by_suite": ("suite", "kind", "assignor")}
_INTS = ("snapshots", "errors", "solved", "balanced", "not_converged", "moves_total", "rounds_max", "size_band")
_LOAD_INPUTS = tuple(dict.fromkeys(c for _, _, c in LOAD_AGGREGATES))
_DIGITS = 9  # means are rounded to this many significant digits: sums in another order agree


def _round(x: Any) -> Any:
    if x is None or isinstance(x, bool):
        return x
    if isinstance(x, float):
        if math.isnan(x):
            return None
        if x == 0 or math.isinf(x):
            return x
        return round(x, _DIGITS - 1 - int(math.floor(math.log10(abs(x)))))
    return x


def _finish(frames: Mapping[str, Any]) -> dict[str, Any]:
    pd = pandas_module()
    out = {}
    for name, keys in TABLES.items():
        f = frames[name]
        for c in f.columns:
            if c not in keys and c not in _INTS:
                f[c] = pd.array([None if pd.isna(v) else _round(float(v)) for v in f[c].tolist()], dtype="Float64")
        for c in _INTS:
            if c in f.columns:
                f[c] = pd.array([None if pd.isna(v) else int(v) for v in f[c].tolist()], dtype="Int64")
        out[name] = f.sort_values(list(keys), kind="stable").reset_index(drop=True)
    return out


def aggregate(rows: Any) -> dict[str, Any]:
    """The tables (:data:`TABLES`) of a pandas frame of rows, computed as :func:`spark_aggregate` does."""
    pd = pandas_module()
    f = _derived_pandas(rows)
    frames = {}
    for name, keys in TABLES.items():
        counts = f.groupby(list(keys), dropna=False).agg(snapshots=("assignor", "size"), errors=("is_error", "sum"))
        ok = f[~f["is_error"]]
        aggs = {}
        for out, fn, col in METRICS:
            if fn == "median":
                aggs[out] = (col, "median")
            elif fn == "p95":
                aggs[out] = (col, lambda s: s.quantile(0.95) if s.notna().any() else None)
            elif fn == "sum":  # as in SQL: the sum of nothing but nulls is null, not 0
                aggs[out] = (col, lambda s: s.sum(min_count=1))
            else:
                aggs[out] = (col, fn)
        metrics = ok.groupby(list(keys), dropna=False).agg(**aggs) if len(ok) else pd.DataFrame(
            columns=[m[0] for m in METRICS])
        t = counts.join(metrics, how="left").reset_index()
        t.insert(len(keys) + 2, "solved", t["snapshots"] - t["errors"])
        frames[name] = t
    return _finish(frames)


def _derived_pandas(rows: Any):
    pd = pandas_module()
    f = rows.copy()
    f["is_error"] = f["status"].isin(ERROR_STATUSES)
    f["balanced_int"] = f["balanced"].map(lambda v: None if v is None or v is pd.NA else int(bool(v))).astype(
        "Float64")
    f["stuck"] = f["converged"].map(lambda v: None if v is None or v is pd.NA else int(not v)).astype("Float64")
    f["size_band"] = f["size"].map(_band).astype("Int64")
    for c in ("moves", "standby_moves", "cross_rack", "cost", "rounds", "converge_moves", "size"):
        f[c] = pd.to_numeric(f[c], errors="coerce").astype("Float64")
    for c in _LOAD_INPUTS:
        f[c] = pd.to_numeric(f[c], errors="coerce").astype("Float64")
    for c in ("suite", "kind", "assignor"):
        f[c] = f[c].astype(object).where(f[c].notna(), "(unknown)")
    return f


def _band(size: Any) -> int | None:
    """The size band: the largest power of two at most ``size`` (1, 2, 4, ..., 8192, ...)."""
    try:
        s = int(size)
    except (TypeError, ValueError):
        return None
    return 1 << (s.bit_length() - 1) if s >= 1 else None


def spark_aggregate(df: Any) -> dict[str, Any]:
    """The tables, computed by Spark: the driver receives only the aggregates."""
    from pyspark.sql import functions as F

    is_error = F.col("status").isin(*ERROR_STATUSES)
    f = df.select(
        *[F.coalesce(F.col(c), F.lit("(unknown)")).alias(c) for c in ("suite", "kind", "assignor")],
        "moves", "standby_moves", "imbalance", "cross_rack", "cost", "rounds", "converge_moves", "converge_min",
        "size", "wall_ms", "plan_members", "plan_moved_load",
        is_error.alias("is_error"),
        *_LOAD_INPUTS,
        F.col("balanced").cast("int").alias("balanced_int"),
        (~F.col("converged")).cast("int").alias("stuck"),
        F.when(F.col("size") >= 1, F.pow(F.lit(2), F.floor(F.log2(F.col("size")))).cast("long")).alias("size_band"),
    ).cache()
    fns = {"mean": F.avg, "sum": F.sum, "max": F.max}
    frames = {}
    try:
        for name, keys in TABLES.items():
            counts = f.groupBy(*keys).agg(F.count(F.lit(1)).alias("snapshots"),
                                          F.sum(F.col("is_error").cast("int")).alias("errors"))
            aggs = []
            for out, fn, col in METRICS:
                if fn == "median":
                    aggs.append(F.percentile_approx(col, 0.5, 10_000).alias(out))
                elif fn == "p95":
                    aggs.append(F.percentile_approx(col, 0.95, 10_000).alias(out))
                else:
                    aggs.append(fns[fn](col).alias(out))
            metrics = f.where(~F.col("is_error")).groupBy(*keys).agg(*aggs)
            t = counts.join(metrics, on=list(keys), how="left").toPandas()
            t.insert(len(keys) + 2, "solved", t["snapshots"] - t["errors"])
            for c in t.columns:
                if c not in keys and t[c].dtype == object:
                    t[c] = pandas_module().to_numeric(t[c], errors="coerce")
            frames[name] = t
    finally:
        f.unpersist()
    return _finish(frames)
