"""Probe: where the optimizing streams assignor's gap to its bound comes from (a research tool, not a test).

For cases of ``bench/streams_scale.py`` (same generator, same seed), it solves with the flows and reports:

* the plan's cost split into the converged placement (actives and converged standbys) and the way of this
  round's movements (:func:`~stickyflow.formulations.streams.plan.path_cost`: restorations and moves of
  waiting), beside the flows' proven bound;
* a **role-swap** polish: every stateful task keeps its replica set (target and converged standbys) and a
  min-cost flow re-chooses which replica is the active one, within a box of active and one of stateful
  counts (each pair tried; replica counts cannot change), movements priced with their way; the standbys are then solved again for the new
  target. A lower cost would show the flows' plan is not locally optimal under such swaps;
* a **client LNS** (``--lns ROUNDS``): every role on ``--lns-clients`` clients (one drawn at random and those
  sharing the most tasks with it) placed again by CP-SAT at once, each client's counts kept in the boxes the
  plan's counts sit in, movements priced with their way; a cheaper balanced answer replaces the plan. It shows
  whether the flows' plans are locally optimal in that wider sense (not for tags: the spread rule is not
  modelled);
* optionally (``--lp``, up to ``--lp-pairs`` task x client pairs) the **LP relaxation** of the joint model
  with one variable per (task, client) and role, balance as the hull of its boxes, solved by GLOP: how it
  compares with the flows' bound.

    .venv/bin/python bench/streams_gap_probe.py                       # the 10,000 x 1,000 stateful cases
    .venv/bin/python bench/streams_gap_probe.py --size 1000x100 --lp  # with the LP at 1,000 x 100
    .venv/bin/python bench/streams_gap_probe.py --size 1000x100 --lns 60 --lns-clients 6

Prints one line per case and writes ``bench-results/streams_gap_probe.json``.
"""

from __future__ import annotations

import argparse
import functools
import json
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


@functools.cache
def _scale_bench():
    """``bench/streams_scale.py`` as a module, loaded once (it sits beside this file, not in a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("streams_scale", Path(__file__).with_name("streams_scale.py"))
    scale = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scale)
    return scale


def model_of(tasks: int, clients: int, scenario: str, variant: str, seed: int):
    """The snapshot of ``bench/streams_scale.py``'s case, as the formulations' model."""
    import stickyflow
    from stickyflow.formulations.streams.model import build_model

    doc = _scale_bench().case_document(tasks, clients, scenario, variant, seed)
    return build_model(stickyflow.parse_snapshot(doc), None)


def _way(m, t: np.ndarray, c: np.ndarray) -> np.ndarray:
    """What target ``c`` of ``t`` costs on the way where it is a movement (:meth:`StreamsModel.movement_cost`),
    else 0."""
    t, c = np.asarray(t, dtype=np.int64), np.asarray(c, dtype=np.int64)
    moving = m.constrained[t] & ~np.isin(c * m.T + t, m.cu_keys)
    return np.where(moving, m.movement_cost(t, c), 0)


def role_swap(m, plan):
    """The cheapest choice of active within each stateful task's replica set, over every pair of an active and
    a stateful box: the new target, or None when no pair admits one. Stateless tasks stay where they are."""
    from ortools.graph.python import min_cost_flow

    from stickyflow.check.streams import balance_excess
    from stickyflow.formulations.streams.plan import converged_standbys

    tg = plan.target
    S = np.flatnonzero(m.stateful)
    if not len(S) or not m.want:
        return None
    replicas = np.concatenate([tg[S, None], converged_standbys(m, tg, plan.standby)[S]], axis=1)
    k = replicas.shape[1]
    ts, cs = np.repeat(S, k), replicas.reshape(-1)
    held = cs >= 0  # a task with fewer standbys than wanted (too few clients) has gaps
    ts, cs, task_row = ts[held], cs[held], np.repeat(np.arange(len(S)), k)[held]
    # choosing c as the active instead of a standby there: the difference, plus its way when c is a movement
    cost = m.active_cost(ts, cs) - m.standby_cost(ts, cs) + _way(m, ts, cs)
    fixed = np.bincount(tg[~m.stateful], minlength=m.C)
    stateful_boxes = m.boxes_stateful or [(np.zeros(m.C, np.int64), np.full(m.C, len(S), np.int64))]
    n, sink = len(S), len(S) + m.C
    big = int(np.abs(cost).sum()) + 1
    best = None
    for lo, hi in m.boxes:
        for slo, shi in stateful_boxes:
            low, high = np.maximum(lo - fixed, slo), np.minimum(hi - fixed, shi)
            if (low > high).any() or low.sum() > n or high.sum() < n:
                continue
            f = min_cost_flow.SimpleMinCostFlow()
            arcs = f.add_arcs_with_capacity_and_unit_cost(task_row, n + cs,
                                                          np.ones(len(cs), np.int64), cost.astype(np.int64))
            clients = n + np.arange(m.C)
            f.add_arcs_with_capacity_and_unit_cost(clients, np.full(m.C, sink), low.astype(np.int64),
                                                   np.full(m.C, -big))
            f.add_arcs_with_capacity_and_unit_cost(clients, np.full(m.C, sink), (high - low).astype(np.int64),
                                                   np.zeros(m.C, np.int64))
            supplies = np.zeros(sink + 1, np.int64)
            supplies[:n], supplies[sink] = 1, -n
            f.set_nodes_supplies(np.arange(sink + 1), supplies)
            if f.solve() != f.OPTIMAL:
                continue
            flow = f.flows(arcs)
            target = tg.copy()
            target[S] = cs[flow > 0]
            if balance_excess(np.bincount(target, minlength=m.C), m.threads, m.bf):
                continue  # a lower bound left unmet: not this box
            value = int((cost * flow).sum())
            if best is None or value < best[0]:
                best = (value, target)
    return None if best is None else best[1]


def _box_holding(counts: np.ndarray, boxes) -> tuple[np.ndarray, np.ndarray] | None:
    """The first box that holds every client's count (a balanced count is in one), else None."""
    for lo, hi in boxes:
        if ((counts >= lo) & (counts <= hi)).all():
            return lo, hi
    return None


