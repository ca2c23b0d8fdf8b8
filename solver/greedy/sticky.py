"""Kafka's sticky consumer assignor (``AbstractStickyAssignor``), as stickyflow's baseline and fallback.

Kafka's ``StickyAssignor`` and ``CooperativeStickyAssignor`` share one
algorithm with two builders, and so does :func:`assign_sticky`:

* **Constrained** (KAFKA-9987), when every member subscribes to the same
  topics. With ``P`` partitions and ``N`` members, ``minQuota = P // N`` and
  ``maxQuota = ceil(P / N)``; exactly ``P % N`` members may end at
  ``maxQuota``. Members are visited once, in the order Kafka's hash map
  of them has (:func:`java_hash_order`): one owning fewer than ``minQuota``
  keeps all it owns; one owning ``maxQuota`` or more keeps its ``maxQuota``
  lowest-numbered partitions (ordered by partition number, then topic name)
  while ``maxQuota`` slots remain; any other keeps its ``minQuota``
  lowest-numbered. The partitions left over go round-robin (topics by name,
  partitions by number) to the members under ``minQuota``, then one each to
  members at ``minQuota``. Without racks, moves are therefore the fewest that
  a balanced assignment allows.
* **General** (KIP-54), with mixed subscriptions. Valid previous ownership is
  kept; every other partition, topics ordered by how few members can read them,
  goes to the eligible member with the fewest partitions (ties: the smaller
  member id); then the balancing loop sweeps the partitions and moves one
  from its holder to the least-loaded eligible member when the holder has two
  or more partitions more, preferring its *previous* owner (the claimant with
  the highest generation below the group's highest, KIP-341) when the holder
  has two or more more than that one. When the loop ends no more balanced, by
  Kafka's balance score (the sum of load differences over all member pairs),
  than it started, the pre-loop assignment is kept.

Claims are resolved once, as KIP-341 says (:func:`stickyflow.model.consumer_claims.previous_owners`:
the higher generation wins, equal generations: nobody's claim does), for both
builders, as Kafka 3.5+ does in ``allSubscriptionsEqual``: a member of an older
generation keeps the claims nobody newer contests. (Kafka 2.8 to 3.4 dropped
every claim of such a member in the constrained builder; stickyflow follows
the rack-aware releases it models.) Kafka's own bookkeeping of ties depends on
the order of a hash map.

Rack awareness (KIP-881, Kafka 3.5+) is on when the snapshot is rack-aware
(``snapshot.rack_aware``; with ``config.rack_aware`` unset Kafka's own test also
applies: members' racks must meet the replicas' racks, and not every partition
may sit on every rack). Then a previously owned partition whose replicas are
not on its owner's rack is given up, and new partitions go first to a member on
a replica's rack (within the quotas in the constrained builder; among the least
loaded eligible members in the general one), balance before locality.

Where Kafka's code has a bug, this module does what the code meant:

* a member's previous owner is only preferred if it still subscribes to the
  topic (Kafka may hand the topic to a member that does not read it);
* the rack-aware round-robin counts members that reach ``maxQuota`` (the
  KAFKA-15170 fix);
* subscriptions are compared as sets (Kafka treats an empty first
  subscription as "not seen yet");
* where Kafka's answer depends on the order of its hash map of members (which
  member may keep ``maxQuota`` in the constrained builder), stickyflow takes
  that order from Java's ``HashMap`` (:func:`java_hash_order`; ties within a
  bucket in snapshot order), so it gives Kafka's answer; every other member
  order is the member-id order, so the answer is deterministic.

>>> import stickyflow
>>> snap = stickyflow.parse_snapshot({"format": "stickyflow.snapshot/1", "kind": "consumer",
...     "topics": {"t0": {"partitions": 2}, "t1": {"partitions": 2}},
...     "members": [
...         {"id": "C0", "subscription": ["t0", "t1"], "generation": 1, "owned": {"t0": [0], "t1": [0]}},
...         {"id": "C1", "subscription": ["t0", "t1"], "generation": 1, "owned": {"t0": [1], "t1": [1]}},
...         {"id": "C2", "subscription": ["t0", "t1"]}]})
>>> r = stickyflow.assign(snap, "sticky")
>>> r.to_json()["assignment"]
{'C0': {'t0': [0], 't1': [0]}, 'C1': {'t0': [1]}, 'C2': {'t1': [1]}}
>>> r.metrics["moves"], r.metrics["imbalance"]
(1, 1)
"""

