"""Two greedy baselines that balance load: ``lpt`` and ``lag-based`` (issue 35). Neither is sticky.

``lpt``
    The classic longest-processing-time rule for the least peak (Graham, 1969): every partition, in decreasing
    rate, goes to the subscriber whose utilization is least *after* taking it, ``(load + rate) / capacity``.
    Ties: rates by topic name, then partition number; members by id (UTF-16 code units, as Java compares
    strings). With equal capacities this is "to the least loaded subscriber", Graham's rule, whose peak is at
    most ``4/3 - 1/(3m)`` times the least possible on ``m`` identical members.
``lag-based``
    grantneale's ``LagBasedPartitionAssignor`` (github.com/grantneale/kafka-lag-based-assignor), fed with
    ``rates`` where it reads each partition's consumer lag. Topic by topic, on its own (each topic's counts and
    loads start at zero): the partitions in decreasing rate (equal rates: lower partition first), each to the
    subscriber of that topic with the fewest of its partitions so far, then the least load of it so far, then
    the smallest member id. Count first: every subscriber gets the floor or the ceiling of the topic's
    partitions over its subscribers, and load only decides who takes which.

Our choices where neither source says: with capacities, ``lag-based`` ranks equal counts by utilization (load
of that topic over capacity; with equal capacities exactly the original's load); ``lpt`` divides by capacity as
its rule says. Without known loads (no ``rates``, or a subscribed topic without them, under ``"balance":
"count"``) every rate is 1: ``lpt`` then balances counts weighted by capacity, and ``lag-based`` is the original
with all lags equal (round-robin by member id within each topic). Neither is rack-aware nor looks at ``owned``.

Both answer in numpy steps over rounds, not per partition where it can be helped: ``lag-based`` deals one
round (one partition to each subscriber) per step; ``lpt`` with one subscription and equal capacities gives a
whole run of partitions at once to the least loaded members, as long as each of them stays below the loads the
earlier ones reach (a heap for a handful of members); otherwise one step per partition over its subscribers.

>>> import stickyflow
>>> snap = stickyflow.parse_snapshot({"format": "stickyflow.snapshot/1", "kind": "consumer",
...     "topics": {"t0": {"partitions": 3, "rates": [100000, 50000, 60000]}},
...     "members": [{"id": "C0", "subscription": ["t0"]}, {"id": "C1", "subscription": ["t0"]}]})
>>> stickyflow.assign(snap, "lag-based").to_json()["assignment"]
{'C0': {'t0': [0]}, 'C1': {'t0': [1, 2]}}
>>> stickyflow.assign(snap, "lpt").metrics["peak_utilization"]
110000.0
"""

from __future__ import annotations

import heapq

import numpy as np

from ..check.answer import ArrayAssignment
from ..check.load import loads_known
from ..load import load_model
from ..model.consumer import ConsumerSnapshot
from ..registry import SolveOptions
from ..result import Decision

__all__ = ["assign_lpt", "assign_lag_based", "java_string_order"]

_HEAP_MEMBERS = 24  # up to this many members, lpt's runs are short: a heap step per partition is cheaper


def java_string_order(names: list[str]) -> np.ndarray:
    """Each name's rank when sorted as Java's ``String.compareTo`` sorts (by UTF-16 code units; Python's own
    order differs only beyond the Basic Multilingual Plane): an int64 array.

    >>> java_string_order(["b", "a", "\\U0001F600", "\\uFFFD"]).tolist()
    [1, 0, 2, 3]
    """
    order = sorted(range(len(names)), key=lambda i: names[i].encode("utf-16-be"))
    rank = np.empty(len(names), dtype=np.int64)
    rank[order] = np.arange(len(names))
    return rank


def _inputs(snap: ConsumerSnapshot) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every partition's rate end to end (1 each without known loads), the topic offsets, every member's
    capacity, and every member's rank by id."""
    model = load_model(snap)
    rates = model.rates if loads_known(snap) else np.ones(len(model.rates))
    return rates, model.offsets, model.capacity, java_string_order(list(snap.member_index()))


def _decision(snap: ConsumerSnapshot, owner: np.ndarray, offsets: np.ndarray, method: str) -> Decision:
    assignment = ArrayAssignment.of_flat(snap, list(snap.topics), owner, offsets)
    return Decision(assignment=assignment, method=method, status="heuristic",
                    extra={"unit_rates": not loads_known(snap)})


