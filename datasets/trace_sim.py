"""The autoscaler over a rate trace: when to plan, what each plan moves, and the latency it buys.

At each step of a :class:`~stickyflow.datasets.traces.Trace` the partitions take the
step's rates, and the autoscaler plans (with a plan method of
:mod:`stickyflow.planning.methods`, from where the partitions are now) when

* a member's load exceeds the **trigger** capacity (Landau's controller: packing to
  ``capacity``, triggering above it, 133 against 100 in the JPDC setup),
* a partition has no member (the first step), or
* ``every`` steps have passed since the last plan (``every=1``: at every step).

``kafka:K`` is Kafka's approach instead: a static round-robin over ``K`` consumers,
assigned at the first step and never changed. Each step then goes through the
fluid latency model (:mod:`stickyflow.datasets.fluid`), with members draining at
``drain`` (default: the trigger capacity) and ``pause`` seconds per partition a
member gains. The first step's assignment is where the group starts: nothing
pauses there.

Out of a run come, per step, the consumers, the moved load (its R-score: moved
load over the capacity, Landau's rebalance cost), the moves, whether a plan ran and
whether it proved its member count (a plan whose count meets its proven bound), and
over the whole trace the latency percentiles.

>>> from stickyflow.datasets.traces import random_walk
>>> trace = random_walk(partitions=8, topics=2, steps=4, delta=25, seed=3)
>>> run = simulate_trace(trace, "mwf")
>>> run.consumers.tolist() == [len(set(m)) for m in run.members], bool(run.planned.all())
(True, True)
>>> simulate_trace(trace, "kafka:3").consumers.tolist()
[3, 3, 3, 3]
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from stickyflow.errors import InvalidSnapshotError, Problem
from stickyflow.planning.bounds import count_bound
from stickyflow.planning.methods import PLAN_METHODS
from stickyflow.planning.planner import solve_plan
from stickyflow.planning.problem import PlanProblem
from stickyflow.registry import SolveOptions

from .fluid import FluidModel, LatencySummary
from .traces import Trace

__all__ = ["TraceSettings", "TraceRun", "simulate_trace", "simulate_methods", "check_method", "TRIGGER_FACTOR"]

#: the trigger (and drain) capacity over the packing capacity by default: Landau's 133 against 100
TRIGGER_FACTOR = 1.33


@dataclass(frozen=True, slots=True, kw_only=True)
class TraceSettings:
    """How the autoscaler and the group behave (see the module docstring); ``None``: the default named."""

    trigger: float | None = None   # default: 1.33 x the trace's capacity (Landau's 133 for 100)
    drain: float | None = None     # default: the trigger capacity
    pause: float = 5.0             # seconds a member waits per partition it gains
    every: int = 1                 # plan at least every this many steps
    time_limit: float | None = None  # per plan, CP-SAT's deterministic seconds

    def resolved(self, capacity: float) -> tuple[float, float]:
        trigger = self.trigger if self.trigger is not None else capacity * TRIGGER_FACTOR
        return trigger, self.drain if self.drain is not None else trigger


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class TraceRun:
    """One method over one trace: per-step arrays and the latency summary."""

    method: str
    trace: str | None
    consumers: np.ndarray
    moved_load: np.ndarray
    moves: np.ndarray
    planned: np.ndarray
    proven: np.ndarray
    bound: np.ndarray
    plan_s: np.ndarray
    latency: LatencySummary
    capacity: float
    step_s: float = 30.0
    members: list = field(default_factory=list, repr=False)

    @property
    def rscore(self) -> np.ndarray:
        """Moved load over the capacity, per step."""
        return self.moved_load / self.capacity

    def summary(self) -> dict[str, Any]:
        """The run in one row: means over steps, the latency percentiles, how many plans proved their count."""
        plans = int(self.planned.sum())
        return {"method": self.method, "trace": self.trace, "steps": len(self.consumers),
                "consumers": float(self.consumers.mean()), "consumers_max": int(self.consumers.max()),
                "rscore": float(self.rscore.mean()), "moves": float(self.moves.mean()), "plans": plans,
                "proven": int(self.proven.sum()), "p50_s": self.latency.p50, "p90_s": self.latency.p90,
                "p99_s": self.latency.p99, "mean_s": self.latency.mean, "max_s": self.latency.max,
                "served_share": self.latency.served_share,
                "plan_s_mean": float(self.plan_s[self.planned].mean()) if plans else 0.0,
                "plan_s_max": float(self.plan_s.max(initial=0.0))}


def check_method(name: str) -> str:
    """``name`` if it is a plan method or ``kafka:K`` (K >= 1); else :class:`InvalidSnapshotError` naming it."""
    if name in PLAN_METHODS:
        return name
    if name.startswith("kafka:") and name[6:].isdigit() and int(name[6:]) >= 1:
        return name
    raise InvalidSnapshotError(Problem("--methods", f"{name!r} is not a plan method or kafka:K (known: "
                                                    f"{', '.join(PLAN_METHODS)}, kafka:K)"))


def simulate_trace(trace: Trace, method: str, settings: TraceSettings | None = None) -> TraceRun:
    """Run the autoscaler with ``method`` (a plan method or ``kafka:K``) over ``trace``."""
    check_method(method)
    settings = settings or TraceSettings()
    trigger, drain = settings.resolved(trace.capacity)
    steps, n = trace.rates.shape
    base = PlanProblem.from_arrays(trace.rates[0], trace.capacity, topics=list(trace.topics), id=trace.id)
    fluid = FluidModel(trace.rates, step_s=trace.step_s, drain=drain, pause=settings.pause)
    options = SolveOptions(time_limit=settings.time_limit, extra={"drain": drain, "pause": settings.pause})
    out = {k: np.zeros(steps) for k in ("consumers", "moved", "moves", "planned", "proven", "bound", "plan_s")}
    current: list[Any] = [None] * n
    history = []
    since = 0
    for k in range(steps):
        rates = trace.rates[k]
        plan_now = k == 0 or None in current or since + 1 >= settings.every or _over(current, rates, trigger)
        if method.startswith("kafka:"):
            plan_now = k == 0
            target = [f"c{j % int(method[6:])}" for j in range(n)] if k == 0 else current
        elif plan_now:
            ids = list(dict.fromkeys(m for m in current if m is not None))
            index = {m: i for i, m in enumerate(ids)}
            owner = np.array([index.get(m, -1) for m in current], dtype=np.int64)
            t = time.perf_counter()
            plan = solve_plan(base.with_rates(rates, owner=owner, members=ids), method, options)
            out["plan_s"][k] = time.perf_counter() - t
            out["proven"][k] = plan.members <= plan.bound
            out["bound"][k] = plan.bound
            names = {**dict(enumerate(ids)), **_new_names(plan, ids)}
            target = [names[int(s)] for s in plan.slots]
        else:
            target = current
        if not plan_now:
            since += 1
            out["bound"][k] = np.nan
        else:
            since = 0
            if method.startswith("kafka:"):
                out["bound"][k] = count_bound(rates, trace.capacity)
        moved = np.array([c is not None and c != t for c, t in zip(current, target)], dtype=bool)
        out["moved"][k] = float(rates[moved].sum())
        out["moves"][k] = int(moved.sum())
        out["planned"][k] = plan_now
        out["consumers"][k] = len(set(target))
        fluid.step(target, initial=k == 0)
        current = list(target)
        history.append(tuple(target))
    return TraceRun(method=method, trace=trace.id, consumers=out["consumers"].astype(np.int64),
                    moved_load=out["moved"], moves=out["moves"].astype(np.int64), planned=out["planned"] > 0,
                    proven=out["proven"] > 0, bound=out["bound"], plan_s=out["plan_s"], latency=fluid.summary(),
                    capacity=trace.capacity, step_s=trace.step_s, members=history)


def _over(current: list[Any], rates: np.ndarray, trigger: float) -> bool:
    """Does a member's load at these rates exceed the trigger capacity (a member holding a single partition
    above it is past helping: it does not trigger)."""
    load: dict[Any, float] = {}
    count: dict[Any, int] = {}
    for m, r in zip(current, rates.tolist()):
        load[m] = load.get(m, 0.0) + r
        count[m] = count.get(m, 0) + 1
    return any(v > trigger and count[m] > 1 for m, v in load.items())


def _new_names(plan: Any, ids: list[Any]) -> dict[int, str]:
    """Slot -> id of the plan's new members (its ``add``, in slot order)."""
    new = sorted({int(s) for s in plan.slots.tolist() if s >= len(ids)})
    return dict(zip(new, plan.add))


def simulate_methods(trace: Trace, methods: Sequence[str], settings: TraceSettings | None = None) -> list[TraceRun]:
    """:func:`simulate_trace` for each of ``methods`` on the same trace."""
    return [simulate_trace(trace, m, settings) for m in methods]