def _replace_roles(m, target: np.ndarray, conv: np.ndarray, K: np.ndarray, seconds: float):
    """Every role held on the clients ``K`` placed again by CP-SAT (see the module docstring): the new target
    and converged standbys and whether CP-SAT proved them best, or None (no answer, or a count in no box)."""
    from ortools.sat.python import cp_model

    from stickyflow.formulations.streams.balance import balance_boxes

    in_k = np.zeros(m.C, dtype=bool)
    in_k[K] = True
    active_here = in_k[target]
    standby_here = (conv >= 0) & in_k[np.maximum(conv, 0)]
    n_standby = standby_here.sum(axis=1)
    tasks = np.flatnonzero(active_here | (n_standby > 0))
    stateful = m.stateful
    boxes = (_box_holding(np.bincount(target, minlength=m.C), m.boxes),
             _box_holding(np.bincount(target[stateful], minlength=m.C), m.boxes_stateful)
             if m.boxes_stateful else None,
             _box_holding(np.bincount(target, minlength=m.C) + np.bincount(conv[conv >= 0], minlength=m.C),
                          balance_boxes(m.T + m.want * int(stateful.sum()), m.threads, m.bf)))
    if boxes[0] is None or boxes[2] is None:
        return None
    tt, cc = np.repeat(tasks, len(K)), np.tile(K, len(tasks))
    act_cost = (m.active_cost(tt, cc) + _way(m, tt, cc)).reshape(len(tasks), len(K)).tolist()
    sb_cost = m.standby_cost(tt, cc).reshape(len(tasks), len(K)).tolist() if m.want else None
    cm = cp_model.CpModel()
    x: dict[tuple[int, int], object] = {}
    y: dict[tuple[int, int], object] = {}
    cost = []
    Kl = K.tolist()
    for i, t in enumerate(tasks.tolist()):
        if active_here[t]:
            for j, c in enumerate(Kl):
                x[t, c] = cm.new_bool_var("")
                cost.append(act_cost[i][j] * x[t, c])
            cm.add_exactly_one(x[t, c] for c in Kl)
        if n_standby[t]:
            for j, c in enumerate(Kl):
                y[t, c] = cm.new_bool_var("")
                cost.append(sb_cost[i][j] * y[t, c])
                if (t, c) in x:
                    cm.add(x[t, c] + y[t, c] <= 1)
            cm.add(sum(y[t, c] for c in Kl) == int(n_standby[t]))
    for c in Kl:
        acts = [v for (t, c2), v in x.items() if c2 == c]
        stfs = [v for (t, c2), v in x.items() if c2 == c and stateful[t]]
        sbs = [v for (t, c2), v in y.items() if c2 == c]
        cm.add_linear_constraint(sum(acts), int(boxes[0][0][c]), int(boxes[0][1][c]))
        if boxes[1] is not None:
            cm.add_linear_constraint(sum(stfs), int(boxes[1][0][c]), int(boxes[1][1][c]))
        cm.add_linear_constraint(sum(acts) + sum(sbs), int(boxes[2][0][c]), int(boxes[2][1][c]))
    for (t, c), v in x.items():
        cm.add_hint(v, bool(target[t] == c))
    for (t, c), v in y.items():
        cm.add_hint(v, bool((conv[t] == c).any()))
    cm.minimize(sum(cost))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = seconds
    solver.parameters.num_workers = 1
    status = solver.solve(cm)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    new_target, new_conv = target.copy(), conv.copy()
    for t in tasks.tolist():
        if active_here[t]:
            new_target[t] = next(c for c in Kl if solver.value(x[t, c]))
        if n_standby[t]:
            slots = np.flatnonzero(standby_here[t]).tolist()
            new_conv[t, slots] = [c for c in Kl if solver.value(y[t, c])]
    return new_target, new_conv, status == cp_model.OPTIMAL


