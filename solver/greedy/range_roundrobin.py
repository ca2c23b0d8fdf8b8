"""Kafka's two stateless consumer assignors, ``range`` and ``roundrobin``, as baselines.

Both order members as Kafka's ``MemberInfo`` does (KIP-345): static members
first, by ``group.instance.id``, then the others by member id. Unlike
kafka-python's round-robin, ours is correct with mixed subscriptions: each
partition goes to the next member, in circular order, that subscribes to its topic.

``range`` is the rack-aware range assignor of Kafka 3.5+ (KIP-881). Per topic,
with ``C`` subscribers in member order and ``P`` partitions, each member may
take ``P // C`` partitions and the first ``P % C`` members to pass that count
one more (the *quota*). Without racks the quotas are filled in member order
with consecutive partitions, the classic layout. When racks matter for some
topic (below), partitions are placed in three steps before that fill:

1. topics read by exactly the same members and with the same partition count
   are *co-partitioned*: partition ``p`` of all of them goes, together, to the
   first member (in member order) with quota left whose rack holds a replica of
   ``p`` in every one of those topics;
2. every other topic that needs racks gives each member, in member order, the
   lowest-numbered free partitions with a replica on its rack, up to its quota;
3. the fill: each member, in order, takes the lowest-numbered free partitions
   up to its quota, wherever they are.

A member without a rack matches every partition. A topic *needs racks* when its
members' racks meet its replicas' racks and not every partition has a replica
on every one of those racks (``config.rack_aware = true`` drops the second test,
as Kafka's ``preferRackAwareLogic`` does; ``false`` turns racks off).
Co-partitioning thus wins over rack alignment, and balance per topic over both.

>>> import stickyflow
>>> snap = stickyflow.parse_snapshot({"format": "stickyflow.snapshot/1", "kind": "consumer",
...     "topics": {"t": {"partitions": 4, "racks": [["a"], ["b"], ["a"], ["b"]]}},
...     "members": [{"id": "C0", "subscription": ["t"], "rack": "a"},
...                 {"id": "C1", "subscription": ["t"], "rack": "b"}]})
>>> stickyflow.assign(snap, "range").to_json()["assignment"]
{'C0': {'t': [0, 2]}, 'C1': {'t': [1, 3]}}
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from ..check.answer import ArrayAssignment
from ..model.consumer import ConsumerSnapshot, Member
from ..registry import SolveOptions
from ..result import Decision

__all__ = ["assign_range", "assign_roundrobin", "kafka_member_order", "range_needs_racks", "range_uses_racks"]


def kafka_member_order(members: list[Member] | tuple[Member, ...]) -> list[Member]:
    """Members in the order Kafka's range and round-robin assignors use (``MemberInfo.compareTo``).

    Static members (with a ``group.instance.id``) come first, by instance id; then dynamic ones by member id.
    """
    return sorted(members, key=lambda m: (m.instance_id is None, m.instance_id or "", m.id))


def range_needs_racks(member_racks: Iterable[str], partition_racks: Sequence[frozenset[str]],
                      rack_aware: bool | None = None) -> bool:
    """Whether rack-aware range handles a topic with racks: Kafka's ``useRackAwareAssignment``.

    ``member_racks`` are the racks of the topic's subscribers, ``partition_racks``
    the replica racks of each of its partitions. Racks help only when the members'
    racks meet the replicas' racks and the partitions do not all sit on the same
    racks; ``rack_aware=True`` (the snapshot's ``config.rack_aware``) keeps only the
    first test, ``False`` answers no.

    >>> range_needs_racks({"a", "b"}, [frozenset("ab"), frozenset("ab")])
    False
    >>> range_needs_racks({"a", "b"}, [frozenset("ab"), frozenset("ab")], rack_aware=True)
    True
    >>> range_needs_racks({"a", "d"}, [frozenset("a"), frozenset("b")])
    True
    """
    consumers = set(member_racks)
    if rack_aware is False or not consumers:
        return False
    every = frozenset().union(*partition_racks) if partition_racks else frozenset()
    if consumers.isdisjoint(every):
        return False
    if rack_aware is True:
        return True
    return not all(s == every for s in partition_racks)


class _TopicRange:
    """One topic's range state: its subscribers in Kafka order, their quotas and who holds what so far."""

    __slots__ = ("name", "P", "members", "racks", "part_racks", "base", "extra", "count", "owner", "free",
                 "needs_racks")

    def __init__(self, name: str, P: int, members: list[int], racks: list[str | None],
                 part_racks: tuple[frozenset[str], ...] | None, rack_aware: bool | None):
        C = len(members)
        self.name = name
        self.P = P
        self.members = members  # member indexes in the snapshot, Kafka order
        self.racks = racks  # each one's rack, None when it has none
        self.base, self.extra = divmod(P, C)
        self.count = [0] * C
        self.owner = np.full(P, -1, dtype=np.int32)  # position in ``members``
        self.free = P
        has_racks = any(r is not None for r in racks)
        # like Kafka, replica racks are looked at only when some subscriber has a rack
        self.part_racks = (part_racks or (frozenset(),) * P) if has_racks else None
        self.needs_racks = has_racks and range_needs_racks(
            (r for r in racks if r is not None), self.part_racks, rack_aware)

    def cap(self, i: int) -> int:
        """How many more partitions member ``i`` may take (its quota less what it holds)."""
        return max(0, self.base + (1 if self.extra > 0 else 0) - self.count[i])

    def give(self, i: int, parts: list[int] | np.ndarray) -> None:
        self.owner[parts] = i
        self.count[i] += len(parts)
        self.free -= len(parts)
        if self.count[i] > self.base:  # it took one of the extra places
            self.extra -= 1

    def match_racks(self) -> None:
        """Step 2: each member, in order, takes the free partitions on its rack, up to its quota."""
        owner = self.owner
        # the partitions on each rack, ascending, from the few distinct replica-rack sets
        set_ids: dict[frozenset[str], int] = {}
        part_set = np.fromiter((set_ids.setdefault(x, len(set_ids)) for x in self.part_racks), dtype=np.int32,
                               count=self.P)
        sets = list(set_ids)
        on_rack: dict[str | None, np.ndarray] = {None: np.arange(self.P)}  # no rack: everything matches
        next_of: dict[str | None, int] = {}  # how far each rack's list is read: what lies before is taken
        for i, r in enumerate(self.racks):
            if not self.free:
                break
            need = self.cap(i)
            if not need:
                continue
            cand = on_rack.get(r)
            if cand is None:
                cand = on_rack[r] = np.flatnonzero(np.array([r in x for x in sets], dtype=bool)[part_set])
            j = next_of.get(r, 0)
            took = []
            while need and j < len(cand):
                window = cand[j:j + 2 * need + 64]
                free = window[owner[window] < 0]
                if len(free) >= need:
                    free = free[:need]
                    j += int(np.searchsorted(window, free[-1])) + 1
                else:
                    j += len(window)
                took.append(free)
                need -= len(free)
            next_of[r] = j
            if took and (picked := np.concatenate(took)).size:
                self.give(i, picked)

    def fill(self) -> None:
        """Step 3 (the whole of range without racks): members in order take the lowest free partitions."""
        if not self.free:
            return
        free = np.flatnonzero(self.owner < 0)
        pos = 0
        for i in range(len(self.members)):
            if pos >= len(free):
                break
            k = self.cap(i)
            if k:
                self.give(i, free[pos:pos + k])
                pos += k


def _co_partition(states: list[_TopicRange]) -> None:
    """Step 1 for topics with the same members and partition count: partition p of all goes to one member.

    The topics move in lockstep (same quotas, same counts), so one bookkeeping serves them all.
    """
    first = states[0]
    P = first.P
    base = first.base
    extra = first.extra
    count = [0] * len(first.members)
    owner = [-1] * P
    # the racks holding a replica of partition p in every one of the topics
    distinct = list(dict.fromkeys(s.part_racks for s in states))
    common = distinct[0] if len(distinct) == 1 else [frozenset.intersection(*x) for x in zip(*distinct)]
    # members by rack, in member order; a pointer per rack skips members whose quota is spent for good
    # (a quota only shrinks: counts grow and the extra places run out)
    queues: dict[str | None, list[int]] = {}
    for i, r in enumerate(first.racks):
        queues.setdefault(r, []).append(i)
    head = dict.fromkeys(queues, 0)

    def first_open(r: str | None) -> int | None:
        q = queues.get(r)
        if q is None:
            return None
        j = head[r]
        quota = base + (1 if extra > 0 else 0)
        while j < len(q) and count[q[j]] >= quota:
            j += 1
        head[r] = j
        return q[j] if j < len(q) else None

    for p in range(P):
        best = first_open(None)
        for r in common[p]:
            i = first_open(r)
            if i is not None and (best is None or i < best):
                best = i
        if best is None:
            if all(first_open(r) is None for r in queues):
                break  # nobody has quota left
            continue
        owner[p] = best
        count[best] += 1
        if count[best] > base:  # it took one of the extra places
            extra -= 1
    placed = np.array(owner, dtype=np.int32)
    n = int(np.count_nonzero(placed >= 0))
    for s in states:
        s.owner[:] = placed
        s.count = list(count)
        s.extra = extra
        s.free = P - n


def _range_states(snap: ConsumerSnapshot) -> list[_TopicRange]:
    """A range state for every existing topic that somebody reads, members in Kafka's order."""
    order = kafka_member_order(list(snap.members))
    index = snap.member_index()
    ranks = [index[m.id] for m in order]
    racks = [m.rack or None for m in order]  # Kafka ignores an empty client.rack
    position = {i: k for k, i in enumerate(ranks)}
    rack_aware = snap.config.rack_aware
    states: list[_TopicRange] = []
    for t, readers in snap.subscribers().items():
        if readers:
            who = sorted((position[i] for i in readers))
            states.append(_TopicRange(t, snap.topics[t].partitions, [ranks[k] for k in who],
                                      [racks[k] for k in who], snap.topics[t].racks, rack_aware))
    return states


def range_uses_racks(snap: ConsumerSnapshot) -> bool:
    """Whether ``range`` places any partition by rack for ``snap`` (some topic needs racks, see above).

    When it does not, the layout is the classic one of every range assignor before KIP-881.
    """
    return any(s.needs_racks for s in _range_states(snap))


def assign_range(snap: ConsumerSnapshot, options: SolveOptions | None = None) -> Decision:
    """Kafka's RangeAssignor (3.5+, rack-aware per KIP-881): per topic, each member's share in member order.

    See the module docstring for the three steps when racks matter.
    """
    states = _range_states(snap)
    uses_racks = any(s.needs_racks for s in states)
    if uses_racks:
        groups: dict[tuple, list[_TopicRange]] = {}
        for s in states:
            # Kafka groups by subscribers, then by the number of partitions it knows racks for
            groups.setdefault((tuple(s.members), s.P if s.part_racks is not None else 0), []).append(s)
        for (_, n), group in groups.items():
            if len(group) > 1:
                if n:
                    _co_partition(group)
            elif group[0].needs_racks:
                group[0].match_racks()
    owners = {}
    for s in states:
        if s.free == s.P:  # untouched by racks: the classic ranges, in one step
            C = len(s.members)
            sizes = np.full(C, s.base, dtype=np.int64)
            sizes[:s.extra] += 1
            s.owner = np.repeat(np.arange(C, dtype=np.int32), sizes)
        else:
            s.fill()
        owners[s.name] = np.asarray(s.members, dtype=np.int32)[s.owner]
    return Decision(assignment=ArrayAssignment(snap, owners), method="range", status="heuristic",
                    extra={"rack_aware": uses_racks})


def assign_roundrobin(snap: ConsumerSnapshot, options: SolveOptions | None = None) -> Decision:
    """Kafka's RoundRobinAssignor: partitions sorted by (topic, number), dealt to members in circular order."""
    members = kafka_member_order(list(snap.members))
    n = len(members)
    index = snap.member_index()
    rank = np.fromiter((index[m.id] for m in members), dtype=np.int32, count=n)  # dealing position -> member
    subs = [frozenset(m.subscription) for m in members]
    readers = snap.subscribers()
    owners: dict[str, np.ndarray] = {}
    pos = 0
    for t in sorted(snap.topics):
        if not readers[t]:
            continue
        P = snap.topics[t].partitions
        if len(readers[t]) == n:  # everybody subscribes: no skipping, deal in one numpy step
            owners[t] = rank[(pos + np.arange(P)) % n]
            pos = (pos + P) % n
            continue
        dealt = np.empty(P, dtype=np.int32)
        for p in range(P):
            while t not in subs[pos]:
                pos = (pos + 1) % n
            dealt[p] = pos
            pos = (pos + 1) % n
        owners[t] = rank[dealt]
    return Decision(assignment=ArrayAssignment(snap, owners), method="roundrobin", status="heuristic")
