"""The multi-round simulator: its convergence counts equal a hand-written re-solve loop, a lost leader changes
nothing, readiness changes when learners move, and bad scenarios are rejected naming the field."""

from __future__ import annotations

import copy
import importlib
import json

import pytest

import stickyflow
from stickyflow.datasets.generators import consumer_snapshot
from stickyflow.datasets.simulator import Event, Scenario, load_scenario, preset, scenario_from_json, simulate

from tests.checker import check_result


def _serves(assignor: str, kind: str) -> bool:
    """The assignor is registered for ``kind`` and its module imports (others are being written in parallel)."""
    if assignor not in stickyflow.available_assignors(kind):
        return False
    try:
        stickyflow.get_assignor(assignor, kind).load()
    except ImportError:
        return False
    return True


def _checked(snapshot, result):
    check_result(snapshot, result)


def _consumer_assignors() -> list[str]:
    return [a for a in ("optimal", "sticky", "range", "roundrobin") if _serves(a, "consumer")]


def _streams_assignors(mode: str = "warmup") -> list[str]:
    """Streams assignors whose code for ``mode`` is importable (a missing module means: not written yet)."""
    probe = {"format": "stickyflow.snapshot/1", "kind": "streams", "config": {"rebalancing_mode": mode},
             "tasks": [{"id": "0_0", "stateful": True, "end_offset_sum": 10**6}],
             "clients": [{"process_id": "a", "previous_active": ["0_0"], "previous_standby": []},
                         {"process_id": "b", "previous_active": [], "previous_standby": []}]}
    out = []
    for a in ("optimal", "sticky"):
        if not _serves(a, "streams"):
            continue
        try:
            stickyflow.assign(probe, a, fallback=False)
        except stickyflow.SolverFaultError as exc:
            if isinstance(exc.__cause__, ImportError):
                continue
            raise
        out.append(a)
    return out


# --------------------------------------------------------------------------- consumer groups by hand

def _consumer_by_hand(first: dict, events: dict[int, list[tuple[str, str, dict]]], rounds: int, assignor: str):
    """Re-solve round after round by hand: every member reports what it was given, with the group generation.

    Returns (assignment JSON per round, rounds to converge per disturbance)."""
    doc = copy.deepcopy(first)
    members = {m["id"]: m for m in doc.pop("members")}
    generation = max([m.get("generation", 0) for m in members.values()], default=0)
    assignments, counts = [], []
    pending = None  # rebalances since the last disturbance, while a follow-up is outstanding
    for rnd in range(rounds):
        for action, mid, spec in events.get(rnd, []):
            if action == "join":
                members[mid] = {"id": mid, **spec}
            else:
                del members[mid]
        if rnd == 0 or rnd in events:
            if pending is not None:
                counts.append(None)  # the previous disturbance never converged
            pending = 0
        snap = stickyflow.parse_snapshot({**doc, "now_ms": 0, "members": list(members.values())})
        result = stickyflow.assign(snap, assignor)
        check_result(snap, result)
        generation += 1
        out = result.to_json()
        assignments.append(out["assignment"])
        for mid, topics in out["assignment"].items():
            members[mid] = {**members[mid], "owned": topics, "generation": generation}
        if pending is not None:
            pending += 1
            if out["followup_rebalance_deadline_ms"] is None:
                counts.append(pending)
                pending = None
    if pending is not None:
        counts.append(None)
    return assignments, tuple(counts)


@pytest.mark.parametrize("protocol", ["cooperative", "eager"])
def test_consumer_convergence_equals_hand_resolve(seed, protocol):
    first = consumer_snapshot("steady", partitions=30, members=4, topics=3, racks=3, seed=seed, protocol=protocol,
                              id="hand")
    subs = first["members"][0]["subscription"]
    leaving = first["members"][1]["id"]
    crashing = first["members"][2]["id"]
    events = {2: [("join", "new-1", {"subscription": subs, "rack": "rack-0"}),
                  ("join", "new-2", {"subscription": subs})],
              4: [("leave", leaving, {})],
              6: [("crash", crashing, {}), ("join", "new-3", {"subscription": subs[:1]})],
              9: [("join", leaving, {"subscription": subs})]}
    rounds = 11
    scenario = Scenario(snapshot=first, rounds=rounds, events=tuple(
        Event(round=r, action=a, member=m, spec=s) for r, evs in events.items() for a, m, s in evs))
    for assignor in _consumer_assignors():
        run = simulate(scenario, [assignor], observe=_checked).runs[0]
        assignments, counts = _consumer_by_hand(first, events, rounds, assignor)
        print(assignor, protocol, run.rounds_to_converge, counts)
        assert run.rounds_to_converge == counts
        assert [r["assignment"] for r in run.results] == assignments
        if protocol == "cooperative" and assignor == "optimal":  # a change that moves partitions takes two rounds
            assert all(c == (2 if run.rounds[s].revoked else 1)
                       for c, s in zip(counts, (e.start_round for e in run.episodes)))
        elif protocol == "eager":
            assert set(counts) == {1}


