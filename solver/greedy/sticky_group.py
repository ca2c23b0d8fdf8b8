"""The sticky assignor's view of a consumer group, as arrays, and Java's ``HashMap`` iteration order.

:class:`Group` is what both builders of :mod:`stickyflow.greedy.sticky` work on:
members in Kafka's order, partitions numbered across topics, the resolved claims
and KIP-881's rack data. :func:`java_hash_order` is the order in which Kafka's
assignor iterates its members, which decides who may keep ``maxQuota`` partitions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..check.answer import ArrayAssignment
from ..errors import SolverFaultError
from ..model.consumer import ConsumerSnapshot
from ..model.consumer_claims import previous_owners

__all__ = ["Group", "java_string_hash", "java_hash_order"]


# --------------------------------------------------------------------------- the group, as arrays

@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class _Racks:
    """KIP-881 rack data on the group's partitions; ``active`` is Kafka's decision to use it."""

    active: bool
    member_rack: np.ndarray  # per member (id order): rack id, -1 without a rack
    part_set: np.ndarray     # per partition: id of its replica rack set
    match: np.ndarray        # [rack set, rack id] -> the set holds that (member) rack
    set_racks: list          # per rack set: frozenset of member rack ids in it
    set_members: np.ndarray  # per rack set: how many members sit on one of its racks

    def mismatch(self, members: np.ndarray, parts: np.ndarray) -> np.ndarray:
        """Kafka's ``racksMismatch``: the member has a rack and no replica of the partition is on it."""
        r = self.member_rack[members]
        return (r >= 0) & ~self.match[self.part_set[parts], np.maximum(r, 0)]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Group:
    """The snapshot in the shape the algorithms need.

    Members are numbered in member-id order. Partitions get global numbers
    ``g``: the assignable topics (those somebody subscribes to) sorted by name,
    each topic's partitions in order, so ``g`` order is Kafka's (topic,
    partition) order.
    """

    ids: list[str]
    snap_index: np.ndarray      # member number -> index in snapshot.members
    rank: np.ndarray            # index in snapshot.members -> member number
    topics: list[str]           # assignable topics, by name
    offsets: np.ndarray         # topic t holds g in [offsets[t], offsets[t + 1])
    topic_of: np.ndarray        # g -> topic number
    part_of: np.ndarray         # g -> partition number
    subs: list[list[int]]       # member -> topic numbers it subscribes to (assignable ones)
    elig: list[np.ndarray]      # topic -> members subscribing to it, in id order
    prev: np.ndarray            # g -> valid previous owner (KIP-341), -1 for none
    racks: _Racks

    @property
    def n(self) -> int:
        return len(self.ids)

    @property
    def P(self) -> int:
        return int(self.offsets[-1])

    @staticmethod
    def build(snap: ConsumerSnapshot) -> "Group":
        order = sorted(range(len(snap.members)), key=lambda i: snap.members[i].id)
        ids = [snap.members[i].id for i in order]
        rank = np.empty(len(order), dtype=np.int32)
        rank[order] = np.arange(len(order), dtype=np.int32)
        by_sub: dict[tuple[str, ...], list[int]] = {}  # members share subscriptions: work per distinct one
        for c, i in enumerate(order):
            by_sub.setdefault(snap.members[i].subscription, []).append(c)
        subscribed = set().union(*by_sub) & snap.topics.keys() if by_sub else set()
        topics = sorted(subscribed)
        tnum = {t: j for j, t in enumerate(topics)}
        sizes = np.array([snap.topics[t].partitions for t in topics], dtype=np.int64)
        offsets = np.zeros(len(topics) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        P = int(offsets[-1])
        topic_of = np.repeat(np.arange(len(topics), dtype=np.int32), sizes)
        part_of = np.arange(P, dtype=np.int64) - offsets[:-1][topic_of]
        sub_topics = {sub: sorted({tnum[t] for t in sub if t in tnum}) for sub in by_sub}
        subs = [sub_topics[snap.members[i].subscription] for i in order]  # shared, read-only lists
        elig_l: list[list[np.ndarray]] = [[] for _ in topics]
        for sub, cs in by_sub.items():
            arr = np.array(cs, dtype=np.int32)
            for t in sub_topics[sub]:
                elig_l[t].append(arr)
        elig = [np.sort(np.concatenate(e)) if e else np.zeros(0, dtype=np.int32) for e in elig_l]
        prev = np.full(P, -1, dtype=np.int32)
        if P and snap.members:
            owners = previous_owners(snap).owner
            for t, j in tnum.items():
                o = owners[t]
                seg = prev[offsets[j]:offsets[j + 1]]
                has = o >= 0
                seg[has] = rank[o[has]]
        return Group(ids=ids, snap_index=np.array(order, dtype=np.int32), rank=rank, topics=topics,
                      offsets=offsets, topic_of=topic_of, part_of=part_of, subs=subs, elig=elig, prev=prev,
                      racks=_rack_info(snap, order, topics, P))

    def arrays(self, snap: ConsumerSnapshot, owner: np.ndarray) -> ArrayAssignment:
        """The assignment as owner arrays per topic (snapshot member indexes), without a Python step per
        (member, topic) pair; it reads as member id -> topic -> partitions."""
        if self.P and int(owner.min()) < 0:
            raise SolverFaultError(f"sticky: {int((owner < 0).sum())} partition(s) left unassigned (a bug)")
        mapped = self.snap_index[owner] if self.P else np.zeros(0, dtype=np.int32)
        return ArrayAssignment(snap, {t: mapped[self.offsets[j]:self.offsets[j + 1]]
                                      for j, t in enumerate(self.topics)})


def _rack_info(snap: ConsumerSnapshot, order: list[int], topics: list[str], P: int) -> _Racks:
    # Kafka ignores an empty client.rack
    racks_of_members = [snap.members[i].rack or None for i in order]
    rack_ids: dict[str, int] = {}
    member_rack = np.array([rack_ids.setdefault(r, len(rack_ids)) if r is not None else -1
                            for r in racks_of_members], dtype=np.int32)
    set_ids: dict[frozenset, int] = {}
    part_set = np.zeros(P, dtype=np.int32)
    empty: frozenset = frozenset()
    pos = 0
    for t in topics:
        topic = snap.topics[t]
        if topic.racks is None:
            part_set[pos:pos + topic.partitions] = set_ids.setdefault(empty, len(set_ids))
        else:
            part_set[pos:pos + topic.partitions] = [set_ids.setdefault(s, len(set_ids)) for s in topic.racks]
        pos += topic.partitions
    sets = list(set_ids)
    match = np.zeros((max(len(sets), 1), max(len(rack_ids), 1)), dtype=bool)
    set_racks = []
    for s_id, s in enumerate(sets):
        inside = frozenset(rack_ids[r] for r in s if r in rack_ids)
        set_racks.append(inside)
        for r in inside:
            match[s_id, r] = True
    per_rack = np.bincount(member_rack[member_rack >= 0], minlength=len(rack_ids))
    set_members = np.array([int(sum(per_rack[r] for r in inside)) for inside in set_racks] or [0],
                           dtype=np.int64)
    active = _use_racks(snap, set(rack_ids), sets)
    return _Racks(active=active, member_rack=member_rack, part_set=part_set, match=match,
                  set_racks=set_racks, set_members=set_members)


def _use_racks(snap: ConsumerSnapshot, member_racks: set[str], part_sets: list[frozenset]) -> bool:
    """Kafka's ``useRackAwareAssignment``, under the snapshot's ``rack_aware`` switch.

    ``config.rack_aware = true`` plays Kafka's ``preferRackAwareLogic``: racks are
    used even when every partition has a replica on every rack.
    """
    if snap.config.rack_aware is False or not member_racks:
        return False
    every = frozenset().union(*part_sets) if part_sets else frozenset()
    if member_racks.isdisjoint(every):
        return False
    if snap.config.rack_aware is True:
        return True
    return snap.rack_aware and not all(s == every for s in part_sets)


# --------------------------------------------------------------------------- Java's HashMap order

def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units, 32-bit wrap-around), as an unsigned int."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h


def java_hash_order(ids: list[str], arrival: np.ndarray) -> np.ndarray:
    """The order in which a ``java.util.HashMap`` filled by ``put`` iterates the keys ``ids``.

    The table has 16 buckets, doubled while more than 3/4 full; a key's bucket is its
    spread hash (``h ^ h >>> 16``) masked to the table; keys sharing a bucket come in
    the order they were put, ``arrival`` (smaller first). Kafka's sticky assignor
    iterates its members so, which decides who may keep ``maxQuota`` partitions.

    >>> ids = ["consumer1", "consumer2", "consumer3"]
    >>> [ids[i] for i in java_hash_order(ids, np.arange(3))]
    ['consumer3', 'consumer2', 'consumer1']
    """
    n = len(ids)
    cap = 16
    while n > cap * 3 // 4:
        cap *= 2
    buckets = np.empty(n, dtype=np.int64)
    for i, mid in enumerate(ids):
        h = java_string_hash(mid)
        buckets[i] = (h ^ (h >> 16)) & (cap - 1)
    return np.lexsort((np.asarray(arrival), buckets))
