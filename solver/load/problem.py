r"""Balance by load as arrays: the problem the load optimizer and its fallback solve, and how an answer measures.

A :class:`LoadProblem` holds one consumer group with ``"balance": "load"`` as numpy arrays: every partition of
every assignable topic (topic-major, as the count flow numbers them) with its rate, its topic and its valid
previous owner; every member's subscription class and capacity; the cross-rack table. The rules of the spec's
"Balance by load", in order, for an owner array ``x`` (partition -> member):

1. valid: ``x[p]`` reads ``topic[p]``;
2. ``U(x) <= lim(U*)``, where ``U(x) = max_m load_m / cap_m`` over the active members (those that read some
   assignable topic), ``U*`` the least ``U`` of any valid ``x``, and ``lim(u) = (1 + slack) u``, capped at 1 when
   capacities are given and ``u <= 1`` (see :func:`peak_limit`);
3. where capacities are given, the least overload ``sum_m max(0, load_m - cap_m)``;
4. the least ``noc x moved_load + tc x cross_rack_load``;
5. the fewest moves.

:func:`measure` evaluates an answer by these; :func:`partition_bound` is the cheap proven lower bound on ``U*``
that needs no solver (every partition's own rate, and how many of the largest ones some member must share);
:func:`per_partition_best` tells when rules 4 and 5 hold partition by partition (then they are proven without a
model). Everything here is numpy: no step per partition in Python.

>>> p = LoadProblem.of(rates=[4.0, 1.0, 1.0], topic=[0, 0, 0], reads=[[True]], member_class=[0, 0],
...                    capacity=[1.0, 1.0], owner=[0, 0, 0])
>>> m = measure(p, np.array([0, 1, 1]))
>>> m.peak, m.moved_load, m.moves
(4.0, 2.0, 2)
>>> round(partition_bound(p), 6)  # proven bounds are lowered by BOUND_MARGIN
4.0
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from fractions import Fraction
from itertools import count
from typing import Any

import numpy as np

from ..model.consumer_claims import previous_owners
from . import load_model

__all__ = ["LoadProblem", "load_problem", "Measure", "measure", "peak_limit", "peak_limit_exact", "partition_bound",
           "per_partition_best", "topic_classes", "readers_of", "has_local_reader", "BOUND_MARGIN"]

#: a proven bound computed in floating point is lowered by this relative margin before it is claimed. The sums
#: behind the bounds are exactly rounded (math.fsum), pairwise (numpy's sum: about log2(n) x 1.1e-16) or running
#: sums of at most 8 x members terms (at the limit of 100,000 members, 8e5 x 1.1e-16 < 1e-10, in the worst case);
#: a peak within 1e-12 of a limit counts as within it, so what is claimed holds for the exact rates
BOUND_MARGIN = 1e-9


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class LoadProblem:
    """One consumer group balanced by load, as arrays (see the module's text). Build it with :meth:`of` or
    :func:`stickyflow.formulations.load.opt.load_problem`.

    ``rackset[p]`` numbers partition ``p``'s replica racks (0: none known, never cross-rack), ``member_rack[m]``
    the member's rack (-1: none), and ``cross[s, r]`` says whether rack ``r`` (the last column: no rack) holds
    none of rack set ``s``; ``tc`` is 0 when the group is not rack-aware.
    """

    rates: np.ndarray          # float64[N] >= 0
    topic: np.ndarray          # int64[N], in [0, T)
    reads: np.ndarray          # bool[K, T]: does member class k read topic t
    member_class: np.ndarray   # int64[M], -1: reads no assignable topic (inactive)
    capacity: np.ndarray       # float64[M] > 0
    owner: np.ndarray          # int64[N]: the valid previous owner, -1 for none
    capacity_given: bool = True
    slack: float = 0.05
    noc: int = 1
    tc: int = 0
    rackset: np.ndarray | None = None      # int64[N]
    member_rack: np.ndarray | None = None  # int64[M]
    cross: np.ndarray | None = None        # bool[S, R + 1]

    @classmethod
    def of(cls, *, rates, topic, reads, member_class, capacity, owner, capacity_given: bool = True,
           slack: float = 0.05, noc: int = 1, tc: int = 0, rackset=None, member_rack=None, cross=None) -> LoadProblem:
        """A problem from lists or arrays (copied, checked for shape; a test and benchmark helper)."""
        rates = np.asarray(rates, dtype=np.float64)
        topic = np.asarray(topic, dtype=np.int64)
        reads = np.atleast_2d(np.asarray(reads, dtype=bool))
        member_class = np.asarray(member_class, dtype=np.int64)
        capacity = np.asarray(capacity, dtype=np.float64)
        owner = np.asarray(owner, dtype=np.int64)
        if not (len(rates) == len(topic) == len(owner)) or len(member_class) != len(capacity):
            raise ValueError("rates, topic and owner: one per partition; member_class and capacity: one per member")
        if len(rates) and (rates.min() < 0 or not np.isfinite(rates).all()):
            raise ValueError("rates: finite and >= 0")
        if len(capacity) and capacity.min() <= 0:
            raise ValueError("capacity: > 0")
        readable = reads[member_class[member_class >= 0]].any(axis=0)
        if len(topic) and not readable[topic].all():
            raise ValueError("topic: every partition's topic must be read by some member (else it is not assignable)")
        if rackset is not None:
            rackset, member_rack, cross = (np.asarray(rackset, dtype=np.int64),
                                           np.asarray(member_rack, dtype=np.int64), np.asarray(cross, dtype=bool))
        return cls(rates=rates, topic=topic, reads=reads, member_class=member_class, capacity=capacity, owner=owner,
                   capacity_given=capacity_given, slack=float(slack), noc=int(noc), tc=int(tc), rackset=rackset,
                   member_rack=member_rack, cross=cross)

    @property
    def n_partitions(self) -> int:
        return len(self.rates)

    @property
    def n_members(self) -> int:
        return len(self.capacity)

    @property
    def active(self) -> np.ndarray:
        """Per member: does it read an assignable topic (the members the peak is taken over)."""
        return self.member_class >= 0

    @property
    def racks_matter(self) -> bool:
        return self.tc > 0 and self.rackset is not None and self.cross is not None and bool(self.cross.any())

    def allowed(self, parts: np.ndarray, members: np.ndarray) -> np.ndarray:
        """Elementwise: may partition ``parts[i]`` go to member ``members[i]`` (does it read the topic)."""
        k = self.member_class[members]
        return (k >= 0) & self.reads[np.maximum(k, 0), self.topic[parts]]

    def far(self, parts: np.ndarray, members: np.ndarray) -> np.ndarray:
        """Elementwise: is partition ``parts[i]`` read across racks by member ``members[i]`` (always false when
        racks cost nothing; a member -1 reads nothing)."""
        if not self.racks_matter:
            return np.zeros(len(parts), dtype=bool)
        rack = self.member_rack[np.maximum(members, 0)]
        out = self.cross[self.rackset[parts], np.where(rack < 0, self.cross.shape[1] - 1, rack)]
        return out & (members >= 0)


def load_problem(snap: Any) -> tuple[LoadProblem, list[str], np.ndarray]:
    """A consumer snapshot with known loads as a :class:`LoadProblem`, with the assignable topics (snapshot
    order) and where each starts among the problem's partitions (``offsets``, one more than topics): what
    :meth:`stickyflow.check.answer.ArrayAssignment.of_flat` takes back. Numpy over partitions; one step per
    distinct subscription, per rack and per partition's rack set only where racks cost something.

    >>> import stickyflow
    >>> s = stickyflow.parse_snapshot({"format": "stickyflow.snapshot/1", "kind": "consumer",
    ...     "topics": {"t": {"partitions": 2, "rates": [3, 1]}, "u": {"partitions": 1, "rates": [5]}},
    ...     "members": [{"id": "a", "subscription": ["t"], "generation": 1, "owned": {"t": [1]}},
    ...                 {"id": "b", "subscription": ["t", "u"]}], "config": {"balance": "load"}})
    >>> p, topics, offsets = load_problem(s)
    >>> p.rates.tolist(), p.owner.tolist(), p.reads.tolist(), p.member_class.tolist(), topics
    ([3.0, 1.0, 5.0], [-1, 0, -1], [[True, False], [True, True]], [0, 1], ['t', 'u'])
    """
    model = load_model(snap)
    read = snap.has_readers()
    names = list(snap.topics)
    topics = [t for t, r in zip(names, read.tolist()) if r]
    cols = np.flatnonzero(read)
    sizes = np.diff(model.offsets)[cols]
    offsets = np.zeros(len(cols) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    prev = previous_owners(snap)
    if len(cols) == len(names):
        rates, owner = model.rates, prev.all.astype(np.int64)
    else:  # the assignable topics' slices, end to end, without a step per partition
        where = np.repeat(model.offsets[cols] - offsets[:-1], sizes) + np.arange(int(offsets[-1]))
        rates, owner = model.rates[where], prev.all[where].astype(np.int64)
    topic = np.repeat(np.arange(len(cols)), sizes)
    # member classes: the distinct sets of assignable topics that subscriptions read
    group, _ = snap.subscription_groups()
    flat, glen = snap.subscription_topics()
    column = np.full(len(names), -1, dtype=np.int64)
    column[cols] = np.arange(len(cols))
    reads, group_class = _classes(column[flat], glen, len(cols))
    member_class = group_class[group] if len(group) else np.zeros(0, dtype=np.int64)
    cfg = snap.config
    rackset = member_rack = cross = None
    tc = 0
    if snap.rack_aware and cfg.traffic_cost > 0:
        tc = cfg.traffic_cost
        index: dict[frozenset, int] = {frozenset(): 0}
        number = defaultdict(count(1).__next__, index)  # rack sets numbered on first sight, in C (map)
        rackset = np.zeros(len(rates), dtype=np.int64)
        for j, t in enumerate(topics):
            racks = snap.topics[t].racks
            if racks is not None:
                rackset[offsets[j]:offsets[j + 1]] = np.fromiter(map(number.__getitem__, racks), dtype=np.int64,
                                                                 count=len(racks))
        index = dict(number)
        rack_ids: dict[str, int] = {}
        member_rack = np.array([-1 if m.rack is None else rack_ids.setdefault(m.rack, len(rack_ids))
                                for m in snap.members], dtype=np.int64)
        cross = np.zeros((len(index), len(rack_ids) + 1), dtype=bool)  # the last column: a member without rack
        for s, i in index.items():
            if s:
                for r, k in rack_ids.items():
                    cross[i, k] = r not in s
    problem = LoadProblem(rates=np.asarray(rates, dtype=np.float64), topic=topic, reads=reads,
                          member_class=member_class.astype(np.int64), capacity=model.capacity, owner=owner,
                          capacity_given=model.capacity_given, slack=float(model.slack), noc=cfg.non_overlap_cost,
                          tc=tc, rackset=rackset, member_rack=member_rack, cross=cross)
    return problem, topics, offsets


_DENSE = 1 << 24  # distinct subscriptions x assignable topics up to which classes come from one boolean matrix


def _classes(col: np.ndarray, glen: np.ndarray, T: int) -> tuple[np.ndarray, np.ndarray]:
    """Member classes from the distinct subscriptions' topics (``col``: assignable-topic columns end to end, -1
    for the others; ``glen``: how many each has): the classes' rows (bool[K, T]) and each subscription's class
    (-1: it reads none), classes in the order of their rows."""
    G = len(glen)
    if G * T <= _DENSE:
        rows = np.zeros((G, T), dtype=bool)
        ok = col >= 0
        rows[np.repeat(np.arange(G), glen)[ok], col[ok]] = True
        reads, inverse = np.unique(rows, axis=0, return_inverse=True) if G else (rows, np.zeros(0, dtype=np.int64))
        inverse = np.asarray(inverse).reshape(-1)
    else:  # one set per distinct subscription
        sets: dict[frozenset, int] = {}
        inverse = np.empty(G, dtype=np.int64)
        for g, part in enumerate(np.split(col, np.cumsum(glen)[:-1])):
            inverse[g] = sets.setdefault(frozenset(part[part >= 0].tolist()), len(sets))
        reads = np.zeros((len(sets), T), dtype=bool)
        for s, i in sets.items():
            reads[i, list(s)] = True
    keep = np.flatnonzero(reads.any(axis=1))
    renumber = np.full(len(reads), -1, dtype=np.int64)
    renumber[keep] = np.arange(len(keep))
    return np.ascontiguousarray(reads[keep]), renumber[inverse] if G else np.zeros(0, dtype=np.int64)


@dataclass(frozen=True, slots=True)
class Measure:
    """An answer measured by the rules: the peak ``U``, the overload, rule 4's cost and its parts, the moves."""

    peak: float
    overload: float
    cost: float
    moved_load: float
    cross_load: float
    moves: int

    def key(self) -> tuple:
        return self.peak, self.overload, self.cost, self.moves


