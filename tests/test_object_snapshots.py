"""Snapshots built from Python objects are checked as strictly as JSON (issue 15, item 4).

Each case builds a snapshot the way a Python user would and expects either the reader's
error, naming the field, or a snapshot equal to the one read from the same JSON.
"""

from __future__ import annotations

import pytest

import stickyflow
from stickyflow.errors import InvalidSnapshotError
from stickyflow.model.consumer import (ConsumerConfig, ConsumerSnapshot, Member, Topic, consumer_to_json,
                                       parse_consumer)
from stickyflow.model.streams import Client, StreamsConfig, StreamsSnapshot, Task, TopicPartitionRef
from stickyflow.registry import register_assignor, unregister_assignor
from stickyflow.result import Decision

ORDERS = Topic(name="orders", partitions=3)


def _field(exc: pytest.ExceptionInfo) -> str:
    return exc.value.problems[0].field


@pytest.mark.parametrize("build, field", [
    (lambda: ConsumerSnapshot(topics={"orders": ORDERS}, members=(Member(id="a", subscription=("orders",)),
                                                                  Member(id="a", subscription=("orders",)))),
     "members[1].id"),
    (lambda: ConsumerSnapshot(topics={"orders": Topic(name="orders", partitions=0)}, members=()),
     "topics.orders.partitions"),
    (lambda: ConsumerSnapshot(topics={"orders": Topic(name="orders", partitions=-4)}, members=()),
     "topics.orders.partitions"),
    (lambda: ConsumerSnapshot(topics={"orders": Topic(name="orders", partitions=2**31)}, members=()),
     "topics.orders.partitions"),
    (lambda: ConsumerSnapshot(topics={"payments": ORDERS}, members=()), "topics.payments.name"),
    (lambda: ConsumerSnapshot(topics=[ORDERS, ORDERS], members=()), "topics[1].name"),
    (lambda: ConsumerSnapshot(topics={"orders": {"partitions": 3}}, members=()), "topics.orders"),
    (lambda: ConsumerSnapshot(topics={"orders": ORDERS}, members=({"id": "a"},)), "members[0]"),
    (lambda: ConsumerSnapshot(topics={"orders": ORDERS}, members=(Member(id="a", subscription=("orders",),
                                                                         owned={"orders": (0, -1)}),)),
     'members[0].owned.orders[1]'),
    (lambda: ConsumerSnapshot(topics={"orders": ORDERS}, members=(), protocol="coop"), "protocol"),
    (lambda: ConsumerSnapshot(topics={"orders": ORDERS}, members=(), config=ConsumerConfig(traffic_cost=-1)),
     "config.traffic_cost"),
    (lambda: Member(id="a", subscription="orders"), "Member(id='a').subscription"),
    (lambda: Topic(name="orders", partitions=2, racks=("r1", "r2")), "Topic(name='orders').racks[0]"),
])
def test_consumer_objects_are_checked_like_json(build, field):
    with pytest.raises(InvalidSnapshotError) as exc:
        build()
    assert _field(exc) == field


def test_consumer_objects_accept_lists_and_equal_the_json_reading():
    snap = ConsumerSnapshot(
        topics=[Topic(name="orders", partitions=3, racks=[["r1"], ["r2"], []])],
        members=[Member(id="a", subscription=["orders"], rack="r1", owned={"orders": [0, 1]}, generation=2),
                 Member(id="b", subscription=["orders"], rack="r2")],
        protocol="cooperative")
    assert isinstance(snap.members, tuple) and isinstance(snap.members[0].subscription, tuple)
    assert snap.members[0].owned["orders"] == (0, 1)
    assert snap.topics["orders"].racks == (frozenset({"r1"}), frozenset({"r2"}), frozenset())
    again = parse_consumer(consumer_to_json(snap))
    assert consumer_to_json(again) == consumer_to_json(snap)
    result = stickyflow.assign(snap)
    assert result.error == "NONE"
    # cooperative: a partition that changes owner is withheld this round, so the whole decision is the target
    assert sorted(p for parts in result.target.values() for p in parts.get("orders", ())) == [0, 1, 2]


