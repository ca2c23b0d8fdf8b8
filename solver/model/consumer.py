"""Consumer-group snapshots: the frozen model, reading and writing the spec's JSON.

A :class:`ConsumerSnapshot` is one moment of one consumer group: the topics
(partition counts, replica racks), the members (subscriptions, racks, the
partitions they owned and the generation they owned them in) and the group's
configuration. See ``snapshot-format.md`` (kind ``"consumer"``).

>>> snap = parse_consumer({
...     "format": "stickyflow.snapshot/1", "kind": "consumer",
...     "topics": {"t": {"partitions": 2}},
...     "members": [{"id": "a", "subscription": ["t"]}]})
>>> snap.topics["t"].partitions, snap.members[0].id
(2, 'a')
"""

from __future__ import annotations

import operator
from array import array
from collections import defaultdict, deque
from collections.abc import Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from itertools import chain, compress, count, islice, repeat
from types import MappingProxyType
from typing import Any

import numpy as np

from .arrays import in_sorted
from ..check.input import (INT32_MAX, Checker, built_by_reader, finite_number, join, names, read_back, reading,
                           same_type)
from ..errors import InvalidSnapshotError, Problem
from ..load import BALANCES, DEFAULT_LOAD_SLACK, read_rates, total_rate_problem

__all__ = [
    "SNAPSHOT_FORMAT",
    "Topic",
    "Member",
    "ConsumerConfig",
    "ConsumerSnapshot",
    "parse_consumer",
    "consumer_to_json",
    "PreviousOwners",
    "previous_owners",
]

SNAPSHOT_FORMAT = "stickyflow.snapshot/1"
_DENSE_READS = 1 << 24  # distinct subscriptions x topics up to which "who reads what" is one boolean matrix
_EMPTY: Mapping = MappingProxyType({})


@dataclass(frozen=True, slots=True, kw_only=True)
class Topic:
    """A topic: its partition count and, optionally, the racks holding each partition's replicas and each
    partition's rate (its load, for ``config.balance = "load"``).

    ``rates`` is a read-only ``float64`` numpy array, one finite rate >= 0 per partition (a list, a tuple or
    any numeric array is taken and checked: :func:`stickyflow.load.read_rates`); None when the topic carries
    none. Two topics are equal when their names, counts, racks and rates are.

    >>> Topic(name="t", partitions=2, rates=[5, 0.5]).rates.tolist()
    [5.0, 0.5]
    """

    name: str
    partitions: int
    racks: tuple[frozenset[str], ...] | None = None  # index = partition number
    rates: np.ndarray | None = None  # index = partition number

    def __post_init__(self) -> None:
        racks = self.racks
        if racks is not None and type(racks) is not tuple or (racks and type(racks[0]) is not frozenset):
            where = f'Topic(name={self.name!r}).racks'
            object.__setattr__(self, "racks", tuple(frozenset(names(r, f"{where}[{i}]"))
                                                    for i, r in enumerate(names(racks, where))))
        rates = self.rates
        if rates is not None:  # always checked and copied: the caller keeps its array (the reader sets its own)
            arr, at, rule = read_rates(rates, self.partitions)
            if arr is None:
                raise InvalidSnapshotError(Problem(f"Topic(name={self.name!r}).rates{at}", rule))
            object.__setattr__(self, "rates", arr)

    def __eq__(self, other: object) -> bool:
        if type(other) is not Topic:
            return NotImplemented
        return (self.name == other.name and self.partitions == other.partitions and self.racks == other.racks
                and (self.rates is other.rates or self.rates is not None and other.rates is not None
                     and np.array_equal(self.rates, other.rates)))

    def __hash__(self) -> int:
        return hash((self.name, self.partitions, self.racks))

    def __reduce__(self):  # through the constructor: an unpickled array is writeable, the rates come back read-only
        return _topic, (self.name, self.partitions, self.racks, self.rates)


def _topic(name: str, partitions: int, racks: Any, rates: Any) -> Topic:
    return Topic(name=name, partitions=partitions, racks=racks, rates=rates)


