"""Balance by load in a live group: what each member measures, how it reports it, the rates the leader builds.

With ``OptimalAssignor(balance="load")`` (:mod:`stickyflow.adapters.kafka`) each member measures the rate at
which it consumes every partition it owns and sends those rates to the group leader in its JoinGroup
``user_data``; the leader builds the snapshot's ``rates`` from them and balances load instead of counts.

**What is measured.** Records per second written to each owned partition, as seen in the records the member
consumed from it in the last ``rate_window`` seconds (default 30; time spent in rebalances, from the member's
JoinGroup to its assignment, does not count, as its consumer polls nothing then; the application hands every
``consumer.poll()`` to :meth:`RateMeter.observe`): the offsets those records advanced over the seconds their
timestamps lie apart. A pause in consuming (a rebalance) and the catch-up after it do not change that. The
timestamps are the producers' (``CreateTime``) or the broker's (``LogAppendTime``); offsets taken by
transaction markers count as records. Where the records carry no timestamps, or their timestamps lie less than
a quarter of the window apart, it is the records consumed divided by the window, or by the time since the
member began owning the partition when that is shorter (0 for a partition that received nothing). A partition
owned for less than a quarter of the window and not measured from timestamps is too new: the member reports the
rate the leader gave it with the partition (below), or nothing (the leader then estimates it). A member also
reports the partitions it gave up at its last assignment, as last measured (under the cooperative protocol
nobody owns a revoked partition in the round that follows). ``stickyflow capture --rates`` measures write rates
from log-end offsets instead. The rates are what the next rebalance balances: a group rebalances when its
membership or subscriptions change, not when rates do.

**How it travels.** stickyflow's ``user_data`` is ``b"stickyflow/1\\n"`` and a JSON object (the envelope has
not changed). Its layout has a number, ``layout``:

* layout 1 (no ``layout`` key): ``generation``, ``rack``, ``owned`` (topic -> partitions);
* layout 2: layout 1's keys and ``layout: 2``, ``rates`` (topic -> partition number as text -> records/s),
  ``rate_window`` (seconds) and ``capacity`` (this member's, records/s; null: the group's ``capacity``).

Readers of layout 1 ignore the keys they do not know, and this module reads layout 1 as "no rates", so members
of both layouts share a group during a rolling upgrade. ``stickyflow decode`` shows both (:func:`read_layout`).

**What the leader sends back**: each member's assignment ``user_data`` carries, beside the ``epoch``, the rates
the leader used for the partitions it hands that member (``rates``, as in layout 2), so that a partition's rate
survives its move until its new owner has measured it (:func:`assigned_rates`, :func:`inherited_rates`).

**What the leader builds** (:func:`leader_rates`): a partition's rate is what its owner reported (the largest,
should two members claim it); a partition nobody reports (new, its owner gone, or owned too briefly) gets an
estimate: the median of the rates reported for the other partitions of its topic, else the median of every
rate reported in the group, else 0.

>>> meter = RateMeter(window=10.0, clock=lambda: 0.0)
>>> meter.owning({"t": [0, 1]}, now=0.0)
>>> meter.count("t", 0, 50, now=5.0)
>>> meter.rates({"t": [0, 1]}, now=10.0)
{'t': {0: 5.0, 1: 0.0}}
>>> leader_rates({"t": 3, "u": 1}, [{"t": {0: 5.0, 1: 1.0}}])
{'t': [5.0, 1.0, 3.0], 'u': [3.0]}
"""

from __future__ import annotations

import math
import statistics
import time
from collections import deque
from typing import Any, Callable, Iterable, Mapping

from stickyflow.errors import InvalidSnapshotError, Problem

__all__ = ["LAYOUT", "DEFAULT_RATE_WINDOW", "RateMeter", "leader_rates", "read_layout", "rates_to_json", "with_load_settings",
           "member_capacity"]

LAYOUT = 2  # the user_data layout this module writes
DEFAULT_RATE_WINDOW = 30.0  # seconds
_MIN_SHARE = 0.25  # a partition is measured once it has been owned for this share of the window


