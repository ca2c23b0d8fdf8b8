"""What a simulation records: a :class:`RoundRecord` per rebalance, an :class:`Episode` per disturbance, a
:class:`SimulationRun` per assignor and a :class:`Simulation` for them all (rows and summaries for pandas/CSV).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .scenario import Scenario

__all__ = ["RoundRecord", "Episode", "SimulationRun", "Simulation"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundRecord:
    """One rebalance of one run: when, why, and what the assignor did.

    ``trigger``: ``"start"``, ``"event"``, ``"followup"`` (the second cooperative
    round), ``"probing"`` (the probing rebalance at its deadline), ``"ready"``
    (eager readiness: a warm-up caught up before the deadline) or ``"idle"``.
    Consumer-only fields (``revoked``, ``withheld``) and Streams-only fields
    (``warmups``, ``standbys``, ``restoring_actives``: stateful active tasks on a
    client that is not caught up) are None for the other kind.
    """

    round: int
    time_ms: int
    trigger: str
    events: tuple[str, ...]
    leader: str | None
    members: int
    status: str
    method: str
    moves: int
    imbalance: int | float  # Streams: active tasks per thread, which need not be whole
    cross_rack: int | None
    followup: bool
    converged: bool
    wall_s: float
    revoked: int | None = None
    withheld: int | None = None
    warmups: int | None = None
    standbys: int | None = None
    restoring_actives: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Episode:
    """The rounds from one disturbance to convergence (``converged_round`` None: not within the run)."""

    start_round: int
    cause: str
    converged_round: int | None

    @property
    def rounds_to_converge(self) -> int | None:
        return None if self.converged_round is None else self.converged_round - self.start_round + 1


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class SimulationRun:
    """One assignor playing one scenario: a record per round, the episodes, and every result JSON."""

    scenario: str | None
    kind: str
    assignor: str
    readiness: str | None
    rounds: tuple[RoundRecord, ...]
    episodes: tuple[Episode, ...]
    results: tuple[dict, ...] = field(repr=False, default=())
    snapshots: tuple[dict, ...] = field(repr=False, default=())

    @property
    def label(self) -> str:
        return self.assignor if self.readiness is None else f"{self.assignor} ({self.readiness})"

    @property
    def rounds_to_converge(self) -> tuple[int | None, ...]:
        return tuple(e.rounds_to_converge for e in self.episodes)

    def rows(self) -> list[dict[str, Any]]:
        """One flat dict per round (for pandas or CSV), with the run's labels."""
        out = []
        for r in self.rounds:
            d = asdict(r)
            d["events"] = "; ".join(r.events)
            out.append({"scenario": self.scenario, "kind": self.kind, "assignor": self.assignor,
                        "readiness": self.readiness, "label": self.label, **d})
        return out

    def summary(self) -> list[dict[str, Any]]:
        """One dict per episode: its cause and rounds to converge, and the moves it took."""
        out = []
        for i, e in enumerate(self.episodes):
            end = self.episodes[i + 1].start_round if i + 1 < len(self.episodes) else len(self.rounds)
            span = self.rounds[e.start_round:end]
            out.append({"scenario": self.scenario, "label": self.label, "assignor": self.assignor,
                        "readiness": self.readiness, "episode": i, "start_round": e.start_round,
                        "cause": e.cause, "rounds_to_converge": e.rounds_to_converge,
                        "converged_round": e.converged_round,
                        "time_to_converge_ms": (None if e.converged_round is None
                                                else self.rounds[e.converged_round].time_ms - span[0].time_ms),
                        "moves": sum(r.moves for r in span), "max_imbalance": max(r.imbalance for r in span),
                        "wall_s": sum(r.wall_s for r in span)})
        return out


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Simulation:
    """A scenario played by several assignors (and readiness settings)."""

    scenario: Scenario
    runs: tuple[SimulationRun, ...]

    def run(self, label: str) -> SimulationRun:
        for r in self.runs:
            if r.label == label or r.assignor == label:
                return r
        raise KeyError(f"no run labelled {label!r} (have: {', '.join(r.label for r in self.runs)})")

    def rows(self) -> list[dict[str, Any]]:
        return [row for r in self.runs for row in r.rows()]

    def summary(self) -> list[dict[str, Any]]:
        return [row for r in self.runs for row in r.summary()]
