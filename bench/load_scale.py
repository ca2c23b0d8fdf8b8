"""Benchmark: ``optimal`` with ``"balance": "load"`` at scale (issue 35's "Speed and scale").

Cases (lognormal rates, sigma 1, seeded; each (case, assignor) in its own process, so that its peak RSS is its
own; the snapshot is read before the clock starts, as a service holds it):

* ``join-10k``: 10,000 partitions (100 topics) x 100 members, equal subscriptions, settled (the previous
  assignment is ``optimal``'s own for the 100), then 10 members join; ``load_slack`` 0.01. Asked: at most
  2 s, the peak within 1% of ``peak_bound``, moves at most 1.2 x the count-based ``sticky``'s on the same
  snapshot.
* ``join-10k-profiles``: the same with 8 subscription profiles (each reads the first tenth of the topics and
  about half of the others); ``load_slack`` 0.02. Asked: at most 5 s, within 2%.
* ``fresh-1m``: 1,000,000 partitions (500 topics) x 2,000 members, equal subscriptions, nobody owns anything;
  ``load_slack`` 0.02. Asked: at most 30 s and 4 GiB, within 2%.
* ``join-1m``: the same group settled, then 200 members join (10%, as in ``stickyflow bench``); ``load_slack``
  0.02.

The settled assignments are computed once (not timed) and cached under ``bench-results/.load-cache``.

    .venv/bin/python bench/load_scale.py            # everything (a few minutes)
    .venv/bin/python bench/load_scale.py --quick    # the 10,000-partition cases only

``least`` is what the previous owners hold above the limit the answer aims at (``(1 + load_slack)`` x
``peak_bound`` x capacity, summed over members): the least load any plan within that limit moves.

Prints a table and writes ``bench-results/load_scale.json`` with the date and the machine's load (``uptime``).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "bench-results" / ".load-cache"
# name: (partitions, members, joining, profiles, per topic, slack, asked: seconds, peak/bound, moves/sticky)
CASES = {
    "join-10k": (10_000, 100, 10, 1, 100, 0.01, 2.0, 1.01, 1.2),
    "join-10k-profiles": (10_000, 100, 10, 8, 100, 0.02, 5.0, 1.02, None),
    "fresh-1m": (1_000_000, 2_000, 0, 1, 2_000, 0.02, 30.0, 1.02, None),
    "join-1m": (1_000_000, 2_000, 200, 1, 2_000, 0.02, 30.0, 1.02, None),
}
QUICK = ("join-10k", "join-10k-profiles")


def document(case: str, seed: int, owners: np.ndarray | None, members: int | None = None) -> dict:
    """The snapshot document of a case: ``owners`` (one per partition, -1: none) gives the previous assignment;
    ``members`` overrides the count (the group before it grows)."""
    n, m, join, profiles, per_topic, slack = CASES[case][:6]
    rng = np.random.default_rng(seed)
    rates = rng.lognormal(0.0, 1.0, n)
    topics = n // per_topic
    names = [f"t{j}" for j in range(topics)]
    if profiles == 1:
        subs = [names] * profiles
    else:
        pick = rng.random((profiles, topics)) < 0.5
        pick[:, : max(1, topics // 10)] = True
        subs = [[t for t, k in zip(names, row) if k] for row in pick]
    total = (m + join) if members is None else members
    doc_members = []
    owned: dict[int, dict[str, list[int]]] = {}
    if owners is not None:
        given = np.flatnonzero(owners >= 0)
        order = np.lexsort((given, owners[given]))
        given, who = given[order], owners[given][order]
        cut = np.searchsorted(who, np.arange(total + 1))
        for i in range(total):
            mine = given[cut[i]:cut[i + 1]]
            if len(mine):
                t, p = np.divmod(mine, per_topic)
                split = np.flatnonzero(np.diff(t)) + 1
                owned[i] = {names[int(tt[0])]: pp.tolist() for tt, pp in zip(np.split(t, split), np.split(p, split))}
    for i in range(total):
        member = {"id": f"m{i:05d}", "subscription": subs[i % profiles]}
        if i in owned:
            member.update(generation=1, owned=owned[i])
        doc_members.append(member)
    return {"format": "stickyflow.snapshot/1", "kind": "consumer", "id": case,
            "topics": {t: {"partitions": per_topic, "rates": rates[j * per_topic:(j + 1) * per_topic].tolist()}
                       for j, t in enumerate(names)},
            "members": doc_members, "config": {"balance": "load", "load_slack": slack}}


def settled(case: str, seed: int) -> np.ndarray | None:
    """The previous assignment of a join case: ``optimal``'s own for the group before it grows (cached)."""
    n, m, join = CASES[case][:3]
    if not join:
        return None
    path = CACHE / f"{case}-{seed}.npy"
    if path.exists():
        return np.load(path)
    import stickyflow

    r = stickyflow.assign(document(case, seed, None, members=m))
    owners = np.full(n, -1, dtype=np.int64)
    per_topic = CASES[case][4]
    index = {f"m{i:05d}": i for i in range(m)}
    for mid, topics in r.assignment.items():
        for t, parts in topics.items():
            owners[int(t[1:]) * per_topic + np.asarray(parts, dtype=np.int64)] = index[mid]
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, owners)
    return owners