class RateMeter:
    """Records consumed per owned partition, and their rate over a sliding window (records/s).

    ``clock`` gives seconds (default :func:`time.monotonic`); every method also takes ``now`` explicitly.
    """

    def __init__(self, window: float = DEFAULT_RATE_WINDOW, *, clock: Callable[[], float] = time.monotonic):
        if not (isinstance(window, (int, float)) and math.isfinite(window) and window > 0):
            raise InvalidSnapshotError(Problem("rate_window", f"must be a number of seconds > 0, not {window!r}"))
        self.window = float(window)
        self.clock = clock
        self._since: dict[tuple[str, int], float] = {}
        self._seen: dict[tuple[str, int], deque] = {}  # (arrival, records, first, last) per poll
        self._known: dict[tuple[str, int], float] = {}  # the leader's rate of a partition not yet measured
        self._left: dict[str, dict[int, float]] = {}  # the rates of the partitions given up last
        self._pauses: deque[tuple[float, float]] = deque(maxlen=64)  # rebalances: (JoinGroup sent, assignment)
        self._paused_at: float | None = None

    def pause(self, now: float | None = None) -> None:
        """A rebalance begins (the member sends its JoinGroup): until :meth:`owning`, its consumer polls nothing,
        and that time does not count toward the window."""
        if self._paused_at is None:
            self._paused_at = self.clock() if now is None else float(now)

    def _cutoff(self, now: float) -> float:
        """The moment from which ``now`` is ``window`` seconds of time outside rebalances."""
        left, t = self.window, now
        spans = list(self._pauses) + ([(self._paused_at, now)] if self._paused_at is not None else [])
        for start, end in sorted(spans, reverse=True):
            if end < t:
                if t - end >= left:
                    return t - left
                left -= t - end
            t = min(t, start)
        return t - left

    def _active(self, start: float, now: float) -> float:
        """Seconds between ``start`` and ``now`` outside rebalances."""
        spans = list(self._pauses) + ([(self._paused_at, now)] if self._paused_at is not None else [])
        return max(0.0, now - start - sum(max(0.0, min(e, now) - max(s, start)) for s, e in spans))

    def owning(self, owned: Mapping[str, Iterable[int]], now: float | None = None, *,
               known: Mapping[str, Mapping[int, float]] | None = None) -> None:
        """This member now owns ``owned`` (topic -> partitions): new ones are measured from ``now``, the ones
        it gave up are forgotten. ``known``: the rates the leader used for them (reported until measured)."""
        now = self.clock() if now is None else float(now)
        if self._paused_at is not None:
            self._pauses.append((self._paused_at, now))
            self._paused_at = None
        keep = {(str(t), int(p)) for t, ps in owned.items() for p in ps}
        gone: dict[str, list[int]] = {}
        for t, p in self._since:
            if (t, p) not in keep:
                gone.setdefault(t, []).append(p)
        self._left = self.rates(gone, now)
        for tp in list(self._since):
            if tp not in keep:
                del self._since[tp]
                self._seen.pop(tp, None)
                self._known.pop(tp, None)
        for tp in keep:
            self._since.setdefault(tp, now)
        for t, ps in (known or {}).items():
            for p, r in ps.items():
                if (t, int(p)) in keep:
                    self._known[(t, int(p))] = float(r)

    def count(self, topic: str, partition: int, records: int, now: float | None = None, *,
              first: tuple[int, int] | None = None, last: tuple[int, int] | None = None) -> None:
        """``records`` consumed from one partition at ``now``; ``first`` and ``last``: the (timestamp in ms,
        offset) of the first and last of them, where known."""
        now = self.clock() if now is None else float(now)
        q = self._seen.setdefault((str(topic), int(partition)), deque())
        q.append((now, int(records), first, last))
        self._prune(q, self._cutoff(now))

    def observe(self, polled: Any, now: float | None = None) -> Any:
        """Count what ``consumer.poll()`` returned (``{TopicPartition: [records]}``); returns it unchanged, so
        ``records = assignor.observe(consumer.poll(timeout_ms=100))`` reads naturally."""
        now = self.clock() if now is None else float(now)
        for tp, records in (polled or {}).items():
            if records:
                self.count(tp.topic, tp.partition, len(records), now, first=_stamp(records[0]),
                           last=_stamp(records[-1]))
        return polled

    def rates(self, owned: Mapping[str, Iterable[int]], now: float | None = None) -> dict[str, dict[int, float]]:
        """topic -> partition -> records/s, for the partitions of ``owned`` measured long enough."""
        now = self.clock() if now is None else float(now)
        cutoff = self._cutoff(now)
        out: dict[str, dict[int, float]] = {}
        for t, ps in sorted(owned.items()):
            for p in sorted(int(x) for x in ps):
                since = self._since.get((t, p))
                if since is None:
                    continue
                q = self._seen.get((t, p), deque())
                self._prune(q, cutoff)
                written = _written(q, _MIN_SHARE * self.window)
                if written is not None:
                    out.setdefault(t, {})[p] = written
                    continue
                span = self._active(max(since, cutoff), now)
                if span < _MIN_SHARE * self.window:
                    if (t, p) in self._known:
                        out.setdefault(t, {})[p] = self._known[(t, p)]
                    continue
                out.setdefault(t, {})[p] = sum(s[1] for s in q) / span
        return out

    def report(self, owned: Mapping[str, Iterable[int]], now: float | None = None, *,
               topics: Iterable[str] | None = None) -> dict[str, dict[int, float]]:
        """What a member sends: :meth:`rates` of ``owned``, and of the partitions of those topics it gave up at
        the last assignment (under the cooperative protocol nobody owns a revoked partition in the round that
        follows; its last owner still knows its rate), of the ``topics`` it still reads (default: ``owned``'s)."""
        topics = set(owned if topics is None else topics)
        out = {t: dict(ps) for t, ps in self._left.items() if t in topics}
        for t, ps in self.rates(owned, now).items():
            out.setdefault(t, {}).update(ps)
        return out

    @staticmethod
    def _prune(q: deque, cutoff: float) -> None:
        while q and q[0][0] <= cutoff:
            q.popleft()