def measure(problem: LoadProblem, x: np.ndarray) -> Measure:
    """Rules 2 to 5 of an owner array ``x`` (every partition given to a member)."""
    loads = np.bincount(x, weights=problem.rates, minlength=problem.n_members).astype(np.float64)
    util = loads / problem.capacity
    active = problem.active
    peak = float(util[active].max()) if active.any() else 0.0
    overload = float(np.maximum(loads - problem.capacity, 0.0).sum()) if problem.capacity_given else 0.0
    moved = (problem.owner >= 0) & (x != problem.owner)
    far = problem.far(np.arange(problem.n_partitions), x)
    moved_load = float(problem.rates[moved].sum())
    cross_load = float(problem.rates[far].sum())
    return Measure(peak=peak, overload=overload, cost=problem.noc * moved_load + problem.tc * cross_load,
                   moved_load=moved_load, cross_load=cross_load, moves=int(np.count_nonzero(moved)))


def peak_limit(problem: LoadProblem, u: float) -> float:
    """Rule 2's limit for a least peak of ``u``: ``(1 + slack) u``, and at most 1 where capacities are given and
    ``u <= 1``. Without capacities, nothing is overload, so the cap does not apply (a choice: the spec's "every
    member can stay within its capacity" speaks of capacities someone stated). Non-decreasing in ``u``.

    >>> p = LoadProblem.of(rates=[1.0], topic=[0], reads=[[True]], member_class=[0], capacity=[2.0], owner=[-1])
    >>> peak_limit(p, 0.5), peak_limit(p, 0.99), peak_limit(p, 2.0)
    (0.525, 1.0, 2.1)
    """
    lim = (1.0 + problem.slack) * u
    if problem.capacity_given and u <= 1.0:
        lim = min(lim, 1.0)
    return lim


