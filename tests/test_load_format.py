"""Balance by load, the format (issue 35): rates, capacities and the load config, read from JSON, dicts and
Python objects alike, written back, and refused with the field and the rule when wrong.

The malformed files (``tests/malformed/load-*.json``) run through the library and the command line in
``test_malformed.py``; here are the cases JSON cannot carry (NaN, infinity, NumPy arrays) and the object API.
"""

from __future__ import annotations

import json
import math
import pickle
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings

import stickyflow
from stickyflow.errors import InvalidSnapshotError
from stickyflow.model.consumer import ConsumerConfig, ConsumerSnapshot, Member, Topic
from strategies import consumer_docs

EXAMPLE = Path(__file__).resolve().parent.parent.parent / "shared" / "examples" / "consumer-load-hot-partition.json"


def _doc(**config) -> dict:
    return {"format": "stickyflow.snapshot/1", "kind": "consumer",
            "topics": {"orders": {"partitions": 3, "rates": [5.0, 1.5, 0]}, "audit": {"partitions": 2}},
            "members": [{"id": "c1", "subscription": ["orders"], "capacity": 10},
                        {"id": "c2", "subscription": ["orders"], "capacity": 8}],
            "config": {"balance": "load", **config}}


def _field(build) -> str:
    with pytest.raises(InvalidSnapshotError) as exc:
        build()
    return exc.value.field


def test_the_shared_example_reads_with_read_only_float_rates():
    snap = stickyflow.load_snapshot(EXAMPLE)
    rates = snap.topics["clicks"].rates
    assert isinstance(rates, np.ndarray) and rates.dtype == np.float64 and not rates.flags.writeable
    assert rates.tolist() == [120.0, 5.0, 5.0, 80.0, 5.0, 5.0]
    cfg = snap.config
    assert (cfg.balance, cfg.capacity, cfg.load_slack) == ("load", 100.0, 0.05)
    assert [m.capacity for m in snap.members] == [None, None, None]
    with pytest.raises(ValueError):
        rates[0] = 1.0


def test_the_writer_writes_what_the_reader_reads():
    doc = _doc(capacity=None, load_slack=0.2)
    snap = stickyflow.parse_snapshot(doc)
    out = stickyflow.snapshot_to_json(snap)
    assert out["topics"]["orders"]["rates"] == [5.0, 1.5, 0.0] and "rates" not in out["topics"]["audit"]
    assert [m.get("capacity") for m in out["members"]] == [10.0, 8.0]
    assert out["config"]["balance"] == "load" and out["config"]["load_slack"] == 0.2
    assert "capacity" not in out["config"]  # null is the default: left out
    again = stickyflow.parse_snapshot(json.loads(json.dumps(out)))
    assert again.topics == snap.topics and again.members == snap.members and again.config == snap.config
    # defaults are not written: a count snapshot stays as it was
    plain = stickyflow.snapshot_to_json(stickyflow.parse_snapshot(
        {"format": "stickyflow.snapshot/1", "kind": "consumer", "topics": {"t": {"partitions": 1}}, "members": []}))
    assert set(plain["config"]) == {"traffic_cost", "non_overlap_cost"}


@pytest.mark.parametrize("rates, field", [
    ([1.0, float("nan"), 0], "topics.orders.rates[1]"),
    ([1.0, 2.0, float("inf")], "topics.orders.rates[2]"),
    ([1.0, -0.5, 0], "topics.orders.rates[1]"),
    ([1.0, np.True_, 0], "topics.orders.rates[1]"),
    ([1.0, False, 0], "topics.orders.rates[1]"),
    ([1.0, 10**400, 0], "topics.orders.rates[1]"),
    (np.array([1.0, np.nan, 0]), "topics.orders.rates[1]"),
    (np.array([True, False, True]), "topics.orders.rates"),
    (np.array([1.0, 2.0]), "topics.orders.rates"),
    (np.ones((3, 1)), "topics.orders.rates"),
    ("123", "topics.orders.rates"),
    ([1e308, 1e308, 0], "topics.orders.rates"),
])
def test_bad_rates_in_a_dict_name_the_entry(rates, field):
    doc = _doc()
    doc["topics"]["orders"]["rates"] = rates
    assert _field(lambda: stickyflow.parse_snapshot(doc)) == field