def test_a_missing_partition_never_reports_error_none():
    """A custom assignor that drops a partition: the result must say so, not NONE."""
    def drop_last(snap, options):
        first = snap.members[0].id
        return Decision(assignment={first: {"orders": range(snap.topics["orders"].partitions - 1)}},
                        method="custom", status="heuristic")

    register_assignor("drop-last", drop_last, kinds=("consumer",))
    try:
        snap = ConsumerSnapshot(topics={"orders": ORDERS}, members=[Member(id="a", subscription=["orders"])])
        with pytest.raises(stickyflow.InvalidAssignmentError, match="PARTITION_UNASSIGNED"):
            stickyflow.assign(snap, assignor="drop-last")
    finally:
        unregister_assignor("drop-last")


TASKS = [Task(id="0_0", stateful=True, end_offset_sum=100), Task(id="0_1", stateful=False)]


@pytest.mark.parametrize("build, field", [
    (lambda: StreamsSnapshot(tasks=TASKS, clients=[Client(process_id="a"), Client(process_id="a")]),
     "clients[1].process_id"),
    (lambda: StreamsSnapshot(tasks=TASKS + [Task(id="0_0", stateful=False)], clients=[Client(process_id="a")]),
     "tasks[2].id"),
    (lambda: StreamsSnapshot(tasks=[Task(id="zero", stateful=True)], clients=[Client(process_id="a")]),
     "tasks[0].id"),
    (lambda: StreamsSnapshot(tasks=TASKS, clients=[Client(process_id="a", threads=0)]), "clients[0].threads"),
    (lambda: StreamsSnapshot(tasks=TASKS, clients=[Client(process_id="a", lags={"0_0": -7})]),
     'clients[0].lags["0_0"]'),
    (lambda: StreamsSnapshot(tasks=TASKS, clients=[Client(process_id="a")],
                             config=StreamsConfig(balance_factor=0)), "config.balance_factor"),
    (lambda: StreamsSnapshot(tasks=TASKS, clients=["a"]), "clients[0]"),
    (lambda: Client(process_id="a", previous_active="0_0"), "Client(process_id='a').previous_active"),
])
def test_streams_objects_are_checked_like_json(build, field):
    with pytest.raises(InvalidSnapshotError) as exc:
        build()
    assert _field(exc) == field


def test_streams_objects_accept_lists_and_solve():
    snap = StreamsSnapshot(
        tasks=[Task(id="0_0", stateful=True, end_offset_sum=100,
                    input_partitions=[TopicPartitionRef(topic="in", partition=0, racks=["r1"])]),
               Task(id="0_1", stateful=False)],
        clients=[Client(process_id="a", previous_active=["0_0"], rack="r1"), Client(process_id="b", rack="r2")],
        config=StreamsConfig(num_standby_replicas=1))
    assert snap.clients[0].running == frozenset({"0_0"})  # derived by the reader's rule
    assert snap.tasks[0].input_partitions[0].racks == frozenset({"r1"})
    result = stickyflow.assign(snap)
    assert result.error == "NONE"
    assert sorted(t for a in result.assignment.values() for t in a.active) == ["0_0", "0_1"]


# --------------------------------------------------------------------------- the reader's fast path

from hypothesis import given, settings  # noqa: E402

from stickyflow.check.input import Checker  # noqa: E402
from stickyflow.model.consumer_members import FlatClaims
from stickyflow.model.consumer_members import _members_one_by_one, _well_formed_members  # noqa: E402
from strategies import consumer_docs  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(consumer_docs())
def test_the_fast_member_reader_equals_the_one_by_one_reader(doc):
    """Members read in bulk (the common case) equal those read one by one, field for field."""
    raw = doc["members"]
    read = _well_formed_members(raw)
    slow = _members_one_by_one(raw, Checker())
    assert read is not None
    fast, claims, subscriptions, columns = read
    assert fast == slow
    # the columns the snapshot keeps are what the members say
    if columns is not None:
        ids, racks, generations = columns
        assert ids == [m.id for m in slow] and racks == [m.rack for m in slow]
        assert generations.tolist() == [-1 if m.generation is None else m.generation for m in slow]
    assert [dict(m.owned) for m in fast] == [dict(m.owned) for m in slow]
    # owned partitions stay in the flat claims until asked for, then read like the one-by-one reader's
    assert [repr(m) for m in fast] == [repr(m) for m in slow]
    for f, s in zip(fast, slow):
        assert len(f.owned) == len(s.owned) and list(f.owned) == list(s.owned)
        assert all(t in f.owned and f.owned.get(t) == s.owned[t] for t in s.owned)
        assert f.owned.get("no such topic") is None and "no such topic" not in f.owned
    # the claims the fast reader leaves flat are those of the members it built
    if claims is not None:
        again = FlatClaims.of(slow)
        assert claims.topics == again.topics
        for field in ("per_member", "lens", "parts"):
            assert getattr(claims, field).tolist() == getattr(again, field).tolist()


