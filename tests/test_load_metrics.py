"""The load metrics every consumer result carries (issue 35), computed by the checker every result passes:
hand-worked groups, both paths of the checker (owner arrays and plain mappings), what they are without rates,
and ``peak_bound`` held against the least possible peak, found by exhaustive search on small random groups.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

import stickyflow
from stickyflow.check.consumer import inspect_consumer
from stickyflow.check.load import LOAD_METRICS, cheap_peak_bound, loads_known
from strategies import random_consumer_doc
from tests.checker import check_result


def _snap(topics: dict, members: list, **config) -> stickyflow.ConsumerSnapshot:
    return stickyflow.parse_snapshot({"format": "stickyflow.snapshot/1", "kind": "consumer", "topics": topics,
                                      "members": members, "config": config})


def _given(snap, assignment):
    """``assignment`` through the front door, which checks and measures it (as owner arrays)."""
    stickyflow.register_assignor("test-given", lambda snapshot, options: stickyflow.Decision(
        assignment=assignment, method="test", status="heuristic"), kinds=("consumer",))
    try:
        return stickyflow.assign(snap, "test-given")
    finally:
        stickyflow.unregister_assignor("test-given")


RACKED = {"t": {"partitions": 4, "rates": [4, 3, 2, 1], "racks": [["a"], ["b"], ["a"], ["b"]]}}
PAIR = [{"id": "a", "subscription": ["t"], "rack": "a", "generation": 1, "owned": {"t": [0, 2]}},
        {"id": "b", "subscription": ["t"], "rack": "b", "generation": 1, "owned": {"t": [1, 3]}}]


@pytest.mark.parametrize("capacities, expected", [
    ((None, None), {"peak_utilization": 7.0, "peak_bound": 5.0, "overload": 0.0, "overloaded": 0}),
    ((5, 10), {"peak_utilization": 1.4, "peak_bound": 10 / 15, "overload": 2.0, "overloaded": 1}),
])
def test_a_hand_worked_group_on_both_paths_of_the_checker(capacities, expected):
    members = [dict(m) for m in PAIR]
    for m, c in zip(members, capacities):
        if c is not None:
            m["capacity"] = c
    snap = _snap(RACKED, members, balance="load")
    answer = {"a": {"t": [0, 1]}, "b": {"t": [2, 3]}}  # t-1 and t-2 move, and both are read across racks
    expected = dict(expected, moved_load=5.0, cross_rack_load=5.0)
    _, metrics = inspect_consumer(snap, answer)  # the plain-mapping path
    assert {k: metrics[k] for k in LOAD_METRICS} == pytest.approx(expected)
    result = _given(snap, answer)  # the front door reads it as owner arrays
    assert {k: result.metrics[k] for k in LOAD_METRICS} == pytest.approx(expected)
    assert result.to_json()["metrics"]["overloaded"] == expected["overloaded"]


def test_cross_rack_load_is_null_unless_rack_aware():
    snap = _snap(RACKED, PAIR, balance="load", rack_aware=False)
    result = stickyflow.assign(snap, "sticky")
    assert result.metrics["cross_rack"] is None and result.metrics["cross_rack_load"] is None
    assert result.metrics["peak_utilization"] == 6.0  # sticky keeps both owners: 4 + 2 and 3 + 1


def test_the_shared_example_by_hand():
    """consumer-load-hot-partition.json: everyone keeps what they own under the count-based assignors, and c1
    (120 + 5 on clicks, 10 + 10 on orders) runs at 145 of its 100; the hot partition alone needs 1.2."""
    from tests.test_load_format import EXAMPLE

    snap = stickyflow.load_snapshot(EXAMPLE)
    for name in ("sticky", "uniform"):
        result = stickyflow.assign(snap, name)
        check_result(snap, result)
        assert result.metrics["moves"] == 0
        assert {k: result.metrics[k] for k in LOAD_METRICS} == pytest.approx(
            {"peak_utilization": 1.45, "peak_bound": 1.2, "moved_load": 0.0, "cross_rack_load": None,
             "overload": 45.0, "overloaded": 1})


def test_without_rates_the_load_metrics_are_null():
    topics = {"t": {"partitions": 4}, "u": {"partitions": 2, "rates": [1, 1]}}
    members = [{"id": "a", "subscription": ["t", "u"]}, {"id": "b", "subscription": ["u"]}]
    for snap in (_snap({"t": topics["t"]}, members), _snap(topics, members)):  # none at all; not on a read topic
        assert not loads_known(snap) and cheap_peak_bound(snap) is None
        for name in ("optimal", "sticky"):
            metrics = stickyflow.assign(snap, name).to_json()["metrics"]
            assert {k: metrics[k] for k in LOAD_METRICS} == dict.fromkeys(LOAD_METRICS)


def test_with_rates_and_balance_count_the_metrics_show_the_peak_reached():
    topics = {"t": {"partitions": 4, "rates": [8, 1, 1, 1]}, "idle": {"partitions": 3}}  # nobody reads idle
    members = [{"id": "a", "subscription": ["t"]}, {"id": "b", "subscription": ["t"]},
               {"id": "c", "subscription": ["nothing"]}]  # c reads no existing topic: not in the peak
    snap = _snap(topics, members)
    result = stickyflow.assign(snap, "range")  # a: t-0, t-1; b: t-2, t-3
    assert result.assignment["a"]["t"] == (0, 1)
    assert result.metrics["peak_utilization"] == 9.0 and result.metrics["peak_bound"] == 8.0
    assert result.metrics["overload"] == 0.0 and result.metrics["overloaded"] == 0


def test_cooperative_results_measure_the_target():
    members = [{"id": "a", "subscription": ["t"], "generation": 1, "owned": {"t": [0, 1, 2, 3]}},
               {"id": "b", "subscription": ["t"]}]
    snap = stickyflow.parse_snapshot({"format": "stickyflow.snapshot/1", "kind": "consumer",
                                      "protocol": "cooperative", "topics": {"t": {"partitions": 4, "rates": [4, 3, 2, 1]}},
                                      "members": members})
    result = stickyflow.assign(snap, "sticky")
    check_result(snap, result)
    moved = [p for p in result.target["b"]["t"]]
    assert result.assignment["b"] == {} or not result.assignment["b"].get("t")  # withheld this round
    assert result.metrics["moved_load"] == sum([4, 3, 2, 1][p] for p in moved) > 0


@pytest.mark.parametrize("topics, members, bound", [
    # the pair bound: three partitions of 60 on two members of 100: two share one
    ({"t": {"partitions": 3, "rates": [60, 60, 60]}}, [("a", ["t"], 100), ("b", ["t"], 100)], 1.2),
    # a class read by one member only: it carries the whole topic, whatever the others could take
    ({"x": {"partitions": 3, "rates": [2, 2, 2]}, "y": {"partitions": 1, "rates": [1]}},
     [("a", ["x", "y"], 1), ("b", ["y"], 1)], 6.0),
    # classes within a class: x (a only), y (b only) and z (a or b) all land on a and b, not on c
    ({"x": {"partitions": 1, "rates": [3]}, "y": {"partitions": 1, "rates": [3]}, "z": {"partitions": 1, "rates": [2]},
      "w": {"partitions": 1, "rates": [0]}},
     [("a", ["x", "z"], 1), ("b", ["y", "z"], 1), ("c", ["w"], 1)], 4.0),
    # a partition over the largest capacity among its readers; members reading nothing count for nothing
    ({"t": {"partitions": 2, "rates": [9, 1]}}, [("a", ["t"], 3), ("b", ["t"], 2), ("c", ["gone"], 50)], 3.0),
])
def test_each_part_of_the_cheap_bound(topics, members, bound):
    snap = _snap(topics, [{"id": i, "subscription": s, "capacity": c} for i, s, c in members], balance="load")
    assert cheap_peak_bound(snap) == pytest.approx(bound)


def least_peak(snap) -> float:
    """The least possible peak utilization, by exhaustive search (branch and bound, largest rates first)."""
    from stickyflow.check.load import active_members
    from stickyflow.load import load_model

    model = load_model(snap)
    subs = snap.subscribers()
    items = []  # (rate, readers) of every read partition
    for j, (t, topic) in enumerate(snap.topics.items()):
        for p in range(topic.partitions):
            if subs[t]:
                items.append((float(model.rates[model.offsets[j] + p]), subs[t]))
    items.sort(key=lambda x: -x[0])
    cap = model.capacity
    active = active_members(snap)
    load = np.zeros(len(cap))
    best = [np.inf]

    def go(k: int, peak: float) -> None:
        if peak >= best[0]:
            return
        if k == len(items):
            best[0] = peak
            return
        rate, readers = items[k]
        for i in readers:
            load[i] += rate
            go(k + 1, max(peak, load[i] / cap[i]))
            load[i] -= rate

    go(0, 0.0)
    return best[0] if items else (0.0 if not active.any() else 0.0)


def test_the_cheap_bound_never_exceeds_the_least_possible_peak(seed):
    rng = random.Random(seed)
    tight = 0
    for _ in range(150):
        doc = random_consumer_doc(rng, loads=True, max_topics=3, max_partitions=4, min_members=2, max_members=5,
                                 claims=False)
        snap = stickyflow.parse_snapshot(doc)
        bound = cheap_peak_bound(snap)
        least = least_peak(snap)
        assert bound <= least * (1 + 1e-12) + 1e-12, (doc, bound, least)
        tight += bound >= least * (1 - 1e-12)
        # and every built-in count-based answer reaches at least the least peak
        for name in ("sticky", "range"):
            result = stickyflow.assign(snap, name)
            assert result.metrics["peak_utilization"] >= least * (1 - 1e-12)
    assert tight >= 30  # the bound is often exact on small groups (a weak bound would rarely be)


def test_a_bound_an_assignor_proves_is_kept_when_higher_and_refused_above_the_peak():
    """``Decision.extra["peak_bound"]``: how an optimizer hands over the bound it proved."""
    snap = _snap(RACKED, PAIR, balance="load")  # the cheap bound is 5; sticky keeps 4 + 2 and 3 + 1: peak 6
    answer = stickyflow.assign(snap, "sticky").to_json()["assignment"]

    def claiming(bound, optimizing=False):
        stickyflow.register_assignor("test-claims", lambda s, o: stickyflow.Decision(
            assignment=answer, method="test", status="feasible", extra={"peak_bound": bound}),
            kinds=("consumer",), optimizing=optimizing)
        try:
            return stickyflow.assign(snap, "test-claims")
        finally:
            stickyflow.unregister_assignor("test-claims")

    assert claiming(5.5).metrics["peak_bound"] == 5.5
    assert claiming(4.0).metrics["peak_bound"] == 5.0
    with pytest.raises(stickyflow.InvalidAssignmentError, match="PEAK_BOUND_ABOVE_PEAK"):
        claiming(6.5)
    fallen = claiming(float("nan"), optimizing=True)
    assert fallen.solver.status == "fallback" and "peak_bound" in fallen.solver.reason
