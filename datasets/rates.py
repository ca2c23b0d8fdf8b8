"""Seeded partition rates for balance-by-load snapshots: skewed loads as real topics carry them.

Each generator takes a ``seed`` (one ``numpy.random.Generator`` per call, no global state) and returns a
``float64`` array of rates ``>= 0`` whose mean is ``mean`` (in expectation for the random ones), so that
shapes compare at the same total load:

``uniform``
    every rate drawn evenly from ``[mean (1 - spread), mean (1 + spread)]``.
``lognormal``
    ``exp(N(mu, sigma))``: most partitions quiet, a long tail of busy ones (``sigma = 1``: the busiest of
    10,000 about 30x the mean).
``zipf``
    hot partitions: the rate of the partition of rank ``k`` (ranks shuffled over the partitions) is
    proportional to ``1 / k ** exponent`` (hot keys on a few partitions).
``hot_topic``
    per topic: every partition of one topic ``factor`` times as busy as the others' (one busy topic beside
    quiet ones), each partition varied by ``spread``.

:func:`drift_rates` moves rates between two snapshots (each multiplied by a lognormal factor, and optionally the
hot spots reshuffled); :func:`with_rates` makes a load snapshot of a count snapshot (the spec's JSON dict or a
``ConsumerSnapshot``): rates of any shape on every topic, and ``"balance": "load"``.

>>> r = draw_rates("lognormal", 10_000, seed=1)
>>> r.shape, round(float(r.mean()), 1), bool((r >= 0).all())
((10000,), 1.0, True)
>>> doc = {"format": "stickyflow.snapshot/1", "kind": "consumer", "topics": {"a": {"partitions": 2},
...        "b": {"partitions": 2}}, "members": [{"id": "m", "subscription": ["a", "b"]}]}
>>> out = with_rates(doc, "hot_topic", seed=0, hot="a", factor=10, spread=0)
>>> out["topics"]["a"]["rates"], out["topics"]["b"]["rates"], out["config"]["balance"]
([10.0, 10.0], [1.0, 1.0], 'load')
"""

from __future__ import annotations

import copy
from typing import Any, Mapping

import numpy as np

__all__ = ["SHAPES", "draw_rates", "topic_rates", "drift_rates", "with_rates"]

SHAPES = ("uniform", "lognormal", "zipf", "hot_topic")


def draw_rates(shape: str, n: int, *, seed: int = 0, mean: float = 1.0, spread: float = 0.5, sigma: float = 1.0,
          exponent: float = 1.1) -> np.ndarray:
    """``n`` rates of ``shape`` (``uniform``, ``lognormal`` or ``zipf``; ``hot_topic`` is per topic:
    :func:`topic_rates`), seeded, with mean ``mean``.

    >>> draw_rates("zipf", 4, seed=0, exponent=1).round(2).tolist()
    [0.64, 1.92, 0.96, 0.48]
    """
    rng = np.random.default_rng(seed)
    if shape == "uniform":
        if not 0 <= spread <= 1:
            raise ValueError(f"spread: must lie in [0, 1], not {spread}")
        return mean * (1 + spread * rng.uniform(-1, 1, n))
    if shape == "lognormal":
        return mean * rng.lognormal(-sigma * sigma / 2, sigma, n)  # E[exp(N(mu, s))] = exp(mu + s^2 / 2) = 1
    if shape == "zipf":
        weight = 1.0 / np.arange(1, n + 1, dtype=np.float64) ** exponent
        return (mean * n / weight.sum()) * weight[rng.permutation(n)] if n else weight
    raise ValueError(f"shape: {shape!r} is not one of {', '.join(s for s in SHAPES if s != 'hot_topic')}")


def topic_rates(shape: str, sizes: Mapping[str, int], *, seed: int = 0, hot: str | None = None,
                factor: float = 10.0, **params: Any) -> dict[str, np.ndarray]:
    """Rates for every topic (name -> partition count), in one draw over all partitions end to end (so that a
    hot partition may land in any topic). ``hot_topic``: topic ``hot`` (default the first) runs ``factor``
    times as busy as the others; each partition varies by ``spread`` (uniformly, default 0.5).

    >>> out = topic_rates("hot_topic", {"a": 2, "b": 1}, seed=3, factor=4, spread=0)
    >>> {t: r.tolist() for t, r in out.items()}
    {'a': [4.0, 4.0], 'b': [1.0]}
    """
    names = list(sizes)
    counts = np.array([sizes[t] for t in names], dtype=np.int64)
    if shape == "hot_topic":
        hot = names[0] if hot is None and names else hot
        if names and hot not in sizes:
            raise ValueError(f"hot: {hot!r} is not one of the topics")
        params.setdefault("spread", 0.5)
        flat = draw_rates("uniform", int(counts.sum()), seed=seed, **params)
        scale = np.repeat(np.where(np.array(names, dtype=object) == hot, factor, 1.0), counts)
        flat = flat * scale if len(flat) else flat
    else:
        flat = draw_rates(shape, int(counts.sum()), seed=seed, **params)
    cuts = np.cumsum(counts)[:-1]
    return dict(zip(names, np.split(flat, cuts)))


