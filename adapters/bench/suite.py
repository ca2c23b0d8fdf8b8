"""The bench suite: every case through every assignor, one record each, with the gaps to the lower bounds."""

from __future__ import annotations

import gc
import time
from typing import Any, Callable, Sequence

from ..runtime import warm_up
from .cases import Case, consumer_snapshot, min_moves_equal, streams_document
from .config import ASSIGNORS
from .measure import in_child, measure, peer_module

__all__ = ["run_suite"]

# --------------------------------------------------------------------------- the suite

def available(assignor: str, kind: str) -> str | None:
    """None when ``assignor`` can run on ``kind``, else why not."""
    if assignor.startswith("kp-"):
        if kind != "consumer":
            return "kafka-python has no Kafka Streams assignor"
        try:
            peer_module().kafka_classes()
        except Exception as exc:
            return f"kafka-python peers unavailable ({type(exc).__name__}: {exc})"
        return None
    from stickyflow.registry import registered_assignor

    spec = registered_assignor(assignor, kind)
    if spec is None:
        return f"stickyflow has no {assignor!r} assignor for {kind}"
    try:
        spec.load()
    except (ImportError, AttributeError) as exc:
        return f"not available ({type(exc).__name__}: {str(exc)[:120]})"
    return None


def _build(case: Case):
    if case.kind == "consumer":
        return consumer_snapshot(case)
    from stickyflow.snapshot import parse_snapshot

    return parse_snapshot(streams_document(case))


def run_suite(cases: Sequence[Case], assignors: Sequence[str] = ASSIGNORS, *, repeats: int = 5,
              budget_s: float = 3.0, timeout_s: float = 300.0, log: Callable[[str], None] | None = None,
              progress: Callable[[list[dict[str, Any]]], None] | None = None) -> list[dict[str, Any]]:
    """Run every case through every assignor; one record per (case, assignor), gaps filled in.

    An assignor that timed out on a case is skipped, with a note, on the cases
    at least as large with the same subscriptions (and racks on or off).
    """
    log = log or (lambda s: None)
    kinds = sorted({c.kind for c in cases})
    warm_up(assignors, kinds=kinds)
    records: list[dict[str, Any]] = []
    # (kind, assignor, subscriptions, racks?) -> the size it timed out at: larger cases are skipped
    gave_up: dict[tuple[str, str, str, bool], tuple[int, int]] = {}
    for case in cases:
        t_build = time.perf_counter()
        try:
            snap = _build(case)
        except Exception as exc:
            log(f"{case.name}: cannot build the input ({type(exc).__name__}: {exc})")
            for a in assignors:
                records.append(_record(case, a, {"status": "skipped", "error": f"no input: {exc}"}))
            continue
        build_s = time.perf_counter() - t_build
        bound_moves = min_moves_equal(snap) if case.kind == "consumer" else None
        case_records = []
        for a in assignors:
            why = available(a, case.kind)
            key = (case.kind, a, case.subscriptions, bool(case.racks))
            if why is None and key in gave_up:
                size, members = gave_up[key]
                if case.size >= size and case.members >= members:
                    why = f"took over {timeout_s:g} s at {size:,} x {members:,}"
            if why:
                rec = {"status": "skipped", "error": why}
            else:
                rec = in_child(lambda: measure(case, snap, a, repeats, budget_s), timeout_s)
                if rec.get("status") == "timeout":
                    gave_up[key] = (case.size, case.members)
            r = _record(case, a, rec)
            r["build_s"] = round(build_s, 3)
            if bound_moves is not None:
                r["bound_moves"] = bound_moves
            case_records.append(r)
            log(_line(r))
        _fill_gaps(case_records)
        records.extend(case_records)
        if progress is not None:
            progress(records)
        del snap
        gc.collect()
    return records


def _record(case: Case, assignor: str, rec: dict[str, Any]) -> dict[str, Any]:
    return {"case": case.name, "kind": case.kind, "size": case.size, "members": case.members, "event": case.event,
            "subscriptions": case.subscriptions, "racks": case.racks, "per_topic": case.per_topic,
            "seed": case.seed, "assignor": assignor, **rec}


def _fill_gaps(recs: list[dict[str, Any]]) -> None:
    # the optimizer's proven bound (CP-SAT may stop at "feasible" with one), else its proven optimum
    opt = next((r for r in recs if r["assignor"] == "optimal"
                and (r.get("status") == "optimal" or r.get("bound") is not None)), None)
    for r in recs:
        if opt is not None and r.get("cost") is not None:
            r["bound_cost"] = opt["bound"] if opt.get("bound") is not None else opt["cost"]
            r["gap_cost"] = r["cost"] - r["bound_cost"]
            if opt.get("sumsq") is not None and r.get("sumsq") is not None:
                r["bound_sumsq"] = opt["sumsq"]
                r["gap_sumsq"] = r["sumsq"] - opt["sumsq"]
        if r.get("bound_moves") is not None and r.get("moves") is not None:
            r["gap_moves"] = r["moves"] - r["bound_moves"]


def format_seconds(x: float | None) -> str:
    """A duration for tables and log lines, in µs, ms or s (``-`` when unknown).

    >>> format_seconds(0.0123), format_seconds(2.5), format_seconds(None)
    ('12.3 ms', '2.50 s', '-')
    """
    if x is None:
        return "-"
    if x < 1e-3:
        return f"{x * 1e6:.0f} µs"
    if x < 1:
        return f"{x * 1e3:.1f} ms" if x < 0.1 else f"{x * 1e3:.0f} ms"
    return f"{x:.2f} s" if x < 100 else f"{x:.0f} s"


def _line(r: dict[str, Any]) -> str:
    if r.get("status") in ("skipped", "timeout", "error"):
        return f"{r['case']:<44s} {r['assignor']:<14s} {r['status']}: {r.get('error')}"
    gap = r.get("gap_moves", r.get("gap_cost"))
    return (f"{r['case']:<44s} {r['assignor']:<14s} {format_seconds(r['wall_s']):>9s} x{r['runs']}  "
            f"peak {r['peak_mib']:7.1f} MiB (+{r['extra_mib']:.1f})  moves {r.get('moves')}  "
            f"imbalance {r.get('imbalance')}  cross_rack {r.get('cross_rack')}  {r.get('status')}"
            + (f"  gap {gap}" if gap is not None else "")
            + (f"  ERROR {r['error']}" if r.get("error") else ""))
