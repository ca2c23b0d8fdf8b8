"""Kafka 4's server-side ``uniform`` assignor (KIP-848), as a baseline for consumer groups.

In Kafka 4 the group coordinator computes a consumer group's target assignment
itself; its default assignor, ``UniformAssignor``, picks one of two builders:

* **Homogeneous** (every member subscribes to the same topics). With ``P``
  partitions and ``N`` members, the first ``P % N`` members visited get a quota
  of ``P // N + 1``, the others ``P // N``: the extra slots go by visiting order,
  not to the members that already own more. Each member keeps its previous
  partitions, topic by topic in the order of its previous assignment, while its
  quota lasts; the rest are revoked. The partitions nobody owned (topics in name
  order, partitions by number), then the revoked ones, fill the members still
  under quota, each member taking a consecutive run. Kafka's moves are therefore
  the fewest for these quotas, which may be more than the fewest for balance.
* **Heterogeneous** (subscriptions differ). Every member keeps every previous
  partition of a topic it still subscribes to (no quota). The unowned partitions
  go topic by topic (most partitions per subscriber first; then fewer
  subscribers; then topic name), each to the next subscriber in a round over the
  least loaded ones (load = all the member's partitions). Then a balancing pass
  visits the topics with two or more subscribers in the same order and moves a
  topic's partitions, highest number first, from its most loaded subscribers to
  its least loaded ones until the two differ by at most one. It stops after a
  full round over the topics without a move, or after 16 rounds (Kafka's bound),
  so overlapping subscriptions may end one or two partitions short of balance.

Neither builder is rack-aware: Kafka removed rack awareness from its server-side
assignors in 3.8 (KAFKA-16694), so ``uniform`` ignores racks (its cross-rack
count is measured all the same). Kafka visits members and topics in the order of
its hash maps; here members go in member-id order and topics in name order, so
the answer is deterministic. Previous ownership is each partition's valid
previous owner (KIP-341 resolves contradictory claims; the coordinator itself
never has any). The front door applies the cooperative protocol (KIP-429) to
the decision like any other assignor's; in Kafka 4 the coordinator's own
reconciliation plays that part.

>>> import stickyflow
>>> snap = stickyflow.parse_snapshot({"format": "stickyflow.snapshot/1", "kind": "consumer",
...     "topics": {"t1": {"partitions": 3}, "t2": {"partitions": 3}},
...     "members": [
...         {"id": "A", "subscription": ["t1", "t2"], "owned": {"t1": [0, 2], "t2": [0]}},
...         {"id": "B", "subscription": ["t1", "t2"], "owned": {"t1": [1], "t2": [1, 2]}},
...         {"id": "C", "subscription": ["t1", "t2"]}]})
>>> stickyflow.assign(snap, "uniform").to_json()["assignment"]
{'A': {'t1': [0, 2]}, 'B': {'t1': [1], 't2': [1]}, 'C': {'t2': [0, 2]}}
"""

from __future__ import annotations

import numpy as np

from ..check.answer import ArrayAssignment
from ..model.consumer import ConsumerSnapshot
from ..model.consumer_claims import previous_owners
from ..registry import SolveOptions
from ..result import Decision

__all__ = ["assign_uniform", "MAX_BALANCE_ROUNDS"]

#: Kafka's bound on the heterogeneous builder's balancing rounds (``MAX_ITERATION_COUNT``)
MAX_BALANCE_ROUNDS = 16


def assign_uniform(snapshot: ConsumerSnapshot, options: SolveOptions | None = None) -> Decision:
    """Kafka 4's ``UniformAssignor`` target for ``snapshot`` (see the module docstring).

    Returns ``Decision(method="uniform", status="heuristic")`` with the
    assignment as owner arrays; ``extra["builder"]`` is ``"homogeneous"``,
    ``"heterogeneous"`` or ``"none"`` (no members); for the heterogeneous one
    ``extra["balance_rounds"]`` says how many balancing rounds ran. Kafka picks
    the builder from the group's subscription type; ``builder="heterogeneous"``
    among the options' ``extra`` forces one, as Kafka's tests do by handing the
    builder a group spec of that type (the homogeneous builder reads the first
    member's subscription as everybody's).
    """
    snap = snapshot
    if not snap.members:
        return Decision(assignment={}, method="uniform", status="heuristic", extra={"builder": "none"})
    order = sorted(range(len(snap.members)), key=lambda i: snap.members[i].id)
    builder = (options.extra.get("builder") if options is not None else None) or (
        "homogeneous" if len({frozenset(m.subscription) for m in snap.members}) == 1 else "heterogeneous")
    if builder not in ("homogeneous", "heterogeneous"):
        raise ValueError(f"builder: must be 'homogeneous' or 'heterogeneous', not {builder!r}")
    if builder == "homogeneous":
        owners = _homogeneous(snap, order)
        extra = {"builder": "homogeneous"}
    else:
        owners, rounds = _Heterogeneous(snap, order).run()
        extra = {"builder": "heterogeneous", "balance_rounds": rounds}
    return Decision(assignment=ArrayAssignment(snap, owners), method="uniform", status="heuristic", extra=extra)


