"""The bench's inputs: seeded consumer groups and Streams applications of any size, and a closed-form bound.

Consumer groups of ``P`` partitions in topics of ``per_topic`` partitions (2,000
by default, as in Kafka's own 1,000,000 x 2,000 sticky-assignor test: 500
topics) and ``M`` members; ``equal``: everyone subscribes to every topic;
``mixed``: every member picks one of 8 subscription profiles (all topics, or a
random half). The previous assignment is a balanced round-robin one (what
Kafka's assignors leave behind) by the members still there (``join``: 10% of
the members are new and own nothing; ``leave``: 10% of the previous group
left, their partitions are orphaned; ``fresh``: nobody owns anything). With
``racks=R`` members and two replicas per partition are spread over ``R`` racks.
Streams applications have ``T`` tasks in 4 subtopologies and ``C`` one-thread
clients, all stateless, or all stateful with one standby replica and lags on
the standbys; the events are the same, for clients.

The generators are numpy-built (seconds at 1,000,000 partitions) so that every
case is exactly the suite's; :mod:`stickyflow.datasets.generators` serves the
dataset and simulator work with its own scenario shapes.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Iterable

import numpy as np

from .config import EVENTS, SUBSCRIPTIONS

__all__ = ["Case", "consumer_cases", "streams_cases", "topic_count", "consumer_snapshot", "streams_document",
           "min_moves_equal"]


# --------------------------------------------------------------------------- cases

@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    """One benchmark input: its kind, size and situation. ``name`` is stable across runs.

    For consumers ``size`` is partitions and ``members`` the group's members; for
    streams ``size`` is tasks and ``members`` the clients. ``subscriptions`` is
    ``"equal"``/``"mixed"`` (consumers) or ``"stateless"``/``"stateful"`` (streams).

    >>> Case(kind="consumer", size=10_000, members=100, event="join", subscriptions="equal").name
    'consumer-10000x100-join-equal'
    """

    kind: str
    size: int
    members: int
    event: str
    subscriptions: str
    racks: int = 0
    per_topic: int = 2000
    seed: int = 0

    @property
    def name(self) -> str:
        base = f"{self.kind}-{self.size}x{self.members}-{self.event}-{self.subscriptions}"
        if self.racks:
            base += f"-racks{self.racks}"
        if self.kind == "consumer" and self.per_topic != 2000:
            base += f"-pt{self.per_topic}"
        return base


def consumer_cases(sizes: Iterable[tuple[int, int]], events: Iterable[str] = EVENTS,
                   subscriptions: Iterable[str] = SUBSCRIPTIONS, *, racks: int = 0, per_topic: int = 2000,
                   seed: int = 0) -> list[Case]:
    """Every combination, smallest sizes first."""
    return [Case(kind="consumer", size=p, members=m, event=e, subscriptions=s, racks=racks, per_topic=per_topic,
                 seed=seed)
            for p, m in sizes for s in subscriptions for e in events]


def streams_cases(sizes: Iterable[tuple[int, int]], events: Iterable[str] = EVENTS,
                  kinds: Iterable[str] = ("stateless", "stateful"), *, seed: int = 0) -> list[Case]:
    """Streams cases: tasks x clients, events, stateless or stateful (one standby) tasks."""
    return [Case(kind="streams", size=n, members=c, event=e, subscriptions=s, seed=seed)
            for n, c in sizes for s in kinds for e in events]


def _previous_group(members: int, event: str) -> tuple[int, int]:
    """(new members that own nothing, departed members whose partitions are orphaned)."""
    if event == "join":
        return (max(1, round(members * 0.1)) if members > 1 else 0), 0
    if event == "leave":
        return 0, max(1, round(members / 9))  # 10% of the previous group
    if event == "fresh":
        return members, 0
    raise ValueError(f"event: {event!r} is not one of {', '.join(EVENTS)}")


def _waterfill(loads: np.ndarray, n: int) -> np.ndarray:
    """How many of ``n`` units each entry gets when every unit goes to the least loaded (ties: lowest index)."""
    lo, hi = int(loads.min()), int(loads.min()) + n + 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if int(np.maximum(mid - loads, 0).sum()) <= n:
            lo = mid
        else:
            hi = mid
    counts = np.maximum(lo - loads, 0)
    rest = n - int(counts.sum())
    if rest:
        counts[np.flatnonzero(loads + counts == lo)[:rest]] += 1
    return counts


def _interleave(who: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Owners of consecutive partitions dealt round-robin: ``counts[k]`` partitions to ``who[k]``."""
    seq = np.repeat(who, counts)
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    rank = np.arange(len(seq)) - starts
    return seq[np.lexsort((np.arange(len(seq)), rank))]


_PROFILES = 8  # subscription profiles of a mixed group


