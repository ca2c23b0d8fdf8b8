"""Issue 37: the optimizer over a whole convergence, and the same answers however busy the machine.

Every play is :func:`stickyflow.datasets.convergence.converge` (warm-ups and standbys caught up between
rounds), every answer through the one checker. "At least as balanced" is
:func:`~stickyflow.datasets.convergence.at_least_as_balanced` on where each assignor settles: in every
count the spec asks of the optimizer (active tasks, stateful actives, replicas, under
``balance_subtopology`` each subtopology), the distance from **Balanced** is no larger.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

import stickyflow
from stickyflow.datasets.convergence import (at_least_as_balanced, converge, next_round, restorations,
                                             round_bound)
from tests.checker import check_result
from tests.test_streams_support import random_streams

CONVERGENCE = Path(__file__).resolve().parent.parent.parent / "shared" / "examples" / "streams-convergence"


def _doc(tasks, clients, config=None) -> dict:
    return {"format": "stickyflow.snapshot/1", "kind": "streams", "now_ms": 0, "tasks": tasks, "clients": clients,
            "config": config or {}}


# --------------------------------------------------------------------------- the player and its price

def test_restorations_count_every_state_restoration_once():
    """An active that leaves its client, a standby where the task was held in no role, a warm-up on such a
    client: one ``non_overlap_cost`` each; a warm-up on a client that kept a standby continues its state; a
    stateless task moves for ``non_overlap_cost`` 0 under a rack-aware strategy (Kafka's default)."""
    tasks = [{"id": f"0_{i}", "stateful": True, "end_offset_sum": 10**6} for i in range(3)] + \
        [{"id": "1_0", "stateful": False}]
    clients = [{"process_id": "a", "previous_active": ["0_0", "0_1", "1_0"], "previous_standby": []},
               {"process_id": "b", "previous_active": ["0_2"], "previous_standby": ["0_1"]},
               {"process_id": "c", "previous_active": [], "previous_standby": []}]
    snap = stickyflow.parse_snapshot(_doc(tasks, clients, {"num_standby_replicas": 1,
                                                           "rack_aware_assignment_strategy": "min_traffic"}))
    answer = type("R", (), {})()
    answer.assignment = {"a": {"active": ["0_1"], "standby": ["0_2"], "warmup": []},  # 0_2 on a: a standby move
                         "b": {"active": ["0_2", "1_0"], "standby": [], "warmup": ["0_1"]},  # 1_0 moves: free
                         "c": {"active": ["0_0"], "standby": ["0_1"], "warmup": []}}  # 0_0 moves; 0_1 new on c
    assert restorations(snap, answer) == 3
    answer.assignment["c"] = {"active": ["0_0"], "standby": [], "warmup": ["0_1"]}  # a warm-up where none was
    answer.assignment["b"] = {"active": ["0_2", "1_0"], "standby": ["0_1"], "warmup": []}
    assert restorations(snap, answer) == 3
    plain = stickyflow.parse_snapshot(_doc(tasks, clients))  # no rack-aware strategy: everything counts 1
    assert restorations(plain, answer) == 4


def test_next_round_takes_the_replicas_as_caught_up_and_drops_other_state():
    doc = json.loads((CONVERGENCE / "example-streams-12.json").read_text())
    r = stickyflow.assign(doc, "optimal")
    nxt = stickyflow.parse_snapshot(next_round(doc, r))
    for c in nxt.clients:
        a = r.assignment[c.process_id]
        assert list(c.previous_active) == list(a.active)
        assert list(c.previous_standby) == list(a.standby + a.warmup)
        held = set(a.active + a.standby + a.warmup)
        assert all(nxt.is_caught_up(c, nxt.task(t)) for t in held)
        assert set(c.lags) <= held  # a task it no longer holds leaves no state behind
    assert nxt.now_ms == doc["now_ms"] + 600_000


def test_round_zero_promise_holds_over_the_whole_way(seed):
    """No detours: the cost the first round's plan stands for (``target_cost``: the settled assignment and the
    way there) is what the convergence costs in all, at most, wherever every round is proven optimal (a later
    round finds nothing dearer than what is left of the first plan). Warm-up mode, without tags (the first
    plan's balance is then the best), racks (a waiting movement may move to a holder that caught up meanwhile,
    whose traffic saves more than the move each round it waits) or learner mode (its rule picks which movement
    waits)."""
    from stickyflow.formulations.streams.opt import solve_streams
    from stickyflow.registry import SolveOptions

    rng = random.Random(seed)
    checked = 0
    for _ in range(120):
        doc = random_streams(rng.randrange(2**31), tasks=rng.randint(1, 10), clients=rng.randint(2, 5), tags=None,
                             racks=None, mode="warmup")
        run = converge(doc, "optimal", check=check_result)
        plans = [solve_streams(s, SolveOptions()) for s in run.snapshots]
        if any(p.status != "optimal" for p in plans):
            continue
        checked += 1
        assert run.converged and run.total_cost <= plans[0].extra["target_cost"], \
            (doc, run.restorations, run.traffic, [p.extra["target_cost"] for p in plans])
    print(f"{checked} of 120 proven in every round")
    assert checked >= 60


# --------------------------------------------------------------------------- against the greedy

def _judge(doc: dict, label: str) -> tuple[bool, bool]:
    """Both assignors to convergence; the issue's rules. Returns (greedy as balanced, optimal strictly cheaper)."""
    o = converge(doc, "optimal", check=check_result)
    g = converge(doc, "sticky", check=check_result)
    assert o.converged and o.rounds <= o.round_bound, (label, o.rounds, o.round_bound)
    assert g.converged, label
    as_balanced = at_least_as_balanced(g.excess, o.excess)
    if as_balanced:
        # warm-up mode, the spec's order: the total first, then the rounds. Learner mode, the fewest movements
        # first: the rounds first, then the total. The issue asks for both; where the greedy reaches a lower
        # total in more learner rounds, no plan has both (streams/scale_in/t16-c4-s362069: 9 in 1 round against
        # the greedy's 7 in 2; docs/streams.md, "Learner mode: the fewest movements first")
        learner = o.snapshots[0].config.rebalancing_mode == "learner"
        ours, theirs = (o.total_cost, o.rounds), (g.total_cost, g.rounds)
        if learner:
            ours, theirs = ours[::-1], theirs[::-1]
        assert ours <= theirs, (label, o.total_cost, g.total_cost, o.rounds, g.rounds, o.excess, g.excess)
    return as_balanced, o.total_cost < g.total_cost


def test_small_applications_converge_within_the_bound_and_cost_no_more_than_the_greedy(seed):
    """Two hundred small generated applications (both rebalancing modes, racks, tags, standbys, threads; about
    2 s)."""
    rng = random.Random(seed)
    as_balanced = cheaper = 0
    for _ in range(200):
        doc = random_streams(rng.randrange(2**31), tasks=rng.randint(1, 10), clients=rng.randint(1, 4),
                             mode=rng.choice(["warmup", "warmup", "learner"]))
        a, c = _judge(doc, json.dumps(doc))
        as_balanced += a
        cheaper += c
    print(f"greedy at least as balanced on {as_balanced} of 200; optimal strictly cheaper in total on {cheaper}")


@pytest.mark.slow
def test_larger_applications_converge_and_cost_no_more_than_the_greedy(seed):
    """Forty larger ones (up to 24 tasks, 8 clients: CP-SAT improves many of their plans; about 20 s)."""
    rng = random.Random(seed)
    for _ in range(40):
        doc = random_streams(rng.randrange(2**31), tasks=rng.randint(5, 24), clients=rng.randint(2, 8),
                             mode=rng.choice(["warmup", "warmup", "learner"]))
        _judge(doc, json.dumps(doc))


@pytest.mark.parametrize("name", ["example-streams-12", "example-streams-22", "example-streams-37",
                                  "example-streams-119",
                                  pytest.param("example-streams-49", marks=pytest.mark.slow),
                                  pytest.param("example-streams-66", marks=pytest.mark.slow)])
def test_issue_applications(name):
    """The six applications of the issue (../shared/examples/streams-convergence). On 37, 49 and 66 the greedy
    settles with its subtopologies farther from Balanced (``balance_subtopology``), which the spec asks of the
    optimizer wherever it can hold: 37 costs 29 against the greedy's 24, proven the least among the paths that
    keep every subtopology Balanced."""
    doc = json.loads((CONVERGENCE / f"{name}.json").read_text())
    _judge(doc, name)



def test_learner_mode_takes_no_more_rounds_than_the_greedy(seed):
    """Learner mode with racks (``min_traffic``): each movement takes a rebalance of its own, and priced at its
    cost alone the optimizer moved task after task to save traffic (11 rounds against the greedy's 1, say, at 22
    against 120). With the fewest movements first, wherever the greedy settles at least as balanced the
    optimizer takes no more rounds and costs no more in total; where the greedy settles in one round, so does
    it (the greedy's answer is a plan without movements; about 1 s)."""
    from stickyflow.datasets.generators import streams_snapshot

    rng = random.Random(seed)
    as_balanced = one_round = 0
    for _ in range(30):
        doc = streams_snapshot(rng.choice(["steady", "scale_out", "rack_outage", "lag_skew", "rolling_restart",
                                           "scale_in"]),
                               tasks=rng.randint(8, 30), clients=rng.randint(2, 6), seed=rng.randrange(10**6), racks=3,
                               num_standby_replicas=rng.choice([0, 1]), subtopologies=rng.randint(1, 3),
                               config={"rebalancing_mode": "learner", "rack_aware_assignment_strategy": "min_traffic",
                                       "rack_aware_assignment_tags": [], "balance_factor": rng.choice([1, 2])})
        a, _ = _judge(doc, doc["id"])
        as_balanced += a
        one_round += a and converge(doc, "sticky").rounds == 1
    print(f"greedy at least as balanced on {as_balanced} of 30, settled in one round on {one_round}")
    assert one_round >= 5


@pytest.mark.parametrize("mode, option, rounds, total", [("warmup", None, 2, 2), ("learner", None, 1, 10),
                                                         ("warmup", True, 1, 10), ("learner", False, 2, 2)])
def test_movements_first_follows_the_mode_unless_asked(mode, option, rounds, total):
    """One stateful task on a client of rack r0 whose input lives on r1, where an idle client sits: a warm-up
    there and a move (2 restorations, one round more) end its cross-rack read (traffic 10). Cost first (warm-up
    mode) takes that way; the fewest movements first (learner mode) keeps it where it is; ``movements_first``
    turns either way."""
    tasks = [{"id": "0_0", "stateful": True, "end_offset_sum": 10**5,
              "input_partitions": [{"topic": "in", "partition": 0, "racks": ["r1"]}],
              "changelog_partitions": [{"topic": "cl", "partition": 0, "racks": ["r0", "r1"]}]}]
    clients = [{"process_id": "a", "rack": "r0", "previous_active": ["0_0"], "previous_standby": []},
               {"process_id": "b", "rack": "r1", "previous_active": [], "previous_standby": []}]
    doc = _doc(tasks, clients, {"rack_aware_assignment_strategy": "min_traffic", "rebalancing_mode": mode})
    options = {} if option is None else {"movements_first": option}
    run = converge(doc, "optimal", check=check_result, **options)
    assert (run.rounds, run.total_cost) == (rounds, total)
    assert all(r.solver.status == "optimal" for r in run.results)


def test_movements_first_must_be_a_bool():
    doc = json.loads((CONVERGENCE / "example-streams-12.json").read_text())
    with pytest.raises(stickyflow.StickyflowError, match="movements_first"):
        stickyflow.assign(doc, "optimal", movements_first="yes", fallback=False)

def test_learner_mode_budget_is_one():
    doc = json.loads((CONVERGENCE / "example-streams-12.json").read_text())
    doc["config"] = dict(doc["config"], rebalancing_mode="learner")
    assert round_bound(doc) == 5 + 1  # 5 stateful tasks, no standby, one learner a round
    run = converge(doc, "optimal", check=check_result)
    assert run.converged and run.rounds <= run.round_bound
    assert all(r.metrics["warmups"] <= 1 for r in run.results)


# --------------------------------------------------------------------------- the metric that says it converges

def test_warming_up_says_when_the_group_still_converges():
    """``metrics["warming_up"]`` is positive exactly when a result asks for a follow-up: an optimal answer with
    ``balanced`` false is then a group on its way, not a settled one."""
    doc = json.loads((CONVERGENCE / "example-streams-12.json").read_text())
    for assignor in ("optimal", "sticky"):
        run = converge(doc, assignor)
        first, last = run.results[0], run.last
        assert first.followup_rebalance_deadline_ms is not None and not first.metrics["balanced"]
        assert first.metrics["warming_up"] == first.metrics["warmups"] > 0
        assert last.followup_rebalance_deadline_ms is None and last.metrics["warming_up"] == 0
        assert last.metrics["balanced"]
    assert stickyflow.assign(doc, "optimal").to_json()["metrics"]["warming_up"] == 2


# --------------------------------------------------------------------------- the same answer, however busy

def _canonical(result) -> str:
    out = result.to_json()
    out["solver"].pop("wall_s")  # the one measured figure
    return json.dumps(out, sort_keys=True)


BUSY = "import time\nend = time.time() + 60\nwhile time.time() < end:\n    pass\n"


def test_answers_are_identical_under_cpu_contention():
    """Three busy processes on the two cores (ended after the solves, and by themselves after 60 s): CP-SAT
    improving an unproven flow plan (example 49, its 2 s budget, the case the issue saw change), the flow and
    the greedy answer byte for byte as on a quiet machine. Before, the wall-clock guard (3 x 2 s + 5 s) ended
    such a search where the load left it."""
    cases = [("example-streams-49", "optimal"), ("example-streams-12", "optimal"), ("example-streams-66", "sticky")]
    docs = {n: json.loads((CONVERGENCE / f"{n}.json").read_text()) for n, _ in cases}
    quiet = [_canonical(stickyflow.assign(docs[n], a)) for n, a in cases]
    busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(3)]
    try:
        time.sleep(0.2)
        t0 = time.perf_counter()
        loaded = [_canonical(stickyflow.assign(docs[n], a)) for n, a in cases]
        print(f"loaded solves: {time.perf_counter() - t0:.1f} s")
    finally:
        for p in busy:
            p.kill()
            p.wait()
    assert json.loads(quiet[0])["solver"]["method"] == "cpsat"
    assert loaded == quiet


