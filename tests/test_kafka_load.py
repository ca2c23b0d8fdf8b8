"""Balance by load in kafka-python's assignor API (issue 35), without a broker: the rate meter, the user_data
layout 2 (and layout 1 still read), the leader's rates and estimates, a group rebalanced by measured load."""

from __future__ import annotations

import base64
import json

import pytest

pytest.importorskip("kafka", reason="kafka-python is not installed")

from stickyflow.adapters import kafka as sk  # noqa: E402
from stickyflow.adapters.decode import decode  # noqa: E402
from stickyflow.adapters.kafka_load import RateMeter, leader_rates, read_layout  # noqa: E402
from stickyflow.errors import InvalidSnapshotError  # noqa: E402
from tests.checker import check_result  # noqa: E402
from tests.load_reference import least_peak  # noqa: E402
from tests.test_kafka_adapter import MiniGroup, make_cluster  # noqa: E402

TOPICS = {"hot": 6, "cold": 6}


def test_the_meter_divides_by_the_window_or_the_time_owned():
    m = RateMeter(window=10.0, clock=lambda: 0.0)
    m.owning({"t": [0]}, now=0.0)
    m.count("t", 0, 30, now=1.0)
    assert m.rates({"t": [0]}, now=2.0) == {}  # owned for 2 s < a quarter of the window: not measured yet
    assert m.rates({"t": [0]}, now=5.0) == {"t": {0: 6.0}}  # 30 records over the 5 s owned
    m.count("t", 0, 10, now=12.0)
    assert m.rates({"t": [0]}, now=15.0) == {"t": {0: 1.0}}  # the window forgets the first 30
    m.owning({"t": [1]}, now=15.0)
    assert m.rates({"t": [0, 1]}, now=16.0) == {}  # partition 0 given up and forgotten; 1 too new


def test_timestamps_measure_the_write_rate_through_a_pause_and_a_catch_up():
    m = RateMeter(window=4.0)
    m.owning({"t": [0]}, now=0.0)
    m.count("t", 0, 10, now=0.5, first=(1_000, 100), last=(1_500, 109))  # 20 records/s written
    # a rebalance pauses consuming for 2 s, then the backlog arrives at once
    m.count("t", 0, 50, now=3.0, first=(1_550, 110), last=(4_000, 159))
    assert m.rates({"t": [0]}, now=3.0) == {"t": {0: pytest.approx(59 / 3.0)}}  # not 60 records / 3 s of owning


def test_time_in_a_rebalance_does_not_count_toward_the_window():
    m = RateMeter(window=2.0)
    m.owning({"t": [0]}, now=0.0)
    m.count("t", 0, 10, now=1.0)
    m.pause(now=1.5)  # JoinGroup sent: the consumer polls nothing for 3 s
    m.owning({"t": [0]}, now=4.5)
    assert m.rates({"t": [0]}, now=5.0) == {"t": {0: 5.0}}  # 10 records in the 2 s of polling before now


def test_the_leader_estimates_what_nobody_reports():
    got = leader_rates({"a": 3, "b": 2, "c": 1}, [{"a": {0: 4.0, 1: 8.0}}, {"b": {1: 1.0}, "zzz": {0: 9.0}}])
    assert got == {"a": [4.0, 8.0, 6.0], "b": [1.0, 1.0], "c": [4.0]}  # topic median; else everyone's; c: [4, 8, 1]
    assert leader_rates({"a": 2}, []) == {"a": [0.0, 0.0]}
    assert leader_rates({"a": 1}, [{"a": {0: 2.0}}, {"a": {0: 5.0}}]) == {"a": [5.0]}  # two claimants: the larger


