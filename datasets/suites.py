"""Named scenario suites with fixed seeds, and the bundled suite shipped with the package.

A suite is a reproducible list of snapshots (spec JSON dicts) with stable ids
``"<suite>/<kind>/<scenario>/<n>"``:

``kip``      the worked examples of KIP-54, KIP-341, KIP-429, KIP-881, KIP-441 and KIP-925, written out (11)
``smoke``    every scenario of both kinds, tiny (a few partitions; 24 snapshots)
``mixed``    every scenario of both kinds at three sizes, racks and protocols varied (54)
``scale``    large groups: 100,000 and 1,000,000 partitions, thousands of tasks (generated lazily; 8)
``bench``    ``n`` (default 10,000) consumer groups of 1,000 partitions x 100 members, all scenarios in turn
``starter``  the bundled file ``bundled/starter.jsonl``: ``kip`` + ``smoke`` as of this release (35)

Study suites (any count, seeded: snapshot ``i`` of seed ``s`` is made on its own by
:func:`suite_item`, so that a Spark task can make its share without the others;
sizes cycle so that results can be plotted against size):

``rolling``        rolling restarts: static consumers back with stale KIP-341 claims, Streams clients back with lagging state
``scaling``        scale out and scale in, both kinds, eager and cooperative consumers
``rack-outage``    one rack of three lost, both kinds (Streams with a standby spread over zones)
``churn``          consumer churn with KIP-341 conflicts: restarts, departures and double claims (ties and stale generations)
``subscriptions``  consumer groups whose members read different subsets of the topics (KIP-54's hard case)
``cold-start``     Streams applications starting with no previous assignment and no local state
``standbys``       Streams with one or two standbys, racks and ``zone`` tags (KIP-708), lags skewed
``large``          10,000-partition consumer groups (100 and 1,000 members) and 10,000-task Streams apps
``headline``       the speed study: consumer groups of 1,000 partitions x 100 members and 1,000-task Streams apps, alternating
``tiny``           12-partition groups and 8-task apps, every scenario in turn: the machinery at any count (100,000 and up)
``traces``         consumer groups of 16 to 64 partitions with rates from the thesis's random walks and a capacity, owned as a plan left them: for ``plan:METHOD``

Load suites (consumer groups with ``"balance": "load"``, :mod:`stickyflow.datasets.load_scenarios`):
``hot-partitions`` (Zipf hot partitions), ``skewed-topics`` (one topic 10x as busy) and ``rate-drift`` (balanced
by load, then the rates drifted).

>>> [d["id"] for d in suite("kip")][:2]
['kip/consumer/kip54-example1-c1-leaves/0', 'kip/consumer/kip54-example2-c0-leaves/1']
>>> len(suite("bench", n=5))
5
>>> len(suite("starter")) == len(suite("kip")) + len(suite("smoke"))
True
"""

from __future__ import annotations

import itertools
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Iterator

from .generators import SCENARIOS, SNAPSHOT_FORMAT, consumer_snapshot, streams_snapshot
from .load_scenarios import LOAD_SUITES

__all__ = ["SUITES", "STUDY_SUITES", "suite", "iter_suite", "suite_item", "suite_count", "bundled_path", "load_bundled",
           "write_bundled", "BUNDLED"]

BUNDLED = ("starter",)


