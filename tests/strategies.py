"""Random consumer-group snapshots: hypothesis strategies and a seeded plain-``random`` twin.

One generator, two sources of randomness: :func:`consumer_docs` /
:func:`consumer_snapshots` draw from hypothesis (so failures shrink toward
small, feature-free groups), :func:`random_consumer_doc` /
:func:`random_consumer_snapshot` draw from ``random.Random(seed)`` (for loops
over seeded instances). Both produce what real groups produce:

* mixed subscriptions (or equal ones, on request), members that subscribe to
  nothing, topics that nobody reads, subscriptions to topics that do not exist;
* member racks and per-partition replica racks (some empty, some missing);
* previous ownership from an earlier assignment, plus conflicting claims
  with small generations (so ties happen), unknown generations, and stale
  claims: deleted topics, partitions beyond the count, unsubscribed topics;
* static members, both protocols, and varied costs (zeros included);
* on request (``loads=True``), rates on every topic and capacities (balance by load).

>>> from hypothesis import given
>>> @given(consumer_snapshots(max_members=3))
... def test(snap):
...     assert len(snap.members) <= 3
>>> test()
>>> random_consumer_snapshot(7, equal_subscriptions=True).kind
'consumer'
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from hypothesis import strategies as st

import stickyflow
from stickyflow.model.consumer import ConsumerSnapshot

__all__ = [
    "ConsumerShape",
    "consumer_docs",
    "consumer_snapshots",
    "random_consumer_doc",
    "random_consumer_snapshot",
]

RACKS = ("a", "b", "c")


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerShape:
    """Bounds and switches of the generator (every feature on by default)."""

    max_topics: int = 4
    max_partitions: int = 8
    min_members: int = 0
    max_members: int = 6
    equal_subscriptions: bool | None = None  # None: mixed or equal at random
    racks: bool = True
    claims: bool = True
    stale: bool = True
    protocol: str | None = None  # None: either
    vary_costs: bool = True
    loads: bool = False  # rates on every topic (zeros and ties included), capacities, balance "load" or "count"


class _Source:
    """The few random decisions the generator makes; subclasses draw them from hypothesis or ``random``."""

    def integer(self, lo: int, hi: int) -> int:
        raise NotImplementedError

    def chance(self, percent: int) -> bool:
        """True with probability ``percent``%; hypothesis shrinks it toward False."""
        return self.integer(0, 99) >= 100 - percent

    def choice(self, seq: Sequence[Any]) -> Any:
        return seq[self.integer(0, len(seq) - 1)]

    def subset(self, seq: Sequence[Any], percent: int = 50) -> list[Any]:
        return [x for x in seq if self.chance(percent)]


class _Random(_Source):
    def __init__(self, rng: random.Random):
        self.rng = rng

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)


class _Hypothesis(_Source):
    # one strategy per range, made once: st.integers() costs about 30 us a call (hypothesis looks it up in its
    # own cache), a third of drawing one integer, and the volume tests draw about 800,000
    _INTEGERS: dict[tuple[int, int], st.SearchStrategy[int]] = {}

    def __init__(self, draw: Callable):
        self.draw = draw

    def integer(self, lo: int, hi: int) -> int:
        strategy = self._INTEGERS.get((lo, hi))
        if strategy is None:
            strategy = self._INTEGERS[(lo, hi)] = st.integers(lo, hi)
        return self.draw(strategy)


def _generate(src: _Source, shape: ConsumerShape) -> dict[str, Any]:
    # ---- topics, some with replica racks
    n_topics = src.integer(1, shape.max_topics)
    topics: dict[str, Any] = {}
    for j in range(n_topics):
        n = src.integer(1, shape.max_partitions)
        spec: dict[str, Any] = {"partitions": n}
        if shape.racks and src.chance(50):
            spec["racks"] = [src.subset(RACKS, 45) for _ in range(n)]
        topics[f"t{j}"] = spec
    names = list(topics)

    # ---- members and subscriptions
    n_members = src.integer(shape.min_members, shape.max_members)
    equal = shape.equal_subscriptions if shape.equal_subscriptions is not None else src.chance(30)
    common = src.subset(names, 60) or [names[0]]
    if src.chance(15):
        common.append("gone")  # subscribed, but the topic does not exist
    members: list[dict[str, Any]] = []
    for i in range(n_members):
        m: dict[str, Any] = {"id": f"m{i}"}
        if equal:
            m["subscription"] = list(common)
        else:
            subs = [] if src.chance(10) else src.subset(names, 55)
            if src.chance(10):
                subs.append("gone")
            m["subscription"] = subs
        if shape.racks and src.chance(60):
            m["rack"] = src.choice(RACKS)
        if src.chance(15):
            m["instance_id"] = f"static-{src.integer(0, 9)}-{i}"
        members.append(m)

    # ---- previous ownership: an earlier assignment, then conflicts and stale claims
    if shape.claims and members:
        owned: list[dict[str, list[int]]] = [{} for _ in members]
        for t in names:
            for p in range(topics[t]["partitions"]):
                if src.chance(75):
                    owned[src.integer(0, n_members - 1)].setdefault(t, []).append(p)
                if src.chance(12):  # a second claim on the same partition
                    owned[src.integer(0, n_members - 1)].setdefault(t, []).append(p)
        if shape.stale:
            for i in range(n_members):
                if src.chance(10):
                    owned[i].setdefault("deleted", []).append(src.integer(0, 3))
                if src.chance(10):
                    t = src.choice(names)
                    owned[i].setdefault(t, []).append(topics[t]["partitions"] + src.integer(0, 2))
        for i, m in enumerate(members):
            if owned[i]:
                m["owned"] = {t: sorted(set(ps)) for t, ps in owned[i].items()}
            if owned[i] or src.chance(30):
                if src.chance(85):
                    m["generation"] = src.integer(0, 3)

    doc: dict[str, Any] = {"format": "stickyflow.snapshot/1", "kind": "consumer", "topics": topics,
                           "members": members}
    protocol = shape.protocol or ("cooperative" if src.chance(30) else "eager")
    doc["protocol"] = protocol
    if src.chance(20):
        doc["now_ms"] = src.integer(1, 10**6)
    if shape.vary_costs and src.chance(40):
        config: dict[str, Any] = {"traffic_cost": src.integer(0, 12), "non_overlap_cost": src.integer(0, 3)}
        if src.chance(40):
            config["rack_aware"] = src.chance(50)
        doc["config"] = config
    if shape.loads:
        _add_loads(src, doc)
    return doc


def _add_loads(src: _Source, doc: dict[str, Any]) -> None:
    """Rates on every topic (a few hot, some zero), capacities (none, a default, or every member's own, some
    with a default too), and ``"balance"`` "load" (mostly) or "count"."""
    for spec in doc["topics"].values():
        spec["rates"] = [src.choice((0, 1, 1, 2, 3, 5, 8, 40)) * (0.5 if src.chance(20) else 1)
                         for _ in range(spec["partitions"])]
    config = doc.setdefault("config", {})
    config["balance"] = "count" if src.chance(25) else "load"
    how = src.integer(0, 3)  # 0: no capacity anywhere; 1: a default; 2: every member's own; 3: some own, a default
    if how in (1, 3):
        config["capacity"] = src.choice((4, 10, 25, 0.5))
    for m in doc["members"]:
        if how == 2 or how == 3 and src.chance(50):
            m["capacity"] = src.choice((4, 10, 25, 2.5))
    if src.chance(30):
        config["load_slack"] = src.choice((0, 0.05, 0.2, 1))


# --------------------------------------------------------------------------- hypothesis

@st.composite
def consumer_docs(draw, shape: ConsumerShape | None = None, **kw) -> dict[str, Any]:
    """Snapshot JSON documents (dicts) of consumer groups; ``kw`` overrides :class:`ConsumerShape` fields."""
    shape = shape or ConsumerShape(**kw)
    return _generate(_Hypothesis(draw), shape)


def consumer_snapshots(shape: ConsumerShape | None = None, **kw) -> st.SearchStrategy[ConsumerSnapshot]:
    """Parsed :class:`ConsumerSnapshot` objects; ``kw`` overrides :class:`ConsumerShape` fields."""
    return consumer_docs(shape, **kw).map(stickyflow.parse_snapshot)


# --------------------------------------------------------------------------- seeded random

def random_consumer_doc(seed: int | random.Random, shape: ConsumerShape | None = None, **kw) -> dict[str, Any]:
    """One snapshot document from ``random.Random(seed)`` (or the given ``Random``)."""
    rng = seed if isinstance(seed, random.Random) else random.Random(seed)
    return _generate(_Random(rng), shape or ConsumerShape(**kw))


def random_consumer_snapshot(seed: int | random.Random, shape: ConsumerShape | None = None, **kw
                             ) -> ConsumerSnapshot:
    """One parsed snapshot from ``random.Random(seed)``."""
    return stickyflow.parse_snapshot(random_consumer_doc(seed, shape, **kw))


def with_and_without(doc: dict[str, Any], monkeypatch, switch: str):
    """``optimal`` on ``doc`` as shipped, then with the consumer flow's shortcut ``switch`` (a module flag such
    as ``"_FAST_PATH"``, on the module that reads it) turned off: the pair of results a shortcut is held against."""
    from stickyflow.formulations.consumer import flow as consumer_flow, warm_start

    shipped = stickyflow.assign(doc)
    with monkeypatch.context() as mp:
        mp.setattr(consumer_flow if hasattr(consumer_flow, switch) else warm_start, switch, False)
        reference = stickyflow.assign(doc)
    return shipped, reference
