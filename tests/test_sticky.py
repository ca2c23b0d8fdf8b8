"""Kafka's sticky assignor (``stickyflow.greedy.sticky``): Kafka's test scenarios, properties, and kafka-python as a peer.

The scenarios follow the situations Kafka's ``AbstractStickyAssignorTest`` and
the KIP-54 / KIP-341 / KIP-881 pages walk through; the checks are ours. Every
assignment goes through :func:`tests.checker.check_result`.

Run this file as a script for the benchmark numbers (nothing here asserts a
timing)::

    .venv/bin/python -m tests.test_sticky
"""

from __future__ import annotations

import random
import time
from types import MappingProxyType

import numpy as np
import pytest

import stickyflow
from stickyflow.greedy.sticky import assign_sticky
from stickyflow.model.consumer import ConsumerSnapshot, Member, Topic
from stickyflow.model.consumer_claims import previous_owners
from tests.checker import check_result
from tests.strategies import ConsumerShape, random_consumer_snapshot

# --------------------------------------------------------------------------- helpers


def group(topics: dict, members: list[dict], **kw) -> ConsumerSnapshot:
    """A snapshot from ``{"t": 3}`` (or ``{"t": {"partitions": 3, "racks": ...}}``) and member dicts."""
    doc = {"format": "stickyflow.snapshot/1", "kind": "consumer",
           "topics": {t: spec if isinstance(spec, dict) else {"partitions": spec} for t, spec in topics.items()},
           "members": members, **kw}
    return stickyflow.parse_snapshot(doc)


def sticky(snap: ConsumerSnapshot):
    """Run ``sticky`` through the front door and the one checker; return the result."""
    result = stickyflow.assign(snap, "sticky")
    check_result(snap, result)
    assert result.solver.method == "sticky" and result.solver.status == "heuristic"
    return result


def plan(result) -> dict[str, dict[str, list[int]]]:
    """The full (target) assignment as plain lists: for cooperative groups, before withholding."""
    return {m: {t: list(p) for t, p in topics.items()} for m, topics in result.target.items()}


def loads(result) -> dict[str, int]:
    return {m: sum(len(p) for p in topics.values()) for m, topics in result.target.items()}


def next_round(snap: ConsumerSnapshot, result, *, leave=(), join=(), generation: int | None = None,
               subscriptions: dict | None = None, topics: dict | None = None) -> ConsumerSnapshot:
    """The group one rebalance later: members own what ``result`` gave them, at a new generation."""
    gen = generation if generation is not None else 1 + max((m.generation or 0) for m in snap.members)
    members = []
    for m in snap.members:
        if m.id in leave:
            continue
        owned = {t: list(p) for t, p in result.target.get(m.id, {}).items() if len(p)}
        sub = (subscriptions or {}).get(m.id, list(m.subscription))
        entry = {"id": m.id, "subscription": sub, "generation": gen, "owned": owned}
        if m.rack is not None:
            entry["rack"] = m.rack
        members.append(entry)
    members += [dict(j) for j in join]
    spec = topics if topics is not None else {
        t: ({"partitions": x.partitions, "racks": [sorted(r) for r in x.racks]} if x.racks is not None
            else x.partitions) for t, x in snap.topics.items()}
    return group(spec, members)


def kafka_balanced(snap: ConsumerSnapshot, assignment) -> bool:
    """Kafka's balance rule: no member could take a partition from a member holding two or more partitions more."""
    load = {m: sum(len(p) for p in topics.values()) for m, topics in assignment.items()}
    readers: dict[str, list[str]] = {}
    for m in snap.members:
        for t in m.subscription:
            readers.setdefault(t, []).append(m.id)
    for holder, topics in assignment.items():
        for t, parts in topics.items():
            if len(parts) and any(load[holder] > load[r] + 1 for r in readers.get(t, ())):
                return False
    return True


def fewest_moves_with_equal_subscriptions(snap: ConsumerSnapshot) -> int:
    """The fewest moves any balanced assignment needs when every member reads the same topics (no racks).

    Each member can keep at most its quota (``floor`` or ``ceil`` of partitions per
    member) of what it validly owns; the ``P % N`` ceiling quotas go to members
    owning at least that many.
    """
    prev = previous_owners(snap)
    n = len(snap.members)
    assignable = set(snap.assignable_topics())
    total = sum(snap.topics[t].partitions for t in assignable)
    lo, extra = divmod(total, n)
    owned = np.zeros(n, dtype=np.int64)
    lost_anyway = 0
    for t, owner in prev.owner.items():
        held = owner[owner >= 0]
        if t in assignable:
            owned += np.bincount(held, minlength=n)
        else:
            lost_anyway += len(held)  # a topic nobody reads: its partitions are unassigned
    keep = np.minimum(owned, lo)
    bonus = min(int((owned > lo).sum()), extra)
    return int(owned.sum() - keep.sum() - bonus) + lost_anyway