def _kip() -> Iterator[dict[str, Any]]:
    """Hand-written small cases after the KIPs' own worked examples (our encoding of their situations)."""
    c, s = "consumer", "streams"

    def consumer(name: str, topics: dict[str, Any], members: list[dict[str, Any]], **extra: Any):
        return c, name, {"format": SNAPSHOT_FORMAT, "kind": c, "topics": topics, "members": members, **extra}

    def streams(name: str, tasks: list[dict[str, Any]], clients: list[dict[str, Any]], config: dict[str, Any]):
        return s, name, {"format": SNAPSHOT_FORMAT, "kind": s, "now_ms": 1_700_000_000_000, "tasks": tasks,
                         "clients": clients, "config": config}

    every = ["t0", "t1", "t2", "t3"]
    cases = [
        # KIP-54 example 1: three members read four two-partition topics; C1 leaves
        consumer("kip54-example1-c1-leaves", {t: {"partitions": 2} for t in every}, [
            {"id": "C0", "subscription": every, "generation": 1, "owned": {"t0": [0], "t1": [1], "t3": [0]}},
            {"id": "C2", "subscription": every, "generation": 1, "owned": {"t1": [0], "t2": [1]}},
        ]),
        # KIP-54 example 2: nested subscriptions (t0 | t0,t1 | t0,t1,t2); C0 leaves
        consumer("kip54-example2-c0-leaves", {"t0": {"partitions": 1}, "t1": {"partitions": 2}, "t2": {"partitions": 3}}, [
            {"id": "C1", "subscription": ["t0", "t1"], "generation": 1, "owned": {"t1": [0, 1]}},
            {"id": "C2", "subscription": ["t0", "t1", "t2"], "generation": 1, "owned": {"t2": [0, 1, 2]}},
        ]),
        # KIP-54 example 3: a third member joins two balanced ones
        consumer("kip54-example3-c2-joins", {"t0": {"partitions": 2}, "t1": {"partitions": 2}}, [
            {"id": "C0", "subscription": ["t0", "t1"], "generation": 1, "owned": {"t0": [0], "t1": [0]}},
            {"id": "C1", "subscription": ["t0", "t1"], "generation": 1, "owned": {"t0": [1], "t1": [1]}},
            {"id": "C2", "subscription": ["t0", "t1"]},
        ]),
        # KIP-341: a member back from a long pause claims partitions at an old generation; a tie with no winner
        consumer("kip341-stale-generation", {"t": {"partitions": 4}}, [
            {"id": "a", "subscription": ["t"], "generation": 3, "owned": {"t": [0, 1]}},
            {"id": "b", "subscription": ["t"], "generation": 4, "owned": {"t": [1, 2, 3]}},
            {"id": "c", "subscription": ["t"], "generation": 4, "owned": {"t": [3]}},
        ]),
        # KIP-429: cooperative protocol, a member joins; partitions move only after they are revoked
        consumer("kip429-cooperative-join", {"t": {"partitions": 6}}, [
            {"id": "a", "subscription": ["t"], "generation": 2, "owned": {"t": [0, 1, 2]}},
            {"id": "b", "subscription": ["t"], "generation": 2, "owned": {"t": [3, 4, 5]}},
            {"id": "c", "subscription": ["t"]},
        ], protocol="cooperative"),
        # KIP-881: rack-aware: each partition's replicas sit on two of three racks
        consumer("kip881-rack-aware", {"t": {"partitions": 6, "racks": [["r1", "r2"], ["r2", "r3"], ["r1", "r3"],
                                                                        ["r1", "r2"], ["r2", "r3"], ["r1", "r3"]]}}, [
            {"id": "a", "subscription": ["t"], "rack": "r1"},
            {"id": "b", "subscription": ["t"], "rack": "r2"},
            {"id": "c", "subscription": ["t"], "rack": "r3"},
        ]),
        # KIP-441: scale-out: B joins with no state; moving actives there needs warm-ups first
        streams("kip441-scale-out-warmup",
                [{"id": f"0_{p}", "stateful": True, "end_offset_sum": 1_000_000} for p in range(4)], [
                    {"process_id": "A", "previous_active": ["0_0", "0_1", "0_2", "0_3"], "previous_standby": []},
                    {"process_id": "B", "previous_active": [], "previous_standby": []},
                ], {"max_warmup_replicas": 1}),
        # KIP-441: the active's client left; the standby is caught up and takes over
        streams("kip441-standby-takes-over",
                [{"id": f"0_{p}", "stateful": True, "end_offset_sum": 500_000} for p in range(3)], [
                    {"process_id": "B", "previous_active": ["0_1"], "previous_standby": ["0_0"],
                     "lags": {"0_1": -2, "0_0": 40}},
                    {"process_id": "C", "previous_active": ["0_2"], "previous_standby": ["0_1"],
                     "lags": {"0_2": -2, "0_1": 900}},
                ], {"num_standby_replicas": 1}),
        # KIP-441: a client with more threads takes more active tasks
        streams("kip441-threads",
                [{"id": f"{s}_{p}", "stateful": False} for s in range(2) for p in range(6)], [
                    {"process_id": "small", "threads": 1, "previous_active": [], "previous_standby": []},
                    {"process_id": "big", "threads": 3, "previous_active": [], "previous_standby": []},
                ], {}),
        # KIP-925: min_traffic; tasks should follow their input partitions' racks
        streams("kip925-min-traffic",
                [{"id": f"0_{p}", "stateful": False,
                  "input_partitions": [{"topic": "in", "partition": p, "racks": [f"r{p % 2}"]}]} for p in range(4)], [
                    {"process_id": "x", "rack": "r0", "previous_active": ["0_1", "0_3"], "previous_standby": []},
                    {"process_id": "y", "rack": "r1", "previous_active": ["0_0", "0_2"], "previous_standby": []},
                ], {"rack_aware_assignment_strategy": "min_traffic"}),
        # KIP-708: standbys spread over the zone tag
        streams("kip708-standby-tags",
                [{"id": f"0_{p}", "stateful": True, "end_offset_sum": 10} for p in range(2)], [
                    {"process_id": f"p{i}", "tags": {"zone": f"z{i % 2}"}, "previous_active": [], "previous_standby": []}
                    for i in range(4)
                ], {"num_standby_replicas": 1, "rack_aware_assignment_tags": ["zone"]}),
    ]
    for n, (kind, name, doc) in enumerate(cases):
        doc["id"] = f"kip/{kind}/{name}/{n}"
        yield doc


