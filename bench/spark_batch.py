"""Benchmark (not a test): a Spark batch against a single-process loop over the same snapshots.

    .venv/bin/python bench/spark_batch.py                        # 10,000 groups of 1,000 partitions x 100 members
    .venv/bin/python bench/spark_batch.py --n 2000 --assignors optimal --master 'local[2]'

Both sides run the same per-snapshot work (``stickyflow.adapters.pandas.solve_text``:
parse the JSON, solve with every assignor, build the batch row). The loop reads
the JSON Lines file in this process; the Spark side is ``run_batch`` end to end
(read, repartition, solve in Python workers, write Parquet). Fixed start-up is
measured apart: the session start, then a batch of ``--tiny`` snapshots on the
fresh session (Python workers and their imports start there). The numbers are
printed, never asserted. On a machine shared with other work wall times say
little (each process gets a slice of the cores), so CPU seconds are printed
too, per process kind: with the loop's CPU L and the batch's CPU B, an idle
2-core machine runs the batch in about B / 2 plus the per-batch overhead.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path


def cpu_by_process() -> dict[str, float]:
    """CPU seconds (user + system, reaped children included) of this process ("driver") and of its live
    descendants by command name ("java": Spark's JVM; "python": the daemon and its workers), from /proc."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    out = {"driver": me.ru_utime + me.ru_stime}
    proc = Path("/proc")
    if not proc.is_dir():
        return out
    tick = os.sysconf("SC_CLK_TCK")
    parent: dict[int, int] = {}
    info: dict[int, tuple[str, float]] = {}
    for d in proc.iterdir():
        if not d.name.isdigit():
            continue
        try:
            raw = (d / "stat").read_text()
        except OSError:
            continue
        name = raw[raw.index("(") + 1:raw.rindex(")")]
        fields = raw.rsplit(")", 1)[1].split()
        parent[int(d.name)] = int(fields[1])
        info[int(d.name)] = (name, sum(int(x) for x in fields[11:15]) / tick)  # utime stime cutime cstime
    me_pid = os.getpid()
    for pid, (name, cpu) in info.items():
        p, hops = pid, 0
        while p in parent and p != me_pid and hops < 64:
            p, hops = parent[p], hops + 1
        if p == me_pid and pid != me_pid:
            key = "java" if name.startswith("java") else "python" if name.startswith("python") else "other"
            out[key] = out.get(key, 0.0) + cpu
    return out


def cpu_delta(before: dict[str, float], after: dict[str, float]) -> str:
    parts = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in after}
    total = sum(parts.values())
    return f"{total:.0f} CPU s (" + ", ".join(f"{k} {v:.1f}" for k, v in parts.items() if v >= 0.05) + ")"


def make_dataset(path: Path, n: int, partitions: int, members: int, topics: int) -> None:
    from stickyflow.datasets import iter_suite, write_dataset

    t0 = time.perf_counter()
    write_dataset(iter_suite("bench", n=n, partitions=partitions, members=members, topics=topics), path)
    print(f"dataset: {n} snapshots of {partitions} partitions x {members} members -> {path} "
          f"({path.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t0:.1f} s")


def run_loop(path: Path, assignors: list[str], limit: int | None) -> tuple[float, int]:
    from stickyflow.adapters.pandas import solve_text
    from stickyflow.datasets import read_dataset

    t0 = time.perf_counter()
    rows = 0
    for i, rec in enumerate(read_dataset(path)):
        if limit is not None and i >= limit:
            break
        rows += len(solve_text(rec.text, assignors, source=rec.source, num_workers=1))
    return time.perf_counter() - t0, rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=10_000)
    p.add_argument("--partitions", type=int, default=1_000, help="partitions per group")
    p.add_argument("--members", type=int, default=100)
    p.add_argument("--topics", type=int, default=10)
    p.add_argument("--assignors", default="optimal,sticky")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--tasks", type=int, default=None, help="Spark solve tasks (default: 4 per core)")
    p.add_argument("--strategy", choices=("arrow", "pandas"), default="arrow")
    p.add_argument("--tiny", type=int, default=20, help="snapshots in the start-up batch")
    p.add_argument("--loop-n", type=int, default=None, help="time the loop on this many snapshots and scale up")
    p.add_argument("--skip-loop", action="store_true")
    p.add_argument("--workdir", default=None, help="keep the dataset here (reused when present)")
    args = p.parse_args(argv)
    assignors = [a for a in args.assignors.split(",") if a]

    work = Path(args.workdir or tempfile.mkdtemp(prefix="stickyflow-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    data = work / f"bench-{args.n}-{args.partitions}x{args.members}.jsonl"
    if not data.exists():
        make_dataset(data, args.n, args.partitions, args.members, args.topics)
    tiny = work / f"bench-tiny-{args.tiny}.jsonl"
    if not tiny.exists():
        make_dataset(tiny, args.tiny, args.partitions, args.members, args.topics)
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; assignors {', '.join(assignors)}")

    loop_s = None
    if not args.skip_loop:
        c0 = cpu_by_process()
        secs, rows = run_loop(data, assignors, args.loop_n)
        done = rows // len(assignors)
        loop_s = secs * args.n / max(1, done)
        scaled = "" if done == args.n else f" (timed on {done}, scaled to {args.n})"
        print(f"loop:  {loop_s:8.1f} s for {args.n} snapshots{scaled}, {1e3 * secs / max(1, done):.1f} ms each, "
              f"{cpu_delta(c0, cpu_by_process())}")

    from stickyflow.adapters.spark import run_batch, spark_session

    t0 = time.perf_counter()
    spark = spark_session(args.master)
    session_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    run_batch(str(tiny), str(work / "out-tiny"), assignors, spark=spark, partitions=args.tasks, strategy=args.strategy)
    tiny_s = time.perf_counter() - t1
    startup_s = session_s + tiny_s
    print(f"spark: session {session_s:.1f} s + first batch of {args.tiny} {tiny_s:.1f} s = {startup_s:.1f} s fixed start-up")
    c0 = cpu_by_process()
    t2 = time.perf_counter()
    lines: list[str] = []
    summary = run_batch(str(data), str(work / "out"), assignors, spark=spark, partitions=args.tasks,
                        strategy=args.strategy, progress=lines.append)
    batch_s = time.perf_counter() - t2
    total_s = startup_s + batch_s
    print(f"spark: batch {batch_s:.1f} s ({summary.rows} rows, {dict(summary.by_status)}); "
          f"with start-up {total_s:.1f} s; {cpu_delta(c0, cpu_by_process())}")
    if loop_s:
        print(f"speed-up: {loop_s / total_s:.2f}x the loop with start-up, {loop_s / batch_s:.2f}x without "
              f"(goal: >= 1.7x with <= 25 s start-up)")
    spark.stop()
    record = {"n": args.n, "partitions": args.partitions, "members": args.members, "assignors": assignors,
              "master": args.master, "strategy": args.strategy, "cores": os.cpu_count(),
              "loop_s": loop_s, "session_s": session_s, "first_batch_s": tiny_s, "startup_s": startup_s,
              "batch_s": batch_s, "total_s": total_s, "rows": summary.rows, "by_status": dict(summary.by_status),
              "speedup_with_startup": loop_s / total_s if loop_s else None,
              "speedup_without_startup": loop_s / batch_s if loop_s else None}
    out = Path(__file__).resolve().parent.parent / "bench-results" / "spark_batch.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
