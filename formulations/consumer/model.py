"""The consumer model's data: the snapshot compressed into subscription classes, cells, topic classes and
the previous owners, as the flow (:mod:`.flow`) and its shortcuts (:mod:`.closed_form`, :mod:`.warm_start`)
read it.

Members with the same subscription (over existing topics) form one *class*; members of one class on one rack
(when racks count) one *cell*. :func:`class_graph` is the topic -> class graph, :func:`class_reads` the class x
topic matrix, :func:`flat_owners` every assignable partition's valid previous owner, topic-major.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stickyflow.check.answer import ArrayAssignment
from stickyflow.model.arrays import nonzero_pairs
from stickyflow.model.consumer import ConsumerSnapshot
from stickyflow.model.consumer_claims import PreviousOwners, previous_owners

__all__ = ["ConsumerData", "prepare", "class_graph", "class_reads", "flat_owners", "as_assignment", "orphaned"]


# --------------------------------------------------------------------------- data

@dataclass(slots=True)
class ConsumerData:
    """The problem compressed into groups, pools, classes and cells (numpy arrays where sizes grow)."""

    snap: ConsumerSnapshot
    prev: PreviousOwners
    topics: list[str]                 # assignable topics
    read: np.ndarray                  # per snapshot topic: does anyone subscribe to it
    member_class: np.ndarray          # member -> class id (-1: subscribes to nothing assignable)
    n_classes: int
    member_cell: np.ndarray           # member -> cell id (-1 as above)
    cells: list[tuple[int, str | None]]  # (class id, rack or None)
    rack_aware: bool
    tc: int
    noc: int
    class_reads: np.ndarray | None = None  # member class x topic, built on first use (class_reads)

    @property
    def every_topic(self) -> bool:
        """Whether every topic of the snapshot is assignable (someone reads it): then the assignable topics'
        arrays end to end are the snapshot's own, as the previous owners hold them (``prev.all``)."""
        return len(self.topics) == len(self.snap.topics)


def prepare(snap: ConsumerSnapshot) -> ConsumerData:
    read = snap.has_readers()
    topics = [t for t, r in zip(snap.topics, read.tolist()) if r]
    rack_aware = snap.rack_aware
    group, _ = snap.subscription_groups()
    group_class = _subscription_classes(snap)
    n_classes = int(group_class.max()) + 1 if len(group_class) else 0
    member_class = group_class[group]
    cell_id: dict[tuple[int, str | None], int] = {}
    if rack_aware:
        member_cell = np.full(len(snap.members), -1, dtype=np.int64)
        racks = snap._column("rack")
        for i in np.flatnonzero(member_class >= 0).tolist():
            member_cell[i] = cell_id.setdefault((int(member_class[i]), racks[i]), len(cell_id))
    else:
        member_cell = member_class.copy()
        cell_id = {(c, None): c for c in range(n_classes)}
    return ConsumerData(snap=snap, prev=previous_owners(snap), topics=topics, read=read,
                 member_class=member_class, n_classes=n_classes, member_cell=member_cell,
                 cells=list(cell_id), rack_aware=rack_aware,
                 tc=snap.config.traffic_cost, noc=snap.config.non_overlap_cost)


def _subscription_classes(snap: ConsumerSnapshot) -> np.ndarray:
    """Each distinct subscription's class: the distinct sets of existing topics that subscriptions read,
    numbered in order of first appearance; -1 for a subscription that reads none (deleted topics only).

    Where the subscription x topic matrix is small, its rows (packed to bits, each viewed as one byte string)
    are classed by one ``np.unique``; else one frozenset per distinct subscription.
    """
    flat, glen = snap._group_topics()
    G, T = len(glen), len(snap.topics)
    if G == 0 or T == 0:
        return np.full(G, -1, dtype=np.int64)
    if G == 1:
        return np.array([0 if len(flat) else -1], dtype=np.int64)
    if G * T <= _DENSE_CLASSES:
        packed = np.packbits(snap.subscription_matrix(), axis=1)  # each row as bytes: one sortable scalar
        if packed.shape[1] <= 8:  # up to 64 topics: one 64-bit integer per row (sorts in a third of the time)
            rows = np.zeros((G, 8), dtype=np.uint8)
            rows[:, :packed.shape[1]] = packed
            rows = rows.view(np.uint64).ravel()
        else:
            rows = np.ascontiguousarray(packed).view(np.dtype((np.void, packed.shape[1]))).ravel()
        _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
        empty = glen[first] == 0  # the class of the subscriptions that read nothing
        order = np.argsort(np.where(empty, G, first), kind="stable")  # by first appearance, the empty one last
        rank = np.empty(len(first), dtype=np.int64)
        rank[order] = np.arange(len(first))
        rank[empty] = -1
        return rank[inverse.reshape(-1)]
    _, distinct = snap.subscription_groups()
    class_id: dict[frozenset[str], int] = {}
    group_class = np.full(G, -1, dtype=np.int64)
    for g, sub in enumerate(distinct):  # groups come in order of first appearance
        s = frozenset(t for t in sub if t in snap.topics)
        if s:
            group_class[g] = class_id.setdefault(s, len(class_id))
    return group_class