@dataclass(frozen=True, slots=True, kw_only=True)
class Member:
    """A group member as the leader sees it in a JoinGroup round."""

    id: str
    subscription: tuple[str, ...]
    rack: str | None = None
    generation: int | None = None  # None: unknown (the wire format's -1)
    owned: Mapping[str, tuple[int, ...]] = field(default_factory=lambda: _EMPTY)
    instance_id: str | None = None
    capacity: float | None = None  # the load it can take (balance by load); None: the config's

    def __post_init__(self) -> None:
        if type(self.subscription) is not tuple:
            object.__setattr__(self, "subscription", names(self.subscription, f"Member(id={self.id!r}).subscription"))
        owned = self.owned
        if owned is not _EMPTY and type(owned) is not MappingProxyType:
            where = f"Member(id={self.id!r}).owned"
            if not isinstance(owned, Mapping):
                raise InvalidSnapshotError(Problem(where, f"must be a mapping of topic to partitions, "
                                                          f"not {type(owned).__name__}"))
            object.__setattr__(self, "owned", MappingProxyType(
                {t: names(p, join(where, str(t))) for t, p in owned.items()}))


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerConfig:
    """Problem settings of a consumer group (``config`` in the snapshot)."""

    rack_aware: bool | None = None  # None: decide from the data (true when members and partitions carry racks)
    traffic_cost: int = 10
    non_overlap_cost: int = 1
    balance: str = "count"  # "count" (Kafka's: partition counts) or "load" (rates against capacities)
    capacity: float | None = None  # every member's capacity unless it states its own; None: see stickyflow.load
    load_slack: float = DEFAULT_LOAD_SLACK  # how far above the least possible peak a sticky answer may go


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class ConsumerSnapshot:
    """One moment of one consumer group. Read-only; build it with :func:`parse_consumer` or directly."""

    topics: Mapping[str, Topic]
    members: tuple[Member, ...]
    protocol: str = "eager"
    config: ConsumerConfig = field(default_factory=ConsumerConfig)
    id: str | None = None
    now_ms: int = 0
    kind: str = field(default="consumer", init=False)
    #: unknown fields the reader ignored, one line each (see ``AssignmentResult.warnings``)
    warnings: tuple[str, ...] = field(default=(), init=False, repr=False, compare=False)
    #: what the solve, the check and the metrics derive from the snapshot, computed once: the subscription
    #: groups and lists, and every claim as flat arrays (left by the reader, which reads them anyway)
    _memo: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not built_by_reader():
            _check_objects(self)

    @property
    def rack_aware(self) -> bool:
        """Whether rack costs apply: the config's choice, else true when racks are known on both sides."""
        if self.config.rack_aware is not None:
            return self.config.rack_aware
        known = self._memo.get("rack_aware")  # a snapshot is read-only: asked by the solve and the check alike
        if known is None:
            racks = self._column("rack")
            known = self._memo["rack_aware"] = racks.count(None) < len(racks) and any(
                t.racks is not None and any(t.racks) for t in self.topics.values())
        return known

    def member_index(self) -> dict[str, int]:
        return dict(zip(self._column("id"), range(len(self.members))))

    def _column(self, name: str) -> list:
        """Field ``name`` (``"id"`` or ``"rack"``) of every member, in member order: the list the reader
        left, else read off the members once per snapshot. Treat it as read-only.

        >>> s = parse_consumer({"format": "stickyflow.snapshot/1", "kind": "consumer", "topics": {},
        ...     "members": [{"id": "a", "subscription": [], "rack": "r1"}, {"id": "b", "subscription": []}]})
        >>> s._column("id"), s._column("rack")
        (['a', 'b'], ['r1', None])
        """
        key = "column_" + name
        col = self._memo.get(key)
        if col is None:
            col = self._memo[key] = list(map(operator.attrgetter(name), self.members))
        return col

    def _rack_codes(self) -> tuple[np.ndarray, dict[str, int]]:
        """Every member's rack as a number (int64, -1: none), racks numbered in order of first appearance, and
        that numbering (rack -> number); once per snapshot, both read-only.

        >>> s = parse_consumer({"format": "stickyflow.snapshot/1", "kind": "consumer", "topics": {},
        ...     "members": [{"id": "a", "subscription": [], "rack": "r2"}, {"id": "b", "subscription": []},
        ...                 {"id": "c", "subscription": [], "rack": "r1"}, {"id": "d", "subscription": [], "rack": "r2"}]})
        >>> codes, index = s._rack_codes()
        >>> codes.tolist(), index
        ([0, -1, 1, 0], {'r2': 0, 'r1': 1})
        """
        known = self._memo.get("rack_codes")
        if known is None:
            racks = self._column("rack")
            index: dict[str, int] = {}
            if racks.count(None) == len(racks):
                codes = np.full(len(racks), -1, dtype=np.int64)
            else:
                codes = np.fromiter((-1 if r is None else index.setdefault(r, len(index)) for r in racks),
                                    dtype=np.int64, count=len(racks))
            codes.flags.writeable = False
            known = self._memo["rack_codes"] = (codes, index)
        return known

    def _generations(self) -> np.ndarray:
        """Every member's generation, -1 where unknown (int64; once per snapshot, read-only)."""
        gens = self._memo.get("generations")
        if gens is None:
            gens = np.fromiter((-1 if m.generation is None else m.generation for m in self.members),
                               dtype=np.int64, count=len(self.members))
            gens.flags.writeable = False
            self._memo["generations"] = gens
        return gens

    def subscription_groups(self) -> tuple[np.ndarray, list[tuple[str, ...]]]:
        """The distinct subscriptions, in order of first appearance, and each member's position among them
        (an int64 array). Computed once per snapshot; treat both as read-only.

        Members that share a subscription are handled together everywhere: with thousands of members
        reading hundreds of topics each, one step per (member, topic) would dominate. The reader gives
        equal subscriptions one tuple, so most members are grouped by the tuple's identity, without
        hashing its topics again.

        >>> s = parse_consumer({"format": "stickyflow.snapshot/1", "kind": "consumer", "topics": {},
        ...     "members": [{"id": "a", "subscription": ["x", "y"]}, {"id": "b", "subscription": ["y"]},
        ...                 {"id": "c", "subscription": ["x", "y"]}]})
        >>> group, distinct = s.subscription_groups()
        >>> group.tolist(), distinct
        ([0, 1, 0], [('x', 'y'), ('y',)])
        """
        if "groups" in self._memo:
            return self._memo["groups"]
        by_identity: dict[int, int] = {}
        by_value: dict[tuple[str, ...], int] = {}
        subs = [m.subscription for m in self.members]
        group = np.empty(len(subs), dtype=np.int64)
        for i, sub in enumerate(subs):
            g = by_identity.get(id(sub))
            if g is None:
                g = by_identity[id(sub)] = by_value.setdefault(sub, len(by_value))
            group[i] = g
        group.flags.writeable = False
        out = self._memo["groups"] = (group, list(by_value))
        return out

    def subscribers(self) -> dict[str, list[int]]:
        """Topic name -> indexes of the members subscribing to it (existing topics only). Computed once per
        snapshot (the solve, the check and the metrics all ask); treat the lists as read-only."""
        if "subscribers" in self._memo:
            return self._memo["subscribers"]
        subs: dict[str, list[int]] = {t: [] for t in self.topics}
        group, distinct = self.subscription_groups()
        if len(distinct) == 1:
            members = list(range(len(group)))
            for t in distinct[0]:
                if t in subs:
                    subs[t] = members.copy()
        elif distinct:
            # every (member, topic) subscription as two arrays, sorted by topic, members ascending within
            topic, glen = self._group_topics()
            per_member = glen[group]
            start = np.zeros(len(glen), dtype=np.int64)
            np.cumsum(glen[:-1], out=start[1:])
            n = int(per_member.sum())
            member = np.repeat(np.arange(len(group), dtype=np.int64), per_member)
            skip = np.repeat(start[group] - (np.cumsum(per_member) - per_member), per_member)
            pair_topic = topic[np.arange(n, dtype=np.int64) + skip]
            order = np.argsort(pair_topic, kind="stable")
            member = member[order]
            cut = np.searchsorted(pair_topic[order], np.arange(len(self.topics) + 1)).tolist()
            for t, a, b in zip(self.topics, cut[:-1], cut[1:]):
                subs[t] = member[a:b].tolist()
        self._memo["subscribers"] = subs
        return subs

    def has_readers(self) -> np.ndarray:
        """Per topic, in snapshot order: does any member subscribe to it (a read-only boolean array; computed
        once per snapshot). What :meth:`subscribers` says of each topic, without listing the members.

        >>> s = parse_consumer({"format": "stickyflow.snapshot/1", "kind": "consumer",
        ...     "topics": {"x": {"partitions": 1}, "y": {"partitions": 1}},
        ...     "members": [{"id": "a", "subscription": ["y", "z"]}]})
        >>> s.has_readers().tolist()
        [False, True]
        """
        read = self._memo.get("has_readers")
        if read is None:
            topic, _ = self._group_topics()
            read = np.zeros(len(self.topics), dtype=bool)
            read[topic] = True
            read.flags.writeable = False
            self._memo["has_readers"] = read
        return read

    def cached(self, key: str, build):
        """``build(self)``, once per snapshot (as :meth:`StreamsSnapshot.cached`): what the solvers and the checker
        derive from a read-only snapshot is kept with it under ``key`` (prefixed with the name of the module that
        computes it), and the value must be read-only.

        >>> s = parse_consumer({"format": "stickyflow.snapshot/1", "kind": "consumer", "topics": {}, "members": []})
        >>> s.cached("doc.answer", lambda s: 42), s.cached("doc.answer", lambda s: 0)
        (42, 42)
        """
        memo = self._memo
        if key in memo:
            return memo[key]
        value = memo[key] = build(self)
        return value

    def subscription_topics(self) -> tuple[np.ndarray, np.ndarray]:
        """Each distinct subscription's existing topics (positions in ``topics``), end to end, and how many each
        has, for the subscriptions of :meth:`subscription_groups` (read-only int64 arrays; once per snapshot).

        >>> s = parse_consumer({"format": "stickyflow.snapshot/1", "kind": "consumer",
        ...     "topics": {"x": {"partitions": 1}, "y": {"partitions": 1}},
        ...     "members": [{"id": "a", "subscription": ["y", "x"]}, {"id": "b", "subscription": ["y", "z"]}]})
        >>> [a.tolist() for a in s.subscription_topics()]
        [[1, 0, 1], [2, 1]]
        """
        return self._group_topics()

    def _group_topics(self) -> tuple[np.ndarray, np.ndarray]:
        """Each distinct subscription's existing topics (positions in ``topics``), end to end, and how many
        each has (the groups of :meth:`subscription_groups`)."""
        if "group_topics" in self._memo:
            return self._memo["group_topics"]
        _, distinct = self.subscription_groups()
        pos = defaultdict(lambda: -1, {t: j for j, t in enumerate(self.topics)})
        coded = self._memo.get("group_codes")
        if coded is not None:  # the reader numbered the names: look up each name once, not each (group, name)
            names, codes, glen = coded
            flat = np.fromiter(map(pos.__getitem__, names), dtype=np.int64, count=len(names))[codes]
        else:
            glen = np.fromiter(map(len, distinct), dtype=np.int64, count=len(distinct))
            flat = np.fromiter(map(pos.__getitem__, chain.from_iterable(distinct)), dtype=np.int64,
                               count=int(glen.sum()))
        known = flat >= 0
        if not known.all():
            glen = np.bincount(np.repeat(np.arange(len(distinct)), glen)[known], minlength=len(distinct))
            flat = flat[known]
        flat.flags.writeable = glen.flags.writeable = False
        self._memo["group_topics"] = flat, glen
        return flat, glen

    def reads(self, group: np.ndarray, topic: np.ndarray) -> np.ndarray:
        """Does distinct subscription ``group[i]`` read topic ``topic[i]`` (positions in ``topics``), element
        by element: a lookup in :meth:`subscription_matrix` where that is small, else a search in the sorted
        (subscription, topic) pairs (no dense matrix of every subscription by every topic)."""
        flat, glen = self._group_topics()
        T = len(self.topics)
        if len(glen) == 1:  # everyone subscribes alike: one row
            return self.subscription_matrix()[0].take(topic)
        if len(glen) * T <= _DENSE_READS:  # one flat take (a third of a two-index lookup's time)
            return self.subscription_matrix().ravel().take(np.asarray(group, dtype=np.int64) * T + topic)
        keys = self._memo.get("read_keys")
        if keys is None:
            keys = self._memo["read_keys"] = np.sort(np.repeat(np.arange(len(glen), dtype=np.int64), glen) * T + flat)
        return in_sorted(np.asarray(group, dtype=np.int64) * T + topic, keys)

    def subscription_matrix(self) -> np.ndarray:
        """Distinct subscription x topic (positions in ``topics``): does it read the topic (boolean)."""
        reads = self._memo.get("matrix")
        if reads is None:
            topic, glen = self._group_topics()
            G, T = len(glen), len(self.topics)
            reads = np.zeros(G * T, dtype=bool)  # one flat index per pair: a 2-D one costs twice as much
            reads[np.repeat(np.arange(G, dtype=np.int64) * T, glen) + topic] = True
            reads = reads.reshape(G, T)
            reads.flags.writeable = False
            self._memo["matrix"] = reads
        return reads

    def assignable_topics(self) -> list[str]:
        """Existing topics that at least one member subscribes to, in snapshot order."""
        return [t for t, r in zip(self.topics, self.has_readers().tolist()) if r]

    def __repr__(self) -> str:
        return (f"ConsumerSnapshot(id={self.id!r}, topics={len(self.topics)}, "
                f"partitions={sum(t.partitions for t in self.topics.values())}, members={len(self.members)}, "
                f"protocol={self.protocol!r})")


