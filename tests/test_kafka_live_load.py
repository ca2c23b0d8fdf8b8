"""Balance by load, live (issue 35): producers write at skewed rates, three real kafka-python consumers measure
what they consume, and the group settles within the slack of the least possible peak.

One topic is written 10 times as fast as the other (6 partitions each, one hot partition in each). Two consumers start and measure for a
few rate windows; the third joins, and that rebalance balances the rates the first two measured. The peak of
the settled group, counted with the producers' *true* rates, must be within ``load_slack`` of the least possible
peak (:func:`tests.load_reference.least_peak`, exact). The count-based ``sticky`` answer to the same rebalance is
printed beside it. And ``stickyflow capture --rates`` on a topic written at known rates.
"""

from __future__ import annotations

import json
import threading
import time

import pytest

pytest.importorskip("kafka", reason="kafka-python is not installed")

import stickyflow  # noqa: E402

from tests.kafka_coordinator import Group  # noqa: E402
from tests.load_reference import least_peak  # noqa: E402
from tests.test_kafka_live import Members, capture_cli, range_assignors  # noqa: E402
from tests.test_kafka_live import broker, describing_broker  # noqa: E402,F401 - module fixtures: loopback coordinators

pytestmark = [pytest.mark.timeout(90)]

RATES = {"hot": [80.0, 40.0, 40.0, 40.0, 20.0, 20.0],  # records/s written to each partition; the least peak of
         "cold": [8.0, 4.0, 4.0, 4.0, 2.0, 2.0]}    # 3 members is 88 (a third of 264), which equal counts miss
PARTITIONS = 6
WINDOW = 2.0  # the members' rate window (s)
SLACK = 0.1


def produce(bootstrap: str, rates: dict[str, list[float]], stop: threading.Event) -> None:
    """Write every partition of each topic at its rate until ``stop`` (each tick sends the records due so far)."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, acks=1)
    sent = {(t, p): 0 for t in rates for p in range(len(rates[t]))}
    start = time.monotonic()
    try:
        while not stop.is_set():
            elapsed = time.monotonic() - start
            for (t, p), n in sent.items():
                due = int(rates[t][p] * elapsed)
                for _ in range(due - n):
                    producer.send(t, value=b"x", partition=p)
                sent[(t, p)] = due
            producer.flush()
            stop.wait(0.05)
    finally:
        producer.close(timeout=2)


def settled(group: Group, members: set[str], timeout: float = 30, quiet: float = 1.0) -> dict[str, set]:
    """Wait until ``members`` own every partition once, as the last rebalance decided, for ``quiet`` seconds."""
    deadline, since, last = time.monotonic() + timeout, 0.0, None
    while time.monotonic() < deadline:
        owned = group.ownership()
        results = group.results()
        decided = ({m: {(t, p) for t, ps in ts.items() for p in ps}
                    for m, ts in group.named(results[-1]["assignment"]).items()} if results else None)
        ok = set(owned) == members and decided == owned and sum(len(v) for v in owned.values()) == 2 * PARTITIONS
        key = (ok, {m: frozenset(v) for m, v in owned.items()}, len(results))
        if ok and key == last and time.monotonic() - since >= quiet:
            return owned
        if key != last:
            since, last = time.monotonic(), key
        time.sleep(0.05)
    raise TimeoutError(f"the group did not settle: {group.ownership()}; stderr: {group.errors[-5:]}")


def peak(owned: dict[str, set], rates: dict[str, list[float]]) -> float:
    """The largest load, at ``rates`` (topic -> records/s of each partition), of any member."""
    return max(sum(rates[t][p] for t, p in tps) for tps in owned.values())


@pytest.mark.kafka
@pytest.mark.xdist_group("kafka-live")
@pytest.mark.parametrize("cooperative", [False, True], ids=["eager", "cooperative"])
def test_a_live_group_settles_near_the_least_possible_peak(broker, cooperative):  # noqa: F811
    suffix = "coop" if cooperative else "eager"
    rates = {f"{t}-{suffix}": r for t, r in RATES.items()}  # topics of their own: the two runs do not mix
    broker.create_topics({t: PARTITIONS for t in rates})
    stop = threading.Event()
    writer = threading.Thread(target=produce, args=(broker.bootstrap, rates, stop), daemon=True)
    writer.start()
    try:
        with Group(broker.bootstrap, f"live-load-{suffix}", list(rates), cooperative=cooperative,
                   session_timeout_ms=3000, heartbeat_interval_ms=300, max_seconds=80,
                   assignor_args={"balance": "load", "load_slack": SLACK, "rate_window": WINDOW}) as group:
            group.start("c1")
            group.start("c2")
            before = settled(group, {"c1", "c2"})
            time.sleep(1.5 * WINDOW)  # both measure what they own
            group.start("c3")
            after = settled(group, {"c1", "c2", "c3"})
            measured = group.results()[-1]["rates"]
    finally:
        stop.set()
        writer.join(timeout=5)
    least = least_peak([r for rs in rates.values() for r in rs], 3)
    got = peak(after, rates)
    sticky = peak(_sticky_answer(before, list(rates)), rates)
    print(f"\n[{suffix}] measured rates {measured}; least possible peak {least:g} records/s; "
          f"balance by load {got:g} ({got / least:.3f}x); count-based sticky {sticky:g} ({sticky / least:.3f}x)")
    assert got <= (1 + SLACK) * least + 1e-9


def _sticky_answer(before: dict[str, set], topics: list[str]) -> dict[str, set]:
    """``sticky``'s answer to the same rebalance (c3 joining c1 and c2 as they owned their partitions)."""
    doc = {"format": "stickyflow.snapshot/1", "kind": "consumer", "topics": {t: {"partitions": PARTITIONS}
                                                                             for t in topics},
           "members": [{"id": m, "subscription": topics,
                        "owned": {t: sorted(p for tt, p in before.get(m, ()) if tt == t) for t in topics}}
                       for m in ("c1", "c2", "c3")]}
    result = stickyflow.assign(doc, "sticky")
    return {m: {(t, p) for t, ps in ts.items() for p in ps} for m, ts in result.assignment.items()}


@pytest.mark.kafka
@pytest.mark.xdist_group("kafka-live")
def test_capture_measures_live_rates(describing_broker, tmp_path, capsys):  # noqa: F811
    """``stickyflow capture --rates 2`` on a group whose topic is written at known rates."""
    broker = describing_broker
    true = {"rated": [30.0, 10.0, 0.0]}
    stop = threading.Event()
    try:
        broker.create_topics({"rated": 3})
        writer = threading.Thread(target=produce, args=(broker.bootstrap, true, stop), daemon=True)
        writer.start()
        Range, _ = range_assignors()
        with Members(broker.bootstrap, "rated-consumers") as group:
            group.start("c1", ["rated"], Range)
            group.wait_settled(3)
            out = tmp_path / "g.json"
            code, _, err = capture_cli(["--bootstrap", broker.bootstrap, "--group", "rated-consumers", "--rates",
                                         "2", "-o", str(out)], capsys)
        stop.set()
        writer.join(timeout=5)
    finally:
        stop.set()
    assert code == 0, err
    assert "log-end offsets read 2 s apart" in err
    rates = json.loads(out.read_text())["topics"]["rated"]["rates"]
    print(f"\ncapture --rates 2: {rates} records/s (written at {true['rated']})")
    for got, want in zip(rates, true["rated"]):
        assert abs(got - want) <= 0.15 * want + 1.0, (rates, true)