def peak_limit_exact(problem: LoadProblem, u: Fraction) -> Fraction:
    """:func:`peak_limit` in exact arithmetic (the slack is taken as the float it is)."""
    lim = (1 + Fraction(problem.slack)) * u
    if problem.capacity_given and u <= 1:
        lim = min(lim, Fraction(1))
    return lim


def topic_classes(problem: LoadProblem) -> tuple[np.ndarray, np.ndarray]:
    """Topics read by the same member classes form one topic class: each topic's class (int64[T]) and each
    class's readers (bool[K, C]), classes numbered by first topic."""
    T = problem.reads.shape[1]
    if T == 0:
        return np.zeros(0, dtype=np.int64), np.zeros((problem.reads.shape[0], 0), dtype=bool)
    cols = np.ascontiguousarray(problem.reads.T)
    packed = np.packbits(cols, axis=1)
    keys = np.ascontiguousarray(packed).view(np.dtype((np.void, packed.shape[1]))).ravel()
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(first), dtype=np.int64)
    rank[order] = np.arange(len(first))
    tclass = rank[inverse.reshape(-1)]
    return tclass, np.ascontiguousarray(problem.reads[:, first[order]])


def readers_of(problem: LoadProblem, class_reads: np.ndarray) -> np.ndarray:
    """Member x topic class: does the member read the class (bool[M, C]; inactive members read nothing)."""
    k = problem.member_class
    out = np.zeros((len(k), class_reads.shape[1]), dtype=bool)
    ok = k >= 0
    out[ok] = class_reads[k[ok]]
    return out