def _check_objects(snap: ConsumerSnapshot) -> None:
    """Check a snapshot built from Python objects by the reader's rules (write it as JSON, read it back).

    Lists are taken wherever tuples are, and ``topics`` may be a list of :class:`Topic`; the checked,
    normalized parts replace the given ones, so a snapshot never holds what the reader would refuse.
    """
    topics = snap.topics
    if isinstance(topics, (list, tuple)):
        for i, t in enumerate(topics):
            same_type(t, Topic, f"topics[{i}]")
        seen: dict[str, Topic] = {}
        for i, t in enumerate(topics):
            if t.name in seen:
                raise InvalidSnapshotError(Problem(f"topics[{i}].name", f'must be unique ("{t.name}" appears twice)'))
            seen[t.name] = t
        topics = seen
    elif not isinstance(topics, Mapping):
        raise InvalidSnapshotError(Problem("topics", f"must be a mapping of name to Topic, not {type(topics).__name__}"))
    for key, t in topics.items():
        same_type(t, Topic, join("topics", str(key)))
        if key != t.name:
            raise InvalidSnapshotError(Problem(join("topics", str(key)) + ".name",
                                               f"must be the key it is filed under ({key!r}), not {t.name!r}"))
    members = names(snap.members, "members")
    for i, m in enumerate(members):
        same_type(m, Member, f"members[{i}]")
    same_type(snap.config, ConsumerConfig, "config")
    object.__setattr__(snap, "topics", topics)
    object.__setattr__(snap, "members", members)
    read_back(snap, consumer_to_json(snap), parse_consumer, ("topics", "members", "protocol", "config", "id", "now_ms"))