def test_cooperative_join_takes_two_rounds_without_double_ownership():
    snap = {"format": "stickyflow.snapshot/1", "kind": "consumer", "protocol": "cooperative",
            "topics": {"t": {"partitions": 6}},
            "members": [{"id": "a", "subscription": ["t"]}, {"id": "b", "subscription": ["t"]}]}
    run = simulate(Scenario(snapshot=snap, rounds=4, events=(Event(round=1, action="join", member="c"),)),
                   ["optimal"], observe=_checked).runs[0]
    assert [r.trigger for r in run.rounds] == ["start", "event", "followup", "idle"]
    assert run.rounds_to_converge == (1, 2)
    joined, followup = run.results[1], run.results[2]
    assert joined["assignment"]["c"] == {} and sum(len(p) for p in joined["revocations"]["a"].values()) == 1
    assert sum(len(p) for p in followup["assignment"]["c"].values()) == 2
    assert run.rounds[2].time_ms == run.rounds[1].time_ms  # the second cooperative round is immediate


# --------------------------------------------------------------------------- the leader lost

@pytest.mark.parametrize("name", ["consumer-cooperative", "streams-warmup", "streams-learner"])
def test_leader_lost_changes_nothing(seed, name):
    scenario = preset(name, seed=seed % 1000)
    kind = scenario.kind
    assignors = _consumer_assignors() if kind == "consumer" else _streams_assignors(scenario.rebalancing_mode)
    if not assignors:
        pytest.skip(f"no {kind} assignor available yet")
    assert any(e.action == "leader_lost" for e in scenario.events)
    without = scenario.replace(events=tuple(e for e in scenario.events if e.action != "leader_lost"))
    lost_round = next(e.round for e in scenario.events if e.action == "leader_lost")
    for assignor in assignors[:2]:
        a = simulate(scenario, [assignor], observe=_checked).runs[0]
        b = simulate(without, [assignor]).runs[0]
        assert a.rounds[lost_round].leader != b.rounds[lost_round].leader
        strip = lambda r: {k: v for k, v in r.items() if k != "solver"}  # noqa: E731 - wall time differs
        assert [strip(r) for r in a.results] == [strip(r) for r in b.results]
        assert [s for s in a.snapshots] == [s for s in b.snapshots]
        # the lost leader opens an episode that converges at once
        ep = next(e for e in a.episodes if e.start_round == lost_round)
        assert ep.cause == "leader lost"
        assert ep.rounds_to_converge == (1 if b.rounds[lost_round].converged else ep.rounds_to_converge)


# --------------------------------------------------------------------------- Streams by hand

def _streams_by_hand(first: dict, joins: dict[int, list[str]], rounds: int, assignor: str, restore: int):
    """Re-solve a Streams application by hand: clients report what they ran, standbys and warm-ups restore
    ``restore`` offsets per round, the next round is the probing rebalance. Returns rounds to converge."""
    doc = copy.deepcopy(first)
    clients = {c["process_id"]: c for c in doc.pop("clients")}
    eos = {t["id"]: t.get("end_offset_sum", 0) for t in doc["tasks"] if t["stateful"]}
    state = {pid: {} for pid in clients}  # process id -> task -> lag
    interval = doc.get("config", {}).get("probing_rebalance_interval_ms", 600_000)
    now = doc.get("now_ms", 0)
    counts, pending = [], None
    for rnd in range(rounds):
        for pid in joins.get(rnd, []):
            clients[pid] = {"process_id": pid, "threads": 1, "previous_active": [], "previous_standby": []}
            state[pid] = {}
        if rnd == 0 or rnd in joins:
            if pending is not None:
                counts.append(None)
            pending = 0
        for pid, c in clients.items():
            lags = {t: lag for t, lag in state[pid].items() if t not in c["previous_active"]}
            c["lags"] = lags
        snap = stickyflow.parse_snapshot({**doc, "now_ms": now, "clients": list(clients.values())})
        result = stickyflow.assign(snap, assignor)
        check_result(snap, result)
        out = result.to_json()
        for pid, a in out["assignment"].items():
            clients[pid] = {**clients[pid], "previous_active": a["active"],
                            "previous_standby": a["standby"] + a["warmup"]}
            for t in a["active"]:
                if t in eos:
                    state[pid][t] = 0
            for t in a["standby"] + a["warmup"]:
                state[pid][t] = max(0, state[pid].get(t, eos[t]) - restore)
        converged = out["followup_rebalance_deadline_ms"] is None
        if pending is not None:
            pending += 1
            if converged:
                counts.append(pending)
                pending = None
        now = now + interval if converged else out["followup_rebalance_deadline_ms"]
    if pending is not None:
        counts.append(None)
    return tuple(counts)


