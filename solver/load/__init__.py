"""Balance by load: partition rates and member capacities (the spec's "Balance by load").

A topic may carry ``rates``, one per partition: :attr:`stickyflow.Topic.rates` holds them as a read-only
``float64`` numpy array (a million rates are 8 MB there, against 32 MB as a tuple of floats, and every
computation on them is a numpy one). A member may state a ``capacity``; ``config.capacity`` is the default
of the others, and with no capacity anywhere every member's is 1 (utilization is then load, and nothing
counts as overload). :func:`read_rates` is the one rule for a list of rates, used by the JSON reader and by
``Topic`` alike; :func:`load_model` gathers a snapshot's rates end to end and each member's capacity, once
per snapshot, for the solvers and the checker.

>>> read_rates([1, 2.5, 0], 3)[0].tolist()
[1.0, 2.5, 0.0]
>>> read_rates([1, -2.5], 2)[1:]
('[1]', 'must be >= 0')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..check.input import finite_number

__all__ = ["BALANCES", "DEFAULT_LOAD_SLACK", "read_rates", "total_rate_problem", "LoadModel", "load_model"]

BALANCES = ("count", "load")
DEFAULT_LOAD_SLACK = 0.05

_NOT_NUMBERS = "must be an array of numbers, one per partition"


def read_rates(values: Any, partitions: int) -> tuple[np.ndarray | None, str, str]:
    """``values`` as a read-only ``float64`` array of one finite rate ``>= 0`` per partition: ``(array, "", "")``;
    or ``(None, where, rule)``, ``where`` the index of the first bad entry (``"[3]"``) or ``""`` for the whole.

    Takes a list, tuple or other sequence of numbers (ints, floats, NumPy's too; not bools, not strings) or a
    numeric array (NumPy's, or anything with ``__array__``), checked in a few passes in C: no Python step per partition (except to name a bad entry).

    >>> read_rates(np.array([3, 1]), 2)[0].dtype
    dtype('float64')
    >>> read_rates([1.0, float("nan")], 2)[1:], read_rates([1.0, "2"], 2)[1:], read_rates([1.0], 2)[1:]
    (('[1]', "must be a finite number (not NaN, not infinite, within a double's range)"), ('[1]', 'must be a number'), \
('', 'must hold one rate per partition (2), not 1'))
    """
    if not isinstance(values, (np.ndarray, list, tuple, str, bytes, Mapping)):
        if hasattr(values, "__array__"):  # a pandas Series, an array of another library
            values = np.asarray(values)
        elif isinstance(values, Sequence):  # a range, an array.array, ...
            values = list(values)
    if isinstance(values, np.ndarray):
        if values.ndim != 1 or values.dtype.kind not in "iuf":
            if values.ndim == 1 and values.dtype.kind == "O":
                return read_rates(values.tolist(), partitions)
            return None, "", _NOT_NUMBERS
        try:
            arr = values.astype(np.float64)  # a copy: the caller's array may change later
        except (OverflowError, ValueError):  # pragma: no cover - numeric dtypes always convert
            return None, "", _NOT_NUMBERS
    elif isinstance(values, (list, tuple)):
        arr = None
        if all(map(_numeric_type, set(map(type, values)))):  # the common case: one look per type, the rest in C
            try:
                arr = np.array(values, dtype=np.float64)
            except OverflowError:  # an int beyond a float: found one by one below
                arr = None
        if arr is None:
            bad = next((i for i, v in enumerate(values) if finite_number(v) is None), None)
            if bad is not None:
                v = values[bad]
                numeric = not isinstance(v, bool) and isinstance(v, (int, float, np.integer, np.floating))
                return None, f"[{bad}]", _NOT_FINITE if numeric else "must be a number"
            arr = np.array([float(v) for v in values], dtype=np.float64)
    else:
        return None, "", _NOT_NUMBERS
    if len(arr) != partitions:
        return None, "", f"must hold one rate per partition ({partitions}), not {len(arr)}"
    finite = np.isfinite(arr)
    if not finite.all():
        return None, f"[{int(np.argmin(finite))}]", _NOT_FINITE
    negative = arr < 0
    if negative.any():
        return None, f"[{int(np.argmax(negative))}]", "must be >= 0"
    with np.errstate(over="ignore"):
        total = arr.sum()
    if not np.isfinite(total):  # loads are sums of rates: every one must stay a number
        return None, "", _SUM_RULE
    arr.flags.writeable = False
    return arr, "", ""


_SUM_RULE = "must sum to a finite number (a double's range)"
_NOT_FINITE = "must be a finite number (not NaN, not infinite, within a double's range)"


def _numeric_type(cls: type) -> bool:
    """An int or float type, Python's or NumPy's (a bool is no number here)."""
    return issubclass(cls, (int, float, np.integer, np.floating)) and not issubclass(cls, (bool, np.bool_))


def total_rate_problem(topics: Any) -> str | None:
    """The rule the rates of all ``topics`` (``Topic`` objects, each read by :func:`read_rates`) break together,
    or None: their sum, any member's greatest possible load, must be a finite number.

    >>> from stickyflow import Topic
    >>> total_rate_problem([Topic(name="a", partitions=1, rates=[1e308]), Topic(name="b", partitions=1, rates=[1e308])])
    "must sum to a finite number (a double's range)"
    """
    total = sum(float(t.rates.sum()) for t in topics if t.rates is not None)
    return None if np.isfinite(total) else _SUM_RULE


@dataclass(frozen=True, slots=True, eq=False)
class LoadModel:
    """A snapshot's rates and capacities as arrays (:func:`load_model`).

    ``rates`` holds every partition of every topic end to end, in snapshot order (``offsets[j]`` is where topic
    ``j`` starts; a topic without rates reads 0 there). ``known`` says whether loads are known: every topic some
    member reads carries rates, and the snapshot has a rate somewhere or balances by load (a count snapshot
    without rates has no loads, and its load metrics are null). ``capacity`` is every member's (1.0 each when nobody states
    one: ``capacity_given`` is then false). ``balance`` and ``slack`` are the snapshot's ``config.balance``
    and ``config.load_slack``.
    """

    rates: np.ndarray
    offsets: np.ndarray
    known: bool
    capacity: np.ndarray
    capacity_given: bool
    balance: str
    slack: float


def load_model(snap: Any) -> LoadModel:
    """The rates and capacities of a consumer snapshot, computed once per snapshot (read-only arrays).

    >>> import stickyflow
    >>> s = stickyflow.parse_snapshot({"format": "stickyflow.snapshot/1", "kind": "consumer",
    ...     "topics": {"t": {"partitions": 2, "rates": [3, 1]}},
    ...     "members": [{"id": "a", "subscription": ["t"], "capacity": 4}, {"id": "b", "subscription": ["t"]}],
    ...     "config": {"balance": "load", "capacity": 2}})
    >>> m = load_model(s)
    >>> m.rates.tolist(), m.capacity.tolist(), m.known, m.capacity_given
    ([3.0, 1.0], [4.0, 2.0], True, True)
    """
    return snap.cached("load.model", _model)


def _model(snap: Any) -> LoadModel:
    topics = list(snap.topics.values())
    sizes = np.fromiter((t.partitions for t in topics), dtype=np.int64, count=len(topics))
    offsets = np.zeros(len(topics) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    with_rates = [t.rates is not None for t in topics]
    if all(with_rates):
        rates = np.concatenate([t.rates for t in topics]) if topics else np.zeros(0)
        known = bool(topics) or snap.config.balance == "load"
    else:
        rates = np.zeros(int(offsets[-1]), dtype=np.float64)
        for j, t in enumerate(topics):
            if with_rates[j]:
                rates[offsets[j]:offsets[j + 1]] = t.rates
        read = snap.has_readers()
        # a count snapshot without a rate anywhere has no loads; one with rates, or a load snapshot, has them
        # when every topic someone reads carries rates (a load snapshot always: the reader demands it)
        known = (any(with_rates) or snap.config.balance == "load") and not any(
            r and not w for r, w in zip(read.tolist(), with_rates))
    default = snap.config.capacity
    stated = [m.capacity for m in snap.members]
    given = default is not None or stated.count(None) < len(stated)
    fill = 1.0 if default is None else float(default)
    capacity = np.array([fill if c is None else c for c in stated], dtype=np.float64)
    rates.flags.writeable = offsets.flags.writeable = capacity.flags.writeable = False
    return LoadModel(rates=rates, offsets=offsets, known=known, capacity=capacity, capacity_given=given,
                     balance=snap.config.balance, slack=snap.config.load_slack)