# --------------------------------------------------------------------------- Kafka's scenarios

def test_no_members_no_assignment():
    snap = group({"t": 3}, [])
    assert sticky(snap).to_json()["assignment"] == {}


def test_one_consumer_without_topics():
    snap = group({"t": 3}, [{"id": "c", "subscription": []}])
    result = sticky(snap)
    assert result.to_json()["assignment"] == {"c": {}}


def test_subscribed_topic_that_does_not_exist():
    snap = group({"t": 3}, [{"id": "c", "subscription": ["gone"]}])
    assert sticky(snap).to_json()["assignment"] == {"c": {}}


def test_one_consumer_one_topic():
    snap = group({"t": 3}, [{"id": "c", "subscription": ["t"]}])
    assert sticky(snap).to_json()["assignment"] == {"c": {"t": [0, 1, 2]}}


def test_only_subscribed_topics_are_assigned():
    snap = group({"t": 3, "other": 2}, [{"id": "c", "subscription": ["t"]}])
    assert sticky(snap).to_json()["assignment"] == {"c": {"t": [0, 1, 2]}}


def test_one_consumer_many_topics():
    snap = group({"a": 1, "b": 2, "c": 3}, [{"id": "m", "subscription": ["a", "b", "c"]}])
    assert sticky(snap).to_json()["assignment"] == {"m": {"a": [0], "b": [0, 1], "c": [0, 1, 2]}}


def test_two_consumers_one_partition():
    snap = group({"t": 1}, [{"id": "c1", "subscription": ["t"]}, {"id": "c2", "subscription": ["t"]}])
    assert sorted(loads(sticky(snap)).values()) == [0, 1]


def test_two_consumers_two_topics_round_robin_when_fresh():
    snap = group({"t1": 3, "t2": 3}, [{"id": "c1", "subscription": ["t1", "t2"]},
                                      {"id": "c2", "subscription": ["t1", "t2"]}])
    assert sticky(snap).to_json()["assignment"] == {"c1": {"t1": [0, 2], "t2": [1]},
                                                    "c2": {"t1": [1], "t2": [0, 2]}}


def test_mixed_subscriptions_fresh():
    # t2 has a single reader, so it is placed first; t1 then goes to whoever has least
    snap = group({"t1": 3, "t2": 2}, [{"id": "c1", "subscription": ["t1"]},
                                      {"id": "c2", "subscription": ["t1", "t2"]},
                                      {"id": "c3", "subscription": ["t1"]}])
    result = sticky(snap)
    assert result.to_json()["assignment"] == {"c1": {"t1": [0, 2]}, "c2": {"t2": [0, 1]}, "c3": {"t1": [1]}}


def test_kip54_example_member_leaves_keeps_everything():
    # KIP-54's first example: three members read four two-partition topics, then C1 leaves
    snap = group({f"t{i}": 2 for i in range(4)}, [{"id": c, "subscription": ["t0", "t1", "t2", "t3"]}
                                                  for c in ("C0", "C1", "C2")])
    first = sticky(snap)
    assert first.to_json()["assignment"] == {"C0": {"t0": [0], "t1": [1], "t3": [0]},
                                             "C1": {"t0": [1], "t2": [0], "t3": [1]},
                                             "C2": {"t1": [0], "t2": [1]}}
    after = sticky(next_round(snap, first, leave={"C1"}))
    assert after.metrics["moves"] == 0 and after.metrics["imbalance"] == 0
    for m in ("C0", "C2"):
        for t, parts in first.target[m].items():
            assert set(parts) <= set(after.target[m].get(t, ()))


def test_kip54_example_mixed_member_leaves():
    # KIP-54's second example: C0 reads t0; C1 t0, t1; C2 t0, t1, t2
    snap = group({"t0": 1, "t1": 2, "t2": 3}, [{"id": "C0", "subscription": ["t0"]},
                                               {"id": "C1", "subscription": ["t0", "t1"]},
                                               {"id": "C2", "subscription": ["t0", "t1", "t2"]}])
    first = sticky(snap)
    assert first.to_json()["assignment"] == {"C0": {"t0": [0]}, "C1": {"t1": [0, 1]}, "C2": {"t2": [0, 1, 2]}}
    after = sticky(next_round(snap, first, leave={"C0"}))
    assert after.to_json()["assignment"] == {"C1": {"t0": [0], "t1": [0, 1]}, "C2": {"t2": [0, 1, 2]}}


