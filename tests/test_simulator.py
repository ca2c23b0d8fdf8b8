"""The multi-round simulator: its convergence counts equal a hand-written re-solve loop, a lost leader changes
nothing, readiness changes when learners move, and bad scenarios are rejected naming the field.

The hand re-solve loops cover joins, a graceful leave (state kept for the return), a crash (state lost), and
Streams under both warm-up readinesses."""

from __future__ import annotations

import copy
import importlib
import json

import pytest

import stickyflow
from stickyflow.datasets.generators import consumer_snapshot
from stickyflow.datasets.simulator import Event, Scenario, load_scenario, preset, scenario_from_json, simulate

from tests.checker import check_result


CONSUMER_ASSIGNORS = ["optimal", "sticky", "range", "roundrobin"]  # every built-in one: none may go missing
STREAMS_ASSIGNORS = ["optimal", "sticky"]


def _checked(snapshot, result):
    check_result(snapshot, result)


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
    for assignor in CONSUMER_ASSIGNORS:
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
    assignors = CONSUMER_ASSIGNORS if kind == "consumer" else STREAMS_ASSIGNORS
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
        # the lost leader opens an episode that ends where the run without it first converges from that round on:
        # at once when that round needs no follow-up, else when the disturbance before it settles; unless the
        # next event comes first and opens an episode of its own, which leaves this one open, as it leaves any
        # episode cut short (STICKYFLOW_SEED=1887479709: the greedy still warming up when a member leaves)
        ep = next(e for e in a.episodes if e.start_round == lost_round)
        assert ep.cause == "leader lost"
        cut = next((e.start_round for e in a.episodes if e.start_round > lost_round), len(b.rounds))
        settled = next((r.round for r in b.rounds[lost_round:cut] if r.converged), None)
        assert ep.converged_round == settled
        assert ep.rounds_to_converge == (None if settled is None else settled - lost_round + 1)
        if b.rounds[lost_round].converged:
            assert ep.rounds_to_converge == 1


# --------------------------------------------------------------------------- Streams by hand

