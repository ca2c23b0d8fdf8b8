"""Benchmark: the optimizing streams assignor at scale, against the greedy high-availability assignor.

For 1,000 tasks x 100 clients and 10,000 tasks x 1,000 clients, one standby per
stateful task and three racks (KIP-925 ``min_traffic``), several scenarios of
:func:`stickyflow.datasets.generators.streams_snapshot`. Each (case, assignor)
runs in its own process so that peak RSS is its own. Prints a table and writes
``bench-results/streams_scale.json``.

    .venv/bin/python bench/streams_scale.py            # everything (about two minutes)
    .venv/bin/python bench/streams_scale.py --quick    # 1,000 x 100 only

Measured per run: wall time of ``stickyflow.assign`` (the solve plus the front
door's validation and metrics) and of the solver alone, peak RSS of the
process, the gap to the proven lower bound, moves (and the share of active
tasks moved), cross-rack replicas, KIP-925 cost, imbalance, warm-ups and
whether a follow-up rebalance is asked for.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIZES = ((1_000, 100), (10_000, 1_000))
SCENARIOS = ("steady", "scale_out", "rolling_restart", "rack_outage")
# plain: half the subtopologies stateful; tags: standbys spread over the rack's zone tag (KIP-708) as well;
# stateful: every task stateful (a new client then needs warm-ups or standbys before it runs anything)
VARIANTS = ("plain", "tags", "stateful")


def case_document(tasks: int, clients: int, scenario: str, variant: str, seed: int) -> dict:
    """The snapshot document of one case (also read by ``bench/streams_gap_probe.py``)."""
    from stickyflow.datasets.generators import streams_snapshot

    config = {"rack_aware_assignment_strategy": "min_traffic"}
    if variant != "tags":
        config["rack_aware_assignment_tags"] = []
    return streams_snapshot(scenario, tasks=tasks, clients=clients, seed=seed, racks=3, num_standby_replicas=1,
                            subtopologies=10, stateful_fraction=1.0 if variant == "stateful" else 0.5,
                            config=config)


def run_case(tasks: int, clients: int, scenario: str, variant: str, assignor: str, seed: int) -> dict:
    """One measurement, in this process."""
    import stickyflow

    snap = stickyflow.parse_snapshot(case_document(tasks, clients, scenario, variant, seed))
    snap.index  # built once, outside the timing (any assignor needs it)
    # a service has its modules loaded: import them outside the timing
    import ortools.graph.python.min_cost_flow  # noqa: F401
    import stickyflow.formulations.streams.flow  # noqa: F401
    import stickyflow.greedy.streams_ha  # noqa: F401
    import stickyflow.greedy.streams_rack  # noqa: F401
    t0 = time.perf_counter()
    r = stickyflow.assign(snap, assignor)
    wall = time.perf_counter() - t0
    mx = r.metrics
    obj, bound = r.solver.objective, r.solver.bound
    target = {}
    if assignor == "optimal" and r.solver.status != "fallback":
        # the converged assignment's cost and its proven bound travel in the decision's extra: solve once more
        # through the formulation (not timed) to read them
        from stickyflow.formulations.streams.opt import solve_streams
        from stickyflow.registry import SolveOptions

        d = solve_streams(snap, SolveOptions())
        target = {"target_cost": d.extra.get("target_cost"), "target_bound": d.extra.get("target_bound"),
                  "movements": d.extra.get("movements"), "flows": d.extra.get("flows")}
        obj, bound = target["target_cost"], target["target_bound"]
    gap = None
    if obj is not None and bound is not None:
        gap = 0.0 if obj == 0 else (obj - bound) / obj
    return {
        "tasks": tasks, "clients": clients, "scenario": scenario, "variant": variant, "assignor": assignor,
        "seed": seed, "method": r.solver.method, "status": r.solver.status, "reason": r.solver.reason,
        "wall_s": round(wall, 3), "solver_s": round(r.solver.wall_s, 3),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "objective": obj, "bound": bound, "gap": gap, "cost": mx["cost"], "moves": mx["moves"],
        "moved_share": round(mx["moves"] / max(1, tasks), 4), "stateful_moves": mx["stateful_moves"],
        "cross_rack": mx["cross_rack"], "imbalance": mx["imbalance"], "warmups": mx["warmups"],
        "standbys": mx["standbys"], "followup": r.followup_rebalance_deadline_ms is not None,
        "standby_moves": mx.get("standby_moves"), "balanced": mx.get("balanced"), **target,
    }


def compare_small(n: int, seed: int) -> dict:
    """The optimizer against the greedy on ``n`` seeded small instances (every scenario, mixed settings)."""
    import random

    import numpy as np

    import stickyflow
    from stickyflow.datasets.generators import SCENARIOS, streams_snapshot

    rng = random.Random(seed)
    rows = []
    for i in range(n):
        sc = SCENARIOS[i % len(SCENARIOS)]
        kw = dict(tasks=rng.randint(10, 60), clients=rng.randint(2, 8), seed=rng.randrange(10**6),
                  racks=3 if sc == "rack_outage" else rng.choice([0, 3]), num_standby_replicas=rng.choice([0, 1, 2]),
                  stateful_fraction=rng.choice([0.5, 1.0]), subtopologies=rng.randint(1, 3))
        snap = stickyflow.parse_snapshot(streams_snapshot(sc, **kw))
        o = stickyflow.assign(snap, "optimal", time_limit=5)
        g = stickyflow.assign(snap, "sticky")
        rows.append({"scenario": sc, "cost_opt": o.metrics["cost"], "cost_greedy": g.metrics["cost"],
                     "imb_opt": o.metrics["imbalance"], "imb_greedy": g.metrics["imbalance"],
                     "follow_opt": o.followup_rebalance_deadline_ms is not None,
                     "follow_greedy": g.followup_rebalance_deadline_ms is not None, "status": o.solver.status})
    eq = [r for r in rows if abs(r["imb_opt"] - r["imb_greedy"]) <= 1e-9]
    cheaper = [r for r in eq if r["cost_opt"] < r["cost_greedy"]]
    costlier = [r for r in eq if r["cost_opt"] > r["cost_greedy"]]
    saving = [1 - r["cost_opt"] / r["cost_greedy"] for r in eq if r["cost_greedy"]]
    return {
        "instances": n, "equal_balance": len(eq), "cheaper_at_equal_balance": len(cheaper),
        "costlier_at_equal_balance": len(costlier),
        "median_saving_at_equal_balance": round(float(np.median(saving)), 4) if saving else None,
        "mean_saving_at_equal_balance": round(float(np.mean(saving)), 4) if saving else None,
        "more_balanced": sum(r["imb_opt"] < r["imb_greedy"] - 1e-9 for r in rows),
        "less_balanced": sum(r["imb_opt"] > r["imb_greedy"] + 1e-9 for r in rows),
        "followup_opt": sum(r["follow_opt"] for r in rows), "followup_greedy": sum(r["follow_greedy"] for r in rows),
        "statuses": {s: sum(r["status"] == s for r in rows) for s in ("optimal", "feasible", "fallback")},
    }


def _child(args: list[str], timeout: float) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", *args]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"error": f"no answer within {timeout:g} s"}
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="1,000 x 100 only")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    p.add_argument("--out", default=str(ROOT / "bench-results" / "streams_scale.json"))
    p.add_argument("--compare", type=int, default=200, metavar="N",
                   help="also compare with the greedy on N small seeded instances (0: skip)")
    p.add_argument("--child", nargs=6, metavar=("TASKS", "CLIENTS", "SCENARIO", "VARIANT", "ASSIGNOR", "SEED"),
                   help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        t, c, sc, var, asg, seed = a.child
        print(json.dumps(run_case(int(t), int(c), sc, var, asg, int(seed))))
        return 0

    sizes = SIZES[:1] if a.quick else SIZES
    rows = []
    head = (f"{'size':>13} {'scenario':<16} {'variant':<8} {'assignor':<8} {'wall s':>7} {'RSS MiB':>8} "
            f"{'gap':>7} {'cost':>8} {'moves':>6} {'moved':>6} {'stful':>6} {'x-rack':>7} {'imbal':>6} {'warm':>4} "
            f"follow-up")
    print(head)
    for tasks, clients in sizes:
        for sc in SCENARIOS:
            for var in VARIANTS:
                for asg in ("optimal", "sticky"):
                    row = _child([str(tasks), str(clients), sc, var, asg, str(a.seed)], a.timeout)
                    row.update(tasks=tasks, clients=clients, scenario=sc, variant=var, assignor=asg)
                    rows.append(row)
                    if "error" in row:
                        print(f"{tasks:>6}x{clients:<6} {sc:<16} {var:<8} {asg:<8} ERROR {row['error']}")
                        continue
                    gap = "-" if row["gap"] is None else f"{100 * row['gap']:.2f}%"
                    print(f"{tasks:>6}x{clients:<6} {sc:<16} {var:<8} {asg:<8} {row['wall_s']:>7.2f} "
                          f"{row['peak_rss_mib']:>8.0f} {gap:>7} {row['cost']:>8} {row['moves']:>6} "
                          f"{100 * row['moved_share']:>5.1f}% {row['stateful_moves']:>6} {row['cross_rack']!s:>7} "
                          f"{row['imbalance']:>6.2f} {row['warmups']:>4} {'yes' if row['followup'] else 'no'}",
                          flush=True)
    # the optimizer against the greedy, case by case
    pairs = {}
    for r in rows:
        pairs.setdefault((r["tasks"], r["clients"], r["scenario"], r["variant"]), {})[r["assignor"]] = r
    summary = []
    for key, d in pairs.items():
        o, g = d.get("optimal"), d.get("sticky")
        if not o or not g or "error" in o or "error" in g:
            continue
        summary.append({"case": "/".join(map(str, key)), "cost_ratio": round(o["cost"] / g["cost"], 4) if g["cost"]
                        else None, "moves_opt": o["moves"], "moves_greedy": g["moves"],
                        "imbalance_opt": o["imbalance"], "imbalance_greedy": g["imbalance"],
                        "wall_opt": o["wall_s"], "wall_greedy": g["wall_s"]})
    small = None
    if a.compare:
        small = compare_small(a.compare, a.seed)
        print(f"small instances: {small}")
    out = {"benchmark": "streams_scale", "python": sys.version.split()[0], "cpus": os.cpu_count(),
           "seed": a.seed, "runs": rows, "optimal_vs_greedy": summary, "small_instances_vs_greedy": small}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