def assign_lag_based(snap: ConsumerSnapshot, options: SolveOptions | None = None) -> Decision:
    """grantneale's lag-based assignor with ``rates`` for lags (see the module's text)."""
    rates, offsets, capacity, rank = _inputs(snap)
    owner = np.full(int(offsets[-1]), -1, dtype=np.int32)
    readers = snap.subscribers()
    for j, t in enumerate(snap.topics):
        members = np.asarray(readers[t], dtype=np.int64)
        if not len(members):
            continue
        members = members[np.argsort(rank[members], kind="stable")]  # by id: ties go to the smallest
        m = len(members)
        cap = capacity[members]
        weigh = cap[0] != cap.min() or cap[0] != cap.max()  # unequal capacities: utilization, else the load
        r = rates[offsets[j]:offsets[j + 1]]
        order = np.lexsort((np.arange(len(r)), -r))  # decreasing rate, then partition number
        load = np.zeros(m)
        out = owner[offsets[j]:offsets[j + 1]]
        by_id = np.arange(m)
        for start in range(0, len(r), m):  # a round: one partition to each subscriber, the least loaded first
            parts = order[start:start + m]
            takers = np.lexsort((by_id, load / cap if weigh else load))[:len(parts)]
            out[parts] = members[takers]
            load[takers] += r[parts]
    return _decision(snap, owner, offsets, "lag-based")


def assign_lpt(snap: ConsumerSnapshot, options: SolveOptions | None = None) -> Decision:
    """Largest rate first, to the subscriber with the least utilization after taking it (the module's text)."""
    rates, offsets, capacity, rank = _inputs(snap)
    owner = np.full(int(offsets[-1]), -1, dtype=np.int32)
    read = snap.has_readers()
    names = list(snap.topics)
    topics = np.flatnonzero(read)
    if not len(topics):
        return _decision(snap, owner, offsets, "lpt")
    sizes = offsets[topics + 1] - offsets[topics]
    where = np.concatenate([np.arange(offsets[j], offsets[j + 1]) for j in topics.tolist()])
    topic_rank = java_string_order([names[j] for j in topics.tolist()])
    order = np.lexsort((where, np.repeat(topic_rank, sizes), -rates[where]))  # partitions ascend within a topic
    items = where[order]
    readers = snap.subscribers()
    sets = {}  # the distinct sets of readers, each by id, and every read topic's set
    topic_set = np.empty(len(names), dtype=np.int64)
    for j in topics.tolist():
        key = tuple(readers[names[j]])
        topic_set[j] = sets.setdefault(key, len(sets))
    groups = [np.asarray(sorted(key, key=rank.__getitem__), dtype=np.int64) for key in sets]
    if len(groups) == 1 and capacity[groups[0]].min() == capacity[groups[0]].max():
        owner[items] = groups[0][_lpt_identical(rates[items], len(groups[0]))]
    else:
        owner[items] = _lpt_general(rates[items], topic_set[np.searchsorted(offsets, items, side="right") - 1],
                                    groups, capacity)
    return _decision(snap, owner, offsets, "lpt")


def _lpt_identical(r: np.ndarray, m: int) -> np.ndarray:
    """LPT on ``m`` identical members (numbered by id), rates ``r`` in the order given: each member's number.

    A run at once: the members sorted by (load, number) take the next rates one each, as long as each of them
    is strictly below every load the earlier ones of the run reach (exactly what one partition at a time would
    do); a tie ends the run and the next one sorts again. Zero rates all go to the least loaded member.

    >>> _lpt_identical(np.array([7.0, 5, 4, 3, 3, 2]), 3).tolist()
    [0, 1, 2, 2, 1, 0]
    """
    out = np.empty(len(r), dtype=np.int64)
    if m <= _HEAP_MEMBERS:
        heap = [(0.0, i) for i in range(m)]
        for k, x in enumerate(r.tolist()):
            load, i = heap[0]
            heapq.heapreplace(heap, (load + x, i))
            out[k] = i
        return out
    load = np.zeros(m)
    numbers = np.arange(m)
    pos = 0
    while pos < len(r):
        by_load = np.lexsort((numbers, load))
        if r[pos] == 0:  # nothing more changes a load: the rest all go to the least loaded
            out[pos:] = by_load[0]
            break
        k = min(m, len(r) - pos)
        low = load[by_load[:k]]
        reach = np.minimum.accumulate(low + r[pos:pos + k])
        stop = np.flatnonzero(low[1:] >= reach[:-1])
        take = k if not len(stop) else int(stop[0]) + 1
        who = by_load[:take]
        out[pos:pos + take] = who
        load[who] += r[pos:pos + take]
        pos += take
    return out


def _lpt_general(r: np.ndarray, item_set: np.ndarray, groups: list[np.ndarray], capacity: np.ndarray) -> np.ndarray:
    """LPT where subscriptions or capacities differ: one step per partition over its readers (by id, so that
    the first least utilization is the smallest id's)."""
    load = np.zeros(len(capacity))
    caps = [capacity[g] for g in groups]
    out = np.empty(len(r), dtype=np.int64)
    for k, (x, s) in enumerate(zip(r.tolist(), item_set.tolist())):
        g = groups[s]
        i = g[int(np.argmin((load[g] + x) / caps[s]))]
        load[i] += x
        out[k] = i
    return out
