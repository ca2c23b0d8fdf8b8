"""The load baselines ``lpt`` and ``lag-based`` (issue 35), and the spec's rule that the count-based assignors
ignore rates.

Each baseline is held to a plain reference written from its description (one partition at a time, a min over
the subscribers), on seeded random groups with mixed subscriptions and capacities, and to hand-worked
examples; every answer passes the checker. Graham's bound for ``lpt`` is checked against the least possible
peak found by exhaustive search.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings

import stickyflow
from stickyflow.check.load import loads_known
from stickyflow.datasets import consumer_snapshot, with_rates
from stickyflow.greedy import by_load as load_greedy
from stickyflow.load import load_model
from strategies import consumer_docs, random_consumer_doc
from tests.checker import check_result
from tests.test_load_metrics import least_peak

COUNT_BASED = ("sticky", "range", "roundrobin", "uniform")


def _utf16(s: str) -> bytes:
    return s.encode("utf-16-be")


def _reference(snap, method: str) -> dict[tuple[str, int], str]:
    """Either baseline, one partition at a time as its description says: (topic, partition) -> member id."""
    model = load_model(snap)
    unit = not loads_known(snap)
    ids = [m.id for m in snap.members]
    cap = model.capacity
    subs = snap.subscribers()
    out = {}
    items = []
    for j, (t, topic) in enumerate(snap.topics.items()):
        for p in range(topic.partitions):
            if subs[t]:
                items.append((1.0 if unit else float(model.rates[model.offsets[j] + p]), t, p))
    if method == "lpt":
        load = [0.0] * len(ids)
        for r, t, p in sorted(items, key=lambda x: (-x[0], _utf16(x[1]), x[2])):
            i = min(subs[t], key=lambda i: ((load[i] + r) / cap[i], _utf16(ids[i])))
            load[i] += r
            out[(t, p)] = ids[i]
        return out
    equal = {t: len({cap[i] for i in subs[t]}) == 1 for t in snap.topics}
    count: dict[tuple[str, int], int] = {}
    load = {}
    for r, t, p in sorted(items, key=lambda x: (x[1], -x[0], x[2])):  # topic by topic (each on its own)
        def rank(i):
            lag = load.get((t, i), 0.0)
            return count.get((t, i), 0), lag if equal[t] else lag / cap[i], _utf16(ids[i])
        i = min(subs[t], key=rank)
        count[(t, i)] = count.get((t, i), 0) + 1
        load[(t, i)] = load.get((t, i), 0.0) + r
        out[(t, p)] = ids[i]
    return out


def _flat(result) -> dict[tuple[str, int], str]:
    return {(t, p): m for m, topics in result.target.items() for t, parts in topics.items() for p in parts}


@pytest.mark.parametrize("method", ["lpt", "lag-based"])
def test_each_baseline_is_its_reference_on_random_groups(method, seed, monkeypatch):
    rng = random.Random(seed)
    for k in range(120):
        doc = random_consumer_doc(rng, loads=k % 4 != 0, max_topics=4, max_partitions=9, max_members=7)
        snap = stickyflow.parse_snapshot(doc)
        result = stickyflow.assign(snap, method)
        check_result(snap, result)
        assert _flat(result) == _reference(snap, method), doc
        if method == "lpt":  # the run-at-once path and the heap path of identical members agree too
            monkeypatch.setattr(load_greedy, "_HEAP_MEMBERS", 0)
            assert _flat(stickyflow.assign(snap, method)) == _flat(result), doc
            monkeypatch.undo()


def test_lpt_runs_at_once_on_many_members_as_one_at_a_time(seed, monkeypatch):
    """Many identical members, skewed rates with ties and zeros: the runs equal the heap, partition by partition."""
    rng = np.random.default_rng(seed)
    for members, partitions in ((40, 400), (100, 3000), (64, 64)):
        rates = np.round(rng.lognormal(0, 1.5, partitions), 1)
        rates[rng.random(partitions) < 0.1] = 0.0
        one = np.asarray(load_greedy._lpt_identical(rates, members))
        monkeypatch.setattr(load_greedy, "_HEAP_MEMBERS", 0)
        assert np.array_equal(load_greedy._lpt_identical(rates, members), one)
        monkeypatch.undo()


def test_lpt_by_hand():
    """Rates 7, 5, 4, 3, 3, 2 on members c, a, b: a takes 7, b 5, c 4; the first 3 (t-0) goes to c (4), the
    second (t-4) to b (5); the 2 finds a and c both at 7 and goes to a, the smaller id. Peak 9: the least
    possible here (below 9, the 7 would be alone and the other 17 would not fit in two members), over the
    cheap bound 8 (24 / 3)."""
    snap = stickyflow.parse_snapshot({
        "format": "stickyflow.snapshot/1", "kind": "consumer",
        "topics": {"t": {"partitions": 6, "rates": [3, 7, 2, 5, 3, 4]}},
        "members": [{"id": m, "subscription": ["t"]} for m in ("c", "a", "b")], "config": {"balance": "load"}})
    result = stickyflow.assign(snap, "lpt")
    assert result.to_json()["assignment"] == {"c": {"t": [0, 5]}, "a": {"t": [1, 2]}, "b": {"t": [3, 4]}}
    assert result.metrics["peak_utilization"] == 9.0 and result.metrics["peak_bound"] == 8.0


def test_lpt_divides_by_capacity_and_lag_based_counts_first():
    """Capacities 3 and 1: lpt gives the big member three of the four equal partitions (1 / 1 each);
    lag-based deals two and two, as grantneale's counts come first, and the small member runs at 2."""
    snap = stickyflow.parse_snapshot({
        "format": "stickyflow.snapshot/1", "kind": "consumer", "topics": {"t": {"partitions": 4, "rates": [1] * 4}},
        "members": [{"id": "big", "subscription": ["t"], "capacity": 3}, {"id": "small", "subscription": ["t"],
                                                                          "capacity": 1}],
        "config": {"balance": "load"}})
    lpt = stickyflow.assign(snap, "lpt")
    assert len(lpt.assignment["big"]["t"]) == 3 and lpt.metrics["peak_utilization"] == 1.0
    lag = stickyflow.assign(snap, "lag-based")
    assert len(lag.assignment["big"]["t"]) == 2 and lag.metrics["peak_utilization"] == 2.0
    assert lag.metrics["overload"] == 1.0 and lag.metrics["overloaded"] == 1


