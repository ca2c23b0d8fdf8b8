"""The consumer validity check reports every violation, and the optimal flow's graph stays compressed.

* ``stickyflow.validate_consumer`` (the public check; ``inspect_consumer``
  underneath) on one hand-made assignment that breaks every rule at once must
  return every code, not stop at the first; each rule broken alone gives its
  code alone, so no rule masks or invents another.
* ``formulations/consumer/flow.py`` builds one arc per group, cell and load
  unit, not one per (partition, member) pair: the arcs handed to OR-Tools'
  ``SimpleMinCostFlow`` are counted by wrapping the class on the
  ``ortools.graph.python.min_cost_flow`` module the code calls it through.
"""

from __future__ import annotations

import numpy as np
import pytest

import stickyflow
from stickyflow.check import answer as consumer_answer
from stickyflow.check.consumer import inspect_consumer
from stickyflow.datasets.generators import consumer_snapshot

ALL_CODES = {"MISSING_MEMBER_ID", "UNKNOWN_MEMBER_ID", "UNKNOWN_TOPIC", "UNKNOWN_PARTITION", "UNSUBSCRIBED_TOPIC",
             "PARTITION_ASSIGNED_MULTIPLE_TIMES", "PARTITION_UNASSIGNED"}


def group():
    # t: 3 partitions, read by a and b; u: 2 partitions, read by b and c
    return stickyflow.parse_snapshot({
        "format": "stickyflow.snapshot/1", "kind": "consumer",
        "topics": {"t": {"partitions": 3}, "u": {"partitions": 2}},
        "members": [{"id": "a", "subscription": ["t"]},
                    {"id": "b", "subscription": ["t", "u"]},
                    {"id": "c", "subscription": ["u"]}]})


VALID = {"a": {"t": [0, 1]}, "b": {"t": [2], "u": [0]}, "c": {"u": [1]}}

# one broken rule each, applied to VALID: code -> (member, topic, its partitions); topic None drops the member
BREAKS = {
    "MISSING_MEMBER_ID": ("c", None, None),                 # c left out (its u-1 then unassigned, see below)
    "UNKNOWN_MEMBER_ID": ("ghost", "t", [0]),               # nobody by that id (t-0 stays with a)
    "UNKNOWN_TOPIC": ("a", "nope", [0]),
    "UNKNOWN_PARTITION": ("a", "t", [0, 1, 5]),             # t has 3 partitions
    "UNSUBSCRIBED_TOPIC": ("c", "t", [2]),                  # c reads u only (and t-2 is now given twice)
    "PARTITION_ASSIGNED_MULTIPLE_TIMES": ("b", "u", [0, 1]),  # u-1 is c's too
    "PARTITION_UNASSIGNED": ("a", "t", [0]),                # t-1 nobody's
}


def broken(code: str) -> dict:
    out = {m: {t: list(p) for t, p in topics.items()} for m, topics in VALID.items()}
    member, topic, parts = BREAKS[code]
    if topic is None:
        out.pop(member)
    else:
        out.setdefault(member, {})[topic] = list(parts)
    return out


def codes(snap, assignment) -> list[str]:
    return [v.code for v in stickyflow.validate_consumer(snap, assignment)]


def test_the_valid_assignment_is_valid():
    assert codes(group(), VALID) == []


def test_every_violation_is_reported_at_once():
    snap = group()
    bad = {
        # c is missing; t-1 and u-1 are then nobody's
        "a": {"t": [0, 7], "nope": [0], "u": [0]},  # t-7 does not exist; no topic "nope"; a does not read u
        "b": {"t": [0, 2]},                         # t-0 a second time
        "ghost": {"t": [1]},                        # not a member: t-1 is still unassigned
    }
    violations = stickyflow.validate_consumer(snap, bad)
    assert {v.code for v in violations} == ALL_CODES, [str(v) for v in violations]
    assert inspect_consumer(snap, bad)[0] == violations  # the public check is inspect_consumer's verdict
    text = {v.code: v.message for v in violations if v.code != "PARTITION_UNASSIGNED"}
    assert "'c'" in text["MISSING_MEMBER_ID"] and "'ghost'" in text["UNKNOWN_MEMBER_ID"]
    assert "nope" in text["UNKNOWN_TOPIC"] and "t-7" in text["UNKNOWN_PARTITION"]
    assert "'a'" in text["UNSUBSCRIBED_TOPIC"] and "t-0" in text["PARTITION_ASSIGNED_MULTIPLE_TIMES"]
    unassigned = " ".join(v.message for v in violations if v.code == "PARTITION_UNASSIGNED")
    assert "t-1" in unassigned and "u-1" in unassigned  # every topic with a hole, not only the first