def client_lns(m, plan, clients: int, rounds: int, seconds: float, seed: int = 1) -> dict:
    """Up to ``rounds`` neighbourhoods of ``clients`` clients (see the module docstring), within ``seconds``
    in all: the cheapest balanced cost reached, how many neighbourhoods CP-SAT solved and proved."""
    import random

    from stickyflow.formulations.streams import flow as sf
    from stickyflow.formulations.streams.plan import (StreamsPlan, converged_standbys, movements, round_standbys,
                                                      target_cost)

    rng = random.Random(seed)
    best = target_cost(m, plan)
    target, conv = plan.target.copy(), converged_standbys(m, plan.target, plan.standby)
    solved = proved = 0
    t0 = time.perf_counter()
    for _ in range(rounds):
        left = seconds - (time.perf_counter() - t0)
        if left <= 0:
            break
        first = rng.randrange(m.C)
        mine = np.flatnonzero((target == first) | (conv == first).any(axis=1))
        share = np.bincount(np.r_[target[mine], conv[mine][conv[mine] >= 0]], minlength=m.C).astype(float)
        share[first] = -1
        share += np.array([rng.random() for _ in range(m.C)])  # ties at random
        K = np.unique(np.r_[first, np.argsort(-share)[:clients - 1]])
        found = _replace_roles(m, target, conv, K, min(5.0, left))
        if found is None:
            continue
        solved += 1
        proved += found[2]
        moving = movements(m, found[0])
        trial = StreamsPlan(target=found[0], active=np.where(moving, m.holder, found[0]),
                            warmup=np.full(m.T, -1), standby=round_standbys(m, found[0], found[1]),
                            method="lns", status="feasible", extra={})
        cost = target_cost(m, trial)
        if cost < best and all(sf._counts_balanced(m, trial).values()):
            best, target, conv = cost, found[0], found[1]
    return dict(lns_plan=best, lns_solved=solved, lns_proved=proved, lns_s=round(time.perf_counter() - t0, 3))


def lp_relaxation(m, time_limit: float) -> float | None:
    """The joint model's LP relaxation (GLOP): x[t, c] active, y[t, c] standby, one role per client and task,
    counts of actives, stateful actives and replicas within the hull of their boxes, each movement's active
    priced with its way. None when GLOP does not finish."""
    from ortools.linear_solver import pywraplp

    from stickyflow.formulations.streams.balance import balance_boxes, box_hull

    T, C = m.T, m.C
    S = np.flatnonzero(m.stateful)
    s = pywraplp.Solver.CreateSolver("GLOP")
    inf = s.infinity()
    tt, cc = np.meshgrid(np.arange(T), np.arange(C), indexing="ij")
    A = (m.active_cost(tt.ravel(), cc.ravel()) + _way(m, tt.ravel(), cc.ravel())).reshape(T, C).tolist()
    B = m.standby_cost(S.repeat(C), np.tile(np.arange(C), len(S))).reshape(len(S), C).tolist()
    obj = s.Objective()
    x = [[s.NumVar(0, 1, "") for _ in range(C)] for _ in range(T)]
    y = [[s.NumVar(0, 1, "") for _ in range(C)] for _ in S]
    for t in range(T):
        row = s.Constraint(1, 1)
        for c in range(C):
            row.SetCoefficient(x[t][c], 1)
            obj.SetCoefficient(x[t][c], float(A[t][c]))
    for i, t in enumerate(S.tolist()):
        row = s.Constraint(m.want, m.want)
        for c in range(C):
            row.SetCoefficient(y[i][c], 1)
            obj.SetCoefficient(y[i][c], float(B[i][c]))
            one = s.Constraint(-inf, 1)
            one.SetCoefficient(y[i][c], 1)
            one.SetCoefficient(x[t][c], 1)

    def hull(n: int, tasks, with_standbys: bool) -> None:
        lo, hi = box_hull(balance_boxes(n, m.threads, m.bf))
        for c in range(C):
            row = s.Constraint(float(lo[c]), float(hi[c]))
            for t in tasks:
                row.SetCoefficient(x[t][c], 1)
            if with_standbys:
                for i in range(len(S)):
                    row.SetCoefficient(y[i][c], 1)

    hull(T, range(T), False)
    if len(S) and len(S) < T:
        hull(len(S), S.tolist(), False)
    if m.want and len(S):
        hull(T + m.want * len(S), range(T), True)
    obj.SetMinimization()
    s.SetTimeLimit(int(time_limit * 1000))
    return obj.Value() if s.Solve() == pywraplp.Solver.OPTIMAL else None


