"""``stickyflow capture --rates SECONDS`` (issue 35): partition rates from two reads of the log-end offsets (the
live test is in ``tests/test_kafka_live_load.py``)."""

from __future__ import annotations

import stickyflow
from stickyflow.adapters.capture import CapturedGroup
from stickyflow.adapters.capture_rates import measure_rates, with_measured_rates


def _clock(*ticks):
    it = iter(ticks)
    return lambda: next(it)


def test_rates_are_offsets_over_the_seconds_between_the_reads():
    reads = iter([{("t", 0): 10, ("t", 1): 50}, {("t", 0): 70, ("t", 1): 20}])
    rates, notes = measure_rates(lambda tps: next(reads), [("t", 1), ("t", 0)], 3.0, sleep=lambda s: None,
                                 clock=_clock(0.0, 0.0, 3.0, 3.0))
    assert rates == {("t", 0): 20.0, ("t", 1): 0.0}
    assert "went back (50 -> 20)" in notes[("t", 1)]


def test_consumer_snapshots_get_rates_and_others_are_left_alone():
    consumer = {"format": "stickyflow.snapshot/1", "kind": "consumer", "id": "g", "topics": {"t": {"partitions": 2}},
                "members": [{"id": "a", "subscription": ["t"]}]}
    groups = [CapturedGroup(group_id="g", snapshot=consumer), CapturedGroup(group_id="x", error="no members")]
    reads = iter([{("t", 0): 0, ("t", 1): 0}, {("t", 0): 8, ("t", 1): 2}])
    out = with_measured_rates(groups, lambda tps: next(reads), 2.0, sleep=lambda s: None,
                              clock=_clock(0.0, 0.0, 2.0, 2.0))
    assert out[0].snapshot["topics"]["t"]["rates"] == [4.0, 1.0] and out[1] is groups[1]
    assert any("log-end offsets read 2 s apart" in n for n in out[0].notes)
    assert "rates" not in consumer["topics"]["t"]  # the captured dict is not changed in place
    snap = stickyflow.parse_snapshot(dict(out[0].snapshot, config={"balance": "load"}))
    assert snap.topics["t"].rates.tolist() == [4.0, 1.0]
