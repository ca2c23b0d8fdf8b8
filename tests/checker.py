"""The one checker every test runs after every assignor: validity plus the result's own claims.

A consumer answer is read as users read it, the ``member id -> topic -> partitions`` mapping, in one of two
ways. Below ``ARRAYS_FROM`` partitions it goes through the library's own check of such a mapping
(``inspect_consumer``) and the cooperative rules are checked partition by partition. From there on (Kafka's
1,000,000-partition groups, where those two take about 10 s a result) the checker flattens the mapping into
arrays once and checks the same rules with numpy: ``tests/test_checker.py`` holds both ways to the same
verdict and the same metrics on a few hundred answers, good and spoiled.
"""

from __future__ import annotations

import itertools

import numpy as np

from stickyflow.result import AssignmentResult

ARRAYS_FROM = 50_000  # partitions in the snapshot: from here on the consumer checks read the answer as arrays


def check_result(snapshot, result: AssignmentResult, *, arrays: bool | None = None) -> None:
    """Assert that ``result`` is a valid, self-consistent answer for ``snapshot``.

    ``arrays`` picks the way a consumer answer is read (default: by the snapshot's size, see the module).
    """
    assert result.error == "NONE", result.error
    assert result.solver.status in ("optimal", "feasible", "heuristic", "fallback")
    if result.kind == "consumer":
        if arrays is None:
            arrays = sum(t.partitions for t in snapshot.topics.values()) >= ARRAYS_FROM
        if arrays:
            violations, metrics = consumer_check_arrays(snapshot, result.target)
        else:
            from stickyflow.check.consumer import inspect_consumer

            violations, metrics = inspect_consumer(snapshot, result.target)
        assert not violations, violations
        for key in ("moves", "imbalance", "cross_rack"):
            assert result.metrics[key] == metrics[key], (key, result.metrics[key], metrics[key])
        assert set(result.assignment) == {m.id for m in snapshot.members}
        if snapshot.protocol == "cooperative":
            (check_cooperative_arrays if arrays else check_cooperative_round)(snapshot, result)
        else:
            assert not result.revocations
    else:
        from stickyflow.check.streams import validate_streams

        from stickyflow.check.streams import streams_metrics

        violations = validate_streams(snapshot, result.assignment,
                                      followup_rebalance_deadline_ms=result.followup_rebalance_deadline_ms)
        assert not violations, violations
        assert set(result.assignment) == {c.process_id for c in snapshot.clients}
        metrics = streams_metrics(snapshot, result.assignment)
        for key in ("moves", "imbalance", "cross_rack"):
            assert result.metrics[key] == metrics[key], (key, result.metrics[key], metrics[key])
        # still converging (a move waits on state being restored) exactly when a follow-up is asked for
        assert (result.metrics["warming_up"] > 0) == (result.followup_rebalance_deadline_ms is not None)


def check_cooperative_round(snapshot, result: AssignmentResult) -> None:
    """The spec's cooperative rules, checked partition by partition from the snapshot alone.

    A claimed partition is in this round's assignment only with its valid previous owner; everything
    else of the target is there unless claimed; each member revokes exactly what it claims (existing
    partitions, stale claims included) and is not assigned; a follow-up is due at ``now_ms`` exactly
    when something is revoked.
    """
    from stickyflow.model.consumer_claims import previous_owners

    prev = previous_owners(snapshot)
    index = snapshot.member_index()
    claimed: dict[tuple[str, int], set[int]] = {}
    for t, claims in prev.claims.items():
        for i, parts in claims:
            for p in parts.tolist():
                claimed.setdefault((t, p), set()).add(i)
    holders: dict[tuple[str, int], list[str]] = {}
    for mid, topics in result.assignment.items():
        for t, parts in topics.items():
            for p in parts:
                holders.setdefault((t, p), []).append(mid)
                if (t, p) in claimed:
                    assert prev.of(t, p) == index[mid], (
                        f"{t}-{p} handed to {mid} while claimed by {sorted(claimed[(t, p)])}")
                assert p in result.target[mid].get(t, ()), f"{t}-{p} given to {mid} this round, not in target"
    assert all(len(v) == 1 for v in holders.values()), "a partition given twice this round"
    for mid, topics in result.target.items():
        for t, parts in topics.items():
            for p in parts:
                goes_now = (t, p) not in claimed or prev.of(t, p) == index[mid]
                assert goes_now == (p in result.assignment[mid].get(t, ())), (mid, t, p, goes_now)
    for m in snapshot.members:
        expect = {}
        for t, parts in m.owned.items():
            topic = snapshot.topics.get(t)
            if topic is None:
                continue
            given = set(result.assignment[m.id].get(t, ()))
            lost = sorted({p for p in parts if 0 <= p < topic.partitions and p not in given})
            if lost:
                expect[t] = lost
        got = {t: sorted(ps) for t, ps in result.revocations.get(m.id, {}).items() if len(ps)}
        assert got == expect, (m.id, got, expect)
    revoking = any(any(len(ps) for ps in r.values()) for r in result.revocations.values())
    assert result.followup_rebalance_deadline_ms == (snapshot.now_ms if revoking else None)


