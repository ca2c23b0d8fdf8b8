"""A fluid latency model of a consumer group over a rate trace: each step's assignment into per-record latencies.

Records arrive at each partition as a fluid at the partition's rate, constant
within a step of ``step_s`` seconds. Each member drains its partitions at up to
``drain`` (its capacity, records per second in the trace's unit), oldest record
first across them (a member reading several partitions serves the longest
waiting), in two classes:

* what it **kept** from the last step drains first, with all its capacity;
* what it **gained** waits a rebalance pause of ``pause`` seconds for each
  partition the member gained at this step, then drains with the capacity the
  kept partitions leave (all of it while they have a backlog, ``drain`` minus
  their rate once they are caught up). A pause longer than the step runs on into
  the next one.

Backlog carries over from step to step and travels with a partition that moves.
A record's latency is the time from its arrival to its consumption; a record
served on arrival has latency 0 (no processing time is modelled). Within a
stretch of time where the capacity and the set of waiting partitions do not
change, a member serves records whose arrival times advance linearly, so their
latencies form a uniform stretch: the model keeps each stretch (lowest,
highest latency, mass) and the percentiles of their mixture are exact. Records
still waiting at the end of the trace count with their age then (a lower bound
on their latency: the model does not invent the future); their share is
reported.

>>> import numpy as np
>>> m = FluidModel(np.array([[10.0, 10.0], [10.0, 10.0]]), step_s=10, drain=15, pause=5)
>>> m.step(["a", "a"], initial=True)    # 20 arrive per second, 15 drain: a backlog builds
>>> m.step(["a", "b"])                  # b gains partition 1: it waits 5 s, then drains it
>>> s = m.summary()
>>> round(s.p50, 3), round(s.p99, 3), round(s.served_share, 3)
(1.5, 7.367, 0.875)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Hashable, Sequence

import numpy as np

__all__ = ["FluidModel", "LatencySummary", "latency_quantiles"]


@dataclass(frozen=True, slots=True)
class LatencySummary:
    """Latency percentiles (seconds) over every record of the trace, the mean and the most; ``served_share``:
    the share of records consumed by the end (the rest count at their age then)."""

    p50: float
    p90: float
    p99: float
    mean: float
    max: float
    served_share: float


def latency_quantiles(low: np.ndarray, high: np.ndarray, mass: np.ndarray, qs: Sequence[float]) -> list[float]:
    """Quantiles ``qs`` of a mixture of uniform stretches ``[low, high]`` with weights ``mass`` (a stretch with
    ``low == high`` is a point), by bisection on the exact mixture CDF.

    >>> latency_quantiles(np.array([0.0, 0.0]), np.array([0.0, 10.0]), np.array([1.0, 1.0]), [0.25, 0.75])
    [0.0, 5.0]
    """
    keep = mass > 0
    lo, hi, w = low[keep], high[keep], mass[keep]
    if len(w) == 0:
        return [0.0 for _ in qs]
    total = float(w.sum())
    width = hi - lo
    point = width <= 0
    span = np.where(point, 1.0, width)

    def cdf(x: float) -> float:
        part = np.clip((x - lo) / span, 0.0, 1.0)
        part = np.where(point, (x >= lo).astype(np.float64), part)
        return float((w * part).sum())

    out = []
    top = float(hi.max())
    for q in qs:
        target = q * total
        if cdf(0.0) >= target:
            out.append(0.0)
            continue
        a, b = 0.0, top
        for _ in range(64):
            mid = (a + b) / 2
            if cdf(mid) >= target:
                b = mid
            else:
                a = mid
            if b - a <= 1e-9 * max(1.0, b):
                break
        out.append(b)
    return out


class FluidModel:
    """The model of the module docstring over ``rates`` (steps x partitions); call :meth:`step` once per step
    with each partition's member, then :meth:`summary`."""

    def __init__(self, rates: np.ndarray, *, step_s: float, drain: float, pause: float):
        self.rates = np.asarray(rates, dtype=np.float64)
        self.T = float(step_s)
        self.drain = float(drain)
        self.pause = float(pause)
        self.k = 0
        n = self.rates.shape[1]
        self.tau = [0.0] * n       # every record of a partition that arrived before this is consumed
        self.resume = [0.0] * n    # when a partition may be read again after its pause
        self.holder: list[Hashable | None] = [None] * n
        self._lo: list[float] = []
        self._hi: list[float] = []
        self._mass: list[float] = []
        self._eps = 1e-9 * self.T

    # ------------------------------------------------------------------ one step
    def step(self, members: Sequence[Hashable], *, initial: bool = False) -> None:
        """Play the next step with partition ``j`` at member ``members[j]`` (``initial``: the group starts so,
        nobody pauses)."""
        if self.k >= self.rates.shape[0]:
            raise ValueError("FluidModel.step: the trace has no more steps")
        t0 = self.k * self.T
        t1 = t0 + self.T
        by_member: dict[Hashable, list[int]] = {}
        for j, b in enumerate(members):
            by_member.setdefault(b, []).append(j)
        for b, mine in by_member.items():
            gained = [] if initial else [j for j in mine if self.holder[j] != b]
            for j in gained:
                self.resume[j] = t0 + self.pause * len(gained)
            fresh = set(gained)
            kept = [j for j in mine if j not in fresh and self.resume[j] <= t0 + self._eps]
            rest = [j for j in mine if j in fresh or self.resume[j] > t0 + self._eps]
            used = self._serve(kept, [(t0, t1, self.drain)], t0, t1)
            spare = [(a, e, max(self.drain - u, 0.0)) for a, e, u in used]
            self._serve(rest, spare, t0, t1)
        self.holder = list(members)
        self.k += 1

    def _step_of(self, when: float) -> int:
        """The step whose rates hold at arrival time ``when`` (a time within rounding of a step's start
        belongs to that step: every use agrees, so no stretch is priced at a neighbour's rate)."""
        return min(math.floor(when / self.T + 1e-9), self.k)

    def _rate(self, j: int, when: float) -> float:
        return float(self.rates[self._step_of(when), j])

    def _serve(self, parts: list[int], capacity: list[tuple[float, float, float]], t0: float,
               t1: float) -> list[tuple[float, float, float]]:
        """Serve ``parts`` oldest first with the capacity pieces ``(start, end, rate)`` over ``[t0, t1]``;
        returns what was used, as pieces."""
        eps = self._eps
        used: list[tuple[float, float, float]] = []
        pieces = iter(capacity)
        start, end, c = next(pieces)
        s = t0
        tau, resume = self.tau, self.resume
        while s < t1 - eps:
            while end <= s + eps:
                start, end, c = next(pieces)
            active = [j for j in parts if resume[j] <= s + eps]
            later = [resume[j] for j in parts if resume[j] > s + eps]
            horizon = min(end, min(later) if later else math.inf, t1)
            if not active:
                used.append((s, horizon, 0.0))
                s = horizon
                continue
            theta = min(tau[j] for j in active)
            front = [j for j in active if tau[j] <= theta + eps]
            if theta >= s - eps:  # caught up: served on arrival if the capacity keeps pace
                lam = sum(self._rate(j, s) for j in active)
                if lam <= c + eps:
                    if lam > 0:
                        self._record(0.0, 0.0, lam * (horizon - s))
                    for j in active:
                        tau[j] = horizon
                    used.append((s, horizon, lam))
                    s = horizon
                    continue
                theta = s
            arrival_rate = sum(self._rate(j, theta) for j in front)
            others = [tau[j] for j in active if tau[j] > theta + eps]
            limit = min(min(others) if others else math.inf, (self._step_of(theta) + 1) * self.T)
            if arrival_rate <= 0:  # nothing arrived in this stretch of the front: skip it
                for j in front:
                    tau[j] = min(limit, s)
                continue
            if c <= eps:
                used.append((s, horizon, 0.0))
                s = horizon
                continue
            v = c / arrival_rate
            dt = min((limit - theta) / v, horizon - s)
            if v > 1:
                dt = min(dt, (s - theta) / (v - 1))
            theta_new, s_new = theta + v * dt, s + dt
            if theta_new > s_new:
                theta_new = s_new
            self._record(s - theta, s_new - theta_new, c * dt)
            for j in front:
                tau[j] = theta_new
            used.append((s, s_new, c))
            s = s_new
        return used

    def _record(self, lo: float, hi: float, mass: float) -> None:
        if mass > 0:
            lo, hi = max(min(lo, hi), 0.0), max(lo, hi, 0.0)
            self._lo.append(lo)
            self._hi.append(hi)
            self._mass.append(mass)

    # ------------------------------------------------------------------ the end
    def summary(self) -> LatencySummary:
        """Percentiles over every record of the steps played; what still waits counts at its age."""
        end = self.k * self.T
        served = float(sum(self._mass))
        lo, hi, mass = list(self._lo), list(self._hi), list(self._mass)
        waiting = 0.0
        for j, t in enumerate(self.tau):
            a = t
            while a < end - self._eps:
                k = min(self._step_of(a), self.k - 1)
                b = min((k + 1) * self.T, end)
                m = float(self.rates[k, j]) * (b - a)
                if m > 0:
                    lo.append(end - b)
                    hi.append(end - a)
                    mass.append(m)
                    waiting += m
                a = b
        arr = [np.array(x, dtype=np.float64) for x in (lo, hi, mass)]
        total = served + waiting
        p50, p90, p99 = latency_quantiles(*arr, [0.5, 0.9, 0.99])
        mean = float((arr[2] * (arr[0] + arr[1]) / 2).sum() / total) if total else 0.0
        return LatencySummary(p50=p50, p90=p90, p99=p99, mean=mean, max=float(arr[1].max(initial=0.0)),
                              served_share=served / total if total else 1.0)

    def served(self) -> float:
        """Every record consumed in the steps played."""
        return float(sum(self._mass))

    def arrived(self) -> float:
        """Every record that arrived in the steps played (for checks: served + waiting)."""
        return float(self.rates[: self.k].sum() * self.T)
