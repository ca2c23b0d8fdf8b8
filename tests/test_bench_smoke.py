"""The benchmark in miniature, and the fast paths it relies on.

A tiny ``stickyflow bench`` run must work end to end (cases, forked runs,
peers, lower bounds, JSON, table, plot). The speed work behind it keeps one
promise: the array paths (claims resolved on flat arrays, array-backed
assignments checked, normalized and split for KIP-429 in numpy) give exactly
what the straightforward per-(member, topic) code gives. Timings are never
asserted here; ``stickyflow bench`` prints them.
"""

from __future__ import annotations

import json
import random
from types import MappingProxyType

import numpy as np
import pytest

import stickyflow
from stickyflow.adapters.cli import main
from stickyflow.adapters.bench import (Case, consumer_snapshot, markdown_table, min_moves_equal, run_suite,
                                       streams_document)
from stickyflow.check.answer import ArrayAssignment, run_tuples, normalize_consumer_assignment
from stickyflow.check.consumer import inspect_consumer
from stickyflow.check.cooperative import cooperative_split
from stickyflow.model.consumer import ConsumerSnapshot, Member, Topic
from stickyflow.model.consumer_claims import previous_owners
from tests.checker import check_result


# --------------------------------------------------------------------------- the suite in miniature

def test_tiny_suite_runs_every_assignor_and_fills_the_bounds():
    cases = [Case(kind="consumer", size=60, members=6, event="join", subscriptions="equal"),
             Case(kind="consumer", size=60, members=6, event="leave", subscriptions="mixed")]
    cases.append(Case(kind="streams", size=12, members=3, event="join", subscriptions="stateful"))
    records = run_suite(cases, repeats=1, budget_s=1.0, timeout_s=60.0)
    by = {(r["case"], r["assignor"]): r for r in records}
    for r in records:
        if r["assignor"] in ("optimal", "sticky") or (r["kind"] == "consumer" and r["assignor"] in ("range", "roundrobin")):
            assert r["status"] not in ("error", "timeout", "skipped"), r
        if r.get("status") in ("optimal", "heuristic", "fallback", "feasible"):
            assert r["wall_s"] > 0 and r["peak_mib"] > 0 and r["runs"] == 1
    for case in cases[:2]:
        opt = by[(case.name, "optimal")]
        assert opt["status"] == "optimal" and opt["gap_cost"] == 0 and opt["gap_sumsq"] == 0
        if case.subscriptions == "equal":
            assert opt["moves"] == opt["bound_moves"]  # the solver meets the closed form
        for a in ("sticky", "range", "roundrobin", "kp-sticky", "kp-range"):
            r = by[(case.name, a)]
            if r.get("sumsq") is None:
                continue
            assert r["gap_sumsq"] >= 0  # nobody is better balanced than the optimum
            if r["gap_sumsq"] == 0:
                assert r["gap_cost"] >= 0  # nor cheaper among the most balanced
    table = markdown_table(records, ["optimal", "sticky", "kp-sticky"])
    assert table.count("\n") == len(cases) + 1


def test_bench_command_writes_json_table_and_plot(tmp_path):
    code = main(["bench", "--kinds", "consumer", "--sizes", "40x4", "--events", "join", "--subscriptions", "equal",
                 "--assignors", "optimal,range,kp-range", "--repeats", "1", "--out", str(tmp_path)])
    assert code == 0
    doc = json.loads((tmp_path / "bench-full.json").read_text())
    assert {r["assignor"] for r in doc["records"]} == {"optimal", "range", "kp-range"}
    assert doc["environment"]["cpus"] >= 1 and "stickyflow bench" in doc["command"]
    assert "| consumer 40 x 4, join, equal |" in (tmp_path / "bench-full.md").read_text()
    pytest.importorskip("matplotlib")
    assert (tmp_path / "bench-full.png").stat().st_size > 1000


def test_every_public_name_of_the_bench_package_loads():
    """``stickyflow.adapters.bench`` serves its modules' names lazily: each one it lists resolves."""
    from stickyflow.adapters import bench

    for name in bench.__all__:
        assert getattr(bench, name) is not None, name


