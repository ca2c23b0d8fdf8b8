"""The checker's two ways of reading a consumer answer agree: the library's mapping check with the cooperative
rules partition by partition (every snapshot below ``ARRAYS_FROM`` partitions), and the array check that the
1,000,000-partition tests use. On answers of every consumer assignor to messy groups (stale and contradictory
claims, racks on some members, both protocols), and on the same answers spoiled one way at a time, both give
the same verdict and, where both accept an answer, the same moves, imbalance and cross-rack reads."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

import stickyflow
from stickyflow.check.consumer import inspect_consumer
from tests.checker import check_cooperative_arrays, check_cooperative_round, check_result, consumer_check_arrays
from tests.strategies import random_consumer_snapshot
from tests.strategies_streams import random_messy_consumer_doc

METRICS = ("moves", "imbalance", "cross_rack")


def _plain(nested) -> dict[str, dict[str, list[int]]]:
    return {m: {t: list(ps) for t, ps in topics.items()} for m, topics in nested.items()}


def _as_result(result, **changes) -> SimpleNamespace:
    """A stand-in for ``result`` with plain, changeable fields."""
    fields = dict(kind="consumer", error=result.error, solver=result.solver, metrics=dict(result.metrics),
                  target=_plain(result.target), assignment=_plain(result.assignment),
                  revocations=_plain(result.revocations),
                  followup_rebalance_deadline_ms=result.followup_rebalance_deadline_ms)
    fields.update(changes)
    return SimpleNamespace(**fields)


def _raises(fn) -> bool:
    try:
        fn()
    except AssertionError:
        return True
    return False


def _spoiled_targets(snap, target: dict, rng: random.Random):
    """(what was done, a copy of ``target`` changed that one way)."""
    entries = [(m, t, p) for m, topics in target.items() for t, ps in topics.items() for p in ps]
    members = [m.id for m in snap.members]

    def copy():
        return {m: {t: list(ps) for t, ps in topics.items()} for m, topics in target.items()}

    if entries:
        m, t, p = rng.choice(entries)
        other = rng.choice(members)
        out = copy()
        out[m][t].remove(p)
        out[other].setdefault(t, []).append(p)
        yield "moved to another member", out
        out = copy()
        out[m][t].remove(p)
        yield "dropped", out
        out = copy()
        out[other].setdefault(t, []).append(p)
        yield "given twice (or twice to one member)", out
        out = copy()
        out[m][t].append(snap.topics[t].partitions)
        yield "beyond the topic's count", out
        out = copy()
        out[m]["no-such-topic"] = [0]
        yield "an unknown topic", out
    if members:
        out = copy()
        out.pop(rng.choice(members))
        yield "a member left out", out
    out = copy()
    out["no-such-member"] = {t: [0] for t in list(snap.topics)[:1]}
    yield "an unknown member", out


def _agree_on_target(snap, target, where: str) -> None:
    slow, slow_metrics = inspect_consumer(snap, target)
    fast, fast_metrics = consumer_check_arrays(snap, target)
    assert bool(slow) == bool(fast), (where, slow, fast)
    if not slow:
        assert {k: slow_metrics[k] for k in METRICS} == {k: fast_metrics[k] for k in METRICS}, where


def _spoiled_rounds(snap, result, rng: random.Random):
    """A cooperative result spoiled one way at a time: this round's assignment, the revocations, the follow-up."""
    assignment, target = _plain(result.assignment), _plain(result.target)
    given = [(m, t, p) for m, topics in assignment.items() for t, ps in topics.items() for p in ps]
    held = {(t, p) for _, t, p in given}
    withheld = [(m, t, p) for m, topics in target.items() for t, ps in topics.items() for p in ps
                if (t, p) not in held]
    members = [m.id for m in snap.members]
    if withheld:
        m, t, p = rng.choice(withheld)
        out = _plain(assignment)
        out[m].setdefault(t, []).append(p)
        yield "a withheld partition handed over now", dict(assignment=out)
    if given:
        m, t, p = rng.choice(given)
        out = _plain(assignment)
        out[m][t].remove(p)
        yield "a partition that goes now held back", dict(assignment=out)
        other = rng.choice(members)
        out = _plain(assignment)
        out[other].setdefault(t, []).append(p)
        yield "a partition given twice this round", dict(assignment=out)
    revoked = [(m, t, p) for m, topics in result.revocations.items() for t, ps in topics.items() for p in ps]
    if revoked:
        m, t, p = rng.choice(revoked)
        out = _plain(result.revocations)
        out[m][t].remove(p)
        yield "a revocation left out", dict(revocations=out)
    if given:
        m, t, p = rng.choice(given)
        out = _plain(result.revocations)
        out.setdefault(m, {}).setdefault(t, []).append(p)
        yield "a kept partition revoked", dict(revocations=out)
    deadline = result.followup_rebalance_deadline_ms
    yield "the follow-up flipped", dict(followup_rebalance_deadline_ms=None if deadline is not None else snap.now_ms)


def _snapshots(rng: random.Random, n: int):
    for k in range(n):
        if k % 2:
            yield stickyflow.parse_snapshot(random_messy_consumer_doc(rng))
        else:
            yield random_consumer_snapshot(rng)


@pytest.mark.parametrize("protocol", ["eager", "cooperative"])
def test_the_array_check_agrees_with_the_mapping_check(seed, protocol):
    rng = random.Random(seed)
    checked = spoiled = rounds = racked = 0
    for snap in _snapshots(rng, 160):
        if snap.protocol != protocol:
            continue
        racked += snap.rack_aware
        for name in stickyflow.available_assignors("consumer"):
            result = stickyflow.assign(snap, name)
            check_result(snap, result, arrays=False)
            check_result(snap, result, arrays=True)
            _agree_on_target(snap, _plain(result.target), f"{name} as answered")
            checked += 1
            for what, target in _spoiled_targets(snap, _plain(result.target), rng):
                _agree_on_target(snap, target, f"{name}: {what}")
                spoiled += 1
            if protocol == "cooperative":
                for what, change in _spoiled_rounds(snap, result, rng):
                    bad = _as_result(result, **change)
                    assert _raises(lambda: check_cooperative_round(snap, bad)) == \
                        _raises(lambda: check_cooperative_arrays(snap, bad)), (name, what)
                    rounds += 1
    print(f"\n[checker] {checked} answers, {spoiled} spoiled targets, {rounds} spoiled rounds, "
          f"{racked} rack-aware groups")
    assert checked >= 150 and spoiled >= 5 * checked and racked >= 10
    if protocol == "cooperative":
        assert rounds >= 3 * checked
