"""A consumer assignment as arrays: the answer's form every assignor returns and the check reads.

:class:`ArrayAssignment` holds one owner array per topic (member index, ``-1``:
nobody) and turns into the nested ``{member: {topic: partitions}}`` mapping only
when someone reads it that way (:class:`AnswerView`);
:func:`as_array_assignment` and :func:`normalize_consumer_assignment` bring any
answer to one of the two forms.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import chain, islice
from types import MappingProxyType
from typing import Any, Sequence

import numpy as np

from ..model.arrays import gc_paused
from ..model.consumer import ConsumerSnapshot
from ..model.consumer_members import LazyMapping
from ..result import consumer_lists

__all__ = ["ConsumerAssignment", "ArrayAssignment", "AnswerView", "as_array_assignment",
           "normalize_consumer_assignment", "stable_order", "nested_assignment", "run_tuples"]


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
        order = stable_order(own, len(self.snapshot.members))  # already topic-major, partition-ascending
        return names, own[order], topic[order], part[order]

    def _runs(self, convert):
        """member id -> topic -> ``convert(part, starts, ends)[run]``, every member present, topics in snapshot order."""
        names, own, topic, part = self._flat()
        return nested_assignment(self.snapshot, names, own, topic, part, convert)

    def to_tuples(self) -> dict[str, dict[str, tuple[int, ...]]]:
        """The normalized form (:func:`normalize_consumer_assignment`): sorted tuples, every member present."""
        return self._runs(run_tuples)

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
            with gc_paused():
                built = MappingProxyType({k: MappingProxyType(v) for k, v in self._arrays.to_tuples().items()})
            self._map, self._arrays = built, None  # the arrays (and the snapshot they point to) are let go
        return built

    def to_lists(self) -> dict[str, dict[str, list[int]]]:
        """A plain ``dict`` of ``dict`` of lists (the result JSON's shape), straight from the arrays when the
        mapping was never built."""
        arrays = self._arrays
        if arrays is None:
            return consumer_lists(self._get())
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


def stable_order(keys: np.ndarray, bound: int) -> np.ndarray:
    """``np.argsort(keys, kind="stable")`` for keys in ``[0, bound)``: below 2**15, as 16-bit keys, which numpy
    sorts by radix in linear time (a tenth of its merge sort of 32-bit keys at a million partitions)."""
    return np.argsort(keys.astype(np.int16) if bound <= 2**15 else keys, kind="stable")


def nested_assignment(snap: ConsumerSnapshot, names: list[str], own: np.ndarray, topic: np.ndarray, part: np.ndarray,
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
    with gc_paused():
        pieces = convert(part, starts, ends)
        run_owner = own[starts]
        run_topic = np.array(names, dtype=object)[topic[starts]].tolist()  # names looked up in C
        mcut = np.flatnonzero(np.r_[True, run_owner[1:] != run_owner[:-1], True])
        ids = snap._column("id")
        runs = zip(run_topic, pieces)  # each member takes its next ``count`` runs off one shared iterator
        for m, count in zip(run_owner[mcut[:-1]].tolist(), np.diff(mcut).tolist()):
            out[ids[m]] = dict(islice(runs, count))
    return out


def run_tuples(part: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> list[tuple[int, ...]]:
    """``tuple(part[s:e])`` for every run, as Python ints, in run order.

    Mostly short runs (a member holding one or two partitions of each of hundreds of
    topics) are zipped column-wise in C, one length at a time, and put back in run order
    by an object array's fancy index; longer ones are sliced. Runs of one partition share
    one tuple per partition number when there are more runs than numbers (10,000 x 1,000:
    10,000 runs, 200 numbers; a tenth of the time to make them and to free them).

    >>> run_tuples(np.array([5, 1, 2, 0]), np.array([0, 1, 3]), np.array([1, 3, 4]))
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
