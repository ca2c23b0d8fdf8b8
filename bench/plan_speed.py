"""Benchmark: plan steps of the exact method, and a whole trace with every method (issue 36's speed figures).

    .venv/bin/python bench/plan_speed.py            # 32 and 200 partitions, and the 100-step simulation
    .venv/bin/python bench/plan_speed.py --quick    # fewer steps

* **Plan steps.** A random walk (the thesis's: uniform start, steps of up to delta %
  of the capacity, delta 5 and 25) of 32 and of 200 partitions; at each step the
  exact plan (``optimal``) starts from where the previous step's plan left the
  partitions, as an autoscaler does. Per step: wall time of ``stickyflow.plan`` (from
  arrays: no JSON), the member count against the proven lower bound, the status.
  Goals: 32 partitions at most 1 s a step; 200 partitions at most 10 s, the count
  within 1 of the bound.
* **A whole simulation.** ``stickyflow simulate``'s work, in-process, for the JPDC
  trace (32 partitions, 100 steps): every plan method, and Kafka's static
  round-robin for k = 10 .. 32. Goal: under a minute.

Prints a table and writes ``bench-results/plan_speed.json`` with the machine's load
average before and after (the machine is shared: rerun on a quiet one).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def plan_steps(partitions: int, steps: int, delta: float, seed: int) -> dict:
    from stickyflow.datasets.traces import random_walk
    from stickyflow.planning.planner import solve_plan
    from stickyflow.planning.problem import PlanProblem

    trace = random_walk(partitions=partitions, topics=2, steps=steps, delta=delta, seed=seed)
    base = PlanProblem.from_arrays(trace.rates[0], trace.capacity, topics=list(trace.topics))
    owner, members = np.full(partitions, -1), []
    walls, gaps, statuses = [], [], {}
    solve_plan(base, "bfd")  # imports outside the timing
    for k in range(steps):
        problem = base.with_rates(trace.rates[k], owner=owner, members=members)
        t = time.perf_counter()
        plan = solve_plan(problem, "optimal")
        walls.append(time.perf_counter() - t)
        gaps.append(plan.members - plan.bound)
        statuses[plan.solver.status] = statuses.get(plan.solver.status, 0) + 1
        order = sorted(set(plan.slots.tolist()))
        ids = {s: (members[s] if s < len(members) else None) for s in order}
        ids.update(zip([s for s in order if ids[s] is None], plan.add))
        members = [ids[s] for s in order]
        owner = np.searchsorted(order, plan.slots)
    w = np.array(walls)
    return {"partitions": partitions, "delta": delta, "seed": seed, "steps": steps,
            "wall_s": {"mean": round(float(w.mean()), 4), "p50": round(float(np.median(w)), 4),
                       "p95": round(float(np.quantile(w, 0.95)), 4), "max": round(float(w.max()), 4)},
            "count_minus_bound": {"max": int(max(gaps)), "steps_above": int(sum(g > 0 for g in gaps))},
            "statuses": statuses}


def whole_simulation(seed: int) -> dict:
    from stickyflow.datasets.trace_sim import simulate_trace
    from stickyflow.datasets.traces import named_trace
    from stickyflow.planning.methods import PLAN_METHODS

    trace = named_trace(f"trace:jpdc:{seed}")
    methods = [*PLAN_METHODS, *(f"kafka:{k}" for k in range(10, 33))]
    t = time.perf_counter()
    per = {}
    for m in methods:
        t1 = time.perf_counter()
        simulate_trace(trace, m)
        per[m] = round(time.perf_counter() - t1, 3)
    return {"trace": trace.id, "methods": len(methods), "wall_s": round(time.perf_counter() - t, 2), "per_method_s": per}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer steps")
    ap.add_argument("--out", default=str(ROOT / "bench-results" / "plan_speed.json"))
    args = ap.parse_args(argv)
    load_before = os.getloadavg()
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    cases = []
    for partitions, steps in ((32, 30 if args.quick else 100), (200, 5 if args.quick else 20)):
        for delta in (5, 25):
            r = plan_steps(partitions, steps, delta, seed=0)
            cases.append(r)
            print(f"{partitions:>4} partitions, delta {delta:>2}: {r['steps']} steps, wall mean {r['wall_s']['mean']:.3f} s, "
                  f"p95 {r['wall_s']['p95']:.3f} s, max {r['wall_s']['max']:.3f} s; count - bound at most "
                  f"{r['count_minus_bound']['max']} ({r['count_minus_bound']['steps_above']} steps above); "
                  f"{r['statuses']}", flush=True)
    sim = whole_simulation(seed=0)
    print(f"simulate {sim['trace']}: {sim['methods']} methods x 100 steps in {sim['wall_s']:.1f} s "
          f"(optimal {sim['per_method_s']['optimal']:.1f} s, latency {sim['per_method_s']['latency']:.1f} s)")
    load_after = os.getloadavg()
    print(f"load average before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"started_utc": started, "load_before": load_before, "load_after": load_after,
                               "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                                           "python": sys.version.split()[0]},
                               "plan_steps": cases, "simulation": sim}, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