def test_unknown_assignor_is_refused(capsys):
    assert main(["bench", "--assignors", "optimal,nope", "--out", "/nonexistent-never-written"]) == 2
    assert "nope" in capsys.readouterr().err


# --------------------------------------------------------------------------- the generated cases

@pytest.mark.parametrize("subscriptions", ["equal", "mixed"])
@pytest.mark.parametrize("event", ["fresh", "join", "leave"])
def test_generated_groups_are_what_the_case_says(event, subscriptions):
    case = Case(kind="consumer", size=500, members=20, event=event, subscriptions=subscriptions, per_topic=100)
    snap = consumer_snapshot(case)
    assert len(snap.members) == 20 and sum(t.partitions for t in snap.topics.values()) == 500
    owners = previous_owners(snap)
    owned = sum(int((o >= 0).sum()) for o in owners.owner.values())
    newcomers = [m for m in snap.members if m.generation is None]
    if event == "fresh":
        assert owned == 0 and len(newcomers) == 20
    elif event == "join":
        assert owned == 500 and len(newcomers) == 2  # 10% joined
    else:
        assert 0 < owned < 500 and not newcomers  # the leavers' partitions are orphaned
    for m in snap.members:  # the previous assignment respected the subscriptions
        assert set(m.owned) <= set(m.subscription)
    if subscriptions == "equal":
        assert len({m.subscription for m in snap.members}) == 1
    check_result(snap, stickyflow.assign(snap))


def test_streams_case_is_a_valid_snapshot():
    doc = streams_document(Case(kind="streams", size=40, members=5, event="leave", subscriptions="stateful"))
    snap = stickyflow.parse_snapshot(doc)
    assert len(doc["tasks"]) == 40 and len(doc["clients"]) == 5
    check_result(snap, stickyflow.assign(snap, "sticky"))


# --------------------------------------------------------------------------- lower bounds

def test_closed_form_least_moves_matches_the_optimizer(seed):
    rng = random.Random(seed)
    for _ in range(40):
        P, M = rng.randint(1, 60), rng.randint(1, 9)
        members = []
        for i in range(M):
            owned = sorted(rng.sample(range(P + 3), rng.randint(0, min(P, 12))))  # some stale
            members.append({"id": f"m{i}", "subscription": ["t"], "generation": rng.randint(1, 3),
                            "owned": {"t": owned}})
        doc = {"format": "stickyflow.snapshot/1", "kind": "consumer", "topics": {"t": {"partitions": P}},
               "members": members}
        snap = stickyflow.parse_snapshot(doc)
        r = stickyflow.assign(snap)
        check_result(snap, r)
        assert r.metrics["moves"] == min_moves_equal(snap), doc


# --------------------------------------------------------------------------- the fast paths

def _random_snapshot(rng: random.Random) -> ConsumerSnapshot:
    racks = ["r1", "r2", "r3"]
    topics = {}
    for j in range(rng.randint(0, 4)):
        n = rng.randint(1, 7)
        rs = tuple(frozenset(rng.sample(racks, rng.randint(0, 2))) for _ in range(n)) if rng.random() < 0.5 else None
        topics[f"t{j}"] = Topic(name=f"t{j}", partitions=n, racks=rs)
    names = list(topics) + ["gone"]
    members = []
    for i in range(rng.randint(0, 7)):
        owned = {t: tuple(rng.randint(0, 9) for _ in range(rng.randint(0, 5)))
                 for t in rng.sample(names, rng.randint(0, len(names)))}
        members.append(Member(id=f"m{i}", subscription=tuple(rng.sample(names, rng.randint(0, len(names)))),
                              rack=rng.choice(racks + [None]), generation=rng.choice([None, 0, 1, 2, 2, 3]),
                              owned=MappingProxyType(owned)))
    return ConsumerSnapshot(topics=MappingProxyType(topics), members=tuple(members),
                            protocol=rng.choice(["eager", "cooperative"]))


def _reference_owners(snap: ConsumerSnapshot) -> dict[str, list[int]]:
    """KIP-341 the slow, obvious way: per partition, the claim of the highest generation, unless tied."""
    out = {}
    for t, topic in snap.topics.items():
        owner = []
        for p in range(topic.partitions):
            claims = {i: (-1 if m.generation is None else m.generation) for i, m in enumerate(snap.members)
                      if p in m.owned.get(t, ())}
            best = max(claims.values(), default=None)
            winners = [i for i, g in claims.items() if g == best]
            owner.append(winners[0] if len(winners) == 1 else -1)
        out[t] = owner
    return out