def _streams_by_hand(first: dict, events: dict[int, list[tuple[str, str]]], rounds: int, assignor: str,
                     restore_per_ms: int, readiness: str):
    """Re-solve a Streams application by hand, in time: clients report what they ran and the lags of their local
    state; standbys and warm-ups restore ``restore_per_ms`` offsets a millisecond (nothing is written); a client
    that leaves keeps its state for its return, one that crashes loses it. After a round that asks for a follow-up,
    the next one comes at its deadline, or (``readiness="eager"``) as soon as a warm-up is caught up if that is
    sooner; otherwise a probing interval later. Returns rounds to converge per disturbance."""
    doc = copy.deepcopy(first)
    clients = {c["process_id"]: c for c in doc.pop("clients")}
    eos = {t["id"]: t.get("end_offset_sum", 0) for t in doc["tasks"] if t["stateful"]}
    state = {pid: {t: 0 for t in c["previous_active"] if t in eos} for pid, c in clients.items()}  # task -> lag
    away: dict[str, dict[str, int]] = {}  # the state of clients that left gracefully
    config = stickyflow.parse_snapshot(first).config
    interval, arl = config.probing_rebalance_interval_ms, config.acceptable_recovery_lag
    now = doc.get("now_ms", 0)
    counts, pending = [], None
    for rnd in range(rounds):
        for action, pid in events.get(rnd, []):
            if action == "join":
                clients[pid] = {"process_id": pid, "threads": 1, "previous_active": [], "previous_standby": []}
                state[pid] = away.pop(pid, {})
            else:
                del clients[pid]
                kept = state.pop(pid)
                if action == "leave":
                    away[pid] = kept
        if rnd == 0 or rnd in events:
            if pending is not None:
                counts.append(None)
            pending = 0
        for pid, c in clients.items():
            c["lags"] = {t: lag for t, lag in state[pid].items() if t not in c["previous_active"]}
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
                state[pid].setdefault(t, eos[t])
        deadline = out["followup_rebalance_deadline_ms"]
        if pending is not None:
            pending += 1
            if deadline is None:
                counts.append(pending)
                pending = None
        delay = interval if deadline is None else deadline - now
        if deadline is not None and readiness == "eager":
            ready = [max(0, -(-(state[pid][t] - arl) // restore_per_ms))  # ms until the lag is acceptable
                     for pid, a in out["assignment"].items() for t in a["warmup"]]
            delay = min([delay] + ready)
        for pid, a in out["assignment"].items():
            for t in a["standby"] + a["warmup"]:
                state[pid][t] = max(0, state[pid][t] - restore_per_ms * delay)
        now += delay
    if pending is not None:
        counts.append(None)
    return tuple(counts)


@pytest.mark.parametrize("readiness", ["conservative", "eager"])
@pytest.mark.parametrize("mode", ["warmup", "learner"])
def test_streams_convergence_equals_hand_resolve(seed, mode, readiness):
    from stickyflow.datasets.generators import streams_snapshot

    interval = 60_000
    first = streams_snapshot("steady", tasks=12, clients=3, subtopologies=2, seed=seed, id="hand",
                             config={"rebalancing_mode": mode, "max_warmup_replicas": 2,
                                     "probing_rebalance_interval_ms": interval})
    biggest = max(t.get("end_offset_sum", 0) for t in first["tasks"])
    restore = max(1, biggest // (3 * interval))  # the biggest state takes about three probing intervals
    leaving, crashing = first["clients"][0]["process_id"], first["clients"][1]["process_id"]
    events = {4: [("join", "s-new-1"), ("join", "s-new-2")], 10: [("leave", leaving)],
              14: [("crash", crashing), ("join", "s-new-3")], 18: [("join", leaving)], 22: [("join", crashing)]}
    rounds = 36  # room after the last event: the greedy needs up to about ten rounds to settle
    scenario = Scenario(snapshot=first, rounds=rounds, restore_per_ms=restore, readiness=readiness,
                        events=tuple(Event(round=r, action=a, member=p, spec={"threads": 1} if a == "join" else {})
                                     for r, evs in events.items() for a, p in evs))
    for assignor in STREAMS_ASSIGNORS:
        run = simulate(scenario, [assignor], observe=_checked).runs[0]
        counts = _streams_by_hand(first, events, rounds, assignor, restore, readiness)
        print(assignor, mode, readiness, run.rounds_to_converge, counts)
        assert run.rounds_to_converge == counts
        assert len(counts) == 1 + len(events)
        # whatever the assignor, warm-ups that restore end in convergence
        assert counts[-1] is not None
        if readiness == "eager":  # a caught-up warm-up cut some wait short, or there was none to wait for
            assert "ready" in [r.trigger for r in run.rounds] or not any(r.warmups for r in run.rounds)


def test_learner_readiness_eager_moves_before_the_probing_deadline():
    assignors = STREAMS_ASSIGNORS
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
        assert any(r.warmups for r in eager.rounds)  # the join moves a task through a learner: something to wait for
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
    snap = {"format": "stickyflow.snapshot/1", "kind": "streams",
            "tasks": [{"id": "0_0", "stateful": True, "end_offset_sum": 50_000}],
            "clients": [{"process_id": "a", "previous_active": ["0_0"], "previous_standby": []},
                        {"process_id": "b", "previous_active": [], "previous_standby": []}]}
    events = (Event(round=1, action="leave", member="a"), Event(round=2, action="join", member="a"),
              Event(round=3, action="crash", member="a"), Event(round=4, action="join", member="a"))
    # 1,000 offsets written per idle period
    scenario = Scenario(snapshot=snap, rounds=5, events=events, write_per_ms=0.001, idle_ms=1_000_000)
    run = simulate(scenario, STREAMS_ASSIGNORS[:1], observe=_checked).runs[0]
    assert run.results[0]["assignment"]["a"]["active"] == ["0_0"]  # it was caught up (running it)
    lags = [next((c.get("lags", {}) for c in s["clients"] if c["process_id"] == "a"), None) for s in run.snapshots]
    assert lags[1] is None  # away
    assert lags[2] == {"0_0": 1_000}  # back from a leave with the state it kept, one period behind
    assert lags[4] == {}  # back from a crash with no state
    assert [t["end_offset_sum"] for s in run.snapshots for t in s["tasks"]] == [50_000 + 1_000 * r for r in range(5)]


def test_cli_simulate(tmp_path, capsys):
    from stickyflow.adapters.cli import main

    out = tmp_path / "sim"
    assignors = ",".join(CONSUMER_ASSIGNORS[:2])
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