@settings(max_examples=60, deadline=None)
@given(consumer_docs())
def test_subscriptions_grouped_by_the_reader_are_those_grouped_from_the_members(doc):
    """The reader groups and codes the subscriptions in bulk; a snapshot of the same members built in Python
    (nothing remembered) groups them member by member: same groups, same distinct tuples, same topics."""
    import dataclasses

    read = stickyflow.parse_snapshot(doc)
    rebuilt = dataclasses.replace(read)  # same fields, nothing remembered from the reader
    assert ("groups" in read._memo) == bool(doc["members"]) and "groups" not in rebuilt._memo
    g1, d1 = read.subscription_groups()
    g2, d2 = rebuilt.subscription_groups()
    assert g1.tolist() == g2.tolist() and d1 == d2
    assert [m.subscription for m in read.members] == [d1[g] for g in g1.tolist()]
    for a, b in zip(read._group_topics(), rebuilt._group_topics()):
        assert a.tolist() == b.tolist()


def test_repeated_topics_are_dropped_and_equal_subscriptions_share_a_group():
    raw = [{"id": "a", "subscription": ["t", "u", "t"]}, {"id": "b", "subscription": ["t", "u"]},
           {"id": "c", "subscription": ["u"]}, {"id": "d", "subscription": ["u", "u"]}]
    snap = stickyflow.parse_snapshot({"format": "stickyflow.snapshot/1", "kind": "consumer",
                                      "topics": {"t": {"partitions": 1}}, "members": raw})
    group, distinct = snap.subscription_groups()
    assert group.tolist() == [0, 0, 1, 1] and distinct == [("t", "u"), ("u",)]
    assert [m.subscription for m in snap.members] == [("t", "u"), ("t", "u"), ("u",), ("u",)]
    topic, glen = snap._group_topics()
    assert topic.tolist() == [0] and glen.tolist() == [1, 0]


def test_owned_read_in_bulk_is_read_only_and_copies_nothing_of_the_callers():
    """The bulk reader's ``owned`` cannot be written, does not follow later edits of the caller's lists, and
    rebuilding a member from it (``dataclasses.replace``) gives an equal member."""
    import dataclasses

    raw = [{"id": "a", "subscription": ["t", "u"], "owned": {"t": [2, 0], "u": [1]}},
           {"id": "b", "subscription": ["t"]}, {"id": "c", "subscription": ["t"], "owned": {"t": [1]}}]
    (a, b, c), _, _, _ = _well_formed_members(raw)
    raw[0]["owned"]["t"].append(5)
    raw[2]["owned"]["t"][0] = 9
    assert a.owned == {"t": (2, 0), "u": (1,)} and c.owned == {"t": (1,)} and b.owned == {}
    with pytest.raises(TypeError):
        a.owned["t"] = (3,)  # type: ignore[index]
    assert dataclasses.replace(a) == a and dataclasses.replace(a, id="z").owned == a.owned


@pytest.mark.parametrize("bad", [
    {"id": 7, "subscription": []},
    {"id": "a", "subscription": "t"},
    {"id": "a", "subscription": [1]},
    {"id": "a", "subscription": [["t"]]},
    {"id": "a", "subscription": ["t", None]},
    {"id": "a", "subscription": [], "generation": True},
    {"id": "a", "subscription": [], "generation": 2**31},
    {"id": "a", "subscription": [], "owned": {"t": [0, -1]}},
    {"id": "a", "subscription": [], "owned": {"t": [2**31]}},
    {"id": "a", "subscription": [], "owned": {"t": "0"}},
    {"id": "a", "subscription": [], "rack": 3},
    {"id": "a", "subscription": [], "typo": 1},
])
def test_anything_unusual_leaves_the_fast_path(bad):
    assert _well_formed_members([{"id": "z", "subscription": ["t"]}, bad]) is None


