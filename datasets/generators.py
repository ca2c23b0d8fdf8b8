"""Seeded scenario generators: consumer-group and Kafka Streams snapshots as the spec's JSON dicts.

Every generator takes a ``seed`` and is deterministic (one ``numpy.random.Generator``
per call, no global state), and builds its arrays with numpy, so that a group of
1,000,000 partitions x 2,000 members takes about a second. The output is a plain
dict of the snapshot JSON (``snapshot-format.md``), which
:func:`stickyflow.parse_snapshot` reads; nothing here depends on the model classes.

Scenarios (the same names for both kinds):

``fresh``
    a new group: nobody owned anything.
``steady``
    everyone owned a balanced assignment in the last generation and nothing changed.
``scale_out``
    ``churn`` new members (clients) join a balanced group; they own nothing.
``scale_in``
    ``churn`` members left: what they owned has no owner now.
``rolling_restart``
    consumers: static members (``instance_id``); ``churn`` of them were restarted.
    While they were away the others took their partitions over at the next
    generation, and the restarted ones come back claiming their old partitions
    at the older generation (KIP-341 conflicts the newer claim wins).
    Streams: ``churn`` clients restarted: they ran nothing in the last
    generation but report the (lagging) local state they kept on disk.
``rack_outage``
    the members (clients) of one rack are gone; racks are on (3 unless given).
``lag_skew``
    streams: local state whose lag varies over orders of magnitude between
    clients, so that some are caught up and many are not (standbys on).
    Consumers have no lag in the format: the consumer twin is a previous
    assignment skewed the same way (Zipf-distributed loads) that must be evened out.
``mixed``
    consumers: mixed subscriptions (each member reads a random subset of the
    topics, one or two new members join). Streams: clients of 1 to 8 threads,
    stateful and stateless subtopologies, standbys, one new client.
``uniform``
    a large uniform group: equal subscriptions (one thread per client), a
    balanced previous assignment, ``churn`` members replaced by new ones.

>>> doc = consumer_snapshot("scale_out", partitions=12, members=4, topics=2, seed=1)
>>> [len(m.get("owned", {})) > 0 for m in doc["members"]]
[True, True, True, False]
>>> import stickyflow
>>> stickyflow.parse_snapshot(doc).kind
'consumer'
>>> s = streams_snapshot("scale_in", tasks=8, clients=3, seed=2)
>>> len(s["clients"]), len(s["tasks"])
(3, 8)
"""

from __future__ import annotations

import itertools
from typing import Any, Mapping, Sequence

import numpy as np

__all__ = [
    "SNAPSHOT_FORMAT",
    "SCENARIOS",
    "consumer_snapshot",
    "streams_snapshot",
    "snapshot",
]

SNAPSHOT_FORMAT = "stickyflow.snapshot/1"
SCENARIOS = ("fresh", "steady", "scale_out", "scale_in", "rolling_restart", "rack_outage", "lag_skew", "mixed",
             "uniform")
_ALIASES = {"mixed_subscriptions": "mixed", "large_uniform": "uniform"}
_GENERATION = 7  # the generation of a "last generation" claim; any positive number works


def _scenario(name: str) -> str:
    name = _ALIASES.get(name, name)
    if name not in SCENARIOS:
        raise ValueError(f"scenario: {name!r} is not one of {', '.join(SCENARIOS)}")
    return name


def _positive(name: str, value: int, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name}: must be an integer >= {minimum}, not {value!r}")
    return int(value)


def _rack_names(n: int) -> list[str]:
    return [f"rack-{i}" for i in range(n)]


def _replica_racks(rng: np.random.Generator, count: int, racks: int, replication: int) -> list[list[str]]:
    """``count`` lists of ``replication`` distinct racks, drawn uniformly (shared list objects, cheap at 1M)."""
    names = _rack_names(racks)
    rf = max(1, min(replication, racks))
    combos = [sorted(c) for c in itertools.combinations(names, rf)]
    pick = rng.integers(0, len(combos), size=count)
    return [combos[i] for i in pick.tolist()]


