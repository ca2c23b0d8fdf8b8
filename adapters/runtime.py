"""The process a measurement runs in: its environment (machine and versions, for the records that ``bench`` and
``compare`` write) and its warm-up (first-use imports and set-up, paid before anything is timed)."""

from __future__ import annotations

import os
import platform
import time
from typing import Any, Iterable, Sequence

__all__ = ["environment", "warm_up"]

# the distributions whose versions a record names
_DISTRIBUTIONS = ("stickyflow", "numpy", "ortools", "orjson", "pandas", "pyarrow", "pyspark", "kafka-python")


def environment(spark_version: str | None = None) -> dict[str, Any]:
    """Where the numbers come from: ``python``, ``platform``, ``processor``, ``cpu`` (the model name),
    ``cpus``, ``memory_gib``, ``versions`` (distribution -> version, None when not installed; ``pyspark`` is
    ``spark_version`` when given: the session's own) and ``when`` (UTC).

    >>> env = environment()
    >>> env["cpus"] >= 1 and "stickyflow" in env["versions"]
    True
    """
    import importlib.metadata as md

    versions: dict[str, str | None] = {}
    for dist in _DISTRIBUTIONS:
        try:
            versions[dist] = md.version(dist)
        except md.PackageNotFoundError:
            versions[dist] = None
    if spark_version:
        versions["pyspark"] = spark_version
    return {"python": platform.python_version(), "platform": platform.platform(), "processor": platform.machine(),
            "cpu": _proc_line("/proc/cpuinfo", "model name", lambda v: v.split(":", 1)[1].strip()),
            "cpus": os.cpu_count(),
            "memory_gib": _proc_line("/proc/meminfo", "MemTotal:", lambda v: round(int(v.split()[1]) / 1024 / 1024, 1)),
            "versions": versions, "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def _proc_line(path: str, head: str, read) -> Any:
    """``read(line)`` of the first line of ``path`` that starts with ``head``; None where there is none (not
    Linux)."""
    try:
        with open(path) as fh:
            for line in fh:
                if line.startswith(head):
                    return read(line)
    except OSError:
        pass
    return None


_WARM: set[tuple[tuple[str, ...], tuple[str, ...]]] = set()


def warm_up(assignors: Sequence[str], kinds: Iterable[str] = ("consumer", "streams")) -> None:
    """Solve a tiny snapshot of each kind with each assignor once per process: imports and first-call set-up
    (OR-Tools, numpy kernels) must not count as the first snapshot's solve time. kafka-python's peers
    (``kp-NAME``) run through :mod:`stickyflow.adapters.peers`. A name that does not serve a kind, or fails,
    is passed over: the failure shows again, as a row or a record, where it matters."""
    key = (tuple(assignors), tuple(kinds))
    if key in _WARM:
        return
    import stickyflow
    from stickyflow.datasets.generators import consumer_snapshot, streams_snapshot

    from .plan_rows import is_plan

    docs = [consumer_snapshot("scale_out", partitions=12, members=3, racks=3, seed=1),
            consumer_snapshot("scale_out", partitions=12, members=3, protocol="cooperative", seed=2),
            streams_snapshot("scale_out", tasks=8, clients=3, racks=3, num_standby_replicas=1, seed=3)]
    for doc in docs:
        if doc["kind"] not in key[1]:
            continue
        for a in assignors:
            try:
                if a.startswith("kp-"):
                    if doc["kind"] == "consumer":
                        from .peers import run_peer

                        run_peer(stickyflow.as_snapshot(doc), a[3:], check=False)
                elif not is_plan(a):  # plans have rows of their own (plan_rows)
                    stickyflow.assign(doc, a)
            except Exception:  # noqa: BLE001 - see the docstring
                pass
    _WARM.add(key)