@pytest.mark.parametrize("seed", range(30))
def test_who_reads_what_is_the_same_dense_and_sparse(seed, monkeypatch):
    """``ConsumerSnapshot.reads`` answers from one boolean matrix while distinct subscriptions x topics is
    small, else by searching the sorted pairs: both say exactly which subscription reads which topic (deleted
    topics in a subscription read nothing), and ``subscribers`` agrees with them."""
    import random

    import numpy as np

    import stickyflow
    from stickyflow.model import consumer as consumer_module

    rng = random.Random(seed)
    topics = {f"t{j}": {"partitions": 1} for j in range(rng.randint(1, 12))}
    names = list(topics) + ["gone"]
    members = [{"id": f"m{i}", "subscription": rng.sample(names, rng.randint(0, len(names)))}
               for i in range(rng.randint(1, 15))]
    doc = {"format": "stickyflow.snapshot/1", "kind": "consumer", "topics": topics, "members": members}
    answers = []
    for dense in (True, False):
        monkeypatch.setattr(consumer_module, "_DENSE_READS", 1 << 24 if dense else 0)
        snap = stickyflow.parse_snapshot(doc)
        group, distinct = snap.subscription_groups()
        g, t = (a.ravel() for a in np.meshgrid(np.arange(len(distinct)), np.arange(len(snap.topics)), indexing="ij"))
        answers.append(snap.reads(g, t).tolist())
        truth = [list(snap.topics)[j] in distinct[q] for q, j in zip(g.tolist(), t.tolist())]
        assert answers[-1] == truth
        assert {t: snap.subscribers()[t] for t in snap.topics} == \
            {t: [i for i, m in enumerate(members) if t in m["subscription"]] for t in snap.topics}
        assert [distinct[q] for q in group.tolist()] == [tuple(dict.fromkeys(m["subscription"])) for m in members]
    assert answers[0] == answers[1]


def test_replica_racks_read_in_bulk_or_one_by_one_agree():
    """A topic's replica racks are read in bulk when every entry is a plain list of plain strings, else one by
    one (subclasses of str, such as numpy's, are still rack names): both give the same rack sets, shared
    between equal lists, and a bad entry is named by its index."""
    import numpy as np

    import stickyflow
    from stickyflow.errors import InvalidSnapshotError

    def read(racks):
        return stickyflow.parse_snapshot({"format": "stickyflow.snapshot/1", "kind": "consumer",
                                          "topics": {"t": {"partitions": len(racks), "racks": racks}},
                                          "members": [{"id": "m", "subscription": ["t"], "rack": "a"}]})

    plain = read([["a", "b"], ["b"], ["a", "b"], []]).topics["t"].racks
    odd = read([[np.str_("a"), "b"], ["b"], ["a", "b"], []]).topics["t"].racks
    assert plain == odd == (frozenset("ab"), frozenset("b"), frozenset("ab"), frozenset())
    assert plain[0] is plain[2] and odd[0] is odd[2]
    with pytest.raises(InvalidSnapshotError, match=r"topics\.t\.racks\[2\]"):
        read([["a"], ["b"], ["a", 3]])
    with pytest.raises(InvalidSnapshotError, match=r"topics\.t\.racks\[1\]"):
        read([["a"], "b"])


def test_int_subclasses_in_a_dict_are_partition_numbers_not_a_crash():
    """A dict built in Python may hold an ``IntEnum`` (an int subclass, not a bool) among the owned partitions:
    the fast reader leaves it to the member-by-member reader, which read its plain value; it used to look for a
    culprit that was not there and let ``StopIteration`` escape ``assign``."""
    import enum

    class Part(enum.IntEnum):
        ONE = 1

    doc = {"format": "stickyflow.snapshot/1", "kind": "consumer", "topics": {"t": {"partitions": 4}},
           "members": [{"id": "a", "subscription": ["t"], "generation": 1, "owned": {"t": [0, Part.ONE]}},
                       {"id": "b", "subscription": ["t"]}]}
    snap = parse_consumer(doc)
    assert snap.members[0].owned["t"] == (0, 1) and all(type(p) is int for p in snap.members[0].owned["t"])
    r = stickyflow.assign(doc)
    assert dict(r.assignment["a"]) == {"t": (0, 1)} and r.metrics["moves"] == 0
    doc["members"][0]["owned"]["t"].append(True)  # a bool is still no partition number
    with pytest.raises(InvalidSnapshotError) as exc:
        stickyflow.assign(doc)
    assert _field(exc) == "members[0].owned.t[2]"