def _smoke() -> Iterator[dict[str, Any]]:
    n = 0
    for sc in SCENARIOS:
        yield consumer_snapshot(sc, partitions=12, members=4, topics=2, seed=n, id=f"smoke/consumer/{sc}/{n}")
        n += 1
    for sc in SCENARIOS:
        yield streams_snapshot(sc, tasks=8, clients=3, subtopologies=2, seed=n, id=f"smoke/streams/{sc}/{n}")
        n += 1
    # the switches the plain ones leave off
    for sc in ("scale_out", "rack_outage", "mixed"):
        yield consumer_snapshot(sc, partitions=18, members=5, topics=3, seed=n, racks=3, protocol="cooperative",
                                id=f"smoke/consumer/{sc}/{n}")
        n += 1
    for sc in ("scale_out", "rolling_restart", "lag_skew"):
        yield streams_snapshot(sc, tasks=12, clients=4, subtopologies=3, seed=n, racks=3, num_standby_replicas=1,
                               id=f"smoke/streams/{sc}/{n}")
        n += 1


def _mixed() -> Iterator[dict[str, Any]]:
    consumer_sizes = [(60, 6, 3), (240, 12, 6), (600, 30, 8)]
    streams_sizes = [(24, 3, 2), (60, 6, 3), (120, 12, 4)]
    n = 0
    for size in range(3):
        for sc in SCENARIOS:
            p, m, t = consumer_sizes[size]
            yield consumer_snapshot(sc, partitions=p, members=m, topics=t, seed=1000 + n,
                                    racks=3 if size == 1 or sc == "rack_outage" else 0,
                                    protocol="cooperative" if size == 2 else "eager",
                                    id=f"mixed/consumer/{sc}/{n}")
            n += 1
        for sc in SCENARIOS:
            k, c, s = streams_sizes[size]
            yield streams_snapshot(sc, tasks=k, clients=c, subtopologies=s, seed=1000 + n,
                                   racks=3 if size >= 1 or sc == "rack_outage" else 0,
                                   num_standby_replicas=size if sc not in ("lag_skew", "mixed") else max(1, size),
                                   id=f"mixed/streams/{sc}/{n}")
            n += 1


def _scale() -> Iterator[dict[str, Any]]:
    n = 0
    for p, m, t in ((100_000, 1_000, 100), (1_000_000, 2_000, 200)):
        for sc in ("steady", "scale_out", "uniform"):
            yield consumer_snapshot(sc, partitions=p, members=m, topics=t, seed=2000 + n, id=f"scale/consumer/{sc}/{n}")
            n += 1
    for sc in ("scale_out", "lag_skew"):
        yield streams_snapshot(sc, tasks=5_000, clients=200, subtopologies=10, seed=2000 + n, threads=(1, 2, 4),
                               id=f"scale/streams/{sc}/{n}")
        n += 1


def _bench(n: int = 10_000, partitions: int = 1_000, members: int = 100, topics: int = 10,
           seed: int = 0) -> Iterator[dict[str, Any]]:
    for i in range(n):
        yield _bench_item(i, seed, partitions, members, topics)