def _balanced_owner(rng: np.random.Generator, count: int, owners: np.ndarray) -> np.ndarray:
    """Each of ``count`` items gets one of ``owners``, loads differing by at most one, at random."""
    out = np.empty(count, dtype=np.int64)
    if count == 0:
        return out
    if len(owners) == 0:
        out.fill(-1)
        return out
    slots = owners[np.arange(count) % len(owners)]
    out[rng.permutation(count)] = slots
    return out


def _weighted_owner(rng: np.random.Generator, count: int, owners: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Loads proportional to ``weights`` (largest remainders), items shuffled."""
    w = np.asarray(weights, dtype=float)
    share = w / w.sum() * count
    base = np.floor(share).astype(np.int64)
    rest = count - int(base.sum())
    if rest:
        base[np.argsort(-(share - base), kind="stable")[:rest]] += 1
    slots = np.repeat(owners, base)
    out = np.empty(count, dtype=np.int64)
    out[rng.permutation(count)] = slots
    return out


def _split(total: int, parts: int, rng: np.random.Generator) -> np.ndarray:
    """``parts`` sizes >= 1 summing to ``total`` (a multinomial spread around the mean)."""
    if parts > total:
        raise ValueError(f"partitions: {total} is fewer than one per topic ({parts} topics)")
    return rng.multinomial(total - parts, np.full(parts, 1.0 / parts)) + 1


def _group_lists(owner: np.ndarray, item_group: np.ndarray, item_local: np.ndarray,
                 n_groups: int) -> dict[int, dict[int, list[int]]]:
    """owner index -> group index -> sorted local numbers, from three parallel arrays (one sort, no per-item loop)."""
    keep = owner >= 0
    owner, item_group, item_local = owner[keep], item_group[keep], item_local[keep]
    if not len(owner):
        return {}
    key = owner * n_groups + item_group
    order = np.lexsort((item_local, key))
    key, local = key[order], item_local[order]
    cuts = np.flatnonzero(np.diff(key)) + 1
    starts = np.concatenate(([0], cuts))
    out: dict[int, dict[int, list[int]]] = {}
    for start, chunk in zip(starts.tolist(), np.split(local, cuts)):
        k = int(key[start])
        out.setdefault(k // n_groups, {})[k % n_groups] = chunk.tolist()
    return out


# --------------------------------------------------------------------------- consumer groups

def _racks_and_churn(scenario: str, racks: int | None, churn: int | None, members: int) -> tuple[int, int]:
    """The rack count (3 for a rack outage unless given, else none) and the churn (a tenth of the members)."""
    if racks is None:
        racks = 3 if scenario == "rack_outage" else 0
    racks = _positive("racks", racks, 0)
    if scenario == "rack_outage" and racks < 2:
        raise ValueError("racks: rack_outage needs at least 2 racks")
    churn = max(1, members // 10) if churn is None else _positive("churn", churn, 0)
    return racks, churn


def consumer_snapshot(scenario: str = "steady", *, partitions: int = 24, members: int = 4, topics: int = 2,
                      seed: int = 0, racks: int | None = None, replication: int = 2, churn: int | None = None,
                      protocol: str = "eager", id: str | None = None, now_ms: int = 0,
                      config: Mapping[str, Any] | None = None, conflicts: int = 0, rates: Any = None,
                      rate_options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A consumer-group snapshot (spec JSON dict) of ``scenario`` (see the module docstring).

    Parameters
    ----------
    partitions, topics:
        Total partitions, spread over ``topics`` topics (at least one each).
    members:
        Members in the snapshot, after the scenario's event.
    racks:
        Number of racks (members in round-robin, each partition on ``replication``
        random racks); ``None``: none, except 3 for ``rack_outage``.
    churn:
        How many members join, leave or restart (default: a tenth, at least one).
    protocol, id, now_ms, config:
        Copied into the snapshot (``config`` as the spec's consumer ``config`` object).
    conflicts:
        KIP-341 conflicts to add: that many partitions already claimed by one member
        are claimed by a second present member too, at that member's generation
        (equal generations: no claim wins; otherwise the newer one does). Drawn
        from a separate seeded stream, so ``conflicts=0`` changes nothing.
    rates, rate_options:
        A load snapshot (``"balance": "load"``): ``rates`` names a shape of
        :mod:`stickyflow.datasets.rates` (``uniform``, ``lognormal``, ``zipf``,
        ``hot_topic``) or maps every topic to its rates; ``rate_options`` go to
        :func:`~stickyflow.datasets.rates.with_rates` (``capacity``, ``load_slack``,
        ``sigma``, ``exponent``, ``factor``, ...). Drawn from a separate seeded stream,
        so the groups are those of the count snapshot.

    >>> d = consumer_snapshot("rack_outage", partitions=30, members=6, seed=3)
    >>> sorted({m["rack"] for m in d["members"]})
    ['rack-1', 'rack-2']
    >>> hot = consumer_snapshot("steady", partitions=6, members=2, topics=2, rates="hot_topic",
    ...                         rate_options={"factor": 10, "spread": 0, "capacity": 40})
    >>> [t["rates"] for t in hot["topics"].values()], hot["config"]
    ([[10.0, 10.0, 10.0], [1.0, 1.0, 1.0]], {'balance': 'load', 'capacity': 40})
    """
    scenario = _scenario(scenario)
    partitions = _positive("partitions", partitions)
    topics = _positive("topics", topics)
    members = _positive("members", members, 0)
    if protocol not in ("eager", "cooperative"):
        raise ValueError(f'protocol: must be "eager" or "cooperative", not {protocol!r}')
    rng = np.random.default_rng([seed, 0x5C0])
    racks, churn = _racks_and_churn(scenario, racks, churn, members)

    sizes = _split(partitions, topics, rng)
    topic_names = [f"topic-{i:0{max(2, len(str(topics - 1)))}d}" for i in range(topics)]
    topic_of = np.repeat(np.arange(topics), sizes)
    local = np.arange(partitions) - np.repeat(np.cumsum(sizes) - sizes, sizes)

    # the previous group: which members existed before the event, and who is in the snapshot
    if scenario == "scale_in":
        n_prev = members + churn
    elif scenario == "rack_outage":
        # members sit in racks round-robin; rack-0 (every racks-th member) is lost
        n_prev = members
        while n_prev - len(range(0, n_prev, racks)) < members:
            n_prev += 1
    elif scenario == "scale_out":
        n_prev = max(0, members - churn)
    elif scenario == "uniform":
        n_prev = members  # churn of them are replaced below
    elif scenario == "mixed":
        n_prev = max(0, members - min(churn, 2))
    else:
        n_prev = members
    prev_racks = [f"rack-{i % racks}" for i in range(n_prev)] if racks else [None] * n_prev
    width = max(4, len(str(n_prev + members)))
    prev_ids = [f"consumer-{i:0{width}d}" for i in range(n_prev)]

    # subscriptions of the previous members
    if scenario == "mixed":
        subs_prev = [_random_subset(rng, topics) for _ in range(n_prev)]
    else:
        subs_prev = [list(range(topics))] * n_prev

    # the previous assignment, generation _GENERATION
    owner = np.full(partitions, -1, dtype=np.int64)
    if scenario != "fresh" and n_prev:
        if scenario == "lag_skew":
            weights = 1.0 / np.arange(1, n_prev + 1) ** 1.2
            owner = _weighted_owner(rng, partitions, rng.permutation(n_prev), weights)
        elif scenario == "mixed":
            for t in range(topics):
                subs_t = np.array([i for i in range(n_prev) if t in subs_prev[i]], dtype=np.int64)
                mask = topic_of == t
                owner[mask] = _balanced_owner(rng, int(mask.sum()), subs_t)
        else:
            owner = _balanced_owner(rng, partitions, np.arange(n_prev))
    claims = _group_lists(owner, topic_of, local, topics)
    generation = {i: _GENERATION for i in range(n_prev)}

    # the event
    present = list(range(n_prev))
    new_members: list[dict[str, Any]] = []
    stale: dict[int, dict[int, list[int]]] = {}
    next_id = n_prev
    if scenario == "scale_in":
        gone = set(rng.choice(n_prev, size=churn, replace=False).tolist())
        present = [i for i in present if i not in gone]
    elif scenario == "rack_outage":
        present = [i for i in present if prev_racks[i] != "rack-0"]
    elif scenario == "rolling_restart":
        k = min(churn, max(0, n_prev - 1))
        restarted = np.sort(rng.choice(n_prev, size=k, replace=False)) if k else np.array([], dtype=np.int64)
        if len(restarted):
            # the interim rebalance: the others took the restarted members' partitions, at the next generation
            others = np.setdiff1d(np.arange(n_prev), restarted)
            lost = np.isin(owner, restarted)
            interim = owner.copy()
            interim[lost] = _balanced_owner(rng, int(lost.sum()), others)
            stale = {int(i): claims.get(int(i), {}) for i in restarted}
            claims = _group_lists(interim, topic_of, local, topics)
            for i in others.tolist():
                generation[i] = _GENERATION + 1
            for i in restarted.tolist():
                claims[i] = stale[i]
    elif scenario == "uniform":
        k = min(churn, n_prev)
        gone = set(rng.choice(n_prev, size=k, replace=False).tolist()) if k else set()
        present = [i for i in present if i not in gone]
        for _ in range(len(gone)):
            new_members.append({"id": f"consumer-{next_id:0{width}d}", "subscription": topic_names[:]})
            if racks:
                new_members[-1]["rack"] = f"rack-{next_id % racks}"
            next_id += 1
    while len(present) + len(new_members) < members:  # newcomers (scale_out, mixed, fresh)
        subs = _random_subset(rng, topics) if scenario == "mixed" else list(range(topics))
        m = {"id": f"consumer-{next_id:0{width}d}", "subscription": [topic_names[t] for t in subs]}
        if racks:
            m["rack"] = f"rack-{next_id % racks}"
        new_members.append(m)
        next_id += 1

    out_members: list[dict[str, Any]] = []
    for i in present:
        m: dict[str, Any] = {"id": prev_ids[i], "subscription": [topic_names[t] for t in subs_prev[i]]}
        if prev_racks[i] is not None:
            m["rack"] = prev_racks[i]
        owned = claims.get(i)
        if owned:
            m["generation"] = generation[i]
            m["owned"] = {topic_names[t]: parts for t, parts in sorted(owned.items())}
        if scenario == "rolling_restart":
            m["instance_id"] = f"instance-{i:0{width}d}"
        out_members.append(m)
    out_members.extend(new_members)

    topics_json: dict[str, Any] = {}
    rack_lists = _replica_racks(rng, partitions, racks, replication) if racks else None
    starts = np.cumsum(sizes) - sizes
    for t, name in enumerate(topic_names):
        spec: dict[str, Any] = {"partitions": int(sizes[t])}
        if rack_lists is not None:
            spec["racks"] = rack_lists[int(starts[t]):int(starts[t] + sizes[t])]
        topics_json[name] = spec

    doc: dict[str, Any] = {"format": SNAPSHOT_FORMAT, "kind": "consumer"}
    doc["id"] = id if id is not None else f"consumer/{scenario}/p{partitions}-m{members}-s{seed}"
    if now_ms:
        doc["now_ms"] = int(now_ms)
    doc["protocol"] = protocol
    doc["topics"] = topics_json
    doc["members"] = out_members
    if config:
        doc["config"] = dict(config)
    if conflicts:
        _add_conflicts(np.random.default_rng([seed, 0xC0F]), out_members, _positive("conflicts", conflicts, 0))
    if rates is not None:
        from .rates import with_rates

        doc = with_rates(doc, rates, seed=[seed, 0x7A7E], **dict(rate_options or {}))
    return doc


def _add_conflicts(rng: np.random.Generator, members: list[dict[str, Any]], k: int) -> None:
    """Copy ``k`` claims of one member into another present member's ``owned`` (KIP-341 double claims)."""
    claimants = [i for i, m in enumerate(members) if m.get("owned")]
    if len(claimants) < 1 or len(members) < 2:
        return
    for _ in range(k):
        a = claimants[int(rng.integers(0, len(claimants)))]
        b = int(rng.integers(0, len(members) - 1))
        b += b >= a
        topic = sorted(members[a]["owned"])[int(rng.integers(0, len(members[a]["owned"])))]
        parts = members[a]["owned"][topic]
        p = parts[int(rng.integers(0, len(parts)))]
        mb = members[b]
        if topic not in mb["subscription"]:
            continue  # a claim on a topic it no longer reads is stale, not a conflict
        owned = mb.setdefault("owned", {})
        if p not in owned.get(topic, []):
            owned[topic] = sorted(owned.get(topic, []) + [p])
            mb.setdefault("generation", members[a].get("generation", _GENERATION) - int(rng.integers(0, 2)))


def _random_subset(rng: np.random.Generator, n: int) -> list[int]:
    """A random non-empty subset of ``range(n)``, small more often than large (1 to 3 topics typically)."""
    k = int(min(n, rng.geometric(0.5)))
    return sorted(rng.choice(n, size=k, replace=False).tolist())


# --------------------------------------------------------------------------- Kafka Streams

def streams_snapshot(scenario: str = "steady", *, tasks: int = 24, clients: int = 4, subtopologies: int = 2,
                     seed: int = 0, threads: int | Sequence[int] | None = None, racks: int | None = None,
                     replication: int = 2, num_standby_replicas: int | None = None,
                     stateful_fraction: float = 0.5, churn: int | None = None, acceptable_recovery_lag: int = 10000,
                     id: str | None = None, now_ms: int = 1_700_000_000_000,
                     config: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A Kafka Streams snapshot (spec JSON dict) of ``scenario`` (see the module docstring).

    Parameters
    ----------
    tasks, subtopologies:
        Total tasks ``"<subtopology>_<partition>"``, spread over the subtopologies.
        ``stateful_fraction`` of the subtopologies (rounded, at least one when > 0)
        are stateful: a changelog partition per task and an end offset sum.
    clients:
        Clients in the snapshot, after the scenario's event.
    threads:
        An int (every client), or a sequence to draw from; default 1, or 1..8 for ``mixed``.
    racks, replication:
        Racks (clients in round-robin with a ``zone`` tag equal to the rack; input and
        changelog partitions on ``replication`` random racks). ``None``: none,
        except 3 for ``rack_outage``. With racks the strategy is ``min_traffic``.
    num_standby_replicas:
        Default 0, or 1 for ``lag_skew``, ``mixed`` and ``rack_outage``.
    churn:
        Clients that join, leave or restart (default: a tenth, at least one).
    config:
        Extra ``config`` keys, overriding the generated ones.

    >>> d = streams_snapshot("lag_skew", tasks=12, clients=4, seed=5)
    >>> d["config"]["num_standby_replicas"], len(d["tasks"])
    (1, 12)
    """
    scenario = _scenario(scenario)
    tasks = _positive("tasks", tasks)
    subtopologies = _positive("subtopologies", subtopologies)
    clients = _positive("clients", clients, 0)
    rng = np.random.default_rng([seed, 0x57E])
    racks, churn = _racks_and_churn(scenario, racks, churn, clients)
    if num_standby_replicas is None:
        num_standby_replicas = 1 if scenario in ("lag_skew", "mixed", "rack_outage") else 0
    if threads is None:
        threads = tuple(range(1, 9)) if scenario == "mixed" else 1
    thread_choices = np.atleast_1d(np.asarray(threads, dtype=np.int64))
    if thread_choices.size == 0 or (thread_choices < 1).any():
        raise ValueError(f"threads: must be integers >= 1, not {threads!r}")

    # the topology
    sizes = _split(tasks, subtopologies, rng)
    sub_of = np.repeat(np.arange(subtopologies), sizes)
    part_of = np.arange(tasks) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    n_stateful_subs = 0 if stateful_fraction <= 0 else max(1, int(round(stateful_fraction * subtopologies)))
    stateful_subs = np.zeros(subtopologies, dtype=bool)
    stateful_subs[rng.permutation(subtopologies)[:n_stateful_subs]] = True
    stateful = stateful_subs[sub_of]
    end_offsets = np.where(stateful, np.round(rng.lognormal(np.log(200_000), 1.0, size=tasks)).astype(np.int64), 0)
    ids = [f"{s}_{p}" for s, p in zip(sub_of.tolist(), part_of.tolist())]
    in_racks = _replica_racks(rng, tasks, racks, replication) if racks else None
    cl_racks = _replica_racks(rng, tasks, racks, replication) if racks else None
    task_json = []
    for t in range(tasks):
        s = int(sub_of[t])
        inp: dict[str, Any] = {"topic": f"input-{s}" if s == 0 else f"app-repartition-{s}", "partition": int(part_of[t])}
        if in_racks is not None:
            inp["racks"] = in_racks[t]
        d: dict[str, Any] = {"id": ids[t], "stateful": bool(stateful[t]), "input_partitions": [inp]}
        if stateful[t]:
            d["end_offset_sum"] = int(end_offsets[t])
            ch: dict[str, Any] = {"topic": f"app-store-{s}-changelog", "partition": int(part_of[t])}
            if cl_racks is not None:
                ch["racks"] = cl_racks[t]
            d["changelog_partitions"] = [ch]
        task_json.append(d)

    # the previous clients
    if scenario == "scale_in":
        n_prev = clients + churn
    elif scenario == "rack_outage":
        n_prev = clients
        while n_prev - len(range(0, n_prev, racks)) < clients:
            n_prev += 1
    elif scenario in ("scale_out", "mixed"):
        n_prev = max(0, clients - (min(churn, 1) if scenario == "mixed" else churn))
    else:
        n_prev = clients
    width = max(4, len(str(n_prev + clients)))
    total = n_prev + clients  # ids are never reused
    thr = rng.choice(thread_choices, size=total) if thread_choices.size > 1 else np.full(total, thread_choices[0])
    rack_of = [f"rack-{i % racks}" if racks else None for i in range(total)]

    active_owner = np.full(tasks, -1, dtype=np.int64)
    standby_pairs: list[tuple[int, int]] = []
    if scenario != "fresh" and n_prev:
        active_owner = _weighted_owner(rng, tasks, np.arange(n_prev), thr[:n_prev])
        k = min(num_standby_replicas, n_prev - 1)
        st = np.flatnonzero(stateful)
        if k > 0 and len(st):
            # k distinct clients other than the active one: consecutive offsets from a random start
            base = rng.integers(1, n_prev - k + 1, size=len(st))
            for j in range(k):
                holder = (active_owner[st] + base + j) % n_prev
                standby_pairs.extend(zip(holder.tolist(), st.tolist()))
    actives = _group_lists(active_owner, np.zeros(tasks, dtype=np.int64), np.arange(tasks), 1)
    standbys: dict[int, list[int]] = {}
    for c, t in standby_pairs:
        standbys.setdefault(c, []).append(t)

    # lags of local state: running tasks -2 (implicit), standbys mostly caught up
    lag_scale = max(1, acceptable_recovery_lag)
    lags: dict[int, dict[int, int]] = {}
    for c, ts in standbys.items():
        ts_arr = np.asarray(ts)
        if scenario == "lag_skew":
            vals = np.round(rng.lognormal(np.log(lag_scale), 2.5, size=len(ts))).astype(np.int64)
        else:
            vals = rng.integers(0, lag_scale // 2 + 1, size=len(ts))
        lags[c] = dict(zip(ts_arr.tolist(), np.minimum(vals, end_offsets[ts_arr]).tolist()))
    if scenario == "lag_skew" and n_prev:
        # leftover state from older assignments: a few stateful tasks per client, lags spanning decades
        st = np.flatnonzero(stateful)
        for c in range(n_prev):
            if not len(st):
                break
            extra = rng.choice(st, size=min(len(st), 1 + int(rng.integers(0, 4))), replace=False)
            vals = np.round(rng.lognormal(np.log(lag_scale), 3.0, size=len(extra))).astype(np.int64)
            mine = lags.setdefault(c, {})
            for t, v in zip(extra.tolist(), np.minimum(vals, end_offsets[extra]).tolist()):
                if active_owner[t] != c:
                    mine.setdefault(t, v)

    # the event
    present = list(range(n_prev))
    restarted: set[int] = set()
    if scenario == "scale_in":
        gone = set(rng.choice(n_prev, size=min(churn, n_prev), replace=False).tolist())
        present = [i for i in present if i not in gone]
    elif scenario == "rack_outage":
        present = [i for i in present if rack_of[i] != "rack-0"][:clients]
    elif scenario == "rolling_restart":
        k = min(churn, n_prev)
        restarted = set(rng.choice(n_prev, size=k, replace=False).tolist()) if k else set()
    elif scenario == "uniform":
        k = min(churn, n_prev)
        gone = set(rng.choice(n_prev, size=k, replace=False).tolist()) if k else set()
        present = [i for i in present if i not in gone]
    newcomers = list(range(n_prev, n_prev + max(0, clients - len(present))))

    out_clients = []
    for c in present + newcomers:
        d = {"process_id": f"client-{c:0{width}d}", "threads": int(thr[c])}
        if rack_of[c] is not None:
            d["rack"] = rack_of[c]
            d["tags"] = {"zone": rack_of[c]}
        prev_a = actives.get(c, {}).get(0, []) if c < n_prev else []
        prev_s = sorted(standbys.get(c, [])) if c < n_prev else []
        my_lags = dict(lags.get(c, {})) if c < n_prev else {}
        if c in restarted:
            # back from a restart: it ran nothing this generation, its state on disk lags a little
            for t in prev_a + prev_s:
                if stateful[t]:
                    my_lags[t] = int(min(end_offsets[t], rng.integers(0, 2 * lag_scale + 1)))
            prev_a, prev_s = [], []
        d["previous_active"] = [ids[t] for t in prev_a]
        d["previous_standby"] = [ids[t] for t in prev_s]
        lag_json = {ids[t]: -2 for t in prev_a if stateful[t]}
        lag_json.update({ids[t]: int(v) for t, v in sorted(my_lags.items()) if t not in prev_a})
        if lag_json:
            d["lags"] = lag_json
        out_clients.append(d)

    cfg: dict[str, Any] = {"acceptable_recovery_lag": int(acceptable_recovery_lag),
                           "num_standby_replicas": int(num_standby_replicas)}
    if racks:
        cfg["rack_aware_assignment_strategy"] = "min_traffic"
        if num_standby_replicas:
            cfg["rack_aware_assignment_tags"] = ["zone"]
    if config:
        cfg.update(config)
    doc: dict[str, Any] = {"format": SNAPSHOT_FORMAT, "kind": "streams"}
    doc["id"] = id if id is not None else f"streams/{scenario}/t{tasks}-c{clients}-s{seed}"
    if now_ms:
        doc["now_ms"] = int(now_ms)
    doc["tasks"] = task_json
    doc["clients"] = out_clients
    doc["config"] = cfg
    return doc


def snapshot(kind: str, scenario: str = "steady", **kwargs: Any) -> dict[str, Any]:
    """``consumer_snapshot`` or ``streams_snapshot`` by kind.

    For both kinds ``size`` and ``group`` may stand for (partitions, members) or
    (tasks, clients).

    >>> snapshot("streams", "fresh", size=6, group=2)["kind"]
    'streams'
    """
    size = kwargs.pop("size", None)
    group = kwargs.pop("group", None)
    if kind == "consumer":
        if size is not None:
            kwargs["partitions"] = size
        if group is not None:
            kwargs["members"] = group
        return consumer_snapshot(scenario, **kwargs)
    if kind == "streams":
        if size is not None:
            kwargs["tasks"] = size
        if group is not None:
            kwargs["clients"] = group
        return streams_snapshot(scenario, **kwargs)
    raise ValueError(f'kind: must be "consumer" or "streams", not {kind!r}')