# --------------------------------------------------------------------------- reading

_CONFIG_KEYS = frozenset({"rack_aware", "traffic_cost", "non_overlap_cost", "balance", "capacity", "load_slack"})
_TOP_KEYS = frozenset({"format", "kind", "id", "now_ms", "protocol", "topics", "members", "config"})
_TOPIC_KEYS = frozenset({"partitions", "racks", "rates"})
_MEMBER_KEYS = frozenset({"id", "subscription", "rack", "generation", "owned", "instance_id", "capacity"})


def parse_consumer(doc: Mapping[str, Any], chk: Checker | None = None) -> ConsumerSnapshot:
    """Build a :class:`ConsumerSnapshot` from parsed JSON, or raise :class:`InvalidSnapshotError`.

    Every problem is collected; the error names the first field and counts the rest.
    """
    own_checker = chk is None
    chk = chk or Checker()
    chk.extra_keys(doc, _TOP_KEYS, "")
    snap_id = chk.string(doc, "id", "", required=False)
    now_ms = chk.integer(doc, "now_ms", "", required=False, default=0)
    protocol = chk.choice(doc, "protocol", "", ("eager", "cooperative"), default="eager")

    topics = _parse_topics(doc, chk)
    members, claims, subscriptions, columns = _parse_members(doc, chk)
    config = _parse_config(doc, chk)
    pairs = None  # the (member, topic) subscriptions: from the reader's groups when it took the members
    if subscriptions is not None:
        group, _, (_, _, klen) = subscriptions
        pairs = int(klen[group].sum())
    _check_limits(topics, members, chk, pairs)
    _check_load(topics, members, config, chk, subscriptions)
    if own_checker:
        chk.raise_if_any()
    with reading():
        snap = ConsumerSnapshot(topics=topics, members=members, protocol=protocol, config=config,
                                id=snap_id, now_ms=now_ms)
    if chk.warnings:
        object.__setattr__(snap, "warnings", chk.warnings)
    if claims is not None:
        snap._memo["claims"] = claims
    if columns is not None:  # the bulk reader's lists of ids and racks, and the generations (-1: unknown)
        snap._memo["column_id"], snap._memo["column_rack"], snap._memo["generations"] = columns
    if subscriptions is not None:  # the members' subscriptions as the reader grouped and coded them
        group, distinct, coded = subscriptions
        snap._memo["groups"] = (group, distinct)
        snap._memo["group_codes"] = coded
    return snap


