"""Kafka's two stateless consumer assignors, ``range`` and ``roundrobin``, as baselines.

Both order members as Kafka's ``MemberInfo`` does (KIP-345): static members
first, by ``group.instance.id``, then the others by member id. Unlike
kafka-python's round-robin, ours is correct with mixed subscriptions: each
partition goes to the next member, in circular order, that subscribes to its topic.
"""

from __future__ import annotations

import numpy as np

from .consumer import ConsumerSnapshot, Member
from .registry import SolveOptions
from .result import Decision

__all__ = ["assign_range", "assign_roundrobin", "kafka_member_order"]


def kafka_member_order(members: list[Member] | tuple[Member, ...]) -> list[Member]:
    """Members in the order Kafka's range and round-robin assignors use (``MemberInfo.compareTo``).

    Static members (with a ``group.instance.id``) come first, by instance id; then dynamic ones by member id.
    """
    return sorted(members, key=lambda m: (m.instance_id is None, m.instance_id or "", m.id))


def assign_range(snap: ConsumerSnapshot, options: SolveOptions | None = None) -> Decision:
    """Kafka's RangeAssignor: per topic, consecutive ranges; the first ``P % C`` members get one more."""
    out: dict[str, dict[str, np.ndarray]] = {m.id: {} for m in snap.members}
    for t, topic in snap.topics.items():
        subs = kafka_member_order([m for m in snap.members if t in m.subscription])
        if not subs:
            continue
        n, extra = divmod(topic.partitions, len(subs))
        start = 0
        for i, m in enumerate(subs):
            size = n + (1 if i < extra else 0)
            if size:
                out[m.id][t] = np.arange(start, start + size)
            start += size
    return Decision(assignment=out, method="range", status="heuristic")


def assign_roundrobin(snap: ConsumerSnapshot, options: SolveOptions | None = None) -> Decision:
    """Kafka's RoundRobinAssignor: partitions sorted by (topic, number), dealt to members in circular order."""
    members = kafka_member_order(list(snap.members))
    out: dict[str, dict[str, list[int]]] = {m.id: {} for m in members}
    if not members:
        return Decision(assignment=out, method="roundrobin", status="heuristic")
    subs = [frozenset(m.subscription) for m in members]
    n = len(members)
    pos = 0
    for t in sorted(snap.topics):
        who = [i for i in range(n) if t in subs[i]]
        if not who:
            continue
        P = snap.topics[t].partitions
        if len(who) == n:  # everybody subscribes: no skipping, deal in one numpy step
            for i in range(n):  # member i gets p with (pos + p) % n == i
                parts = np.arange((i - pos) % n, P, n)
                if len(parts):
                    out[members[i].id][t] = parts
            pos = (pos + P) % n
            continue
        for p in range(P):
            while t not in subs[pos]:
                pos = (pos + 1) % n
            out[members[pos].id].setdefault(t, []).append(p)
            pos = (pos + 1) % n
    return Decision(assignment=out, method="roundrobin", status="heuristic")
