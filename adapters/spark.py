"""Solving datasets of snapshots on Spark, with several assignors, into Parquet.

The job: read the dataset (a folder of JSON files, a JSON Lines file, or a
Parquet dataset with the JSON text in a column) into a DataFrame of
``source``/``snapshot`` rows, spread it over ``partitions`` tasks, solve every
snapshot with every assignor in Python workers, and write one Parquet row per
snapshot and assignor (the batch row of :mod:`stickyflow.adapters.pandas`).

>>> spark = spark_session("local[2]")                            # doctest: +SKIP
>>> summary = run_batch("snapshots.jsonl", "results.parquet",
...                     assignors=["optimal", "sticky"], spark=spark)  # doctest: +SKIP
>>> summary.rows, summary.by_status                              # doctest: +SKIP
(20000, {'optimal': 9998, 'heuristic': 10000, 'invalid': 2})

Design choices, measured on a 2-core machine (``bench/spark_batch.py``):

* Workers receive Arrow record batches (``mapInArrow``) and return Arrow
  batches built with an explicit schema: no pandas on the hot path, so pandas
  3's ``str`` columns (NaN for missing text, ``large_string`` in Arrow) never
  meet Spark's converters. ``strategy="pandas"`` runs the same rows through
  ``groupBy(bucket).applyInPandas`` with nullable dtypes instead.
* Every core must work and no task straggle: the batch asks the file scan
  for ``partitions`` splits (default 4 per core; ``spark.sql.files.minPartitionNum``),
  which a big JSON Lines file honours without any shuffle; an input that
  still has too few splits (small files, one Parquet row group) is
  hash-partitioned on a row number into ``partitions`` tasks.
* A bad snapshot is a row (``status`` ``"invalid"``, ``error`` naming the
  field); the job goes on. Each Spark task solves its rows one by one and
  catches every failure of a snapshot, so one row cannot fail a task.
* Re-running is safe: the output is written to a hidden temporary folder
  beside OUTPUT (overwrite mode), and only a finished write replaces OUTPUT,
  by renames through Hadoop's FileSystem. An interrupted run leaves OUTPUT as
  it was (plus a hidden folder that the next run removes): never half a
  result, never duplicated rows. (Killed in the instant between the two
  renames, OUTPUT is missing and the next run writes it.)

pyspark is imported inside these functions; without it they raise
:class:`stickyflow.BackendMissingError` naming the ``stickyflow[spark]`` extra.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Sequence

from stickyflow.errors import BackendMissingError, InvalidSnapshotError, Problem

from .pandas import RESULT_COLUMNS, assignor_list, error_rows, solve_text
from .spark_start import log4j_file, start_quietly

__all__ = [
    "spark_session",
    "read_snapshots",
    "solve_dataframe",
    "write_results",
    "run_batch",
    "BatchSummary",
    "BATCH_RECORD",
    "batch_record",
    "result_schema",
    "SNAPSHOT_COLUMN",
]

SNAPSHOT_COLUMN = "snapshot"
TMP_MARK = ".stickyflow-tmp-"
OLD_MARK = ".stickyflow-old-"
_SPARK_TYPES = {"string": "string", "Int64": "bigint", "Float64": "double"}


def _pyspark():
    try:
        import pyspark  # noqa: F401
        from pyspark.sql import SparkSession
    except ImportError:
        raise BackendMissingError("the Spark adapter needs pyspark: pip install 'stickyflow[spark]'") from None
    return SparkSession


def _quiet_pandas_warning() -> None:
    """pyspark 4 warns on every pandas UDF that it does not "fully support" pandas 3; the paths used
    here are tested with pandas 3 (explicit Arrow schemas, nullable dtypes), so the warning is noise."""
    import warnings

    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)


def result_schema(include_result: bool = False) -> str:
    """The batch row as a Spark DDL schema string (the same columns as the pandas adapter)."""
    cols = [(c, t) for c, t in RESULT_COLUMNS.items() if include_result or c != "result"]
    return ", ".join(f"{c} {_SPARK_TYPES[t]}" for c, t in cols)


def _arrow_schema(include_result: bool):
    import pyarrow as pa

    types = {"string": pa.string(), "Int64": pa.int64(), "Float64": pa.float64()}
    return pa.schema([(c, types[t]) for c, t in RESULT_COLUMNS.items() if include_result or c != "result"])


# --------------------------------------------------------------------------- session

def spark_session(master: str | None = None, *, app_name: str = "stickyflow", conf: Mapping[str, str] | None = None):
    """A SparkSession for batches: ``local[*]`` unless ``master`` says otherwise, set up to start fast.

    The web UI is off, shuffles use few partitions, Arrow is on, Python
    workers are reused. A local master binds to loopback only, and its workers
    run this interpreter (``PYSPARK_PYTHON`` defaults to ``sys.executable``), so
    they see the same stickyflow. An existing active session is returned as it is, unless
    ``master`` asks for a different one.
    """
    SparkSession = _pyspark()
    _quiet_pandas_warning()
    active = SparkSession.getActiveSession()
    if active is not None and (master is None or active.sparkContext.master == master):
        return active
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        raise BackendMissingError("Spark needs a Java runtime (17 or later): install one or set JAVA_HOME")
    master = master or "local[*]"
    if master.startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        # a local session binds loopback anyway; saying so spares the "hostname resolves to a loopback" warning
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    cores = os.cpu_count() or 2
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(max(2, 2 * cores)),
        "spark.sql.adaptive.enabled": "false",  # keep our partition count; coalescing would merge solve tasks
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.execution.arrow.maxRecordsPerBatch": "256",
        "spark.python.worker.reuse": "true",
        "spark.sql.sources.partitionOverwriteMode": "static",
        "spark.driver.extraJavaOptions": f"-XX:+UseParallelGC -XX:TieredStopAtLevel=1 "
                                         f"-Dlog4j2.configurationFile={log4j_file()}",
        "spark.sql.parquet.compression.codec": "zstd",
    }
    if master.startswith("local"):
        # a local session talks only to itself: bind and advertise loopback, not the machine's outside address
        settings.update({"spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1"})
    settings.update(conf or {})
    builder = SparkSession.builder.master(master).appName(app_name)
    for k, v in settings.items():
        builder = builder.config(k, v)
    start_quietly(master, app_name, settings)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


# --------------------------------------------------------------------------- reading

def read_snapshots(spark: Any, path: str, *, column: str = SNAPSHOT_COLUMN, format: str | None = None,
                   file_paths: bool = False):
    """A DataFrame ``(source string, snapshot string)`` with one row per snapshot of the dataset at ``path``.

    ``format`` (``"json"``, ``"jsonl"``, ``"parquet"``) is guessed from a local
    path as in :func:`stickyflow.datasets.dataset_format`; name it for remote paths.
    ``source`` is the file name (JSON Lines and Parquet rows of one file share it;
    the id tells them apart). Blank JSON Lines are dropped. With ``file_paths``,
    JSON Lines rows also carry their file's whole path in a ``_file`` column, with
    which :func:`solve_dataframe` names the line of each record that fails
    (``groups.jsonl:17``; Spark's text reader gives no line numbers).
    """
    from pyspark.sql import functions as F

    fmt = format or _guess_format(path)
    where = None
    if fmt == "jsonl":
        df = spark.read.text(path).where(F.trim(F.col("value")) != "")
        text = F.col("value")
        where = F.col("_metadata.file_path")
    elif fmt == "json":
        # one snapshot per file, however it is indented. wholetext goes as text()'s own argument: PySpark 4's
        # text() passes its wholetext default to the reader and so overrides an earlier .option("wholetext")
        reader = spark.read
        if not path.lower().endswith(".json"):
            reader = reader.option("pathGlobFilter", "*.json")
        df = reader.text(path, wholetext=True)
        text = F.col("value")
    elif fmt == "parquet":
        df = spark.read.parquet(path)
        text = F.col(_parquet_text_column(df, column))
    else:
        raise ValueError(f"format: {fmt!r} is not one of json, jsonl, parquet")
    columns = [F.col("_metadata.file_name").alias("source"), text.cast("string").alias(SNAPSHOT_COLUMN)]
    if where is not None and file_paths:  # the whole file's path, for the lines of rows that fail (LineFinder)
        columns.append(where.alias(WHERE_COLUMN))
    return df.select(*columns)


def _guess_format(path: str) -> str:
    from stickyflow.datasets.io import dataset_format

    local = path[len("file://"):] if path.startswith("file://") else path
    if "://" in local:
        low = local.lower().rstrip("/")
        return "jsonl" if low.endswith((".jsonl", ".ndjson")) else "parquet" if low.endswith(".parquet") else "json"
    if not os.path.exists(local):
        raise InvalidSnapshotError(Problem("INPUT", f"{path!r} does not exist"))
    return dataset_format(local)


def _parquet_text_column(df: Any, column: str) -> str:
    if column in df.columns:
        return column
    strings = [f.name for f in df.schema.fields if f.dataType.typeName() == "string"
               and f.name not in ("id", "kind", "source")]
    if len(strings) == 1:
        return strings[0]
    raise InvalidSnapshotError(Problem("INPUT", f"has no {column!r} column with the snapshot JSON "
                                                f"(columns: {', '.join(df.columns)})"))


# --------------------------------------------------------------------------- solving

WHERE_COLUMN = "_file"  # read_snapshots' JSON Lines rows: the path of the file each line came from


class LineFinder:
    """The line number of a JSON Lines record in its file, for the rows that fail: Spark's text reader gives no
    line numbers, so a worker reads the file once (only when one of its rows fails) and indexes its lines by
    content. Identical lines get their numbers in file order. None where the file is out of this worker's reach
    (a remote path) or the line is not found."""

    def __init__(self) -> None:
        self._files: dict[str, dict[int, list[int]] | None] = {}

    def line(self, where: Any, text: str) -> int | None:
        """The 1-based line of ``text`` in the file ``where`` (a path or ``file:`` URI)."""
        if not isinstance(where, str):
            return None
        index = self._files.get(where, False)
        if index is False:
            index = self._files[where] = _line_index(where)
        if not index:
            return None
        numbers = index.get(hash(text))
        return numbers.pop(0) if numbers and len(numbers) > 1 else numbers[0] if numbers else None


def _line_index(where: str) -> dict[int, list[int]] | None:
    from urllib.parse import unquote, urlparse

    url = urlparse(where)
    if url.scheme not in ("", "file"):
        return None
    index: dict[int, list[int]] = {}
    try:
        with open(unquote(url.path) if url.scheme else where, "rb") as f:
            for n, raw in enumerate(f, 1):
                line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                index.setdefault(hash(line), []).append(n)
    except OSError:
        return None
    return index


@dataclass(frozen=True, slots=True)
class _Solver:
    """What a worker runs (pickled to the executors): the assignors and how to solve."""

    assignors: tuple[str, ...]
    column: str
    time_limit: float | None
    seed: int
    num_workers: int | None
    include_result: bool

    def rows(self, texts: Sequence[Any], sources: Sequence[Any], wheres: Sequence[Any] | None = None,
             lines: "LineFinder | None" = None) -> list[dict[str, Any]]:
        """The batch rows of these snapshots; with ``wheres`` (the JSON Lines file of each), a row that failed
        names its line in ``source`` (``groups.jsonl:17``), as the local reader does for every row."""
        out: list[dict[str, Any]] = []
        for k, (text, source) in enumerate(zip(texts, sources)):
            start = len(out)
            source = source if isinstance(source, str) else None
            if not isinstance(text, str):
                out += error_rows(f"{self.column}: is missing (null)", self.assignors, source=source,
                                  include_result=self.include_result)
                continue
            try:
                out += solve_text(text, self.assignors, source=source, time_limit=self.time_limit, seed=self.seed,
                                  num_workers=self.num_workers, include_result=self.include_result)
            except Exception as exc:  # a bug must cost one row, not the job
                out += error_rows(f"{type(exc).__name__}: {exc}", self.assignors, status="error", source=source,
                                  include_result=self.include_result)
            failed = [r for r in out[start:] if r.get("status") in ("invalid", "error")]
            if failed and wheres is not None and isinstance(text, str) and source:
                line = (lines or LineFinder()).line(wheres[k], text)
                for r in failed:
                    r["source"] = f"{source}:{line}" if line is not None else source
        return out

    def arrow(self, batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        schema = _arrow_schema(self.include_result)
        lines = LineFinder()
        for batch in batches:
            texts = batch.column(SNAPSHOT_COLUMN).to_pylist()
            sources = batch.column("source").to_pylist()
            wheres = batch.column(WHERE_COLUMN).to_pylist() if WHERE_COLUMN in batch.schema.names else None
            yield pa.RecordBatch.from_pylist(self.rows(texts, sources, wheres, lines), schema=schema)

    def pandas(self, frame: Any) -> Any:
        from .pandas import result_columns, typed_frame

        texts = [t if isinstance(t, str) else None for t in frame[SNAPSHOT_COLUMN].tolist()]
        wheres = frame[WHERE_COLUMN].tolist() if WHERE_COLUMN in frame.columns else None
        return typed_frame(self.rows(texts, frame["source"].tolist(), wheres), result_columns(self.include_result))


def solve_dataframe(df: Any, assignors: Sequence[str] | str = ("optimal", "sticky"), *,
                    column: str = SNAPSHOT_COLUMN, partitions: int | None = None, strategy: str = "arrow",
                    time_limit: float | None = None, seed: int = 0, num_workers: int | None = 1,
                    include_result: bool = False):
    """Solve every snapshot of ``df`` (a JSON text ``column``, optional ``source``) with every assignor.

    Returns a lazy DataFrame of batch rows (:func:`result_schema`). ``partitions``
    is the number of solve tasks (default: 4 per core of the session's default
    parallelism). ``strategy`` is ``"arrow"`` (``mapInArrow``, the default) or
    ``"pandas"`` (``groupBy(bucket).applyInPandas``). ``num_workers`` reaches
    CP-SAT; 1 by default, since every Spark task already has a core.
    """
    _pyspark()
    _quiet_pandas_warning()
    from pyspark.sql import functions as F

    names = tuple(assignor_list(assignors))
    _check_assignor_names(names)
    if strategy not in ("arrow", "pandas"):
        raise ValueError(f'strategy: must be "arrow" or "pandas", not {strategy!r}')
    spark = df.sparkSession
    if partitions is None:
        partitions = 4 * max(1, spark.sparkContext.defaultParallelism)
    source = F.col("source").cast("string") if "source" in df.columns else F.lit(None).cast("string")
    keep = [WHERE_COLUMN] if WHERE_COLUMN in df.columns else []
    df = df.select(source.alias("source"), F.col(column).cast("string").alias(SNAPSHOT_COLUMN), *keep)
    solver = _Solver(assignors=names, column=column, time_limit=time_limit, seed=seed, num_workers=num_workers,
                     include_result=include_result)
    schema = result_schema(include_result)
    if strategy == "arrow":
        def solve_batches(batches):  # a plain function: Spark counts the arguments of what it is given
            return solver.arrow(batches)

        if df.rdd.getNumPartitions() < max(spark.sparkContext.defaultParallelism, partitions // 2):
            # too few input splits to keep every core busy: shuffle. Hash-partition on a row number, not
            # round-robin: Spark sorts the rows before a round-robin repartition
            # (spark.sql.execution.sortBeforeRepartition), which would sort megabytes of JSON text
            rows = df.select(F.monotonically_increasing_id().alias("_row"), "source", SNAPSHOT_COLUMN, *keep)
            df = rows.repartition(partitions, "_row").drop("_row")
        return df.mapInArrow(solve_batches, schema)

    bucket = (F.monotonically_increasing_id() % partitions).alias("_bucket")

    def solve_group(frame):
        return solver.pandas(frame)

    return df.select(bucket, "source", SNAPSHOT_COLUMN, *keep).groupBy("_bucket").applyInPandas(solve_group, schema)


def _check_assignor_names(names: Sequence[str]) -> None:
    """Fail fast on a name no kind knows (a typo would otherwise fill the output with error rows)."""
    from stickyflow.errors import UnknownAssignorError
    from stickyflow.registry import available_assignors

    from .plan_rows import check_plan_names

    known = set(available_assignors())
    check_plan_names(names)
    for n in names:
        if n not in known and ":" not in n:
            raise UnknownAssignorError(f"assignors: {n!r} is not a registered assignor (known: {', '.join(sorted(known))})")


# --------------------------------------------------------------------------- writing

def write_results(df: Any, output: str, *, on_tmp_written: Callable[[], None] | None = None,
                  extra_files: Mapping[str, bytes] | None = None) -> None:
    """Write ``df`` as Parquet at ``output``, replacing it only once the whole write has succeeded.

    The rows go to ``.<name>.stickyflow-tmp-<run>`` beside ``output`` (overwrite
    mode); then the previous ``output`` is renamed aside, the new one renamed into
    place, and the previous one deleted: readers see the old rows or the new
    ones, never a mix. Hidden folders left by interrupted runs are removed first. (On Spark
    Connect, where Hadoop's FileSystem is out of reach, it falls back to an
    overwrite-mode write straight to ``output``: a re-run still replaces
    everything, but an interrupted run leaves a partial folder until then.)
    ``extra_files`` (name -> bytes; names starting with ``_``, which Parquet
    readers skip) go into the folder with the rows, before it is renamed.
    """
    spark = df.sparkSession
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:  # Spark Connect
        df.write.mode("overwrite").parquet(output)
        return
    hadoop_path = jvm.org.apache.hadoop.fs.Path
    conf = spark._jsc.hadoopConfiguration()
    out = hadoop_path(output)
    fs = out.getFileSystem(conf)
    out = fs.makeQualified(out)
    parent = out.getParent()
    name = out.getName()
    if fs.exists(parent):
        for status in fs.listStatus(parent):
            p = status.getPath()
            if p.getName().startswith((f".{name}{TMP_MARK}", f".{name}{OLD_MARK}")):
                fs.delete(p, True)
    else:
        fs.mkdirs(parent)
    run = uuid.uuid4().hex[:12]
    tmp = hadoop_path(parent, f".{name}{TMP_MARK}{run}")
    df.write.mode("overwrite").parquet(tmp.toString())
    for file_name, data in (extra_files or {}).items():
        stream = fs.create(hadoop_path(tmp, file_name), True)
        try:
            stream.write(bytearray(data))
        finally:
            stream.close()
    if on_tmp_written is not None:
        on_tmp_written()
    old = hadoop_path(parent, f".{name}{OLD_MARK}{run}")
    had_old = fs.exists(out)
    if had_old and not fs.rename(out, old):
        raise OSError(f"could not move the previous {out.toString()} aside")
    if not fs.rename(tmp, out):
        raise OSError(f"could not rename {tmp.toString()} to {out.toString()}")
    if had_old:
        fs.delete(old, True)


# --------------------------------------------------------------------------- the batch

BATCH_RECORD = "_stickyflow.json"  # inside OUTPUT: where its snapshots came from (Parquet readers skip "_" files)


def batch_record(input: str, format: str, column: str, assignors: Sequence[str]) -> bytes:
    """What a batch writes beside its rows, so that ``stickyflow report`` can find the snapshots again (its Pareto
    sweep re-solves them): the input (absolute, when a local path), its format and column, the assignors."""
    local = input[len("file://"):] if input.startswith("file://") else input
    where = input if "://" in local else os.path.abspath(local)
    doc = {"format": "stickyflow.batch/1", "input": where, "input_format": format, "column": column,
           "assignors": list(assignors)}
    return (json.dumps(doc, indent=2) + "\n").encode("utf-8")


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchSummary:
    """What a batch did: rows written, per status, and how long it took (start-up included in ``wall_s``)."""

    output: str
    rows: int
    by_status: Mapping[str, int] = field(default_factory=dict)
    startup_s: float = 0.0
    wall_s: float = 0.0

    @property
    def failed(self) -> int:
        """Rows that carry an error (invalid, unsupported, error)."""
        return sum(v for k, v in self.by_status.items() if k in ("invalid", "unsupported", "error"))


def run_batch(input: str, output: str, assignors: Sequence[str] | str = ("optimal", "sticky"), *,
              master: str | None = None, spark: Any = None, column: str = SNAPSHOT_COLUMN,
              format: str | None = None, partitions: int | None = None, strategy: str = "arrow",
              time_limit: float | None = None, seed: int = 0, num_workers: int | None = 1,
              include_result: bool = False, progress: Callable[[str], None] | None = None,
              conf: Mapping[str, str] | None = None) -> BatchSummary:
    """Solve the dataset at ``input`` with ``assignors`` and write the batch rows to ``output`` (Parquet).

    ``spark`` reuses a session; else one is made with ``master`` (``local[*]``
    by default). ``progress`` receives a line of text every couple of seconds
    while the solve runs (tasks done, elapsed time).
    """
    t0 = time.perf_counter()
    names = assignor_list(assignors)
    _check_assignor_names(names)
    format = format or _guess_format(input)  # a missing INPUT fails here, before Spark starts
    if spark is None:
        spark = spark_session(master, conf=conf)
    startup = time.perf_counter() - t0
    if progress:
        progress(f"Spark {spark.version} on {spark.sparkContext.master} ready in {startup:.1f} s; "
                 f"solving with {', '.join(names)}")
    sc = spark.sparkContext
    if partitions is None:
        partitions = 4 * max(1, sc.defaultParallelism)
    # a big input file is split into enough scan partitions to feed every solve task directly (no shuffle of
    # the JSON text); small inputs stay few splits and are shuffled into ``partitions`` tasks instead
    saved = spark.conf.get("spark.sql.files.minPartitionNum", None)
    spark.conf.set("spark.sql.files.minPartitionNum", str(partitions))
    group = f"stickyflow-batch-{uuid.uuid4().hex[:8]}"
    sc.setJobGroup(group, f"stickyflow batch {input}")
    watcher = ProgressWatcher(sc, group, progress) if progress else None
    try:
        snaps = read_snapshots(spark, input, column=column, format=format, file_paths=True)
        rows = solve_dataframe(snaps, names, partitions=partitions, strategy=strategy, time_limit=time_limit,
                               seed=seed, num_workers=num_workers, include_result=include_result)
        if watcher:
            watcher.start()
        write_results(rows, output, extra_files={BATCH_RECORD: batch_record(input, format, column, names)})
    finally:
        if watcher:
            watcher.stop()
        sc.setLocalProperty("spark.jobGroup.id", None)
        if saved is None:
            spark.conf.unset("spark.sql.files.minPartitionNum")
        else:
            spark.conf.set("spark.sql.files.minPartitionNum", saved)
    counts = {r["status"]: int(r["count"]) for r in spark.read.parquet(output).groupBy("status").count().collect()}
    summary = BatchSummary(output=output, rows=sum(counts.values()), by_status=dict(sorted(counts.items())),
                           startup_s=startup, wall_s=time.perf_counter() - t0)
    if progress:
        progress(f"wrote {summary.rows} rows to {output} in {summary.wall_s:.1f} s "
                 f"({', '.join(f'{k}: {v}' for k, v in summary.by_status.items())})")
    return summary


class ProgressWatcher:
    """Polls Spark's status tracker and reports the solve stage's tasks done (Spark's own bar needs a terminal)."""

    def __init__(self, sc: Any, group: str, report: Callable[[str], None], every: float = 2.0):
        self.sc, self.group, self.report, self.every = sc, group, report, every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="stickyflow-progress", daemon=True)
        self._t0 = time.perf_counter()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        last = None
        while not self._stop.wait(self.every):
            try:
                tracker = self.sc.statusTracker()
                done = total = 0
                for job_id in tracker.getJobIdsForGroup(self.group):
                    job = tracker.getJobInfo(job_id)
                    if job is None:
                        continue
                    for stage_id in job.stageIds:
                        info = tracker.getStageInfo(stage_id)
                        if info is not None:
                            done += info.numCompletedTasks
                            total += info.numTasks
            except Exception:  # the tracker is best effort; never let it break the batch
                continue
            line = f"solving: {done}/{total} tasks done, {time.perf_counter() - self._t0:.0f} s"
            if total and line != last:
                self.report(line)
                last = line
