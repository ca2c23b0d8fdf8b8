"""A study in one call: solve a suite (or any dataset) with several assignors, play follow-ups to convergence,
and write the rows, the tables, the plots, one HTML page and everything needed to run it again.

:func:`compare` is what ``stickyflow compare`` runs::

    stickyflow compare suite:churn --assignors optimal,sticky,uniform -o out/churn --master 'local[2]'

* **Rows** (``OUT/results.parquet``): one per snapshot and assignor, with the
  snapshot's size (partitions or tasks), group (members or clients), scenario
  and protocol, the result's moves, imbalance, cross-rack reads, cost and solve
  time, and, where the result asks for a follow-up rebalance (cooperative
  revocations, Streams warm-ups), the rebalances it takes to converge when the
  simulator (:mod:`stickyflow.datasets.simulator`) plays them. An assignor
  that does not serve a snapshot's kind gets no row; a snapshot an assignor
  cannot solve gets a row with its ``error``.
* **Where it runs.** On Spark (``engine="spark"``), snapshot ``i`` of a suite is
  made inside the Spark task that solves it (``spark.range(count)`` feeding
  ``mapInArrow``), so no list of snapshots ever exists on the driver, and the
  tables are aggregated by Spark: the driver holds only the aggregates, whatever
  the count. ``engine="local"`` does the same in this process (small studies,
  tests). Each worker solves a tiny snapshot with every assignor before it
  times anything, so imports and first-call set-up are not solve time.
* **Tables** (CSV): ``summary.csv`` per kind and assignor, ``by_size.csv`` per
  size band (powers of two), ``by_suite.csv`` per suite, ``pareto.csv`` the
  traffic-against-moves sweep over the study's first rack-aware consumer groups.
  Counts and metrics are exact and the same on every run of the same command;
  only the ``wall_ms_*`` columns (times) differ.
* **Pictures and page**: see :mod:`stickyflow.adapters.report.study`.
* ``study.json``: the command, the source (suites, count, seed), the
  assignors, the settings, the versions (stickyflow, OR-Tools, Spark, pandas,
  kafka-python, Python) and the machine.

Assignors are registered names (``stickyflow assignors``), kafka-python's own
(``kp-sticky``, ``kp-range``, ``kp-roundrobin``; consumer groups only) and
``module:function`` (a researcher's own, found in the working directory).
"""

from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from stickyflow.errors import InvalidSnapshotError, Problem, UnknownAssignorError

from .plan_rows import PLAN_COLUMNS, check_plan_names, is_plan, plan_compare_rows
from .progress import Ticker
from .runtime import environment, warm_up

__all__ = [
    "ROW_COLUMNS",
    "PEERS",
    "Source",
    "Study",
    "parse_source",
    "check_assignors",
    "snapshot_rows",
    "compare",
    "aggregate",
    "environment",
]

# name -> Arrow type name of one row of results.parquet
ROW_COLUMNS: dict[str, str] = {
    "suite": "string", "index": "int64", "id": "string", "kind": "string", "scenario": "string",
    "protocol": "string", "size": "int64", "group": "int64", "racks": "bool", "assignor": "string",
    "status": "string", "method": "string", "moves": "int64", "standby_moves": "int64", "imbalance": "double",
    "cross_rack": "int64", "cost": "int64", "balanced": "bool", "wall_ms": "double", "rounds": "int64",
    "converged": "bool", "converge_moves": "int64", "converge_min": "double", "error": "string",
}
ROW_COLUMNS.update(PLAN_COLUMNS)  # plan:METHOD rows (stickyflow.adapters.plan_rows)
PEERS = ("kp-sticky", "kp-range", "kp-roundrobin")
ERROR_STATUSES = ("invalid", "error")
DEFAULT_ROUNDS = 30


# --------------------------------------------------------------------------- the source

@dataclass(frozen=True, slots=True, kw_only=True)
class Source:
    """What a study solves: ``suites`` (names, each with its ``counts``) or a dataset ``path``."""

    text: str
    suites: tuple[str, ...] = ()
    counts: tuple[int, ...] = ()
    seed: int = 0
    path: str | None = None

    @property
    def total(self) -> int | None:
        return sum(self.counts) if self.suites else None

    def locate(self, index: int) -> tuple[str, int]:
        """The suite and the index inside it of the study's snapshot ``index``."""
        for name, n in zip(self.suites, self.counts):
            if index < n:
                return name, index
            index -= n
        raise IndexError(index)

    def to_json(self) -> dict[str, Any]:
        if self.suites:
            return {"source": self.text, "suites": dict(zip(self.suites, self.counts)), "seed": self.seed}
        return {"source": self.text, "dataset": self.path}


