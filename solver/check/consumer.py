"""Checking and measuring consumer assignments; the cooperative (KIP-429) step.

:func:`inspect_consumer` runs the validity check (every violation, not just
the first) and computes the metrics in one numpy pass per topic, so it stays
cheap at a million partitions. :func:`cooperative_split` turns a target
assignment into this round's assignment plus the revocations KIP-429 needs.
"""

from __future__ import annotations

import gc
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import chain, islice
from types import MappingProxyType
from typing import Any, Sequence

import numpy as np

from ..model.consumer import ConsumerSnapshot
from ..model.consumer_claims import PreviousOwners, previous_owners
from ..model.consumer_members import LazyMapping, first_seen_ids
from .load import load_metrics, loads_known
from ..result import Violation, _lists

__all__ = [
    "ConsumerAssignment",
    "ArrayAssignment",
    "AnswerView",
    "as_array_assignment",
    "normalize_consumer_assignment",
    "inspect_consumer",
    "validate_consumer",
    "consumer_metrics",
    "cooperative_split",
    "CooperativeStep",
]

ConsumerAssignment = Mapping[str, Mapping[str, Sequence[int]]]


class ArrayAssignment(Mapping):
    """A consumer assignment held as one owner array per topic, for assignors that think in arrays.

    ``owners[t][p]`` is the index (into ``snapshot.members``) of the member
    given partition ``p`` of topic ``t``, or -1; topics left out are unassigned.
    It reads as the usual ``member id -> topic -> partitions`` mapping (built on
    first access), while the front door checks, measures and normalizes it
    from the arrays, without a Python step per (member, topic) pair: at a
    million partitions spread over every topic that is what decides the speed.
    The arrays are copied once and must have one entry per partition.

    >>> from stickyflow.model.consumer import parse_consumer
    >>> s = parse_consumer({"format": "stickyflow.snapshot/1", "kind": "consumer",
    ...     "topics": {"t": {"partitions": 3}},
    ...     "members": [{"id": "a", "subscription": ["t"]}, {"id": "b", "subscription": ["t"]}]})
    >>> a = ArrayAssignment(s, {"t": [1, 0, 1]})
    >>> {m: {t: p.tolist() for t, p in d.items()} for m, d in a.items()}
    {'a': {'t': [1]}, 'b': {'t': [0, 2]}}
    """

    __slots__ = ("snapshot", "owners", "_dict", "_all")

    def __init__(self, snapshot: ConsumerSnapshot, owners: Mapping[str, Any]):
        n = len(snapshot.members)
        arrays: dict[str, np.ndarray] = {}
        for t, arr in owners.items():
            topic = snapshot.topics.get(t)
            if topic is None:
                raise ValueError(f"owners: topic {t!r} does not exist")
            a = np.array(arr, dtype=np.int32)
            if a.shape != (topic.partitions,):
                raise ValueError(f"owners[{t!r}]: must hold one owner per partition ({topic.partitions}), not {a.shape}")
            _check_owner_range(a, n, f"owners[{t!r}]")
            arrays[t] = a
        self.snapshot = snapshot
        self.owners = {t: arrays[t] for t in snapshot.topics if t in arrays}  # snapshot order
        self._dict: dict[str, dict[str, np.ndarray]] | None = None
        self._all: tuple[list[str], np.ndarray, np.ndarray] | None = None

    @classmethod
    def of_flat(cls, snapshot: ConsumerSnapshot, topics: Sequence[str], owner: np.ndarray,
                offsets: np.ndarray) -> ArrayAssignment:
        """The assignment of one owner array over ``topics`` end to end (topic ``topics[j]`` is
        ``owner[offsets[j]:offsets[j + 1]]``), as the solvers build it: checked and copied once as a whole,
        and each topic's array a view of the copy. ``topics`` are existing topics in snapshot order.

        >>> from stickyflow.model.consumer import parse_consumer
        >>> s = parse_consumer({"format": "stickyflow.snapshot/1", "kind": "consumer",
        ...     "topics": {"t": {"partitions": 2}, "u": {"partitions": 1}},
        ...     "members": [{"id": "a", "subscription": ["t", "u"]}, {"id": "b", "subscription": ["t", "u"]}]})
        >>> a = ArrayAssignment.of_flat(s, ["t", "u"], np.array([1, 0, 1]), np.array([0, 2, 3]))
        >>> a.owners["u"].tolist(), a.to_tuples()
        ([1], {'a': {'t': (1,)}, 'b': {'t': (0,), 'u': (0,)}})
        """
        n = len(snapshot.members)
        names = list(topics)
        pos = {t: j for j, t in enumerate(snapshot.topics)}
        where = [pos.get(t, -1) for t in names]
        if min(where, default=0) < 0 or any(a >= b for a, b in zip(where, where[1:])):
            raise ValueError("topics: must be existing topics, in snapshot order, each once")
        sizes = np.fromiter((snapshot.topics[t].partitions for t in names), dtype=np.int64, count=len(names))
        offsets = np.asarray(offsets, dtype=np.int64)
        if len(offsets) != len(names) + 1 or offsets[0] != 0 or not np.array_equal(np.diff(offsets), sizes) \
                or len(owner) != offsets[-1]:
            raise ValueError("owner: must hold one owner per partition of each topic, at the given offsets")
        all_ = np.array(owner, dtype=np.int32)
        _check_owner_range(all_, n, "owner")
        all_.flags.writeable = False
        self = cls.__new__(cls)
        self.snapshot = snapshot
        bounds = offsets.tolist()
        self.owners = {t: all_[a:b] for t, a, b in zip(names, bounds, bounds[1:])}
        self._dict = None
        self._all = (names, all_, offsets)
        return self

    def _flat(self) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
        """(topic names, then owner, topic index and partition of every assigned partition), by owner, topic, partition."""
        names = list(self.owners)
        if not names:
            z = np.zeros(0, dtype=np.int64)
            return names, z, z, z
        if self._all is not None:
            _, own, offsets = self._all
            sizes = np.diff(offsets)
        else:
            own = np.concatenate([self.owners[t] for t in names])
            sizes = np.fromiter((len(self.owners[t]) for t in names), dtype=np.int64, count=len(names))
        topic = np.repeat(np.arange(len(names), dtype=np.int32), sizes)
        part = np.arange(len(own), dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        if len(own) and int(own.min()) < 0:  # some partitions unassigned (withheld, or a partial answer)
            keep = own >= 0
            own, topic, part = own[keep], topic[keep], part[keep]
        order = _stable_order(own, len(self.snapshot.members))  # already topic-major, partition-ascending
        return names, own[order], topic[order], part[order]

    def _runs(self, convert):
        """member id -> topic -> ``convert(part, starts, ends)[run]``, every member present, topics in snapshot order."""
        names, own, topic, part = self._flat()
        return _nested(self.snapshot, names, own, topic, part, convert)

    def to_tuples(self) -> dict[str, dict[str, tuple[int, ...]]]:
        """The normalized form (:func:`normalize_consumer_assignment`): sorted tuples, every member present."""
        return self._runs(_run_tuples)

    def _get(self) -> dict[str, dict[str, np.ndarray]]:
        if self._dict is None:
            self._dict = self._runs(
                lambda part, starts, ends: [part[a:b] for a, b in zip(starts.tolist(), ends.tolist())])
        return self._dict

    def __getitem__(self, key: str) -> Mapping[str, np.ndarray]:
        return self._get()[key]

    def __iter__(self):
        return iter(self._get())

    def __len__(self) -> int:
        return len(self.snapshot.members)

    def __repr__(self) -> str:
        return f"ArrayAssignment(topics={len(self.owners)}, members={len(self.snapshot.members)})"


class AnswerView(LazyMapping):
    """A checked :class:`ArrayAssignment` as the result's read-only ``member id -> topic -> partitions``
    mapping (sorted tuples, every member present), built on first look at a value.

    ``assign`` checks and measures the answer from its owner arrays, so the
    nested mapping, one tuple per (member, topic) pair, is only a way of reading
    it: a caller that wants the metrics, or the JSON (written from the arrays,
    :meth:`to_lists`), never pays for it; at 10,000 partitions it is about a
    third of the whole call. Once built it is the same ``mappingproxy`` of
    ``mappingproxy`` of tuples every path returns, and compares equal to any
    mapping of the same content.

    >>> from stickyflow.model.consumer import parse_consumer
    >>> s = parse_consumer({"format": "stickyflow.snapshot/1", "kind": "consumer",
    ...     "topics": {"t": {"partitions": 3}},
    ...     "members": [{"id": "a", "subscription": ["t"]}, {"id": "b", "subscription": ["t"]}]})
    >>> v = AnswerView(ArrayAssignment(s, {"t": [1, 0, 1]}))
    >>> len(v), v["b"]["t"], v == {"a": {"t": (1,)}, "b": {"t": (0, 2)}}
    (2, (0, 2), True)
    """

    __slots__ = ("_arrays", "_map", "__weakref__")

    def __init__(self, arrays: ArrayAssignment):
        self._arrays: ArrayAssignment | None = arrays
        self._map: Mapping[str, Mapping[str, tuple[int, ...]]] | None = None

    def _get(self) -> Mapping[str, Mapping[str, tuple[int, ...]]]:
        built = self._map
        if built is None:
            with _gc_paused():
                built = MappingProxyType({k: MappingProxyType(v) for k, v in self._arrays.to_tuples().items()})
            self._map, self._arrays = built, None  # the arrays (and the snapshot they point to) are let go
        return built

    def to_lists(self) -> dict[str, dict[str, list[int]]]:
        """A plain ``dict`` of ``dict`` of lists (the result JSON's shape), straight from the arrays when the
        mapping was never built."""
        arrays = self._arrays
        if arrays is None:
            return _lists(self._get())
        return arrays._runs(_run_lists)

    def __len__(self) -> int:
        arrays = self._arrays
        return len(arrays.snapshot.members) if arrays is not None else len(self._map)

    def __reduce__(self):  # pickles as plain dicts of tuples (a mappingproxy does not pickle at all)
        return dict, ({k: dict(v) for k, v in self._get().items()},)


def _check_owner_range(owner: np.ndarray, n: int, where: str) -> None:
    """Raise ``ValueError`` naming ``where`` unless every owner is a member index in ``[0, n)`` or -1."""
    if len(owner) and (int(owner.min()) < -1 or int(owner.max()) >= n):
        raise ValueError(f"{where}: owners must be member indexes in [0, {n}) or -1")


def _stable_order(keys: np.ndarray, bound: int) -> np.ndarray:
    """``np.argsort(keys, kind="stable")`` for keys in ``[0, bound)``: below 2**15, as 16-bit keys, which numpy
    sorts by radix in linear time (a tenth of its merge sort of 32-bit keys at a million partitions)."""
    return np.argsort(keys.astype(np.int16) if bound <= 2**15 else keys, kind="stable")


def _nested(snap: ConsumerSnapshot, names: list[str], own: np.ndarray, topic: np.ndarray, part: np.ndarray,
            convert) -> dict[str, dict[str, Any]]:
    """member id -> topic name -> ``convert(...)`` of each (member, topic) run of the sorted arrays.

    ``own``, ``topic`` and ``part`` are sorted by member, then topic, then
    partition; every member of ``snap`` is present (``{}`` when it has nothing).
    """
    out: dict[str, dict[str, Any]] = {i: {} for i in snap._column("id")}
    if not len(own):
        return out
    cut = np.flatnonzero(np.r_[True, (own[1:] != own[:-1]) | (topic[1:] != topic[:-1]), True])
    starts, ends = cut[:-1], cut[1:]
    with _gc_paused():
        pieces = convert(part, starts, ends)
        run_owner = own[starts]
        run_topic = np.array(names, dtype=object)[topic[starts]].tolist()  # names looked up in C
        mcut = np.flatnonzero(np.r_[True, run_owner[1:] != run_owner[:-1], True])
        ids = snap._column("id")
        runs = zip(run_topic, pieces)  # each member takes its next ``count`` runs off one shared iterator
        for m, count in zip(run_owner[mcut[:-1]].tolist(), np.diff(mcut).tolist()):
            out[ids[m]] = dict(islice(runs, count))
    return out


@contextmanager
def _gc_paused():
    """Pause the cycle collector while building many small containers that hold no cycles.

    Each allocation burst of a million tuples would otherwise trigger collections
    that scan every object alive, the snapshot included, again and again.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _run_tuples(part: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> list[tuple[int, ...]]:
    """``tuple(part[s:e])`` for every run, as Python ints, in run order.

    Mostly short runs (a member holding one or two partitions of each of hundreds of
    topics) are zipped column-wise in C, one length at a time, and put back in run order
    by an object array's fancy index; longer ones are sliced. Runs of one partition share
    one tuple per partition number when there are more runs than numbers (10,000 x 1,000:
    10,000 runs, 200 numbers; a tenth of the time to make them and to free them).

    >>> _run_tuples(np.array([5, 1, 2, 0]), np.array([0, 1, 3]), np.array([1, 3, 4]))
    [(5,), (1, 2), (0,)]
    """
    n = len(starts)
    if n < 256 or len(part) >= 4 * n:  # runs of four or more on average: slicing is cheapest
        flat = _int_list(part)
        return [tuple(flat[a:b]) for a, b in zip(starts.tolist(), ends.tolist())]
    lengths = ends - starts
    out = np.empty(n, dtype=object)
    column = _int_column(part)
    for L in range(1, 9):
        idx = np.flatnonzero(lengths == L)
        if len(idx):
            first = starts[idx]
            if L == 1:
                single = part[first]
                top = int(single.max()) + 1
                if top <= len(idx):  # more single runs than numbers: one shared tuple per number
                    out[idx] = np.fromiter(((i,) for i in range(top)), dtype=object, count=top)[single]
                    continue
            out[idx] = np.fromiter(zip(*(column(first + i) for i in range(L))), dtype=object, count=len(idx))
    idx = np.flatnonzero(lengths > 8)
    if len(idx):
        flat = _int_list(part)
        out[idx] = np.fromiter((tuple(flat[a:b]) for a, b in zip(starts[idx].tolist(), ends[idx].tolist())),
                               dtype=object, count=len(idx))
    return out.tolist()


def _int_column(part: np.ndarray):
    """``pos -> part[pos].tolist()``; from :data:`_SHARED_COLUMNS` values on, below an eighth of their count,
    the ints are taken from one shared object per number instead of made one per value (100,000 partitions
    over 45,000 runs: the answer's tuples made and freed in 11.8 instead of 16.0 ms; below that the table
    costs more than it saves)."""
    shared = _shared_ints(part, _SHARED_COLUMNS)
    if shared is None:
        return lambda pos: part[pos].tolist()
    return lambda pos: shared[part[pos]].tolist()


_SHARED_COLUMNS = 50_000  # values from which _int_column shares one int per number


def _run_lists(part: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> list[list[int]]:
    """``part[s:e].tolist()`` for every run, in run order (the result JSON's lists).

    >>> _run_lists(np.array([5, 1, 2, 0]), np.array([0, 1, 3]), np.array([1, 3, 4]))
    [[5], [1, 2], [0]]
    """
    flat = _int_list(part)
    return [flat[a:b] for a, b in zip(starts.tolist(), ends.tolist())]


def _int_list(values: np.ndarray) -> list[int]:
    """``values.tolist()`` (non-negative integers); for half a million values or more below an eighth of their
    count, one Python int per distinct number, shared, instead of one per value: a million partitions over
    fifty topics make and free 20,000 ints instead of a million (35 -> 19 ms to make and free the list).

    >>> _int_list(np.array([3, 1, 3]))
    [3, 1, 3]
    """
    shared = _shared_ints(values, _SHARED_INTS)
    return values.tolist() if shared is None else shared[values].tolist()


_SHARED_INTS = 500_000  # values from which _int_list shares one int per number


def _shared_ints(values: np.ndarray, at_least: int) -> np.ndarray | None:
    """One Python int per number ``0 .. values.max()`` (an object array to index with ``values``), when there
    are at least ``at_least`` values and the numbers are below an eighth of their count; else None (making
    one int per value is then as cheap).

    >>> _shared_ints(np.array([2, 0] * 12), 4).tolist(), _shared_ints(np.array([2, 0] * 12), 100)
    ([0, 1, 2], None)
    """
    if len(values) < at_least:
        return None
    top = int(values.max()) + 1
    if top > len(values) // 8:
        return None
    return np.arange(top).astype(object)


def as_array_assignment(snap: ConsumerSnapshot, assignment: ConsumerAssignment) -> ArrayAssignment | None:
    """``assignment`` as an :class:`ArrayAssignment`, when it is a plain one: every member of ``snap``
    present and nobody else, known topics, partitions in range, none given twice. Else ``None``
    (the per-pair path then names what is wrong).

    The conversion reads every (member, topic) pair in C (``chain``, ``map``), so a greedy
    assignor's dict of a million pairs is checked and measured as fast as the optimizer's arrays.
    """
    if isinstance(assignment, ArrayAssignment):
        return assignment if assignment.snapshot is snap else None
    index = snap.member_index()
    if len(assignment) != len(index) or not all(map(index.__contains__, assignment)):
        return None
    names = list(snap.topics)
    tpos = {t: j for j, t in enumerate(names)}
    sizes = np.fromiter((t.partitions for t in snap.topics.values()), dtype=np.int64, count=len(names))
    offsets = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    inner = list(assignment.values())
    pair_topic = list(chain.from_iterable(inner))
    if not all(map(tpos.__contains__, pair_topic)):
        return None
    values = list(chain.from_iterable(d.values() for d in inner))
    try:
        lens = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
        if values and set(map(type, values)) == {np.ndarray}:
            flat = np.concatenate(values) if values else np.zeros(0, dtype=np.int64)
            if flat.dtype.kind not in "iu":
                return None
        else:
            flat = np.fromiter(chain.from_iterable(values), dtype=np.int64, count=int(lens.sum()))
    except (TypeError, ValueError, OverflowError):
        return None
    per_member = np.fromiter(map(len, inner), dtype=np.int64, count=len(inner))
    member = np.repeat(np.repeat(np.fromiter(map(index.__getitem__, assignment), dtype=np.int64,
                                             count=len(inner)), per_member), lens)
    topic = np.repeat(np.fromiter(map(tpos.__getitem__, pair_topic), dtype=np.int64, count=len(pair_topic)), lens)
    flat = flat.astype(np.int64, copy=False)
    if len(flat) and (int(flat.min()) < 0 or bool((flat >= sizes[topic]).any())):
        return None
    gid = offsets[topic] + flat
    total = int(offsets[-1])
    if len(gid) and int(np.bincount(gid, minlength=total).max()) > 1:
        return None
    owner = np.full(total, -1, dtype=np.int32)
    owner[gid] = member
    return ArrayAssignment(snap, {t: owner[offsets[j]:offsets[j + 1]] for j, t in enumerate(names)})


def normalize_consumer_assignment(snap: ConsumerSnapshot, assignment: ConsumerAssignment
                                  ) -> dict[str, dict[str, tuple[int, ...]]]:
    """Every member present (unknown ids kept, for the check to report), topics in snapshot order, partitions sorted; empty topic lists dropped."""
    if isinstance(assignment, ArrayAssignment) and assignment.snapshot is snap:
        return assignment.to_tuples()
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
    # (without known loads the metrics are null and read none of these; with no topic, the empty ``prev.all``)
    new_all = np.concatenate(owners) if owners else prev.all
    far_all = (np.concatenate(far_all) if far_all else np.zeros(0, dtype=bool)) if rack_aware else None
    metrics.update(load_metrics(snap, new_all, prev.all, far_all))
    return violations, metrics


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
    metrics: dict[str, Any] = {
        "moves": moves,
        "imbalance": int(loads.max() - loads.min()) if n else 0,
        "cross_rack": cross if rack_aware else None,
        "sum_squared_loads": int(np.dot(loads, loads)),
        "max_load": int(loads.max()) if n else 0,
        "min_load": int(loads.min()) if n else 0,
        "partitions": int(sizes[has_readers].sum()),
        "members": n,
    }
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

    A partition that some member claims goes this round only to its valid
    previous owner (KIP-341); a target that sends it anywhere else (away from
    that owner, or to anyone at all when its claims tie) withholds it until the
    follow-up rebalance. A partition nobody claims goes to its target at once.
    Each member revokes what it claims and is not given this round (stale claims
    included), which is what a Kafka client does by itself: so no partition is
    ever consumed by two members at once, not even by a stale claimant.
    """
    prev = prev or previous_owners(snap)
    if isinstance(target, ArrayAssignment) and target.snapshot is snap:
        return _cooperative_arrays(snap, target, prev)
    ids = snap._column("id")
    new_owner: dict[str, np.ndarray] = {}
    for t, topic in snap.topics.items():
        new_owner[t] = np.full(topic.partitions, -1, dtype=np.int32)
    index = snap.member_index()
    for mid, topics in target.items():
        i = index.get(mid)
        if i is None:  # an unknown id holding nothing (one holding something fails the check first)
            continue
        for t, parts in topics.items():
            if len(parts):
                new_owner[t][np.asarray(parts, dtype=np.int64)] = i
    revocations: dict[str, dict[str, tuple[int, ...]]] = {mid: {} for mid in ids}
    withheld: dict[str, np.ndarray] = {}
    for t, claims in prev.claims.items():
        owner = new_owner[t]
        claimed = np.zeros(len(owner), dtype=bool)
        for _, parts in claims:
            claimed[parts] = True
        # a claimed partition goes this round only to its valid previous owner (a stale claimant or a
        # newcomer waits until every claimant has revoked it)
        mask = claimed & (owner >= 0) & (owner != prev.owner[t])
        round_owner = np.where(mask, -1, owner)
        for i, parts in claims:
            lost = parts[round_owner[parts] != i]
            if len(lost):
                revocations[ids[i]][t] = tuple(lost.tolist())
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


def _cooperative_arrays(snap: ConsumerSnapshot, target: ArrayAssignment, prev: PreviousOwners) -> CooperativeStep:
    """:func:`cooperative_split` for an :class:`ArrayAssignment`, on flat arrays of every claim."""
    names = list(snap.topics)
    sizes = np.fromiter((t.partitions for t in snap.topics.values()), dtype=np.int64, count=len(names))
    offsets = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    total = int(offsets[-1])
    pos = {t: j for j, t in enumerate(names)}
    own = np.full(total, -1, dtype=np.int64)
    for t, arr in target.owners.items():
        own[offsets[pos[t]]:offsets[pos[t] + 1]] = arr
    flat = getattr(prev.claims, "flat_arrays", None)
    if flat is not None:
        gid, member = flat()
    else:  # a hand-made PreviousOwners: flatten its claims
        g, m = [], []
        for t, claims in prev.claims.items():
            for i, parts in claims:
                g.append(offsets[pos[t]] + np.asarray(parts, dtype=np.int64))
                m.append(np.full(len(parts), i, dtype=np.int64))
        gid = np.concatenate(g) if g else np.zeros(0, dtype=np.int64)
        member = np.concatenate(m) if m else np.zeros(0, dtype=np.int64)
    valid = (np.concatenate([prev.owner[t] for t in names]) if names else np.zeros(0, dtype=np.int32))
    mask = np.zeros(total, dtype=bool)
    mask[gid] = True  # claimed by someone
    # a claimed partition goes this round only to its valid previous owner (a stale claimant or a
    # newcomer waits until every claimant has revoked it)
    mask &= (own >= 0) & (own != valid)
    withheld = {t: mask[offsets[j]:offsets[j + 1]].copy() for j, t in enumerate(names)
                if mask[offsets[j]:offsets[j + 1]].any()}
    round_own = np.where(mask, -1, own)
    lost = round_own[gid] != member  # owned minus this round's assignment, stale claims included
    lost_g, lost_m = gid[lost], member[lost]
    assignment = ArrayAssignment(snap, {t: round_own[offsets[pos[t]]:offsets[pos[t] + 1]] for t in target.owners})
    order = np.lexsort((lost_g, lost_m))
    lost_g, lost_m = lost_g[order], lost_m[order]
    topic = np.searchsorted(offsets, lost_g, side="right") - 1
    revoked = _nested(snap, names, lost_m, topic, lost_g - offsets[topic], _run_tuples)
    return CooperativeStep(assignment=assignment.to_tuples(), revocations={m: r for m, r in revoked.items() if r},
                           withheld=withheld)
