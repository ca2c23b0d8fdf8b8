"""The optimizing streams assignor (issue 4): validity, the optimum against brute force, flow against CP-SAT,
against Kafka's greedy high-availability assignor, convergence, fallbacks and time limits."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import numpy as np
import pytest

import stickyflow
from stickyflow.check.streams import balance_excess, streams_metrics
from stickyflow.datasets.generators import streams_snapshot
from stickyflow.datasets.simulator import Scenario, simulate
from stickyflow.formulations.streams import actives as streams_actives, arcs as streams_arcs, flow as streams_flow
from stickyflow.formulations.streams import balance as streams_balance, pricing as streams_pricing
from stickyflow.formulations.streams import standbys as streams_standbys
from stickyflow.formulations.streams.plan import converged_standbys
from stickyflow.formulations.streams.opt import build_model, movements, solve_streams
from stickyflow.registry import SolveOptions

from checker import check_result
from test_streams_support import round_bound
from conftest import example_paths

SCENARIOS = ("fresh", "steady", "scale_out", "scale_in", "rolling_restart", "rack_outage", "lag_skew", "mixed",
             "uniform")


def solve(snap, assignor="optimal", **kw):
    """Assign, run the checker, and check the result's own claims."""
    r = stickyflow.assign(snap, assignor, **kw)
    check_result(snap, r)
    if r.solver.status in ("optimal", "feasible"):
        assert r.solver.objective == r.metrics["cost"], (r.solver.objective, r.metrics["cost"])
        if r.solver.bound is not None:
            assert r.solver.bound <= r.solver.objective
        if r.solver.status == "optimal" and r.solver.bound is not None:
            assert r.solver.bound == r.solver.objective
    return r


def gen(scenario, seed, **kw):
    return stickyflow.parse_snapshot(streams_snapshot(scenario, seed=seed, **kw))


# --------------------------------------------------------------------------- validity

@pytest.mark.parametrize("path", [p for p in example_paths() if json.loads(Path(p).read_text())["kind"] == "streams"],
                         ids=lambda p: Path(p).name)
@pytest.mark.parametrize("method", [None, "flow", "cpsat"])
def test_shared_examples(path, method):
    snap = stickyflow.parse_snapshot(json.loads(Path(path).read_text()))
    r = solve(snap, method=method, time_limit=10)
    # CP-SAT proves the optimum of these small examples; the flow alone may leave a gap to its bound
    assert r.solver.status == "optimal" or (method == "flow" and r.solver.status == "feasible")
    assert r.solver.method == (method or r.solver.method)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_generated_instances_are_valid(scenario, seed):
    rng = random.Random(seed)
    for _ in range(3):
        kw = dict(tasks=rng.randint(6, 40), clients=rng.randint(2, 7), seed=rng.randrange(10**6),
                  racks=rng.choice([0, 2, 3]) if scenario != "rack_outage" else 3,
                  num_standby_replicas=rng.choice([0, 1, 2]), stateful_fraction=rng.choice([0.5, 1.0]),
                  subtopologies=rng.randint(1, 3),
                  config={"rebalancing_mode": rng.choice(["warmup", "learner"]),
                          "max_warmup_replicas": rng.randint(1, 3),
                          "balance_factor": rng.choice([1, 1, 2])})
        if kw["racks"]:
            kw["config"]["rack_aware_assignment_strategy"] = rng.choice(["min_traffic", "balance_subtopology"])
        snap = gen(scenario, **kw)
        for method in (None, "cpsat"):
            r = solve(snap, method=method, time_limit=2)
            assert r.solver.status in ("optimal", "feasible"), r.solver.reason


def test_balance_subtopology_is_exact(seed):
    rng = random.Random(seed)
    for _ in range(4):
        snap = gen("steady", rng.randrange(10**6), tasks=rng.randint(10, 40), clients=rng.randint(2, 5), racks=3,
                   subtopologies=3, stateful_fraction=0.5,
                   config={"rack_aware_assignment_strategy": "balance_subtopology"})
        r = solve(snap)
        if r.followup_rebalance_deadline_ms is not None:
            continue  # what runs is not yet the balanced target
        idx = snap.index
        subs = np.array([t.subtopology for t in snap.tasks])
        TH = int(idx.threads.sum())
        for ci, (pid, a) in enumerate(r.assignment.items()):
            for g in np.unique(subs):
                n_g = int((subs == g).sum())
                have = sum(1 for t in a.active if snap.task(t).subtopology == g)
                share = n_g * int(idx.threads[ci])
                assert share // TH <= have <= -(-share // TH), (pid, g, have)


# --------------------------------------------------------------------------- the optimum is real

def tiny_snapshot(rng: random.Random) -> dict:
    """2 to 3 clients, 2 to 5 tasks: stateful or not, lags, racks, previous owners and standbys, warm-up budgets,
    balance factors."""
    C = rng.randint(2, 3)
    T = rng.randint(2, 5 if C == 2 else 4)
    racks = ["r0", "r1"]
    tasks = []
    for i in range(T):
        sub = rng.randint(0, 1)
        stateful = rng.random() < 0.7
        t = {"id": f"{sub}_{i}", "stateful": stateful,
             "input_partitions": [{"topic": f"in{sub}", "partition": i, "racks": rng.sample(racks, rng.randint(1, 2))}]}
        if stateful:
            t["end_offset_sum"] = rng.choice([0, 50_000, 200_000])
            t["changelog_partitions"] = [{"topic": "cl", "partition": i, "racks": [rng.choice(racks)]}]
        tasks.append(t)
    clients = []
    owners = {t["id"]: rng.randrange(-1, C) for t in tasks}
    for c in range(C):
        prev = [tid for tid, o in owners.items() if o == c]
        lags = {}
        for t in tasks:
            if t["stateful"] and t["id"] not in prev and rng.random() < 0.4:
                lags[t["id"]] = rng.choice([0, 5_000, 40_000])
        standby = [t["id"] for t in tasks if t["stateful"] and t["id"] not in prev and rng.random() < 0.3]
        clients.append({"process_id": f"c{c}", "threads": rng.choice([1, 1, 2]), "rack": rng.choice(racks),
                        "previous_active": prev, "previous_standby": standby, "lags": lags})
    config = {"num_standby_replicas": rng.choice([0, 1]), "max_warmup_replicas": rng.randint(1, 2),
              "rack_aware_assignment_strategy": rng.choice(["none", "min_traffic", "balance_subtopology"]),
              "acceptable_recovery_lag": 10_000, "balance_factor": rng.choice([1, 1, 2])}
    if rng.random() < 0.3:
        config["rack_aware_assignment_non_overlap_cost"] = rng.randint(0, 3)
    return {"format": "stickyflow.snapshot/1", "kind": "streams", "now_ms": 1000, "tasks": tasks, "clients": clients,
            "config": config}


def tags_spread(snap, target, standbys, busy=None) -> bool:
    """The KIP-708 rule on a converged assignment (``standbys``: per stateful task, its clients): no standby
    could move to a client holding no replica of the task and add a tag value without losing one. ``busy``:
    per task, clients holding it otherwise (a warm-up), which are not free either."""
    from stickyflow.check.streams_tables import fully_spread, tag_combinations, tag_spread_improvement

    combos, client_combo, counts = tag_combinations(snap)
    if len(combos) <= 1:
        return True
    rows = combos.tolist()
    for t, cs in standbys.items():
        holders = [int(target[t]), *cs]
        reps = [int(client_combo[c]) for c in holders]
        if fully_spread(rows, reps):
            continue
        held = np.bincount(client_combo[holders + list((busy or {}).get(t, ()))], minlength=len(combos))
        free = (counts - held > 0).tolist()
        if any(tag_spread_improvement(rows, reps, free, pos) for pos in range(1, len(reps))):
            return False
    return True