def parse_source(text: str, *, count: int | None = None, seed: int = 0) -> Source:
    """``suite:NAME[,NAME...]`` (``count`` snapshots of each; default each suite's own) or a dataset path.

    Raises :class:`InvalidSnapshotError` naming ``SOURCE`` for an unknown suite or a path that does not exist.
    """
    from stickyflow.datasets.suites import SUITES, suite_count

    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        raise InvalidSnapshotError(Problem("--count", "must be an integer >= 1"))
    if text.startswith("suite:"):
        names = tuple(n.strip() for n in text[len("suite:"):].split(",") if n.strip())
        if not names:
            raise InvalidSnapshotError(Problem("SOURCE", "suite: names no suite (e.g. suite:churn)"))
        for n in names:
            if n not in SUITES:
                raise InvalidSnapshotError(Problem("SOURCE", f"{n!r} is not a suite (known: {', '.join(SUITES)})"))
        return Source(text=text, suites=names, counts=tuple(suite_count(n, count) for n in names), seed=seed)
    if not os.path.exists(text):
        raise InvalidSnapshotError(Problem("SOURCE", f"{text!r} is neither suite:NAME nor an existing dataset"))
    return Source(text=text, path=text, seed=seed)


# --------------------------------------------------------------------------- assignors

def _peer_assignor(name: str) -> Callable[..., Any]:
    def run(snapshot: Any, options: Any) -> Any:
        from stickyflow.result import Decision

        from .peers import run_peer

        return Decision(assignment=run_peer(snapshot, name, check=False), method="kafka-python", status="heuristic")

    return run


def _register_peers() -> None:
    from stickyflow.registry import _REGISTRY, register_assignor

    for p in PEERS:
        if (p, "consumer") not in _REGISTRY:
            register_assignor(p, _peer_assignor(p[3:]), kinds=("consumer",),
                              description=f"kafka-python's {p[3:]} assignor, in process")


def check_assignors(names: Sequence[str]) -> tuple[str, ...]:
    """The names, checked: registered, kafka-python's (``kp-*``, needs kafka-python) or an importable
    ``module:function`` (the working directory is searched). Raises :class:`UnknownAssignorError` in one line."""
    from stickyflow.registry import available_assignors, get_assignor

    names = tuple(dict.fromkeys(n.strip() for n in names if n.strip()))
    if not names:
        raise UnknownAssignorError("--assignors: names no assignor")
    known = set(available_assignors())
    check_plan_names(names)
    for n in names:
        if n in known or is_plan(n):
            continue
        if n in PEERS:
            try:
                from .peers import kafka_classes

                kafka_classes()
            except Exception as exc:  # noqa: BLE001 - any reason kafka-python cannot load
                raise UnknownAssignorError(f"--assignors: {n} needs kafka-python ({exc})") from None
            continue
        if ":" in n:
            here = str(Path.cwd())
            if here not in sys.path:
                sys.path.append(here)
            get_assignor(n, "consumer").load()  # raises UnknownAssignorError naming it when it cannot be imported
            continue
        raise UnknownAssignorError(f"--assignors: {n!r} is not an assignor (known: "
                                   f"{', '.join(sorted(known | set(PEERS)))}, or module:function)")
    return names


def _serves(name: str, kind: str) -> bool:
    from stickyflow.registry import _REGISTRY

    if is_plan(name):  # plans have rows of their own (plan_compare_rows)
        return False
    return (name, kind) in _REGISTRY or ":" in name


# --------------------------------------------------------------------------- one snapshot, every assignor