def test_new_member_joins_takes_only_the_surplus():
    snap = group({"t": 3}, [{"id": "c1", "subscription": ["t"]}])
    first = sticky(snap)
    joined = next_round(snap, first, join=[{"id": "c2", "subscription": ["t"]}])
    after = sticky(joined)
    # c1 owned 3; quotas are 2 and 1: it keeps its two lowest partitions
    assert after.to_json()["assignment"] == {"c1": {"t": [0, 1]}, "c2": {"t": [2]}}
    assert after.metrics["moves"] == 1
    alone = sticky(next_round(joined, after, leave={"c1"}))
    assert alone.to_json()["assignment"] == {"c2": {"t": [0, 1, 2]}}
    assert alone.metrics["moves"] == 0


def test_member_over_quota_keeps_lowest_partition_numbers_across_topics():
    # ordered by partition number first, then topic: a0, b0, a1, b1, ...
    snap = group({"a": 3, "b": 3}, [
        {"id": "m1", "subscription": ["a", "b"], "generation": 4, "owned": {"a": [0, 1, 2], "b": [0, 1, 2]}},
        {"id": "m2", "subscription": ["a", "b"]},
        {"id": "m3", "subscription": ["a", "b"]}])
    result = sticky(snap)
    assert result.target["m1"] == {"a": (0,), "b": (0,)}  # 6 / 3: quota 2, a-0 and b-0
    assert result.metrics["moves"] == 4


def test_reassignment_after_one_consumer_leaves_mixed():
    # Kafka's scenario: consumer i reads topics 1..i, topic i has i partitions; then one consumer leaves
    n = 20
    topics = {f"topic{i:02d}": i for i in range(1, n)}
    members = [{"id": f"consumer{i:02d}", "subscription": [f"topic{j:02d}" for j in range(1, i + 1)]}
               for i in range(1, n)]
    snap = group(topics, members)
    first = sticky(snap)
    assert kafka_balanced(snap, plan(first))
    after_snap = next_round(snap, first, leave={"consumer10"})
    after = sticky(after_snap)
    assert kafka_balanced(after_snap, plan(after))
    # the leaver's partitions are spread; nobody else loses one
    assert after.metrics["moves"] == 0
    assert "consumer10" not in after.target


def test_subscription_change():
    snap = group({"t1": 4, "t2": 4}, [{"id": "a", "subscription": ["t1"]}, {"id": "b", "subscription": ["t2"]},
                                      {"id": "c", "subscription": ["t1", "t2"]}])
    first = sticky(snap)
    changed = next_round(snap, first, subscriptions={"a": ["t2"]})
    after = sticky(changed)
    assert "t1" not in after.target["a"]
    assert kafka_balanced(changed, plan(after))


def test_topic_removed_keeps_the_rest():
    snap = group({"t1": 3, "t2": 3}, [{"id": "a", "subscription": ["t1", "t2"]},
                                      {"id": "b", "subscription": ["t1", "t2"]}])
    first = sticky(snap)
    after = sticky(next_round(snap, first, topics={"t1": 3}))
    # t2 is gone (its claims are stale), t1 rebalances: at most one partition changes hands
    assert after.metrics["moves"] <= 1 and after.metrics["imbalance"] <= 1
    assert all("t2" not in topics for topics in after.target.values())


def test_only_subscribed_topic_deleted():
    snap = group({"t": 2}, [{"id": "a", "subscription": ["gone"], "generation": 3, "owned": {"gone": [0, 1]}}])
    assert sticky(snap).to_json()["assignment"] == {"a": {}}


def test_move_existing_assignments_stays_sticky():
    # Kafka's scenario: six one-partition topics, three members with overlapping subscriptions
    snap = group({f"t{i}": 1 for i in range(1, 7)}, [
        {"id": "c1", "subscription": ["t1", "t2"], "generation": 1, "owned": {"t1": [0]}},
        {"id": "c2", "subscription": ["t1", "t2", "t3", "t4"], "generation": 1, "owned": {"t2": [0], "t3": [0]}},
        {"id": "c3", "subscription": ["t2", "t3", "t4", "t5", "t6"], "generation": 1,
         "owned": {"t4": [0], "t5": [0], "t6": [0]}}])
    result = sticky(snap)
    # loads 1, 2, 3 are balanced by Kafka's rule (c1 can only read t1 and t2), so nothing moves
    assert kafka_balanced(snap, plan(result))
    assert result.metrics["moves"] == 0


