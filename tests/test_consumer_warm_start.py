"""The consumer warm start (keep every valid owner, deal out the orphans, prove it) is held against the flow.

With mixed subscriptions and no rack costs, ``optimal`` first tries the previous assignment with only the
orphans dealt out, and answers with it when a reachability search proves its loads square-sum minimal (its
moves are the fewest possible). Here the same snapshots are solved with and without it and must agree on
everything the spec ranks, and on groups that lose members the warm start must actually answer.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import stickyflow
from stickyflow.formulations.consumer import model as consumer_model, opt as consumer_opt, warm_start as consumer_warm
from stickyflow.registry import SolveOptions
from checker import check_result
from strategies import random_consumer_doc, with_and_without


def _solve_both(doc, monkeypatch):
    return with_and_without(doc, monkeypatch, "_WARM_START")


@pytest.fixture(params=["greedy deal first", "water level, then the flow", "least-squares flow only"])
def deal(request, monkeypatch):
    """Every way the warm start deals orphans: greedily, proven or else on (large groups); by the water level's
    two max flows, proven or else by the least-squares flow (small ones); and by that flow alone. Small test
    groups take the first only when the threshold is lowered."""
    monkeypatch.setattr(consumer_warm, "_GREEDY_ARCS_PER_TOPIC", 0 if request.param == "greedy deal first" else 10**9)
    monkeypatch.setattr(consumer_warm, "_LEVEL_DEAL", request.param != "least-squares flow only")
    return request.param


@pytest.mark.parametrize("seed", range(200))
def test_warm_start_equals_the_flow_on_random_groups(seed, monkeypatch, deal):
    doc = random_consumer_doc(seed, equal_subscriptions=False, max_members=8, max_partitions=14)
    warm, flow = _solve_both(doc, monkeypatch)
    assert warm.error == flow.error == "NONE"
    assert warm.solver.objective == flow.solver.objective
    assert warm.metrics["sum_squared_loads"] == flow.metrics["sum_squared_loads"]


def _shrinking_group(seed: int) -> dict:
    """A mixed group balanced by the optimizer, then a tenth of its members (at least one) gone."""
    rng = random.Random(seed)
    topics = {f"t{j}": rng.randint(1, 40) for j in range(rng.randint(2, 8))}
    names = sorted(topics)
    members = []
    for i in range(rng.randint(3, 30)):
        sub = [t for t in names if rng.random() < 0.5] or [rng.choice(names)]
        members.append({"id": f"m{i:02d}", "subscription": sub})
    for t in names:  # every topic read by someone
        if not any(t in m["subscription"] for m in members):
            rng.choice(members)["subscription"].append(t)
    doc = {"format": "stickyflow.snapshot/1", "kind": "consumer",
           "topics": {t: {"partitions": n} for t, n in topics.items()}, "members": members}
    before = stickyflow.assign(doc)
    gone = set(rng.sample(range(len(members)), max(1, len(members) // 10)))
    after = []
    for i, m in enumerate(members):
        if i in gone:
            continue
        owned = {t: list(ps) for t, ps in before.assignment[m["id"]].items() if len(ps)}
        after.append({**m, "owned": owned, "generation": 1})
    return {**doc, "members": after}


def test_warm_start_answers_when_members_leave(monkeypatch, deal):
    """Groups that only lose members: wherever the optimum moves nothing beyond the orphans (cost 0), the
    warm start finds and proves it; everywhere it answers as the flow does."""
    used = 0
    for seed in range(120):
        doc = _shrinking_group(seed)
        snap = stickyflow.parse_snapshot(doc)
        d = consumer_opt.solve_consumer(snap, SolveOptions())
        warm, flow = _solve_both(doc, monkeypatch)
        check_result(snap, warm)
        assert warm.solver.status == "optimal"
        assert (warm.solver.objective, warm.metrics["sum_squared_loads"]) == \
            (flow.solver.objective, flow.metrics["sum_squared_loads"]), seed
        if flow.solver.objective == 0:
            assert d.extra["shortcut"] == "warm-start", seed
            used += 1
        else:
            assert d.extra["shortcut"] is None, seed  # a proof would have been a wrong one
    assert used >= 40, used


def test_warm_start_leaves_what_it_cannot_prove():
    """A member joins: keeping everything leaves it empty while others hold two more, so no proof."""
    doc = {"format": "stickyflow.snapshot/1", "kind": "consumer",
           "topics": {"a": {"partitions": 4}, "b": {"partitions": 2}},
           "members": [{"id": "x", "subscription": ["a", "b"], "generation": 1, "owned": {"a": [0, 1, 2, 3]}},
                       {"id": "y", "subscription": ["b"], "generation": 1, "owned": {"b": [0, 1]}},
                       {"id": "z", "subscription": ["a"]}]}
    snap = stickyflow.parse_snapshot(doc)
    d = consumer_model.prepare(snap)
    assert consumer_warm.try_warm_start(d, consumer_model.class_graph(d)) is None
    r = stickyflow.assign(snap)
    assert r.metrics["sum_squared_loads"] == 4 + 4 + 4 and r.metrics["moves"] == 2


def test_square_sum_proof_sees_chains():
    """x (3) holds a; y (2) reads a and holds b; z (1) reads b: x -> y -> z frees x at no change to y."""
    sub = np.array([[True, False], [True, True], [False, True]])
    holds = np.array([[True, False], [False, True], [False, False]])
    ok = np.ones(3, dtype=bool)
    assert not consumer_warm._least_square_sum(np.array([3, 2, 1]), ok, holds, sub)
    holds_no_b = np.array([[True, False], [True, False], [False, False]])  # y holds no b: no chain reaches z
    assert consumer_warm._least_square_sum(np.array([3, 2, 1]), ok, holds_no_b, sub)


def test_greedy_deal_takes_back_a_topic_share_until_the_proof_holds():
    """Topic a is read by x and y, topic b by y and z, topic c by z alone (z holds 10 of c): dealt in one
    pass, a lifts x and y to 1 and b then lands on y (loads 1, 3, 10), which the proof refuses (x could take
    one of y's). Dealing a again against b's share gives x and y two each, which it accepts."""
    load = np.array([0, 0, 10])
    ok = np.ones(3, dtype=bool)
    sub = np.array([[True, False, False], [True, True, False], [False, True, True]])
    orphans = np.array([2, 2, 0])
    holds = np.zeros((3, 3), dtype=bool)
    holds[2, 2] = True
    seen = []

    def accept(dealt):
        after = load.copy()
        np.add.at(after, dealt[1], dealt[2])
        holding = holds.copy()
        holding[dealt[1], dealt[0]] = True
        seen.append(after.tolist())
        return consumer_warm._least_square_sum(after, ok, holding, sub)

    dealt = consumer_warm._deal_greedy(load, ok, sub, orphans, accept)
    assert seen == [[1, 3, 10], [2, 2, 10]]
    assert [a.tolist() for a in dealt] == [[0, 1], [0, 1], [2, 2]]
    assert consumer_warm._deal_greedy(load, ok, sub, orphans, accept, sweeps=1) is None


def _fill_by_levels(load, readers, k):
    """The level filling written out unit by unit (the reference for consumer_warm._fill_lowest): each unit
    to the reader with the least load, ties to the least load before the deal, then the lower member index."""
    after = load.copy()
    for _ in range(k):
        after[min(readers.tolist(), key=lambda r: (after[r], load[r], r))] += 1
    give = after[readers] - load[readers]
    return readers[give > 0], give[give > 0]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=12), st.integers(0, 2**31 - 1), st.integers(1, 30))
def test_fill_lowest_deals_unit_by_unit_to_the_least_loaded(loads, pick, k):
    """_fill_lowest (its shortcut when the lowest readers are enough, and its level arithmetic otherwise)
    deals exactly as one unit at a time to the least-loaded reader would (ties as in the reference)."""
    load = np.array(loads, dtype=np.int64)
    mask = np.array([(pick >> i) & 1 for i in range(len(loads))], dtype=bool)
    mask[pick % len(loads)] = True
    readers = np.flatnonzero(mask)
    got = consumer_warm._fill_lowest(load, readers, k)
    want = _fill_by_levels(load, readers, k)
    assert dict(zip(got[0].tolist(), got[1].tolist())) == dict(zip(want[0].tolist(), want[1].tolist()))


def _water_level_loads(load, ok, sub, orphans):
    """The loads the water level gives: every orphan, unit by unit, to the least-loaded reader of any orphaned
    topic (:func:`_fill_by_levels`), as if any reader could take any orphan. No deal has a smaller sum of
    squares."""
    readers = np.flatnonzero((sub[:, orphans > 0] & ok[:, None]).any(axis=1))
    after = load.copy()
    if len(readers):
        members, give = _fill_by_levels(load, readers, int(orphans.sum()))
        after[members] += give
    return after


def _least_square_deal(load, ok, sub, orphans):
    """The least sum of squares any deal of ``orphans`` (per topic, to ok readers) reaches, by brute force
    over every way to split each topic's orphans among its readers; None when some topic has no reader."""
    from itertools import product

    def splits(n, k):
        if k == 1:
            yield (n,)
            return
        for first in range(n + 1):
            for rest in splits(n - first, k - 1):
                yield (first,) + rest

    per_topic = []
    for j in range(sub.shape[1]):
        readers = np.flatnonzero(sub[:, j] & ok)
        if orphans[j] and not len(readers):
            return None
        per_topic.append([(readers, s) for s in splits(int(orphans[j]), len(readers))] if orphans[j] else [(None, None)])
    best = None
    for choice in product(*per_topic):
        after = load.copy()
        for readers, split in choice:
            if readers is not None:
                after[readers] += split
        value = int((after[ok] ** 2).sum())
        best = value if best is None else min(best, value)
    return best


@settings(max_examples=300, deadline=None)
@given(st.integers(2, 4), st.integers(1, 3), st.data())
def test_water_level_deal_is_a_least_square_deal_or_nothing(n_members, n_topics, data):
    """_deal_level's two max flows: when they answer, every orphan goes once to a reader of its topic and the
    loads reach the least sum of squares any deal reaches (brute force); when the water level is reachable by
    some deal (that least sum equals the level's own), they answer."""
    load = np.array(data.draw(st.lists(st.integers(0, 4), min_size=n_members, max_size=n_members)), dtype=np.int64)
    sub = np.array(data.draw(st.lists(st.lists(st.booleans(), min_size=n_topics, max_size=n_topics),
                                      min_size=n_members, max_size=n_members)), dtype=bool)
    orphans = np.array(data.draw(st.lists(st.integers(0, 4), min_size=n_topics, max_size=n_topics)), dtype=np.int64)
    ok = np.array(data.draw(st.lists(st.booleans(), min_size=n_members, max_size=n_members)), dtype=bool)
    best = _least_square_deal(load, ok, sub, orphans)
    dealt = consumer_warm._deal_level(load, ok, sub, orphans)
    level = _water_level_loads(load, ok, sub, orphans)  # no deal does better
    ideal = int((level[ok] ** 2).sum())
    if dealt is not None:
        tj, m, n = dealt
        assert (n > 0).all() and sub[m, tj].all() and ok[m].all()
        assert np.array_equal(np.bincount(tj, weights=n, minlength=len(orphans)).astype(int), orphans)
        after = load + np.bincount(m, weights=n, minlength=len(load)).astype(np.int64)
        assert int((after[ok] ** 2).sum()) == best == ideal
        assert list(zip(tj.tolist(), m.tolist())) == sorted(set(zip(tj.tolist(), m.tolist())))  # by topic, then member
    elif best is not None and orphans.sum():
        assert best > ideal  # the level is out of reach: the least-squares flow decides


def test_water_level_deal_answers_wherever_the_level_is_reachable(seed):
    """On 4,000 random deals of up to 8 readers and 5 topics, held against the least-squares flow of
    _deal_orphans: wherever that flow's loads reach the water level, the two max flows answer too (the second
    one must reroute the first one's units through its residual graph to do so in about 3% of them), with the
    same sum of squares; where it does not, they answer nothing."""
    rng = np.random.default_rng(seed)
    reachable = 0
    for _ in range(4000):
        M, T = int(rng.integers(3, 9)), int(rng.integers(2, 6))
        load = rng.integers(0, 6, M)
        sub = rng.random((M, T)) < 0.5
        ok = rng.random(M) < 0.9
        ok[0] = True
        orphans = rng.integers(0, 8, T)
        flow = consumer_warm._deal_orphans(load, ok, sub, orphans)
        level = consumer_warm._deal_level(load, ok, sub, orphans)
        if flow is None:
            assert level is None
            continue
        after = load + np.bincount(flow[1], weights=flow[2], minlength=M).astype(np.int64)
        ideal = _water_level_loads(load, ok, sub, orphans)
        if int((after[ok] ** 2).sum()) == int((ideal[ok] ** 2).sum()):
            reachable += 1
            assert level is not None
            got = load + np.bincount(level[1], weights=level[2], minlength=M).astype(np.int64)
            assert int((got[ok] ** 2).sum()) == int((after[ok] ** 2).sum())
            assert np.array_equal(np.bincount(level[0], weights=level[2], minlength=T).astype(np.int64), orphans)
        else:
            assert level is None
    assert reachable >= 1000, reachable


@pytest.mark.parametrize("seed", range(300))
def test_class_reads_from_the_subscription_matrix_equal_the_pairs(seed, monkeypatch):
    """The class x topic matrix is copied from the subscription matrix's rows where that is small (one row per
    subscription; unread topics' columns dropped) and else set pair by pair: both give the same matrix, with
    topics nobody reads, subscriptions naming deleted topics only, and members sharing a class."""
    rng = random.Random(seed)
    doc = random_consumer_doc(rng, equal_subscriptions=False, max_topics=6, max_members=8)
    for m in doc["members"]:  # some read a topic that does not exist, some nothing that exists
        if rng.random() < 0.2:
            m["subscription"] = m["subscription"] + ["gone"]
        if rng.random() < 0.1:
            m["subscription"] = ["gone"]
    if rng.random() < 0.5:
        doc["topics"]["unread"] = {"partitions": 2}
    snap = stickyflow.parse_snapshot(doc)
    d = consumer_model.prepare(snap)
    if not d.topics:
        return
    from_matrix = consumer_model.class_reads(d).copy()
    assert "matrix" in snap._memo
    d.class_reads = None
    monkeypatch.setattr(consumer_model, "_DENSE_CLASSES", 0)  # as for a group too large for the matrix
    by_pairs = consumer_model.class_reads(d)
    assert from_matrix.shape == (d.n_classes, len(d.topics))
    assert (from_matrix == by_pairs).all()
    assert from_matrix.any(axis=1).all()  # every class reads some assignable topic
