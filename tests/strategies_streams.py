"""Messy snapshots for property tests at volume: Kafka Streams applications, and consumer groups from the generators.

Both kinds start from the dataset generators (:mod:`stickyflow.datasets.generators`,
every scenario, small sizes) and then add what real group states carry and
the generators keep out (each with a modest probability, so most examples
stay realistic and every feature still turns up hundreds of times per run):

streams (:func:`streams_docs`, :func:`random_streams_doc`)
    no tasks, no clients, one client; more standbys than clients; clients
    without racks or tags next to clients with them, partitions without
    racks or with empty rack lists; stale and contradictory claims (unknown
    task ids, one task active on two clients, a task both active and standby
    on one client, duplicates, lags for unknown or stateless tasks, ``-2`` for
    a task the client did not run); huge lags and end offsets (up to 2^63 - 1)
    and an acceptable recovery lag of 0 or near 2^63; sparse subtopology and
    partition numbers; every config key (strategies, learner mode, tags that
    no client carries, costs of 0 or null); unicode and odd process ids,
    topics, racks and tag values.
consumer (:func:`messy_consumer_docs`, :func:`random_messy_consumer_doc`)
    a generator scenario or a :mod:`tests.strategies` group, then unicode and
    odd topic names (empty, dots, quotes, emoji, right-to-left, JSON-looking)
    and member ids, topics nobody reads, members with no subscription or a
    repeated one, racks missing on some members or partitions, stale and
    contradictory claims, huge generations and ``now_ms``, one member, none.

Everything here is valid input: the property is that every assignor returns a
valid result for it. Shapes are small (a few tasks / partitions) so thousands
of examples run in a minute.

>>> from hypothesis import given, settings
>>> @settings(max_examples=5, database=None)
... @given(streams_docs())
... def test(doc):
...     assert doc["kind"] == "streams" and len(doc["clients"]) <= StreamsShape().max_clients + 1
>>> test()
>>> random_streams_doc(3)["format"]
'stickyflow.snapshot/1'
>>> random_messy_consumer_doc(4)["kind"]
'consumer'
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from stickyflow.datasets.generators import SCENARIOS, consumer_snapshot, streams_snapshot
from tests.strategies import ConsumerShape, _generate, _Hypothesis, _Random, _Source

__all__ = [
    "StreamsShape",
    "ODD_NAMES",
    "streams_docs",
    "random_streams_doc",
    "MessyConsumerShape",
    "messy_consumer_docs",
    "random_messy_consumer_doc",
]

INT64_MAX = 2**63 - 1

# names that break naive code: empty, separators, quotes and escapes, non-ASCII of every width, JSON look-alikes
ODD_NAMES = (
    "", " ", "a.b", "a-b_c", "with space", "tab\tname", "new\nline", 'quote"d', "back\\slash", "slash/ed",
    "ünïcödé", "名前", "Ελληνικά", "עברית", "🙂", "e\u0301", "\u200b", "null", "0", "-1", "1_0", "{}", "[]",
    "__consumer_offsets", "x" * 249, "$.a['b']",
)


def _odd_name(src: _Source, used: set[str], plain: str) -> str:
    """An odd name not in ``used`` (``plain`` with an odd suffix when the odd ones are taken)."""
    name = src.choice(ODD_NAMES)
    if name in used:
        name = f"{plain}{src.choice(ODD_NAMES)}"
    while name in used:
        name += "'"
    used.add(name)
    return name


# --------------------------------------------------------------------------- Kafka Streams

@dataclass(frozen=True, slots=True, kw_only=True)
class StreamsShape:
    """Bounds and switches of the streams generator (every feature on by default)."""

    max_tasks: int = 8
    max_clients: int = 4
    max_subtopologies: int = 3
    max_threads: int = 3
    empty: bool = True        # no tasks / no clients now and then
    racks: bool = True
    claims: bool = True       # stale and contradictory previous tasks and lags
    huge: bool = True         # lags, end offsets and the acceptable lag near 2^63
    odd_names: bool = True
    vary_config: bool = True


def _generate_streams(src: _Source, shape: StreamsShape) -> dict[str, Any]:
    # ---- a generator scenario, small
    scenario = src.choice(SCENARIOS)
    subtopologies = src.integer(1, shape.max_subtopologies)
    tasks = src.integer(subtopologies, max(subtopologies, shape.max_tasks))
    clients = src.integer(1, shape.max_clients)
    racks = None
    if scenario == "rack_outage":
        racks = src.integer(2, 3)
        clients = max(clients, 1)
    elif shape.racks and src.chance(40):
        racks = src.integer(1, 3)
    threads: int | tuple[int, ...] = 1
    if shape.max_threads > 1 and src.chance(40):
        threads = tuple(range(1, shape.max_threads + 1))
    doc = streams_snapshot(
        scenario, tasks=tasks, clients=clients, subtopologies=subtopologies, seed=src.integer(0, 2**16),
        threads=threads, racks=racks, replication=src.integer(1, 2),
        num_standby_replicas=src.integer(0, 2) if src.chance(60) else None,
        stateful_fraction=src.choice((0.0, 0.5, 0.5, 1.0)), churn=src.integer(0, 2) if src.chance(50) else None,
        acceptable_recovery_lag=src.choice((0, 100, 10000, 10000)), now_ms=src.choice((0, 1, 1_700_000_000_000)))
    task_list: list[dict[str, Any]] = doc["tasks"]
    client_list: list[dict[str, Any]] = doc["clients"]
    config: dict[str, Any] = doc["config"]

    # ---- empty applications
    if shape.empty and src.chance(4):
        task_list.clear()
        for c in client_list:
            c.pop("lags", None)
    if shape.empty and src.chance(4):
        client_list.clear()

    # ---- sparse TaskIds: subtopology and partition numbers with gaps (renamed everywhere)
    if task_list and src.chance(25):
        sub_shift = src.choice((1, 3, 17))
        part_step = src.choice((1, 2, 5))
        rename = {}
        for t in task_list:
            s, p = (int(x) for x in t["id"].split("_"))
            rename[t["id"]] = f"{s * sub_shift}_{p * part_step}"
        _rename_tasks(doc, rename)

    # ---- racks and tags missing on some clients, rack lists missing or empty on some partitions
    if shape.racks:
        for c in client_list:
            if "rack" in c and src.chance(20):
                del c["rack"]
            if "tags" in c and src.chance(20):
                del c["tags"]
            if "rack" not in c and not racks and src.chance(10):
                c["rack"] = src.choice(("r1", "r2"))
        for t in task_list:
            for p in t.get("input_partitions", []) + t.get("changelog_partitions", []):
                if "racks" in p and src.chance(10):
                    if src.chance(50):
                        p["racks"] = []  # known to be nowhere
                    else:
                        del p["racks"]  # unknown

    ids = [t["id"] for t in task_list]
    stateful_ids = [t["id"] for t in task_list if t["stateful"]]

    # ---- stale and contradictory claims
    if shape.claims and client_list:
        for c in client_list:
            if src.chance(10):
                c["previous_active"].append(f"{src.integer(20, 99)}_{src.integer(0, 3)}")  # a task that is gone
            if src.chance(10):
                c["previous_standby"].append(f"{src.integer(20, 99)}_0")
            if ids and src.chance(10):  # active elsewhere too: two clients claim one task
                c["previous_active"].append(src.choice(ids))
            if c["previous_active"] and src.chance(8):  # the same task active and standby on one client
                c["previous_standby"].append(src.choice(c["previous_active"]))
            if c["previous_active"] and src.chance(5):
                c["previous_active"].append(c["previous_active"][0])  # listed twice
            if src.chance(10):
                c.setdefault("lags", {})[f"{src.integer(20, 99)}_1"] = src.integer(0, 50)
            if ids and src.chance(10):  # a lag for any task, stateless ones included
                c.setdefault("lags", {})[src.choice(ids)] = src.integer(0, 20000)
            if stateful_ids and src.chance(5):  # "-2" for a task it was not listed as running
                c.setdefault("lags", {})[src.choice(stateful_ids)] = -2

    # ---- huge numbers (within Kafka's 64-bit longs)
    if shape.huge:
        for t in task_list:
            if t["stateful"] and src.chance(10):
                t["end_offset_sum"] = src.choice((INT64_MAX, 2**62, 10**15))
        for c in client_list:
            for k in list(c.get("lags", {})):
                if c["lags"][k] >= 0 and src.chance(10):
                    c["lags"][k] = src.choice((INT64_MAX, 2**62, 10**12))
        if src.chance(5):
            config["acceptable_recovery_lag"] = src.choice((INT64_MAX, 2**62))
        if src.chance(3):
            doc["now_ms"] = 2**62

    # ---- configuration: every key, edge values
    if shape.vary_config:
        if src.chance(30):
            config["num_standby_replicas"] = src.integer(0, len(client_list) + 2)  # more standbys than clients
        if src.chance(20):
            config["max_warmup_replicas"] = src.integer(1, 3)
        if src.chance(20):
            config["balance_factor"] = src.integer(1, 3)
        if src.chance(30):
            config["rack_aware_assignment_strategy"] = src.choice(("none", "min_traffic", "balance_subtopology"))
        if src.chance(20):
            config["rack_aware_assignment_traffic_cost"] = src.choice((None, 0, 1, 10, 12))
        if src.chance(20):
            config["rack_aware_assignment_non_overlap_cost"] = src.choice((None, 0, 1, 3))
        if src.chance(20):
            config["rack_aware_assignment_tags"] = src.choice((["zone"], ["zone", "missing"], ["missing"], []))
        if src.chance(15):
            config["rebalancing_mode"] = "learner"
        if src.chance(10):
            config["probing_rebalance_interval_ms"] = src.choice((60000, 10**9))
        if client_list and src.chance(15):  # tags on some clients only
            c = src.choice(client_list)
            c.setdefault("tags", {})["zone"] = src.choice(("z1", "z2"))

    # ---- unicode and odd names: process ids, topics, racks, tag values
    if shape.odd_names and src.chance(30):
        used: set[str] = set()
        for c in client_list:
            if src.chance(60):
                c["process_id"] = _odd_name(src, used, c["process_id"])
            else:
                used.add(c["process_id"])
        topic_map: dict[str, str] = {}
        rack_map: dict[str, str] = {}
        topic_names: set[str] = set()
        rack_names: set[str] = set()
        for t in task_list:
            for p in t.get("input_partitions", []) + t.get("changelog_partitions", []):
                if p["topic"] not in topic_map:
                    topic_map[p["topic"]] = _odd_name(src, topic_names, p["topic"])
                p["topic"] = topic_map[p["topic"]]
                if "racks" in p:
                    p["racks"] = [rack_map.setdefault(r, _odd_name(src, rack_names, r)) for r in p["racks"]]
        for c in client_list:
            if "rack" in c:
                c["rack"] = rack_map.setdefault(c["rack"], _odd_name(src, rack_names, c["rack"]))
            if "tags" in c:
                c["tags"] = {k: rack_map.setdefault(v, _odd_name(src, rack_names, v)) for k, v in c["tags"].items()}
        if src.chance(50):
            doc["id"] = src.choice(ODD_NAMES)
    return doc


def _rename_tasks(doc: dict[str, Any], rename: dict[str, str]) -> None:
    for t in doc["tasks"]:
        t["id"] = rename[t["id"]]
    for c in doc["clients"]:
        c["previous_active"] = [rename.get(x, x) for x in c["previous_active"]]
        c["previous_standby"] = [rename.get(x, x) for x in c["previous_standby"]]
        if "lags" in c:
            c["lags"] = {rename.get(k, k): v for k, v in c["lags"].items()}


@st.composite
def streams_docs(draw, shape: StreamsShape | None = None, **kw) -> dict[str, Any]:
    """Streams snapshot documents (dicts); ``kw`` overrides :class:`StreamsShape` fields."""
    return _generate_streams(_Hypothesis(draw), shape or StreamsShape(**kw))


def random_streams_doc(seed: int | random.Random, shape: StreamsShape | None = None, **kw) -> dict[str, Any]:
    """One streams snapshot document from ``random.Random(seed)``."""
    rng = seed if isinstance(seed, random.Random) else random.Random(seed)
    return _generate_streams(_Random(rng), shape or StreamsShape(**kw))


# --------------------------------------------------------------------------- consumer groups

@dataclass(frozen=True, slots=True, kw_only=True)
class MessyConsumerShape:
    """Bounds of the messy consumer generator."""

    max_partitions: int = 12
    max_members: int = 5
    max_topics: int = 3
    odd_names: bool = True
    claims: bool = True
    huge: bool = True


def _generate_consumer(src: _Source, shape: MessyConsumerShape) -> dict[str, Any]:
    # ---- a base group: a generator scenario, or the structural generator of tests/strategies.py
    if src.chance(50):
        scenario = src.choice(SCENARIOS)
        topics = src.integer(1, shape.max_topics)
        members = src.integer(1, shape.max_members)
        racks = src.integer(2, 3) if scenario == "rack_outage" else (src.integer(1, 3) if src.chance(40) else 0)
        doc = consumer_snapshot(
            scenario, partitions=src.integer(topics, max(topics, shape.max_partitions)), members=members,
            topics=topics, seed=src.integer(0, 2**16), racks=racks, churn=src.integer(0, 2) if src.chance(50) else None,
            protocol=src.choice(("eager", "cooperative")))
        if src.chance(30):
            doc["config"] = {"traffic_cost": src.integer(0, 12), "non_overlap_cost": src.integer(0, 3)}
    else:
        doc = _generate(src, ConsumerShape(max_topics=shape.max_topics, max_partitions=max(1, shape.max_partitions // 2),
                                           min_members=1, max_members=shape.max_members))
    topics_json: dict[str, Any] = doc["topics"]
    member_list: list[dict[str, Any]] = doc["members"]
    names = list(topics_json)

    # ---- topics nobody reads, members with no or repeated subscriptions, racks missing here and there
    if src.chance(20):
        topics_json["unread"] = {"partitions": src.integer(1, 3)}
    for m in member_list:
        if src.chance(8):
            m["subscription"] = []
        elif m["subscription"] and src.chance(5):
            m["subscription"] = m["subscription"] + [m["subscription"][0]]
        if "rack" in m and src.chance(15):
            del m["rack"]
    for spec in topics_json.values():
        if "racks" in spec and src.chance(10):
            spec["racks"][0] = []

    # ---- stale and contradictory claims
    if shape.claims and member_list:
        for m in member_list:
            if src.chance(10):
                m.setdefault("owned", {}).setdefault("deleted-topic", []).append(src.integer(0, 5))
            if src.chance(10):
                t = src.choice(names)
                m.setdefault("owned", {}).setdefault(t, []).append(topics_json[t]["partitions"] + src.integer(0, 3))
            if src.chance(10):  # the same claims as another member, at the same generation: nobody wins
                other = src.choice(member_list)
                if other is not m and other.get("owned"):
                    m["owned"] = {t: list(p) for t, p in other["owned"].items()}
                    if "generation" in other:
                        m["generation"] = other["generation"]
            if m.get("owned") and src.chance(5):
                m.pop("generation", None)  # claims of an unknown generation
        for m in member_list:
            if "owned" in m:
                m["owned"] = {t: sorted(set(p)) for t, p in m["owned"].items()}

    # ---- huge numbers (Kafka's generation is an int32, now_ms a long)
    if shape.huge:
        for m in member_list:
            if "generation" in m and src.chance(5):
                m["generation"] = 2**31 - 1
        if src.chance(5):
            doc["now_ms"] = 2**62

    # ---- one member, or none
    if member_list and src.chance(5):
        del member_list[1:]
    if src.chance(3):
        member_list.clear()

    # ---- unicode and odd names for topics (everywhere they appear) and members
    if shape.odd_names and src.chance(40):
        used: set[str] = set()
        rename = {t: _odd_name(src, used, t) for t in topics_json}
        doc["topics"] = {rename[t]: spec for t, spec in topics_json.items()}
        for m in member_list:
            m["subscription"] = [rename.get(t, t) for t in m["subscription"]]
            if "owned" in m:
                m["owned"] = {rename.get(t, t): p for t, p in m["owned"].items()}
        ids: set[str] = set()
        for m in member_list:
            m["id"] = _odd_name(src, ids, m["id"]) if src.chance(60) else m["id"]
            ids.add(m["id"])
            if "instance_id" in m and src.chance(50):
                m["instance_id"] = src.choice(ODD_NAMES) + m["instance_id"]
        if len(ids) < len(member_list):  # an odd id met a plain one: keep them unique
            for i, m in enumerate(member_list):
                m["id"] = f"{m['id']}#{i}"
    return doc


@st.composite
def messy_consumer_docs(draw, shape: MessyConsumerShape | None = None, **kw) -> dict[str, Any]:
    """Consumer snapshot documents (dicts); ``kw`` overrides :class:`MessyConsumerShape` fields."""
    return _generate_consumer(_Hypothesis(draw), shape or MessyConsumerShape(**kw))


def random_messy_consumer_doc(seed: int | random.Random, shape: MessyConsumerShape | None = None, **kw
                              ) -> dict[str, Any]:
    """One messy consumer snapshot document from ``random.Random(seed)``."""
    rng = seed if isinstance(seed, random.Random) else random.Random(seed)
    return _generate_consumer(_Random(rng), shape or MessyConsumerShape(**kw))
