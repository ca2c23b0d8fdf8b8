"""Reading a consumer snapshot's topics and members: the bulk readers behind :func:`stickyflow.model.consumer.parse_consumer`.

Members come through one of two paths: a bulk reader of well-formed lists
(:func:`parse_members` tries it first: columns, flat claims and coded
subscriptions built in C-speed passes) and a checker that walks them one by
one, naming every problem. Topics likewise: plain ``{"partitions": n}`` objects
in bulk, the rest one by one.
"""

from __future__ import annotations

import operator
from array import array
from collections import defaultdict, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import chain, compress, count, islice, repeat
from types import MappingProxyType
from typing import Any

import numpy as np

from ..check.input import INT32_MAX, Checker, finite_number, join
from ..load import read_rates
from .consumer import EMPTY, Member, Topic

__all__ = ["parse_topics", "parse_members", "FlatClaims", "LazyMapping", "first_seen_ids"]

_TOPIC_KEYS = frozenset({"partitions", "racks", "rates"})
_MEMBER_KEYS = frozenset({"id", "subscription", "rack", "generation", "owned", "instance_id", "capacity"})


def parse_topics(doc: Mapping[str, Any], chk: Checker) -> Mapping[str, Topic]:
    raw = chk.obj(doc, "topics", "")
    topics: dict[str, Topic] = {}
    if raw is None:
        return MappingProxyType(topics)
    fast = _plain_topics(raw)
    if fast is not None:
        return fast
    interned: dict[tuple[str, ...], frozenset[str]] = {}
    for name, spec in raw.items():
        path = join("topics", name)
        if not isinstance(spec, dict):
            chk.fail(path, "must be an object")
            continue
        chk.extra_keys(spec, _TOPIC_KEYS, path, "topics[*]")
        n = chk.integer(spec, "partitions", path, minimum=1, maximum=INT32_MAX)
        racks_raw = chk.array(spec, "racks", path, required=False)
        racks = None
        if racks_raw is not None and n is not None:
            if len(racks_raw) != n:
                chk.fail(f"{path}.racks", f"must hold one list per partition ({n}), not {len(racks_raw)}")
            elif set(map(type, racks_raw)) <= {list} and set(map(type, chain.from_iterable(racks_raw))) <= {str}:
                # the common case in a few passes in C: one frozenset per distinct list of racks
                keys = list(map(tuple, racks_raw))
                for key in dict.fromkeys(keys):
                    if key not in interned:
                        interned[key] = frozenset(key)
                racks = tuple(map(interned.__getitem__, keys))
            else:  # one by one: names the first bad entry (and takes subclasses of list and str)
                out = []
                for i, lst in enumerate(racks_raw):
                    if not isinstance(lst, list) or not all(isinstance(r, str) for r in lst):
                        chk.fail(f"{path}.racks[{i}]", "must be an array of rack names (strings)")
                        out = None
                        break
                    key = tuple(lst)
                    if key not in interned:
                        interned[key] = frozenset(key)
                    out.append(interned[key])
                racks = tuple(out) if out is not None else None
        rates = None
        if "rates" in spec and n is not None:
            rates, at, rule = read_rates(spec["rates"], n)
            if rates is None:
                chk.fail(f"{path}.rates{at}", rule)
                continue  # left out: its rates are not missing, they are wrong
        if n is not None:
            topic = topics[name] = Topic(name=name, partitions=n, racks=racks)
            if rates is not None:  # checked above, and the reader's own: not checked and copied again
                object.__setattr__(topic, "rates", rates)
    return MappingProxyType(topics)


def _plain_topics(raw: dict) -> Mapping[str, Topic] | None:
    """The topics when each is just ``{"partitions": n}`` with ``n`` an int from 1 to 2**31 - 1 (the common
    case): checked across all topics in a few passes in C and built column by column like the members; None
    otherwise, and the topic-by-topic reader names what is off."""
    names_ = list(raw)
    specs = list(raw.values())
    if not specs or not _all_of(specs, dict) or not _all_of(names_, str):
        return None
    if any(map(_PARTITIONS_ONLY.__ne__, map(dict.keys, specs))):
        return None
    counts = list(map(operator.itemgetter("partitions"), specs))
    if not _all_of(counts, int) or min(counts) < 1 or max(counts) > INT32_MAX:
        return None
    out = _filled(Topic, len(specs), name=names_, partitions=counts, racks=repeat(None), rates=repeat(None))
    return MappingProxyType(dict(zip(names_, out)))