# --------------------------------------------------------------------------- the same, read as arrays

class _Layout:
    """The snapshot's partitions numbered end to end (topics in snapshot order), and its members numbered."""

    def __init__(self, snapshot):
        self.snapshot = snapshot
        self.index = {m.id: i for i, m in enumerate(snapshot.members)}
        self.topic = {t: j for j, t in enumerate(snapshot.topics)}
        self.sizes = np.array([t.partitions for t in snapshot.topics.values()], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)]).astype(np.int64)
        self.total = int(self.offsets[-1])

    def flatten(self, nested, *, strangers: bool = False, stale: bool = False
                ) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """``member id -> topic -> partitions`` as (member, partition) arrays, one entry per listed partition
        (repeats kept), and what cannot be placed: an unknown member with partitions (left out instead when
        ``strangers``), an unknown topic, a partition beyond its topic's count (both left out instead when
        ``stale``: a member's claims)."""
        problems: list[str] = []
        members: list[int] = []
        topics: list[int] = []
        chunks: list = []
        for mid, per_topic in nested.items():
            i = self.index.get(mid)
            for t, parts in per_topic.items():
                if not len(parts):
                    continue
                if i is None:
                    if not strangers:
                        problems.append(f"{mid!r} is not a member of the group")
                    break
                j = self.topic.get(t)
                if j is None:
                    if not stale:
                        problems.append(f"{mid!r} is given topic {t!r}, which does not exist")
                    continue
                members.append(i)
                topics.append(j)
                chunks.append(parts)
        counts = np.fromiter(map(len, chunks), dtype=np.int64, count=len(chunks))
        part = np.fromiter(itertools.chain.from_iterable(chunks), dtype=np.int64, count=int(counts.sum()))
        topic = np.repeat(np.array(topics, dtype=np.int64), counts)
        member = np.repeat(np.array(members, dtype=np.int64), counts)
        outside = (part < 0) | (part >= self.sizes[topic])
        if outside.any():
            if not stale:
                k = int(np.flatnonzero(outside)[0])
                problems.append(f"{int(outside.sum())} partition(s) beyond their topic's count, "
                                f"e.g. {list(self.snapshot.topics)[topic[k]]}-{part[k]}")
            member, topic, part = member[~outside], topic[~outside], part[~outside]
        return member, self.offsets[topic] + part, problems

    def previous(self) -> np.ndarray:
        """The valid previous owner of every partition (KIP-341, as the library resolves it), -1: none."""
        from stickyflow.model.consumer_claims import previous_owners

        owner = previous_owners(self.snapshot).owner
        if not self.total:
            return np.zeros(0, dtype=np.int64)
        return np.concatenate([np.asarray(owner[t], dtype=np.int64) for t in self.snapshot.topics])

    def claims(self) -> np.ndarray:
        """Every member's claims on existing partitions (stale ones dropped) as ``member * total + partition``,
        each once."""
        member, part, _ = self.flatten({m.id: m.owned for m in self.snapshot.members}, stale=True)
        return _distinct(member * self.total + part)


def _distinct(keys: np.ndarray) -> np.ndarray:
    """Sorted distinct values (``np.unique`` hashes here, 100 times slower at a million keys)."""
    keys = np.sort(keys)
    return keys[np.r_[True, keys[1:] != keys[:-1]]] if len(keys) else keys