def test_rates_of_any_numeric_kind_are_taken_as_float64():
    for rates in ([1, 2, 3], (1, 2.5, 3), np.array([1, 2, 3], dtype=np.int32), [np.float32(1), np.int64(2), 3],
                  range(1, 4), np.array([1, 2, 3], dtype=object)):
        doc = _doc()
        doc["topics"]["orders"]["rates"] = rates
        got = stickyflow.parse_snapshot(doc).topics["orders"].rates
        assert got.dtype == np.float64 and not got.flags.writeable and got[1] in (2.0, 2.5)


def test_the_reader_copies_the_callers_array():
    mine = np.array([1.0, 2.0, 3.0])
    doc = _doc()
    doc["topics"]["orders"]["rates"] = mine
    snap = stickyflow.parse_snapshot(doc)
    mine[0] = 99.0
    assert snap.topics["orders"].rates[0] == 1.0 and mine.flags.writeable
    # a read-only array is no promise: its owner may make it writeable again, and it is checked like any other
    mine.flags.writeable = False
    topic = Topic(name="orders", partitions=3, rates=mine)
    mine.flags.writeable = True
    mine[0] = 5.0
    assert topic.rates[0] == 99.0
    mine[1] = np.nan
    mine.flags.writeable = False
    assert _field(lambda: Topic(name="orders", partitions=3, rates=mine)) == "Topic(name='orders').rates[1]"


@pytest.mark.parametrize("edit, field", [
    (lambda d: d["members"][0].update(capacity=float("nan")), "members[0].capacity"),
    (lambda d: d["members"][1].update(capacity=float("inf")), "members[1].capacity"),
    (lambda d: d["members"][1].update(capacity=-3), "members[1].capacity"),
    (lambda d: d["members"][0].update(capacity=True), "members[0].capacity"),
    (lambda d: d["config"].update(capacity=0), "config.capacity"),
    (lambda d: d["config"].update(capacity="10"), "config.capacity"),
    (lambda d: d["config"].update(load_slack=float("nan")), "config.load_slack"),
    (lambda d: d["config"].update(load_slack=None), "config.load_slack"),
    (lambda d: d["config"].update(load_slack=False), "config.load_slack"),
    (lambda d: d["config"].update(balance="LOAD"), "config.balance"),
    (lambda d: d["config"].update(balance=None), "config.balance"),
    (lambda d: d["members"][0]["subscription"].append("audit"), "topics.audit.rates"),
])
def test_bad_load_settings_in_a_dict_name_the_field(edit, field):
    doc = _doc()
    edit(doc)
    assert _field(lambda: stickyflow.parse_snapshot(doc)) == field


def test_what_is_allowed_is_allowed():
    # a topic nobody reads needs no rates; a capacity default covers members without one; zero rates are rates
    doc = _doc(capacity=4, load_slack=0)
    doc["members"].append({"id": "c3", "subscription": ["orders", "gone"]})
    snap = stickyflow.parse_snapshot(doc)
    assert snap.members[2].capacity is None and snap.config.capacity == 4.0 and snap.config.load_slack == 0.0
    # rates on a count snapshot, even on some topics only, are fine: they are measured where complete
    count = _doc()
    count["config"] = {}
    assert stickyflow.parse_snapshot(count).config.balance == "count"


def test_a_member_without_capacity_needs_a_default_when_others_state_one():
    doc = _doc()
    del doc["members"][1]["capacity"]
    assert _field(lambda: stickyflow.parse_snapshot(doc)) == "members[1].capacity"
    doc["config"]["capacity"] = 5
    assert stickyflow.parse_snapshot(doc).members[1].capacity is None


ORDERS = Topic(name="orders", partitions=3, rates=[5, 1.5, 0])