def drift_rates(previous: np.ndarray, *, seed: int = 0, sigma: float = 0.2, reshuffle: float = 0.0) -> np.ndarray:
    """The rates of the next snapshot: each of ``previous`` times ``exp(N(-sigma^2 / 2, sigma))`` (the mean kept
    in expectation), and then a fraction ``reshuffle`` of the partitions trading rates among themselves (hot
    keys moving to other partitions).

    >>> before = draw_rates("zipf", 6, seed=0)
    >>> after = drift_rates(before, seed=1, sigma=0.0, reshuffle=1.0)
    >>> sorted(after.tolist()) == sorted(before.tolist()), bool((after != before).any())
    (True, True)
    """
    if not 0 <= reshuffle <= 1:
        raise ValueError(f"reshuffle: must lie in [0, 1], not {reshuffle}")
    rng = np.random.default_rng(seed)
    prev = np.asarray(previous, dtype=np.float64)
    out = prev * rng.lognormal(-sigma * sigma / 2, sigma, len(prev)) if sigma else prev.copy()
    k = int(round(reshuffle * len(out)))
    if k > 1:
        who = rng.choice(len(out), size=k, replace=False)
        out[who] = out[who[rng.permutation(k)]]
    return out


def with_rates(snapshot: Any, shape: str | Mapping[str, Any], *, seed: int = 0, capacity: float | None = None,
               load_slack: float | None = None, balance: str = "load", **params: Any) -> Any:
    """A load snapshot made from a count snapshot: a copy of ``snapshot`` with ``rates`` on every topic and
    ``config.balance`` set to ``balance`` (``"load"``; ``"count"`` keeps Kafka's rule with rates to measure),
    and ``capacity`` / ``load_slack`` in its config when given. ``shape`` names a generator (:func:`topic_rates`,
    which takes ``params``) or maps every topic name to its rates.

    ``snapshot`` is the spec's JSON dict (a dict comes back, the input untouched) or a
    :class:`stickyflow.ConsumerSnapshot` (a checked snapshot comes back).

    >>> d = {"format": "stickyflow.snapshot/1", "kind": "consumer", "topics": {"t": {"partitions": 2}},
    ...      "members": [], "config": {"traffic_cost": 3}}
    >>> with_rates(d, {"t": [1, 2]}, capacity=4)["config"]
    {'traffic_cost': 3, 'balance': 'load', 'capacity': 4}
    >>> import stickyflow
    >>> s = with_rates(stickyflow.parse_snapshot(d), "uniform", seed=2, spread=0)
    >>> s.topics["t"].rates.tolist(), s.config.balance
    ([1.0, 1.0], 'load')
    """
    if isinstance(snapshot, Mapping):
        sizes = {t: spec["partitions"] for t, spec in snapshot["topics"].items()}
    else:
        sizes = {t: topic.partitions for t, topic in snapshot.topics.items()}
    if isinstance(shape, str):
        made = topic_rates(shape, sizes, seed=seed, **params)
    else:
        missing = [t for t in sizes if t not in shape]
        if missing:
            raise ValueError(f"shape: no rates for topic {missing[0]!r}")
        made = shape
    settings = {"balance": balance}
    if capacity is not None:
        settings["capacity"] = capacity
    if load_slack is not None:
        settings["load_slack"] = load_slack
    if not isinstance(snapshot, Mapping):
        return _with_rates_object(snapshot, made, settings)
    out = dict(snapshot)
    topics = {t: dict(spec) for t, spec in snapshot["topics"].items()}
    for t, spec in topics.items():
        spec["rates"] = np.asarray(made[t], dtype=np.float64).tolist()
    out["topics"] = topics
    out["config"] = {**copy.deepcopy(dict(snapshot.get("config") or {})), **settings}
    return out


def _with_rates_object(snap: Any, made: Mapping[str, Any], settings: dict[str, Any]) -> Any:
    """:func:`with_rates` for a snapshot object: new topics and config, checked as any snapshot built in Python."""
    from dataclasses import replace

    topics = {t: replace(topic, rates=np.asarray(made[t], dtype=np.float64)) for t, topic in snap.topics.items()}
    return replace(snap, topics=topics, config=replace(snap.config, **settings))