@dataclass(frozen=True, slots=True)
class _Worker:
    """What a Spark task runs (pickled): the assignors and how to solve and play."""

    assignors: tuple[str, ...]
    source: Source
    rounds: int = DEFAULT_ROUNDS
    time_limit: float | None = None
    cwd: str | None = None

    def setup(self) -> None:
        if self.cwd and self.cwd not in sys.path:
            sys.path.append(self.cwd)
        if any(a in PEERS for a in self.assignors):
            _register_peers()
        warm_up(self.assignors)

    def index_rows(self, index: int) -> list[dict[str, Any]]:
        suite_name, i = self.source.locate(index)
        from stickyflow.datasets.suites import suite_item

        try:
            doc = suite_item(suite_name, i, self.source.seed)
        except Exception as exc:  # noqa: BLE001 - a generator failure costs one row
            return [_error_row(f"{type(exc).__name__}: {exc}", suite=suite_name, index=index)]
        return snapshot_rows(doc, self.assignors, suite=suite_name, index=index, rounds=self.rounds,
                             time_limit=self.time_limit)

    def text_rows(self, text: Any, index: int, source: str | None) -> list[dict[str, Any]]:
        from stickyflow import _jsonio

        try:
            doc = _jsonio.loads(text) if isinstance(text, (str, bytes)) else text
        except ValueError as exc:
            return [_error_row(f"snapshot: is not valid JSON ({str(exc).splitlines()[0][:120]})", suite=source,
                               index=index)]
        return snapshot_rows(doc, self.assignors, suite=source, index=index, rounds=self.rounds,
                             time_limit=self.time_limit)

    def arrow_indices(self, batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        self.setup()
        schema = arrow_schema()
        for batch in batches:
            rows = [r for i in batch.column(0).to_pylist() for r in self.index_rows(int(i))]
            yield pa.RecordBatch.from_pylist(rows, schema=schema)

    def arrow_texts(self, batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        self.setup()
        schema = arrow_schema()
        for batch in batches:
            texts = batch.column("snapshot").to_pylist()
            idx = batch.column("index").to_pylist()
            sources = batch.column("source").to_pylist()
            rows = [r for t, i, s in zip(texts, idx, sources) for r in self.text_rows(t, int(i), s)]
            yield pa.RecordBatch.from_pylist(rows, schema=schema)


def arrow_schema():
    import pyarrow as pa

    types = {"string": pa.string(), "int64": pa.int64(), "double": pa.float64(), "bool": pa.bool_()}
    return pa.schema([(c, types[t]) for c, t in ROW_COLUMNS.items()])


def _spark_schema() -> str:
    types = {"string": "string", "int64": "bigint", "double": "double", "bool": "boolean"}
    return ", ".join(f"`{c}` {types[t]}" for c, t in ROW_COLUMNS.items())


def _error_row(message: str, **fields: Any) -> dict[str, Any]:
    row = dict.fromkeys(ROW_COLUMNS)
    row.update(fields, status="error" if not message.startswith(("snapshot", "invalid")) else "invalid",
               error=message)
    return row


def _scenario_of(ident: str | None) -> str | None:
    parts = (ident or "").split("/")
    return parts[2] if len(parts) >= 4 else None


def snapshot_rows(doc: Any, assignors: Sequence[str], *, suite: str | None = None, index: int | None = None,
                  rounds: int = DEFAULT_ROUNDS, time_limit: float | None = None) -> list[dict[str, Any]]:
    """Rows (:data:`ROW_COLUMNS`) of one snapshot solved by every assignor that serves its kind; never raises
    for a bad snapshot or a failing assignor (a row with ``error``)."""
    import stickyflow

    try:
        snap = stickyflow.as_snapshot(doc)
    except InvalidSnapshotError as exc:
        ident = doc.get("id") if isinstance(doc, dict) else None
        return [dict(_error_row(str(exc), suite=suite, index=index, id=ident), status="invalid")]
    base: dict[str, Any] = {"suite": suite, "index": index, "id": snap.id, "kind": snap.kind,
                            "scenario": _scenario_of(snap.id)}
    if snap.kind == "consumer":
        base.update(protocol=snap.protocol, size=sum(t.partitions for t in snap.topics.values()),
                    group=len(snap.members), racks=bool(snap.rack_aware))
    else:
        base.update(protocol=snap.config.rebalancing_mode, size=len(snap.tasks), group=len(snap.clients),
                    racks=bool(snap.racks_known()))
    out = []
    for name in assignors:
        if not _serves(name, snap.kind):
            continue
        row = dict.fromkeys(ROW_COLUMNS)
        row.update(base, assignor=name)
        try:
            result = stickyflow.assign(snap, name, time_limit=time_limit, num_workers=1)
        except Exception as exc:  # noqa: BLE001 - one failing assignor costs one row
            if type(exc).__name__ == "PeerUnsupportedError":
                continue  # kafka-python's round-robin refuses mixed subscriptions: not a comparison
            text = str(exc).splitlines()[0] if str(exc) else ""
            row.update(status="invalid" if isinstance(exc, InvalidSnapshotError) else "error",
                       error=f"{type(exc).__name__}: {text}"[:500])
            out.append(row)
            continue
        row.update(_result_fields(snap, result))
        if result.followup_rebalance_deadline_ms is None:
            row.update(rounds=1, converged=True, converge_moves=row["moves"], converge_min=0.0)
        elif rounds == 1:  # nothing to play: the one rebalance asks for more
            row.update(rounds=1, converged=False, converge_moves=row["moves"], converge_min=0.0)
        else:
            row.update(_play(snap, name, rounds, time_limit))
        out.append(row)
    return out + plan_compare_rows(snap, assignors, base, list(ROW_COLUMNS), time_limit=time_limit)


def _result_fields(snap: Any, result: Any) -> dict[str, Any]:
    m = result.metrics
    moves = int(m["moves"])
    cross = m.get("cross_rack")
    if snap.kind == "consumer":
        cfg = snap.config
        cost = cfg.non_overlap_cost * moves + (cfg.traffic_cost * int(cross) if cross is not None else 0)
        balanced = None
    else:
        cost = m.get("cost")
        balanced = m.get("balanced")
    return {"status": result.solver.status, "method": result.solver.method, "moves": moves,
            "standby_moves": m.get("standby_moves"), "imbalance": float(m["imbalance"]),
            "cross_rack": None if cross is None else int(cross), "cost": None if cost is None else int(cost),
            "balanced": None if balanced is None else bool(balanced), "wall_ms": 1000.0 * float(result.solver.wall_s)}


def _play(snap: Any, assignor: str, rounds: int, time_limit: float | None) -> dict[str, Any]:
    """Rebalances until no follow-up is asked for (the simulator's members report what they were given)."""
    from stickyflow.datasets.simulator import Scenario, run_scenario

    try:
        run = run_scenario(Scenario(snapshot=snap, rounds=rounds, events=()), assignor, time_limit=time_limit,
                           keep=False)
    except Exception as exc:  # noqa: BLE001 - playing is a measurement; its failure must not lose the row
        return {"rounds": None, "converged": None, "error": f"playing follow-ups: {type(exc).__name__}: {exc}"[:500]}
    ep = run.episodes[0]
    end = ep.converged_round if ep.converged_round is not None else len(run.rounds) - 1
    span = run.rounds[: end + 1]
    return {"rounds": ep.rounds_to_converge if ep.converged_round is not None else len(run.rounds),
            "converged": ep.converged_round is not None, "converge_moves": sum(r.moves for r in span),
            "converge_min": (span[-1].time_ms - span[0].time_ms) / 60_000.0}


# --------------------------------------------------------------------------- aggregation (Spark and pandas alike)

# output column -> (function, input column); metrics over solved rows only
_METRICS = (
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
)
TIME_COLUMNS = ("wall_ms_mean", "wall_ms_p50", "wall_ms_p95", "wall_ms_max")
TABLES = {"summary": ("kind", "assignor"), "by_size": ("kind", "assignor", "size_band"),
          "by_suite": ("suite", "kind", "assignor")}
_INTS = ("snapshots", "errors", "solved", "balanced", "not_converged", "moves_total", "rounds_max", "size_band")
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
    pd = _pandas()
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
    """The tables (:data:`TABLES`) of a pandas frame of rows, computed as :func:`_spark_aggregate` does."""
    pd = _pandas()
    f = _derived_pandas(rows)
    frames = {}
    for name, keys in TABLES.items():
        counts = f.groupby(list(keys), dropna=False).agg(snapshots=("assignor", "size"), errors=("is_error", "sum"))
        ok = f[~f["is_error"]]
        aggs = {}
        for out, fn, col in _METRICS:
            if fn == "median":
                aggs[out] = (col, "median")
            elif fn == "p95":
                aggs[out] = (col, lambda s: s.quantile(0.95) if s.notna().any() else None)
            elif fn == "sum":  # as in SQL: the sum of nothing but nulls is null, not 0
                aggs[out] = (col, lambda s: s.sum(min_count=1))
            else:
                aggs[out] = (col, fn)
        metrics = ok.groupby(list(keys), dropna=False).agg(**aggs) if len(ok) else pd.DataFrame(
            columns=[m[0] for m in _METRICS])
        t = counts.join(metrics, how="left").reset_index()
        t.insert(len(keys) + 2, "solved", t["snapshots"] - t["errors"])
        frames[name] = t
    return _finish(frames)


def _derived_pandas(rows: Any):
    pd = _pandas()
    f = rows.copy()
    f["is_error"] = f["status"].isin(ERROR_STATUSES)
    f["balanced_int"] = f["balanced"].map(lambda v: None if v is None or v is pd.NA else int(bool(v))).astype(
        "Float64")
    f["stuck"] = f["converged"].map(lambda v: None if v is None or v is pd.NA else int(not v)).astype("Float64")
    f["size_band"] = f["size"].map(_band).astype("Int64")
    for c in ("moves", "standby_moves", "cross_rack", "cost", "rounds", "converge_moves", "size"):
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


def _spark_aggregate(df: Any) -> dict[str, Any]:
    """The tables, computed by Spark: the driver receives only the aggregates."""
    from pyspark.sql import functions as F

    is_error = F.col("status").isin(*ERROR_STATUSES)
    f = df.select(
        *[F.coalesce(F.col(c), F.lit("(unknown)")).alias(c) for c in ("suite", "kind", "assignor")],
        "moves", "standby_moves", "imbalance", "cross_rack", "cost", "rounds", "converge_moves", "converge_min",
        "size", "wall_ms", "plan_members", "plan_moved_load",
        is_error.alias("is_error"),
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
            for out, fn, col in _METRICS:
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
                    t[c] = _pandas().to_numeric(t[c], errors="coerce")
            frames[name] = t
    finally:
        f.unpersist()
    return _finish(frames)


# --------------------------------------------------------------------------- the study

@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Study:
    """What :func:`compare` wrote: the output folder, file name -> path, the tables and the record."""

    out: Path
    files: Mapping[str, Path]
    tables: Mapping[str, Any]
    record: Mapping[str, Any]
    rows: int = 0
    notes: tuple[str, ...] = field(default=())


def compare(source: str | Source, assignors: Sequence[str] | str, out: str | Path, *, engine: str = "auto",
            master: str | None = None, count: int | None = None, seed: int = 0, rounds: int = DEFAULT_ROUNDS,
            time_limit: float | None = None, partitions: int | None = None, pareto_count: int = 12,
            ratios: Sequence[float] | None = None, command: Sequence[str] | None = None,
            progress: Callable[[str], None] | None = None, spark: Any = None) -> Study:
    """Run a study (see the module docstring) and write it to ``out``; returns what was written.

    ``engine``: ``"spark"``, ``"local"`` (this process) or ``"auto"`` (Spark when
    ``master`` or ``spark`` is given, else local). ``rounds`` caps the
    rebalances played per snapshot. ``pareto_count`` rack-aware consumer groups
    of the source (at most; 0: no sweep) are swept over ``ratios``.
    """
    t0 = time.perf_counter()
    say = progress or (lambda line: None)
    src = source if isinstance(source, Source) else parse_source(source, count=count, seed=seed)
    names = check_assignors(assignors.split(",") if isinstance(assignors, str) else assignors)
    if not isinstance(rounds, int) or rounds < 1:
        raise InvalidSnapshotError(Problem("--rounds", "must be an integer >= 1"))
    if time_limit is not None and not time_limit > 0:
        raise InvalidSnapshotError(Problem("--time-limit", "must be a number of seconds > 0"))
    if engine == "auto":
        engine = "spark" if (master is not None or spark is not None) else "local"
    if engine not in ("spark", "local"):
        raise InvalidSnapshotError(Problem("--engine", 'must be "spark" or "local"'))
    out = Path(out)
    _writable(out)
    worker = _Worker(assignors=names, source=src, rounds=rounds, time_limit=time_limit, cwd=str(Path.cwd()))
    results = out / "results.parquet"
    spark_version = None
    if engine == "spark":
        from .spark import spark_session

        spark = spark or spark_session(master)
        spark_version = spark.version
        say(f"Spark {spark.version} on {spark.sparkContext.master}; solving with {', '.join(names)}")
        df = _spark_rows(spark, worker, src, partitions)
        _spark_write(df, results, progress)
        stored = spark.read.parquet(str(results))
        tables = _spark_aggregate(stored)
        n_rows = int(sum(tables["summary"]["snapshots"].fillna(0)))
    else:
        say(f"solving in this process with {', '.join(names)}")
        with Ticker(say, "solving snapshots", total=src.total if src.suites else None) as tick:
            frame = _local_rows(worker, src, tick.step)
        _write_parquet(frame, results)
        tables = aggregate(frame)
        n_rows = len(frame)
    solve_s = time.perf_counter() - t0
    say(f"{n_rows} rows in {solve_s:.1f} s")
    from .report.study import pareto_for_study, write_study_report

    with Ticker(say, "Pareto sweep (solves)") as tick:
        pareto = pareto_for_study(src, names, count=pareto_count, ratios=ratios, time_limit=time_limit or 10.0,
                                  progress=tick)
    if pareto is not None:
        tables = dict(tables, pareto=pareto)
    record = {
        "command": list(command) if command is not None else None,
        **src.to_json(),
        "assignors": list(names), "engine": engine, "master": master if engine == "spark" else None,
        "rounds": rounds, "time_limit": time_limit, "pareto_count": pareto_count,
        "rows": n_rows, "wall_s": round(solve_s, 3),
        "versions": _versions(environment(spark_version)),
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    with Ticker(say, "writing tables and plots"):
        files = write_study_report(out, tables, record)
    files["results.parquet"] = results
    return Study(out=out, files=files, tables=tables, record=record, rows=n_rows)


def _versions(env: Mapping[str, Any]) -> dict[str, Any]:
    """``study.json``'s ``versions``: distribution -> version, ``python`` and the ``machine``."""
    return {**env["versions"], "python": env["python"],
            "machine": {k: env[k] for k in ("platform", "processor", "cpus", "memory_gib")}}


def _writable(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".stickyflow-write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise InvalidSnapshotError(Problem("-o", f"{str(out)!r} cannot be written ({exc.strerror or exc})")) from None


def _local_rows(worker: _Worker, src: Source, step: Callable[[], None]):
    """Every row, solved in this process; ``step()`` after each snapshot (the progress count)."""
    pd = _pandas()
    worker.setup()
    rows: list[dict[str, Any]] = []
    if src.suites:
        total = src.total or 0
        for i in range(total):
            rows += worker.index_rows(i)
            step()
    else:
        from stickyflow.datasets.io import read_dataset

        for i, rec in enumerate(read_dataset(src.path)):
            rows += worker.text_rows(rec.text, i, getattr(rec, "source", None))
            step()
    frame = pd.DataFrame(rows, columns=list(ROW_COLUMNS))
    return _typed(frame)


def _typed(frame):
    pd = _pandas()
    dtypes = {"string": "string", "int64": "Int64", "double": "Float64", "bool": "boolean"}
    for c, t in ROW_COLUMNS.items():
        frame[c] = frame[c].astype(object).where(frame[c].notna(), None).astype(dtypes[t])
    return frame


def _write_parquet(frame, path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if path.is_dir():
        import shutil

        shutil.rmtree(path)
    table = pa.Table.from_pandas(frame, schema=arrow_schema(), preserve_index=False)
    pq.write_table(table, path, compression="zstd")


def _spark_rows(spark: Any, worker: _Worker, src: Source, partitions: int | None):
    from pyspark.sql import functions as F

    parallel = max(1, spark.sparkContext.defaultParallelism)
    if src.suites:
        total = src.total or 0
        parts = max(1, min(total, partitions or 4 * parallel))
        ids = spark.range(0, total, 1, parts)

        def solve(batches):
            return worker.arrow_indices(batches)

        return ids.mapInArrow(solve, _spark_schema())
    from .spark import read_snapshots

    snaps = read_snapshots(spark, src.path)
    snaps = snaps.select(F.monotonically_increasing_id().alias("index"), "source", "snapshot")
    parts = partitions or 4 * parallel
    snaps = snaps.repartition(parts, "index")

    def solve_texts(batches):
        return worker.arrow_texts(batches)

    return snaps.mapInArrow(solve_texts, _spark_schema())


def _spark_write(df: Any, path: Path, progress: Callable[[str], None] | None = None) -> None:
    import uuid

    from .spark import ProgressWatcher, write_results

    if path.is_file():
        path.unlink()
    sc = df.sparkSession.sparkContext
    group = f"stickyflow-compare-{uuid.uuid4().hex[:8]}"
    sc.setJobGroup(group, "stickyflow compare")
    watcher = ProgressWatcher(sc, group, progress, every=5.0) if progress else None
    if watcher:
        watcher.start()
    try:
        write_results(df, str(path.resolve()))
    finally:
        if watcher:
            watcher.stop()
        sc.setLocalProperty("spark.jobGroup.id", None)


def _pandas():
    from .report_base import _pandas as pandas_or_error

    return pandas_or_error()