def test_lpt_meets_grahams_bound(seed):
    """On identical members LPT's peak is at most 4/3 - 1/(3m) of the least possible (Graham, 1969)."""
    rng = random.Random(seed)
    for _ in range(40):
        m = rng.randint(2, 4)
        n = rng.randint(m + 1, 9)
        doc = {"format": "stickyflow.snapshot/1", "kind": "consumer",
               "topics": {"t": {"partitions": n, "rates": [rng.randint(1, 30) for _ in range(n)]}},
               "members": [{"id": f"m{i}", "subscription": ["t"]} for i in range(m)], "config": {"balance": "load"}}
        snap = stickyflow.parse_snapshot(doc)
        peak = stickyflow.assign(snap, "lpt").metrics["peak_utilization"]
        assert peak <= (4 / 3 - 1 / (3 * m)) * least_peak(snap) + 1e-9, doc


def test_without_rates_every_rate_is_one():
    doc = consumer_snapshot("mixed", partitions=40, members=6, topics=4, seed=3)
    snap = stickyflow.parse_snapshot(doc)
    ones = stickyflow.parse_snapshot(with_rates(doc, {t: [1] * s["partitions"] for t, s in doc["topics"].items()}))
    for method in ("lpt", "lag-based"):
        plain, unit = stickyflow.assign(snap, method), stickyflow.assign(ones, method)
        assert plain.to_json()["assignment"] == unit.to_json()["assignment"]
        assert plain.metrics["peak_utilization"] is None and unit.metrics["peak_utilization"] is not None


@pytest.mark.parametrize("method", ["lpt", "lag-based"])
def test_the_answer_does_not_depend_on_the_members_order(method, seed):
    doc = with_rates(consumer_snapshot("mixed", partitions=60, members=7, topics=4, seed=seed % 1000),
                     "lognormal", seed=seed)
    shuffled = dict(doc, members=random.Random(seed).sample(doc["members"], len(doc["members"])))
    a, b = stickyflow.assign(doc, method), stickyflow.assign(shuffled, method)
    assert {m: dict(t) for m, t in a.assignment.items()} == {m: dict(t) for m, t in b.assignment.items()}


@settings(max_examples=40, deadline=None)
@given(consumer_docs(loads=True))
def test_every_answer_is_valid_on_generated_groups(doc):
    snap = stickyflow.parse_snapshot(doc)
    for method in ("lpt", "lag-based"):
        result = stickyflow.assign(snap, method)
        check_result(snap, result)
        assert result.metrics["peak_utilization"] >= result.metrics["peak_bound"] * (1 - 1e-12)


# --------------------------------------------------------------------------- the count-based assignors ignore rates

@pytest.mark.parametrize("balance", ["count", "load"])
def test_count_based_assignors_give_the_same_answer_with_and_without_rates(balance, seed):
    rng = random.Random(seed)
    for k in range(25):
        doc = random_consumer_doc(rng, max_topics=4, max_partitions=8, max_members=6)
        doc["config"] = {key: v for key, v in doc.get("config", {}).items()}
        loaded = with_rates(doc, ("lognormal", "zipf", "hot_topic", "uniform")[k % 4], seed=seed + k,
                            balance=balance, capacity=rng.choice((None, 3.5)))
        if k % 3 == 0:
            for i, m in enumerate(loaded["members"]):
                m["capacity"] = 1 + i % 3
        for name in COUNT_BASED:
            plain, weighed = stickyflow.assign(doc, name), stickyflow.assign(loaded, name)
            assert weighed.to_json()["assignment"] == plain.to_json()["assignment"], (name, doc)
            assert weighed.to_json()["revocations"] == plain.to_json()["revocations"], (name, doc)
            assert weighed.to_json().get("target") == plain.to_json().get("target"), (name, doc)
            for key in ("moves", "imbalance", "cross_rack"):
                assert weighed.metrics[key] == plain.metrics[key]


def test_count_based_assignors_ignore_rates_at_scale():
    doc = consumer_snapshot("scale_out", partitions=3000, members=40, topics=12, seed=5)
    loaded = with_rates(doc, "zipf", seed=5, capacity=100)
    for name in COUNT_BASED:
        assert stickyflow.assign(loaded, name).to_json()["assignment"] == \
            stickyflow.assign(doc, name).to_json()["assignment"], name