def _check_load(topics: Mapping[str, Topic], members: tuple[Member, ...], config: ConsumerConfig, chk: Checker,
                subscriptions: Any) -> None:
    """The rules that tie the load fields together: the rates of all topics sum to a finite number; with
    ``"balance": "load"`` every topic that some member subscribes to carries rates; a member without a capacity
    needs a default (``config.capacity``) when others state one."""
    problem = total_rate_problem(topics.values())
    if problem is not None:
        chk.fail("topics", "the rates of all topics " + problem)
    if config.balance == "load":
        if subscriptions is not None:  # the bulk reader's distinct subscriptions
            read = set(chain.from_iterable(subscriptions[1]))
        else:
            read = set(chain.from_iterable(m.subscription for m in members))
        for name, t in topics.items():
            if t.rates is None and name in read:
                chk.fail(join("topics", name) + ".rates",
                         f'is required: config.balance is "load" and members subscribe to {name!r}')
                break
    if config.capacity is None and not any(p.field.endswith(".capacity") for p in chk.problems):
        stated = [m.capacity is not None for m in members]
        if any(stated) and not all(stated):
            i = stated.index(False)
            chk.fail(f"members[{i}].capacity", "is required when other members state a capacity and "
                                              "config.capacity is null (there is no default to take)")


