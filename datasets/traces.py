"""Rate traces: every partition's rate over time, read from JSON or generated as random walks.

A trace is what an autoscaler sees: at each step (``step_s`` seconds) one rate per
partition, in the unit of ``capacity`` (the load one member can take). Its JSON:

    {"format": "stickyflow.trace/1", "id": "...", "capacity": 100, "step_s": 30,
     "topics": {"t0": 16, "t1": 16}, "rates": [[...32 rates...], ...one list per step]}

``topics`` maps each topic to its partition count, in order; each step's list holds
the rates of every partition, topics end to end (the order of a plan's
partitions). :func:`load_trace` and :func:`parse_trace` refuse a bad trace with
an :class:`InvalidSnapshotError` naming the field.

:func:`random_walk` generates the traces of Landau's thesis (chapter 3, "Testing
procedure"): each partition starts at a rate drawn uniformly from 0 to the
capacity, and each step adds a uniform change of at most ``delta`` % of the
capacity, clamped to 0 .. capacity (integers when ``integer``). Our generator, our
seeds (numpy's PCG64): the same arguments give the same trace everywhere.
:func:`named_trace` reads ``trace:jpdc[:SEED]`` (the JPDC setup: 32 partitions in
two topics, 100 steps of 30 s, delta 5, integer rates 0-100) and
``trace:walk:partitions=32,steps=100,delta=25,seed=3,...``.

>>> t = random_walk(partitions=4, topics=2, steps=3, delta=5, seed=1)
>>> t.rates.shape, t.topics, float(t.rates.max()) <= 100
((3, 4), (('t0', 2), ('t1', 2)), True)
>>> bool((abs(t.rates[1:] - t.rates[:-1]) <= 5).all())
True
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from stickyflow.errors import InvalidSnapshotError, Problem

__all__ = ["TRACE_FORMAT", "Trace", "random_walk", "parse_trace", "load_trace", "named_trace", "JPDC",
           "step_snapshot", "walk_snapshot"]

TRACE_FORMAT = "stickyflow.trace/1"
#: the JPDC setup of Landau et al. (2025) as a random walk's arguments
JPDC = {"partitions": 32, "topics": 2, "steps": 100, "delta": 5, "capacity": 100.0, "step_s": 30.0}
_WALK_KEYS = {"partitions": int, "topics": int, "steps": int, "delta": float, "capacity": float, "step_s": float,
              "seed": int, "integer": int}


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Trace:
    """A rate trace (see the module docstring); ``rates`` is read-only, steps x partitions."""

    rates: np.ndarray
    topics: tuple[tuple[str, int], ...]
    capacity: float
    step_s: float = 30.0
    id: str | None = None

    @property
    def steps(self) -> int:
        return int(self.rates.shape[0])

    @property
    def partitions(self) -> int:
        return int(self.rates.shape[1])

    def to_json(self) -> dict[str, Any]:
        rates = self.rates.tolist()
        if np.all(self.rates == np.round(self.rates)):
            rates = self.rates.astype(np.int64).tolist()
        return {"format": TRACE_FORMAT, "id": self.id, "capacity": self.capacity, "step_s": self.step_s,
                "topics": dict(self.topics), "rates": rates}


def random_walk(*, partitions: int = 32, topics: int = 2, steps: int = 100, delta: float = 5,
                capacity: float = 100.0, step_s: float = 30.0, seed: int = 0, integer: bool = True) -> Trace:
    """A random-walk trace (see the module docstring); partitions are spread over ``topics`` topics
    ``t0``, ``t1``, ... as evenly as they go (the first ones get one more)."""
    if partitions < 1 or topics < 1 or topics > partitions or steps < 1 or delta < 0 or capacity <= 0:
        raise InvalidSnapshotError(Problem("trace", "needs partitions >= topics >= 1, steps >= 1, delta >= 0 "
                                                    "and capacity > 0"))
    rng = np.random.default_rng(seed)
    if integer:
        start = rng.integers(0, 101, partitions) * capacity / 100.0
        change = rng.integers(-math.floor(delta), math.floor(delta) + 1, (steps - 1, partitions)) * capacity / 100.0
    else:
        start = rng.uniform(0.0, capacity, partitions)
        change = rng.uniform(-delta, delta, (steps - 1, partitions)) * capacity / 100.0
    rates = np.empty((steps, partitions), dtype=np.float64)
    rates[0] = start
    for k in range(1, steps):  # clamped at every step, as the thesis's walk is
        rates[k] = np.clip(rates[k - 1] + change[k - 1], 0.0, capacity)
    rates.flags.writeable = False
    base, extra = divmod(partitions, topics)
    counts = tuple((f"t{i}", base + (i < extra)) for i in range(topics))
    return Trace(rates=rates, topics=counts, capacity=float(capacity), step_s=float(step_s),
                 id=f"walk-p{partitions}-d{delta:g}-s{seed}")


def parse_trace(doc: Any) -> Trace:
    """A trace from its parsed JSON; :class:`InvalidSnapshotError` names the first bad field."""
    if not isinstance(doc, dict):
        raise InvalidSnapshotError(Problem("trace", "must be a JSON object"))
    if doc.get("format") != TRACE_FORMAT:
        raise InvalidSnapshotError(Problem("format", f'must be "{TRACE_FORMAT}"'))
    cap = doc.get("capacity")
    if isinstance(cap, bool) or not isinstance(cap, (int, float)) or not math.isfinite(cap) or cap <= 0:
        raise InvalidSnapshotError(Problem("capacity", "must be a number > 0"))
    step = doc.get("step_s", 30.0)
    if isinstance(step, bool) or not isinstance(step, (int, float)) or not math.isfinite(step) or step <= 0:
        raise InvalidSnapshotError(Problem("step_s", "must be a number of seconds > 0"))
    topics = doc.get("topics")
    if not isinstance(topics, dict) or not topics or not all(
            isinstance(c, int) and not isinstance(c, bool) and c >= 1 for c in topics.values()):
        raise InvalidSnapshotError(Problem("topics", "must map each topic to its partition count (an integer >= 1)"))
    n = sum(topics.values())
    raw = doc.get("rates")
    if not isinstance(raw, list) or not raw:
        raise InvalidSnapshotError(Problem("rates", "must be a list of steps, each a list of rates"))
    for k, row in enumerate(raw):
        if not isinstance(row, list) or len(row) != n:
            raise InvalidSnapshotError(Problem(f"rates[{k}]", f"must hold one rate per partition ({n})"))
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in row):
            raise InvalidSnapshotError(Problem(f"rates[{k}]", "must hold numbers only"))
    rates = np.array(raw, dtype=np.float64)
    bad = ~np.isfinite(rates) | (rates < 0)
    if bad.any():
        k, j = np.argwhere(bad)[0].tolist()
        raise InvalidSnapshotError(Problem(f"rates[{k}][{j}]", "must be a finite number >= 0"))
    rates.flags.writeable = False
    ident = doc.get("id")
    return Trace(rates=rates, topics=tuple(topics.items()), capacity=float(cap), step_s=float(step),
                 id=ident if isinstance(ident, str) else None)


def load_trace(path: str | Path) -> Trace:
    """A trace from a JSON file."""
    try:
        doc = json.loads(Path(path).read_text())
    except ValueError as exc:
        raise InvalidSnapshotError(Problem("trace", f"is not valid JSON ({exc})")) from None
    return parse_trace(doc)


def named_trace(text: str) -> Trace:
    """``trace:jpdc[:SEED]`` or ``trace:walk:key=value,...`` (keys of :func:`random_walk`).

    >>> named_trace("trace:jpdc:7").id
    'jpdc-s7'
    >>> named_trace("trace:walk:partitions=8,steps=5,delta=25,seed=2").rates.shape
    (5, 8)
    """
    parts = text.split(":")
    if len(parts) < 2 or parts[0] != "trace":
        raise InvalidSnapshotError(Problem("TRACE", f"{text!r} is not trace:jpdc[:SEED] or trace:walk:key=value,..."))
    if parts[1] == "jpdc":
        if len(parts) > 3 or (len(parts) == 3 and not parts[2].isdigit()):
            raise InvalidSnapshotError(Problem("TRACE", f"{text!r} is not trace:jpdc or trace:jpdc:SEED"))
        seed = int(parts[2]) if len(parts) == 3 else 0
        t = random_walk(**JPDC, seed=seed)
        return Trace(rates=t.rates, topics=t.topics, capacity=t.capacity, step_s=t.step_s, id=f"jpdc-s{seed}")
    if parts[1] == "walk":
        args: dict[str, Any] = {}
        for item in filter(None, ":".join(parts[2:]).split(",")):
            key, _, value = item.partition("=")
            if key not in _WALK_KEYS:
                raise InvalidSnapshotError(Problem("TRACE", f"{key!r} is not a walk setting "
                                                            f"(known: {', '.join(_WALK_KEYS)})"))
            try:
                args[key] = _WALK_KEYS[key](value)
            except ValueError:
                raise InvalidSnapshotError(Problem("TRACE", f"{key}={value!r} is not a number")) from None
        if "integer" in args:
            args["integer"] = bool(args["integer"])
        return random_walk(**args)
    raise InvalidSnapshotError(Problem("TRACE", f"{parts[1]!r} is not a trace name (known: jpdc, walk)"))


def step_snapshot(trace: Trace, step: int, owner: Any = None, members: Any = (), *, id: str | None = None,
                  generation: int = 1) -> dict[str, Any]:
    """Step ``step`` of ``trace`` as a consumer snapshot (spec JSON) that a plan reads: the step's ``rates`` on
    every topic, ``config.capacity``, the ``members`` (ids) all subscribing to every topic, each owning the
    partitions ``owner`` (one member index or -1 per partition, in the trace's order) gives it.

    >>> doc = step_snapshot(random_walk(partitions=2, topics=1, steps=1, seed=0), 0, [0, 0], ["c0"])
    >>> doc["config"], doc["members"][0]["owned"], len(doc["topics"]["t0"]["rates"])
    ({'capacity': 100.0}, {'t0': [0, 1]}, 2)
    """
    rates = trace.rates[step]
    names = [t for t, _ in trace.topics]
    counts = [c for _, c in trace.topics]
    start = np.concatenate(([0], np.cumsum(counts)))
    topics = {}
    for t, a, b in zip(names, start[:-1], start[1:]):
        r = rates[a:b]
        topics[t] = {"partitions": int(b - a),
                     "rates": r.astype(np.int64).tolist() if np.all(r == np.round(r)) else r.tolist()}
    own = np.full(trace.partitions, -1) if owner is None else np.asarray(owner)
    out_members = []
    for i, mid in enumerate(members):
        owned = {}
        for t, a, b in zip(names, start[:-1], start[1:]):
            mine = (np.flatnonzero(own[a:b] == i)).tolist()
            if mine:
                owned[t] = mine
        out_members.append({"id": mid, "subscription": names, "generation": generation, "owned": owned})
    doc = {"format": "stickyflow.snapshot/1", "kind": "consumer", "topics": topics, "members": out_members,
           "config": {"capacity": trace.capacity}}
    if id is not None:
        doc["id"] = id
    return doc


def walk_snapshot(*, partitions: int, delta: float, seed: int, id: str | None = None, topics: int = 2,
                  method: str = "mwf") -> dict[str, Any]:
    """A plan's snapshot from the thesis's random walk: the rates of the walk's second step, each partition
    owned where ``method``'s plan of the first step (from nothing) put it."""
    from stickyflow.planning.planner import solve_plan
    from stickyflow.planning.problem import PlanProblem

    trace = random_walk(partitions=partitions, topics=topics, steps=2, delta=delta, seed=seed)
    first = solve_plan(PlanProblem.from_arrays(trace.rates[0], trace.capacity), method)
    members = [f"c{i}" for i in range(first.members)]
    _, owner = np.unique(first.slots, return_inverse=True)
    return step_snapshot(trace, 1, owner, members, id=id)