def test_layout_2_round_trips_and_decode_shows_it():
    a = sk.OptimalAssignor(balance="load", capacity=50.0, rate_window=4.0)
    a.meter.clock = lambda: 0.0
    a.on_assignment(_assignment({"hot": [0, 1]}), 3)
    a.meter.count("hot", 0, 40, now=2.0)
    a.meter.clock = lambda: 4.0
    raw = a.metadata(["hot"])
    info = sk.read_member("m1", raw)
    assert info.rates == {"hot": {0: 10.0, 1: 0.0}} and info.capacity == 50.0
    shown = decode("consumer-subscription", raw)["user_data_decoded"]
    assert shown["layout"] == 2 and shown["rates"] == {"hot": {0: 10.0, 1: 0.0}} and shown["rate_window"] == 4.0
    json.dumps(shown)  # decode's output is JSON
    old = sk.OptimalAssignor()  # a count-balancing member writes layout 1, read as no rates
    old.on_assignment(_assignment({"hot": [2]}), 3)
    old_info = sk.read_member("m0", old.metadata(["hot"]))
    assert old_info.rates == {} and old_info.owned == {"hot": (2,)}
    assert read_layout({"owned": {}})["layout"] == 1


@pytest.mark.parametrize("doc, field", [({"layout": 2, "rates": {"t": {"0": -1}}}, "user_data.rates.t.0"),
                                        ({"layout": 2, "rates": {"t": {"x": 1}}}, "user_data.rates.t"),
                                        ({"layout": 2, "capacity": 0}, "user_data.capacity"),
                                        ({"layout": "2"}, "user_data.layout")])
def test_bad_rates_are_named(doc, field):
    with pytest.raises(InvalidSnapshotError) as err:
        read_layout(doc)
    assert err.value.field == field
    raw = base64.b64encode(sk.USER_DATA_MAGIC + json.dumps(doc).encode()).decode()
    with pytest.raises(InvalidSnapshotError) as err:
        decode("consumer-subscription", sk.encode_subscription(["t"], user_data=base64.b64decode(raw)),
               user_data="stickyflow")
    assert err.value.field == field
    info = sk.read_member("m", sk.encode_subscription(["t"], user_data=base64.b64decode(raw)))
    assert info.rates == {}  # the leader drops them (and estimates)


@pytest.mark.parametrize("kw, field", [({"balance": "bytes"}, "balance"), ({"load_slack": -0.1}, "load_slack"),
                                       ({"capacity": 0}, "capacity"), ({"rate_window": 0}, "rate_window")])
def test_bad_settings_are_named(kw, field):
    with pytest.raises(InvalidSnapshotError) as err:
        sk.OptimalAssignor(**kw)
    assert err.value.field == field


@pytest.mark.parametrize("cls", [sk.OptimalAssignor, sk.CooperativeOptimalAssignor])
def test_a_group_rebalances_by_the_load_its_members_measured(cls):
    true = {("hot", p): 10.0 * (1 + p % 3) for p in range(6)} | {("cold", p): 1.0 + p % 2 for p in range(6)}
    group = MiniGroup(make_cluster(TOPICS), cls=cls, topics=TOPICS)
    clock = [0.0]
    for mid in ("m1", "m2"):
        group.join(mid, balance="load", load_slack=0.05, rate_window=10.0).meter.clock = lambda: clock[0]
    for _ in range(3):  # settle (cooperative: revocation rounds), no rates measured yet
        group.rebalance()
    for a in group.members.values():  # ten seconds of consuming at the true rates
        for t, ps in a.owned.items():
            for p in ps:
                a.meter.count(t, p, int(10 * true[(t, p)]), now=5.0)
    clock[0] = 10.0
    group.join("m3", balance="load", load_slack=0.05, rate_window=10.0).meter.clock = lambda: clock[0]
    for _ in range(3):
        group.rebalance(leader="m1")
    leader = group.members["m1"]
    snap, result = leader.last_snapshot, leader.last_result
    measured = {(t, p): float(snap.topics[t].rates[p]) for t in TOPICS for p in range(TOPICS[t])}
    assert measured == pytest.approx(true)  # every partition was owned and measured before m3 joined
    check_result(snap, result)
    owned = group.owned()
    peak = max(sum(true[(t, p)] for t, ps in o.items() for p in ps) for o in owned.values())
    assert peak <= 1.05 * least_peak(list(true.values()), 3) + 1e-9


def _assignment(owned):
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment

    return ConsumerProtocolAssignment(3, [(t, ps) for t, ps in owned.items()], b"")
