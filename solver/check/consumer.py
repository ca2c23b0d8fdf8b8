"""Checking and measuring consumer assignments.

:func:`inspect_consumer` runs the validity check (every violation, not just
the first) and computes the metrics in one numpy pass per topic, so it stays
cheap at a million partitions. The answer's array form is
:mod:`stickyflow.check.answer`'s; KIP-429's cooperative step is
:mod:`stickyflow.check.cooperative`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..model.consumer import ConsumerSnapshot
from ..model.consumer_claims import PreviousOwners, previous_owners
from ..model.consumer_members import first_seen_ids
from ..result import Violation
from .answer import ArrayAssignment, ConsumerAssignment
from .load import load_metrics, loads_known

__all__ = ["inspect_consumer", "validate_consumer", "consumer_metrics"]


@dataclass(frozen=True, slots=True, eq=False)
class _Owners:
    new_owner: dict[str, np.ndarray]  # topic -> member index or -1
    loads: np.ndarray                  # per member


def _rackset_ids(racks: tuple[frozenset[str], ...]) -> tuple[np.ndarray, list[frozenset[str]]]:
    ids: dict[frozenset[str], int] = {}
    arr = first_seen_ids(racks, ids, np.int32)
    return arr, list(ids)


def _cross_rack(topic: Any, owner: np.ndarray, member_rack: np.ndarray, rack_index: dict[str, int]
                ) -> np.ndarray | None:
    """Per partition of ``topic``: is it given (``owner``, -1: nobody) to a member whose rack holds none of its
    replicas (a boolean array); None when the topic or the members carry no racks (nothing is cross-rack).
    A member without a rack, or a partition without replica racks, reads nothing across racks."""
    if topic.racks is None or not rack_index:
        return None
    far = np.zeros(len(owner), dtype=bool)
    assigned = owner >= 0
    if assigned.any():
        rs, sets = _rackset_ids(topic.racks)
        table = np.zeros((len(sets), len(rack_index) + 1), dtype=bool)  # last column: member without rack
        for s_id, s_ in enumerate(sets):
            if s_:
                for r, r_id in rack_index.items():
                    table[s_id, r_id] = r not in s_
        far[assigned] = table[rs[assigned], member_rack[owner[assigned]]]
    return far


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
    if isinstance(assignment, ArrayAssignment) and assignment.snapshot is snap:
        return _inspect_arrays(snap, assignment, withheld=withheld, prev=prev)
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
    member_rack, rack_index = snap._rack_codes()
    moves = 0
    cross = 0
    by_load = loads_known(snap)
    owners: list[np.ndarray] = []  # every topic's new owners and cross-rack reads, for the load metrics
    far_all: list[np.ndarray] = []
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
        far = _cross_rack(topic, new_owner, member_rack, rack_index) if rack_aware else None
        if far is not None:
            cross += int(np.count_nonzero(far))
        if by_load:
            owners.append(new_owner)
            far_all.append(np.zeros(P, dtype=bool) if far is None else far)
    metrics = _count_metrics(loads, moves, cross if rack_aware else None,
                             sum(snap.topics[t].partitions for t in snap.topics if subs[t]))
    # (without known loads the metrics are null and read none of these; with no topic, the empty ``prev.all``)
    new_all = np.concatenate(owners) if owners else prev.all
    far_all = (np.concatenate(far_all) if far_all else np.zeros(0, dtype=bool)) if rack_aware else None
    metrics.update(load_metrics(snap, new_all, prev.all, far_all))
    return violations, metrics


def _count_metrics(loads: np.ndarray, moves: int, cross: int | None, partitions: Any) -> dict[str, Any]:
    """The count metrics of an answer, from its per-member loads (both readings of an answer end here)."""
    n = len(loads)
    return {"moves": moves, "imbalance": int(loads.max() - loads.min()) if n else 0, "cross_rack": cross,
            "sum_squared_loads": int(np.dot(loads, loads)), "max_load": int(loads.max()) if n else 0,
            "min_load": int(loads.min()) if n else 0, "partitions": int(partitions), "members": n}


def _distinct(a: np.ndarray) -> np.ndarray:
    """Sorted distinct values (``np.unique`` without its first-call import of ``numpy.ma``, tens of
    milliseconds that a one-off command-line solve would pay)."""
    a = np.sort(a)
    return a[np.r_[True, a[1:] != a[:-1]]] if len(a) else a


def _inspect_arrays(snap: ConsumerSnapshot, assignment: ArrayAssignment, *,
                    withheld: Mapping[str, np.ndarray] | None, prev: PreviousOwners | None,
                    ) -> tuple[list[Violation], dict[str, Any]]:
    """:func:`inspect_consumer` for an :class:`ArrayAssignment`: the same rules and metrics, in numpy.

    Owner arrays cannot name unknown members, topics or partitions, nor give a
    partition twice; what is left to check is subscriptions and coverage.
    """
    violations: list[Violation] = []
    n = len(snap.members)
    ids = snap._column("id")
    loads = np.zeros(n, dtype=np.int64)
    prev = prev or previous_owners(snap)
    rack_aware = snap.rack_aware
    member_rack, rack_index = snap._rack_codes()
    unsubscribed: list[tuple[int, int, str]] = []  # (member, topic position, topic) for the messages
    cross = 0
    # every topic at once: owner arrays end to end (topics nobody was given: -1), topic-major
    names = list(snap.topics)
    T = len(names)
    sizes = np.fromiter((snap.topics[t].partitions for t in names), dtype=np.int64, count=T)
    if assignment._all is not None and len(assignment._all[0]) == T:  # one array over every topic already
        new_all = assignment._all[1]
    else:
        new_all = np.concatenate([assignment.owners.get(t, np.full(snap.topics[t].partitions, -1, dtype=np.int32))
                                  for t in names]) if T else np.zeros(0, dtype=np.int32)
    old_all = prev.all
    topic_of = np.repeat(np.arange(T, dtype=np.int64), sizes)
    assigned_all = new_all >= 0
    got_all = new_all[assigned_all].astype(np.int64)
    loads += np.bincount(got_all, minlength=n)
    moves = int(np.count_nonzero((old_all >= 0) & (new_all != old_all)))
    if len(got_all):
        # who reads what, per distinct subscription (members sharing one share its row)
        member_class, _ = snap.subscription_groups()
        given_topic = topic_of[assigned_all]
        bad = ~snap.reads(member_class[got_all], given_topic)  # one lookup per partition
        if bad.any():  # the (member, topic) pairs, once each, for the messages
            pairs = _distinct(got_all[bad] * T + given_topic[bad])
            unsubscribed.extend((int(i), int(j), names[int(j)]) for i, j in zip(pairs // T, pairs % T))
    missing_all = ~assigned_all
    if withheld:
        for j, t in enumerate(names):
            if t in withheld:
                offset = int(sizes[:j].sum())
                missing_all[offset:offset + len(withheld[t])] &= ~withheld[t]
    has_readers = snap.has_readers()
    missing_all &= has_readers[topic_of]
    if missing_all.any():
        for j in _distinct(topic_of[missing_all]).tolist():
            t = names[j]
            offset = int(sizes[:j].sum())
            miss = np.flatnonzero(missing_all[offset:offset + int(sizes[j])])
            violations.append(Violation("PARTITION_UNASSIGNED",
                                        f"{len(miss)} partition(s) of {t} are subscribed but unassigned, e.g. {t}-{int(miss[0])}"))
    far_all = np.zeros(len(new_all), dtype=bool) if rack_aware and loads_known(snap) else None
    offset = 0
    for t, topic in snap.topics.items():
        start, offset = offset, offset + topic.partitions
        if not (rack_aware and topic.racks is not None and rack_index):
            continue
        new_owner = assignment.owners.get(t)
        if new_owner is None:
            continue
        far = _cross_rack(topic, new_owner, member_rack, rack_index)
        if far is not None:
            cross += int(np.count_nonzero(far))
            if far_all is not None:
                far_all[start:offset] = far
    # the dict path reports these per member, in member order, then topic order
    violations[:0] = [Violation("UNSUBSCRIBED_TOPIC", f"{ids[i]!r} is assigned {t} but does not subscribe to it")
                      for i, _, t in sorted(unsubscribed)]
    metrics = _count_metrics(loads, moves, cross if rack_aware else None, sizes[has_readers].sum())
    metrics.update(load_metrics(snap, new_all, old_all, far_all))
    return violations, metrics


def validate_consumer(snap: ConsumerSnapshot, assignment: ConsumerAssignment, **kw) -> list[Violation]:
    """Every violation of the consumer-group rules by ``assignment`` (empty when valid).

    >>> from stickyflow.model.consumer import parse_consumer
    >>> s = parse_consumer({"format": "stickyflow.snapshot/1", "kind": "consumer",
    ...     "topics": {"t": {"partitions": 2}}, "members": [{"id": "a", "subscription": ["t"]}]})
    >>> [v.code for v in validate_consumer(s, {"a": {"t": [0]}})]
    ['PARTITION_UNASSIGNED']
    """
    return inspect_consumer(snap, assignment, **kw)[0]


def consumer_metrics(snap: ConsumerSnapshot, assignment: ConsumerAssignment) -> dict[str, Any]:
    """``moves``, ``imbalance``, ``cross_rack``, ``sum_squared_loads`` and a few counts."""
    return inspect_consumer(snap, assignment)[1]
