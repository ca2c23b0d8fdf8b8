"""Load snapshots for studies: groups whose partition rates are skewed, and groups whose rates drifted.

:func:`drifted_snapshot` is a group that was balanced by load and then saw its rates change: the previous
assignment is the ``lpt`` greedy's on the rates *before* (every partition where a load-balancing assignor put
it), the snapshot carries the rates *after* (:func:`~stickyflow.datasets.rates.drift_rates`: each rate times a
lognormal factor, some hot spots moved to other partitions). What an assignor then has to decide is how much
load to move to bring the peak back down.

The three load suites of ``stickyflow compare`` (:data:`LOAD_SUITES`, registered in
:mod:`stickyflow.datasets.suites`) are consumer groups of 60 to 3,000 partitions (sizes cycle, as in the other
study suites), every one with ``"balance": "load"``:

``hot-partitions``
    Zipf-distributed rates (hot keys on a few partitions) with exponent 0.6 or 0.9, gentler than the
    generator's default 1.1, at which the hottest of 3,000 partitions alone would outweigh ten members' fair
    share and set every assignor's peak; on groups that scale out, scale in, restart or stay; every other one
    with a capacity at which the average member would run at 75%.
``skewed-topics``
    one topic 10 times as busy as the others (each partition varied by half), on groups that scale out, scale
    in or stay, and on groups whose members read different subsets of the topics (so the busy topic has its own
    readers); every other one with racks.
``rate-drift``
    :func:`drifted_snapshot` of lognormal rates (sigma 1): steady groups and groups with newcomers, drifting by
    sigma 0.3 or 0.6 with a tenth or a quarter of the partitions trading rates.

>>> doc = drifted_snapshot(partitions=40, members=4, topics=2, seed=3)
>>> import stickyflow
>>> snap = stickyflow.parse_snapshot(doc)
>>> snap.config.balance, sum(len(p) for m in snap.members for p in m.owned.values())
('load', 40)
>>> [suite_name for suite_name in LOAD_SUITES]
['hot-partitions', 'skewed-topics', 'rate-drift']
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

from .generators import consumer_snapshot
from .rates import drift_rates

__all__ = ["drifted_snapshot", "LOAD_SUITES", "DRIFT_SCENARIOS"]

DRIFT_SCENARIOS = ("steady", "scale_out")  # groups where every previous member is still there
_SIZES = ((60, 6, 3), (300, 20, 5), (1_200, 60, 8), (3_000, 100, 10))  # partitions, members, topics
_BUSY = 0.75  # a capacity at which the average member runs at this utilization


def drifted_snapshot(scenario: str = "steady", *, shape: str = "lognormal", sigma: float = 0.3,
                     reshuffle: float = 0.1, seed: int = 0, balancer: str = "lpt",
                     rate_options: Mapping[str, Any] | None = None, **options: Any) -> dict[str, Any]:
    """A load snapshot (spec JSON dict) of a group balanced by load on its old rates, whose rates then drifted.

    ``scenario`` is ``"steady"`` (nobody joined or left) or ``"scale_out"`` (newcomers, who own nothing);
    ``options`` go to :func:`~stickyflow.datasets.generators.consumer_snapshot` (``partitions``, ``members``,
    ``topics``, ``racks``, ``protocol``, ``id``, ...) and ``rate_options`` to
    :func:`~stickyflow.datasets.rates.with_rates` (``sigma``, ``capacity``, ...) for the rates before. The
    previous members own what ``balancer`` (an assignor name, default ``lpt``) gives them on those rates; the
    snapshot's rates are :func:`~stickyflow.datasets.rates.drift_rates` of them (``sigma``, ``reshuffle``), in
    one draw over every partition end to end. Seeded: the same arguments give the same snapshot.
    """
    import stickyflow

    if scenario not in DRIFT_SCENARIOS:
        raise ValueError(f"scenario: {scenario!r} is not one of {', '.join(DRIFT_SCENARIOS)}")
    doc = consumer_snapshot(scenario, seed=seed, rates=shape, rate_options=rate_options, **options)
    previous = [m for m in doc["members"] if m.get("owned")]
    before = dict(doc, members=previous, protocol="eager")  # where the balancer's answer lands, not one round of it
    result = stickyflow.assign(before, balancer)
    for m in previous:
        owned = {t: list(ps) for t, ps in result.assignment[m["id"]].items() if len(ps)}
        if owned:
            m["owned"] = owned
        else:
            m.pop("owned")
    names = list(doc["topics"])
    flat = np.concatenate([np.asarray(doc["topics"][t]["rates"], dtype=np.float64) for t in names])
    after = drift_rates(flat, seed=[seed, 0xD41F], sigma=sigma, reshuffle=reshuffle)
    cuts = np.cumsum([doc["topics"][t]["partitions"] for t in names])[:-1]
    for t, part in zip(names, np.split(after, cuts)):
        doc["topics"][t] = dict(doc["topics"][t], rates=part.tolist())
    return doc


# --------------------------------------------------------------------------- the suites

def _seed(seed: int, i: int) -> int:
    return seed * 1_000_003 + i


def _capacity(partitions: int, members: int) -> float:
    """The capacity at which the average member runs at :data:`_BUSY` (the rates' mean is 1)."""
    return round(partitions / members / _BUSY, 3)


def _hot_partitions(i: int, seed: int) -> dict[str, Any]:
    sc = ("scale_out", "scale_in", "rolling_restart", "steady")[i % 4]
    p, m, t = _SIZES[(i // 4) % 4]
    options: dict[str, Any] = {"exponent": (0.6, 0.9)[(i // 2) % 2]}  # gentler than 1.1 (see above)
    if i % 2:
        options["capacity"] = _capacity(p, m)
    return consumer_snapshot(sc, partitions=p, members=m, topics=t, seed=_seed(seed, i), rates="zipf",
                             rate_options=options, protocol=("eager", "cooperative")[(i // 8) % 2],
                             id=f"hot-partitions/consumer/{sc}/{i}")


def _skewed_topics(i: int, seed: int) -> dict[str, Any]:
    sc = ("scale_out", "scale_in", "steady", "mixed")[i % 4]
    p, m, t = _SIZES[(i // 4) % 4]
    options: dict[str, Any] = {"factor": 10.0}
    if (i // 2) % 2:
        options["capacity"] = _capacity(p, m) * 2  # the hot topic's mean is far above 1: room for it
    return consumer_snapshot(sc, partitions=p, members=m, topics=t, seed=_seed(seed, i), rates="hot_topic",
                             rate_options=options, racks=3 if i % 2 else 0, id=f"skewed-topics/consumer/{sc}/{i}")


def _rate_drift(i: int, seed: int) -> dict[str, Any]:
    sc = DRIFT_SCENARIOS[i % 2]
    p, m, t = _SIZES[(i // 4) % 4]
    return drifted_snapshot(sc, partitions=p, members=m, topics=t, seed=_seed(seed, i),
                            sigma=(0.3, 0.6)[(i // 2) % 2], reshuffle=(0.1, 0.25)[(i // 2) % 2],
                            rate_options={"sigma": 1.0}, protocol=("eager", "cooperative")[(i // 8) % 2],
                            id=f"rate-drift/consumer/{sc}/{i}")


# name -> (make(i, seed), default count, description in one line), as suites.py keeps its study suites
LOAD_SUITES: dict[str, tuple[Callable[[int, int], dict[str, Any]], int, str]] = {
    "hot-partitions": (_hot_partitions, 16, "consumer groups by load: Zipf hot partitions, some with a capacity"),
    "skewed-topics": (_skewed_topics, 16, "consumer groups by load: one topic 10x as busy as the others"),
    "rate-drift": (_rate_drift, 16, "consumer groups balanced by load, then their rates drifted"),
}