def topic_count(case: Case) -> int:
    """How many topics the case's partitions fill: ``--per-topic`` each, and at least 8 when mixed."""
    T = max(1, -(-case.size // case.per_topic))
    return max(T, _PROFILES) if case.subscriptions == "mixed" else T


def consumer_snapshot(case: Case):
    """The case's consumer group as a :class:`stickyflow.ConsumerSnapshot` (numpy-built, seconds at 1M).

    >>> snap = consumer_snapshot(Case(kind="consumer", size=100, members=10, event="join", subscriptions="equal"))
    >>> len(snap.members), sum(len(p) for m in snap.members for p in m.owned.values())
    (10, 100)
    """
    from stickyflow.model.consumer import ConsumerSnapshot, Member, Topic

    rng = np.random.default_rng(case.seed)
    P, M = case.size, case.members
    profiles = _PROFILES
    if case.subscriptions not in SUBSCRIPTIONS:
        raise ValueError(f"subscriptions: {case.subscriptions!r} is not one of {', '.join(SUBSCRIPTIONS)}")
    T = topic_count(case)
    sizes = np.full(T, P // T, dtype=np.int64)
    sizes[: P % T] += 1
    if sizes.min() < 1:
        raise ValueError(f"size: {P} partitions cannot fill {T} topics")
    names = [f"topic-{j:04d}" for j in range(T)]
    if case.subscriptions == "equal":
        prof_topics = [np.arange(T)]
    else:
        prof_topics = [np.arange(T)] + [np.sort(rng.choice(T, size=max(1, T // 2), replace=False))
                                        for _ in range(profiles - 1)]
    n_new, n_left = _previous_group(M, case.event)
    stay = M - n_new
    prev_n = stay + n_left
    # profiles of the current members, then of the departed ones (index >= M - n_new in the previous group)
    profile = (np.zeros(M + n_left, dtype=np.int64) if len(prof_topics) == 1
               else rng.integers(0, len(prof_topics), size=M + n_left))
    prev_profile = np.concatenate([profile[:stay], profile[M:]])
    # previous owners: per topic, round-robin over its subscribers, least loaded first (balanced overall)
    owner_of = np.full(P, -1, dtype=np.int64)  # index into the previous group
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    if prev_n:
        loads = np.zeros(prev_n, dtype=np.int64)
        subscribes = np.zeros((len(prof_topics), T), dtype=bool)
        for k, ts in enumerate(prof_topics):
            subscribes[k, ts] = True
        for j in range(T):
            subs = np.flatnonzero(subscribes[prev_profile, j])
            if not len(subs):
                continue
            counts = _waterfill(loads[subs], int(sizes[j]))
            loads[subs] += counts
            keep = counts > 0
            owner_of[offsets[j]:offsets[j + 1]] = _interleave(subs[keep], counts[keep])
    # previous-group index -> current member index (departed members: -1)
    to_member = np.concatenate([np.arange(stay), np.full(n_left, -1)]).astype(np.int64)
    owner = (np.where(owner_of >= 0, to_member[np.maximum(owner_of, 0)], -1) if prev_n
             else np.full(P, -1, dtype=np.int64))
    topic_of = np.repeat(np.arange(T), sizes)
    part_of = np.arange(P) - offsets[topic_of]
    owned_by: list[dict[str, tuple[int, ...]]] = [{} for _ in range(M)]
    has = owner >= 0
    if has.any():
        o, t, p = owner[has], topic_of[has], part_of[has]
        order = np.lexsort((p, t, o))
        o, t, p = o[order], t[order], p[order]
        cut = np.flatnonzero(np.r_[True, (o[1:] != o[:-1]) | (t[1:] != t[:-1]), True])
        flat = p.tolist()
        heads_o, heads_t = o[cut[:-1]].tolist(), t[cut[:-1]].tolist()
        bounds = cut.tolist()
        for k in range(len(heads_o)):
            owned_by[heads_o[k]][names[heads_t[k]]] = tuple(flat[bounds[k]:bounds[k + 1]])
    if case.racks:
        R = case.racks
        pair = [frozenset({f"az{r}", f"az{(r + 1) % R}"}) for r in range(R)]
    topics = {}
    for j, name in enumerate(names):
        racks = None
        if case.racks:
            racks = tuple(pair[(int(x) + j) % case.racks] for x in range(int(sizes[j])))
        topics[name] = Topic(name=name, partitions=int(sizes[j]), racks=racks)
    sub_names = [tuple(names[j] for j in ts) for ts in prof_topics]
    members = tuple(
        Member(id=f"member-{i:05d}", subscription=sub_names[int(profile[i])],
               rack=f"az{i % case.racks}" if case.racks else None,
               generation=7 if i < stay else None,
               owned=MappingProxyType(owned_by[i]) if owned_by[i] else MappingProxyType({}))
        for i in range(M))
    return ConsumerSnapshot(topics=MappingProxyType(topics), members=members, id=case.name)


def streams_document(case: Case) -> dict[str, Any]:
    """The case's Kafka Streams application as snapshot JSON (a dict).

    Tasks spread over 4 subtopologies; ``stateful`` tasks carry a changelog and
    one standby replica; ``join`` adds 10% new clients with no state, ``leave``
    removes 10% of the previous clients (their tasks lose their active owner).
    """
    rng = np.random.default_rng(case.seed)
    N, C = case.size, case.members
    subtopologies = min(4, N)
    stateful = case.subscriptions == "stateful"
    if case.subscriptions not in ("stateful", "stateless"):
        raise ValueError(f"subscriptions: {case.subscriptions!r} is not stateless or stateful for streams")
    per = [N // subtopologies + (1 if s < N % subtopologies else 0) for s in range(subtopologies)]
    ids = [f"{s}_{p}" for s in range(subtopologies) for p in range(per[s])]
    offsets = rng.integers(1_000, 1_000_000, size=N) if stateful else np.zeros(N, dtype=np.int64)
    tasks = [{"id": tid, "stateful": stateful, "end_offset_sum": int(offsets[k]) if stateful else 0}
             for k, tid in enumerate(ids)]
    n_new, n_left = _previous_group(C, case.event)
    stay = C - n_new
    prev_n = stay + n_left
    active_of = np.full(N, -1, dtype=np.int64)
    standby_of = np.full(N, -1, dtype=np.int64)
    if prev_n:
        active_of = np.arange(N) % prev_n
        if stateful and prev_n > 1:
            standby_of = (active_of + 1 + np.arange(N) // prev_n % (prev_n - 1)) % prev_n
    clients = []
    for c in range(C):
        d: dict[str, Any] = {"process_id": f"client-{c:05d}", "threads": 1, "previous_active": [],
                             "previous_standby": []}
        clients.append(d)
    if prev_n:
        act = [[] for _ in range(prev_n)]
        stb = [[] for _ in range(prev_n)]
        for k, (a, s) in enumerate(zip(active_of.tolist(), standby_of.tolist())):
            act[a].append(ids[k])
            if s >= 0:
                stb[s].append(ids[k])
        for c in range(stay):
            clients[c]["previous_active"] = act[c]
            clients[c]["previous_standby"] = stb[c]
            if stateful and stb[c]:
                lag = rng.integers(0, 20_000, size=len(stb[c]))
                clients[c]["lags"] = {t: int(x) for t, x in zip(stb[c], lag.tolist())}
    config: dict[str, Any] = {"num_standby_replicas": 1 if stateful else 0}
    return {"format": "stickyflow.snapshot/1", "kind": "streams", "id": case.name, "tasks": tasks,
            "clients": clients, "config": config}


# --------------------------------------------------------------------------- lower bounds

def min_moves_equal(snap) -> int | None:
    """The least moves of any most-balanced assignment, when every member subscribes to the same topics and
    no rack costs apply (closed form, no solver); ``None`` otherwise.

    With equal subscriptions the loads are ``q`` or ``q + 1`` (``r`` members
    get ``q + 1``). A member keeps at most its quota of what it validly owned;
    the ``q + 1`` quotas go best to members owning more than ``q``.

    >>> from stickyflow import parse_snapshot
    >>> s = parse_snapshot({"format": "stickyflow.snapshot/1", "kind": "consumer",
    ...     "topics": {"t": {"partitions": 5}},
    ...     "members": [{"id": "a", "subscription": ["t"], "generation": 1, "owned": {"t": [0, 1, 2, 3, 4]}},
    ...                 {"id": "b", "subscription": ["t"]}]})
    >>> min_moves_equal(s)
    2
    """
    from stickyflow.model.consumer_claims import previous_owners

    if snap.rack_aware or not snap.members:
        return None
    subs = {frozenset(t for t in m.subscription if t in snap.topics) for m in snap.members}
    if len(subs) != 1:
        return None
    (topics,) = subs
    prev = previous_owners(snap)
    M = len(snap.members)
    owned = np.zeros(M, dtype=np.int64)
    total_owned = 0
    for t, arr in prev.owner.items():
        valid = arr[arr >= 0]
        total_owned += len(valid)
        if t in topics:
            owned += np.bincount(valid, minlength=M)
    P = sum(snap.topics[t].partitions for t in topics)
    q, r = divmod(P, M)
    kept = int(np.minimum(owned, q).sum()) + min(r, int(np.count_nonzero(owned > q)))
    return total_owned - kept