def _kept(snap: ConsumerSnapshot, i: int, prev) -> list[tuple[str, np.ndarray]]:
    """Member ``i``'s previous partitions per existing topic, topics in the order of its ``owned``, partitions by
    number: only those it validly owned (KIP-341), which is what the coordinator's target assignment would hold."""
    out = []
    for t, parts in snap.members[i].owned.items():
        topic = snap.topics.get(t)
        if topic is None or not len(parts):
            continue
        p = np.unique(np.asarray(parts, dtype=np.int64))
        p = p[(p >= 0) & (p < topic.partitions)]
        p = p[prev.owner[t][p] == i]
        if len(p):
            out.append((t, p))
    return out


# --------------------------------------------------------------------------- homogeneous

def _homogeneous(snap: ConsumerSnapshot, order: list[int]) -> dict[str, np.ndarray]:
    subscribed = sorted({t for t in snap.members[order[0]].subscription if t in snap.topics})
    owners = {t: np.full(snap.topics[t].partitions, -1, dtype=np.int32) for t in subscribed}
    if not subscribed:
        return owners
    prev = previous_owners(snap)
    sub = {t: j for j, t in enumerate(subscribed)}
    total = sum(snap.topics[t].partitions for t in subscribed)
    base, extra = divmod(total, len(order))
    # the queue of partitions to hand out: first those nobody owned, topic by topic, then the revoked ones
    queue_t: list[np.ndarray] = []
    queue_p: list[np.ndarray] = []
    for j, t in enumerate(subscribed):
        free = np.flatnonzero(prev.owner[t] < 0)
        queue_t.append(np.full(len(free), j, dtype=np.int64))
        queue_p.append(free)
    unfilled: list[tuple[int, int]] = []
    for i in order:
        quota = base
        if extra > 0:  # the first members visited take the extra slots, whatever they owned
            quota += 1
            extra -= 1
        for t, parts in _kept(snap, i, prev):
            if t not in sub:
                continue
            keep = parts[:quota]
            owners[t][keep] = i
            quota -= len(keep)
            if len(keep) < len(parts):
                rest = parts[len(keep):]
                queue_t.append(np.full(len(rest), sub[t], dtype=np.int64))
                queue_p.append(rest)
        if quota > 0:
            unfilled.append((i, quota))
    qt = np.concatenate(queue_t)
    qp = np.concatenate(queue_p)
    at = 0
    for i, quota in unfilled:
        take_t, take_p = qt[at:at + quota], qp[at:at + quota]
        at += len(take_t)
        for j in np.unique(take_t).tolist():
            owners[subscribed[j]][take_p[take_t == j]] = i
    if at < len(qt):  # cannot happen: the quotas add up to the partitions (Kafka raises here too)
        raise AssertionError(f"uniform: {len(qt) - at} partition(s) were left unassigned")
    return owners


# --------------------------------------------------------------------------- heterogeneous

class _Balancer:
    """Two ranges over a topic's subscribers sorted by load: the least loaded, which widens to the right as its
    members each receive one more, and the most loaded, which widens to the left as its members each give one up.
    Loads are the members' totals over all topics and change as partitions move."""

    def __init__(self, size: list[int]):
        self.size = size
        self.members: list[int] = []

    def start(self, subscribers: list[int]) -> int:
        size = self.size
        m = sorted(subscribers, key=lambda k: (size[k], k))
        self.members = m
        self.low_end = 0            # the least loaded range is m[0:low_end]
        self.low_level = size[m[0]] - 1
        self.low_next = 0
        self.high_start = len(m)    # the most loaded range is m[high_start:high_end]
        self.high_end = len(m)
        self.high_level = size[m[-1]] + 1
        self.high_next = len(m) - 1
        return size[m[-1]] - size[m[0]]

    def least_loaded(self) -> int:
        m, size = self.members, self.size
        if self.low_next >= self.low_end:  # everyone in the range got one: raise its level and widen it
            self.low_level += 1
            while self.low_end < len(m) and size[m[self.low_end]] == self.low_level:
                self.low_end += 1
            self.low_next = 0
        k = m[self.low_next]
        self.low_next += 1
        return k

    def most_loaded(self) -> int:
        """The next member to give up a partition, or -1 when no member in reach has one."""
        m, size = self.members, self.size
        if self.high_next < self.high_start:
            if self.high_end <= self.high_start and self.high_start > 0:
                # the range was emptied by exclusions: restart its level from the next member down
                self.high_level = size[m[self.high_start - 1]]
            else:
                self.high_level -= 1
            while self.high_start > 0 and size[m[self.high_start - 1]] == self.high_level:
                self.high_start -= 1
            self.high_next = self.high_end - 1
        if self.high_next < 0:
            return -1
        k = m[self.high_next]
        self.high_next -= 1
        return k

    def exclude_last(self) -> None:
        """Drop the member ``most_loaded`` just returned from the most loaded range (it has nothing to give)."""
        m = self.members
        pos = self.high_next + 1
        m[pos], m[self.high_end - 1] = m[self.high_end - 1], m[pos]
        self.high_end -= 1

    def balanced(self) -> bool:
        return self.high_level - self.low_level <= 1


