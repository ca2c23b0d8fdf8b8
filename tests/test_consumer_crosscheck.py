"""Two independent optimal formulations, and brute force, must reach the same optimum.

``stickyflow.assign(s, "optimal")`` (OR-Tools flow on the compressed graph) and
``stickyflow.assign(s, "optimal", method="networkx")`` (one arc per partition
and member, one per load unit) are run on seeded random groups with mixed
subscriptions, racks, conflicting and stale claims, members that subscribe to
nothing and topics nobody reads. Both answers are measured again with
``inspect_consumer`` (not only the solvers' own claims): the sum of squared
loads and the secondary cost ``noc * moves + tc * cross_rack`` must agree.
On tiny groups, enumerating every assignment must agree too.
Each seeded case is named by its seed; ``STICKYFLOW_SEED`` pins the random one.
"""

from __future__ import annotations

import itertools
import random

import pytest

import stickyflow
from stickyflow.consumer import ConsumerSnapshot, previous_owners
from stickyflow.consumer_check import inspect_consumer
from stickyflow.registry import SolveOptions
from tests.checker import check_result
from tests.strategies import ConsumerShape, random_consumer_snapshot

SHAPES = (
    ConsumerShape(),                                                # small, every feature
    ConsumerShape(max_topics=3, max_partitions=24, max_members=9),  # more partitions per member
    ConsumerShape(equal_subscriptions=True, max_partitions=12),     # KIP-54's common case
    ConsumerShape(max_topics=5, max_partitions=6, min_members=2, max_members=8, stale=False),
)
SEEDS = range(160)
TINY = ConsumerShape(max_topics=2, max_partitions=3, max_members=3)


def measured(snap: ConsumerSnapshot, target) -> tuple[int, int]:
    """(sum of squared loads, noc * moves + tc * cross_rack) of an assignment, as the checker measures them."""
    violations, m = inspect_consumer(snap, target)
    assert not violations, violations
    cfg = snap.config
    return m["sum_squared_loads"], cfg.non_overlap_cost * m["moves"] + cfg.traffic_cost * (m["cross_rack"] or 0)


def solve(snap: ConsumerSnapshot, method: str | None):
    result = stickyflow.assign(snap, "optimal", method=method, fallback=False)  # a failure must show, not hide
    check_result(snap, result)
    assert result.solver.status == "optimal", (method, result.solver.reason)
    assert result.solver.method == (method or "flow"), result.solver
    return result


def shape_of(seed: int) -> ConsumerShape:
    return SHAPES[seed % len(SHAPES)]


def agree(snap: ConsumerSnapshot, label: str) -> tuple[int, int]:
    flow = solve(snap, None)
    ref = solve(snap, "networkx")
    a, b = measured(snap, flow.target), measured(snap, ref.target)
    assert a == b, f"{label}: flow (sumsq, cost) = {a}, networkx = {b}"
    return a


@pytest.mark.parametrize("seed", SEEDS)
def test_flow_and_networkx_agree(seed):
    snap = random_consumer_snapshot(seed, shape_of(seed))
    agree(snap, f"seed {seed} ({snap!r})")


def test_flow_and_networkx_agree_random(seed):
    rng = random.Random(seed)
    for k in range(30):
        snap = random_consumer_snapshot(rng, SHAPES[k % len(SHAPES)])
        agree(snap, f"STICKYFLOW_SEED={seed}, instance {k} ({snap!r})")


@pytest.mark.parametrize("seed", range(0, 160, 4))
@pytest.mark.parametrize("method", ["flow", "networkx"])
def test_objective_is_the_measured_cost(seed, method):
    """A solver's own claims (objective, bound, extra) describe the assignment it returned."""
    from stickyflow.formulations.consumer_flow import solve_consumer

    snap = random_consumer_snapshot(seed, shape_of(seed))
    decision = solve_consumer(snap, SolveOptions(method=method))
    result = solve(snap, None if method == "flow" else method)
    sumsq, cost = measured(snap, result.target)
    assert decision.extra["sum_squared_loads"] == sumsq
    assert (decision.objective, decision.bound) == (cost, cost), f"seed {seed}: claimed {decision.objective}, measured {cost}"
    assert result.solver.objective == cost