from __future__ import annotations

import numpy as np

from ..errors import SolverFaultError
from ..model.consumer import ConsumerSnapshot
from ..registry import SolveOptions
from ..result import Decision
from .sticky_group import Group, java_hash_order

__all__ = ["assign_sticky"]


def assign_sticky(snapshot: ConsumerSnapshot, options: SolveOptions | None = None) -> Decision:
    """Kafka's sticky assignment of ``snapshot`` (see the module docstring).

    Returns ``Decision(method="sticky", status="heuristic")`` whose
    ``assignment`` maps member id -> topic -> ``np.ndarray`` of partitions;
    ``extra`` says which builder ran (``"constrained"`` or ``"general"``) and
    whether racks were used.

    >>> import stickyflow
    >>> snap = stickyflow.parse_snapshot({"format": "stickyflow.snapshot/1", "kind": "consumer",
    ...     "topics": {"t": {"partitions": 3}},
    ...     "members": [{"id": "a", "subscription": ["t"]}, {"id": "b", "subscription": ["t"]}]})
    >>> d = assign_sticky(snap)
    >>> {m: {t: p.tolist() for t, p in a.items()} for m, a in d.assignment.items()}
    {'a': {'t': [0, 2]}, 'b': {'t': [1]}}
    >>> d.extra["builder"]
    'constrained'
    """
    st = Group.build(snapshot)
    if st.n == 0:
        return Decision(assignment={}, method="sticky", status="heuristic",
                        extra={"builder": "none", "rack_aware": False})
    if len({frozenset(m.subscription) for m in snapshot.members}) == 1:
        builder = "constrained"
        owner = _constrained(st)
    else:
        builder = "general"
        owner = _General(st, snapshot).run()
    return Decision(assignment=st.arrays(snapshot, owner), method="sticky", status="heuristic",
                    extra={"builder": builder, "rack_aware": st.racks.active})


# --------------------------------------------------------------------------- constrained (equal subscriptions)

