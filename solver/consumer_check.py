"""Checking and measuring consumer assignments; the cooperative (KIP-429) step.

:func:`inspect_consumer` runs the validity check (every violation, not just
the first) and computes the metrics in one numpy pass per topic, so it stays
cheap at a million partitions. :func:`cooperative_split` turns a target
assignment into this round's assignment plus the revocations KIP-429 needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from .consumer import ConsumerSnapshot, PreviousOwners, previous_owners
from .result import Violation

__all__ = [
    "ConsumerAssignment",
    "normalize_consumer_assignment",
    "inspect_consumer",
    "validate_consumer",
    "consumer_metrics",
    "cooperative_split",
    "CooperativeStep",
]

ConsumerAssignment = Mapping[str, Mapping[str, Sequence[int]]]


def normalize_consumer_assignment(snap: ConsumerSnapshot, assignment: ConsumerAssignment
                                  ) -> dict[str, dict[str, tuple[int, ...]]]:
    """Every member present (unknown ids kept, for the check to report), topics in snapshot order, partitions sorted; empty topic lists dropped."""
    out: dict[str, dict[str, tuple[int, ...]]] = {m.id: {} for m in snap.members}
    for mid, topics in assignment.items():
        dest = out.setdefault(mid, {})
        for t, parts in topics.items():
            if len(parts):
                arr = np.sort(np.asarray(parts, dtype=np.int64))
                dest[t] = tuple(arr.tolist())
    order = {t: i for i, t in enumerate(snap.topics)}
    return {m: dict(sorted(d.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0]))) for m, d in out.items()}


@dataclass(frozen=True, slots=True, eq=False)
class _Owners:
    new_owner: dict[str, np.ndarray]  # topic -> member index or -1
    loads: np.ndarray                  # per member


def _rackset_ids(racks: tuple[frozenset[str], ...]) -> tuple[np.ndarray, list[frozenset[str]]]:
    ids: dict[frozenset[str], int] = {}
    arr = np.fromiter((ids.setdefault(r, len(ids)) for r in racks), dtype=np.int32, count=len(racks))
    return arr, list(ids)


def inspect_consumer(snap: ConsumerSnapshot, assignment: ConsumerAssignment, *,
                     withheld: Mapping[str, np.ndarray] | None = None,
                     prev: PreviousOwners | None = None,
                     ) -> tuple[list[Violation], dict[str, Any]]:
    """Check ``assignment`` against ``snap`` and measure it.

    Returns every :class:`Violation` found and the metrics (``moves``,
    ``imbalance``, ``cross_rack``, ``sum_squared_loads``, ...). ``withheld``
    (topic -> boolean mask) marks partitions that the cooperative protocol
    legitimately leaves unassigned this round.
    """
    violations: list[Violation] = []
    index = snap.member_index()
    subs = snap.subscribers()
    subscribed = [frozenset(m.subscription) for m in snap.members]
    per_topic: dict[str, list[tuple[int, np.ndarray]]] = {}
    loads = np.zeros(len(snap.members), dtype=np.int64)
    for mid in index:
        if mid not in assignment:
            violations.append(Violation("MISSING_MEMBER_ID", f"member {mid!r} is missing from the assignment"))
    for mid, topics in assignment.items():
        i = index.get(mid)
        if i is None:
            if any(len(p) for p in topics.values()):
                violations.append(Violation("UNKNOWN_MEMBER_ID", f"{mid!r} is not a member of the group"))
            continue
        for t, parts in topics.items():
            arr = np.asarray(parts, dtype=np.int64)
            if not len(arr):
                continue
            topic = snap.topics.get(t)
            if topic is None:
                violations.append(Violation("UNKNOWN_TOPIC", f"{mid!r} is assigned topic {t!r}, which does not exist"))
                continue
            bad = arr[(arr < 0) | (arr >= topic.partitions)]
            if len(bad):
                violations.append(Violation("UNKNOWN_PARTITION",
                                            f"{mid!r} is assigned {t}-{int(bad[0])}; {t} has {topic.partitions} partitions"))
                arr = arr[(arr >= 0) & (arr < topic.partitions)]
            if t not in subscribed[i]:
                violations.append(Violation("UNSUBSCRIBED_TOPIC", f"{mid!r} is assigned {t} but does not subscribe to it"))
            loads[i] += len(arr)
            per_topic.setdefault(t, []).append((i, arr))

    prev = prev or previous_owners(snap)
    rack_aware = snap.rack_aware
    rack_index: dict[str, int] = {}
    member_rack = np.array([rack_index.setdefault(m.rack, len(rack_index)) if m.rack is not None else -1
                            for m in snap.members], dtype=np.int32)
    moves = 0
    cross = 0
    for t, topic in snap.topics.items():
        P = topic.partitions
        entries = per_topic.get(t, [])
        new_owner = np.full(P, -1, dtype=np.int32)
        if entries:
            allp = np.concatenate([a for _, a in entries])
            counts = np.bincount(allp, minlength=P)
            dup = np.flatnonzero(counts > 1)
            if len(dup):
                violations.append(Violation("PARTITION_ASSIGNED_MULTIPLE_TIMES",
                                            f"{len(dup)} partition(s) of {t} are assigned more than once, e.g. {t}-{int(dup[0])}"))
            for i, a in entries:
                new_owner[a] = i
        else:
            counts = np.zeros(P, dtype=np.int64)
        if subs[t]:
            missing = counts == 0
            if withheld is not None and t in withheld:
                missing &= ~withheld[t]
            nmiss = int(missing.sum())
            if nmiss:
                violations.append(Violation("PARTITION_UNASSIGNED",
                                            f"{nmiss} partition(s) of {t} are subscribed but unassigned, e.g. {t}-{int(np.flatnonzero(missing)[0])}"))
        old = prev.owner[t]
        moves += int(np.count_nonzero((old >= 0) & (new_owner != old)))
        if rack_aware and topic.racks is not None and rack_index:
            rs, sets = _rackset_ids(topic.racks)
            table = np.zeros((len(sets), len(rack_index) + 1), dtype=bool)  # last column: member without rack
            for s_id, s in enumerate(sets):
                if s:
                    for r, r_id in rack_index.items():
                        table[s_id, r_id] = r not in s
            assigned = new_owner >= 0
            cross += int(np.count_nonzero(table[rs[assigned], member_rack[new_owner[assigned]]]))
    n = len(snap.members)
    metrics: dict[str, Any] = {
        "moves": moves,
        "imbalance": int(loads.max() - loads.min()) if n else 0,
        "cross_rack": cross if rack_aware else None,
        "sum_squared_loads": int(np.dot(loads, loads)),
        "max_load": int(loads.max()) if n else 0,
        "min_load": int(loads.min()) if n else 0,
        "partitions": int(sum(snap.topics[t].partitions for t in snap.topics if subs[t])),
        "members": n,
    }
    return violations, metrics


def validate_consumer(snap: ConsumerSnapshot, assignment: ConsumerAssignment, **kw) -> list[Violation]:
    """Every violation of the consumer-group rules by ``assignment`` (empty when valid).

    >>> from stickyflow.consumer import parse_consumer
    >>> s = parse_consumer({"format": "stickyflow.snapshot/1", "kind": "consumer",
    ...     "topics": {"t": {"partitions": 2}}, "members": [{"id": "a", "subscription": ["t"]}]})
    >>> [v.code for v in validate_consumer(s, {"a": {"t": [0]}})]
    ['PARTITION_UNASSIGNED']
    """
    return inspect_consumer(snap, assignment, **kw)[0]


def consumer_metrics(snap: ConsumerSnapshot, assignment: ConsumerAssignment) -> dict[str, Any]:
    """``moves``, ``imbalance``, ``cross_rack``, ``sum_squared_loads`` and a few counts."""
    return inspect_consumer(snap, assignment)[1]


@dataclass(frozen=True, slots=True, eq=False)
class CooperativeStep:
    """One KIP-429 round: what each member gets now, what it must give up first."""

    assignment: dict[str, dict[str, tuple[int, ...]]]
    revocations: dict[str, dict[str, tuple[int, ...]]]
    withheld: dict[str, np.ndarray]  # topic -> mask of partitions held back this round

    @property
    def revoking(self) -> bool:
        return any(self.revocations.values())


def cooperative_split(snap: ConsumerSnapshot, target: Mapping[str, Mapping[str, Sequence[int]]],
                      prev: PreviousOwners | None = None) -> CooperativeStep:
    """Split a target assignment into a safe cooperative round (KIP-429).

    A member must revoke every partition it claims but is not given. A partition
    that another member still claims is withheld from a new owner that does not
    claim it itself, until the follow-up rebalance, so no partition gains a
    second consumer.
    Every claim counts here, losing KIP-341 claims included: safety first.
    """
    prev = prev or previous_owners(snap)
    ids = [m.id for m in snap.members]
    new_owner: dict[str, np.ndarray] = {}
    for t, topic in snap.topics.items():
        new_owner[t] = np.full(topic.partitions, -1, dtype=np.int32)
    index = snap.member_index()
    for mid, topics in target.items():
        i = index[mid]
        for t, parts in topics.items():
            if len(parts):
                new_owner[t][np.asarray(parts, dtype=np.int64)] = i
    revocations: dict[str, dict[str, tuple[int, ...]]] = {mid: {} for mid in ids}
    withheld: dict[str, np.ndarray] = {}
    for t, claims in prev.claims.items():
        owner = new_owner[t]
        mask = np.zeros(len(owner), dtype=bool)
        kept = np.zeros(len(owner), dtype=bool)
        for i, parts in claims:
            same = owner[parts] == i
            kept[parts[same]] = True
            lost = parts[~same]
            if len(lost):
                revocations[ids[i]][t] = tuple(lost.tolist())
                mask[lost] = True
        # a new owner that already holds the partition keeps it; anyone else waits for the revocation
        mask &= ~kept & (owner >= 0)
        if mask.any():
            withheld[t] = mask
    assignment: dict[str, dict[str, tuple[int, ...]]] = {}
    for mid, topics in target.items():
        out: dict[str, tuple[int, ...]] = {}
        for t, parts in topics.items():
            arr = np.asarray(parts, dtype=np.int64)
            w = withheld.get(t)
            if w is not None and len(arr):
                arr = arr[~w[arr]]
            if len(arr):
                out[t] = tuple(arr.tolist())
        assignment[mid] = out
    revocations = {m: r for m, r in revocations.items() if r}
    return CooperativeStep(assignment=assignment, revocations=revocations, withheld=withheld)
