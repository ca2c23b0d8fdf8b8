"""Measuring an assignment by load: the metrics every consumer result carries, and a cheap proven bound.

:func:`load_metrics` gives the spec's ``peak_utilization`` (``U``, the largest load over capacity among the
members that read an existing topic), ``peak_bound`` (a proven lower bound on ``U*``, the least ``U`` of any
valid assignment), ``moved_load`` (the rates of the partitions that leave their valid previous owner),
``cross_rack_load`` (the rates of the partitions read from another rack; null unless rack-aware, like
``cross_rack``), ``overload`` (the load above capacity, summed over members) and ``overloaded`` (how many
members are above their capacity). They are computed whenever loads are known (:func:`loads_known`): with
``"balance": "load"``, and with ``"balance": "count"`` when every topic someone reads carries ``rates`` (so
the count-based assignors show the peak they reach); otherwise all six are null. With no capacity anywhere,
every capacity is 1, and ``overload`` and ``overloaded`` are 0 (nothing counts as overload).

A load counts as above capacity only beyond ``capacity x (1 + OVER_TOLERANCE)``: rates are floats, and a
member holding exactly its capacity must not read as overloaded because of the order of a sum.

:func:`cheap_peak_bound` is the checker's bound, the largest of these, each of which holds for every valid
assignment (a *class* is a set of topics read by exactly the same subscriptions, its *readers* the members
with one of those subscriptions):

* all the load over the capacity of every member that reads an existing topic;
* for each class, the load of every class whose readers are among its readers (it can go nowhere else), over
  its readers' capacity;
* each partition's rate over the largest capacity among its readers;
* for each class with more partitions than readers (``m`` of them), the ``m``-th and ``(m + 1)``-th largest
  rates together over its readers' largest capacity (two of the ``m + 1`` largest share a member).

The optimizer proves a tighter one, and its result keeps the larger.

>>> import stickyflow
>>> s = stickyflow.parse_snapshot({"format": "stickyflow.snapshot/1", "kind": "consumer",
...     "topics": {"t": {"partitions": 3, "rates": [6, 1, 1]}},
...     "members": [{"id": "a", "subscription": ["t"]}, {"id": "b", "subscription": ["t"]}],
...     "config": {"capacity": 4}})
>>> cheap_peak_bound(s)
1.5
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..load import load_model
from ..model.consumer import ConsumerSnapshot

__all__ = ["LOAD_METRICS", "OVER_TOLERANCE", "loads_known", "load_metrics", "cheap_peak_bound", "member_loads",
           "active_members"]

LOAD_METRICS = ("peak_utilization", "peak_bound", "moved_load", "cross_rack_load", "overload", "overloaded")
OVER_TOLERANCE = 1e-9
_NONE = dict.fromkeys(LOAD_METRICS)
_DENSE = 1 << 24  # subscriptions x topics up to which the classes come from one boolean matrix
_CLOSURE = 1 << 24  # classes x classes x subscriptions up to which each class takes in the classes within it


def loads_known(snap: ConsumerSnapshot) -> bool:
    """Whether the loads, and so the load metrics, are known: every topic that some member reads carries
    ``rates``, and the snapshot carries a rate somewhere or balances by load. Cheap for a snapshot without rates.

    >>> import stickyflow
    >>> loads_known(stickyflow.parse_snapshot({"format": "stickyflow.snapshot/1", "kind": "consumer",
    ...     "topics": {"t": {"partitions": 1}}, "members": [{"id": "a", "subscription": ["t"]}]}))
    False
    """
    return snap.cached("load.known", _known)


def _known(snap: ConsumerSnapshot) -> bool:
    if snap.config.balance == "count" and all(t.rates is None for t in snap.topics.values()):
        return False  # the count path: no load model built
    return load_model(snap).known


def active_members(snap: ConsumerSnapshot) -> np.ndarray:
    """Per member: does it read an existing topic (a read-only boolean array): the members the peak is taken
    over, and the only ones that can take a partition.

    >>> import stickyflow
    >>> s = stickyflow.parse_snapshot({"format": "stickyflow.snapshot/1", "kind": "consumer",
    ...     "topics": {"t": {"partitions": 1}},
    ...     "members": [{"id": "a", "subscription": ["t"]}, {"id": "b", "subscription": ["gone"]}]})
    >>> active_members(s).tolist()
    [True, False]
    """
    return snap.cached("load.active", _active)


def _active(snap: ConsumerSnapshot) -> np.ndarray:
    group, _ = snap.subscription_groups()
    _, glen = snap.subscription_topics()
    active = glen[group] > 0 if len(group) else np.zeros(0, dtype=bool)
    active.flags.writeable = False
    return active


def member_loads(snap: ConsumerSnapshot, owner: np.ndarray) -> np.ndarray:
    """Every member's load (float64) under ``owner``, the owner of every partition of every topic end to end
    (snapshot order; -1: nobody). Assumes :func:`loads_known`.

    >>> import stickyflow
    >>> s = stickyflow.parse_snapshot({"format": "stickyflow.snapshot/1", "kind": "consumer",
    ...     "topics": {"t": {"partitions": 3, "rates": [6, 1, 1]}},
    ...     "members": [{"id": "a", "subscription": ["t"]}, {"id": "b", "subscription": ["t"]}]})
    >>> member_loads(s, np.array([0, 1, -1])).tolist()
    [6.0, 1.0]
    """
    rates = load_model(snap).rates
    given = owner >= 0
    if given.all():
        return np.bincount(owner, weights=rates, minlength=len(snap.members))
    return np.bincount(owner[given], weights=rates[given], minlength=len(snap.members))


def load_metrics(snap: ConsumerSnapshot, owner: np.ndarray, previous: np.ndarray,
                 cross: np.ndarray | None) -> dict[str, Any]:
    """The six load metrics of the assignment ``owner`` (every partition of every topic end to end, snapshot
    order; -1: nobody), ``previous`` the valid previous owners in the same layout, ``cross`` the partitions
    read from another rack (None unless rack-aware). All null unless :func:`loads_known`.

    >>> import stickyflow
    >>> s = stickyflow.parse_snapshot({"format": "stickyflow.snapshot/1", "kind": "consumer",
    ...     "topics": {"t": {"partitions": 3, "rates": [6, 1, 1]}},
    ...     "members": [{"id": "a", "subscription": ["t"]}, {"id": "b", "subscription": ["t"]}],
    ...     "config": {"capacity": 4}})
    >>> load_metrics(s, np.array([0, 0, 1]), np.array([1, -1, 1]), None)
    {'peak_utilization': 1.75, 'peak_bound': 1.5, 'moved_load': 6.0, 'cross_rack_load': None, 'overload': 3.0, \
'overloaded': 1}
    """
    if not loads_known(snap):
        return dict(_NONE)
    model = load_model(snap)
    rates = model.rates
    loads = member_loads(snap, owner)
    active = active_members(snap)
    peak = float((loads[active] / model.capacity[active]).max()) if active.any() else 0.0
    moved = (previous >= 0) & (owner != previous)
    if model.capacity_given:
        over = loads > model.capacity * (1 + OVER_TOLERANCE)
        overload, overloaded = float((loads - model.capacity)[over].sum()), int(np.count_nonzero(over))
    else:
        overload, overloaded = 0.0, 0
    return {
        "peak_utilization": peak,
        "peak_bound": cheap_peak_bound(snap),
        "moved_load": float(rates[moved].sum()),
        "cross_rack_load": None if cross is None else float(rates[cross].sum()),
        "overload": overload,
        "overloaded": overloaded,
    }


def cheap_peak_bound(snap: ConsumerSnapshot) -> float | None:
    """A proven lower bound on the least possible peak utilization (see the module's text), or None when
    loads are not known; once per snapshot, in numpy (one pass over the rates, a step per topic class)."""
    if not loads_known(snap):
        return None
    return snap.cached("load.cheap_bound", _cheap_bound)


def _cheap_bound(snap: ConsumerSnapshot) -> float:
    model = load_model(snap)
    read = snap.has_readers()
    active = active_members(snap)
    if not (read.any() and active.any()):
        return 0.0
    rates, offsets = model.rates, model.offsets
    starts = offsets[:-1]
    topic_load = np.add.reduceat(rates, starts)  # every topic has a partition: no empty slice
    topic_top = np.maximum.reduceat(rates, starts)
    group, _ = snap.subscription_groups()
    n_groups = int(group.max()) + 1
    group_cap = np.bincount(group, weights=model.capacity, minlength=n_groups)
    group_size = np.bincount(group, minlength=n_groups)
    group_top = np.zeros(n_groups)
    np.maximum.at(group_top, group, model.capacity)
    flat, glen = snap.subscription_topics()  # each subscription's topics, end to end
    top_cap = np.zeros(len(starts))
    np.maximum.at(top_cap, flat, np.repeat(group_top, glen))
    bound = max(float(topic_load[read].sum() / model.capacity[active].sum()),
                float((topic_top[read] / top_cap[read]).max()))
    if n_groups * len(starts) > _DENSE:
        return bound
    topics = np.flatnonzero(read)
    cols = np.ascontiguousarray(snap.subscription_matrix().T[topics])  # read topic x subscription
    cls, first = _row_classes(cols)
    rows = cols[first]  # class x subscription: who reads it
    class_load = np.bincount(cls, weights=topic_load[topics], minlength=len(first))
    class_cap = rows @ group_cap
    if len(first) ** 2 * n_groups <= _CLOSURE:  # every class whose readers are among a class's readers
        within = (~rows).astype(np.float64) @ rows.T.astype(np.float64) == 0  # [a, b]: readers(b) within readers(a)
        class_load = within.astype(np.float64) @ class_load
    bound = max(bound, float((class_load / class_cap).max()))
    readers = rows @ group_size
    class_top = np.where(rows, group_top, 0.0).max(axis=1)
    sizes = np.bincount(cls, weights=(offsets[topics + 1] - starts[topics]), minlength=len(first))
    by_class = np.argsort(cls, kind="stable")
    cut = np.searchsorted(cls[by_class], np.arange(len(first) + 1)).tolist()
    for c in np.flatnonzero(sizes > readers).tolist():  # two of the m + 1 largest rates share a member
        m = int(readers[c])
        x = np.concatenate([rates[offsets[j]:offsets[j + 1]] for j in topics[by_class[cut[c]:cut[c + 1]]].tolist()])
        n = len(x)
        x = np.partition(x, (n - m - 1, n - m))
        bound = max(bound, float((x[n - m - 1] + x[n - m]) / class_top[c]))
    return bound


def _row_classes(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Number the distinct rows of a boolean matrix: each row's class (int64) and each class's first row.

    >>> cls, first = _row_classes(np.array([[1, 0], [0, 1], [1, 0]], dtype=bool))
    >>> cls.tolist(), first.tolist()
    ([0, 1, 0], [0, 1])
    """
    packed = np.ascontiguousarray(np.packbits(rows, axis=1))
    keys = packed.view(np.dtype((np.void, packed.shape[1]))).ravel()
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    new = np.r_[True, ordered[1:] != ordered[:-1]]
    rank = np.cumsum(new) - 1  # classes in key order; renumbered below in order of first row
    heads = order[new]  # the first row of each class (stable sort: the smallest index comes first)
    by_first = np.argsort(heads, kind="stable")
    renumber = np.empty(len(heads), dtype=np.int64)
    renumber[by_first] = np.arange(len(heads))
    cls = np.empty(len(rows), dtype=np.int64)
    cls[order] = renumber[rank]
    return cls, heads[by_first]