HASHED = """
import json, sys
import stickyflow
for path, assignor in json.loads(sys.argv[1]):
    out = stickyflow.assign(path, assignor, time_limit=0.2).to_json()
    out["solver"].pop("wall_s")
    print(json.dumps(out, sort_keys=True))
"""


def test_answers_do_not_depend_on_string_hashing():
    """The flow, the greedy, learner mode and a short CP-SAT search, in two processes with different string
    hash seeds: the same bytes."""
    cases = [(str(CONVERGENCE / f"example-streams-{n}.json"), a)
             for n, a in ((22, "optimal"), (119, "sticky"), (37, "optimal"), (12, "sticky"))]
    runs = []
    for hash_seed in ("1", "2"):
        env = {"PYTHONHASHSEED": hash_seed, "PATH": "/usr/bin:/bin"}
        runs.append(subprocess.run([sys.executable, "-c", HASHED, json.dumps(cases)], capture_output=True,
                                   text=True, env=env, check=True, timeout=120).stdout)
    assert runs[0] == runs[1] and runs[0].count("\n") == len(cases)


def test_the_wall_clock_safety_net_says_when_it_ended_a_search(monkeypatch):
    """Forced to fire at once, the guard leaves a valid answer that claims no proof from the cut search and
    says why in ``solver.reason``."""
    from stickyflow.formulations.streams import cpsat as streams_cpsat

    monkeypatch.setattr(streams_cpsat, "WALL_GUARD", 0.0)
    monkeypatch.setattr(streams_cpsat, "WALL_GUARD_S", 1e-3)
    doc = json.loads((CONVERGENCE / "example-streams-49.json").read_text())
    snap = stickyflow.parse_snapshot(doc)
    r = stickyflow.assign(snap, "optimal")
    check_result(snap, r)
    assert r.solver.status == "feasible" and "safety net" in (r.solver.reason or ""), r.solver
