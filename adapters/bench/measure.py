"""Running one assignor on one input, measured: wall time (median of warm runs), peak memory, the facts.

Each (case, assignor) runs in a forked child of the process that built the
input, so every assignor sees the very same objects, a slow peer can be
stopped at its timeout, and the child's peak resident memory (``VmHWM``, reset
at the start of the child) belongs to that assignor alone. stickyflow's time
is the whole front door (:func:`stickyflow.assign`); a kafka-python peer's is
its ``assign(cluster, members)`` call. Every assignment, peers' included, goes
through stickyflow's own checker, so moves and balance are counted the same
way for all.
"""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np

from .cases import Case

# --------------------------------------------------------------------------- running one assignor

def peer_module():
    """:mod:`stickyflow.adapters.peers`, imported when first asked for."""
    from stickyflow.adapters import peers

    return peers


def _timed_peer(snap, name: str) -> tuple[dict, float]:
    """Run kafka-python's assignor, timing only its ``assign(cluster, members)`` call."""
    import importlib

    peers = peer_module()
    module, cls_name = peers.PEER_CLASSES[name]
    cls = getattr(importlib.import_module(module), cls_name)
    original = cls.__dict__["assign"]
    spent = [0.0]
    if isinstance(original, classmethod):
        inner = original.__func__

        def timed(klass, cluster, members):
            t = time.perf_counter()
            try:
                return inner(klass, cluster, members)
            finally:
                spent[0] += time.perf_counter() - t

        cls.assign = classmethod(timed)
    else:
        def timed(self, cluster, members):
            t = time.perf_counter()
            try:
                return original(self, cluster, members)
            finally:
                spent[0] += time.perf_counter() - t

        cls.assign = timed
    try:
        out = peers.run_peer(snap, name)
    finally:
        cls.assign = original
    return out, spent[0]


def one_run(case: Case, snap, assignor: str) -> tuple[float, float, dict[str, Any]]:
    """(algorithm seconds, total seconds, facts) of one run."""
    import stickyflow

    t0 = time.perf_counter()
    if assignor.startswith("kp-"):
        try:
            assignment, algo = _timed_peer(snap, assignor[3:])
        except peer_module().PeerUnsupportedError as exc:
            raise _Unsupported(str(exc)) from None
        total = time.perf_counter() - t0
        from stickyflow.check.answer import as_array_assignment
        from stickyflow.check.consumer import inspect_consumer

        arrays = as_array_assignment(snap, assignment)  # the checker's numpy path, when the answer is plain
        violations, metrics = inspect_consumer(snap, assignment if arrays is None else arrays)
        facts = {"status": "heuristic", "method": "kafka-python", "objective": None, "bound": None,
                 "error": str(violations[0]) if violations else None, **_metric_facts(snap, metrics)}
        return algo, total, facts
    result = stickyflow.assign(snap, assignor)
    total = time.perf_counter() - t0
    facts = {"status": result.solver.status, "method": result.solver.method, "objective": result.solver.objective,
             "bound": result.solver.bound, "error": None if result.error == "NONE" else result.error,
             "reason": result.solver.reason}
    if case.kind == "consumer":
        facts.update(_metric_facts(snap, result.metrics))
    else:
        # cost: the KIP-925 cost of what runs, which the optimizer's proven bound is a bound on
        facts.update({k: result.metrics.get(k) for k in ("moves", "imbalance", "cross_rack", "cost")})
        facts["followup"] = result.followup_rebalance_deadline_ms is not None
    return total, total, facts


class _Unsupported(Exception):
    """A peer that cannot take this input at all (recorded as skipped, not as an error)."""


def _metric_facts(snap, metrics: dict) -> dict[str, Any]:
    cfg = snap.config
    cross = metrics.get("cross_rack")
    cost = cfg.non_overlap_cost * metrics["moves"] + (cfg.traffic_cost * cross if cross is not None else 0)
    return {"moves": metrics["moves"], "imbalance": metrics["imbalance"], "cross_rack": cross,
            "sumsq": metrics.get("sum_squared_loads"), "cost": cost}


def _vm_kib(field_name: str) -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field_name + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # resets the peak resident set size (Linux >= 4.0)
        return True
    except OSError:
        return False


def _peak_kib() -> int:
    peak = _vm_kib("VmHWM")
    if peak is None:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak)


def measure(case: Case, snap, assignor: str, repeats: int, budget_s: float) -> dict[str, Any]:
    """In the child: repeated warm runs, then the peak memory of this process."""
    gc.collect()
    _reset_peak()
    base_kib = _vm_kib("VmRSS") or _peak_kib()
    walls, totals, facts = [], [], {}
    start = time.perf_counter()
    for k in range(max(1, repeats)):
        algo, total, facts = one_run(case, snap, assignor)
        walls.append(algo)
        totals.append(total)
        if time.perf_counter() - start > budget_s:
            break
    peak_kib = _peak_kib()
    return {"wall_s": statistics.median(walls), "wall_min_s": min(walls), "wall_max_s": max(walls),
            "total_s": statistics.median(totals), "runs": len(walls),
            "peak_mib": round(peak_kib / 1024, 1), "extra_mib": round(max(0, peak_kib - base_kib) / 1024, 1),
            **facts}


def in_child(fn: Callable[[], dict[str, Any]], timeout_s: float) -> dict[str, Any]:
    """Run ``fn`` in a forked child; its JSON answer, or ``{"status": "timeout"}`` / ``{"status": "error"}``."""
    if not hasattr(os, "fork"):  # pragma: no cover - non-POSIX: in-process, no timeout, no memory isolation
        try:
            return fn()
        except Exception as exc:
            return {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.flush()
    sys.stderr.flush()
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(rfd)
        try:
            out = fn()
        except _Unsupported as exc:
            out = {"status": "skipped", "error": f"unsupported: {str(exc)[:300]}"}
        except BaseException as exc:  # report, never raise out of a forked child
            out = {"status": "error", "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        data = json.dumps(out, default=json_default).encode()
        with os.fdopen(wfd, "wb") as fh:
            fh.write(data)
        os._exit(0)
    os.close(wfd)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    timed_out = False
    with os.fdopen(rfd, "rb", buffering=0) as fh:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([fh], [], [], left)
            if not ready:
                continue
            chunk = fh.read(1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    if timed_out:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if timed_out:
        return {"status": "timeout", "error": f"no answer within {timeout_s:g} s"}
    try:
        return json.loads(b"".join(chunks))
    except ValueError:
        return {"status": "error", "error": f"the benchmark child died (wait status {status})"}


def json_default(obj: Any) -> Any:
    """``json.dumps``' ``default`` for the bench's records: numpy numbers as Python ones."""
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    raise TypeError(type(obj).__name__)
