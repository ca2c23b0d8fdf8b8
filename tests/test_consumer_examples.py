"""The bundled consumer examples with every consumer assignor, through the front door and the CLI.

Each result is checked by ``check_result`` and against the spec's result JSON
(every member present, sorted partitions, revocations only and exactly under
the cooperative protocol, the follow-up deadline). The KIP-54 examples also
have known optimal answers, asserted here; bad input on the command line exits
2 with one line naming the field.
"""

from __future__ import annotations

import json

import pytest

import stickyflow
from stickyflow.adapters.cli import main
from stickyflow.check.consumer import inspect_consumer
from stickyflow.model.consumer_claims import previous_owners
from stickyflow.registry import available_assignors, get_assignor
from tests.checker import check_result
from tests.conftest import example_paths

CONSUMER_EXAMPLES = [p for p in example_paths() if json.loads(p.read_text()).get("kind") == "consumer"]
# the count model's examples: a snapshot balanced by load has methods of its own and refuses "flow" and "networkx"
COUNT_EXAMPLES = [p for p in CONSUMER_EXAMPLES if json.loads(p.read_text()).get("config", {}).get("balance") != "load"]
ASSIGNORS = available_assignors("consumer")
RESULT_KEYS = {"format", "kind", "id", "assignor", "assignment", "revocations", "followup_rebalance_deadline_ms",
               "error", "solver", "metrics"}


def test_builtin_assignors_are_listed_and_import():
    """Every assignor stickyflow ships is run below; one that does not import is a failure, not a skip."""
    assert {"optimal", "range", "roundrobin", "sticky"} <= set(ASSIGNORS)
    for name in ASSIGNORS:
        assert callable(get_assignor(name, "consumer").load()), name


def check_result_json(snap, doc: dict, assignor: str) -> None:
    """``doc`` is a result object as the spec describes it, for ``snap``."""
    assert RESULT_KEYS <= set(doc), RESULT_KEYS - set(doc)
    assert doc["format"] == "stickyflow.result/1"
    assert (doc["kind"], doc["id"], doc["assignor"], doc["error"]) == ("consumer", snap.id, assignor, "NONE")
    assert set(doc["assignment"]) == {m.id for m in snap.members}
    for mid, topics in doc["assignment"].items():
        for t, parts in topics.items():
            assert t in snap.topics, (mid, t)
            assert all(type(p) is int for p in parts) and parts == sorted(set(parts)), (mid, t, parts)
    assert {"method", "status", "reason", "objective", "bound", "wall_s"} <= set(doc["solver"])
    assert doc["solver"]["status"] in ("optimal", "feasible", "heuristic", "fallback")
    assert {"moves", "imbalance", "cross_rack"} <= set(doc["metrics"])
    if snap.protocol != "cooperative":
        assert doc["revocations"] == {}
        assert doc["followup_rebalance_deadline_ms"] is None
        return
    # cooperative: every member gives up exactly what it claims (losing KIP-341 claims too) and is not given
    # this round (owned minus assigned, as a Kafka client revokes by itself)
    assert doc["target"] == doc_target(snap, doc)
    expected: dict[str, dict[str, list[int]]] = {}
    index = {m.id: i for i, m in enumerate(snap.members)}
    for t, claims in previous_owners(snap).claims.items():
        for i, parts in claims:
            mid = snap.members[i].id
            lost = sorted(set(parts.tolist()) - set(doc["assignment"].get(mid, {}).get(t, [])))
            if lost:
                expected.setdefault(mid, {})[t] = lost
    assert set(doc["revocations"]) <= set(index)
    assert doc["revocations"] == expected
    deadline = doc["followup_rebalance_deadline_ms"]
    assert deadline == (snap.now_ms if expected else None)


def doc_target(snap, doc) -> dict:
    """The full decision behind a cooperative round: this round's partitions plus the withheld ones."""
    method = doc["solver"]["method"] if doc["assignor"] == "optimal" else None
    result = stickyflow.assign(snap, doc["assignor"], method=method)  # deterministic: the same decision again
    return {m: {t: list(p) for t, p in topics.items()} for m, topics in result.target.items()}


@pytest.mark.parametrize("name", ASSIGNORS)
@pytest.mark.parametrize("path", CONSUMER_EXAMPLES, ids=lambda p: p.stem)
def test_front_door(path, name):
    snap = stickyflow.load_snapshot(path)
    result = stickyflow.assign(snap, name)
    check_result(snap, result)
    check_result_json(snap, result.to_json(), name)
    if get_assignor(name, "consumer").optimizing:
        assert result.solver.status == "optimal", result.solver


