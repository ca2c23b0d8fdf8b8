"""KIP-441's ranking of clients per stateful task, and "are there available movements?".

:func:`rank` gives every stateful task its candidate clients, best first:
rank 0 for every caught-up client (lag at most ``acceptable_recovery_lag``, or
it was running the task: one rank, as in the KIP), then the others with their
lag as rank. The lag is :meth:`~stickyflow.model.streams.Client.lag`, the one lag
rule (reports clamped to the end offset sum), so the ranking agrees with
:meth:`~stickyflow.model.streams.StreamsSnapshot.is_caught_up` and with the check.
:func:`should_rebalance` proposes the balanced assignment (the
high-availability assignor's target) and reports the movements from the current
owner whose destination is a top-ranked candidate: those can happen at once,
with no warm-up.

>>> from stickyflow.model.streams import parse_streams
>>> snap = parse_streams({"format": "stickyflow.snapshot/1", "kind": "streams",
...     "tasks": [{"id": "0_0", "stateful": True, "end_offset_sum": 10**6},
...               {"id": "0_1", "stateful": True, "end_offset_sum": 10**6}],
...     "clients": [{"process_id": "a", "previous_active": ["0_0", "0_1"], "previous_standby": []},
...                 {"process_id": "b", "previous_active": [], "previous_standby": ["0_1"],
...                  "lags": {"0_1": 50}}]})
>>> [(r.process_id, r.rank) for r in rank(snap)["0_1"]]
[('a', 0), ('b', 0)]
>>> check = should_rebalance(snap)
>>> bool(check), [(m.task, m.source, m.destination) for m in check.available]
(True, [('0_1', 'a', 'b')])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ..model.streams import StreamsSnapshot

__all__ = ["RankedClient", "Movement", "RebalanceCheck", "rank", "should_rebalance"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RankedClient:
    """A candidate client of a task: ``rank`` 0 when caught up, else its lag.

    ``lag`` is :meth:`Client.lag` (0: running it; a report above the task's
    ``end_offset_sum`` counts as ``end_offset_sum``), the same lag the check and
    the assignors read, so rank 0 here means caught up there.
    """

    process_id: str
    rank: int
    lag: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Movement:
    """An active task moving from ``source`` (None: it had no owner) to ``destination``."""

    task: str
    source: str | None
    destination: str


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class RebalanceCheck:
    """The answer of :func:`should_rebalance`; true when some movement is available.

    ``proposed`` maps every stateful task to its client in the balanced
    assignment; ``movements`` are all tasks whose owner differs from it;
    ``available`` those whose destination is a top-ranked candidate.
    """

    proposed: Mapping[str, str]
    movements: tuple[Movement, ...]
    available: tuple[Movement, ...]

    def __bool__(self) -> bool:
        return bool(self.available)


def _streams(snapshot: Any) -> StreamsSnapshot:
    """What :func:`stickyflow.assign` accepts (object, dict, JSON text, path), as a Streams snapshot."""
    from ..errors import InvalidSnapshotError, Problem
    from ..snapshot import as_snapshot

    snap = as_snapshot(snapshot)
    if snap.kind != "streams":
        raise InvalidSnapshotError(Problem("kind", f'must be "streams" here (lags and ranks are a Streams idea), '
                                                   f'not "{snap.kind}"'))
    return snap


def rank(snapshot: Any, tasks: Iterable[str] | None = None) -> dict[str, tuple[RankedClient, ...]]:
    """Every stateful task (or those of ``tasks``) -> its clients ranked by lag, caught-up ones first as rank 0.

    ``snapshot`` is anything :func:`stickyflow.assign` takes (a snapshot, a dict, JSON text, a path).
    Ties within a rank go by process id. Cost: tasks x clients objects; pass
    ``tasks`` on big applications.
    """
    snap = _streams(snapshot)
    arl = snap.config.acceptable_recovery_lag
    wanted = None if tasks is None else set(tasks)
    out: dict[str, tuple[RankedClient, ...]] = {}
    clients = sorted(snap.clients, key=lambda c: c.process_id)
    for t in snap.tasks:
        if not t.stateful or (wanted is not None and t.id not in wanted):
            continue
        ranked = []
        for c in clients:
            lag = c.lag(t)  # the one lag rule: never re-derive it from c.lags here
            ranked.append(RankedClient(process_id=c.process_id, rank=0 if lag <= arl else lag, lag=lag))
        ranked.sort(key=lambda r: r.rank)  # stable: process id order within a rank
        out[t.id] = tuple(ranked)
    return out


def should_rebalance(snapshot: Any, assignment: Mapping[str, Any] | None = None) -> RebalanceCheck:
    """Propose the balanced assignment and report the movements that can happen now.

    ``snapshot`` is anything :func:`stickyflow.assign` takes.
    ``assignment`` (process id -> ``ClientAssignment`` or role mapping) is the
    current one; by default the clients' ``previous_active`` tasks. A movement
    is available when its destination is among the task's top-ranked
    candidates (caught up, or the least lagging when none is).
    """
    from .streams_ha import HAState, balanced_target

    snap = _streams(snapshot)
    st = HAState(snap)
    idx = snap.index
    current: dict[str, str] = {}
    if assignment is None:
        for c, t in zip(idx.prev_active_client.tolist(), idx.prev_active_task.tolist()):
            current.setdefault(idx.task_ids[t], idx.client_ids[c])
    else:
        from ..check.streams import normalize_streams_assignment

        for pid, ca in normalize_streams_assignment(snap, assignment).items():
            for tid in ca.active:
                current.setdefault(tid, pid)
    stateful = [t for t in st.task_order if st.stateful[t]]
    target = balanced_target(st, stateful)
    proposed = {idx.task_ids[t]: idx.client_ids[c] for t, c in zip(stateful, target)}
    movements = []
    available = []
    for t, c in zip(stateful, target):
        tid = idx.task_ids[t]
        src = current.get(tid)
        dst = idx.client_ids[c]
        if src == dst:
            continue
        m = Movement(task=tid, source=src, destination=dst)
        movements.append(m)
        top = st.caught_up(c, t) or st.lag(c, t) <= st.most_caught_up_lag(t)
        if top:
            available.append(m)
    return RebalanceCheck(proposed=proposed, movements=tuple(movements), available=tuple(available))
