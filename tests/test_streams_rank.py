"""KIP-441's ranking (caught-up clients first, as one rank) and the "available movements" check."""

from __future__ import annotations

import random

import stickyflow
from stickyflow.greedy.streams_rank import rank, should_rebalance
from stickyflow.model.streams import parse_streams
from tests.test_streams_support import random_streams

DOC = {
    "format": "stickyflow.snapshot/1", "kind": "streams",
    "tasks": [{"id": "0_0", "stateful": True, "end_offset_sum": 100_000},
              {"id": "0_1", "stateful": True, "end_offset_sum": 100_000},
              {"id": "1_0", "stateful": False}],
    "clients": [
        {"process_id": "d", "previous_active": [], "previous_standby": [], "lags": {"0_0": 30_000}},
        {"process_id": "c", "previous_active": [], "previous_standby": ["0_0"], "lags": {"0_0": 9_000}},
        {"process_id": "b", "previous_active": ["0_0", "0_1", "1_0"], "previous_standby": []},
        {"process_id": "a", "previous_active": [], "previous_standby": [], "lags": {"0_0": 20_000}},
    ],
}


def test_rank_puts_caught_up_clients_first_as_one_rank():
    r = rank(parse_streams(DOC))
    assert set(r) == {"0_0", "0_1"}  # stateful tasks only
    assert [(x.process_id, x.rank, x.lag) for x in r["0_0"]] == [
        ("b", 0, 0), ("c", 0, 9_000), ("a", 20_000, 20_000), ("d", 30_000, 30_000)]
    assert [(x.process_id, x.rank) for x in r["0_1"]] == [("b", 0), ("a", 100_000), ("c", 100_000), ("d", 100_000)]
    assert list(rank(parse_streams(DOC), tasks=["0_1"])) == ["0_1"]


def test_rank_is_sorted_for_random_snapshots(seed):
    rng = random.Random(seed)
    for _ in range(20):
        snap = stickyflow.parse_snapshot(random_streams(rng.randrange(2**31)))
        arl = snap.config.acceptable_recovery_lag
        for tid, ranked in rank(snap).items():
            task = snap.task(tid)
            keys = [(x.rank, x.process_id) for x in ranked]
            assert keys == sorted(keys) and len(ranked) == len(snap.clients)
            caught = set(snap.index.caught_up_clients(snap.index.task_pos[tid]).tolist())
            for x in ranked:
                client = snap.client(x.process_id)
                assert x.lag == client.lag(task) <= task.end_offset_sum
                assert (x.rank == 0) == (x.lag <= arl)
                # one rule: the rank, the model and the index (the check's and the assignors' view) agree
                assert (x.rank == 0) == snap.is_caught_up(client, task) == \
                    (snap.index.client_pos[x.process_id] in caught)


def test_should_rebalance_reports_movements_to_caught_up_destinations():
    snap = parse_streams(DOC)
    check = should_rebalance(snap)
    # the balanced target deals 0_0 -> a, 0_1 -> b; b runs both now
    assert check.proposed == {"0_0": "a", "0_1": "b"}
    assert [(m.task, m.source, m.destination) for m in check.movements] == [("0_0", "b", "a")]
    assert not check and check.available == ()  # a lags 20,000 > 10,000: not top-ranked
    caught = dict(DOC, clients=[dict(c) for c in DOC["clients"]])
    caught["clients"][3]["lags"] = {"0_0": 5_000}
    check = should_rebalance(parse_streams(caught))
    assert check and [(m.task, m.destination) for m in check.available] == [("0_0", "a")]


def test_should_rebalance_takes_a_current_assignment():
    snap = parse_streams(DOC)
    here = {"a": {"active": ["0_0"]}, "b": {"active": ["0_1", "1_0"]}, "c": {}, "d": {}}
    check = should_rebalance(snap, here)
    assert check.movements == () and not check


def test_no_caught_up_client_means_the_least_lagging_are_top_ranked():
    doc = dict(DOC, clients=[{"process_id": p, "previous_active": [], "previous_standby": [],
                              "lags": {"0_0": lag}} for p, lag in (("a", 50_000), ("b", 50_000), ("c", 70_000))])
    check = should_rebalance(parse_streams(doc), {"c": {"active": ["0_0", "0_1"]}})
    # 0_0: a and b lag least; 0_1: nobody has state, so every client ties at the top
    assert [(m.task, m.destination) for m in check.available] == [("0_0", "a"), ("0_1", "b")]