def test_conflicting_claims_higher_generation_wins():
    snap = group({"t": 6}, [
        {"id": "c1", "subscription": ["t"], "generation": 1, "owned": {"t": [0, 1, 4]}},
        {"id": "c2", "subscription": ["t"], "generation": 2, "owned": {"t": [0, 2, 3]}},
        {"id": "c3", "subscription": ["t"], "generation": 3, "owned": {"t": [3, 4, 5]}}])
    result = sticky(snap)
    # valid owners: 0, 2 -> c2; 1 -> c1; 3, 4, 5 -> c3 (over quota: keeps 3 and 4)
    assert result.to_json()["assignment"] == {"c1": {"t": [1, 5]}, "c2": {"t": [0, 2]}, "c3": {"t": [3, 4]}}
    assert result.metrics["moves"] == 1


def test_conflicting_claims_same_generation_nobody_keeps():
    snap = group({"t": 4}, [
        {"id": "c1", "subscription": ["t"], "generation": 5, "owned": {"t": [0, 1]}},
        {"id": "c2", "subscription": ["t"], "generation": 5, "owned": {"t": [1, 2]}},
        {"id": "c3", "subscription": ["t"], "generation": 5, "owned": {"t": [3]}}])
    result = sticky(snap)
    assert 0 in result.target["c1"]["t"] and 2 in result.target["c2"]["t"] and 3 in result.target["c3"]["t"]
    assert result.metrics["moves"] == 0 and result.metrics["imbalance"] <= 1


@pytest.mark.parametrize("protocol", ["eager", "cooperative"])
def test_conflicting_claims_mixed_subscriptions(protocol):
    snap = group({"a": 4, "b": 2}, [
        {"id": "c1", "subscription": ["a"], "generation": 3, "owned": {"a": [0, 1, 2, 3]}},
        {"id": "c2", "subscription": ["a", "b"], "generation": 3, "owned": {"a": [3], "b": [0, 1]}},
        {"id": "c3", "subscription": ["a", "b"], "generation": 2, "owned": {"a": [0], "b": [1]}}],
        protocol=protocol)
    result = sticky(snap)
    assert kafka_balanced(snap, plan(result))


def test_previous_generation_owner_is_preferred_when_balancing():
    # A (generation 5) holds all of t; B had t-0 in generation 4. When t-0 must leave A, it goes back
    # to B although C, with nothing, is lighter.
    snap = group({"t": 6, "v": 1}, [
        {"id": "A", "subscription": ["t"], "generation": 5, "owned": {"t": [0, 1, 2, 3, 4, 5]}},
        {"id": "B", "subscription": ["t", "v"], "generation": 4, "owned": {"t": [0], "v": [0]}},
        {"id": "C", "subscription": ["t"]}])
    result = sticky(snap)
    assert result.to_json()["assignment"] == {"A": {"t": [3, 4, 5]}, "B": {"t": [0], "v": [0]},
                                              "C": {"t": [1, 2]}}


def test_previous_owner_that_dropped_the_topic_is_not_preferred():
    snap = group({"t": 6, "v": 1}, [
        {"id": "A", "subscription": ["t"], "generation": 5, "owned": {"t": [0, 1, 2, 3, 4, 5]}},
        {"id": "B", "subscription": ["v"], "generation": 4, "owned": {"t": [0], "v": [0]}},
        {"id": "C", "subscription": ["t"]}])
    result = sticky(snap)
    assert "t" not in result.target["B"]


def test_cooperative_member_joins():
    snap = group({"t": 4}, [
        {"id": "a", "subscription": ["t"], "generation": 2, "owned": {"t": [0, 1]}},
        {"id": "b", "subscription": ["t"], "generation": 2, "owned": {"t": [2, 3]}},
        {"id": "c", "subscription": ["t"]}], protocol="cooperative")
    result = sticky(snap)
    assert result.metrics["moves"] == 1
    # the moving partition is revoked first and withheld from c this round
    assert sum(len(p) for r in result.revocations.values() for p in r.values()) == 1
    assert result.followup_rebalance_deadline_ms is not None