@pytest.mark.parametrize("mode", ["warmup", "learner"])
def test_streams_convergence_equals_hand_resolve(seed, mode):
    assignors = _streams_assignors(mode)
    if not assignors:
        pytest.skip("no streams assignor available yet")
    from stickyflow.datasets.generators import streams_snapshot

    first = streams_snapshot("steady", tasks=12, clients=3, subtopologies=2, seed=seed, id="hand",
                             config={"rebalancing_mode": mode, "max_warmup_replicas": 2})
    biggest = max(t.get("end_offset_sum", 0) for t in first["tasks"])
    restore = max(1, biggest // 3)
    joins = {4: ["s-new-1", "s-new-2"], 14: ["s-new-3"]}
    scenario = Scenario(snapshot=first, rounds=24, restore_per_round=restore, readiness="conservative",
                        events=tuple(Event(round=r, action="join", member=p, spec={"threads": 1})
                                     for r, ps in joins.items() for p in ps))
    for assignor in assignors:
        run = simulate(scenario, [assignor], observe=_checked).runs[0]
        counts = _streams_by_hand(first, joins, 24, assignor, restore)
        print(assignor, mode, run.rounds_to_converge, counts)
        assert run.rounds_to_converge == counts
        # whatever the assignor, warm-ups that restore end in convergence
        assert counts[-1] is not None


def test_learner_readiness_eager_moves_before_the_probing_deadline():
    assignors = _streams_assignors("learner")
    if not assignors:
        pytest.skip("no streams assignor available yet")
    snap = {"format": "stickyflow.snapshot/1", "kind": "streams", "now_ms": 0,
            "tasks": [{"id": f"0_{i}", "stateful": True, "end_offset_sum": 1_000_000} for i in range(4)],
            "clients": [{"process_id": "a", "previous_active": ["0_0", "0_1"], "previous_standby": []},
                        {"process_id": "b", "previous_active": ["0_2", "0_3"], "previous_standby": []}],
            "config": {"rebalancing_mode": "learner", "acceptable_recovery_lag": 10_000}}
    # restoring 1,000,000 offsets takes a quarter of the probing interval
    scenario = Scenario(snapshot=snap, rounds=8, restore_per_ms=1_000_000 / 150_000,
                        events=(Event(round=1, action="join", member="c"),))
    for assignor in assignors:
        sim = simulate(scenario, [assignor], readiness=["eager", "conservative"], observe=_checked)
        eager, conservative = sim.run(f"{assignor} (eager)"), sim.run(f"{assignor} (conservative)")
        if not any(r.warmups for r in eager.rounds):
            continue  # this assignor moved the task without a learner: nothing to be ready for
        assert "ready" in [r.trigger for r in eager.rounds]
        assert "ready" not in [r.trigger for r in conservative.rounds]
        e, c = eager.summary()[1], conservative.summary()[1]
        print(assignor, e, c)
        assert e["time_to_converge_ms"] is not None and c["time_to_converge_ms"] is not None
        assert e["time_to_converge_ms"] < c["time_to_converge_ms"]


# --------------------------------------------------------------------------- scenarios

def _snap():
    return {"format": "stickyflow.snapshot/1", "kind": "consumer", "topics": {"t": {"partitions": 4}},
            "members": [{"id": "a", "subscription": ["t"]}]}


@pytest.mark.parametrize("events, field", [
    ((Event(round=1, action="join", member="a"),), "scenario.events[0].member"),
    ((Event(round=1, action="leave", member="zz"),), "scenario.events[0].member"),
    ((Event(round=9, action="leave", member="a"),), "scenario.events[0].round"),
    ((Event(round=1, action="explode", member="a"),), "scenario.events[0].action"),
    ((Event(round=1, action="join", member="b", spec={"subscriptions": ["t"]}),), "scenario.events[0].spec.subscriptions"),
])
def test_bad_scenarios_name_the_field(events, field):
    with pytest.raises(stickyflow.InvalidSnapshotError) as err:
        Scenario(snapshot=_snap(), rounds=5, events=events)
    assert err.value.field == field


def test_bad_scenario_settings_name_the_field():
    for kw, field in [({"rounds": 0}, "scenario.rounds"), ({"readiness": "soon"}, "scenario.readiness"),
                      ({"restore_per_ms": -1}, "scenario.restore_per_ms"),
                      ({"restore_per_ms": 1, "restore_per_round": 5}, "scenario.restore_per_round")]:
        with pytest.raises(stickyflow.InvalidSnapshotError) as err:
            Scenario(snapshot=_snap(), **kw)
        assert err.value.field == field
    with pytest.raises(stickyflow.InvalidSnapshotError) as err:
        scenario_from_json({"snapshot": {**_snap(), "members": [{"id": 3}]}})
    assert err.value.field.startswith("scenario.snapshot.members[0]")
    with pytest.raises(stickyflow.InvalidSnapshotError) as err:
        scenario_from_json({"snapshot": _snap(), "rounds": 3, "event": []})
    assert err.value.field == "scenario.event"


def test_scenario_json_round_trip(tmp_path, seed):
    scenario = preset("consumer-cooperative", seed=seed % 1000)
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(scenario.to_json()))
    again = load_scenario(path)
    assert again.to_json() == scenario.to_json()
    a = simulate(scenario, ["optimal"]).runs[0]
    b = simulate(again, ["optimal"]).runs[0]
    assert [r["assignment"] for r in a.results] == [r["assignment"] for r in b.results]
    assert a.rounds_to_converge == b.rounds_to_converge


