"""The seeded rate generators and ``with_rates`` (issue 35): deterministic, the promised shapes, and load
snapshots that the reader takes and every consumer assignor solves."""

from __future__ import annotations

import numpy as np
import pytest

import stickyflow
from stickyflow.datasets import consumer_snapshot, draw_rates, drift_rates, topic_rates, with_rates
from stickyflow.datasets.rates import SHAPES
from tests.checker import check_result


@pytest.mark.parametrize("shape", ["uniform", "lognormal", "zipf"])
def test_each_shape_is_seeded_non_negative_and_has_the_mean(shape, seed):
    a = draw_rates(shape, 20_000, seed=seed, mean=3.0)
    assert np.array_equal(a, draw_rates(shape, 20_000, seed=seed, mean=3.0))
    assert not np.array_equal(a, draw_rates(shape, 20_000, seed=seed + 1, mean=3.0))
    assert a.dtype == np.float64 and a.shape == (20_000,) and (a >= 0).all()
    assert abs(a.mean() - 3.0) < 0.15


def test_the_shapes_are_the_ones_promised(seed):
    flat = draw_rates("uniform", 1000, seed=seed, spread=0.2)
    assert flat.min() >= 0.8 and flat.max() <= 1.2
    skew = draw_rates("lognormal", 10_000, seed=seed, sigma=1.0)
    assert skew.max() > 10 * np.median(skew)  # a long tail
    hot = np.sort(draw_rates("zipf", 1000, seed=seed, exponent=1.1))[::-1]
    assert hot[0] / hot[1] == pytest.approx(2 ** 1.1) and hot[:10].sum() > 0.3 * hot.sum()  # a few hot partitions
    by_topic = topic_rates("hot_topic", {"a": 50, "b": 50, "c": 50}, seed=seed, hot="b", factor=10, spread=0.1)
    assert by_topic["b"].min() > 5 * max(by_topic["a"].max(), by_topic["c"].max())


def test_drift_keeps_the_mean_and_moves_hot_spots(seed):
    steady = draw_rates("uniform", 5000, seed=seed)
    after = drift_rates(steady, seed=seed, sigma=0.2)
    assert abs(after.sum() / steady.sum() - 1) < 0.03 and not np.array_equal(after, steady)
    before = draw_rates("zipf", 5000, seed=seed)
    moved = drift_rates(before, seed=seed, sigma=0.0, reshuffle=1.0)
    assert np.array_equal(np.sort(moved), np.sort(before)) and np.argmax(moved) != np.argmax(before)
    assert np.array_equal(drift_rates(before, seed=seed, sigma=0.0), before)


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError, match="shape"):
        draw_rates("pareto", 3)
    with pytest.raises(ValueError, match="hot"):
        topic_rates("hot_topic", {"a": 1}, hot="b")
    with pytest.raises(ValueError, match="reshuffle"):
        drift_rates(np.ones(3), reshuffle=2)
    with pytest.raises(ValueError, match="no rates for topic"):
        with_rates(consumer_snapshot("fresh", partitions=4, members=2, topics=2), {"topic-00": [1, 1]})


@pytest.mark.parametrize("shape", SHAPES)
def test_with_rates_makes_a_load_snapshot_of_a_dict_or_an_object(shape, seed):
    doc = consumer_snapshot("scale_out", partitions=60, members=5, topics=3, seed=seed)
    made = with_rates(doc, shape, seed=seed, capacity=40, load_slack=0.1)
    assert "rates" not in doc["topics"]["topic-00"] and "balance" not in doc.get("config", {})  # the input untouched
    snap = stickyflow.parse_snapshot(made)
    assert (snap.config.balance, snap.config.capacity, snap.config.load_slack) == ("load", 40.0, 0.1)
    same = with_rates(stickyflow.parse_snapshot(doc), shape, seed=seed, capacity=40, load_slack=0.1)
    assert same.topics == snap.topics and same.config == snap.config and same.members == snap.members
    for name in stickyflow.available_assignors("consumer"):
        result = stickyflow.assign(snap, name)
        check_result(snap, result)
        assert result.metrics["peak_utilization"] >= result.metrics["peak_bound"] * (1 - 1e-9)