def test_member_order_in_the_snapshot_does_not_matter(seed):
    rng = random.Random(seed)
    for _ in range(30):
        snap = random_consumer_snapshot(rng, ConsumerShape(max_members=8, max_partitions=10))
        members = list(snap.members)
        rng.shuffle(members)
        shuffled = ConsumerSnapshot(topics=snap.topics, members=tuple(members), protocol=snap.protocol,
                                    config=snap.config, id=snap.id, now_ms=snap.now_ms)
        assert plan(sticky(snap)) == plan(sticky(shuffled))


def test_builder_choice():
    equal = group({"t": 2}, [{"id": "a", "subscription": ["t"]}, {"id": "b", "subscription": ["t"]}])
    mixed = group({"t": 2, "u": 1}, [{"id": "a", "subscription": ["t"]}, {"id": "b", "subscription": ["t", "u"]}])
    assert assign_sticky(equal).extra["builder"] == "constrained"
    assert assign_sticky(mixed).extra["builder"] == "general"
    # as in Kafka, subscriptions are compared as written, missing topics included
    odd = group({"t": 2}, [{"id": "a", "subscription": ["t"]}, {"id": "b", "subscription": ["t", "gone"]}])
    assert assign_sticky(odd).extra["builder"] == "general"
    assert sticky(odd).metrics["imbalance"] == 0


def test_quick_balance_check_moves_exactly_as_kafkas_full_check(seed):
    # the balancing loop stops sweeping on "loads within one" only; Kafka also stops when no member
    # could take a partition from one two heavier. Running with Kafka's full check must change nothing.
    from stickyflow.greedy import sticky as impl

    class FullCheck(impl._General):
        def _within_one(self) -> bool:
            if super()._within_one():
                return True
            st, load, owner = self.st, self.load, self.owner
            for c in self.part.tolist():
                for t in st.subs[c]:
                    holders = owner[st.offsets[t]:st.offsets[t + 1]]
                    if (load[holders] > load[c] + 1).any():
                        return False
            return True

    rng = random.Random(seed)
    checked = 0
    for _ in range(200):
        snap = random_consumer_snapshot(rng, ConsumerShape(equal_subscriptions=False, max_members=10,
                                                           max_partitions=12))
        if not snap.members:
            continue
        st = impl.Group.build(snap)
        assert np.array_equal(impl._General(st, snap).run(), FullCheck(st, snap).run())
        checked += 1
    assert checked > 100


def _constrained_one_by_one(snap: ConsumerSnapshot) -> np.ndarray:
    """The constrained builder without racks, one partition at a time, as Kafka's code reads."""
    from stickyflow.greedy import sticky as impl

    st = impl.Group.build(snap)
    n, P = st.n, st.P
    min_q, expected = divmod(P, n)
    max_q = min_q + (1 if expected else 0)
    owner = np.full(P, -1)
    count = [0] * n
    under, exact, over = [], [], 0
    for c in range(n):
        mine = sorted((g for g in range(P) if st.prev[g] == c), key=lambda g: (st.part_of[g], st.topic_of[g]))
        if len(mine) < min_q:
            take = len(mine)
            under.append(c)
        elif len(mine) >= max_q and over < expected:
            take = max_q
            over += 1
            if over == expected:
                exact.clear()
        else:
            take = min_q
            if over < expected:
                exact.append(c)
        owner[mine[:take]] = c
        count[c] = take
    i = 0  # the cursor of an iterator over ``under`` that may remove what it just returned
    for g in np.flatnonzero(owner < 0).tolist():
        from_under = True
        if i >= len(under):
            if not under:
                c, from_under = exact.pop(0), False
            else:
                i = 0
        if from_under:
            c = under[i]
        owner[g] = c
        count[c] += 1
        if from_under and count[c] == min_q:
            del under[i]
            exact.append(c)
        elif from_under:
            i += 1
    return owner


def test_bulk_round_robin_matches_one_by_one(seed):
    from stickyflow.greedy import sticky as impl

    rng = random.Random(seed)
    for _ in range(200):
        snap = random_consumer_snapshot(rng, ConsumerShape(equal_subscriptions=True, racks=False,
                                                           max_members=9, max_partitions=14))
        if not snap.members:
            continue
        st = impl.Group.build(snap)
        assert np.array_equal(impl._constrained(st), _constrained_one_by_one(snap))


