"""Plans from snapshots: the plan's input rules, the plan JSON, the command line, and plans in batch and compare."""

from __future__ import annotations

import json

import numpy as np
import pytest

import stickyflow
from stickyflow.adapters.cli import main
from stickyflow.errors import InvalidSnapshotError


def snapshot(**change):
    doc = {"format": "stickyflow.snapshot/1", "kind": "consumer", "id": "g",
           "topics": {"a": {"partitions": 3, "rates": [60, 50, 30]}, "b": {"partitions": 2, "rates": [40, 0]}},
           "config": {"capacity": 100},
           "members": [{"id": "m1", "subscription": ["a", "b"], "generation": 3, "owned": {"a": [0, 1], "b": [0]}},
                       {"id": "m2", "subscription": ["b", "a"], "generation": 3, "owned": {"a": [2]}},
                       {"id": "m3", "subscription": ["a", "b"], "generation": 2, "owned": {"a": [0], "b": [1]}}]}
    doc.update(change)
    return doc


def check_plan_json(doc: dict, plan: dict) -> None:
    """The plan JSON as the spec defines it, held to the snapshot."""
    assert plan["format"] == "stickyflow.plan/1" and plan["id"] == doc.get("id")
    members = [m["id"] for m in doc["members"]]
    assert set(plan["keep"]) | set(plan["stop"]) == set(members) and not set(plan["keep"]) & set(plan["stop"])
    assert not set(plan["add"]) & set(members) and plan["members"] == len(plan["keep"]) + len(plan["add"])
    assert set(plan["assignment"]) == set(plan["keep"]) | set(plan["add"])
    cap = doc["config"]["capacity"]
    seen = []
    for m, by in plan["assignment"].items():
        load = sum(doc["topics"][t]["rates"][p] for t, ps in by.items() for p in ps)
        assert load <= cap or sum(map(len, by.values())) == 1
        assert all(ps == sorted(ps) for ps in by.values())
        seen += [(t, p) for t, ps in by.items() for p in ps]
    subscribed = set(doc["members"][0]["subscription"]) if doc["members"] else set()
    assert sorted(seen) == sorted((t, p) for t, spec in doc["topics"].items() if t in subscribed
                                  for p in range(spec["partitions"]))
    assert plan["bound"] <= plan["members"] and plan["solver"]["status"] in ("optimal", "feasible", "heuristic")


def test_a_plan_from_a_snapshot():
    doc = snapshot()
    plan = stickyflow.plan(doc)
    out = plan.to_json()
    check_plan_json(doc, out)
    # 180 in all: two members; m3's claims lose to m1's (KIP-341, generation 2 < 3), so m3 owns only b-1
    # (rate 0) and stopping it moves nothing but a partition of rate 0; m1 must shed 50 or 60
    assert (out["members"], out["stop"], out["moved_load"], out["solver"]["status"]) == (2, ["m3"], 50.0, "optimal")
    assert out["moves"] == 2  # a-1 leaves m1, b-1 leaves m3


def test_a_plan_from_objects_is_the_plan_from_the_dict():
    doc = snapshot()
    snap = stickyflow.parse_snapshot(doc)
    again = stickyflow.ConsumerSnapshot(topics=snap.topics, members=snap.members, config=snap.config, id=snap.id)
    assert stickyflow.plan(again).to_json()["assignment"] == stickyflow.plan(doc).to_json()["assignment"]


@pytest.mark.parametrize("method", ["optimal", "latency", "bfd", "mwf", "mbfp", "least-loaded", "nf"])
def test_every_method_makes_a_valid_plan(method):
    doc = snapshot()
    check_plan_json(doc, stickyflow.plan(doc, method).to_json())


@pytest.mark.parametrize("change, field", [
    ({"config": {}}, "config.capacity"),
    ({"topics": {"a": {"partitions": 3}, "b": {"partitions": 2, "rates": [1, 2]}}}, "topics.a.rates"),
    ({"members": [{"id": "x", "subscription": ["a", "b"]}, {"id": "y", "subscription": ["a"]}]},
     "members[1].subscription"),
    ({"members": [{"id": "x", "subscription": ["a", "b"], "capacity": 50}]}, "members[0].capacity"),
])
def test_the_plans_input_rules_name_the_field(change, field):
    with pytest.raises(InvalidSnapshotError) as info:
        stickyflow.plan(snapshot(**change))
    assert info.value.field == field


def test_plan_on_the_command_line(tmp_path, capsys):
    path = tmp_path / "g.json"
    path.write_text(json.dumps(snapshot()))
    assert main(["plan", str(path), "-o", str(tmp_path / "plan.json")]) == 0
    check_plan_json(snapshot(), json.loads((tmp_path / "plan.json").read_text()))
    assert main(["plan", str(path), "--method", "least-loaded", "--up", "0.9", "--down", "0.8", "--compact"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and json.loads(out)["solver"]["method"] == "least-loaded"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(snapshot(config={})))
    assert main(["plan", str(bad)]) == 2
    assert capsys.readouterr().err.strip().startswith("stickyflow plan: snapshot: config.capacity: is required")


def test_plans_in_a_batch_and_in_compare():
    from stickyflow.adapters.compare import snapshot_rows
    from stickyflow.adapters.pandas import solve_text

    rows = solve_text(json.dumps(snapshot()), ["plan:optimal", "plan:mwf", "optimal"])
    assert [r["assignor"] for r in rows] == ["plan:optimal", "plan:mwf", "optimal"]
    assert rows[0]["status"] == "optimal" and rows[0]["objective"] == 50.0 and rows[0]["bound"] == 2.0
    assert json.loads(rows[0]["metrics"])["members"] == 2
    no_capacity = solve_text(json.dumps(snapshot(config={})), ["plan:bfd"])[0]
    assert no_capacity["status"] == "unsupported"
    study = snapshot_rows(snapshot(), ["optimal", "plan:bfd"])
    plan_row = next(r for r in study if r["assignor"] == "plan:bfd")
    assert plan_row["plan_members"] == 2 and plan_row["plan_bound"] == 2 and plan_row["error"] is None


def test_the_traces_suite_plans():
    from stickyflow.datasets.suites import suite_item

    for i in range(3):
        doc = suite_item("traces", i, seed=5)
        plan = stickyflow.plan(doc)
        check_plan_json(doc, plan.to_json())
        assert np.isfinite(plan.moved_load)
