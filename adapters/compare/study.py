"""A study run on either engine: :func:`compare` and what it wrote (:class:`Study`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from stickyflow.errors import InvalidSnapshotError, Problem

from ..progress import Ticker
from ..report.base import pandas_module
from ..runtime import environment
from .assignors import check_assignors
from .rows import DEFAULT_ROUNDS, ROW_COLUMNS, Worker, arrow_schema, spark_schema
from .source import Source, parse_source
from .tables import aggregate, spark_aggregate


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
    """Run a study (see :mod:`stickyflow.adapters.compare`) and write it to ``out``; returns what was written.

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
    worker = Worker(assignors=names, source=src, rounds=rounds, time_limit=time_limit, cwd=str(Path.cwd()))
    results = out / "results.parquet"
    spark_version = None
    if engine == "spark":
        from ..spark import spark_session

        spark = spark or spark_session(master)
        spark_version = spark.version
        say(f"Spark {spark.version} on {spark.sparkContext.master}; solving with {', '.join(names)}")
        df = _spark_rows(spark, worker, src, partitions)
        _spark_write(df, results, progress)
        stored = spark.read.parquet(str(results))
        tables = spark_aggregate(stored)
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
    from ..report.study import pareto_for_study, write_study_report

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


def _local_rows(worker: Worker, src: Source, step: Callable[[], None]):
    """Every row, solved in this process; ``step()`` after each snapshot (the progress count)."""
    pd = pandas_module()
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
    pd = pandas_module()
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


def _spark_rows(spark: Any, worker: Worker, src: Source, partitions: int | None):
    from pyspark.sql import functions as F

    parallel = max(1, spark.sparkContext.defaultParallelism)
    if src.suites:
        total = src.total or 0
        parts = max(1, min(total, partitions or 4 * parallel))
        ids = spark.range(0, total, 1, parts)

        def solve(batches):
            return worker.arrow_indices(batches)

        return ids.mapInArrow(solve, spark_schema())
    from ..spark import read_snapshots

    snaps = read_snapshots(spark, src.path)
    snaps = snaps.select(F.monotonically_increasing_id().alias("index"), "source", "snapshot")
    parts = partitions or 4 * parallel
    snaps = snaps.repartition(parts, "index")

    def solve_texts(batches):
        return worker.arrow_texts(batches)

    return snaps.mapInArrow(solve_texts, spark_schema())


def _spark_write(df: Any, path: Path, progress: Callable[[str], None] | None = None) -> None:
    import uuid

    from ..spark import ProgressWatcher, write_results

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