_PARTITIONS_ONLY = {"partitions": None}.keys()


def parse_members(doc: Mapping[str, Any], chk: Checker
                   ) -> tuple[tuple[Member, ...], FlatClaims | None, Any, tuple | None]:
    """The members; then, when the fast reader took them (else None), every claim as flat arrays, the
    subscriptions as :func:`_read_subscriptions` reads them, and the members' ids, racks and generations
    (:func:`_well_formed_members`)."""
    raw = chk.array(doc, "members", "")
    if raw is None:
        return (), None, None, None
    fast = _well_formed_members(raw)
    if fast is not None:
        return fast
    return _members_one_by_one(raw, chk), None, None, None


def _members_one_by_one(raw: list, chk: Checker) -> tuple[Member, ...]:
    """The member-by-member reader: every problem is recorded with its path (the slow path)."""
    members: list[Member] = []
    for path, m, mid in chk.entries(raw, "members", _MEMBER_KEYS, "id"):
        subs = chk.string_list(m, "subscription", path)
        rack = chk.string(m, "rack", path, required=False, allow_null=True)
        gen = chk.integer(m, "generation", path, required=False, default=-1, maximum=INT32_MAX)
        instance_id = chk.string(m, "instance_id", path, required=False, allow_null=True)
        capacity = chk.number(m, "capacity", path, required=False, strict=True, allow_null=True)
        owned_raw = chk.obj(m, "owned", path, required=False)
        owned: dict[str, tuple[int, ...]] = {}
        claims = _read_owned([owned_raw]) if owned_raw else None
        if claims is not None:  # plain Python ints, whatever integers came in
            owned = claims.owned(0, len(claims.lens), 0)
        elif owned_raw:  # something is wrong, or unusual: find and name every culprit
            for topic, parts in owned_raw.items():
                ppath = f"{join(path + '.owned', topic)}"
                if not isinstance(parts, list):
                    chk.fail(ppath, "must be an array of partition numbers")
                    continue
                numbers = [_partition_number(p) for p in parts]
                bad = next((j for j, v in enumerate(numbers) if v is None), None)
                if bad is not None:
                    chk.fail(f"{ppath}[{bad}]", "must be an integer >= 0")
                    continue
                owned[topic] = tuple(v for v in numbers if v <= INT32_MAX)  # beyond: stale, ignored
        if mid is None or subs is None:
            continue
        members.append(Member(
            id=mid,
            subscription=tuple(dict.fromkeys(subs)),
            rack=rack,
            generation=None if gen is None or gen < 0 else gen,
            owned=MappingProxyType(owned) if owned else EMPTY,
            instance_id=instance_id,
            capacity=capacity,
        ))
    return tuple(members)


def _filled(cls: type, n: int, **columns) -> list:
    """``n`` new objects of the slotted class ``cls``, each slot named in ``columns`` filled from its iterable by
    one pass in C: how the bulk readers build members, topics and owned views from parts they have already
    checked and normalized, without an ``__init__`` per object (a frozen dataclass's costs five times as much,
    and at 1,000 members a constructor call each was a quarter of reading the group).

    >>> t = _filled(Topic, 2, name=["a", "b"], partitions=[3, 1], racks=[None, None], rates=[None, None])
    >>> t[1]
    Topic(name='b', partitions=1, racks=None, rates=None)
    """
    out = list(map(object.__new__, repeat(cls, n)))
    for name, values in columns.items():
        deque(map(cls.__dict__[name].__set__, out, values), 0)
    return out


def _all_of(values: list, *types: type) -> bool:
    return set(map(type, values)) <= set(types)