# --------------------------------------------------------------------------- brute force

def brute_force(snap: ConsumerSnapshot):
    """Every assignment of every subscribed partition to one of its subscribers; the lexicographic best.

    Costs are counted here from the definitions (KIP-341 owner kept or not,
    member rack among replica racks or not), apart from the formulations.
    Returns (sumsq, cost, assignment) or None when there are too many.
    """
    prev = previous_owners(snap)
    subs = snap.subscribers()
    cfg = snap.config
    tc = cfg.traffic_cost if snap.rack_aware else 0
    cells = []  # (topic, partition, [(member, cost)])
    for t, topic in snap.topics.items():
        for p in range(topic.partitions if subs[t] else 0):
            owner = prev.of(t, p)
            options = []
            for i in subs[t]:
                rack = snap.members[i].rack
                racks = topic.racks[p] if topic.racks is not None else frozenset()
                cross = bool(racks) and rack is not None and rack not in racks
                options.append((i, cfg.non_overlap_cost * (owner is not None and owner != i) + tc * cross))
            cells.append((t, p, options))
    count = 1
    for _, _, options in cells:
        count *= len(options)
    if count > 20_000:
        return None
    best = None
    n = len(snap.members)
    for choice in itertools.product(*(options for _, _, options in cells)):
        loads = [0] * n
        cost = 0
        for i, c in choice:
            loads[i] += 1
            cost += c
        key = (sum(x * x for x in loads), cost)
        if best is None or key < best[:2]:
            best = (*key, choice)
    out: dict[str, dict[str, list[int]]] = {m.id: {} for m in snap.members}
    for (t, p, _), (i, _) in zip(cells, best[2]):
        out[snap.members[i].id].setdefault(t, []).append(p)
    return best[0], best[1], out


@pytest.mark.parametrize("seed", range(1000, 1080))
def test_brute_force_agrees(seed):
    snap = random_consumer_snapshot(seed, TINY)
    found = brute_force(snap)
    if found is None:
        pytest.skip("too many assignments to enumerate")
    sumsq, own_cost, best = found
    optimum = measured(snap, best)
    assert optimum[0] == sumsq
    # the brute force leaves out moves nobody can avoid (topics nobody reads): a constant offset
    offset = optimum[1] - own_cost
    reached = agree(snap, f"seed {seed}")
    assert reached == optimum, f"seed {seed}: solvers reach {reached}, brute force {optimum} ({snap!r})"
    assert offset >= 0


def test_brute_force_sees_the_tradeoff():
    """A case where the secondary cost is a real trade-off: keeping an owner costs a cross-rack read."""
    snap = stickyflow.parse_snapshot({
        "format": "stickyflow.snapshot/1", "kind": "consumer",
        "topics": {"t": {"partitions": 2, "racks": [["b"], ["a"]]}},
        "members": [{"id": "x", "rack": "a", "subscription": ["t"], "generation": 1, "owned": {"t": [0]}},
                    {"id": "y", "rack": "b", "subscription": ["t"], "generation": 1, "owned": {"t": [1]}}],
        "config": {"traffic_cost": 10, "non_overlap_cost": 1}})
    sumsq, cost, best = brute_force(snap)
    assert (sumsq, cost) == (2, 2)  # both move, nobody reads across racks
    assert best == {"x": {"t": [1]}, "y": {"t": [0]}}
    assert agree(snap, "swap") == (2, 2)


def test_networkx_refuses_big_instances_and_the_front_door_falls_back():
    snap = random_consumer_snapshot(3, equal_subscriptions=True, min_members=2, max_partitions=8)
    with pytest.raises(stickyflow.StickyflowError, match="networkx.*limit 3"):
        stickyflow.assign(snap, method="networkx", fallback=False, networkx_max_arcs=3)
    result = stickyflow.assign(snap, method="networkx", networkx_max_arcs=3)
    check_result(snap, result)
    assert result.solver.status == "fallback" and "networkx" in result.solver.reason