def probe(tasks: int, clients: int, scenario: str, variant: str, seed: int, lp: bool, lp_pairs: int,
          lp_time: float, lns: int = 0, lns_clients: int = 6, lns_seconds: float = 120.0) -> dict:
    """One case: the flows' plan and bound, the split of its cost, the role swap, and on request the client
    LNS and the LP (see the module docstring), as one row."""
    from stickyflow.formulations.streams import flow as sf
    from stickyflow.formulations.streams.plan import path_cost, target_cost

    m = model_of(tasks, clients, scenario, variant, seed)
    t0 = time.perf_counter()
    plan = sf.solve_flow(m)
    wall = time.perf_counter() - t0
    cost = target_cost(m, plan)
    way = path_cost(m, plan.target)
    row = dict(case=f"{tasks}/{clients}/{scenario}/{variant}", plan=cost, bound=plan.bound, placement=cost - way,
               way=way, flow_s=round(wall, 3))
    t1 = time.perf_counter()
    target = role_swap(m, plan)
    if target is not None:
        swapped = sf.complete_plan(m, target)
        row.update(swap_changed=int((target != plan.target).sum()), swap_plan=target_cost(m, swapped),
                   swap_balanced=all(sf._counts_balanced(m, swapped).values()))
    row["swap_s"] = round(time.perf_counter() - t1, 3)
    if lns and variant != "tags" and not m.sub_balance:
        row.update(client_lns(m, plan, lns_clients, lns, lns_seconds, seed))
    if lp and tasks * clients <= lp_pairs:
        t2 = time.perf_counter()
        value = lp_relaxation(m, lp_time)
        row.update(lp=None if value is None else round(value, 2), lp_s=round(time.perf_counter() - t2, 3))
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", default="10000x1000", help="TASKSxCLIENTS (default 10000x1000)")
    p.add_argument("--scenarios", nargs="+", default=["steady", "scale_out", "rolling_restart"])
    p.add_argument("--variants", nargs="+", default=["stateful"])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--lp", action="store_true", help="also the LP relaxation (GLOP), on small enough cases")
    p.add_argument("--lp-pairs", type=int, default=200_000, help="largest tasks x clients for the LP")
    p.add_argument("--lp-time", type=float, default=120.0, help="GLOP's time limit, seconds")
    p.add_argument("--lns", type=int, default=0, metavar="ROUNDS", help="client neighbourhoods for CP-SAT")
    p.add_argument("--lns-clients", type=int, default=6, help="clients per neighbourhood")
    p.add_argument("--lns-seconds", type=float, default=120.0, help="time for all neighbourhoods of a case")
    p.add_argument("--out", default=str(ROOT / "bench-results" / "streams_gap_probe.json"))
    a = p.parse_args(argv)
    tasks, clients = (int(v) for v in a.size.lower().split("x"))
    rows = []
    for scenario in a.scenarios:
        for variant in a.variants:
            row = probe(tasks, clients, scenario, variant, a.seed, a.lp, a.lp_pairs, a.lp_time, a.lns,
                        a.lns_clients, a.lns_seconds)
            rows.append(row)
            print("  ".join(f"{k}={v}" for k, v in row.items()), flush=True)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(dict(benchmark="streams_gap_probe", seed=a.seed, size=a.size,
                                           date=time.strftime("%Y-%m-%d %H:%M:%S"), rows=rows), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