def brute_force(snap):
    """The model's optimum by enumeration, written from the spec, not from the formulations.

    Every target (a client per task) whose active counts are Balanced, and for it
    every choice of ``want`` standbys per stateful task on clients other than its
    target (the converged assignment), and for every movement (which runs on its
    holder meanwhile) every choice of this round's standbys on clients other than
    the holder (a task that does not move has its converged ones).
    Lexicographic: the least balance excess of
    stateful actives, replicas and (balance_subtopology) subtopologies; then the
    least cost of the converged assignment (moves + standby moves, priced with
    KIP-925's costs) plus the way of each movement (issue 37: every restoration
    on the way costs ``non_overlap_cost``: meanwhile the task runs on its holder,
    a move unless the holder ran it; its state is restored on the target unless
    the target held it in some role; then it moves to the target; the converged
    cost counts one move already). A client keeps no state of a task it no longer
    holds, so a standby of this round that neither was held nor stays once
    converged is a restoration more, so is a converged standby on a client that
    held the task (not the holder) but does not keep it this round, and so is a
    target that held the task with neither a standby nor a warm-up there this
    round (warm-ups go to those first, ``max_warmup_replicas`` of them). Then the
    fewest movements (each a round of waiting). In learner mode (one learner a
    rebalance: a movement is a round) the fewest movements come before the cost.
    With tags, this round's replicas spread as the check reads them with a
    warm-up on every target without a standby (so with tags it is a relaxation
    where the budget binds). Returns ``(excess, cost, movements)``.
    """
    idx = snap.index
    cfg = snap.config
    T, C = len(idx.task_ids), len(idx.client_ids)
    th = np.asarray(idx.threads)
    bf = cfg.balance_factor
    want = snap.standbys_per_task()
    m = build_model(snap)  # only for the eligibility and holder arrays, and the cost tables
    stateful = np.asarray(idx.stateful)
    subs = np.array([t.subtopology for t in snap.tasks])
    S = np.flatnonzero(stateful)
    held = {(int(k // T), int(k % T)) for k in m.held_keys}
    tagged = bool(cfg.rack_aware_assignment_tags) and want > 0
    rounds_first = cfg.rebalancing_mode == "learner"
    best = None
    for tg in itertools.product(range(C), repeat=T):
        tg = np.array(tg, dtype=np.int64)
        act = np.bincount(tg, minlength=C)
        if balance_excess(act, th, bf):
            continue
        mv = movements(m, tg)
        a_cost = int(m.active_cost(np.arange(T), tg).sum())
        for t in np.flatnonzero(mv).tolist():  # the way of each movement, beyond the converged move
            was = int(idx.prev_active[t])
            way = 1 + ((int(tg[t]), t) not in held) + (was >= 0 and was != m.holder[t]) - (was >= 0 and was != tg[t])
            a_cost += int(m.noc[t]) * way
        e_fixed = 0
        if stateful.any() and (~stateful).any():
            e_fixed += balance_excess(np.bincount(tg[stateful], minlength=C), th, bf)
        if cfg.rack_aware_assignment_strategy == "balance_subtopology" and len(set(subs.tolist())) > 1:
            e_fixed += sum(balance_excess(np.bincount(tg[subs == g], minlength=C), th, bf) for g in sorted(set(subs)))
        options = [list(itertools.combinations([c for c in range(C) if c != tg[t]], want)) for t in S] \
            if want else [[()]]
        running = np.where(mv, m.holder, tg)
        moving_s = [t for t in S.tolist() if mv[t]]
        now_options = [list(itertools.combinations([c for c in range(C) if c != m.holder[t]], want))
                       for t in moving_s]
        for choice in itertools.product(*options):
            conv = dict(zip(S.tolist(), choice))
            if tagged and not tags_spread(snap, tg, conv):
                continue
            rep = act.copy()
            cost = a_cost
            for t, cs in conv.items():
                for c in cs:
                    rep[c] += 1
                    cost += int(m.standby_cost(np.array([t]), np.array([c]))[0])
            e = e_fixed + (balance_excess(rep, th, bf) if want and len(S) else 0)
            way = None  # the cheapest this round for these converged standbys
            for now_choice in itertools.product(*now_options):
                now = dict(zip(moving_s, now_choice))
                if tagged and now and not tags_spread(snap, running, now,
                                                      {t: [int(tg[t])] for t, cs in now.items() if tg[t] not in cs}):
                    continue
                extra, lost = 0, []
                for t, cs in now.items():
                    h = int(m.holder[t])
                    extra += int(m.noc[t]) * sum(1 for c in cs if c != tg[t] and c not in conv.get(t, ())
                                                 and (c, t) not in held)
                    extra += int(m.noc[t]) * sum(1 for c in conv.get(t, ()) if c != h and (c, t) in held and c not in cs)
                    if (int(tg[t]), t) in held and tg[t] not in cs:
                        lost.append(int(m.noc[t]))
                extra += sum(sorted(lost)[:max(0, len(lost) - m.budget)])  # the warm-ups to the dearest
                way = extra if way is None else min(way, extra)
            if way is None:
                continue
            key = (e, int(mv.sum()), cost + way) if rounds_first else (e, cost + way, int(mv.sum()))
            if best is None or key < best:
                best = key
    return None if best is None else (best[0], best[2], best[1]) if rounds_first else best


def test_optimum_confirmed_by_brute_force(seed):
    rng = random.Random(seed)
    checked = proven_flow = 0
    for _ in range(25):
        doc = tiny_snapshot(rng)
        snap = stickyflow.parse_snapshot(doc)
        e, cost, mv = brute_force(snap)
        cp = solve_streams(snap, SolveOptions(method="cpsat", time_limit=10, num_workers=1))
        assert cp.status == "optimal", doc
        assert (cp.extra["balance_excess"], cp.extra["target_cost"], cp.extra["movements"]) == (e, cost, mv), \
            (doc, cp.extra, (e, cost, mv))
        fl = solve_streams(snap, SolveOptions(method="flow"))
        assert "bound_fault" not in fl.extra, (doc, fl.extra)  # a relaxation above the flow's own answer
        if e == 0:
            # every relaxation bounds every balanced assignment, the optimum included
            assert max(fl.extra.get("relaxation_values") or [0]) <= cost, (doc, fl.extra, cost)
            # the flow's bound holds for every balanced assignment; its own answer, when balanced in every
            # count, costs no less (it may yield replica balance where its two stages cannot meet it)
            assert fl.extra["target_bound"] is None or fl.extra["target_bound"] <= cost, (doc, fl.extra, cost)
            if all(fl.extra["balanced_counts"].values()):
                assert cost <= fl.extra["target_cost"], (doc, fl.extra, cost)
            if fl.status == "optimal":
                assert fl.extra["target_cost"] == cost
                proven_flow += 1
        for method in ("flow", "cpsat", None):
            r = stickyflow.assign(snap, "optimal", method=method, time_limit=10)
            check_result(snap, r)
        checked += 1
    print(f"\n[brute force] {checked} tiny instances: CP-SAT's optimum equal every time; the flow proven "
          f"optimal on {proven_flow}")
    assert checked == 25


def test_learner_mode_fewest_movements_first_brute_force(seed):
    """Learner mode (one learner a rebalance): the fewest movements come before the cost, so that a plan takes
    no more rounds than it must (issue 37). By enumeration: the least excess, then the fewest movements, then
    the least cost with the way. CP-SAT proves the same optimum; the flow's bound (reported without the round
    price: a bound on the plans with no more movements) stays at or below it, and a proven flow plan meets it.
    The instances where cost first would choose more movements are counted: the rule is not idle (50 instances,
    more until one shows it, at most 200: about one in 50 seeds draws none in its first 50, e.g. 358444461)."""
    rng = random.Random(seed)
    differs = n = 0
    while n < 50 or (not differs and n < 200):
        n += 1
        doc = tiny_snapshot(rng)
        doc["config"]["rebalancing_mode"] = "learner"
        snap = stickyflow.parse_snapshot(doc)
        e, cost, mv = brute_force(snap)
        warm = stickyflow.parse_snapshot({**doc, "config": {**doc["config"], "rebalancing_mode": "warmup"}})
        differs += brute_force(warm)[2] > mv
        cp = solve_streams(snap, SolveOptions(method="cpsat", time_limit=10, num_workers=1))
        assert cp.status == "optimal", doc
        assert (cp.extra["balance_excess"], cp.extra["movements"], cp.extra["target_cost"]) == (e, mv, cost), \
            (doc, cp.extra, (e, cost, mv))
        fl = solve_streams(snap, SolveOptions(method="flow"))
        assert "bound_fault" not in fl.extra, (doc, fl.extra)
        if e == 0:
            assert fl.extra["target_bound"] is None or fl.extra["target_bound"] <= cost, (doc, fl.extra, cost)
            if all(fl.extra["balanced_counts"].values()):
                assert (mv, cost) <= (fl.extra["movements"], fl.extra["target_cost"]), (doc, fl.extra, cost)
            if fl.status == "optimal":
                assert (fl.extra["movements"], fl.extra["target_cost"]) == (mv, cost), (doc, fl.extra)
        check_result(snap, stickyflow.assign(snap, "optimal", time_limit=10))
    print(f"\n[learner brute force] {n} tiny instances; cost first would move more on {differs}")
    assert differs >= 1


@pytest.mark.parametrize("zones", [3, 2])
def test_tag_floor_bounds_brute_force(seed, zones):
    """With a zone tag (KIP-708) the flow prices each task's standbys away from its target's zone: every
    relaxation stays at or below the optimum over the assignments that spread by zone, found by enumeration.
    With two zones a movement across them must keep its standby on the holder (this round it sits on the
    target, the only client of the other zone), and the floor prices it there: still at or below."""
    rng = random.Random(seed)
    checked = 0
    for _ in range(25):
        doc = tiny_snapshot(rng)
        doc["config"].update(num_standby_replicas=1, rack_aware_assignment_tags=["zone"])
        for c in doc["clients"]:
            c["tags"] = {"zone": rng.choice(["z0", "z1", "z2"][:zones])}
        snap = stickyflow.parse_snapshot(doc)
        found = brute_force(snap)
        fl = solve_streams(snap, SolveOptions(method="flow"))
        assert "bound_fault" not in fl.extra, (doc, fl.extra)
        if found is not None and found[0] == 0:
            assert max(fl.extra.get("relaxation_values") or [0]) <= found[1], (doc, fl.extra, found)
            assert fl.extra["target_bound"] is None or fl.extra["target_bound"] <= found[1], (doc, fl.extra, found)
        check_result(snap, stickyflow.assign(snap, "optimal", method="flow"))
        checked += 1
    assert checked == 25


@pytest.mark.parametrize("zones", [3, 2])
def test_replica_prices_bound_brute_force_with_tags(seed, zones):
    """Every replica price the flow may try is a Lagrangian bound, wherever its counts come from: with a zone
    tag, from a relaxed target whose movements keep their standby on the holder (this round on the target),
    the 0/1 steps (spread and heaped counts) and the finer steps, run to the end whatever the gap, stay at or
    below the optimum over the assignments that spread by zone, found by enumeration."""
    rng = random.Random(seed)
    checked = priced = 0
    for _ in range(80):
        doc = tiny_snapshot(rng)
        doc["config"].update(num_standby_replicas=1, rack_aware_assignment_tags=["zone"])
        for c in doc["clients"]:
            c["tags"] = {"zone": rng.choice(["z0", "z1", "z2"][:zones])}
        crowded = rng.choice(doc["clients"])  # it held a standby of every task: the cheapest place for all
        crowded["previous_standby"] = [t["id"] for t in doc["tasks"]
                                       if t["stateful"] and t["id"] not in crowded["previous_active"]]
        crowded["lags"] = {t: rng.choice([0, 5_000, 40_000]) for t in crowded["previous_standby"]}
        snap = stickyflow.parse_snapshot(doc)
        found = brute_force(snap)
        if found is None or found[0] != 0:
            continue
        m = build_model(snap)
        if not m.stateful.any():
            continue
        target = streams_actives.best_target(m)[0].target
        values = []
        for spread in (True, False):
            values += streams_pricing.replica_lagrangian(m, target, 4, lambda more: True, spread)[0]
        values += streams_pricing.replica_subgradient(m, target, 6, lambda t: None, lambda more: True)
        assert max(values, default=0) <= found[1], (doc, values, found)
        checked += 1
        priced += bool(values)
    print(f"\n[replica prices, {zones} zones] {checked} tiny instances at or below the optimum, {priced} priced")
    assert priced >= 5


def test_replica_lagrangian_proves_what_the_floors_cannot():
    """120 tasks x 12 clients, one standby, racks (ten seeds): the standby floors ignore how many replicas a
    client may hold; pricing replica balance in (a Lagrangian relaxation) must never claim more than the plan
    costs, and must prove some plans optimal that the floors alone leave open (seed 22: 31 -> 37, 26: 48 -> 50
    today; which seeds depends on which of several equally cheap relaxed targets the flow returns, so the test
    asks for one at least). CP-SAT, solving the first of those on its own, finds nothing cheaper."""
    proven = []
    for seed in range(20, 30):
        doc = streams_snapshot("steady", tasks=120, clients=12, seed=seed, racks=3, num_standby_replicas=1,
                               subtopologies=4, stateful_fraction=0.5,
                               config={"rack_aware_assignment_strategy": "min_traffic",
                                       "rack_aware_assignment_tags": []})
        snap = stickyflow.parse_snapshot(doc)
        fl = solve_streams(snap, SolveOptions(method="flow"))
        first, lagrangian = fl.extra["relaxation_values"][0], fl.extra.get("lagrangian_values") or []
        assert max(lagrangian, default=first) <= fl.extra["target_cost"], (seed, fl.extra)
        if lagrangian and max(lagrangian) > first and fl.status == "optimal":
            assert fl.extra["target_bound"] == fl.extra["target_cost"], fl.extra
            proven.append((snap, fl))
    assert proven
    snap, fl = proven[0]
    cp = solve_streams(snap, SolveOptions(method="cpsat", time_limit=5, num_workers=1))
    assert cp.extra["target_cost"] >= fl.extra["target_bound"], (cp.extra, fl.extra)
    check_result(snap, stickyflow.assign(snap, "optimal", method="flow"))


def test_replica_repair_balances_movements_across_two_zones(monkeypatch):
    """60 tasks x 8 clients after a rack outage, one standby spread by a zone tag of two values (the
    `rack_outage` `tags` case of the scale benchmark, small), twenty seeds. A task that moves to the other
    zone keeps its standby on its holder (this round it sits on the target: no other client may take it), so
    the target decides replicas the standby flow cannot rebalance; at 10,000 x 1,000 (seed 2) one client held
    16 against a cap of 15. Pricing the clients the plan overfills (``_replica_repair``) balances the plans
    the first target leaves unbalanced in replicas (eight of the twenty on 2026-11-27), never unbalances one,
    and its values, bounds like the other prices', never exceed what a balanced plan costs. CP-SAT, on the
    first repaired one, finds nothing below the flow's bound."""
    from stickyflow.formulations.streams import flow as streams_flow

    def solve_all():
        out = {}
        for seed in range(20):
            doc = streams_snapshot("rack_outage", tasks=60, clients=8, seed=seed, racks=3, num_standby_replicas=1,
                                   subtopologies=10, stateful_fraction=0.5,
                                   config={"rack_aware_assignment_strategy": "min_traffic"})
            snap = stickyflow.parse_snapshot(doc)
            out[seed] = snap, solve_streams(snap, SolveOptions(method="flow"))
        return out

    repaired = solve_all()
    for seed, (_, fl) in repaired.items():
        if all(fl.extra["balanced_counts"].values()):
            assert max(fl.extra.get("repair_values") or [], default=0) <= fl.extra["target_cost"], (seed, fl.extra)
    monkeypatch.setattr(streams_flow, "replica_repair", lambda *args, **kwargs: [])
    first = solve_all()
    fixed = [k for k in first if not first[k][1].extra["balanced_counts"]["replicas"]
             and repaired[k][1].extra["balanced_counts"]["replicas"]]
    print(f"\n[repair] balanced in replicas by the repair: seeds {fixed}")
    assert len(fixed) >= 5
    assert not [k for k in first if first[k][1].extra["balanced_counts"]["replicas"]
                and not repaired[k][1].extra["balanced_counts"]["replicas"]]
    snap, fl = repaired[fixed[0]]
    cp = solve_streams(snap, SolveOptions(method="cpsat", time_limit=5, num_workers=1))
    if fl.extra["target_bound"] is not None:
        assert cp.extra["target_cost"] >= fl.extra["target_bound"], (cp.extra, fl.extra)
    check_result(snap, stickyflow.assign(snap, "optimal", method="flow"))


def test_holders_unloaded_once_converged(monkeypatch):
    """A waiting movement's converged standby on its holder sits on its target this round, so a holder that runs
    many (its previous owner, issue 37) may end above Balanced's cap in replicas, which the targets alone may not
    mend (10,000 x 1,000 `rack_outage` tags, seed 2: 16 against 15, no bound). ``unload_holders`` moves such
    standbys to clients of the holder's tag combination below the cap: wherever it acts, on small outages and
    a zone tag of two values, the replica excess falls, only standbys on the holder move, each to a client of
    the holder's tag combination (so the converged assignment spreads as before), and the answer keeps every
    rule."""
    calls = []
    original = streams_flow.unload_holders

    def spy(m, target, converged, moving):
        out = original(m, target, converged, moving)
        calls.append((m, target, converged, moving, out))
        return out

    monkeypatch.setattr(streams_flow, "unload_holders", spy)
    acted = 0
    for seed in range(12):
        doc = streams_snapshot("rack_outage", tasks=200, clients=20, seed=seed, racks=3, num_standby_replicas=1,
                               subtopologies=10, stateful_fraction=0.5,
                               config={"rack_aware_assignment_strategy": "min_traffic"})
        for c in doc["clients"]:
            c["tags"] = {"zone": c["rack"]}
        doc["config"]["rack_aware_assignment_tags"] = ["zone"]
        snap = stickyflow.parse_snapshot(doc)
        calls.clear()
        fl = solve_streams(snap, SolveOptions(method="flow"))
        assert "bound_fault" not in fl.extra, (seed, fl.extra)
        for m, target, before, moving, after in calls:
            if after is None:
                continue
            acted += 1
            count = lambda sb: np.bincount(target, minlength=m.C) + np.bincount(sb[sb >= 0], minlength=m.C)
            assert balance_excess(count(after), m.threads, m.bf) < balance_excess(count(before), m.threads, m.bf)
            t, k = np.nonzero(after != before)
            assert (moving[t] & (before[t, k] == m.holder[t])).all()
            assert (m.client_combo[after[t, k]] == m.client_combo[m.holder[t]]).all()
            assert (after[t, k] != target[t]).all() and (after[t, k] != m.holder[t]).all()
        check_result(snap, stickyflow.assign(snap, "optimal", method="flow"))
    print(f"\n[unload holders] acted on {acted} candidate plans")
    assert acted >= 1


def test_finer_replica_prices_find_plans_the_first_prices_miss(monkeypatch):
    """40 tasks x 6 clients, one standby, racks, ``steady`` and ``scale_out`` over twenty seeds: the finer
    replica prices (``replica_subgradient``: quarter units, a step per client up where the relaxation overfills
    it, down where it does not) never claim more than the plan costs, and their targets are plans that reach
    the bound where the floors' and the 0/1 prices' targets do not (five of the forty on 2026-11-27, since the
    0/1 prices, from spread counts, prove the bound themselves). CP-SAT, on the first two of those, finds
    nothing cheaper."""
    from stickyflow.formulations.streams import flow as streams_flow

    def solve_all():
        out = {}
        for seed in range(20):
            for scenario in ("steady", "scale_out"):
                doc = streams_snapshot(scenario, tasks=40, clients=6, seed=seed, racks=3, num_standby_replicas=1,
                                       subtopologies=3, stateful_fraction=0.5,
                                       config={"rack_aware_assignment_strategy": "min_traffic",
                                               "rack_aware_assignment_tags": []})
                snap = stickyflow.parse_snapshot(doc)
                out[seed, scenario] = snap, solve_streams(snap, SolveOptions(method="flow"))
        return out

    fine = solve_all()
    for key, (_, fl) in fine.items():
        assert max(fl.extra.get("subgradient_values") or [], default=0) <= fl.extra["target_cost"], (key, fl.extra)
    monkeypatch.setattr(streams_flow, "replica_subgradient", lambda *args, **kwargs: [])
    coarse = solve_all()
    proven = [fine[k] for k in fine if fine[k][1].status == "optimal" and coarse[k][1].status != "optimal"]
    assert len(proven) >= 3
    assert not [k for k in fine if coarse[k][1].status == "optimal" and fine[k][1].status != "optimal"]
    for snap, fl in proven[:2]:
        cp = solve_streams(snap, SolveOptions(method="cpsat", time_limit=5, num_workers=1))
        assert cp.extra["target_cost"] >= fl.extra["target_bound"], (cp.extra, fl.extra)
        check_result(snap, stickyflow.assign(snap, "optimal", method="flow"))


def test_replica_caps_are_the_most_any_balanced_count_holds():
    """``_replica_caps`` and ``box_hull`` given the total, against enumeration: over every way of putting ``n``
    replicas on 2 to 4 clients of 1 to 3 threads (balance factor 1 or 2), each client's cap is the most it
    holds in any **Balanced** count vector, and the hull's floor the least: never looser (the hull's top, 21
    where every balanced count is 20, left the all-stateful gaps at 1.4 to 1.9%, and the box search's root
    unbalanced, two flows more per search), never tighter (that would cut a balanced assignment off, and the
    bound would not be one)."""
    from types import SimpleNamespace

    from stickyflow.check.streams import balance_excess

    rng = random.Random(11)
    tight = 0
    for _ in range(150):
        C = rng.randint(2, 4)
        threads = np.array([rng.randint(1, 3) for _ in range(C)], dtype=np.int64)
        bf = rng.choice([1, 1, 2])
        T = rng.randint(1, 9)
        stateful = np.array([rng.random() < 0.7 for _ in range(T)])
        want = rng.choice([1, 1, 2]) if stateful.any() else 0
        n = T + want * int(stateful.sum())
        m = SimpleNamespace(stateful=stateful, T=T, want=want, threads=threads, bf=bf)
        _, cap = streams_pricing._replica_caps(m)
        floor, top = streams_balance.box_hull(streams_balance.balance_boxes(n, threads, bf), n)
        most = np.zeros(C, dtype=np.int64)
        least = np.full(C, n, dtype=np.int64)
        for counts in itertools.product(range(n + 1), repeat=C):
            if sum(counts) == n and balance_excess(np.array(counts), threads, bf) == 0:
                most = np.maximum(most, counts)
                least = np.minimum(least, counts)
        assert (cap == most).all() and (top == most).all(), (n, threads.tolist(), bf, cap.tolist(), most.tolist())
        assert (floor == least).all(), (n, threads.tolist(), bf, floor.tolist(), least.tolist())
        hull = streams_balance.box_hull(streams_balance.balance_boxes(n, threads, bf))[1]
        tight += bool((cap < hull).any())
    assert tight >= 10


@pytest.mark.parametrize("pooled", [False, True], ids=["explicit", "pooled"])
def test_spread_free_standbys_cost_the_same_and_overfill_least(pooled, monkeypatch):
    """The replica counts that set the 0/1 prices (``_free_standbys``): spreading ties (``spread=True``) keeps
    every standby where it is cheapest (the placement costs what the heaped one costs) and fills no client
    beyond the replica hull more than the heaped placement does, in total; with rack pools (forced here)
    the heaped one is what put a whole pool's standbys on one client at 10,000 x 1,000. A pool prices every
    client of its rack as one that never held the task, so where a pool's standby lands on a client that did,
    it costs less than the flow priced it: with pools, the flows' own values (their cost part) are compared."""
    values: list[int] = []
    if pooled:
        monkeypatch.setattr(streams_standbys, "EXPLICIT_STANDBY_ARCS", 0)
        solve = streams_arcs.Arcs.solve

        def recorded(self, supplies):
            out, total = solve(self, supplies)
            values.append(total)
            return out, total

        monkeypatch.setattr(streams_arcs.Arcs, "solve", recorded)
    rng = random.Random(7)
    strictly = 0
    for i in range(30):
        doc = streams_snapshot(rng.choice(["steady", "scale_out", "rolling_restart", "rack_outage"]),
                               tasks=rng.randint(20, 80), clients=rng.randint(3, 9), seed=rng.randrange(10**6),
                               racks=3, num_standby_replicas=1, subtopologies=3, stateful_fraction=0.6,
                               config={"rack_aware_assignment_strategy": "min_traffic",
                                       "rack_aware_assignment_tags": rng.choice([[], ["zone"]])})
        m = build_model(stickyflow.parse_snapshot(doc))
        sol, _, _ = streams_actives.best_target(m)
        S, hi = streams_pricing._replica_caps(m)
        act = np.bincount(sol.target, minlength=m.C)
        placed = {}
        for spread in (True, False):
            found = streams_standbys.free_placement(m, S, sol.target, hi, spread)
            if found is None:
                break  # a pool too small: _free_standbys falls back to the cheapest held clients
            ts, cs = found
            cost = int(m.standby_cost(ts, cs).sum())
            if pooled:  # the flow's value: K1 x cost + K2 x units over the box + ties, the last two below K1
                cost = values[-1] // streams_standbys._weights(m, len(S) * m.want, cost_first=True)[0]
            over = int(np.maximum(act + np.bincount(cs, minlength=m.C) - hi, 0).sum())
            placed[spread] = cost, over
            counts = streams_standbys.free_standbys(m, S, sol.target, hi, spread)
            assert (counts == np.bincount(cs, minlength=m.C)).all()
        if len(placed) == 2:
            assert placed[True][0] == placed[False][0], (i, placed)
            assert placed[True][1] <= placed[False][1], (i, placed)
            strictly += placed[True][1] < placed[False][1]
    assert strictly >= 3



def test_replica_prices_follow_the_floors_own_standbys(seed):
    """The replica prices move by the counts of the relaxation's standbys (``free_placement``), so that
    placement must be the one the standby floor prices: never cheaper than the floor (the floor bounds every
    placement), and as cheap on nearly every instance. With a zone tag this holds only where tags spread around
    what runs this round: a movement runs on its holder, whose standby covers it. Spread around the target
    instead (before 2026-11-28), the placement was dearer than the floor on most such instances (35 of
    40 with seed 1), and the prices, following it, stalled below the scale benchmark's plans."""
    rng = random.Random(seed)
    tagged = equal = covers = 0
    for _ in range(40):
        doc = streams_snapshot(rng.choice(["steady", "scale_out", "rolling_restart", "rack_outage"]),
                               tasks=rng.randint(20, 60), clients=rng.randint(4, 9), seed=rng.randrange(10**6),
                               racks=3, num_standby_replicas=1, subtopologies=3, stateful_fraction=0.6,
                               config={"rack_aware_assignment_strategy": "min_traffic",
                                       "rack_aware_assignment_tags": ["zone"]})
        m = build_model(stickyflow.parse_snapshot(doc))
        target = streams_actives.best_target(m)[0].target
        S, hi = streams_pricing._replica_caps(m)
        found = streams_standbys.free_placement(m, S, target, hi, spread=True)
        if found is None or not m.tag_keys:
            continue
        ts, cs = found
        cost = int(m.standby_cost(ts, cs).sum())
        floor = int(streams_actives.standby_floor(m).pairs(np.arange(m.T), target).sum())
        assert cost >= floor, (doc["id"], cost, floor)
        tagged += 1
        equal += cost == floor
        covers += int((movements(m, target)[ts] & (cs == m.holder[ts])).sum())
    print(f"\n[free placement] {tagged} tagged instances: as cheap as the floor on {equal}; {covers} covers")
    assert tagged >= 30 and equal >= 0.9 * tagged and covers > 0

# --------------------------------------------------------------------------- flow and CP-SAT agree

def test_flow_and_cpsat_agree(seed):
    rng = random.Random(seed)
    agree = proven = 0
    for i in range(12):
        snap = gen(rng.choice(["steady", "scale_in", "rolling_restart", "lag_skew", "uniform", "scale_out"]),
                   rng.randrange(10**6), tasks=rng.randint(8, 30), clients=rng.randint(2, 5),
                   racks=rng.choice([0, 3]), num_standby_replicas=rng.choice([0, 1]),
                   config={"rack_aware_assignment_tags": []})
        fl = solve_streams(snap, SolveOptions(method="flow"))
        cp = solve_streams(snap, SolveOptions(method="cpsat", time_limit=10, num_workers=2))
        def key(d):
            unbalanced = d.extra["balance_excess"] > 0 if "balance_excess" in d.extra else \
                not all(d.extra["balanced_counts"].values())
            return unbalanced, d.extra["target_cost"], d.extra["movements"]

        if cp.status == "optimal":
            assert key(cp)[0] <= key(fl)[0], (key(cp), key(fl))
            if not key(cp)[0] and not key(fl)[0]:  # both balanced in every count
                assert key(cp)[1] <= key(fl)[1], (key(cp), key(fl))
                if fl.status == "optimal":
                    assert key(cp)[1] == key(fl)[1]
                    agree += 1
            proven += 1
        if fl.extra["target_bound"] is not None and not cp.extra["balance_excess"]:
            assert fl.extra["target_bound"] <= cp.extra["target_cost"]
    print(f"\n[flow vs cpsat] {proven} proven by CP-SAT, {agree} where both claim the same optimum")


def test_pooled_standbys_match_explicit(seed, monkeypatch):
    """Standbys placed by rack pools (large instances) against the explicit (task, client) flow, on the same
    snapshots: valid, each proven bound below the other's plan (both bound the same optimum), and never worse in
    both replica balance and cost. The two may settle on different targets of equal cost that wait on different
    numbers of warm-ups (a tie-break, not the objective: STICKYFLOW_SEED=439650224 gives 3 and 4 movements at
    cost 15, both proven), so the movements are not compared."""
    rng = random.Random(seed)
    for i in range(4):
        snap = gen(rng.choice(["steady", "scale_out", "lag_skew"]), rng.randrange(10**6), tasks=rng.randint(40, 80),
                   clients=rng.randint(15, 24), racks=3, num_standby_replicas=1 + i % 2,
                   config={"rack_aware_assignment_tags": ["zone"] if i == 2 else []})
        explicit = solve_streams(snap, SolveOptions(method="flow"))
        monkeypatch.setattr(streams_standbys, "EXPLICIT_STANDBY_ARCS", 0)
        pooled = solve_streams(snap, SolveOptions(method="flow"))
        monkeypatch.undo()
        assert explicit.extra["standby_mode"] == "explicit"
        assert pooled.extra["standby_mode"] in ("pooled", "explicit")  # explicit when a pool is too small
        for a, b in ((pooled, explicit), (explicit, pooled)):  # a proof holds against the other's plan too
            if a.extra.get("target_bound") is not None:
                assert a.extra["target_bound"] <= b.extra["target_cost"], (a.extra, b.extra)
        assert pooled.extra["replica_excess"] <= explicit.extra["replica_excess"] or \
            pooled.extra["target_cost"] <= explicit.extra["target_cost"]
        finished = stickyflow.api._finisher("streams")(snap, pooled)
        assert not finished.violations, finished.violations


@pytest.mark.parametrize("standby_arcs", [None, 0])
def test_converged_standbys_spread_around_the_target(standby_arcs, monkeypatch):
    """Two zones left after a rack outage, one standby: a movement's standby cannot avoid both the holder's
    zone (this round) and the target's (once moved), so only its holder, covering the move, keeps it. Pooled
    standbys once took a client of the target's zone instead, a plan whose converged assignment breaks the
    tag rule and costs less than the proven bound."""
    if standby_arcs is not None:
        monkeypatch.setattr(streams_standbys, "EXPLICIT_STANDBY_ARCS", standby_arcs)
    doc = streams_snapshot("rack_outage", tasks=600, clients=60, seed=1, racks=3, num_standby_replicas=1,
                           subtopologies=10, stateful_fraction=0.5, config={"rack_aware_assignment_strategy":
                                                                            "min_traffic"})
    snap = stickyflow.parse_snapshot(doc)
    m = build_model(snap)
    assert m.tag_keys == ("zone",) and len(m.combos) == 2
    plan = streams_flow.solve_flow(m)
    assert plan.extra["standby_mode"] == ("pooled" if standby_arcs == 0 else "explicit")
    assert "bound_fault" not in plan.extra, plan.extra
    assert plan.extra["movements"] > 0
    conv = converged_standbys(m, plan.target, plan.standby)
    S = np.flatnonzero(m.stateful)
    assert tags_spread(snap, plan.target, {int(t): conv[t].tolist() for t in S})


# --------------------------------------------------------------------------- against Kafka's greedy

class _Converged(Exception):
    pass


def play_to_convergence(doc, assignor, horizon):
    """(rounds, the converged assignment's metrics against the first snapshot), or (None, None)."""
    from stickyflow.datasets.simulator import run_scenario

    seen = []

    def observe(snapshot, result):
        check_result(snapshot, result)
        seen.append((snapshot, result))
        if result.followup_rebalance_deadline_ms is None:
            raise _Converged

    try:
        run_scenario(Scenario(snapshot=doc, rounds=horizon), assignor, time_limit=5, keep=False, observe=observe)
        return None, None
    except _Converged:
        metrics = dict(streams_metrics(seen[0][0], seen[-1][1].assignment))
        metrics["soft_excess"] = soft_excess(seen[0][0], seen[-1][1].assignment)
        return len(seen), metrics


def soft_excess(snap, assignment) -> int:
    """How far an assignment is from Balanced in the counts that may yield (stateful actives, replicas)."""
    from stickyflow.check.streams import balance_excess

    pos = {c.process_id: i for i, c in enumerate(snap.clients)}
    stateful = {t.id for t in snap.tasks if t.stateful}
    threads = np.array([c.threads for c in snap.clients])
    sf = np.zeros(len(pos), dtype=np.int64)
    rep = np.zeros(len(pos), dtype=np.int64)
    for pid, a in assignment.items():
        sf[pos[pid]] = sum(t in stateful for t in a.active)
        rep[pos[pid]] = len(a.active) + len(a.standby)
    bf = snap.config.balance_factor
    return balance_excess(sf, threads, bf) + balance_excess(rep, threads, bf)


def test_converged_cost_and_rounds_against_greedy(seed):
    """Played to convergence, the optimizer's converged cost (moves and standby moves since the first snapshot,
    traffic where it ends) is never above the greedy's, unless the greedy ends unbalanced in a count the
    optimizer balances (Balanced weighs clients by threads, and counts stateful tasks and replicas too). Cost comes
    before rounds (the spec): a cheaper end may take warm-up rounds the greedy skips; as cheap, it needs no more."""
    rng = random.Random(seed)
    rows = []
    for i in range(8):
        scenario = ["scale_out", "rolling_restart", "mixed", "lag_skew", "scale_in", "steady", "rack_outage",
                    "fresh"][i]
        doc = streams_snapshot(scenario, tasks=rng.randint(10, 24), clients=rng.randint(3, 5),
                               seed=rng.randrange(10**6), racks=3 if scenario == "rack_outage" else rng.choice([0, 3]),
                               num_standby_replicas=rng.choice([0, 1]), stateful_fraction=rng.choice([0.5, 1.0]),
                               config={"rebalancing_mode": rng.choice(["warmup", "learner"]),
                                       "rack_aware_assignment_strategy": rng.choice(["none", "min_traffic"])})
        horizon = round_bound(doc)
        ro, om = play_to_convergence(doc, "optimal", horizon)
        rg, gm = play_to_convergence(doc, "sticky", horizon)
        assert ro is not None, (doc["id"], horizon)
        assert om["balanced_active"], doc["id"]
        if rg is None:
            continue
        counts = ("balanced_active", "balanced_stateful", "balanced_replicas", "balanced_subtopology")
        # the greedy ends at least as balanced (in every count, and no nearer Balanced where neither gets there);
        # with tags the flow's standbys are a heuristic and CP-SAT gets 2 s: a known gap (issue 14), printed here
        tags = bool(doc["config"].get("rack_aware_assignment_tags"))
        if tags and om["cost"] > gm["cost"]:
            print(f"\n[known gap, tags] {doc['id']}: optimal settles at {om['cost']}, the greedy at {gm['cost']}")
        elif not any(om[k] and not gm[k] for k in counts) and om["soft_excess"] >= gm["soft_excess"]:
            # cost, then rounds; in learner mode rounds, then cost (the fewest movements first: a cheaper end
            # the greedy reaches in more learner rounds is not the optimizer's, e.g. seed 2024's scale_in)
            ours, theirs = (om["cost"], ro), (gm["cost"], rg)
            if doc["config"]["rebalancing_mode"] == "learner":
                ours, theirs = ours[::-1], theirs[::-1]
            assert ours <= theirs, (doc["id"], doc["config"], om, gm, ro, rg)
        rows.append((om["cost"], gm["cost"], ro, rg, om["balanced"], gm["balanced"]))
    print(f"\n[converged vs greedy] (cost o, cost g, rounds o, rounds g, balanced o, balanced g): {rows}")


def test_warmups_follow_the_budget_and_ask_for_a_followup():
    tasks = [{"id": f"0_{i}", "stateful": True, "end_offset_sum": 10**6} for i in range(6)]
    clients = [{"process_id": "a", "previous_active": [t["id"] for t in tasks], "previous_standby": []},
               {"process_id": "b", "previous_active": [], "previous_standby": []}]
    doc = {"format": "stickyflow.snapshot/1", "kind": "streams", "now_ms": 5, "tasks": tasks, "clients": clients,
           "config": {"max_warmup_replicas": 2}}
    snap = stickyflow.parse_snapshot(doc)
    r = solve(snap)
    assert len(r.assignment["b"].warmup) == 2 and not r.assignment["b"].active
    assert r.followup_rebalance_deadline_ms == 5 + 600_000
    doc["config"]["rebalancing_mode"] = "learner"
    r = solve(stickyflow.parse_snapshot(doc))
    assert len(r.assignment["b"].warmup) == 1


# --------------------------------------------------------------------------- fallbacks, limits, options

def test_infeasible_move_cap_falls_back():
    # stateless tasks cannot wait for a warm-up: balance must move two of them now
    tasks = [{"id": f"0_{i}", "stateful": False} for i in range(4)]
    snap = stickyflow.parse_snapshot({
        "format": "stickyflow.snapshot/1", "kind": "streams", "tasks": tasks,
        "clients": [{"process_id": "a", "previous_active": [t["id"] for t in tasks], "previous_standby": []},
                    {"process_id": "b", "previous_active": [], "previous_standby": []}]})
    r = solve(snap, max_moves=0)
    assert r.solver.status == "fallback"
    assert "InfeasibleError" in r.solver.reason
    with pytest.raises(stickyflow.InfeasibleError):
        solve_streams(snap, SolveOptions(extra={"max_moves": 0}, time_limit=10))


def test_move_cap_is_kept(seed):
    rng = random.Random(seed)
    snap = gen("mixed", rng.randrange(10**6), tasks=24, clients=4, racks=3)
    free = solve(snap, method="cpsat", time_limit=10)
    cap = max(0, free.metrics["moves"] - 2)
    r = solve(snap, max_moves=cap, time_limit=10)
    if r.solver.status != "fallback":
        assert r.solver.method == "cpsat" and r.metrics["moves"] <= cap


def test_flow_refuses_what_it_cannot_enforce():
    snap = gen("steady", 1, tasks=12, clients=3)
    r = solve(snap, method="flow", max_moves=3)
    assert r.solver.status == "fallback" and "method='cpsat'" in r.solver.reason
    with pytest.raises(stickyflow.UnknownAssignorError):
        stickyflow.assign(snap, method="simplex")


def test_one_millisecond_time_limit_is_valid():
    # CP-SAT: its own best, else the flow's solution when that keeps every rule, else the greedy
    snap = gen("mixed", 11, tasks=80, clients=8, racks=3, num_standby_replicas=2)
    r = solve(snap, method="cpsat", time_limit=0.001)
    assert r.solver.status in ("feasible", "fallback")
    snap = gen("steady", 12, tasks=80, clients=8, racks=3, num_standby_replicas=1,
               config={"rack_aware_assignment_tags": []})
    r = solve(snap, method="cpsat", time_limit=0.001)
    assert r.solver.status in ("optimal", "feasible", "fallback")
    r = solve(snap, method="flow", time_limit=0.001)  # the flow has no intermediate solutions: it finishes
    assert r.solver.status in ("optimal", "feasible")


def test_cpsat_is_reproducible():
    snap = gen("rolling_restart", 5, tasks=30, clients=5, racks=3, num_standby_replicas=2)
    runs = [stickyflow.assign(snap, method="cpsat", seed=7, num_workers=2, time_limit=3, deterministic=True)
            for _ in range(2)]
    assert runs[0].to_json()["assignment"] == runs[1].to_json()["assignment"]
    check_result(snap, runs[0])


def test_empty_and_degenerate():
    base = {"format": "stickyflow.snapshot/1", "kind": "streams"}
    for tasks, clients in (([], []), ([{"id": "0_0", "stateful": True}], []),
                           ([], [{"process_id": "a", "previous_active": [], "previous_standby": []}]),
                           ([{"id": "0_0", "stateful": True}],
                            [{"process_id": "a", "previous_active": [], "previous_standby": []}])):
        snap = stickyflow.parse_snapshot({**base, "tasks": tasks, "clients": clients,
                                          "config": {"num_standby_replicas": 2}})
        for method in ("flow", "cpsat"):
            r = solve(snap, method=method)
            assert r.solver.status == "optimal"
            assert streams_metrics(snap, r.assignment)["cost"] == 0


@pytest.mark.parametrize("method", ["flow", "cpsat"])
def test_solving_its_own_answer_again_moves_nothing(method, seed):
    """Hand a converged answer back as every client's previous tasks (all caught up) and solve again: no active
    task moves when the first answer was proven optimal (the converged cost is the spec's: a move from the
    first snapshot is at most one from the answer plus one from there). Under ``min_traffic`` a stateless task
    costs 0 to move, so only the tie-break keeps it still (the simulator once showed four to eight such moves in
    each idle round). An unproven answer may be improved, but only by a strictly better one: nothing moves for
    an equal (balance excess, cost)."""
    rng = random.Random(seed)
    proven = 0
    for _ in range(12):
        doc = streams_snapshot(rng.choice(SCENARIOS), tasks=rng.randint(8, 30), clients=rng.randint(2, 5),
                               seed=rng.randrange(10**6), racks=3, stateful_fraction=rng.choice([0.3, 0.6]),
                               num_standby_replicas=rng.choice([0, 1]),
                               config={"rack_aware_assignment_strategy": "min_traffic"})
        first = solve(stickyflow.parse_snapshot(doc), method=method, time_limit=10)
        if first.followup_rebalance_deadline_ms is not None:
            continue  # not converged yet: its warm-ups are meant to move
        again = dict(doc, clients=[dict(c, previous_active=list(first.assignment[c["process_id"]].active),
                                        previous_standby=list(first.assignment[c["process_id"]].standby),
                                        lags={t: 0 for t in first.assignment[c["process_id"]].standby})
                                   for c in doc["clients"]])
        snap2 = stickyflow.parse_snapshot(again)
        second = solve(snap2, method=method, time_limit=10)
        if first.solver.status == "optimal":
            proven += 1
            assert second.metrics["moves"] == 0, (doc["id"], second.metrics)
            assert {p: sorted(a.active) for p, a in second.assignment.items()} == \
                {p: sorted(a.active) for p, a in first.assignment.items()}
        elif second.metrics["moves"]:
            kept = streams_metrics(snap2, first.assignment)
            d = solve_streams(snap2, SolveOptions(method=method, time_limit=10))
            better = (d.extra.get("balance_excess", 0 if all(d.extra.get("balanced_counts", {}).values()) else 1),
                      d.extra["target_cost"])
            assert better < (0 if kept["balanced"] else 1, kept["cost"]), (doc["id"], better, kept)
    print(f"\n[again] {proven} first answers proven optimal")


def _two_standby_tags(scenario: str, tasks: int, clients: int, seed: int, subtopologies: int, stateful: float,
                      strategy: str, warmups: int, threads=None) -> dict:
    kw = {"threads": threads} if threads else {}
    return streams_snapshot(scenario, tasks=tasks, clients=clients, subtopologies=subtopologies, seed=seed, racks=3,
                            num_standby_replicas=2, stateful_fraction=stateful,
                            config={"rebalancing_mode": "warmup", "max_warmup_replicas": warmups,
                                    "balance_factor": 1, "rack_aware_assignment_tags": ["zone"],
                                    "rack_aware_assignment_strategy": strategy}, **kw)


def test_tag_repair_makes_the_flow_hint_valid():
    """Two standbys spread over a zone tag (``bench/streams_vs_greedy.py``'s ``lag_skew`` t33-c4): the flow
    relaxes the tags and its plan breaks the spread; repaired (one of the hints CP-SAT may start from), it
    keeps the flow's targets and what runs, moves standbys only, and is valid by every rule."""
    from stickyflow.formulations.streams.cpsat_data import relaxed as _relaxed
    from stickyflow.formulations.streams.cpsat_start import _tag_repaired, valid_hint as _valid_hint

    snap = stickyflow.parse_snapshot(_two_standby_tags("lag_skew", 33, 4, 219036, 3, 0.5, "min_traffic", 1,
                                                       threads=[1, 2]))
    m = build_model(snap, SolveOptions())
    assert m.tag_keys and m.want == 2
    plan = streams_flow.solve_flow(_relaxed(m))
    assert _valid_hint(m, plan) is None  # the flow's own plan breaks the spread
    fixed, moved = _tag_repaired(m, plan)
    assert moved > 0
    assert _valid_hint(m, fixed) is not None
    assert (fixed.target == plan.target).all() and (fixed.active == plan.active).all()
    assert (fixed.warmup == plan.warmup).all()
    assert (np.sort(fixed.standby, axis=1) != np.sort(plan.standby, axis=1)).any(axis=1).sum() <= moved


@pytest.mark.slow
def test_two_standby_tags_solve_without_falling_back():
    """97 tasks x 11 clients, two standbys over a zone tag (``streams_vs_greedy --quick``'s ``uniform``
    t97-c11, which fell back to the greedy on 2026-11-27: hinted with the flow's tag-breaking plan, CP-SAT
    found no solution in its 2 s). Hinted with the repaired plan, it answers, valid, and cheaper than the
    greedy (the deterministic time limit makes the run the same every time)."""
    snap = stickyflow.parse_snapshot(_two_standby_tags("uniform", 97, 11, 102110, 3, 1.0, "min_traffic", 2))
    res = stickyflow.assign(snap, "optimal", time_limit=2)
    check_result(snap, res)
    assert res.solver.status in ("optimal", "feasible"), res.solver.reason
    greedy = stickyflow.assign(snap, "sticky")
    assert res.metrics["cost"] < greedy.metrics["cost"]


@pytest.mark.slow
def test_two_standby_tags_start_from_the_better_balanced_hint():
    """108 tasks x 9 clients, two standbys over a zone tag, a fresh group (``streams_vs_greedy --quick``'s
    ``fresh`` t108-c9): the flow's plan breaks the spread. Of the two valid starts, CP-SAT takes the one less
    far from **Balanced**, then cheaper: here the repaired flow plan, balanced in every count (its standbys
    moved for the tags, then evened out) and cheaper than the greedy's answer. Its answer stays balanced and
    is cheaper than the greedy's."""
    from stickyflow.formulations.streams.plan import decision_plan
    from stickyflow.formulations.streams.cpsat_data import relaxed as _relaxed
    from stickyflow.formulations.streams.cpsat_start import _start_key, _tag_repaired, valid_start as _valid_start
    from stickyflow.registry import get_assignor

    snap = stickyflow.parse_snapshot(_two_standby_tags("fresh", 108, 9, 402327, 1, 0.5, "balance_subtopology", 2))
    m = build_model(snap, SolveOptions())
    flow = streams_flow.solve_flow(_relaxed(m))
    repaired, _ = _tag_repaired(m, flow)
    answer = get_assignor("sticky", "streams").load()(snap, SolveOptions())
    greedy = decision_plan(m, answer, answer.method)
    keys = {"flow, tags repaired": _start_key(m, repaired), "greedy": _start_key(m, greedy)}
    assert keys["flow, tags repaired"][0] == keys["greedy"][0] == 0, keys
    start, name = _valid_start(m, flow, SolveOptions())
    assert name == min(keys, key=keys.get) == "flow, tags repaired"
    res = stickyflow.assign(snap, "optimal", time_limit=2)
    check_result(snap, res)
    assert res.metrics["balanced"] and res.solver.status != "fallback"
    assert res.metrics["cost"] < stickyflow.assign(snap, "sticky").metrics["cost"]


def test_two_standby_tags_start_from_the_greedy_when_the_repair_fails(monkeypatch):
    """The same ``lag_skew`` t33-c4 snapshot, with the tag repair made to fail (it returns the flow's plan as
    it was): the greedy's answer, valid by every rule, is the start, under the greedy's method name."""
    import stickyflow.formulations.streams.cpsat_data as sc_data
    import stickyflow.formulations.streams.cpsat_start as sc_start

    snap = stickyflow.parse_snapshot(_two_standby_tags("lag_skew", 33, 4, 219036, 3, 0.5, "min_traffic", 1,
                                                       threads=[1, 2]))
    m = build_model(snap, SolveOptions())
    flow = streams_flow.solve_flow(sc_data.relaxed(m))
    monkeypatch.setattr(sc_start, "_tag_repaired", lambda m, plan: (plan, 0))
    start, name = sc_start.valid_start(m, flow, SolveOptions())
    assert name == "greedy" and sc_start.valid_hint(m, start) is not None
    assert start.method == "high_availability"


def test_two_standby_tags_above_the_start_only_size_answer_with_the_start(monkeypatch):
    """80 tasks x 40 clients (3,200 pairs), two standbys over a zone tag: above ``START_ONLY_PAIRS`` CP-SAT,
    not asked for by name, did not improve on its valid start within the default time in any measured run
    (200 x 20 to 10,000 x 1,000: the start back after 16 to 33 s, or nothing found), so the start is the
    answer and CP-SAT does not run. Asked for by name, or given a time limit that lifts the size, it runs."""
    import stickyflow.formulations.streams.cpsat as sc

    class Ran(Exception):
        pass

    def cp_sat_runs():
        raise Ran

    snap = stickyflow.parse_snapshot(_two_standby_tags("steady", 80, 40, 7, 4, 0.5, "min_traffic", 2))
    assert 80 * 40 > sc.START_ONLY_PAIRS
    monkeypatch.setattr(sc, "cp_model_module", cp_sat_runs)
    d = solve_streams(snap, SolveOptions())
    assert d.extra["note"].startswith("CP-SAT not run") and "cpsat_status" not in d.extra, d.extra
    res = stickyflow.assign(snap, "optimal")
    check_result(snap, res)
    assert res.solver.status == "feasible" and res.solver.method in ("flow", "high_availability"), res.solver
    with pytest.raises(Ran):
        solve_streams(snap, SolveOptions(method="cpsat"))
    with pytest.raises(Ran):
        solve_streams(snap, SolveOptions(time_limit=10.0 * 80 * 40 / sc.START_ONLY_PAIRS + 1))


@pytest.mark.parametrize("scenario,tasks,clients,seed,subtopologies,strategy,warmups", [
    ("mixed", 90, 11, 935110, 2, "min_traffic", 3),
    ("uniform", 97, 12, 281271, 3, "balance_subtopology", 1),
    ("rolling_restart", 77, 5, 714339, 3, "balance_subtopology", 2),
])
def test_two_standby_tags_start_is_a_solution_of_the_model(monkeypatch, scenario, tasks, clients, seed,
                                                            subtopologies, strategy, warmups):
    """Two standbys over a zone tag, tasks that move: the check reads this round only, CP-SAT's model also
    spreads a moving task's converged replicas, so a start valid by the check alone can be no solution of the
    model (with the holder and the target in different zones, and a warm-up, no two standbys spread both).
    The start CP-SAT takes must be one: with every hinted variable fixed to its hint, the model stays
    feasible (before ``_converged_spread``, these three were infeasible)."""
    from ortools.sat.python import cp_model

    import stickyflow.formulations.streams.cpsat as sc
    import stickyflow.formulations.streams.cpsat_data as sc_data
    import stickyflow.formulations.streams.cpsat_start as sc_start

    doc = streams_snapshot(scenario, tasks=tasks, clients=clients, subtopologies=subtopologies, seed=seed, racks=3,
                           num_standby_replicas=2, stateful_fraction=0.5,
                           config={"rebalancing_mode": "warmup", "max_warmup_replicas": warmups, "balance_factor": 1,
                                   "rack_aware_assignment_tags": ["zone"],
                                   "rack_aware_assignment_strategy": strategy})
    snap = stickyflow.parse_snapshot(doc)
    m = build_model(snap, SolveOptions())
    start, name = sc_start.valid_start(m, streams_flow.solve_flow(sc_data.relaxed(m)), SolveOptions())
    assert name == "flow, tags repaired" and sc_start.valid_hint(m, start) is not None
    assert movements(m, start.target).any()
    statuses = []
    solve = cp_model.CpSolver.solve

    def fixed_to_hint(self, model, *args, **kwargs):
        self.parameters.fix_variables_to_their_hinted_value = True
        status = solve(self, model, *args, **kwargs)
        statuses.append(self.status_name(status))
        return status

    monkeypatch.setattr(cp_model.CpSolver, "solve", fixed_to_hint)
    plan = sc.solve_cpsat(m, SolveOptions(time_limit=2), hint=start)
    assert statuses[0] in ("OPTIMAL", "FEASIBLE"), statuses
    assert sc_start.valid_hint(m, plan) is not None