def _bench_item(i: int, seed: int = 0, partitions: int = 1_000, members: int = 100, topics: int = 10) -> dict[str, Any]:
    sc = SCENARIOS[i % len(SCENARIOS)]
    return consumer_snapshot(sc, partitions=partitions, members=members, topics=topics, seed=seed * 1_000_003 + i,
                             racks=3 if sc == "rack_outage" or i % 4 == 0 else 0, id=f"bench/consumer/{sc}/{i}")


_GENERATED: dict[str, tuple[Callable[..., Iterator[dict[str, Any]]], str]] = {
    "kip": (_kip, "the KIPs' worked examples, written out"),
    "smoke": (_smoke, "every scenario of both kinds, tiny"),
    "mixed": (_mixed, "every scenario of both kinds at three sizes"),
    "scale": (_scale, "large groups (100k and 1M partitions, 5,000 tasks)"),
    "bench": (_bench, "n consumer groups of 1,000 partitions x 100 members (n=10,000)"),
}
SUITES: dict[str, str] = {name: desc for name, (_, desc) in _GENERATED.items()}
SUITES["starter"] = "bundled: kip + smoke, as shipped"


# --------------------------------------------------------------------------- study suites (indexed)

def _seed(seed: int, i: int) -> int:
    return seed * 1_000_003 + i


def _consumer(i: int, seed: int, suite_name: str, sc: str, p: int, m: int, t: int, **kw: Any) -> dict[str, Any]:
    return consumer_snapshot(sc, partitions=p, members=m, topics=t, seed=_seed(seed, i),
                             id=f"{suite_name}/consumer/{sc}/{i}", **kw)


def _streams(i: int, seed: int, suite_name: str, sc: str, k: int, c: int, s: int, **kw: Any) -> dict[str, Any]:
    return streams_snapshot(sc, tasks=k, clients=c, subtopologies=s, seed=_seed(seed, i),
                            id=f"{suite_name}/streams/{sc}/{i}", **kw)


_C_SIZES = ((60, 6, 3), (300, 20, 5), (1_200, 60, 8), (3_000, 100, 10))
_S_SIZES = ((24, 4, 2), (96, 8, 4), (240, 16, 6), (600, 30, 8))