@pytest.mark.parametrize("code", sorted(BREAKS))
def test_each_rule_alone(code):
    """Breaking one rule reports that rule, plus only what it implies (so nothing masks anything)."""
    implied = {"MISSING_MEMBER_ID": {"PARTITION_UNASSIGNED"},
               "UNSUBSCRIBED_TOPIC": {"PARTITION_ASSIGNED_MULTIPLE_TIMES"},
               "UNKNOWN_PARTITION": set()}.get(code, set())
    assert set(codes(group(), broken(code))) == {code} | implied


# --------------------------------------------------------------------------- the flow graph stays small

@pytest.fixture
def arc_counts(monkeypatch):
    """Arcs added to each ``SimpleMinCostFlow`` built while the fixture is active (one list per instance)."""
    from ortools.graph.python import min_cost_flow

    built: list[list[int]] = []

    class Counting(min_cost_flow.SimpleMinCostFlow):
        def __init__(self, *args):
            super().__init__(*args)
            self.arcs = []
            built.append(self.arcs)

        def add_arcs_with_capacity_and_unit_cost(self, tails, heads, capacities, costs):
            assert len(tails) == len(heads) == len(capacities) == len(costs)
            self.arcs.append(len(tails))
            return super().add_arcs_with_capacity_and_unit_cost(tails, heads, capacities, costs)

        def add_arc_with_capacity_and_unit_cost(self, *args):
            self.arcs.append(1)
            return super().add_arc_with_capacity_and_unit_cost(*args)

    # consumer_flow reaches the class as ``min_cost_flow.SimpleMinCostFlow`` on this module (via model.ortools_graph())
    monkeypatch.setattr(min_cost_flow, "SimpleMinCostFlow", Counting)
    # the graph itself is under test: equal subscriptions must build it too, not take the closed form
    from stickyflow.formulations.consumer import flow as consumer_flow

    monkeypatch.setattr(consumer_flow, "_FAST_PATH", False)
    return built


def groups(snap) -> int:
    """Equal subscriptions, no racks: one group per member that validly owned something it still reads."""
    prev = stickyflow.previous_owners(snap)
    reads = snap.subscribers()
    owners = [np.unique(o[o >= 0]) for t, o in prev.owner.items() if reads[t]]
    return len(np.unique(np.concatenate(owners))) if owners else 0


def flow_arcs(arc_counts, doc) -> tuple[int, stickyflow.ConsumerSnapshot]:
    snap = stickyflow.parse_snapshot(doc)
    assert len({m.subscription for m in snap.members}) == 1 and not snap.rack_aware  # equal subscriptions
    arc_counts.clear()
    result = stickyflow.assign(snap, "optimal", fallback=False)
    assert result.solver.method == "flow" and result.solver.status == "optimal", result.solver
    assert result.metrics["imbalance"] <= 1
    assert len(arc_counts) == 1, arc_counts  # one subscription class: no phase-1 flow, one graph
    return sum(arc_counts[0]), snap


def test_flow_graph_grows_with_groups_not_partitions_times_members(arc_counts):
    M = 2_000
    steady, snap = flow_arcs(arc_counts, consumer_snapshot("steady", partitions=20_000, members=M, topics=10, seed=1))
    G = groups(snap)
    assert G == M  # everyone owned a share: one keep arc each
    P = 20_000
    print(f"\n[arcs] steady {P} x {M}: {steady} arcs, {G} groups (P x M = {P * M})")
    assert steady < 0.01 * P * M
    assert steady <= G + 5 * M  # a keep arc per group, cell -> member and a few load units per member

    # twice the partitions (P x M doubles), the same members and groups: no more arcs
    double, snap2 = flow_arcs(arc_counts, consumer_snapshot("steady", partitions=2 * P, members=M, topics=10,
                                                             seed=1))
    assert groups(snap2) == G
    print(f"[arcs] steady {2 * P} x {M}: {double} arcs")
    assert double <= steady

    # the same size with nobody owning anything: no groups, so fewer arcs, by at most one per group
    fresh, snap3 = flow_arcs(arc_counts, consumer_snapshot("fresh", partitions=P, members=M, topics=10, seed=1))
    assert groups(snap3) == 0
    print(f"[arcs] fresh {P} x {M}: {fresh} arcs")
    assert steady - G <= fresh < steady


