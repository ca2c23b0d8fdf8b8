"""Learner mode (the early KIP-441 draft): one learner per rebalance, promoted once caught up, no leader state."""

from __future__ import annotations

import json
import random

import numpy as np

import stickyflow
from stickyflow.greedy.streams_learner import assign_learner
from stickyflow.model.streams import parse_streams, streams_to_json
from tests.checker import check_result
from tests.test_streams_model import streams_examples
from tests.test_streams_support import make_streams, next_round, random_streams, resolve_until_stable


def _scale_out_doc():
    path = next(p for p in streams_examples() if "scale-out" in p.name)
    doc = json.loads(path.read_text())
    doc["config"]["rebalancing_mode"] = "learner"
    return doc


def test_the_draft_example_gets_one_learner_from_the_most_loaded_client():
    doc = _scale_out_doc()
    snap = stickyflow.parse_snapshot(doc)
    r = stickyflow.assign(snap, "sticky")
    check_result(snap, r)
    assert r.solver.method == "learner"
    # nothing moved yet: every active stays on its caught-up owner
    assert {p: a.active for p, a in r.assignment.items()} == {
        "S1": ("0_1", "0_2"), "S2": ("0_3", "0_4"), "S3": ("0_5",), "S4": ()}
    warm = [(p, a.warmup) for p, a in r.assignment.items() if a.warmup]
    assert warm == [("S4", ("0_1",))]  # from S1 (most loaded, first by process id) to the new client
    assert r.followup_rebalance_deadline_ms == snap.now_ms + snap.config.probing_rebalance_interval_ms
    # the learner reports caught up: it takes the task over at once; the next learner starts
    nxt = stickyflow.assign(next_round(doc, r), "sticky")
    assert nxt.assignment["S4"].active == ("0_1",)
    assert sum(len(a.warmup) for a in nxt.assignment.values()) <= 1


def test_learner_mode_converges_one_task_at_a_time(seed):
    rng = random.Random(seed)
    for _ in range(25):
        doc = random_streams(rng.randrange(2**31), mode="learner")
        n = sum(t["stateful"] for t in doc["tasks"])
        for keep in (True, False):
            rounds, last, snap = resolve_until_stable(doc, keep_state=keep, check=check_result, limit=n + 3)
            assert last.followup_rebalance_deadline_ms is None and rounds <= n + 2
            assert last.metrics["imbalance"] <= snap.config.balance_factor


def test_at_most_one_learner_and_only_stateful_moves_are_learned(seed):
    rng = random.Random(seed)
    for _ in range(30):
        snap = stickyflow.parse_snapshot(random_streams(rng.randrange(2**31), mode="learner"))
        r = stickyflow.assign(snap, "sticky")
        check_result(snap, r)
        assert r.metrics["warmups"] <= 1


def test_a_client_holding_a_lagging_standby_is_preferred_as_the_learner():
    """The learner goes to a new or least loaded client, one holding a standby of the task first.

    The standby is lagging on purpose: a caught-up standby would have been
    promoted to active before a learner is picked, so the preference that matters
    is "holds a standby" among equally loaded clients (b and c both run nothing).
    """
    tasks = [{"id": f"0_{i}", "stateful": True, "end_offset_sum": 10**6} for i in range(4)]
    doc = {"format": "stickyflow.snapshot/1", "kind": "streams", "tasks": tasks, "config": {
        "rebalancing_mode": "learner", "num_standby_replicas": 1},
        "clients": [{"process_id": "a", "previous_active": ["0_0", "0_1", "0_2", "0_3"], "previous_standby": []},
                    {"process_id": "b", "previous_active": [], "previous_standby": []},
                    {"process_id": "c", "previous_active": [], "previous_standby": ["0_2"], "lags": {"0_2": 50_000}}]}
    snap = stickyflow.parse_snapshot(doc)
    d = assign_learner(snap)
    r = stickyflow.assign(snap, "sticky")
    check_result(snap, r)
    # c holds a (lagging) standby of 0_2: that standby is the learner, no warm-up is added
    assert d.extra["learner"] == {"task": "0_2", "client": "c"}
    assert r.metrics["warmups"] == 0 and "0_2" in r.assignment["c"].standby
    assert r.followup_rebalance_deadline_ms is not None


def test_a_caught_up_client_is_promoted_at_once():
    tasks = [{"id": f"0_{i}", "stateful": True, "end_offset_sum": 10**6} for i in range(4)]
    doc = {"format": "stickyflow.snapshot/1", "kind": "streams", "tasks": tasks,
           "config": {"rebalancing_mode": "learner"},
           "clients": [{"process_id": "a", "previous_active": ["0_0", "0_1", "0_2", "0_3"], "previous_standby": []},
                       {"process_id": "b", "previous_active": [], "previous_standby": ["0_3", "0_1"],
                        "lags": {"0_3": 0, "0_1": 10}}]}
    snap = stickyflow.parse_snapshot(doc)
    r = stickyflow.assign(snap, "sticky")
    check_result(snap, r)
    assert r.assignment["b"].active == ("0_1", "0_3") and r.followup_rebalance_deadline_ms is None


def test_a_lost_leader_changes_nothing(seed):
    """The decision is a function of what members report: a fresh leader (a new parse, no memory) decides the same."""
    rng = np.random.default_rng(seed)
    doc = make_streams(rng, "scale_out", tasks=20, clients=5, standbys=1, mode="learner", churn=2)
    snap1 = stickyflow.parse_snapshot(doc)
    r1 = stickyflow.assign(snap1, "sticky")
    check_result(snap1, r1)
    doc2 = next_round(doc, r1)
    snap2 = stickyflow.parse_snapshot(doc2)
    continued = stickyflow.assign(snap2, "sticky")
    check_result(snap2, continued)
    # a brand-new leader: the snapshot re-read from its JSON text, in another client order
    fresh_doc = json.loads(json.dumps(streams_to_json(parse_streams(doc2))))
    fresh_doc["clients"] = fresh_doc["clients"][::-1]
    fresh_snap = stickyflow.parse_snapshot(fresh_doc)
    fresh = stickyflow.assign(fresh_snap, "sticky")
    check_result(fresh_snap, fresh)
    assert {k: v.to_json() for k, v in continued.assignment.items()} == {k: v.to_json() for k, v in fresh.assignment.items()}
    assert continued.followup_rebalance_deadline_ms == fresh.followup_rebalance_deadline_ms
