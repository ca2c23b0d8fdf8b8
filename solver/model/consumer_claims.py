"""KIP-341's previous owners of a consumer group: whose claim on each partition wins (:func:`previous_owners`).

The front door resolves them once per solve (:func:`remembered_claims`); the
assignors, the check and the cooperative split read them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from .consumer import ConsumerSnapshot
from .consumer_members import FlatClaims

__all__ = ["PreviousOwners", "previous_owners", "remembered_claims"]


@dataclass(frozen=True, slots=True, eq=False)
class PreviousOwners:
    """The valid previous owner of every existing partition, per KIP-341.

    ``owner[topic]`` is an ``int32`` array of length ``partitions`` holding the
    index (into ``snapshot.members``) of the member whose claim wins, or ``-1``
    where nobody's does (internal arrays only; the public API speaks ``None``).
    ``claims[topic]`` lists every (member index, partitions) claim on existing
    partitions, losing ones included: the cooperative protocol needs them.
    """

    owner: Mapping[str, np.ndarray]
    claims: Mapping[str, tuple[tuple[int, np.ndarray], ...]]
    all: np.ndarray  # every topic's owners end to end, snapshot order (``owner``'s arrays view it)
    # every owned partition (its position in ``all``) and its owner, by owner, then position, when the claims
    # came that way (each member's owned lists in snapshot order, sorted) and nobody lost one: no sort needed
    by_member: tuple[np.ndarray, np.ndarray] | None = None

    def of(self, topic: str, partition: int) -> int | None:
        arr = self.owner.get(topic)
        if arr is None or not 0 <= partition < len(arr):
            return None
        o = int(arr[partition])
        return None if o < 0 else o


_MEMO: ContextVar[list | None] = ContextVar("stickyflow_previous_owners", default=None)


@contextmanager
def remembered_claims(snap: ConsumerSnapshot):
    """Within this block, :func:`previous_owners` of ``snap`` is resolved once and reused.

    The front door solves, checks and measures one snapshot, and each step needs
    the claims; a snapshot is read-only, so within one call they cannot change.
    """
    token = _MEMO.set([snap, None])
    try:
        yield
    finally:
        _MEMO.reset(token)


def previous_owners(snap: ConsumerSnapshot) -> PreviousOwners:
    """Resolve every claim of ``snap`` (KIP-341): the higher generation wins, equal generations: nobody.

    Stale claims (deleted topics, partitions beyond the count) are dropped. A
    claim on a topic the member no longer subscribes to still counts: that
    member is the valid previous owner, and losing the partition is a move.

    >>> from stickyflow.model.consumer import parse_consumer
    >>> s = parse_consumer({"format": "stickyflow.snapshot/1", "kind": "consumer",
    ...     "topics": {"t": {"partitions": 2}},
    ...     "members": [{"id": "a", "subscription": ["t"], "generation": 2, "owned": {"t": [0, 1]}},
    ...                 {"id": "b", "subscription": ["t"], "generation": 3, "owned": {"t": [1, 7]}}]})
    >>> previous_owners(s).owner["t"].tolist()
    [0, 1]
    """
    memo = _MEMO.get()
    if memo is not None and memo[0] is snap:
        if memo[1] is None:
            memo[1] = _resolve_claims(snap)
        return memo[1]
    return _resolve_claims(snap)


def _resolve_claims(snap: ConsumerSnapshot) -> PreviousOwners:
    # One pass over flat arrays of every (member, topic, partition) claim, so the cost grows with the
    # claims, not with a Python step per (member, topic): a million partitions owned one per topic
    # and member (Kafka's round-robin layout) resolve in a fraction of a second.
    names = list(snap.topics)
    tindex = {t: j for j, t in enumerate(names)}
    sizes = np.fromiter((t.partitions for t in snap.topics.values()), dtype=np.int64, count=len(names))
    offsets = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    total = int(offsets[-1])
    owner_all = np.full(total, -1, dtype=np.int32)
    members = snap.members
    claims = snap._memo.get("claims")
    if claims is None:
        claims = snap._memo["claims"] = FlatClaims.of(members)
    per_member, lens, flat = claims.per_member, claims.lens, claims.parts
    flat_claims = by_member = None
    if len(lens):
        lookup = defaultdict(lambda: -1, tindex)  # a deleted topic: -1
        claim_topic = np.fromiter(map(lookup.__getitem__, claims.topics), dtype=np.int64, count=len(lens))
        gen_of = snap._generations()
        e_topic = np.repeat(claim_topic, lens)
        e_member = np.repeat(np.repeat(np.arange(len(members), dtype=np.int64), per_member), lens)
        if not len(flat) or int(claim_topic.min()) >= 0 and int(flat.min()) >= 0 and int(flat.max()) < int(sizes.min()):
            ok = None  # every claim names a topic and a partition below the smallest count: none is stale
        else:
            ok = (flat >= 0) & (flat < np.append(sizes, 0)[e_topic])  # a deleted topic (-1) reads the 0 appended
        if ok is None or ok.all():  # no stale claim (the common case): no gathers
            gid = offsets[e_topic] + flat
        else:
            gid = offsets[e_topic[ok]] + flat[ok]
            e_member = e_member[ok]
        owner_all[gid] = e_member  # each claim written where it points; as many owners as claims: none claimed twice
        if len(gid) and int(np.count_nonzero(owner_all >= 0)) == len(gid):  # then every claim wins
            if bool(np.all((gid[1:] > gid[:-1]) | (e_member[1:] != e_member[:-1]))):
                by_member = (gid, e_member)  # members come in order; within one, positions ascend
        else:
            owner_all[:] = -1
            e_gen = gen_of[e_member]
            # by partition, then generation (highest first), then member: the head of each run wins,
            # unless the next entry is another member's claim of the same generation (a tie: nobody)
            order = np.lexsort((e_member, -e_gen, gid))
            gid, e_member, e_gen = gid[order], e_member[order], e_gen[order]
            fresh = np.ones(len(gid), dtype=bool)  # drop a member listing the same partition twice
            fresh[1:] = (gid[1:] != gid[:-1]) | (e_member[1:] != e_member[:-1])
            gid, e_member, e_gen = gid[fresh], e_member[fresh], e_gen[fresh]
            head = np.ones(len(gid), dtype=bool)
            head[1:] = gid[1:] != gid[:-1]
            tie = np.zeros(len(gid), dtype=bool)
            tie[:-1] = ~head[1:] & (e_gen[1:] == e_gen[:-1])
            win = head & ~tie
            owner_all[gid[win]] = e_member[win]
        gid.flags.writeable = e_member.flags.writeable = False
        flat_claims = (gid, e_member)
    owner_all.flags.writeable = False  # shared by every step of one front-door call: read-only
    owner = {t: owner_all[offsets[j]:offsets[j + 1]] for j, t in enumerate(names)}
    return PreviousOwners(owner=MappingProxyType(owner), claims=_Claims(names, offsets, flat_claims), all=owner_all,
                          by_member=by_member)


class _Claims(Mapping):
    """``PreviousOwners.claims``, built on first use (only the cooperative protocol needs it)."""

    __slots__ = ("_names", "_offsets", "_flat", "_data")

    def __init__(self, names: list[str], offsets: np.ndarray, flat: tuple[np.ndarray, np.ndarray] | None):
        self._names, self._offsets, self._flat = names, offsets, flat
        self._data: dict[str, tuple[tuple[int, np.ndarray], ...]] | None = None

    def _get(self) -> dict[str, tuple[tuple[int, np.ndarray], ...]]:
        if self._data is None:
            data: dict[str, tuple[tuple[int, np.ndarray], ...]] = {}
            if self._flat is not None and len(self._flat[0]):
                gid, member = self._flat
                order = np.lexsort((gid, member))  # by member, then partition (topic-major ids)
                gid, member = gid[order], member[order]
                topic = np.searchsorted(self._offsets, gid, side="right") - 1
                order = np.argsort(topic, kind="stable")  # by topic, members ascending within
                gid, member, topic = gid[order], member[order], topic[order]
                cut = np.flatnonzero(np.r_[True, (topic[1:] != topic[:-1]) | (member[1:] != member[:-1]), True])
                parts = gid - self._offsets[topic]
                out: dict[int, list[tuple[int, np.ndarray]]] = {}
                for a, b in zip(cut[:-1].tolist(), cut[1:].tolist()):
                    out.setdefault(int(topic[a]), []).append((int(member[a]), parts[a:b]))
                data = {self._names[j]: tuple(c) for j, c in sorted(out.items())}
            self._data = data
        return self._data

    def flat_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """Every claim on an existing partition as two arrays: the partition's id across all topics
        (snapshot order, partitions numbered from each topic's offset) and the claiming member."""
        if self._flat is None:
            z = np.zeros(0, dtype=np.int64)
            return z, z
        return self._flat

    def __getitem__(self, key: str) -> tuple[tuple[int, np.ndarray], ...]:
        return self._get()[key]

    def __iter__(self):
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())

    def __repr__(self) -> str:
        return f"claims({self._get()!r})"