class _Heterogeneous:
    def __init__(self, snap: ConsumerSnapshot, order: list[int]):
        self.snap = snap
        self.order = order  # position -> snapshot member index; positions are Kafka's member indexes
        self.pos = {i: k for k, i in enumerate(order)}
        subscribers: dict[str, list[int]] = {}
        for k, i in enumerate(order):
            for t in dict.fromkeys(snap.members[i].subscription):
                if t in snap.topics:
                    subscribers.setdefault(t, []).append(k)
        self.subscribers = subscribers
        self.owner = {t: np.full(snap.topics[t].partitions, -1, dtype=np.int64) for t in subscribers}
        self.size = [0] * len(order)

    def _sorted(self, topics) -> list[str]:
        n = self.snap.topics
        subs = self.subscribers
        # most partitions per subscriber first, then fewer subscribers, then name
        return sorted(topics, key=lambda t: (-n[t].partitions / len(subs[t]), len(subs[t]), t))

    def _move(self, t: str, p: int, k: int) -> None:
        old = int(self.owner[t][p])
        if old >= 0:
            self.size[old] -= 1
        self.owner[t][p] = k
        self.size[k] += 1

    def run(self) -> tuple[dict[str, np.ndarray], int]:
        snap = self.snap
        if not self.subscribers:
            return {}, 0
        prev = previous_owners(snap)
        # 1. every member keeps what it owned of the topics it still subscribes to
        for k, i in enumerate(self.order):
            subscription = set(snap.members[i].subscription)
            for t, parts in _kept(snap, i, prev):
                if t in subscription:
                    self.owner[t][parts] = k
                    self.size[k] += len(parts)
        # 2. the rest, topic by topic, round the least loaded subscribers
        balancer = _Balancer(self.size)
        free = {t: np.flatnonzero(o < 0).tolist() for t, o in self.owner.items()}
        for t in self._sorted([t for t, f in free.items() if f]):
            balancer.start(self.subscribers[t])
            for p in free[t]:
                self._move(t, p, balancer.least_loaded())
        # 3. balance, topic by topic, until a round over the topics moves nothing (at most 16 rounds)
        rounds = self._balance(balancer)
        owners = {t: np.where(o >= 0, np.asarray(self.order, dtype=np.int64)[np.maximum(o, 0)], -1)
                  for t, o in self.owner.items()}
        return owners, rounds

    def _balance(self, balancer: _Balancer) -> int:
        topics = self._sorted([t for t, s in self.subscribers.items() if len(s) >= 2])
        if not topics:
            return 0
        last = -1  # the last topic that moved something (or the first visited)
        for rnd in range(MAX_BALANCE_ROUNDS):
            for j, t in enumerate(topics):
                if j == last:
                    return rnd
                moved = self._balance_topic(t, balancer)
                if moved or last == -1:
                    last = j
        return MAX_BALANCE_ROUNDS

    def _balance_topic(self, t: str, balancer: _Balancer) -> int:
        if balancer.start(self.subscribers[t]) <= 1:
            return 0
        owner = self.owner[t]
        # the topic's partitions grouped by owner (then by number): a member gives up its highest-numbered one
        parts = np.lexsort((np.arange(len(owner)), owner)).tolist()
        sorted_owner = owner[parts].tolist()
        start: dict[int, int] = {}
        end: dict[int, int] = {}
        for x, o in enumerate(sorted_owner):
            start.setdefault(o, x)
            end[o] = x + 1
        moved = 0
        while not balancer.balanced():
            while True:
                giver = balancer.most_loaded()
                if giver == -1:
                    break
                if end.get(giver, 0) - start.get(giver, 0) <= 0:
                    balancer.exclude_last()
                    continue
                break
            if giver == -1:
                break
            end[giver] -= 1
            p = parts[end[giver]]
            taker = balancer.least_loaded()
            if balancer.balanced():
                break
            self._move(t, p, taker)
            moved += 1
        return moved