def _check_limits(topics: Mapping[str, Topic], members: tuple[Member, ...], chk: Checker,
                  pairs: int | None = None) -> None:
    """The size limits of one solve (:mod:`stickyflow.limits`), checked before anything is built from the sizes
    (``pairs``: the (member, topic) subscriptions, when already counted)."""
    from .. import limits

    total = sum(t.partitions for t in topics.values())
    if total > limits.MAX_PARTITIONS:
        big = max(topics.values(), key=lambda t: t.partitions)
        where = join("topics", big.name) + ".partitions" if big.partitions > limits.MAX_PARTITIONS else "topics"
        chk.fail(where, f"{total:,} partitions in all: one solve takes at most {limits.MAX_PARTITIONS:,} "
                        "(stickyflow.limits.MAX_PARTITIONS)")
    if len(members) > limits.MAX_MEMBERS:
        chk.fail("members", f"{len(members):,} members: one solve takes at most {limits.MAX_MEMBERS:,} "
                            "(stickyflow.limits.MAX_MEMBERS)")
    if pairs is None:
        pairs = sum(len(m.subscription) for m in members)
    if pairs > limits.MAX_SUBSCRIPTIONS:
        chk.fail("members", f"{pairs:,} (member, topic) subscriptions: one solve takes at most "
                            f"{limits.MAX_SUBSCRIPTIONS:,} (stickyflow.limits.MAX_SUBSCRIPTIONS)")


def _parse_topics(doc: Mapping[str, Any], chk: Checker) -> Mapping[str, Topic]:
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


def _parse_members(doc: Mapping[str, Any], chk: Checker
                   ) -> tuple[tuple[Member, ...], _FlatClaims | None, Any, tuple | None]:
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
    seen: set[str] = set()
    for i, m in enumerate(raw):
        path = f"members[{i}]"
        if not isinstance(m, dict):
            chk.fail(path, "must be an object")
            continue
        chk.extra_keys(m, _MEMBER_KEYS, path, "members[*]")
        mid = chk.string(m, "id", path)
        if mid is not None:
            if mid in seen:
                chk.fail(f"{path}.id", f'must be unique ("{mid}" appears twice)')
            seen.add(mid)
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
            owned=MappingProxyType(owned) if owned else _EMPTY,
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
class _FlatClaims:
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
    def of(cls, members: tuple[Member, ...]) -> _FlatClaims:
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


def _read_owned(owned: list) -> _FlatClaims | None:
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
    return _FlatClaims(list(chain.from_iterable(present)), per_member, lens, parts)


class _LazyMapping(Mapping):
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
        if isinstance(other, _LazyMapping):
            other = other._get()
        return self._get() == other if isinstance(other, Mapping) else NotImplemented

    __hash__ = None  # type: ignore[assignment]  (a mapping: unhashable, as dict and mappingproxy are)

    def __repr__(self) -> str:
        return repr(self._get())


