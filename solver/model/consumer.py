"""Consumer-group snapshots: the frozen model, reading and writing the spec's JSON.

A :class:`ConsumerSnapshot` is one moment of one consumer group: the topics
(partition counts, replica racks), the members (subscriptions, racks, the
partitions they owned and the generation they owned them in) and the group's
configuration. See ``snapshot-format.md`` (kind ``"consumer"``). The bulk readers of
members and topics are :mod:`stickyflow.model.consumer_members`'s; KIP-341's
resolution of the members' claims is :mod:`stickyflow.model.consumer_claims`'s.

>>> snap = parse_consumer({
...     "format": "stickyflow.snapshot/1", "kind": "consumer",
...     "topics": {"t": {"partitions": 2}},
...     "members": [{"id": "a", "subscription": ["t"]}]})
>>> snap.topics["t"].partitions, snap.members[0].id
(2, 'a')
"""

from __future__ import annotations

import operator
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import chain
from types import MappingProxyType
from typing import Any

import numpy as np

from ..check.input import Checker, built_by_reader, join, names, objects_of, read_back, reading, same_type
from ..errors import InvalidSnapshotError, Problem
from ..load import BALANCES, DEFAULT_LOAD_SLACK, read_rates, total_rate_problem
from .arrays import in_sorted
from .jsonio import SNAPSHOT_FORMAT, snapshot_head

__all__ = [
    "SNAPSHOT_FORMAT",
    "Topic",
    "Member",
    "ConsumerConfig",
    "ConsumerSnapshot",
    "parse_consumer",
    "consumer_to_json",
]

_DENSE_READS = 1 << 24  # distinct subscriptions x topics up to which "who reads what" is one boolean matrix
EMPTY: Mapping = MappingProxyType({})


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
    owned: Mapping[str, tuple[int, ...]] = field(default_factory=lambda: EMPTY)
    instance_id: str | None = None
    capacity: float | None = None  # the load it can take (balance by load); None: the config's

    def __post_init__(self) -> None:
        if type(self.subscription) is not tuple:
            object.__setattr__(self, "subscription", names(self.subscription, f"Member(id={self.id!r}).subscription"))
        owned = self.owned
        if owned is not EMPTY and type(owned) is not MappingProxyType:
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
    members = objects_of(snap.members, Member, "members")
    same_type(snap.config, ConsumerConfig, "config")
    object.__setattr__(snap, "topics", topics)
    object.__setattr__(snap, "members", members)
    read_back(snap, consumer_to_json(snap), parse_consumer, ("topics", "members", "protocol", "config", "id", "now_ms"))


# --------------------------------------------------------------------------- reading

_CONFIG_KEYS = frozenset({"rack_aware", "traffic_cost", "non_overlap_cost", "balance", "capacity", "load_slack"})
_TOP_KEYS = frozenset({"format", "kind", "id", "now_ms", "protocol", "topics", "members", "config"})


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

    from .consumer_members import parse_members, parse_topics  # they build this module's Topic and Member

    topics = parse_topics(doc, chk)
    members, claims, subscriptions, columns = parse_members(doc, chk)
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
    out = snapshot_head("consumer", snap)
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