def run_case(case: str, assignor: str, seed: int) -> dict:
    """One measurement, in this process."""
    import stickyflow

    snap = stickyflow.parse_snapshot(document(case, seed, settled(case, seed)))
    import ortools.graph.python.max_flow  # noqa: F401  (a service has its modules loaded)
    import stickyflow.formulations.load.opt  # noqa: F401

    t0 = time.perf_counter()
    r = stickyflow.assign(snap, assignor)
    wall = time.perf_counter() - t0
    mx = r.metrics
    total = float(sum(float(np.sum(t.rates)) for t in snap.topics.values()))
    # what the previous owners hold above the limit the answer aims at: the least any plan within it moves
    from stickyflow.load.problem import load_problem, peak_limit

    problem, _, _ = load_problem(snap)
    owned = problem.owner >= 0
    held = np.bincount(problem.owner[owned], weights=problem.rates[owned], minlength=problem.n_members)
    above = np.maximum(held - peak_limit(problem, mx["peak_bound"]) * problem.capacity, 0.0).sum()
    return {"case": case, "assignor": assignor, "seed": seed, "status": r.solver.status, "method": r.solver.method,
            "reason": r.solver.reason, "wall_s": round(wall, 3),
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "peak": mx["peak_utilization"], "peak_bound": mx["peak_bound"],
            "peak_over_bound": mx["peak_utilization"] / mx["peak_bound"] if mx["peak_bound"] else None,
            "moves": mx["moves"], "moved_load_share": mx["moved_load"] / total if total else 0.0,
            "least_moved_share": float(above) / total if total else 0.0,
            "partitions": mx["partitions"], "members": mx["members"]}


def _measure(pipe, fn, args) -> None:
    try:
        pipe.send(fn(*args))
    except Exception as exc:  # noqa: BLE001  (reported as the run's error, the others go on)
        pipe.send({"error": f"{type(exc).__name__}: {exc}"})


def isolated(fn, *args, timeout: float = 900.0) -> dict:
    """``fn(*args)`` in a fresh interpreter (multiprocessing's spawn: nothing of this process's memory), so that
    its peak RSS is its own; its dict, or ``{"error": ...}``."""
    ctx = multiprocessing.get_context("spawn")
    mine, theirs = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_measure, args=(theirs, fn, args))
    proc.start()
    try:
        return mine.recv() if mine.poll(timeout) else {"error": f"no answer within {timeout:g} s"}
    except EOFError:
        return {"error": f"the run died (exit code {proc.exitcode})"}
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join()


def machine_load() -> str:
    """``uptime``'s line (the load averages): every figure is recorded with it."""
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="the 10,000-partition cases only")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per run")
    p.add_argument("--out", default=str(ROOT / "bench-results" / "load_scale.json"))
    a = p.parse_args(argv)
    cases = QUICK if a.quick else tuple(CASES)
    before = machine_load()
    rows = []
    print(f"{'case':<18} {'assignor':<8} {'status':<9} {'wall s':>7} {'RSS MiB':>8} {'peak/bound':>10} "
          f"{'moves':>7} {'moved load':>10} {'least':>7}  asked")
    for case in cases:
        for asg in ("optimal", "sticky"):
            if asg == "sticky" and not CASES[case][2]:  # the count-based sticky beside every join
                continue
            if asg == "optimal":
                settled(case, a.seed)  # the previous assignment, cached outside the timed children
            row = isolated(run_case, case, asg, a.seed, timeout=a.timeout)
            row.update(case=case, assignor=asg)
            rows.append(row)
            if "error" in row:
                print(f"{case:<18} {asg:<8} ERROR {row['error']}")
                continue
            secs, ratio = CASES[case][6], CASES[case][7]
            asked = f"<= {secs:g} s, peak/bound <= {ratio:g}" if asg == "optimal" else ""
            print(f"{case:<18} {asg:<8} {row['status']:<9} {row['wall_s']:>7.3f} {row['peak_rss_mib']:>8.0f} "
                  f"{row['peak_over_bound']:>10.5f} {row['moves']:>7} {100 * row['moved_load_share']:>9.2f}% "
                  f"{100 * row['least_moved_share']:>6.2f}%  {asked}",
                  flush=True)
    verdicts = []
    by = {(r["case"], r["assignor"]): r for r in rows if "error" not in r}
    for case in cases:
        o = by.get((case, "optimal"))
        if o is None:
            continue
        secs, ratio, moves = CASES[case][6:9]
        v = {"case": case, "seconds": o["wall_s"] <= secs, "peak": o["peak_over_bound"] <= ratio}
        if case.endswith("1m"):
            v["memory"] = o["peak_rss_mib"] <= 4096
        s = by.get((case, "sticky"))
        if moves is not None and s is not None:
            v["moves"] = o["moves"] <= moves * s["moves"]
            v["moves_ratio"] = round(o["moves"] / max(1, s["moves"]), 4)
        verdicts.append(v)
        print(f"{case}: " + ", ".join(f"{k} {'met' if val is True else 'MISSED' if val is False else val}"
                                      for k, val in v.items() if k != "case"))
    write_results(a.out, "load_scale", "bench/load_scale.py" + (" --quick" if a.quick else ""), before,
                  seed=a.seed, runs=rows, verdicts=verdicts)
    return 0


def write_results(path: str, name: str, command: str, before: str, **fields) -> None:
    """Print the machine's load before and now, and write the benchmark's JSON with the date, the command and
    both loads (every figure goes with how busy the machine was)."""
    after = machine_load()
    print(f"load before: {before}\nload after:  {after}")
    out = {"benchmark": name, "date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "python": sys.version.split()[0],
           "cpus": os.cpu_count(), "uptime_before": before, "uptime_after": after, "command": command, **fields}
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(out, indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