def consumer_check_arrays(snapshot, assignment) -> tuple[list[str], dict]:
    """What is wrong with ``assignment`` (a ``member id -> topic -> partitions`` mapping) for ``snapshot``, and
    its ``moves``, ``imbalance`` and ``cross_rack``: the rules and metrics of ``inspect_consumer``, computed
    over flat arrays (every member present, every subscribed partition once, to one of its subscribers)."""
    lay = _Layout(snapshot)
    n = len(snapshot.members)
    member, part, problems = lay.flatten(assignment)
    missing = [m for m in lay.index if m not in assignment]
    if missing:
        problems.append(f"members missing from the assignment: {missing[:3]}")
    counts = np.bincount(part, minlength=lay.total)
    if (counts > 1).any():
        problems.append(f"{int((counts > 1).sum())} partition(s) assigned more than once")
    topic_of = np.repeat(np.arange(len(lay.sizes), dtype=np.int64), lay.sizes)
    read = np.zeros(len(lay.sizes), dtype=bool)  # topics with a subscriber
    pairs = []  # every (member, topic) subscription as member * topics + topic
    for i, m in enumerate(snapshot.members):
        js = [lay.topic[t] for t in m.subscription if t in lay.topic]
        read[js] = True
        pairs.append(i * len(lay.sizes) + np.array(js, dtype=np.int64))
    unassigned = read[topic_of] & (counts == 0)
    if unassigned.any():
        problems.append(f"{int(unassigned.sum())} subscribed partition(s) unassigned")
    given = member * len(lay.sizes) + topic_of[part]
    subscribed = np.isin(given, np.concatenate(pairs) if pairs else np.zeros(0, dtype=np.int64))
    if not subscribed.all():
        problems.append(f"{int((~subscribed).sum())} partition(s) given to a member that does not subscribe")
    loads = np.bincount(member, minlength=n)
    owner = np.full(lay.total, -1, dtype=np.int64)
    owner[part] = member
    old = lay.previous()
    cross = None
    if snapshot.rack_aware:
        code: dict[str, int] = {}
        rack = np.array([code.setdefault(m.rack, len(code)) if m.rack is not None else -1
                         for m in snapshot.members], dtype=np.int64)
        cross = 0
        for t, topic in snapshot.topics.items():
            if topic.racks is None or not code:
                continue
            j = lay.topic[t]
            held = owner[lay.offsets[j]:lay.offsets[j + 1]]
            sets: dict[frozenset, int] = {}
            replicas = np.array([sets.setdefault(r, len(sets)) for r in topic.racks], dtype=np.int64)
            away = np.array([[bool(s) and r not in s for r in code] for s in sets], dtype=bool)  # set x rack
            p = np.flatnonzero((held >= 0) & (rack[np.maximum(held, 0)] >= 0))
            cross += int(np.count_nonzero(away[replicas[p], rack[held[p]]]))
    metrics = {"moves": int(np.count_nonzero((old >= 0) & (owner != old))),
               "imbalance": int(loads.max() - loads.min()) if n else 0, "cross_rack": cross}
    return problems, metrics


def check_cooperative_arrays(snapshot, result: AssignmentResult) -> None:
    """:func:`check_cooperative_round`'s rules over flat arrays: this round's assignment is exactly the target
    less the claimed partitions that do not stay with their valid previous owner, given once; each member
    revokes exactly its claims on existing partitions that it is not given; a follow-up is due at ``now_ms``
    exactly when something is revoked."""
    lay = _Layout(snapshot)
    member, part, problems = lay.flatten(result.assignment)
    assert not problems, problems
    t_member, t_part, problems = lay.flatten(result.target)
    assert not problems, problems
    claims = lay.claims()
    claimed = np.zeros(lay.total, dtype=bool)
    claimed[claims % max(lay.total, 1)] = True  # claimed by anyone, a losing claim included
    old = lay.previous()
    goes_now = ~claimed[t_part] | (old[t_part] == t_member)
    now = np.sort(member * lay.total + part)
    assert np.array_equal(now, _distinct(t_member[goes_now] * lay.total + t_part[goes_now])), \
        "this round's assignment is not the target less the claimed partitions that move"
    assert not (np.bincount(part, minlength=lay.total) > 1).any(), "a partition given twice this round"
    r_member, r_part, problems = lay.flatten(result.revocations, strangers=True)
    assert not problems, problems
    expect = np.setdiff1d(claims, now, assume_unique=True)
    assert np.array_equal(np.sort(r_member * lay.total + r_part), expect), "revocations are not claims less what stays"
    revoking = any(any(len(ps) for ps in r.values()) for r in result.revocations.values())
    assert result.followup_rebalance_deadline_ms == (snapshot.now_ms if revoking else None)
