"""Where stickyflow's time goes on franz-go's scenarios, and the floor below which Python cannot read them.

For each scenario of ``../shared/peers/franz/run.py``'s default set (or those named), the median of 5 of:

* ``assign``: the whole ``stickyflow.assign(snapshot_dict, "optimal")`` call, as the runner times it (the
  answer is checked and measured from arrays; its Python mapping is built on first look, ``AnswerView``);
* ``built``: ``assign``, then the answer's mapping built whole (one look at it), as ``assign`` built it before
  ``AnswerView`` and as franz-go's ``Balance`` returns its Go map: what a caller that reads the answer in Python
  pays before its own first loop over it;
* ``parse``: ``parse_snapshot`` alone (reading and checking the dict);
* ``solver``: the assignor's own time (``result.solver.wall_s``: the flow, the check, the metrics);
* ``touch``: the least any Python reader pays: one pass over every member's owned lists into one numpy
  array (``np.fromiter`` over the chained lists), nothing checked, nothing resolved;
* ``result``: building the answer's Python mapping (member -> topic -> partition tuple) from the solved owner
  arrays, as ``assign`` does (``ArrayAssignment.to_tuples``): what handing a Python caller the answer costs.

With ``--franz JSON`` (a ``run.py --json`` output) franz-go's balance time stands beside them, and
``touch / franz`` says how much of franz-go's whole time a Python program spends just reading the input.

    .venv/bin/python bench/franz_floor.py --franz franz.json --json floor.json
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import statistics
import sys
import time

import numpy as np

FRANZ_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "peers", "franz")


def _median(fn, repeat=5):
    fn()
    times = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def touch(doc) -> np.ndarray:
    lists = (ps for m in doc["members"] for ps in m.get("owned", {}).values())
    return np.fromiter(itertools.chain.from_iterable(lists), dtype=np.int64)


def assign_and_build(stickyflow, doc) -> int:
    """``assign``, then one look at the answer, which builds its whole mapping (``AnswerView``)."""
    res = stickyflow.assign(doc, "optimal")
    return len(res.assignment.keys())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenarios", nargs="*", help="P:M:SUB:EVENT (default: the runner's default set)")
    ap.add_argument("--franz", help="run.py --json output: franz-go's times beside ours")
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args(argv)
    sys.path.insert(0, os.path.realpath(FRANZ_DIR))
    import run as runner  # noqa: E402  (the peer runner: its scenarios and its snapshot builder)
    from scenarios import make_scenario  # noqa: E402

    import stickyflow

    franz = {}
    if args.franz:
        with open(args.franz) as f:
            for row in json.load(f)["rows"]:
                franz[row["scenario"]] = row["franz"]["time_s"] * 1000 if "time_s" in row.get("franz", {}) else None
    rows = []
    from stickyflow.check.answer import as_array_assignment
    from stickyflow.formulations.consumer.opt import solve_consumer
    from stickyflow.model.consumer_claims import remembered_claims

    print(f"{'scenario':32} {'franz ms':>9} {'assign ms':>9} {'built ms':>9} {'parse ms':>9} {'solver ms':>9} {'touch ms':>9}"
          f" {'result ms':>9} {'touch/franz':>11}")
    for name in args.scenarios or runner.DEFAULT:
        P, M, sub, ev = name.split(":")[:4]
        doc = runner.snapshot(make_scenario(int(P), int(M), sub, ev), name)
        res = stickyflow.assign(doc, "optimal")
        t_assign = _median(lambda: stickyflow.assign(doc, "optimal"))
        t_built = _median(lambda: assign_and_build(stickyflow, doc))
        t_parse = _median(lambda: stickyflow.parse_snapshot(doc))
        t_solver = statistics.median(stickyflow.assign(doc, "optimal").solver.wall_s for _ in range(3))
        t_touch = _median(lambda: touch(doc))
        snap = stickyflow.parse_snapshot(doc)
        with remembered_claims(snap):
            answer = as_array_assignment(snap, solve_consumer(snap).assignment)
        t_result = _median(answer.to_tuples)
        f = franz.get(name)
        row = dict(scenario=name, franz_ms=f, assign_ms=t_assign * 1e3, built_ms=t_built * 1e3, parse_ms=t_parse * 1e3,
                   solver_ms=t_solver * 1e3, touch_ms=t_touch * 1e3, result_ms=t_result * 1e3,
                   status=res.solver.status, loadavg=os.getloadavg())
        rows.append(row)
        fs = f"{f:9.1f}" if f else f"{'-':>9}"
        ratio = f"{t_touch * 1e3 / f:11.2f}" if f else f"{'-':>11}"
        print(f"{name:32} {fs} {t_assign * 1e3:9.1f} {t_built * 1e3:9.1f} {t_parse * 1e3:9.1f} {t_solver * 1e3:9.1f} "
              f"{t_touch * 1e3:9.2f} {t_result * 1e3:9.1f} {ratio}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "date": time.strftime("%Y-%m-%d %H:%M:%S"), "loadavg": os.getloadavg()}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
