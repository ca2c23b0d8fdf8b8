"""Playing a scenario: one rebalance per round, each round's snapshot rebuilt from the members' reports and
handed to :func:`stickyflow.assign` as fresh JSON (the rules are in :mod:`stickyflow.datasets.simulator`)."""

from __future__ import annotations

from typing import Any, Callable, Sequence

from stickyflow.errors import InvalidSnapshotError, Problem
from stickyflow.model import jsonio

from .groups import ConsumerGroup, Group, StreamsApp
from .records import Episode, RoundRecord, Simulation, SimulationRun
from .scenario import READINESS, Event, Scenario

__all__ = ["simulate", "run_scenario", "as_scenario"]


def as_scenario(scenario: Any) -> Scenario:
    """A :class:`Scenario` as given, or a snapshot in any form :func:`stickyflow.assign` takes, played as is."""
    return scenario if isinstance(scenario, Scenario) else Scenario(snapshot=scenario)


def simulate(scenario: Scenario, assignors: Sequence[str] = ("optimal", "sticky"), *,
             readiness: Sequence[str | None] | str | None = None, time_limit: float | None = None,
             seed: int = 0, method: str | None = None, keep: bool = True,
             observe: Callable[[Any, Any], None] | None = None) -> Simulation:
    """Play ``scenario`` once per assignor (and per readiness, when several are given).

    ``readiness`` overrides the scenario's: one value, or a list to compare
    (e.g. ``["eager", "conservative"]``). ``keep`` keeps every snapshot and
    result JSON in the runs (needed to compare runs; costs memory at scale).
    ``observe(snapshot, result)`` is called after every rebalance (tests run
    their checker there). ``scenario`` may also be anything :func:`stickyflow.assign`
    takes (a snapshot, a dict, JSON text, a path): it is then played with no events.
    """
    scenario = as_scenario(scenario)
    if readiness is None or isinstance(readiness, str):
        readiness_list: list[str | None] = [readiness]
    else:
        readiness_list = list(readiness) or [None]
    for r in readiness_list:
        if r is not None and r not in READINESS:
            raise InvalidSnapshotError(Problem("readiness", 'must be "eager" or "conservative"'))
    runs = []
    for a in assignors:
        for r in readiness_list:
            runs.append(run_scenario(scenario, a, readiness=r, time_limit=time_limit, seed=seed, method=method,
                                     keep=keep, observe=observe,
                                     label_readiness=len(readiness_list) > 1 or r is not None))
    return Simulation(scenario=scenario, runs=tuple(runs))


def run_scenario(scenario: Scenario, assignor: str = "optimal", *, readiness: str | None = None,
                 time_limit: float | None = None, seed: int = 0, method: str | None = None, keep: bool = True,
                 observe: Callable[[Any, Any], None] | None = None, label_readiness: bool = False) -> SimulationRun:
    """Play ``scenario`` (or a bare snapshot, as :func:`simulate` takes it) with one assignor; see the module
    docstring for the rules."""
    import stickyflow

    scenario = as_scenario(scenario)
    ready = scenario.effective_readiness(readiness)
    group: Group = (ConsumerGroup if scenario.kind == "consumer" else StreamsApp)(scenario)
    now = int(scenario.snapshot.now_ms or 0)
    by_round: dict[int, list[Event]] = {}
    for e in scenario.events:
        by_round.setdefault(e.round, []).append(e)
    records: list[RoundRecord] = []
    results: list[dict] = []
    snapshots: list[dict] = []
    episodes: list[list] = []  # [start, cause, converged_round]
    trigger = "start"
    for rnd in range(scenario.rounds):
        events = by_round.get(rnd, [])
        for e in events:
            group.apply(e)
        if rnd == 0:
            episodes.append([0, "; ".join(["start"] + [e.label for e in events]), None])
        elif events:
            trigger = "event"
            episodes.append([rnd, "; ".join(e.label for e in events), None])
        # the member reports, serialized and read back: nothing but them reaches the assignor
        doc = group.snapshot_json(rnd, now)
        snapshot = stickyflow.parse_snapshot(jsonio.loads(jsonio.dumps(doc)))  # a JSON round trip: 5-10x a deepcopy
        result = stickyflow.assign(snapshot, assignor, time_limit=time_limit, seed=seed, method=method)
        if observe is not None:
            observe(snapshot, result)
        res = result.to_json()
        deadline = res["followup_rebalance_deadline_ms"]
        record = RoundRecord(
            round=rnd, time_ms=now, trigger=trigger, events=tuple(e.label for e in events), leader=group.leader,
            members=group.size, status=result.solver.status, method=result.solver.method,
            moves=int(res["metrics"]["moves"]), imbalance=_whole(res["metrics"]["imbalance"]),
            cross_rack=res["metrics"].get("cross_rack"), followup=deadline is not None,
            converged=deadline is None, wall_s=float(result.solver.wall_s),
            **group.round_metrics(snapshot, res))
        records.append(record)
        if keep:
            results.append(res)
            snapshots.append(doc)
        if deadline is None and episodes[-1][2] is None:
            episodes[-1][2] = rnd
        group.absorb(res)
        delay, trigger = group.next_delay(res, now, ready, scenario)
        group.advance(delay, scenario)
        now += delay
    return SimulationRun(
        scenario=scenario.name, kind=scenario.kind, assignor=assignor,
        readiness=ready if (label_readiness and scenario.kind == "streams") else None,
        rounds=tuple(records), episodes=tuple(Episode(start_round=s, cause=c, converged_round=k)
                                              for s, c, k in episodes),
        results=tuple(results), snapshots=tuple(snapshots))


def _whole(x: int | float) -> int | float:
    return int(x) if float(x).is_integer() else float(x)