@dataclass(frozen=True, slots=True, eq=False)
class FlatClaims:
    """Every (member, topic, partition) claim of a snapshot, in member order, then each member's ``owned`` order."""

    topics: list[str]        # the topic of each (member, topic) claim
    per_member: np.ndarray   # (member, topic) claims per member
    lens: np.ndarray         # partitions per (member, topic) claim
    parts: np.ndarray        # the partitions, end to end (int64)
    # one slot: each member's first claim, end of claims and first partition (three lists), set on first look
    where: list = field(default_factory=lambda: [None], repr=False)

    def of_member(self, i: int) -> dict[str, tuple[int, ...]]:
        """Member ``i``'s claims (snapshot order) as ``owned`` holds them: topic -> tuple of plain ints."""
        where = self.where[0]
        if where is None:  # two threads may both compute it: each sets the same whole value in one step
            ends = np.cumsum(self.per_member)
            starts = ends - self.per_member
            firsts = np.r_[0, np.cumsum(self.lens)][starts]
            where = self.where[0] = (starts.tolist(), ends.tolist(), firsts.tolist())
        starts, ends, firsts = where
        return self.owned(starts[i], ends[i], firsts[i])

    @classmethod
    def of(cls, members: tuple[Member, ...]) -> FlatClaims:
        """Read off :class:`Member` objects (a snapshot built in Python)."""
        per_member = np.fromiter(map(len, (m.owned for m in members)), dtype=np.int64, count=len(members))
        values = list(chain.from_iterable(m.owned.values() for m in members))
        lens = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
        parts = np.fromiter(chain.from_iterable(values), dtype=np.int64, count=int(lens.sum()))
        return cls(list(chain.from_iterable(m.owned for m in members)), per_member, lens, parts)

    def owned(self, a: int, b: int, p: int) -> dict[str, tuple[int, ...]]:
        """Claims ``a`` to ``b`` (one member's), whose partitions start at ``p``, as ``owned`` holds them: topic
        -> tuple of plain ints."""
        lens = self.lens[a:b].tolist()
        it = iter(self.parts[p:p + sum(lens)].tolist())
        return dict(zip(self.topics[a:b], [tuple(islice(it, n)) for n in lens]))


