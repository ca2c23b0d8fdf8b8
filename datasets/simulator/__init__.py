"""The multi-round simulator: play a scenario over many rebalances and record what each assignor does.

A :class:`Scenario` is a first snapshot plus what happens next: members
joining, leaving or crashing at given rounds, the group leader lost mid-way,
and how fast local state restores. :func:`simulate` plays it once per
assignor, round after round (one round = one rebalance), building each round's
snapshot from what the members report after the previous one:

* consumer groups: each member reports the partitions it received last round
  as ``owned`` with that round's generation; the cooperative protocol (KIP-429)
  takes a second, immediate round whenever partitions must be revoked first;
* Streams applications: each client reports the tasks it ran as
  ``previous_active`` and its standbys and warm-ups as ``previous_standby``
  (warm-ups travel as standbys in Kafka), and the lag of its local state,
  which shrinks at the restore rate for standbys and warm-ups while the
  changelogs grow at the write rate; tasks it no longer holds keep their state
  on disk (it only falls behind). A client that *leaves* keeps its state for a
  later rejoin under the same process id; one that *crashes* loses it.

When a round asks for a follow-up (a probing rebalance while warm-ups run, or
the second cooperative round), the next round happens at its deadline. A
warm-up's readiness is a simulator option, :attr:`Scenario.readiness`, because
the snapshot format has no key for it (and config keys are strict):
``"eager"`` (the early KIP-441 draft's ``learner.partial.rebalance``: a client
rejoins as soon as a warm-up, its learner, is caught up, so the task moves
before the probing deadline) or ``"conservative"`` (the draft's stable
approach: the caught-up learner waits for the next scheduled, full rebalance).
By default learner mode is eager and warm-up mode (KIP-441 as shipped: probing
rebalances only) conservative. With no follow-up asked for, the next round is
``idle_ms`` later: a no-op rebalance that must change nothing.

Rounds to converge: every disturbance (round 0, and every round with events)
opens an *episode*; it has converged at the first round, before the next
episode, whose result asks for no follow-up, and ``rounds_to_converge`` counts
the rebalances from the disturbance to that round, both included.

The simulator keeps no assignor-side state: every round's snapshot is rebuilt
from the members' reports and handed to :func:`stickyflow.assign` as fresh JSON.
A ``leader_lost`` event (the coordinator hands leadership to another member, as
after a coordinator fail-over or a leader that rejoined late) therefore must not
change any result; it is recorded so that a run with it can be compared with
one without (the tests do).

>>> import stickyflow
>>> from stickyflow.datasets.simulator import Event, Scenario, simulate
>>> snap = {"format": "stickyflow.snapshot/1", "kind": "consumer", "protocol": "cooperative",
...         "topics": {"t": {"partitions": 6}},
...         "members": [{"id": "a", "subscription": ["t"]}, {"id": "b", "subscription": ["t"]}]}
>>> sim = simulate(Scenario(snapshot=snap, rounds=5,
...                         events=(Event(round=2, action="join", member="c"),)), ["optimal"])
>>> run = sim.runs[0]
>>> [r.trigger for r in run.rounds]
['start', 'idle', 'event', 'followup', 'idle']
>>> run.rounds_to_converge  # the join needs two cooperative rounds
(1, 2)
"""

from __future__ import annotations

from .presets import PRESETS, preset
from .records import Episode, RoundRecord, Simulation, SimulationRun
from .run import run_scenario, simulate
from .scenario import (ACTIONS, DEFAULT_IDLE_MS, DEFAULT_RESTORE_PER_MS, READINESS, Event, Scenario, load_scenario,
                       scenario_from_json)

__all__ = [
    "ACTIONS",
    "READINESS",
    "PRESETS",
    "DEFAULT_RESTORE_PER_MS",
    "DEFAULT_IDLE_MS",
    "Event",
    "Scenario",
    "RoundRecord",
    "Episode",
    "SimulationRun",
    "Simulation",
    "simulate",
    "run_scenario",
    "scenario_from_json",
    "load_scenario",
    "preset",
]