def test_bulk_least_loaded_matches_one_by_one(seed):
    from stickyflow.greedy.sticky import _water_fill

    rng = np.random.default_rng(seed)
    for _ in range(300):
        n = int(rng.integers(1, 12))
        load = rng.integers(0, 8, size=n + 3).astype(np.int64)
        cands = np.sort(rng.choice(n + 3, size=n, replace=False)).astype(np.int32)
        k = int(rng.integers(0, 30))
        expect_load = load.copy()
        expect = []
        for _ in range(k):  # one by one: the least loaded candidate, ties to the lower number
            c = min(cands.tolist(), key=lambda x: (expect_load[x], x))
            expect.append(c)
            expect_load[c] += 1
        got = _water_fill(load, cands, k)
        assert got.tolist() == expect and np.array_equal(load, expect_load)


# --------------------------------------------------------------------------- racks (KIP-881)

def three_racks(partitions: int, owned: dict | None = None, **config) -> ConsumerSnapshot:
    """Three members on racks r0, r1, r2; partition p has its one replica on rack r{p % 3}."""
    spec = {"partitions": partitions, "racks": [[f"r{p % 3}"] for p in range(partitions)]}
    members = []
    for i in range(3):
        m = {"id": f"m{i}", "subscription": ["t"], "rack": f"r{i}"}
        if owned and f"m{i}" in owned:
            m.update(generation=1, owned={"t": owned[f"m{i}"]})
        members.append(m)
    return group({"t": spec}, members, **({"config": config} if config else {}))


def test_rack_aware_fresh_assignment_stays_on_rack():
    result = sticky(three_racks(9))
    assert result.metrics["cross_rack"] == 0
    assert result.to_json()["assignment"] == {"m0": {"t": [0, 3, 6]}, "m1": {"t": [1, 4, 7]}, "m2": {"t": [2, 5, 8]}}


def test_rack_aware_gives_up_misplaced_partitions():
    owned = {"m0": [1, 2, 0], "m1": [3, 4, 5], "m2": [6, 7, 8]}
    aware = sticky(three_racks(9, owned))
    assert aware.metrics["cross_rack"] == 0
    blind = sticky(three_racks(9, owned, rack_aware=False))
    assert blind.metrics["moves"] == 0 and blind.metrics["cross_rack"] is None
    assert aware.metrics["moves"] > 0


def test_rack_aware_never_trades_balance_for_locality():
    # every partition lives on r0 only: balance still wins
    spec = {"partitions": 7, "racks": [["r0"]] * 7}
    snap = group({"t": spec}, [{"id": f"m{i}", "subscription": ["t"], "rack": f"r{i}"} for i in range(3)])
    result = sticky(snap)
    assert result.metrics["imbalance"] <= 1
    assert result.metrics["cross_rack"] == 7 - loads(result)["m0"]


def test_racks_everywhere_means_no_rack_logic_unless_asked():
    spec = {"partitions": 4, "racks": [["r0", "r1"]] * 4}
    members = [{"id": "a", "subscription": ["t"], "rack": "r0"}, {"id": "b", "subscription": ["t"], "rack": "r1"}]
    assert assign_sticky(group({"t": spec}, members)).extra["rack_aware"] is False
    forced = group({"t": spec}, members, config={"rack_aware": True})
    assert assign_sticky(forced).extra["rack_aware"] is True
    sticky(forced)


def test_rack_aware_general_builder_prefers_rack():
    spec = {"partitions": 6, "racks": [[f"r{p % 2}"] for p in range(6)]}
    snap = group({"t": spec, "u": 1}, [
        {"id": "a", "subscription": ["t"], "rack": "r0"},
        {"id": "b", "subscription": ["t"], "rack": "r1"},
        {"id": "c", "subscription": ["u"], "rack": "r1"}])
    result = sticky(snap)
    assert assign_sticky(snap).extra["builder"] == "general"
    assert result.metrics["cross_rack"] == 0
    assert result.target["a"] == {"t": (0, 2, 4)}


# --------------------------------------------------------------------------- properties on seeded random groups

def test_equal_subscriptions_balanced_with_fewest_moves(seed):
    rng = random.Random(seed)
    shape = ConsumerShape(equal_subscriptions=True, racks=False, max_members=10, max_partitions=15)
    for _ in range(150):
        snap = random_consumer_snapshot(rng, shape)
        result = sticky(snap)
        assert result.metrics["imbalance"] <= 1
        if snap.members:
            assert result.metrics["moves"] == fewest_moves_with_equal_subscriptions(snap)