def _read_owned(owned: list) -> FlatClaims | None:
    """Every member's ``owned`` (dicts or None) read in a few passes in C: the flat claims, or None when any
    value is not a list of partition numbers 0 to 2**31 - 1 (:func:`_partition_number`; the member-by-member
    reader then names the culprit, or reads what this one leaves to it: an int subclass at 0 or 1)."""
    present = [o for o in owned if o]
    values = list(chain.from_iterable(o.values() for o in present))
    buf = array("q")
    try:  # lists of integers only (ints, NumPy integers: what has __index__), each read in C by fromlist
        deque(map(buf.fromlist, values), 0)
    except Exception:  # noqa: BLE001  (anything else, or an __index__ that raises: the slow reader names it)
        return None
    parts = np.frombuffer(buf, dtype=np.int64)
    if len(parts) and (int(parts.min()) < 0 or int(parts.max()) > INT32_MAX):
        return None
    lens = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
    # a bool has __index__ too and reads as 0 or 1, but true is no partition number: only there can one hide
    low = np.flatnonzero(parts <= 1)
    if len(low) <= max(4096, len(parts) // 8):
        ends = np.cumsum(lens)
        which = np.searchsorted(ends, low, side="right")  # the list holding each, and where in it
        at = (low - ends[which] + lens[which]).tolist()
        if not all(type(values[w][i]) is int for w, i in zip(which.tolist(), at)):
            return None
    elif bool in set(map(type, chain.from_iterable(values))):
        return None
    per_member = np.fromiter(map(len, (o or () for o in owned)), dtype=np.int64, count=len(owned))
    return FlatClaims(list(chain.from_iterable(present)), per_member, lens, parts)


class LazyMapping(Mapping):
    """A read-only mapping whose content is built on first look: a subclass gives ``_get()`` (the built
    mapping, kept) and ``__len__`` (without building, where it can); everything else reads ``_get()``."""

    __slots__ = ()

    def _get(self) -> Mapping:  # pragma: no cover - every subclass has its own
        raise NotImplementedError

    def __getitem__(self, key):
        return self._get()[key]

    def __iter__(self):
        return iter(self._get())

    def __contains__(self, key) -> bool:
        return key in self._get()

    def keys(self):
        return self._get().keys()

    def items(self):
        return self._get().items()

    def values(self):
        return self._get().values()

    def get(self, key, default=None):
        return self._get().get(key, default)

    def __eq__(self, other):
        if isinstance(other, LazyMapping):
            other = other._get()
        return self._get() == other if isinstance(other, Mapping) else NotImplemented

    __hash__ = None  # type: ignore[assignment]  (a mapping: unhashable, as dict and mappingproxy are)

    def __repr__(self) -> str:
        return repr(self._get())


class _OwnedView(LazyMapping):
    """A member's ``owned`` as the bulk reader leaves it: read-only, its topics and partitions kept in the
    snapshot's flat claims until first asked for, then a ``mappingproxy`` of tuples like any other member's.

    The solve reads the flat claims and never looks here; copying every claim into a tuple up front cost a
    third of reading a 100,000-partition group.
    """

    # the flat claims, the member's position, the mapping once built (made by the reader with _filled)
    __slots__ = ("_claims", "_at", "_map")

    def _get(self) -> MappingProxyType:
        m = self._map
        if m is None:
            m = self._map = MappingProxyType(self._claims.of_member(self._at))
        return m

    def __len__(self) -> int:
        return int(self._claims.per_member[self._at])


def _well_formed_members(raw: list) -> tuple[tuple[Member, ...], FlatClaims | None, Any, tuple | None] | None:
    """The members when every one is well formed (the common case), checked field by field across all
    members in a few passes in C; None when anything is off, and the member-by-member reader then names it.
    With the members: the flat claims, the subscriptions (:func:`_read_subscriptions`), and the members' ids,
    racks (lists) and generations (int64, -1 where unknown), which the snapshot keeps.

    Same rules as that reader: ids unique strings, subscriptions lists of strings (repeats dropped), racks and
    instance ids strings or null, capacities finite numbers > 0 or null, generations 32-bit integers (negative:
    unknown), owned partitions lists of integers 0 to 2**31 - 1 per topic (of any integer type but bool:
    :func:`_partition_number`). Members with the same subscription share one tuple.
    """
    if not raw:
        return (), None, None, None
    if not _all_of(raw, dict):
        return None
    keys = set().union(*raw)
    if not keys <= _MEMBER_KEYS:
        return None
    get = dict.get
    ids = [get(m, "id") for m in raw]
    if not _all_of(ids, str) or len(set(ids)) != len(ids):
        return None
    subs = [get(m, "subscription") for m in raw]
    if not _all_of(subs, list):
        return None
    racks = [get(m, "rack") for m in raw]
    instances = [get(m, "instance_id") for m in raw]
    if not _all_of(racks, str, type(None)) or not _all_of(instances, str, type(None)):
        return None
    gens = [get(m, "generation", -1) for m in raw]
    if not _all_of(gens, int) or max(gens) > INT32_MAX:
        return None
    owned = [get(m, "owned") for m in raw]
    if not _all_of(owned, dict, type(None)):
        return None
    capacities: Any = repeat(None)
    if "capacity" in keys:
        capacities = _capacities([get(m, "capacity") for m in raw])
        if capacities is None:
            return None
    claims = _read_owned(owned)
    if claims is None:
        return None
    read = _read_subscriptions(subs)
    if read is None:
        return None
    group, distinct, _ = read
    low = min(gens)  # negative: unknown (None on the member, -1 in the snapshot's column, which is int64)
    out = _filled(Member, len(raw), id=ids, subscription=map(distinct.__getitem__, group.tolist()), rack=racks,
                  generation=gens if low >= 0 else [None if g < 0 else g for g in gens], instance_id=instances,
                  capacity=capacities)
    at = list(compress(range(len(raw)), owned))  # the members with claims (a non-empty dict)
    set_owned = Member.__dict__["owned"].__set__
    views = _filled(_OwnedView, len(at), _claims=repeat(claims), _at=at, _map=repeat(None))
    deque(map(set_owned, compress(out, owned), views), 0)
    if len(at) < len(raw):
        deque(map(set_owned, compress(out, map(operator.not_, owned)), repeat(EMPTY)), 0)
    generations = np.array(gens if low >= -1 else [max(g, -1) for g in gens], dtype=np.int64)
    generations.flags.writeable = False
    return tuple(out), claims, read, (ids, racks, generations)


def _capacities(values: list) -> list[float | None] | None:
    """Members' capacities (numbers or None) as floats, when each is a finite number > 0 or None; else None (the
    member-by-member reader then names the culprit).

    >>> _capacities([2, None, 0.5]), _capacities([0, 1])
    ([2.0, None, 0.5], None)
    """
    out = [None if v is None else finite_number(v) for v in values]
    if any(c is None and v is not None or c is not None and c <= 0 for c, v in zip(out, values)):
        return None
    return out


def _read_subscriptions(subs: list[list]) -> tuple[np.ndarray, list[tuple[str, ...]], tuple] | None:
    """Every member's subscription (a list each) read in a few passes in C: what
    :meth:`ConsumerSnapshot.subscription_groups` computes (each member's group, the distinct subscriptions as
    tuples, repeats dropped, in order of first appearance), and each distinct subscription's topics coded as
    numbers (the topic names in order of first appearance, the codes end to end, how many each), from which
    :meth:`ConsumerSnapshot._group_topics` takes positions without a lookup per (subscription, topic). None
    when a subscription holds anything but strings (the member-by-member reader then names it).
    """
    n = len(subs)
    if subs.count(subs[0]) == n:  # everyone subscribes alike (list equality, in C): one group
        keys = [tuple(subs[0])]
        group = np.zeros(n, dtype=np.int64)
    else:
        tuples = list(map(tuple, subs))
        try:
            keys = list(dict.fromkeys(tuples))
        except TypeError:  # an unhashable entry: not a list of strings
            return None
        if len(keys) == n:  # every subscription differs (mixed groups often): each is its own group, in order
            group = np.arange(n, dtype=np.int64)
        else:
            number = dict(zip(keys, range(len(keys))))
            group = np.fromiter(map(number.__getitem__, tuples), dtype=np.int64, count=n)
    flat = list(chain.from_iterable(keys))
    code: dict = {}
    try:
        codes = first_seen_ids(flat, code)
    except TypeError:  # an unhashable entry
        return None
    names = list(code)
    if not _all_of(names, str):  # the distinct names suffice: anything else shows among them
        return None
    klen = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
    K = len(names)
    kid = np.repeat(np.arange(len(keys), dtype=np.int64), klen)
    if len(keys) * K <= _DENSE_REPEATS:
        pair = kid * K + codes
        seen = np.bincount(pair, minlength=len(keys) * K)
        repeated = np.zeros(len(keys), dtype=bool)
        if int(seen.max(initial=0)) > 1:
            repeated[kid[seen[pair] > 1]] = True
    else:
        repeated = np.fromiter((len(set(k)) != len(k) for k in keys), dtype=bool, count=len(keys))
    if repeated.any():  # drop repeats (first kept); keys that then coincide become one group
        normal = [tuple(dict.fromkeys(k)) if r else k for k, r in zip(keys, repeated.tolist())]
        keys = list(dict.fromkeys(normal))
        number = dict(zip(keys, range(len(keys))))
        group = np.fromiter(map(number.__getitem__, normal), dtype=np.int64, count=len(normal))[group]
        flat = list(chain.from_iterable(keys))
        klen = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
        codes = first_seen_ids(flat, code)  # every name is numbered already
    group.flags.writeable = codes.flags.writeable = klen.flags.writeable = False
    return group, keys, (names, codes, klen)


_DENSE_REPEATS = 1 << 20  # distinct subscriptions x topic names up to which repeats are found by one bincount


def first_seen_ids(values, index: dict, dtype=np.int64) -> np.ndarray:
    """Each value's number in ``index``, values not yet in it numbered on, in order of first appearance
    (``index`` grows): one pass in C, each new value numbered on first sight by a ``defaultdict``. Raises
    ``TypeError`` for an unhashable value.

    >>> index = {"x": 0}
    >>> first_seen_ids(["y", "x", "z", "y"], index).tolist(), index
    ([1, 0, 2, 1], {'x': 0, 'y': 1, 'z': 2})
    """
    number = defaultdict(count(len(index)).__next__, index)
    ids = np.fromiter(map(number.__getitem__, values), dtype=dtype, count=len(values))
    index.update(number)
    return ids


def _partition_number(value: Any) -> int | None:
    """``value`` as a partition number (a plain ``int``), or None when it is none: an integer >= 0 is one,
    whatever its Python type (an int, an ``IntEnum``, a NumPy integer: what has ``__index__``); a bool, a float
    or a string is not. Numbers beyond 2**31 - 1 are kept here; no topic has such a partition, so the claim is
    stale and, like every stale claim, ignored.

    >>> [_partition_number(v) for v in (3, np.int64(4), True, 1.0, "5", -1)]
    [3, 4, None, None, None, None]
    """
    if isinstance(value, (bool, np.bool_)):
        return None
    try:
        number = operator.index(value)
    except Exception:  # noqa: BLE001  (no integer, or an __index__ that raises)
        return None
    return number if number >= 0 else None