@pytest.mark.parametrize("one_by_one", [False, True])
def test_numpy_integers_are_partition_numbers_and_bools_are_not(one_by_one):
    """Owned partitions of any integer type (a NumPy integer, as a dict built from arrays holds them) read as
    plain ints, by the bulk reader and, when another field sends the member there, by the member-by-member
    reader alike; a bool never does, wherever it sits (the bulk reader looks for one only where 0 or 1 is
    read: that is what a bool reads as), and a NumPy bool neither."""
    import numpy as np

    def doc(parts, big=False):
        members = [{"id": "a", "subscription": ["t"], "generation": 1, "owned": {"t": parts}},
                   {"id": "b", "subscription": ["t"], "rack": 3 if one_by_one else None}]
        return {"format": "stickyflow.snapshot/1", "kind": "consumer",
                "topics": {"t": {"partitions": 10_000 if big else 8}}, "members": members}

    ok = doc([np.int64(0), np.int32(5), 7])
    if one_by_one:  # the rack is wrong: the member-by-member reader names it, after reading the partitions
        with pytest.raises(InvalidSnapshotError) as exc:
            parse_consumer(ok)
        assert [p.field for p in exc.value.problems] == ["members[1].rack"]
    else:
        snap = parse_consumer(ok)
        assert snap.members[0].owned["t"] == (0, 5, 7)
        assert all(type(p) is int for p in snap.members[0].owned["t"])
    many = list(range(9_000))
    for bad, at in (([3, True, 5], 1), ([False], 0), ([2, np.True_], 1), ([1.0], 0), (many[:5000] + [True], 5000)):
        with pytest.raises(InvalidSnapshotError) as exc:
            parse_consumer(doc(bad, big=True))
        assert exc.value.problems[0].field == f"members[0].owned.t[{at}]"
    lots_of_ones = doc([0, 1] * 3000 + [True], big=True)  # more low values than the bulk reader looks at one by one
    with pytest.raises(InvalidSnapshotError) as exc:
        parse_consumer(lots_of_ones)
    assert exc.value.problems[0].field == "members[0].owned.t[6000]"


def test_generations_below_int64_read_as_unknown_in_bulk():
    """A negative generation means unknown, however far below zero (the bulk reader keeps the generations as
    an int64 column, so one below int64's range must not overflow it)."""
    raw = [{"id": "a", "subscription": ["t"], "generation": -2**70, "owned": {"t": [0]}},
           {"id": "b", "subscription": ["t"], "generation": 5}, {"id": "c", "subscription": ["t"], "generation": -3}]
    snap = stickyflow.parse_snapshot({"format": "stickyflow.snapshot/1", "kind": "consumer",
                                      "topics": {"t": {"partitions": 2}}, "members": raw})
    assert [m.generation for m in snap.members] == [None, 5, None]
    assert snap._generations().tolist() == [-1, 5, -1] and snap._column("id") == ["a", "b", "c"]


@pytest.mark.parametrize("topics", [
    {"a": {"partitions": 3}, "b": {"partitions": 1}},
    {"a": {"partitions": 2**31 - 1}},
    {},
    {"a": {"partitions": 3, "racks": [["r1"], [], ["r2", "r1"]]}},
    {"a": {"partitions": 3, "typo": 1}},
    {"a": {"partitions": True}},
    {"a": {"partitions": 0}},
    {"a": {"partitions": 2**31}},
    {"a": {"partitions": 2.0}},
    {"a": {}},
    {"a": []},
])
def test_plain_topics_read_in_bulk_as_one_by_one(topics, monkeypatch):
    """Topics that are just a partition count are built in bulk; the snapshot, its warnings and its errors are
    those of the topic-by-topic reader, for plain topics and for anything else."""
    from stickyflow.model import consumer_members

    doc = {"format": "stickyflow.snapshot/1", "kind": "consumer", "topics": topics,
           "members": [{"id": "m", "subscription": sorted(topics)}]}

    def read():
        try:
            snap = stickyflow.parse_snapshot(doc)
        except stickyflow.InvalidSnapshotError as exc:
            return "error", str(exc)
        return dict(snap.topics), snap.warnings

    fast = read()
    monkeypatch.setattr(consumer_members, "_plain_topics", lambda raw: None)
    assert fast == read()