def test_streams_state_survives_a_leave_but_not_a_crash():
    if not _streams_assignors():
        pytest.skip("no streams assignor available yet")
    snap = {"format": "stickyflow.snapshot/1", "kind": "streams",
            "tasks": [{"id": "0_0", "stateful": True, "end_offset_sum": 50_000}],
            "clients": [{"process_id": "a", "previous_active": ["0_0"], "previous_standby": []},
                        {"process_id": "b", "previous_active": [], "previous_standby": []}]}
    events = (Event(round=1, action="leave", member="a"), Event(round=2, action="join", member="a"),
              Event(round=3, action="crash", member="a"), Event(round=4, action="join", member="a"))
    # 1,000 offsets written per idle period
    scenario = Scenario(snapshot=snap, rounds=5, events=events, write_per_ms=0.001, idle_ms=1_000_000)
    run = simulate(scenario, _streams_assignors()[:1], observe=_checked).runs[0]
    assert run.results[0]["assignment"]["a"]["active"] == ["0_0"]  # it was caught up (running it)
    lags = [next((c.get("lags", {}) for c in s["clients"] if c["process_id"] == "a"), None) for s in run.snapshots]
    assert lags[1] is None  # away
    assert lags[2] == {"0_0": 1_000}  # back from a leave with the state it kept, one period behind
    assert lags[4] == {}  # back from a crash with no state
    assert [t["end_offset_sum"] for s in run.snapshots for t in s["tasks"]] == [50_000 + 1_000 * r for r in range(5)]


def test_cli_simulate(tmp_path, capsys):
    from stickyflow.adapters.cli import main

    out = tmp_path / "sim"
    assignors = ",".join(_consumer_assignors()[:2])
    assert main(["simulate", "preset:consumer-cooperative:5", "--assignors", assignors, "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "rounds to converge" in text and "leader lost" in text
    for name in ("rounds.csv", "convergence.csv", "simulation.png", "simulation.html", "scenario.json"):
        assert (out / name).stat().st_size > 0, name
    assert (out / "simulation.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (out / "simulation.html").read_text()
    assert "data:image/png;base64," in page and "<table" in page
    # the written scenario replays
    assert main(["simulate", str(out / "scenario.json"), "--assignors", "optimal"]) == 0
    assert main(["simulate", str(tmp_path / "missing.json")]) == 2
    assert main(["simulate", "preset:nope"]) == 2
    assert main(["simulate", "preset:consumer-eager", "--assignors", "no-such-assignor"]) == 2
    assert "no-such-assignor" in capsys.readouterr().err


def test_module_doctests():
    import doctest

    mod = importlib.import_module("stickyflow.datasets.simulator")
    failures, _ = doctest.testmod(mod)
    assert failures == 0