_DENSE_CLASSES = 1 << 24  # distinct subscriptions x topics up to which classes come from the boolean matrix


def class_graph(d: ConsumerData) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(partitions per topic, then topic -> class arcs as tails and heads, members per class)."""
    n_classes = d.n_classes
    size = np.bincount(d.member_class[d.member_class >= 0], minlength=n_classes)
    P = np.array([d.snap.topics[t].partitions for t in d.topics], dtype=np.int64)
    head, tail = nonzero_pairs(class_reads(d) & (P > 0)[None, :])  # by class, then topic in snapshot order
    return P, tail, head, size


def class_reads(d: ConsumerData) -> np.ndarray:
    """Member class x assignable topic (``d.topics``): does the class read it. The rows of the distinct
    subscriptions of its members (no step per member or per class and topic); computed once per solve."""
    if d.class_reads is not None:
        return d.class_reads
    group, _ = d.snap.subscription_groups()
    topic, glen = d.snap._group_topics()  # each distinct subscription's topics (snapshot positions)
    group_class = np.full(len(glen), -1, dtype=np.int64)
    group_class[group] = d.member_class  # the members of one subscription share its class
    class_reads = np.zeros((d.n_classes, len(d.topics)), dtype=bool)
    if len(glen) * len(d.snap.topics) <= _DENSE_CLASSES:  # the subscription matrix, as the classes read it
        # a class is a set of existing topics, so the rows of the subscriptions of one class are equal: one
        # row copy per subscription (the assignable topics are the columns that anyone reads)
        matrix = d.snap.subscription_matrix()
        rows = np.flatnonzero(group_class >= 0)
        class_reads[group_class[rows]] = matrix[rows] if d.every_topic else matrix[np.ix_(rows, d.read)]
    else:
        column = np.full(len(d.snap.topics), -1, dtype=np.int64)  # snapshot position -> position in d.topics
        pos = {t: j for j, t in enumerate(d.snap.topics)}
        column[np.fromiter(map(pos.__getitem__, d.topics), dtype=np.int64, count=len(d.topics))] = \
            np.arange(len(d.topics))
        cls, col = np.repeat(group_class, glen), column[topic]
        ok = (cls >= 0) & (col >= 0)
        class_reads[cls[ok], col[ok]] = True
    class_reads.flags.writeable = False
    d.class_reads = class_reads
    return class_reads

def flat_owners(d: ConsumerData) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every partition of an assignable topic numbered topic-major: partitions per topic, the topics'
    offsets, and each partition's valid previous owner (-1: none)."""
    sizes = np.fromiter((d.snap.topics[t].partitions for t in d.topics), dtype=np.int64, count=len(d.topics))
    offsets = np.zeros(len(d.topics) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    if d.every_topic:  # the previous owners' one array
        owner = d.prev.all.astype(np.int64)
    else:
        owner = np.concatenate([d.prev.owner[t] for t in d.topics]).astype(np.int64) if d.topics else \
            np.zeros(0, dtype=np.int64)
    return sizes, offsets, owner


def as_assignment(d: ConsumerData, new_owner: np.ndarray, offsets: np.ndarray) -> ArrayAssignment:
    """A topic-major owner array (see :func:`flat_owners`) as the assignment."""
    return ArrayAssignment.of_flat(d.snap, d.topics, new_owner, offsets)


def orphaned(d: ConsumerData) -> int:
    """Owned partitions of topics nobody subscribes to any more: moves every assignment must make."""
    return sum(int(np.count_nonzero(d.prev.owner[t] >= 0)) for t, r in zip(d.snap.topics, d.read.tolist()) if not r)