def test_equal_subscriptions_moves_match_the_optimizer(seed):
    rng = random.Random(seed)
    shape = ConsumerShape(equal_subscriptions=True, racks=False, vary_costs=False, max_members=8,
                          max_partitions=12)
    for _ in range(40):
        snap = random_consumer_snapshot(rng, shape)
        ours = sticky(snap)
        best = stickyflow.assign(snap, "optimal", fallback=False)
        check_result(snap, best)
        assert ours.metrics["moves"] == best.metrics["moves"]
        assert ours.metrics["sum_squared_loads"] == best.metrics["sum_squared_loads"]


def test_equal_subscriptions_with_racks_stay_balanced(seed):
    rng = random.Random(seed)
    shape = ConsumerShape(equal_subscriptions=True, max_members=10, max_partitions=15)
    for _ in range(150):
        snap = random_consumer_snapshot(rng, shape)
        assert sticky(snap).metrics["imbalance"] <= 1


def test_mixed_subscriptions_kafka_balanced(seed):
    rng = random.Random(seed)
    shape = ConsumerShape(equal_subscriptions=False, max_members=10, max_partitions=12)
    for _ in range(150):
        snap = random_consumer_snapshot(rng, shape)
        result = sticky(snap)
        assert kafka_balanced(snap, plan(result))


def test_rack_aware_never_costs_balance(seed):
    rng = random.Random(seed)
    for _ in range(60):
        doc_snap = random_consumer_snapshot(rng, ConsumerShape(max_members=8, max_partitions=10))
        aware = sticky(doc_snap)
        blind_cfg = type(doc_snap.config)(rack_aware=False, traffic_cost=doc_snap.config.traffic_cost,
                                          non_overlap_cost=doc_snap.config.non_overlap_cost)
        blind_snap = ConsumerSnapshot(topics=doc_snap.topics, members=doc_snap.members,
                                      protocol=doc_snap.protocol, config=blind_cfg)
        blind = sticky(blind_snap)
        if len({frozenset(m.subscription) for m in doc_snap.members}) <= 1:
            assert aware.metrics["sum_squared_loads"] == blind.metrics["sum_squared_loads"]
        assert kafka_balanced(doc_snap, plan(aware))


# --------------------------------------------------------------------------- kafka-python as a peer

def _kafka_python_sticky(snap):
    peers = pytest.importorskip("stickyflow.adapters.peers")
    pytest.importorskip("kafka")
    try:
        return peers.run_peer(snap, "sticky")
    except peers.PeerError:  # kafka-python's own bugs (see stickyflow.adapters.peers)
        return None


def test_against_kafka_python_equal_subscriptions(seed):
    from stickyflow.check.consumer import consumer_metrics

    rng = random.Random(seed)
    shape = ConsumerShape(equal_subscriptions=True, racks=False, max_members=8, max_partitions=12)
    compared = 0
    for _ in range(60):
        snap = random_consumer_snapshot(rng, shape)
        theirs = _kafka_python_sticky(snap)
        if theirs is None:
            continue
        ours = sticky(snap)
        peer = consumer_metrics(snap, theirs)
        assert peer["imbalance"] <= 1 and ours.metrics["imbalance"] <= 1
        assert ours.metrics["moves"] <= peer["moves"]
        compared += 1
    assert compared >= 30


def test_against_kafka_python_mixed_subscriptions(seed):
    rng = random.Random(seed)
    shape = ConsumerShape(equal_subscriptions=False, racks=False, max_members=8, max_partitions=12)
    compared = peer_unbalanced = 0
    for _ in range(60):
        snap = random_consumer_snapshot(rng, shape)
        theirs = _kafka_python_sticky(snap)
        if theirs is None:
            continue
        ours = sticky(snap)
        # ours meets Kafka's balance rule (it is not always the most balanced: neither is Kafka's);
        # kafka-python's port misses the rule now and then (seen: a member left with nothing while
        # another reader holds two partitions more), so the peer is counted, not asserted
        assert kafka_balanced(snap, plan(ours))
        compared += 1
        peer_unbalanced += not kafka_balanced(snap, theirs)
    print(f"\n[peer] kafka-python sticky broke Kafka's balance rule on {peer_unbalanced} of {compared} mixed groups")
    assert compared >= 20


# --------------------------------------------------------------------------- scale (the tests assert; benchmark() only prints)