def _constrained(st: Group) -> np.ndarray:
    """KAFKA-9987's quota algorithm with KIP-881's rack-aware round-robin; returns the owner of every partition."""
    n, P = st.n, st.P
    owner = np.full(P, -1, dtype=np.int32)
    if not P:
        return owner
    min_q, expected = divmod(P, n)  # ``expected`` members end at maxQuota
    max_q = min_q + (1 if expected else 0)
    racks = st.racks

    # 1. keep owned partitions up to the quota, lowest (partition, topic) first
    valid = st.prev >= 0
    if racks.active:
        g = np.flatnonzero(valid)
        valid[g[racks.mismatch(st.prev[g], g)]] = False
    idx = np.flatnonzero(valid)
    own = st.prev[idx]
    key = st.part_of[idx] * len(st.topics) + st.topic_of[idx]  # topics are numbered by name
    srt = np.lexsort((key, own))
    idx, own = idx[srt], own[srt]
    counts = np.bincount(own, minlength=n)
    keep = np.zeros(n, dtype=np.int64)
    under: list[int] = []   # members below minQuota
    exact: list[int] = []   # members at minQuota that may still get one more
    over = 0                # members already at maxQuota
    # Kafka visits the members in the order of its HashMap of them: which members may keep maxQuota is
    # first come, first served in that order
    for c in java_hash_order(st.ids, st.snap_index).tolist():
        o = int(counts[c])
        if o < min_q:
            keep[c] = o
            under.append(c)
        elif o >= max_q and over < expected:
            keep[c] = max_q
            over += 1
            if over == expected:
                exact.clear()
        else:
            keep[c] = min_q
            if over < expected:
                exact.append(c)
    under.sort()  # then both lists are sorted by member id
    exact.sort()
    starts = np.zeros(n, dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    kept = (np.arange(len(idx)) - starts[own]) < keep[own]
    owner[idx[kept]] = own[kept]
    load = keep.copy()

    # 2. rack-aware round-robin, 3. plain round-robin for the rest
    unassigned = np.flatnonzero(owner < 0)
    if racks.active:
        # partitions whose racks hold the fewest members go first (a stable sort, as Kafka's)
        unassigned = unassigned[np.argsort(racks.set_members[racks.part_set[unassigned]], kind="stable")]
        unassigned, over = _rack_round_robin(st, unassigned, owner, load, under, exact, min_q, max_q,
                                             expected, over)
    _round_robin(unassigned, owner, load, under, exact, min_q)
    return owner


def _rack_round_robin(st: Group, unassigned: np.ndarray, owner: np.ndarray, load: np.ndarray,
                      under: list[int], exact: list[int], min_q: int, max_q: int, expected: int,
                      over: int) -> tuple[np.ndarray, int]:
    """Kafka's ``assignRackAwareRoundRobin``: give each partition to an unfilled member on one of its racks.

    Members below ``minQuota`` are searched circularly from where the last one
    was found; failing that, members at ``minQuota`` from the start. Partitions
    that find nobody are returned, in order, for the plain round-robin.
    """
    racks = st.racks
    mr = racks.member_rack.tolist()
    set_racks = racks.set_racks
    part_set = racks.part_set
    lo = load.tolist()
    under_on: dict[int, int] = {}
    for c in under:
        if mr[c] >= 0:
            under_on[mr[c]] = under_on.get(mr[c], 0) + 1
    exact_on: dict[int, int] = {}
    for c in exact:
        if mr[c] >= 0:
            exact_on[mr[c]] = exact_on.get(mr[c], 0) + 1
    nxt = 0
    left: list[int] = []
    for g in unassigned.tolist():
        rs = set_racks[part_set[g]]
        c = -1
        if rs and any(under_on.get(r, 0) for r in rs):
            size = len(under)
            i = nxt
            for k in range(size):
                i = (nxt + k) % size
                if mr[under[i]] in rs:
                    break
            c = under[i]
            count = lo[c] + 1
            if count >= min_q:
                del under[i]
                under_on[mr[c]] -= 1
                if count < max_q and over < expected:
                    exact.append(c)
                    exact_on[mr[c]] = exact_on.get(mr[c], 0) + 1
            else:
                i += 1
            nxt = i % len(under) if under else 0
        elif exact and rs and any(exact_on.get(r, 0) for r in rs):
            i = next(k for k, m in enumerate(exact) if mr[m] in rs)
            c = exact[i]
            if lo[c] + 1 == max_q:
                del exact[i]
                exact_on[mr[c]] -= 1
                over += 1
                if over == expected:
                    exact.clear()
                    exact_on.clear()
        if c >= 0:
            owner[g] = c
            lo[c] += 1
        else:
            left.append(g)
    load[:] = lo
    return np.array(left, dtype=np.int64), over


def _round_robin(unassigned: np.ndarray, owner: np.ndarray, load: np.ndarray, under: list[int],
                 exact: list[int], min_q: int) -> None:
    """Kafka's ``assignRoundRobin``, in bulk.

    The members below ``minQuota`` are dealt one partition each, in id order, round
    after round; a member leaves the deal when it reaches ``minQuota`` and joins the
    queue of members at ``minQuota``. Once nobody is below, each remaining partition
    goes to the next member of that queue. Round ``r`` of the deal holds exactly the
    members that needed more than ``r``, so the whole deal is one sort.
    """
    if not len(unassigned):
        return
    u = np.array(under, dtype=np.int64)
    need = min_q - load[u] if len(u) else np.zeros(0, dtype=np.int64)
    total = int(need.sum())
    if total > len(unassigned):
        raise SolverFaultError("sticky: members below minQuota need more partitions than remain (a bug)")
    pos = np.repeat(np.arange(len(u)), need)
    rnd = np.arange(total) - np.repeat(np.cumsum(need) - need, need)
    deal = np.lexsort((pos, rnd))
    takers = u[pos[deal]]
    owner[unassigned[:total]] = takers
    np.add.at(load, takers, 1)
    # the order in which members reached minQuota: by their last round, then id order
    reached = u[np.lexsort((np.arange(len(u)), need - 1))].tolist()
    queue = exact + reached
    rest = unassigned[total:]
    if len(rest) > len(queue):
        raise SolverFaultError("sticky: no unfilled member left for the remaining partitions (a bug)")
    takers = np.array(queue[:len(rest)], dtype=np.int64)
    owner[rest] = takers
    load[takers] += 1


# --------------------------------------------------------------------------- general (mixed subscriptions)

def _water_fill(load: np.ndarray, cands: np.ndarray, k: int) -> np.ndarray:
    """Who receives ``k`` partitions dealt one by one to the least-loaded of ``cands`` (ties: lower number).

    The i-th pick goes to the i-th smallest (load at that moment, member) pair,
    and a member at load ``L`` offers the pairs ``(L, c), (L + 1, c), ...``: so
    the picks are the ``k`` smallest such pairs, found by a binary search on the
    water level. ``load`` is updated.
    """
    L = load[cands]
    lo, hi = int(L.min()), int(L.min()) + k  # filled(hi) >= k

    def filled(level: int) -> int:  # picks at loads below ``level``
        return int(np.maximum(level - L, 0).sum())

    while lo < hi:  # smallest level with filled(level) >= k
        mid = (lo + hi) // 2
        if filled(mid) >= k:
            hi = mid
        else:
            lo = mid + 1
    level = lo
    cnt = np.maximum(level - 1 - L, 0)
    extra = k - int(cnt.sum())  # picks at load level - 1, to the first members (in order) that reach it
    at = np.flatnonzero(L <= level - 1)[:extra]
    cnt[at] += 1
    rep = np.repeat(np.arange(len(cands)), cnt)
    lev = L[rep] + (np.arange(k) - np.repeat(np.cumsum(cnt) - cnt, cnt))
    takers = cands[rep[np.lexsort((rep, lev))]]
    load[cands] += cnt
    return takers


class _Movements:
    """Kafka's ``PartitionMovements``: where each moved partition came from, to undo moves rather than chain them."""

    __slots__ = ("moved", "by_topic")

    def __init__(self) -> None:
        self.moved: dict[int, tuple[int, int]] = {}
        self.by_topic: dict[int, dict[tuple[int, int], dict[int, None]]] = {}

    def _add(self, g: int, t: int, pair: tuple[int, int]) -> None:
        self.moved[g] = pair
        self.by_topic.setdefault(t, {}).setdefault(pair, {})[g] = None

    def _remove(self, g: int, t: int) -> tuple[int, int]:
        pair = self.moved.pop(g)
        pairs = self.by_topic[t]
        del pairs[pair][g]
        if not pairs[pair]:
            del pairs[pair]
        if not pairs:
            del self.by_topic[t]
        return pair

    def actual(self, g: int, t: int, old: int, new: int) -> int:
        """The partition to move so that a partition of the same topic goes back where it came from."""
        pairs = self.by_topic.get(t)
        if pairs is None:
            return g
        if g in self.moved:
            old = self.moved[g][0]
        back = pairs.get((new, old))
        return next(iter(back)) if back else g

    def move(self, g: int, t: int, old: int, new: int) -> None:
        if g in self.moved:
            src, _ = self._remove(g, t)
            if src != new:
                self._add(g, t, (src, new))
        else:
            self._add(g, t, (old, new))


class _General:
    """Kafka's ``GeneralAssignmentBuilder`` on arrays.

    The balancing loop's questions ("are the loads within one?", "is there an
    eligible member two partitions lighter?") are answered from values cached
    until the next move, so a sweep that moves nothing costs one comparison per
    partition.
    """

    def __init__(self, st: Group, snap: ConsumerSnapshot):
        self.st = st
        self.snap = snap
        n, T = st.n, len(st.topics)
        self.sizes = np.diff(st.offsets)
        self.sub = np.zeros((n, T), dtype=bool)
        for c, ts in enumerate(st.subs):
            self.sub[c, ts] = True
        self.owner = np.full(st.P, -1, dtype=np.int32)
        self.load = np.zeros(n, dtype=np.int64)
        self.topic_of = st.topic_of.tolist()
        self.version = 0  # moves made so far; the caches below are valid for one version
        self.move_cap = 10 * st.P + 100
        self._within_at = -1
        self._within = False
        self._tmin = [0] * T
        self._tmin_at = [-1] * T
        self.moves = _Movements()
        self.prev2 = np.full(st.P, -1, dtype=np.int32)

    # ---- set-up

    def _previous_generation_owners(self) -> None:
        """Kafka's ``prevAssignment``: per partition, the claimant with the highest generation below the group's highest.

        Members without a generation count as generation -1; ties go to the lower member id.
        """
        st, snap = self.st, self.snap
        gens = [-1 if m.generation is None else m.generation for m in snap.members]
        top = max(gens)
        best = np.full(st.P, np.iinfo(np.int64).min, dtype=np.int64)
        tnum = {t: j for j, t in enumerate(st.topics)}
        for c in range(st.n):
            i = int(st.snap_index[c])
            gen = gens[i]
            if gen >= top:
                continue
            for t, parts in snap.members[i].owned.items():
                j = tnum.get(t)
                if j is None or not parts:
                    continue
                p = np.asarray(parts, dtype=np.int64)
                p = p[p < self.sizes[j]] + st.offsets[j]
                p = p[gen > best[p]]
                best[p] = gen
                self.prev2[p] = c
        # only a previous owner that may take the partition back is of use (Kafka does not check)
        has = np.flatnonzero(self.prev2 >= 0)
        bad = ~self.sub[self.prev2[has], st.topic_of[has]]
        self.prev2[has[bad]] = -1

    def run(self) -> np.ndarray:
        st = self.st
        owner, load, racks = self.owner, self.load, st.racks
        T = len(st.topics)
        if not st.P:
            return owner
        # topics with the fewest potential members first, then by name
        topic_order = sorted(range(T), key=lambda t: (len(st.elig[t]), t))
        sorted_all = np.concatenate([np.arange(st.offsets[t], st.offsets[t + 1]) for t in topic_order])

        # 1. keep valid previous ownership (subscribed, and rack-aligned when racks are used)
        claimed = np.flatnonzero(st.prev >= 0)
        c = st.prev[claimed]
        ok = self.sub[c, st.topic_of[claimed]]
        if racks.active:
            ok &= ~racks.mismatch(c, claimed)
        revocation_required = bool((~ok).any())
        owner[claimed[ok]] = c[ok]
        load += np.bincount(c[ok], minlength=st.n)
        unassigned = sorted_all[owner[sorted_all] < 0]
        initializing = int(load.max()) == 0
        self._previous_generation_owners()

        # 2. new partitions to the least-loaded eligible member, on a replica's rack first
        rest = self._assign_rack_aligned(unassigned) if racks.active else unassigned
        self._assign_least_loaded(rest)

        # 3. the balancing loop, over topics two or more members can read and the members that can change
        movable_topic = np.array([len(e) >= 2 for e in st.elig])
        reassignable = sorted_all[movable_topic[st.topic_of[sorted_all]]]
        unassigned = unassigned[movable_topic[st.topic_of[unassigned]]]
        max_size = self.sub @ self.sizes
        fixed = (load == max_size) & ~(self.sub & movable_topic).any(axis=1)
        self.part = np.flatnonzero(~fixed)
        self.in_part = ~fixed
        before_owner, before_load = owner.copy(), load.copy()
        if not revocation_required:
            self._perform(unassigned)
        performed = self._perform(reassignable)
        if (not initializing and performed
                and _balance_score(load[self.part]) >= _balance_score(before_load[self.part])):
            owner[:] = before_owner
            load[:] = before_load
        return owner

    def _assign_rack_aligned(self, unassigned: np.ndarray) -> np.ndarray:
        """Kafka's first ``maybeAssign`` pass: each partition to the least-loaded eligible member whose rack
        holds a replica, or that has no rack; returns the partitions nobody took."""
        st, racks, load, owner = self.st, self.st.racks, self.load, self.owner
        mr = racks.member_rack
        cache: dict[tuple[int, int], np.ndarray] = {}
        left: list[int] = []
        part_set = racks.part_set.tolist()
        for g in unassigned.tolist():
            t, s = self.topic_of[g], part_set[g]
            cands = cache.get((t, s))
            if cands is None:
                e = st.elig[t]
                r = mr[e]
                cands = cache[(t, s)] = e[(r < 0) | racks.match[s, np.maximum(r, 0)]]
            if not len(cands):
                left.append(g)
                continue
            c = int(cands[np.argmin(load[cands])])
            owner[g] = c
            load[c] += 1
        return np.array(left, dtype=np.int64)

    def _assign_least_loaded(self, parts: np.ndarray) -> None:
        """Kafka's second ``maybeAssign`` pass, in bulk for each run of partitions of one topic."""
        if not len(parts):
            return
        ts = self.st.topic_of[parts]
        cuts = np.flatnonzero(ts[1:] != ts[:-1]) + 1
        for run in np.split(parts, cuts):
            cands = self.st.elig[int(self.st.topic_of[run[0]])]
            self.owner[run] = _water_fill(self.load, cands, len(run))

    # ---- the balancing loop

    def _within_one(self) -> bool:
        """The quick half of Kafka's ``isBalanced``: the loads of the members that can change differ by one at most."""
        if self._within_at != self.version:
            lp = self.load[self.part]
            self._within = not len(lp) or int(lp.min()) >= int(lp.max()) - 1
            self._within_at = self.version
        return self._within

    def _lightest_load(self, t: int) -> int:
        if self._tmin_at[t] != self.version:
            self._tmin[t] = int(self.load[self.st.elig[t]].min())
            self._tmin_at[t] = self.version
        return self._tmin[t]

    def _perform(self, parts: np.ndarray) -> bool:
        """Kafka's ``performReassignments``: sweep ``parts`` until balanced, again while a sweep moved something.

        Kafka stops a sweep as soon as ``isBalanced`` holds: loads within one, or
        no member could take a partition from a member two or more heavier. The
        second half is exactly "no partition meets a move condition below" (a
        previous owner is eligible too), so once it holds the rest of the sweep
        moves nothing: checking only the quick half gives the same moves, without
        an O(partitions) check after every move.
        """
        performed = False
        load, owner, prev2, topic_of = self.load, self.owner, self.prev2, self.topic_of
        order = parts.tolist()
        while True:
            modified = False
            for g in order:
                if self._within_one():
                    break
                c = int(owner[g])
                p = int(prev2[g])
                if p >= 0 and p != c and self.in_part[p] and load[c] > load[p] + 1:
                    self._reassign(g, p)
                    performed = modified = True
                    continue
                t = topic_of[g]
                if load[c] > self._lightest_load(t) + 1:
                    e = self.st.elig[t]
                    self._reassign(g, int(e[np.argmin(load[e])]))
                    performed = modified = True
            # Kafka's loop has no bound; ours stops after a generous number of moves, still valid
            if not modified or self.version > self.move_cap:
                return performed

    def _reassign(self, g: int, new: int) -> None:
        t = self.topic_of[g]
        g = self.moves.actual(g, t, int(self.owner[g]), new)
        old = int(self.owner[g])
        self.moves.move(g, t, old, new)
        self.owner[g] = new
        self.load[old] -= 1
        self.load[new] += 1
        self.version += 1


def _balance_score(loads: np.ndarray) -> int:
    """Kafka's balance score: the sum of ``|a - b|`` over all pairs of member loads (0 is perfect)."""
    s = np.sort(loads.astype(np.int64))
    m = len(s)
    return int(np.dot(s, 2 * np.arange(m) - m + 1))