@pytest.mark.parametrize("name", ASSIGNORS)
@pytest.mark.parametrize("path", CONSUMER_EXAMPLES, ids=lambda p: p.stem)
def test_cli(path, name, tmp_path):
    out = tmp_path / "result.json"
    assert main(["solve", str(path), "--assignor", name, "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    snap = stickyflow.load_snapshot(path)
    check_result_json(snap, doc, name)
    again = stickyflow.assign(snap, name).to_json()
    assert doc["assignment"] == again["assignment"] and doc["revocations"] == again["revocations"]


def test_cli_default_is_optimal_on_stdout(capsysbinary):
    path = next(p for p in CONSUMER_EXAMPLES if p.stem == "consumer-kip54-join")
    assert main(["solve", str(path), "--compact"]) == 0
    captured = capsysbinary.readouterr()
    assert captured.err == b""
    lines = captured.out.decode().strip().splitlines()
    assert len(lines) == 1  # --compact: one line
    doc = json.loads(lines[0])
    check_result_json(stickyflow.load_snapshot(path), doc, "optimal")
    assert doc["solver"]["status"] == "optimal"


def test_cli_networkx_method_matches_flow(tmp_path):
    for path in COUNT_EXAMPLES:
        docs = []
        for method in ("flow", "networkx"):
            out = tmp_path / f"{method}.json"
            assert main(["solve", str(path), "--method", method, "-o", str(out)]) == 0
            docs.append(json.loads(out.read_text()))
        assert docs[1]["solver"]["method"] == "networkx"
        snap = stickyflow.load_snapshot(path)
        assert docs[0]["solver"]["objective"] == docs[1]["solver"]["objective"], path.stem
        assert docs[0]["metrics"]["imbalance"] == docs[1]["metrics"]["imbalance"]
        check_result_json(snap, docs[1], "optimal")


# --------------------------------------------------------------------------- known optimal answers

def example(stem: str):
    return stickyflow.load_snapshot(next(p for p in CONSUMER_EXAMPLES if p.stem == stem))


def loads_of(target) -> list[int]:
    return sorted(sum(len(p) for p in topics.values()) for topics in target.values())


def owned(snap, mid) -> set[tuple[str, int]]:
    m = next(m for m in snap.members if m.id == mid)
    return {(t, p) for t, parts in m.owned.items() for p in parts}


def held(target, mid) -> set[tuple[str, int]]:
    return {(t, p) for t, parts in target[mid].items() for p in parts}


def solve(snap, **kw):
    result = stickyflow.assign(snap, "optimal", fallback=False, **kw)
    check_result(snap, result)
    assert result.solver.status == "optimal"
    return result


def test_kip54_fresh_three_consumers_four_topics():
    snap = example("consumer-kip54-fresh")
    r = solve(snap)
    assert loads_of(r.target) == [2, 3, 3]
    assert (r.metrics["moves"], r.metrics["imbalance"], r.metrics["cross_rack"]) == (0, 1, None)
    assert r.solver.objective == 0


def test_kip54_join_one_partition_moves_to_the_newcomer():
    """C2 joins C0 and C1 (two partitions each): 4 over 3 means 2/1/1, so exactly one partition moves.

    Taking one from each of C0 and C1 would also be balanced, but costs two moves.
    """
    snap = example("consumer-kip54-join")
    r = solve(snap)
    assert loads_of(r.target) == [1, 1, 2]
    assert len(held(r.target, "C2")) == 1
    assert held(r.target, "C0") <= owned(snap, "C0") and held(r.target, "C1") <= owned(snap, "C1")
    assert (r.metrics["moves"], r.metrics["imbalance"], r.solver.objective) == (1, 1, 1)
    assert r.revocations == {} and r.followup_rebalance_deadline_ms is None


def test_cooperative_conflicting_claims():
    """9 partitions over 3 members (m-b reads orders only): 3 each. payments-1 was m-b's but m-b dropped
    payments, and no payments subscriber sits in rack b: one forced move and one forced cross-rack read.
    m-a holds 4 (orders 2 won at generation 7 over m-b's 6): m-b takes two local orders. 3 moves, cost 13.
    """
    snap = example("consumer-cooperative-conflicts")
    r = solve(snap)
    assert loads_of(r.target) == [3, 3, 3]
    assert (r.metrics["moves"], r.metrics["cross_rack"], r.solver.objective) == (3, 1, 13)
    assert set(r.target["m-b"]) == {"orders"} and ("orders", 3) in held(r.target, "m-b")
    # KIP-429: m-b gives up payments-1 (and its losing claim on orders-2) before anyone gets them
    assert r.revocations["m-b"]["payments"] == (1,)
    assert 2 in r.revocations["m-b"].get("orders", ()) or ("orders", 2) in held(r.target, "m-b")
    assert r.followup_rebalance_deadline_ms == snap.now_ms
    for mid, topics in r.assignment.items():
        for t, parts in topics.items():
            for p in parts:  # nobody receives a partition another member still claims
                others = {m.id for m in snap.members if p in m.owned.get(t, ()) and m.id != mid}
                assert not others or (t, p) in owned(snap, mid), (mid, t, p, others)
    _, metrics = inspect_consumer(snap, r.target)
    assert metrics["sum_squared_loads"] == 27


def kip54(members, topics):
    return stickyflow.parse_snapshot({"format": "stickyflow.snapshot/1", "kind": "consumer",
                                      "topics": {t: {"partitions": n} for t, n in topics.items()},
                                      "members": members})


def test_kip54_example1_consumer_leaves():
    """KIP-54 example 1: C1 leaves; C0 and C2 keep everything and split C1's three partitions."""
    everything = ["t0", "t1", "t2", "t3"]
    snap = kip54([
        {"id": "C0", "subscription": everything, "generation": 1, "owned": {"t0": [0], "t1": [1], "t3": [0]}},
        {"id": "C2", "subscription": everything, "generation": 1, "owned": {"t1": [0], "t2": [1]}},
    ], {t: 2 for t in everything})
    r = solve(snap)
    assert held(r.target, "C0") >= owned(snap, "C0") and held(r.target, "C2") >= owned(snap, "C2")
    assert loads_of(r.target) == [4, 4] and r.metrics["moves"] == 0


def test_kip54_example2_mixed_subscriptions():
    """KIP-54 example 2: C0 [t0], C1 [t0, t1], C2 [t0, t1, t2] with 1, 2, 3 partitions; then C0 leaves."""
    topics = {"t0": 1, "t1": 2, "t2": 3}
    fresh = kip54([{"id": "C0", "subscription": ["t0"]}, {"id": "C1", "subscription": ["t0", "t1"]},
                   {"id": "C2", "subscription": ["t0", "t1", "t2"]}], topics)
    r = solve(fresh)
    assert r.to_json()["assignment"] == {"C0": {"t0": [0]}, "C1": {"t1": [0, 1]}, "C2": {"t2": [0, 1, 2]}}
    later = kip54([{"id": "C1", "subscription": ["t0", "t1"], "generation": 1, "owned": {"t1": [0, 1]}},
                   {"id": "C2", "subscription": ["t0", "t1", "t2"], "generation": 1, "owned": {"t2": [0, 1, 2]}}],
                  topics)
    r = solve(later)
    assert r.to_json()["assignment"] == {"C1": {"t0": [0], "t1": [0, 1]}, "C2": {"t2": [0, 1, 2]}}
    assert r.metrics["moves"] == 0 and r.metrics["imbalance"] == 0


@pytest.mark.parametrize("method", ["flow", "networkx"])
def test_examples_same_optimum_both_methods(method):
    for path in COUNT_EXAMPLES:
        snap = stickyflow.load_snapshot(path)
        r = solve(snap, method=method)
        assert r.solver.method == method
        assert r.solver.objective == solve(snap).solver.objective, path.stem


# --------------------------------------------------------------------------- bad input on the command line

GOOD = {"format": "stickyflow.snapshot/1", "kind": "consumer", "topics": {"t": {"partitions": 2}},
        "members": [{"id": "a", "subscription": ["t"]}]}


def bad(**changes) -> dict:
    doc = json.loads(json.dumps(GOOD))
    for key, value in changes.items():
        if value is None:
            doc.pop(key)
        else:
            doc[key] = value
    return doc


@pytest.mark.parametrize("doc, args, field", [
    (bad(members=None), [], "members"),
    (bad(topics={"t": {"partitions": 0}}), ["--assignor", "range"], "topics.t.partitions"),
    (bad(members=[{"id": "a", "subscription": ["t"], "owned": {"t": [-1]}}]), ["--assignor", "roundrobin"],
     "members[0].owned.t[0]"),
    (bad(config={"traffic_cost": -3}), ["--method", "networkx"], "config.traffic_cost"),
    (bad(protocol="incremental"), ["--assignor", "sticky"], "protocol"),
    (GOOD, ["--assignor", "nonesuch"], "assignor"),
    (GOOD, ["--method", "simplex"], "method"),
    (GOOD, ["--time-limit", "-1"], "--time-limit"),
    ("{not json", [], "snapshot"),
])
def test_cli_bad_input_exits_2_with_one_line(doc, args, field, tmp_path, capsys):
    path = tmp_path / "snap.json"
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    code = main(["solve", str(path), *args])
    captured = capsys.readouterr()
    assert code == 2, captured.err
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert field in lines[0] and "Traceback" not in captured.err
