"""Benchmark: the peak each assignor reaches on skewed loads, side by side (issue 35).

Three suites, each at 1,000 partitions x 20 members and 10,000 x 100, three seeds each; every assignor gets the
same snapshot (``"balance": "load"``, the default ``load_slack`` 0.05, no capacities):

* ``hot-partitions``: Zipf rates (exponent 1.1, ranks shuffled): a few partitions carry much of the load;
  a tenth of the members just joined a group that Kafka's count-based assignment had balanced;
* ``skewed-topics``: ten topics, one of them ten times as busy as the others; a tenth just joined;
* ``rate-drift``: lognormal rates (sigma 1) that drifted (each by a lognormal factor of sigma 0.5, and a tenth
  of the partitions traded rates) since ``optimal`` balanced the group by load; nobody joined or left.

The assignors: ``optimal`` (by load), the count-based ``sticky``, ``uniform`` and ``range``, and the load-based
baselines ``lpt`` and ``lag-based``. For each: the peak over the best proven bound of that snapshot (the largest
``peak_bound`` any of the results reports: the same denominator on every row), the moved load (a share of the
whole), the moves and the wall time of ``stickyflow.assign`` (the snapshot parsed before the clock starts).

    .venv/bin/python bench/load_compare.py            # both sizes (a minute or two)
    .venv/bin/python bench/load_compare.py --quick    # 1,000 x 20 only

Prints a table (medians over the seeds; the worst peak in brackets) and writes ``bench-results/load_compare.json``
with the date and the machine's load (``uptime``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load_scale import machine_load, write_results  # noqa: E402  (a sibling script)

ROOT = Path(__file__).resolve().parent.parent
SUITES = ("hot-partitions", "skewed-topics", "rate-drift")
SIZES = ((1_000, 20), (10_000, 100))
ASSIGNORS = ("optimal", "sticky", "uniform", "range", "lpt", "lag-based")
SEEDS = (1, 2, 3)


def snapshot(suite: str, partitions: int, members: int, seed: int):
    """The suite's snapshot (parsed), seeded."""
    import stickyflow
    from stickyflow.datasets.generators import consumer_snapshot
    from stickyflow.datasets.rates import drift_rates, topic_rates, with_rates

    scenario = "steady" if suite == "rate-drift" else "scale_out"
    doc = consumer_snapshot(scenario, partitions=partitions, members=members, topics=10, seed=seed)
    if suite == "hot-partitions":
        return stickyflow.parse_snapshot(with_rates(doc, "zipf", seed=seed, exponent=1.1))
    if suite == "skewed-topics":
        return stickyflow.parse_snapshot(with_rates(doc, "hot_topic", seed=seed, factor=10.0))
    sizes = {t: spec["partitions"] for t, spec in doc["topics"].items()}
    before = topic_rates("lognormal", sizes, seed=seed, sigma=1.0)
    settled = stickyflow.assign(with_rates(doc, before))  # optimal by load, on the rates before the drift
    for m in doc["members"]:
        m["owned"] = {t: list(p) for t, p in settled.assignment[m["id"]].items()}
        m["generation"] = 8
    flat = np.concatenate([before[t] for t in sizes])
    after = drift_rates(flat, seed=seed + 100, sigma=0.5, reshuffle=0.1)
    cuts = np.cumsum([sizes[t] for t in sizes])[:-1]
    return stickyflow.parse_snapshot(with_rates(doc, dict(zip(sizes, np.split(after, cuts)))))


def run(partitions: int, members: int, suite: str, seed: int) -> list[dict]:
    import stickyflow

    snap = snapshot(suite, partitions, members, seed)
    total = float(sum(float(t.rates.sum()) for t in snap.topics.values()))
    rows = []
    for asg in ASSIGNORS:
        stickyflow.assign(snap, asg)  # warm: modules loaded, as in a service
        t0 = time.perf_counter()
        r = stickyflow.assign(snap, asg)
        wall = time.perf_counter() - t0
        m = r.metrics
        rows.append({"suite": suite, "partitions": partitions, "members": members, "seed": seed, "assignor": asg,
                     "status": r.solver.status, "wall_s": wall, "peak": m["peak_utilization"],
                     "peak_bound": m["peak_bound"], "moves": m["moves"], "moved_share": m["moved_load"] / total})
    best = max(r["peak_bound"] for r in rows)
    for r in rows:
        r["over_bound"] = r["peak"] / best
    return rows


def _fmt_time(s: float) -> str:
    return f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="1,000 x 20 only")
    p.add_argument("--out", default=str(ROOT / "bench-results" / "load_compare.json"))
    a = p.parse_args(argv)
    sizes = SIZES[:1] if a.quick else SIZES
    before = machine_load()
    rows = []
    for partitions, members in sizes:
        for suite in SUITES:
            for seed in SEEDS:
                rows += run(partitions, members, suite, seed)
    table = ["| suite | size | " + " | ".join(ASSIGNORS) + " |", "|---|---|" + "---|" * len(ASSIGNORS)]
    for partitions, members in sizes:
        for suite in SUITES:
            cells = []
            for asg in ASSIGNORS:
                mine = [r for r in rows if (r["suite"], r["partitions"], r["assignor"]) == (suite, partitions, asg)]
                over = [r["over_bound"] for r in mine]
                moved = np.median([r["moved_share"] for r in mine])
                cells.append(f"{np.median(over):.3f} ({max(over):.3f}), {100 * moved:.1f}% moved, "
                             f"{_fmt_time(float(np.median([r['wall_s'] for r in mine])))}")
            table.append(f"| {suite} | {partitions:,} x {members} | " + " | ".join(cells) + " |")
    print("\n".join(table))
    write_results(a.out, "load_compare", "bench/load_compare.py" + (" --quick" if a.quick else ""), before, runs=rows,
                  table=table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
