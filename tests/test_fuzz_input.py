"""Bad input of every shape meets a typed error or a valid answer, never a crash.

Each case takes a valid snapshot (the KIP examples and small generated consumer and streams groups) and
changes one to three places at random: a value replaced by an odd one (null, a bool, a float, NaN, a huge
integer, an ``IntEnum``, a ``str`` subclass, an empty or nested list...), a key deleted or renamed. Every
built-in assignor then either answers (``assign`` checks every answer it returns) or raises a
:class:`~stickyflow.errors.StickyflowError`; any other exception is a bug. Written after an ``IntEnum`` among
a dict's owned partitions let ``StopIteration`` escape ``assign`` (found by this very loop, run longer, in
about a minute).
"""

from __future__ import annotations

import copy
import enum
import json
import random

import pytest

import stickyflow
from stickyflow.datasets.generators import consumer_snapshot, streams_snapshot
from stickyflow.errors import StickyflowError
from conftest import example_paths


class _Part(enum.IntEnum):
    ONE = 1
    THREE = 3


class _Name(str):
    pass


ODD = [None, True, False, 0, -1, 1.5, float("nan"), float("inf"), 2**31, 2**63, 2**70, -2**70, "", "x", "0",
       [], {}, [1], {"a": 1}, _Part.ONE, _Part.THREE, _Name("topic-00"), _Name("a"), [None], [[1]],
       ["topic-00", "topic-00"], [0, 0], [True], [1.0], [2**31 - 1], [-5], "0_1", "1_0", "9_9",
       {"partitions": 3}, {"active": []}, [_Part.THREE], [_Name("x")], 12345678901234567890]


def _places(obj, path=()):
    yield path
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _places(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _places(v, path + (i,))


def _mutated(doc: dict, rng: random.Random) -> dict:
    doc = copy.deepcopy(doc)
    for _ in range(rng.choice([1, 1, 2, 3])):
        path = rng.choice([p for p in _places(doc) if p])
        parent = doc
        for step in path[:-1]:
            parent = parent[step]
        r = rng.random()
        if r < 0.7:
            parent[path[-1]] = copy.deepcopy(rng.choice(ODD))
        elif r < 0.85:
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[rng.choice(["x", "id", "0_0", "topic-00", "a"])] = parent.pop(path[-1])
    return doc


def _bases() -> list[dict]:
    docs = [json.loads(p.read_text()) for p in example_paths()]
    for s in range(4):
        docs.append(consumer_snapshot(partitions=30, members=4, topics=3, seed=s, racks=2 if s % 2 else None,
                                      protocol="cooperative" if s > 1 else "eager"))
        docs.append(streams_snapshot(("steady", "scale_out", "rack_outage", "lag_skew")[s], tasks=12, clients=3,
                                     seed=s, num_standby_replicas=1, racks=2))
    return docs


@pytest.mark.parametrize("part", range(4))
def test_odd_input_gets_a_typed_error_or_a_valid_answer(part, seed):
    rng = random.Random(seed * 4 + part)
    bases = _bases()
    crashes = []
    for _ in range(150):
        doc = _mutated(rng.choice(bases), rng)
        assignors = ("optimal", "sticky") + (("range", "roundrobin") if doc.get("kind") == "consumer" else ())
        for assignor in assignors:
            try:
                stickyflow.assign(doc, assignor)
            except StickyflowError:
                pass
            except Exception as exc:  # noqa: BLE001  (the bug this test looks for)
                crashes.append(f"{assignor}: {type(exc).__name__}: {exc} on {json.dumps(doc, default=repr)[:300]}")
    assert not crashes, crashes[:3]