_TOP = 8  # partition_bound tries the j largest rates for j up to this many times the readers


def partition_bound(problem: LoadProblem) -> float:
    """A proven lower bound on ``U*`` from the largest rates alone.

    For each topic class (its partitions may go only to its readers ``R``, ``n`` of them, the largest capacity
    among them ``c``) and for the whole group: of the ``j`` largest rates, some member gets at least
    ``ceil(j / n)``, so its load is at least the sum of the ``ceil(j / n)`` smallest of those ``j``; the best
    ``j`` gives the bound (``j = 1``: the largest rate over ``c``; ``j = n + 1``: the two that must share).
    Only ``j`` up to :data:`_TOP` x ``n`` are tried (beyond, the average, which the flows bound, says more), so
    only that many rates are sorted.

    >>> p = LoadProblem.of(rates=[5.0, 4.0, 3.0], topic=[0, 0, 0], reads=[[True]], member_class=[0, 0],
    ...                    capacity=[1.0, 1.0], owner=[-1, -1, -1])
    >>> round(partition_bound(p), 6)  # two of three go to one member: at least 4 + 3
    7.0
    """
    N = problem.n_partitions
    active = problem.active
    if N == 0 or not active.any():
        return 0.0
    tclass, class_reads = topic_classes(problem)
    who = readers_of(problem, class_reads)  # member x topic class
    n_r = who.sum(axis=0)
    cap_r = np.where(who, problem.capacity[:, None], 0.0).max(axis=0)
    best = 0.0
    sets = [(problem.rates, int(active.sum()), float(problem.capacity[active].max()))]
    if class_reads.shape[1] > 1:
        pc = tclass[problem.topic]
        order = np.argsort(pc, kind="stable")  # by class (integer keys: a radix sort)
        cut = np.searchsorted(pc[order], np.arange(class_reads.shape[1] + 1))
        sets += [(problem.rates[order[a:b]], int(n_r[c]), float(cap_r[c]))
                 for c, (a, b) in enumerate(zip(cut[:-1], cut[1:])) if b > a and n_r[c] > 0]
    for rates, n, cap in sets:
        top = min(len(rates), _TOP * n)
        r = -np.sort(-(rates if top == len(rates) else rates[np.argpartition(-rates, top - 1)[:top]]))
        prefix = np.concatenate([[0.0], np.cumsum(r)])
        j = np.arange(1, len(r) + 1)
        share = -(-j // n)
        best = max(best, float(((prefix[j] - prefix[j - share]) / cap).max()))
    return best * (1 - BOUND_MARGIN)


def per_partition_best(problem: LoadProblem, x: np.ndarray) -> bool:
    """Whether every partition sits where rule 4's cost of that partition alone is least, and among those places
    with its valid previous owner when that is one of them: then no assignment has a smaller rule-4 cost or, at
    that cost, fewer moves (both are sums over partitions), so rules 4 and 5 hold whatever the peak asks.

    A partition's cost at member ``m`` is ``noc r`` when it leaves its valid previous owner plus ``tc r`` when
    ``m`` reads it across racks: at the owner ``tc r [owner far]``, elsewhere at least
    ``noc r [it has an owner] + tc r [no reader is local]``. Compared in units of ``r`` (integers: exact).
    """
    N = problem.n_partitions
    if N == 0:
        return True
    parts = np.arange(N)
    o = problem.owner
    own_ok = (o >= 0) & problem.allowed(parts, np.maximum(o, 0))
    noc, tc = problem.noc, problem.tc if problem.racks_matter else 0
    r = problem.rates
    # the cost of x, per partition, in units of r (integers: exact)
    moved = (o >= 0) & (x != o)
    units = noc * moved + tc * problem.far(parts, x)
    # the least: at the owner (0 move + tc [owner far]) when it can keep it; elsewhere noc [owner exists] +
    # tc [no local reader]
    own_units = np.where(own_ok, tc * problem.far(parts, np.where(own_ok, o, -1)), np.iinfo(np.int64).max)
    local = has_local_reader(problem) if tc else np.ones(N, dtype=bool)
    other_units = noc * (o >= 0) + tc * ~local
    least = np.minimum(own_units, other_units)
    zero = r == 0  # a partition without load costs nothing anywhere: only rule 5 speaks (stay with the owner)
    cost_ok = zero | (units == least)
    # rule 5: at equal least cost, stay where the owner can keep it
    stay_ok = ~moved | ~own_ok | (np.where(zero, 0, own_units) > np.where(zero, 0, least))
    return bool((cost_ok & stay_ok).all())


def has_local_reader(problem: LoadProblem) -> np.ndarray:
    """Per partition: does some member that may take it read it on its own rack (numpy over rack sets)."""
    N = problem.n_partitions
    if not problem.racks_matter:
        return np.ones(N, dtype=bool)
    tclass, class_reads = topic_classes(problem)
    who = readers_of(problem, class_reads)  # member x topic class
    rack = problem.member_rack
    col = np.where(rack < 0, problem.cross.shape[1] - 1, rack)
    near = ~problem.cross[:, col]  # rack set x member: local
    # rack set x topic class: some reader local
    ok = near.astype(np.int64) @ who.astype(np.int64) > 0
    return ok[problem.rackset, tclass[problem.topic]]