@pytest.mark.parametrize("n, top", [(10, 5), (600_000, 20_000), (600_000, 200_000)])
def test_int_list_is_tolist_with_shared_ints(n, top):
    """The answer's partition numbers: the same list as ``tolist``; from half a million values below an
    eighth of their count, each number one shared int (equal values are the same object)."""
    values = 1000 + np.random.default_rng(n + top).integers(0, top, n)  # above Python's cached small ints
    got = consumer_answer._int_list(values)
    assert got == values.tolist() and all(type(v) is int for v in got[:100])
    first = {}
    shared = all(first.setdefault(v, v) is v for v in got)
    assert shared == (n >= consumer_answer._SHARED_INTS and 1000 + top <= n // 8)


@pytest.mark.parametrize("top, runs", [(3, 3_000), (200, 3_000), (5_000, 3_000), (200, 40_000), (40_000, 40_000)])
def test_run_tuples_are_the_runs_sliced(top, runs, seed):
    """The answer's tuples, however they are made (sliced, zipped by length, single runs shared per number,
    ints shared per number from 50,000 partitions on): each run of the sorted partitions as a tuple of plain
    ints."""
    rng = np.random.default_rng(seed)
    lengths = rng.choice([1, 1, 1, 2, 3, 9], size=runs)
    part = rng.integers(0, top, int(lengths.sum()))
    ends = np.cumsum(lengths)
    starts = ends - lengths
    got = consumer_answer.run_tuples(part, starts, ends)
    flat = part.tolist()
    assert got == [tuple(flat[a:b]) for a, b in zip(starts.tolist(), ends.tolist())]
    assert all(type(v) is int for t in got[:50] for v in t)


@pytest.mark.parametrize("scenario, protocol", [("steady", "eager"), ("scale_out", "eager"), ("scale_in", "eager"),
                                                ("scale_out", "cooperative"), ("mixed", "eager")])
def test_answer_view_reads_as_the_eager_mapping(scenario, protocol, seed, monkeypatch):
    """``assign``'s consumer answer is built on first look (``AnswerView``): it must read exactly as the
    mapping built at once (same members in order, topics in order, tuples of plain ints), its JSON written
    straight from the arrays must equal the JSON of the built mapping, it stays read-only, and it pickles
    as plain dicts."""
    import pickle

    doc = consumer_snapshot(scenario, partitions=300, members=7, topics=5, seed=seed, protocol=protocol)
    lazy = stickyflow.assign(doc, "optimal")
    assert isinstance(lazy.target, consumer_answer.AnswerView)
    assert len(lazy.target) == len(doc["members"])  # answered without building anything
    json_first = lazy.to_json()  # from the arrays
    with monkeypatch.context() as m:  # the same call with the mapping built at once
        m.setattr(consumer_answer.AnswerView, "__init__", _built_at_once)
        eager = stickyflow.assign(doc, "optimal")
    assert list(lazy.target) == list(eager.target) == [m["id"] for m in doc["members"]]
    for mid in lazy.target:
        assert list(lazy.target[mid].items()) == list(eager.target[mid].items())
        assert all(type(p) is int for ps in lazy.target[mid].values() for p in ps)
    assert lazy.target == eager.target and eager.target == lazy.target and lazy.target == dict(eager.target)
    assert _timeless(json_first) == _timeless(lazy.to_json()) == _timeless(eager.to_json())
    assert repr(lazy.target) == repr(eager.target)
    with pytest.raises(TypeError):
        lazy.target[next(iter(lazy.target))]["t0"] = (0,)
    with pytest.raises(TypeError):
        lazy.target["someone"] = {}
    back = pickle.loads(pickle.dumps(lazy.target))
    assert type(back) is dict and back == lazy.target


def _timeless(doc: dict) -> dict:
    return {**doc, "solver": {**doc["solver"], "wall_s": None}}


def _built_at_once(view, arrays) -> None:
    from types import MappingProxyType

    view._arrays = None
    view._map = MappingProxyType({k: MappingProxyType(v) for k, v in arrays.to_tuples().items()})
