"""Seeded example scenarios by name (:data:`PRESETS`): consumer groups under both protocols and Streams
applications in warm-up mode, learner mode and with standbys."""

from __future__ import annotations

from typing import Any

from stickyflow.errors import InvalidSnapshotError, Problem

from .scenario import Event, Scenario

__all__ = ["PRESETS", "preset"]

PRESETS = ("consumer-cooperative", "consumer-eager", "streams-warmup", "streams-learner", "streams-standbys")


def preset(name: str, seed: int = 0, **overrides: Any) -> Scenario:
    """A seeded scenario by name (one of :data:`PRESETS`); ``overrides`` replace Scenario fields.

    * ``consumer-cooperative`` / ``consumer-eager``: a rack-aware group over
      three topics; a member joins, one leaves, one crashes, the leader is lost,
      the one that left rejoins.
    * ``streams-warmup`` / ``streams-learner`` / ``streams-standbys``: a
      stateless and a stateful subtopology; two clients scale out, a client
      crashes, the leader is lost, a client leaves and comes back with its
      state. ``streams-standbys`` adds one standby per task and rack tags.

    >>> preset("streams-learner", seed=1).snapshot.config.rebalancing_mode
    'learner'
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    if name in ("consumer-cooperative", "consumer-eager"):
        sc = _consumer_preset(rng, name, seed, protocol="cooperative" if name.endswith("cooperative") else "eager")
    elif name in ("streams-warmup", "streams-learner", "streams-standbys"):
        sc = _streams_preset(rng, name, seed, mode="learner" if name == "streams-learner" else "warmup",
                             standbys=1 if name == "streams-standbys" else 0)
    else:
        raise InvalidSnapshotError(Problem("preset", f"{name!r} is not a preset (known: {', '.join(PRESETS)})"))
    return sc.replace(**overrides) if overrides else sc


def _consumer_preset(rng, name: str, seed: int, *, protocol: str) -> Scenario:
    racks = ["r0", "r1", "r2"]
    topics = {}
    for t in range(3):
        n = int(rng.integers(6, 25))
        topics[f"t{t}"] = {"partitions": n,
                           "racks": [sorted(rng.choice(racks, size=2, replace=False).tolist()) for _ in range(n)]}
    names = list(topics)
    members = []
    for i in range(int(rng.integers(4, 7))):
        members.append({"id": f"m{i}", "subscription": names, "rack": racks[i % len(racks)]})
    snap = {"format": "stickyflow.snapshot/1", "kind": "consumer", "id": f"{name}-{seed}", "protocol": protocol,
            "topics": topics, "members": members}
    k = len(members)
    events = (
        Event(round=2, action="join", member="m-new", spec={"subscription": names, "rack": racks[k % 3]}),
        Event(round=5, action="leave", member="m1"),
        Event(round=7, action="crash", member=f"m{k - 1}"),
        Event(round=9, action="leader_lost"),
        Event(round=10, action="join", member="m1", spec={"subscription": names, "rack": racks[1]}),
    )
    return Scenario(snapshot=snap, events=events, rounds=13, name=f"{name}-{seed}")


def _streams_preset(rng, name: str, seed: int, *, mode: str, standbys: int) -> Scenario:
    racks = ["r0", "r1", "r2"]
    parts = int(rng.integers(4, 9))
    tasks = []
    for p in range(parts):
        tasks.append({"id": f"0_{p}", "stateful": False,
                      "input_partitions": [{"topic": "in", "partition": p,
                                            "racks": sorted(rng.choice(racks, 2, replace=False).tolist())}]})
    for p in range(parts):
        tasks.append({"id": f"1_{p}", "stateful": True, "end_offset_sum": int(rng.integers(100_000, 2_000_000)),
                      "input_partitions": [{"topic": "rep", "partition": p,
                                            "racks": sorted(rng.choice(racks, 2, replace=False).tolist())}],
                      "changelog_partitions": [{"topic": "store-changelog", "partition": p,
                                                "racks": sorted(rng.choice(racks, 2, replace=False).tolist())}]})
    n = int(rng.integers(2, 4))
    clients = []
    for i in range(n):
        c = {"process_id": f"p{i}", "threads": int(rng.integers(1, 3)), "rack": racks[i % 3],
             "previous_active": [], "previous_standby": []}
        if standbys:
            c["tags"] = {"zone": racks[i % 3]}
        clients.append(c)
    config: dict[str, Any] = {"acceptable_recovery_lag": 10_000, "max_warmup_replicas": 2,
                              "num_standby_replicas": standbys, "rebalancing_mode": mode,
                              "rack_aware_assignment_strategy": "min_traffic"}
    if standbys:
        config["rack_aware_assignment_tags"] = ["zone"]
    snap = {"format": "stickyflow.snapshot/1", "kind": "streams", "id": f"{name}-{seed}", "now_ms": 1_700_000_000_000,
            "tasks": tasks, "clients": clients, "config": config}
    biggest = max(t.get("end_offset_sum", 0) for t in tasks)
    events = (
        Event(round=1, action="join", member=f"p{n}", spec={"threads": 1, "rack": racks[n % 3],
                                                             **({"tags": {"zone": racks[n % 3]}} if standbys else {})}),
        Event(round=1, action="join", member=f"p{n + 1}",
              spec={"threads": 2, "rack": racks[(n + 1) % 3],
                    **({"tags": {"zone": racks[(n + 1) % 3]}} if standbys else {})}),
        Event(round=12, action="crash", member="p0"),
        Event(round=18, action="leader_lost"),
        Event(round=19, action="leave", member="p1"),
        Event(round=24, action="join", member="p1", spec={}),
    )
    # a warm-up catches up on the largest store in about two probing intervals; the changelogs grow slowly
    return Scenario(snapshot=snap, events=events, rounds=30, restore_per_round=max(1, biggest // 2),
                    write_per_ms=0.05, name=f"{name}-{seed}")