@pytest.mark.parametrize("build, field", [
    (lambda: Topic(name="orders", partitions=3, rates=[5, 1.5]), "Topic(name='orders').rates"),
    (lambda: Topic(name="orders", partitions=3, rates=[5, -1, 0]), "Topic(name='orders').rates[1]"),
    (lambda: Topic(name="orders", partitions=3, rates=[5, math.nan, 0]), "Topic(name='orders').rates[1]"),
    (lambda: Topic(name="orders", partitions=3, rates=[5, math.inf, 0]), "Topic(name='orders').rates[1]"),
    (lambda: Topic(name="orders", partitions=3, rates=[5, True, 0]), "Topic(name='orders').rates[1]"),
    (lambda: Topic(name="orders", partitions=3, rates=["5", 1, 0]), "Topic(name='orders').rates[0]"),
    (lambda: Topic(name="orders", partitions=3, rates={0: 1}), "Topic(name='orders').rates"),
    (lambda: ConsumerSnapshot(topics={"orders": ORDERS},
                              members=(Member(id="a", subscription=("orders",), capacity=0),)),
     "members[0].capacity"),
    (lambda: ConsumerSnapshot(topics={"orders": ORDERS},
                              members=(Member(id="a", subscription=("orders",), capacity="big"),)),
     "members[0].capacity"),
    (lambda: ConsumerSnapshot(topics={"orders": ORDERS}, members=(), config=ConsumerConfig(balance="bytes")),
     "config.balance"),
    (lambda: ConsumerSnapshot(topics={"orders": ORDERS}, members=(), config=ConsumerConfig(load_slack=-0.1)),
     "config.load_slack"),
    (lambda: ConsumerSnapshot(topics={"orders": ORDERS}, members=(), config=ConsumerConfig(capacity=math.nan)),
     "config.capacity"),
    (lambda: ConsumerSnapshot(topics={"orders": ORDERS}, members=(), config=ConsumerConfig(capacity=True)),
     "config.capacity"),
    (lambda: ConsumerSnapshot(topics={"orders": Topic(name="orders", partitions=3)},
                              members=(Member(id="a", subscription=("orders",)),),
                              config=ConsumerConfig(balance="load")),
     "topics.orders.rates"),
])
def test_python_objects_are_checked_like_json(build, field):
    assert _field(build) == field


def test_python_objects_equal_the_json_reading_and_solve():
    snap = ConsumerSnapshot(topics=[ORDERS], members=[Member(id="a", subscription=["orders"], capacity=4),
                                                      Member(id="b", subscription=["orders"], capacity=2.5)],
                            config=ConsumerConfig(balance="load", load_slack=0.1))
    read = stickyflow.parse_snapshot(stickyflow.snapshot_to_json(snap))
    assert snap.topics == read.topics and snap.members == read.members and snap.config == read.config
    assert snap.members[0].capacity == 4.0 and type(snap.members[0].capacity) is float
    for name in ("sticky", "range", "roundrobin", "uniform"):
        assert stickyflow.assign(snap, name).error == "NONE"


def test_topics_with_rates_compare_hash_and_pickle_by_value():
    a = Topic(name="t", partitions=2, rates=[1, 2])
    b = Topic(name="t", partitions=2, rates=np.array([1.0, 2.0]))
    assert a == b and hash(a) == hash(b) and a != Topic(name="t", partitions=2, rates=[1, 3])
    assert a != Topic(name="t", partitions=2)
    back = pickle.loads(pickle.dumps(a))
    assert back == a and not back.rates.flags.writeable


@settings(max_examples=40, deadline=None)
@given(consumer_docs(loads=True))
def test_capacities_read_in_bulk_as_one_by_one(doc):
    """Members read in bulk (the common case) equal members read one by one (an unknown field sends the reader
    there), capacities included."""
    bulk = stickyflow.parse_snapshot(doc)
    slow = stickyflow.parse_snapshot(dict(doc, members=[dict(m, note=1) for m in doc["members"]]))
    assert bulk.members == slow.members and bulk.topics == slow.topics and bulk.config == slow.config
    assert not bulk.warnings and (slow.warnings or not doc["members"])


def test_the_example_solves_with_every_consumer_assignor():
    snap = stickyflow.load_snapshot(EXAMPLE)
    for name in stickyflow.available_assignors("consumer"):
        result = stickyflow.assign(snap, name)
        assert result.error == "NONE" and result.metrics["peak_utilization"] is not None, name