class _OwnedView(_LazyMapping):
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


def _well_formed_members(raw: list) -> tuple[tuple[Member, ...], _FlatClaims | None, Any, tuple | None] | None:
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
        deque(map(set_owned, compress(out, map(operator.not_, owned)), repeat(_EMPTY)), 0)
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
        codes = _first_seen_ids(flat, code)
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
        codes = _first_seen_ids(flat, code)  # every name is numbered already
    group.flags.writeable = codes.flags.writeable = klen.flags.writeable = False
    return group, keys, (names, codes, klen)


_DENSE_REPEATS = 1 << 20  # distinct subscriptions x topic names up to which repeats are found by one bincount


def _first_seen_ids(values, index: dict, dtype=np.int64) -> np.ndarray:
    """Each value's number in ``index``, values not yet in it numbered on, in order of first appearance
    (``index`` grows): one pass in C, each new value numbered on first sight by a ``defaultdict``. Raises
    ``TypeError`` for an unhashable value.

    >>> index = {"x": 0}
    >>> _first_seen_ids(["y", "x", "z", "y"], index).tolist(), index
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


def _parse_config(doc: Mapping[str, Any], chk: Checker) -> ConsumerConfig:
    raw = chk.obj(doc, "config", "", required=False)
    if raw is None:
        return ConsumerConfig()
    chk.unknown_keys(raw, _CONFIG_KEYS, "config")
    rack_aware = chk.boolean(raw, "rack_aware", "config", required=False)
    traffic = chk.integer(raw, "traffic_cost", "config", required=False, minimum=0, default=10)
    overlap = chk.integer(raw, "non_overlap_cost", "config", required=False, minimum=0, default=1)
    balance = chk.choice(raw, "balance", "config", BALANCES, default="count")
    capacity = chk.number(raw, "capacity", "config", required=False, strict=True, allow_null=True)
    slack = chk.number(raw, "load_slack", "config", required=False, default=DEFAULT_LOAD_SLACK)
    return ConsumerConfig(rack_aware=rack_aware, traffic_cost=traffic, non_overlap_cost=overlap, balance=balance,
                          capacity=capacity, load_slack=slack)


# --------------------------------------------------------------------------- writing

def consumer_to_json(snap: ConsumerSnapshot) -> dict[str, Any]:
    """The snapshot as spec JSON (a plain dict), the inverse of :func:`parse_consumer`."""
    topics: dict[str, Any] = {}
    for t in snap.topics.values():
        spec: dict[str, Any] = {"partitions": t.partitions}
        if t.racks is not None:
            spec["racks"] = [sorted(r) for r in t.racks]
        if t.rates is not None:
            spec["rates"] = t.rates.tolist() if isinstance(t.rates, np.ndarray) else list(t.rates)
        topics[t.name] = spec
    members = []
    for m in snap.members:
        d: dict[str, Any] = {"id": m.id, "subscription": list(m.subscription)}
        if m.rack is not None:
            d["rack"] = m.rack
        if m.generation is not None:
            d["generation"] = m.generation
        if m.owned:
            d["owned"] = {t: list(p) for t, p in m.owned.items()}
        if m.instance_id is not None:
            d["instance_id"] = m.instance_id
        if m.capacity is not None:
            d["capacity"] = m.capacity
        members.append(d)
    out: dict[str, Any] = {"format": SNAPSHOT_FORMAT, "kind": "consumer"}
    if snap.id is not None:
        out["id"] = snap.id
    if snap.now_ms:
        out["now_ms"] = snap.now_ms
    out["protocol"] = snap.protocol
    out["topics"] = topics
    out["members"] = members
    cfg = snap.config
    config: dict[str, Any] = {"traffic_cost": cfg.traffic_cost, "non_overlap_cost": cfg.non_overlap_cost}
    if cfg.rack_aware is not None:
        config["rack_aware"] = cfg.rack_aware
    if cfg.balance != "count":
        config["balance"] = cfg.balance
    if cfg.capacity is not None:
        config["capacity"] = cfg.capacity
    if cfg.load_slack != DEFAULT_LOAD_SLACK:
        config["load_slack"] = cfg.load_slack
    out["config"] = config
    return out


# --------------------------------------------------------------------------- KIP-341 claims

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
        claims = snap._memo["claims"] = _FlatClaims.of(members)
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