def test_claims_resolved_on_flat_arrays_match_the_reference(seed):
    rng = random.Random(seed)
    for _ in range(300):
        snap = _random_snapshot(rng)
        prev = previous_owners(snap)
        assert {t: o.tolist() for t, o in prev.owner.items()} == _reference_owners(snap)
        for t, claims in prev.claims.items():
            assert [i for i, _ in claims] == sorted(i for i, _ in claims)
            for i, parts in claims:
                expect = sorted({p for p in snap.members[i].owned[t] if p < snap.topics[t].partitions})
                assert parts.tolist() == expect


def test_claims_read_from_dicts_match_the_reference(seed):
    """The same, for snapshots read from dicts (the bulk reader's flat claims): stale partitions, deleted
    topics, empty lists, repeats and tied generations resolve as KIP-341 says."""
    rng = random.Random(seed)
    for _ in range(300):
        topics = {f"t{j}": {"partitions": rng.randint(1, 6)} for j in range(rng.randint(0, 4))}
        names = list(topics) + ["gone"]
        members = []
        for i in range(rng.randint(0, 6)):
            m = {"id": f"m{i}", "subscription": rng.sample(names, rng.randint(0, len(names)))}
            if rng.random() < 0.8:
                m["owned"] = {t: [rng.randint(0, 7) for _ in range(rng.randint(0, 4))]
                              for t in rng.sample(names, rng.randint(0, len(names)))}
            if rng.random() < 0.8:
                m["generation"] = rng.choice([1, 2, 2, 3])
            members.append(m)
        snap = stickyflow.parse_snapshot({"format": "stickyflow.snapshot/1", "kind": "consumer",
                                          "topics": topics, "members": members})
        prev = previous_owners(snap)
        assert {t: o.tolist() for t, o in prev.owner.items()} == _reference_owners(snap), members


def test_array_assignments_are_checked_normalized_and_split_like_dicts(seed):
    rng = random.Random(seed)
    for _ in range(300):
        snap = _random_snapshot(rng)
        M = len(snap.members)
        owners = {t: [rng.randint(-1, M - 1) for _ in range(topic.partitions)]
                  for t, topic in snap.topics.items() if rng.random() < 0.8}
        arrays = ArrayAssignment(snap, owners)
        plain = {m: {t: list(p) for t, p in d.items()} for m, d in arrays.items()}
        norm = normalize_consumer_assignment(snap, plain)
        assert normalize_consumer_assignment(snap, arrays) == norm
        prev = previous_owners(snap)
        va, ma = inspect_consumer(snap, arrays, prev=prev)
        vd, md = inspect_consumer(snap, norm, prev=prev)
        assert ma == md and [str(v) for v in va] == [str(v) for v in vd]
        ca, cd = cooperative_split(snap, arrays, prev), cooperative_split(snap, norm, prev)
        assert ca.assignment == cd.assignment and ca.revocations == cd.revocations
        assert ca.withheld.keys() == cd.withheld.keys()
        assert all(np.array_equal(ca.withheld[t], cd.withheld[t]) for t in ca.withheld)


def test_array_assignment_refuses_what_is_not_an_assignment():
    snap = stickyflow.parse_snapshot({"format": "stickyflow.snapshot/1", "kind": "consumer",
                                      "topics": {"t": {"partitions": 2}},
                                      "members": [{"id": "a", "subscription": ["t"]}]})
    for bad in ({"t": [0]}, {"t": [0, 1]}, {"u": [0, 0]}, {"t": [0, -2]}):
        with pytest.raises(ValueError):
            ArrayAssignment(snap, bad)