def scaled_group(partitions_per_topic: int, topics: int, members: int, new_fraction: float, *,
                 mixed: bool = False, seed: int = 0) -> ConsumerSnapshot:
    """A group after its previous rebalance, with ``new_fraction`` of the members just joined.

    Equal subscriptions: the old members own contiguous runs of the partitions.
    Mixed: each member reads 60% of the topics; every partition was owned by a
    random old reader.
    """
    rng = np.random.default_rng(seed)
    names = [f"topic-{j:04d}" for j in range(topics)]
    n_old = members - int(members * new_fraction)
    if mixed:
        subs = [tuple(sorted(rng.choice(names, size=max(1, int(topics * 0.6)), replace=False).tolist()))
                for _ in range(members)]
    else:
        subs = [tuple(names)] * members
    owned: list[dict[str, tuple[int, ...]]] = [{} for _ in range(members)]
    total = partitions_per_topic * topics
    run = (np.arange(total) * n_old) // total
    for j, t in enumerate(names if n_old else ()):
        if mixed:
            readers = np.array([c for c in range(n_old) if t in subs[c]])
            if not len(readers):
                continue
            owner = readers[rng.integers(0, len(readers), partitions_per_topic)]
        else:
            owner = run[j * partitions_per_topic:(j + 1) * partitions_per_topic]
        order = np.argsort(owner, kind="stable")
        cuts = np.flatnonzero(np.diff(owner[order])) + 1
        for seg in np.split(order, cuts):
            owned[int(owner[seg[0]])][t] = tuple(seg.tolist())
    return ConsumerSnapshot(
        topics=MappingProxyType({t: Topic(name=t, partitions=partitions_per_topic) for t in names}),
        members=tuple(Member(id=f"member-{i:05d}", subscription=subs[i], generation=7 if i < n_old else None,
                             owned=MappingProxyType(owned[i])) for i in range(members)))


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def benchmark(big: bool = True) -> None:
    """Print ours vs kafka-python at 10,000 x 100 (10% new members), and ours at 1,000,000 x 2,000."""
    from stickyflow.check.consumer import consumer_metrics

    try:
        from stickyflow.adapters.peers import run_peer
    except ImportError:  # pragma: no cover
        run_peer = None
    for mixed in (False, True):
        snap = scaled_group(100, 100, 100, 0.10, mixed=mixed)
        decision, t_core = _timed(lambda: assign_sticky(snap))
        result, t_door = _timed(lambda: stickyflow.assign(snap, "sticky"))
        label = "mixed" if mixed else "equal"
        print(f"10,000 x 100, {label} subscriptions, 10% new: sticky {t_core:.3f}s "
              f"(front door {t_door:.3f}s, builder {decision.extra['builder']}), "
              f"moves {result.metrics['moves']}, imbalance {result.metrics['imbalance']}")
        if run_peer is not None:
            theirs, t_peer = _timed(lambda: run_peer(snap, "sticky"))
            m = consumer_metrics(snap, theirs)
            print(f"    kafka-python sticky {t_peer:.3f}s, moves {m['moves']}, imbalance {m['imbalance']}")
    if big:
        snap, t_build = _timed(lambda: scaled_group(10_000, 100, 2_000, 0.05))
        decision, t_core = _timed(lambda: assign_sticky(snap))
        result, t_door = _timed(lambda: stickyflow.assign(snap, "sticky"))
        print(f"1,000,000 x 2,000, equal subscriptions, 5% new: sticky {t_core:.3f}s "
              f"(front door {t_door:.3f}s), moves {result.metrics['moves']}, "
              f"imbalance {result.metrics['imbalance']}")


def test_scale_join_moves_only_what_the_newcomers_take():
    """10,000 x 100 with 10 members new: balanced, and exactly their 1,000 partitions move. The timings that
    this test printed are ``stickyflow bench``'s (sticky and kafka-python's at 10,000 x 100 and 1,000,000 x
    2,000, docs/bench.md); ``python tests/test_sticky.py`` still prints them; Kafka's 1,000,000 x 2,000 groups
    are checked in tests/test_port_kafka_sticky.py."""
    snap = scaled_group(100, 100, 100, 0.10)
    result = sticky(snap)  # through the one checker
    assert result.metrics["imbalance"] == 0 and result.metrics["moves"] == 1000


def test_scale_mixed_general_builder():
    snap = scaled_group(20, 50, 40, 0.10, mixed=True)
    result = sticky(snap)
    assert kafka_balanced(snap, plan(result))


if __name__ == "__main__":
    benchmark()