def _stamp(record: Any) -> tuple[int, int] | None:
    ts, offset = getattr(record, "timestamp", None), getattr(record, "offset", None)
    if isinstance(ts, int) and isinstance(offset, int) and ts >= 0:
        return ts, offset
    return None


def _written(q: Iterable[tuple[float, int, Any, Any]], least_span: float) -> float | None:
    """Records/s written, from the consumed records' offsets and timestamps: the offsets advanced between the
    earliest and the latest record over the seconds their timestamps lie apart (None below ``least_span``)."""
    firsts = [s[2] for s in q if s[2] is not None and s[3] is not None]
    if not firsts:
        return None
    (t0, o0), (t1, o1) = min(firsts), max(s[3] for s in q if s[2] is not None and s[3] is not None)
    seconds = (t1 - t0) / 1000.0
    return (o1 - o0) / seconds if seconds >= least_span and o1 > o0 else None


def rates_to_json(rates: Mapping[str, Mapping[int, float]]) -> dict[str, dict[str, float]]:
    """Rates as layout 2 writes them (JSON keys are text); :func:`read_layout` reads them back."""
    return {t: {str(p): round(float(r), 6) for p, r in sorted(ps.items())} for t, ps in sorted(rates.items()) if ps}


def _number(v: Any, field: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise InvalidSnapshotError(Problem(field, f"must be a finite number >= 0, not {v!r}"))
    return float(v)


def read_layout(doc: Mapping[str, Any]) -> dict[str, Any]:
    """stickyflow's ``user_data`` JSON with its layout made explicit: ``layout`` (1 when absent), ``rates``
    (topic -> partition -> records/s; empty in layout 1), ``rate_window`` and ``capacity`` (None in layout 1).
    Bad load fields raise :class:`stickyflow.InvalidSnapshotError` naming the field.

    >>> read_layout({"generation": 3, "owned": {"t": [0]}})["layout"]
    1
    >>> read_layout({"layout": 2, "rates": {"t": {"0": 2.5}}, "capacity": None})["rates"]
    {'t': {0: 2.5}}
    """
    out = dict(doc)
    layout = out.get("layout", 1)
    if isinstance(layout, bool) or not isinstance(layout, int) or layout < 1:
        raise InvalidSnapshotError(Problem("user_data.layout", f"must be an integer >= 1, not {layout!r}"))
    out["layout"] = layout
    raw = out.get("rates") if layout >= 2 else None
    rates: dict[str, dict[int, float]] = {}
    if raw is not None:
        if not isinstance(raw, Mapping):
            raise InvalidSnapshotError(Problem("user_data.rates", "must be an object of topic -> partition -> rate"))
        for t, ps in raw.items():
            if not isinstance(ps, Mapping):
                raise InvalidSnapshotError(Problem(f"user_data.rates.{t}", "must be an object of partition -> rate"))
            for p, r in ps.items():
                if not str(p).isdigit():
                    raise InvalidSnapshotError(Problem(f"user_data.rates.{t}", f"{p!r} is not a partition number"))
                rates.setdefault(str(t), {})[int(p)] = _number(r, f"user_data.rates.{t}.{p}")
    out["rates"] = rates
    window, capacity = (out.get("rate_window"), out.get("capacity")) if layout >= 2 else (None, None)
    out["rate_window"] = None if window is None else _number(window, "user_data.rate_window")
    if capacity is not None and _number(capacity, "user_data.capacity") <= 0:
        raise InvalidSnapshotError(Problem("user_data.capacity", f"must be a number > 0, not {capacity!r}"))
    out["capacity"] = None if capacity is None else float(capacity)
    return out


def leader_rates(sizes: Mapping[str, int], reports: Iterable[Mapping[str, Mapping[int, float]]]
                 ) -> dict[str, list[float]]:
    """Every partition's rate (topic -> one per partition) from the members' ``reports`` (topic -> partition ->
    rate); see the module text for the estimate of a partition nobody reports."""
    got: dict[str, dict[int, float]] = {t: {} for t in sizes}
    for report in reports:
        for t, ps in report.items():
            if t not in got:
                continue
            for p, r in ps.items():
                if 0 <= int(p) < sizes[t]:
                    got[t][int(p)] = max(float(r), got[t].get(int(p), 0.0))
    everyone = [r for ps in got.values() for r in ps.values()]
    fallback = statistics.median(everyone) if everyone else 0.0
    out = {}
    for t, n in sizes.items():
        estimate = statistics.median(got[t].values()) if got[t] else fallback
        out[t] = [got[t].get(p, estimate) for p in range(n)]
    return out


def _positive(x: Any, *, zero: bool = False) -> bool:
    ok = isinstance(x, (int, float)) and not isinstance(x, bool) and x < float("inf")
    return ok and (x >= 0 if zero else x > 0)


def with_load_settings(config: Any, balance: str | None, load_slack: float | None) -> Any:
    """``config`` with the assignor's ``balance`` and ``load_slack`` arguments, checked as the reader checks them."""
    from dataclasses import replace

    if balance is not None and balance not in ("count", "load"):
        raise InvalidSnapshotError(Problem("balance", f'must be "count" or "load", not {balance!r}'))
    if load_slack is not None and not _positive(load_slack, zero=True):
        raise InvalidSnapshotError(Problem("load_slack", f"must be a number >= 0, not {load_slack!r}"))
    return replace(config, **({"balance": balance} if balance is not None else {}),
                   **({"load_slack": float(load_slack)} if load_slack is not None else {}))


def member_capacity(capacity: Any) -> float | None:
    """This member's capacity, checked: None, or a finite number > 0."""
    if capacity is not None and not _positive(capacity):
        raise InvalidSnapshotError(Problem("capacity", f"must be a number > 0, not {capacity!r}"))
    return None if capacity is None else float(capacity)


def assigned_rates(snapshot: Any, partitions: Mapping[str, Iterable[int]]) -> dict[str, Any]:
    """``{"rates": ...}`` for one member's assignment ``user_data``: the snapshot's rates of its partitions."""
    return {"rates": rates_to_json({t: {int(p): float(snapshot.topics[t].rates[p]) for p in ps}
                                    for t, ps in partitions.items()
                                    if t in snapshot.topics and snapshot.topics[t].rates is not None})}


def inherited_rates(doc: Mapping[str, Any] | None) -> dict[str, dict[int, float]]:
    """The rates an assignment's ``user_data`` carries (:func:`assigned_rates`); empty when it has none or bad
    ones."""
    if not doc or doc.get("rates") is None:
        return {}
    try:
        return read_layout({"layout": LAYOUT, "rates": doc["rates"]})["rates"]
    except InvalidSnapshotError:
        return {}