def test_array_assignment_of_one_flat_array_is_the_per_topic_one(seed):
    """The solvers' constructor (one owner array over topics end to end) reads, checks and answers exactly as
    the per-topic one, and refuses what the per-topic one refuses."""
    rng = np.random.default_rng(seed)
    for _ in range(20):
        sizes = rng.integers(1, 6, size=int(rng.integers(1, 6))).tolist()
        n = int(rng.integers(1, 5))
        doc = {"format": "stickyflow.snapshot/1", "kind": "consumer",
               "topics": {f"t{j}": {"partitions": k} for j, k in enumerate(sizes)},
               "members": [{"id": f"m{i}", "subscription": [f"t{j}" for j in range(len(sizes))]} for i in range(n)]}
        snap = stickyflow.parse_snapshot(doc)
        given = sorted(rng.choice(len(sizes), size=int(rng.integers(1, len(sizes) + 1)), replace=False).tolist())
        names = [f"t{j}" for j in given]
        offsets = np.r_[0, np.cumsum([sizes[j] for j in given])]
        owner = rng.integers(-1, n, size=int(offsets[-1]))
        flat = ArrayAssignment.of_flat(snap, names, owner, offsets)
        per_topic = ArrayAssignment(snap, {t: owner[a:b] for t, a, b in zip(names, offsets[:-1], offsets[1:])})
        assert flat.to_tuples() == per_topic.to_tuples()
        assert {t: a.tolist() for t, a in flat.owners.items()} == {t: a.tolist() for t, a in per_topic.owners.items()}
        assert inspect_consumer(snap, flat) == inspect_consumer(snap, per_topic)
        for bad in (lambda: ArrayAssignment.of_flat(snap, names[::-1] if len(names) > 1 else ["nope"], owner, offsets),
                    lambda: ArrayAssignment.of_flat(snap, names, owner[:-1], offsets),
                    lambda: ArrayAssignment.of_flat(snap, names, np.r_[owner[:-1], n], offsets),
                    lambda: ArrayAssignment.of_flat(snap, names, np.r_[owner[:-1], -2], offsets)):
            with pytest.raises(ValueError):
                bad()


def test_run_tuples_matches_slicing(seed):
    rng = np.random.default_rng(seed)
    for _ in range(50):
        n = int(rng.integers(0, 2000))
        lengths = rng.choice([1, 1, 1, 2, 3, 9, 20], size=n) if rng.random() < 0.7 else rng.integers(1, 12, size=n)
        ends = np.cumsum(lengths)
        starts = ends - lengths
        part = rng.integers(0, 10**6, size=int(lengths.sum()))
        flat = part.tolist()
        got = run_tuples(part, starts, ends)
        assert got == [tuple(flat[a:b]) for a, b in zip(starts.tolist(), ends.tolist())]
        assert all(type(x) is int for t in got[:50] for x in t)


def test_plain_decisions_are_finished_on_arrays_with_the_same_result(seed, monkeypatch):
    """The front door turns a plain dict decision into owner arrays; irregular ones keep the per-pair path."""
    import stickyflow.api as api
    from stickyflow.result import Decision

    rng = random.Random(seed)
    for _ in range(400):
        snap = _random_snapshot(rng)
        decision = {}
        for mid in [m.id for m in snap.members] + (["ghost"] if rng.random() < 0.05 else []):
            if rng.random() < 0.05:
                continue  # a member left out
            d = {}
            for t, topic in list(snap.topics.items()) + ([("nope", None)] if rng.random() < 0.05 else []):
                if rng.random() < 0.5:
                    n = topic.partitions if topic else 3
                    parts = [rng.randint(0, n - (0 if rng.random() < 0.05 else 1)) for _ in range(rng.randint(0, 3))]
                    d[t] = rng.choice([list, tuple, lambda p: np.array(p, dtype=np.int64)])(parts)
            decision[mid] = d
        dec = Decision(assignment=decision, method="test", status="heuristic")
        fast = api.finish_consumer(snap, dec)
        with monkeypatch.context() as m:
            m.setattr(api, "as_array_assignment", lambda s, a: None)
            slow = api.finish_consumer(snap, dec)
        assert (fast.assignment, fast.target, fast.revocations) == (slow.assignment, slow.target, slow.revocations)
        assert [str(v) for v in fast.violations] == [str(v) for v in slow.violations]
        assert fast.metrics == slow.metrics
        assert fast.followup_rebalance_deadline_ms == slow.followup_rebalance_deadline_ms
