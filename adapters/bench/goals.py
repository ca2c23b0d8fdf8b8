"""The speed targets (``stickyflow bench --goals``), each measured on this machine and reported as pass or fail."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .cases import Case, consumer_snapshot, min_moves_equal, topic_count
from .measure import in_child, measure
from ..runtime import warm_up
from .suite import available, format_seconds

__all__ = ["Goal", "run_goals", "solve_process"]

# --------------------------------------------------------------------------- the goals

@dataclass(slots=True)
class Goal:
    name: str
    passed: bool | None
    detail: str
    numbers: dict[str, Any] = field(default_factory=dict)


def run_goals(out_dir: Path, *, repeats: int = 5, log: Callable[[str], None] = print,
              per_topic: int = 2000, skip_peer: bool = False, timeout_s: float = 1800.0) -> list[Goal]:
    """Measure the issue's speed goals on this machine; each line says pass or fail with the numbers."""
    goals: list[Goal] = []
    warm_up(["optimal"], kinds=["consumer"])

    def run(case: Case, assignor: str, reps: int = repeats) -> dict[str, Any]:
        snap = consumer_snapshot(case)
        rec = in_child(lambda: measure(case, snap, assignor, reps, 30.0), timeout_s)
        rec["bound_moves"] = min_moves_equal(snap)
        return rec

    # 1. equal, 1M x 2000, 10% join: <= 1 s, optimal moves
    for pt in sorted({per_topic, 1_000_000}):
        c = Case(kind="consumer", size=1_000_000, members=2_000, event="join", subscriptions="equal", per_topic=pt)
        r = run(c, "optimal")
        ok = r.get("wall_s") is not None and r["wall_s"] <= 1.0 and r.get("moves") == r["bound_moves"]
        goals.append(Goal(f"equal 1,000,000 x 2,000 join ({_topics_label(c)}): <= 1 s, optimal moves", ok,
                          f"{format_seconds(r.get('wall_s'))}, moves {r.get('moves')} "
                          f"(least possible {r['bound_moves']}), peak {r.get('peak_mib')} MiB", r))
        log(_goal_line(goals[-1]))
    # 2. equal, 10k x 100, 10% join: <= 30 ms
    for pt in sorted({per_topic, 10_000}):
        c = Case(kind="consumer", size=10_000, members=100, event="join", subscriptions="equal", per_topic=pt)
        r = run(c, "optimal", max(repeats, 21))
        ok = r.get("wall_s") is not None and r["wall_s"] <= 0.030 and r.get("moves") == r["bound_moves"]
        goals.append(Goal(f"equal 10,000 x 100 join ({_topics_label(c)}): <= 30 ms", ok,
                          f"{format_seconds(r.get('wall_s'))} (median of {r.get('runs')}), moves {r.get('moves')}", r))
        log(_goal_line(goals[-1]))
    # 3. mixed, 10% join: <= 3 s, proven optimal (1M x 2000, and 10k x 100)
    for size, members in ((1_000_000, 2_000), (10_000, 100)):
        c = Case(kind="consumer", size=size, members=members, event="join", subscriptions="mixed",
                 per_topic=per_topic)
        r = run(c, "optimal", 3 if size > 100_000 else repeats)
        ok = r.get("wall_s") is not None and r["wall_s"] <= 3.0 and r.get("status") == "optimal"
        goals.append(Goal(f"mixed {size:,} x {members:,} join ({_topics_label(c)}, 8 profiles): <= 3 s, proven optimal",
                          ok, f"{format_seconds(r.get('wall_s'))}, status {r.get('status')}, moves {r.get('moves')}, "
                              f"peak {r.get('peak_mib')} MiB", r))
        log(_goal_line(goals[-1]))
    # 4. 10k x 1000 equal: >= 100x faster than kafka-python's sticky, no more moves
    c = Case(kind="consumer", size=10_000, members=1_000, event="join", subscriptions="equal", per_topic=per_topic)
    mine = run(c, "optimal")
    if skip_peer or available("kp-sticky", "consumer"):
        goals.append(Goal("equal 10,000 x 1,000 join: >= 100x faster than kafka-python sticky, no more moves", None,
                          f"optimal {format_seconds(mine.get('wall_s'))}; kafka-python not run", {"optimal": mine}))
    else:
        peer = run(c, "kp-sticky", 1)
        if peer.get("wall_s"):
            speedup = peer["wall_s"] / mine["wall_s"]
            ok = speedup >= 100 and mine["moves"] <= peer["moves"]
            detail = (f"optimal {format_seconds(mine['wall_s'])} / {mine['moves']} moves; kafka-python sticky "
                      f"{format_seconds(peer['wall_s'])} / {peer['moves']} moves: {speedup:,.0f}x")
        else:
            ok, detail = False, f"kafka-python sticky: {peer.get('status')} {peer.get('error')}"
        goals.append(Goal("equal 10,000 x 1,000 join: >= 100x faster than kafka-python sticky, no more moves", ok,
                          detail, {"optimal": mine, "kp-sticky": peer}))
    log(_goal_line(goals[-1]))
    # 5. the whole `stickyflow solve` process on the 1M x 2000 snapshot file
    c = Case(kind="consumer", size=1_000_000, members=2_000, event="join", subscriptions="equal", per_topic=per_topic)
    r = solve_process(c, out_dir)
    ok = r["exit"] == 0 and r["wall_s"] <= 10.0 and r["peak_mib"] <= 2048
    goals.append(Goal(f"`stickyflow solve` process, equal 1,000,000 x 2,000 join ({_topics_label(c)}), JSON in and out:"
                      " <= 10 s, <= 2 GiB", ok,
                      f"{r['wall_s']:.2f} s, peak {r['peak_mib']:.0f} MiB, exit {r['exit']} "
                      f"(snapshot {r['snapshot_mib']:.1f} MiB, result {r['result_mib']:.1f} MiB)", r))
    log(_goal_line(goals[-1]))
    return goals


def _topics_label(c: Case) -> str:
    t = topic_count(c)
    return f"{t} topic{'s' if t > 1 else ''} of {c.size // t:,}"


def _goal_line(g: Goal) -> str:
    mark = {True: "PASS", False: "FAIL", None: "SKIP"}[g.passed]
    return f"[{mark}] {g.name}: {g.detail}"


def solve_process(case: Case, out_dir: Path) -> dict[str, Any]:
    """Write the case as a snapshot file and time a fresh ``stickyflow solve`` process on it (wall, peak RSS)."""
    import subprocess

    from stickyflow.model import jsonio
    from stickyflow.model.consumer import consumer_to_json

    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{case.name}.json"
    result = out_dir / f"{case.name}.result.json"
    if not path.exists():
        path.write_bytes(jsonio.dumps(consumer_to_json(consumer_snapshot(case))))
    cmd = [sys.executable, "-c", "import sys; from stickyflow.adapters.cli import main; sys.exit(main())",
           "solve", str(path), "-o", str(result), "--compact"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    return {"command": "stickyflow solve " + " ".join(cmd[4:]), "exit": proc.returncode, "wall_s": wall,
            "peak_mib": usage.ru_maxrss / 1024, "snapshot_mib": path.stat().st_size / 2**20,
            "result_mib": result.stat().st_size / 2**20 if result.exists() else 0.0, "stderr": err[-500:]}
