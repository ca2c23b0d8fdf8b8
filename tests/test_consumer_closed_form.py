"""The equal-subscriptions closed form of the consumer optimum is held against the flow it short-cuts.

With every member reading the same topics and racks costing nothing, ``optimal`` answers in closed form
(quotas to the biggest previous owners). Here the same snapshots are solved both ways and must agree on
everything the spec ranks: validity, the sum of squared loads and the cost (moves).
"""

from __future__ import annotations

import pytest

import stickyflow
from stickyflow.formulations.consumer import (closed_form as consumer_closed, flow as consumer_flow,
                                              model as consumer_model, opt as consumer_opt)
from strategies import random_consumer_doc, with_and_without


def _solve_both(doc, monkeypatch):
    return with_and_without(doc, monkeypatch, "_FAST_PATH")


@pytest.mark.parametrize("seed", range(300))
def test_closed_form_equals_the_flow(seed, monkeypatch):
    doc = random_consumer_doc(seed, equal_subscriptions=True, max_members=8, max_partitions=12)
    if seed % 3 == 0:  # racks known but free: the closed form still applies
        doc.setdefault("config", {})["traffic_cost"] = 0
    fast, flow = _solve_both(doc, monkeypatch)
    assert fast.error == flow.error == "NONE"
    assert fast.solver.objective == flow.solver.objective
    assert fast.metrics["sum_squared_loads"] == flow.metrics["sum_squared_loads"]
    if doc.get("config", {}).get("non_overlap_cost", 1) > 0:  # with moves free, the spec ranks them not at all
        assert fast.metrics["moves"] == flow.metrics["moves"]
    else:
        assert fast.metrics["moves"] <= flow.metrics["moves"]  # the closed form keeps what it can regardless


def test_closed_form_is_used_only_where_it_is_exact():
    from stickyflow.registry import SolveOptions

    equal = stickyflow.parse_snapshot(random_consumer_doc(3, equal_subscriptions=True, racks=False))
    d = consumer_model.prepare(equal)
    assert d.n_classes <= 1
    if d.n_classes:
        assert consumer_closed.equal_subscriptions(d) is not None
    mixed = {"format": "stickyflow.snapshot/1", "kind": "consumer",
             "topics": {"a": {"partitions": 3}, "b": {"partitions": 3}},
             "members": [{"id": "x", "subscription": ["a"]}, {"id": "y", "subscription": ["a", "b"]}]}
    assert consumer_closed.equal_subscriptions(consumer_model.prepare(stickyflow.parse_snapshot(mixed))) is None
    racked = {"format": "stickyflow.snapshot/1", "kind": "consumer",
              "topics": {"a": {"partitions": 2, "racks": [["r1"], ["r2"]]}},
              "members": [{"id": "x", "subscription": ["a"], "rack": "r1"},
                          {"id": "y", "subscription": ["a"], "rack": "r2"}]}
    snap = stickyflow.parse_snapshot(racked)
    assert snap.rack_aware and consumer_closed.equal_subscriptions(consumer_model.prepare(snap)) is None
    assert consumer_opt.solve_consumer(snap, SolveOptions()).extra["shortcut"] is None


@pytest.mark.parametrize("seed", range(200))
def test_skipping_phase_one_keeps_the_optimum(seed, monkeypatch):
    """Many subscription classes with small loads skip phase 1 and price every load level up to the least
    maximum load; forced on every mixed group here, the answer must equal the networkx model's."""
    doc = random_consumer_doc(seed, equal_subscriptions=False, max_members=8, max_partitions=10)
    reference = stickyflow.assign(doc, method="networkx")
    monkeypatch.setattr(consumer_flow, "_MANY_CLASSES", 1)
    monkeypatch.setattr(consumer_flow, "_SMALL_LOADS", 10**6)
    monkeypatch.setattr(consumer_flow, "_FAST_PATH", False)
    got = stickyflow.assign(doc)
    assert got.error == reference.error == "NONE"
    assert got.solver.objective == reference.solver.objective
    assert got.metrics["sum_squared_loads"] == reference.metrics["sum_squared_loads"]


@pytest.mark.parametrize("seed", range(60))
def test_subscription_classes_from_the_matrix_equal_those_from_frozensets(seed, monkeypatch):
    """Members are classed by the distinct sets of topics with partitions they read: the packed-matrix
    ``np.unique`` and the one-frozenset-per-subscription loop number them the same (first appearance),
    with -1 for a subscription that reads nothing that exists (deleted topics only)."""
    import random

    rng = random.Random(seed)
    topics = {f"t{j}": {"partitions": rng.choice([1, 3])} for j in range(rng.randint(1, 12))}
    names = list(topics) + ["gone1", "gone2", "gone3"]  # subscriptions may name topics that do not exist
    pool = [sorted(rng.sample(names, rng.randint(1, min(4, len(names))))) for _ in range(rng.randint(1, 6))]
    members = [{"id": f"m{i}", "subscription": list(rng.choice(pool))} for i in range(rng.randint(1, 15))]
    snap = stickyflow.parse_snapshot({"format": "stickyflow.snapshot/1", "kind": "consumer",
                                      "topics": topics, "members": members})
    dense = consumer_model._subscription_classes(snap)
    monkeypatch.setattr(consumer_model, "_DENSE_CLASSES", 0)
    loop = consumer_model._subscription_classes(snap)
    assert dense.tolist() == loop.tolist()
    _, distinct = snap.subscription_groups()
    with_partitions = [frozenset(t for t in sub if t in topics) for sub in distinct]
    assert [c < 0 for c in dense.tolist()] == [not s for s in with_partitions]
    for a, sa in zip(dense.tolist(), with_partitions):  # one class per distinct set of topics with partitions
        for b, sb in zip(dense.tolist(), with_partitions):
            assert (a == b) == (sa == sb)


@pytest.mark.parametrize("seed", range(100))
def test_closed_form_reads_claims_in_member_order_as_it_sorts_them(seed):
    """When the claims come member by member, each member's positions ascending (owned lists sorted, topics
    in snapshot order) and none lost, the closed form takes their order as read instead of sorting by owner:
    the same partitions are kept and dealt as when it sorts."""
    import dataclasses

    from stickyflow.model.consumer_claims import remembered_claims

    snap = stickyflow.parse_snapshot(random_consumer_doc(seed, equal_subscriptions=True, racks=False,
                                                         max_members=8, max_partitions=12))
    with remembered_claims(snap):
        d = consumer_model.prepare(snap)
        if d.n_classes != 1:
            return
        as_read = consumer_closed.equal_subscriptions(d)
        if as_read is None:  # racks that cost: not the closed form's case
            return
        d.prev = dataclasses.replace(d.prev, by_member=None)
        sorted_ = consumer_closed.equal_subscriptions(d)
    assert as_read[1:] == sorted_[1:]
    assert as_read[0].to_tuples() == sorted_[0].to_tuples()