def _rolling(i: int, seed: int) -> dict[str, Any]:
    size = (i // 2) % 4
    if i % 2 == 0:
        return _consumer(i, seed, "rolling", "rolling_restart", *_C_SIZES[size],
                         protocol="cooperative" if (i // 2) % 2 else "eager", racks=3 if size % 2 else 0)
    return _streams(i, seed, "rolling", "rolling_restart", *_S_SIZES[size], num_standby_replicas=1,
                    racks=3 if size % 2 else 0)


def _scaling(i: int, seed: int) -> dict[str, Any]:
    sc = ("scale_out", "scale_in")[(i // 2) % 2]
    size = (i // 4) % 4
    if i % 2 == 0:
        return _consumer(i, seed, "scaling", sc, *_C_SIZES[size], protocol=("eager", "cooperative")[(i // 4) % 2])
    return _streams(i, seed, "scaling", sc, *_S_SIZES[size], num_standby_replicas=(i // 4) % 2)


def _rack_outage(i: int, seed: int) -> dict[str, Any]:
    size = (i // 2) % 4
    if i % 2 == 0:
        return _consumer(i, seed, "rack-outage", "rack_outage", *_C_SIZES[size], racks=3,
                         protocol=("eager", "cooperative")[(i // 2) % 2])
    return _streams(i, seed, "rack-outage", "rack_outage", *_S_SIZES[size], racks=3, num_standby_replicas=1)


def _churn(i: int, seed: int) -> dict[str, Any]:
    sc = ("rolling_restart", "scale_in", "uniform")[i % 3]
    p, m, t = _C_SIZES[(i // 3) % 4]
    return _consumer(i, seed, "churn", sc, p, m, t, churn=max(1, m // 5), conflicts=max(2, p // 50),
                     protocol=("eager", "cooperative")[(i // 3) % 2], racks=3 if i % 2 else 0)


def _subscriptions(i: int, seed: int) -> dict[str, Any]:
    p, m, t = _C_SIZES[i % 4]
    return _consumer(i, seed, "subscriptions", "mixed", p, m, t + 2, racks=3 if (i // 4) % 2 else 0,
                     protocol=("eager", "cooperative")[(i // 8) % 2])


def _cold_start(i: int, seed: int) -> dict[str, Any]:
    k, c, s = _S_SIZES[i % 4]
    return _streams(i, seed, "cold-start", "fresh", k, c, s, num_standby_replicas=(i // 4) % 2,
                    racks=3 if (i // 8) % 2 else 0)


def _standbys(i: int, seed: int) -> dict[str, Any]:
    sc = ("scale_out", "scale_in", "rolling_restart", "lag_skew")[i % 4]
    k, c, s = _S_SIZES[(i // 4) % 4]
    return _streams(i, seed, "standbys", sc, k, c, s, racks=3, num_standby_replicas=1 + (i // 16) % 2)


def _large(i: int, seed: int) -> dict[str, Any]:
    sc = ("scale_out", "scale_in", "rolling_restart", "mixed")[(i // 3) % 4]
    if i % 3 == 0:
        return _consumer(i, seed, "large", sc, 10_000, 100, 20, racks=3 if (i // 3) % 2 else 0)
    if i % 3 == 1:
        return _consumer(i, seed, "large", sc, 10_000, 1_000, 50, churn=10)
    return _streams(i, seed, "large", sc, 10_000, 200, 10, churn=1, num_standby_replicas=1)


_HEADLINE_SCENARIOS = ("scale_out", "scale_in", "rolling_restart", "rack_outage", "lag_skew", "mixed", "steady",
                       "fresh")


def _headline(i: int, seed: int) -> dict[str, Any]:
    sc = _HEADLINE_SCENARIOS[(i // 2) % len(_HEADLINE_SCENARIOS)]
    if i % 2 == 0:
        return _consumer(i, seed, "headline", sc, 1_000, 100, 10, racks=3 if sc == "rack_outage" or i % 8 == 0 else 0,
                         protocol="cooperative" if i % 6 == 0 else "eager")
    return _streams(i, seed, "headline", sc, 1_000, 50, 10, racks=3 if sc == "rack_outage" else 0)


def _tiny(i: int, seed: int) -> dict[str, Any]:
    sc = SCENARIOS[(i // 2) % len(SCENARIOS)]
    if i % 2 == 0:
        return _consumer(i, seed, "tiny", sc, 12, 3, 2)
    return _streams(i, seed, "tiny", sc, 8, 3, 2)


def _traces(i: int, seed: int) -> dict[str, Any]:
    """A plan's input: 16, 32 or 64 partitions in two topics at the rates of the thesis's random walk (delta 5
    or 25), each owned where the modified-worst-fit plan of the step before put it."""
    from .traces import walk_snapshot

    delta = (5, 25)[i % 2]
    partitions = (16, 32, 64)[(i // 2) % 3]
    return walk_snapshot(partitions=partitions, delta=delta, seed=_seed(seed, i),
                         id=f"traces/consumer/walk-delta{delta}/{i}")


# name -> (make(i, seed), default count, description in one line)
_INDEXED: dict[str, tuple[Callable[[int, int], dict[str, Any]], int, str]] = {
    "rolling": (_rolling, 16, "rolling restarts: static consumers with stale KIP-341 claims, Streams clients "
                              "back with lagging state"),
    "scaling": (_scaling, 16, "scale out and scale in, both kinds, eager and cooperative consumers"),
    "rack-outage": (_rack_outage, 16, "one rack of three lost, both kinds (Streams: a standby over zones)"),
    "churn": (_churn, 12, "consumer churn with KIP-341 conflicts: restarts, departures, double claims"),
    "subscriptions": (_subscriptions, 16, "consumer groups with mixed subscriptions"),
    "cold-start": (_cold_start, 16, "Streams applications with no previous assignment and no state"),
    "standbys": (_standbys, 16, "Streams with one or two standbys, racks, zone tags, skewed lags"),
    "large": (_large, 6, "10,000-partition consumer groups and 10,000-task Streams apps"),
    "headline": (_headline, 1_000, "1,000 x 100 consumer groups and 1,000-task Streams apps, alternating"),
    "tiny": (_tiny, 1_000, "tiny snapshots of both kinds, every scenario: for testing the machinery at any count"),
    "traces": (_traces, 12, "consumer groups with partition rates (random walks) and a capacity: plans' input"),
}
_INDEXED.update(LOAD_SUITES)
STUDY_SUITES = tuple(n for n in _INDEXED if n not in ("headline", "tiny"))
SUITES.update({name: desc for name, (_, _, desc) in _INDEXED.items()})
_FIXED_CACHE: dict[str, list[dict[str, Any]]] = {}


def suite_count(name: str, count: int | None = None) -> int:
    """How many snapshots ``suite_item(name, i)`` serves: ``count`` (default: the suite's own) for a study
    suite; for a fixed list (``kip``, ``smoke``, ``mixed``, ``starter``, ``scale``) its length, at most ``count``;
    ``bench``: ``count`` or 10,000."""
    if name in _INDEXED:
        return _INDEXED[name][1] if count is None else int(count)
    if name == "bench":
        return 10_000 if count is None else int(count)
    n = len(_fixed(name)) if name != "scale" else 8
    return n if count is None else min(n, int(count))


def suite_item(name: str, index: int, seed: int = 0) -> dict[str, Any]:
    """Snapshot ``index`` of suite ``name`` (spec JSON dict), made without making the others.

    ``seed`` varies the study suites and ``bench``; the fixed lists ignore it.

    >>> suite_item("churn", 3, seed=1)["id"]
    'churn/consumer/rolling_restart/3'
    """
    if name in _INDEXED:
        return _INDEXED[name][0](index, seed)
    if name == "bench":
        return _bench_item(index, seed)
    if name == "scale":
        return next(itertools.islice(_scale(), index, None))
    return _fixed(name)[index]


def _fixed(name: str) -> list[dict[str, Any]]:
    if name not in _FIXED_CACHE:
        _FIXED_CACHE[name] = suite(name)
    return _FIXED_CACHE[name]


def iter_suite(name: str, **options: Any) -> Iterator[dict[str, Any]]:
    """The snapshots of suite ``name`` one at a time (``bench`` takes ``n``, ``partitions``, ``members``, ``topics``,
    ``seed``; the study suites ``n`` and ``seed``)."""
    if name in BUNDLED:
        if options:
            raise ValueError(f"options: the bundled suite {name!r} takes none")
        return iter(load_bundled(name))
    if name in _INDEXED:
        unknown = set(options) - {"n", "count", "seed"}
        if unknown:
            raise ValueError(f"options: suite {name!r} takes n (or count) and seed, not {sorted(unknown)[0]!r}")
        count = suite_count(name, options.get("n", options.get("count")))
        seed = int(options.get("seed", 0))
        return (_INDEXED[name][0](i, seed) for i in range(count))
    entry = _GENERATED.get(name)
    if entry is None:
        raise ValueError(f"suite: {name!r} is not one of {', '.join(SUITES)}")
    return entry[0](**options)


def suite(name: str, **options: Any) -> list[dict[str, Any]]:
    """The snapshots of suite ``name`` (see the module docstring), as spec JSON dicts."""
    return list(iter_suite(name, **options))


def bundled_path(name: str = "starter") -> Path:
    """Where the bundled suite ``name`` lives (a JSON Lines file inside the package)."""
    if name not in BUNDLED:
        raise ValueError(f"suite: {name!r} is not a bundled suite ({', '.join(BUNDLED)})")
    return Path(str(resources.files(__package__).joinpath("bundled", f"{name}.jsonl")))


def load_bundled(name: str = "starter") -> list[dict[str, Any]]:
    """The bundled suite ``name`` as spec JSON dicts."""
    from .io import load_dataset

    return load_dataset(bundled_path(name))


def write_bundled(path: str | Path | None = None) -> Path:
    """Regenerate ``bundled/starter.jsonl`` (``kip`` + ``smoke``) after a generator change.

    ``python -m stickyflow.datasets.suites`` does the same.
    """
    from .io import write_dataset

    target = Path(path) if path is not None else Path(__file__).resolve().parent / "bundled" / "starter.jsonl"
    return write_dataset(itertools.chain(_kip(), _smoke()), target)


if __name__ == "__main__":  # pragma: no cover
    print(write_bundled())
