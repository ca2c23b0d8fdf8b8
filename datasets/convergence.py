"""A Streams application played to convergence, and what the whole way costs (issue 37).

A Streams group lives through a series of rebalances: warm-ups, probing
rebalances, then a settled assignment. :func:`converge` plays one snapshot
that way: solve it, take every warm-up and standby of the answer as caught up
(:func:`next_round`), solve the next snapshot, and so on until an answer asks
for no follow-up rebalance. The benchmark (``bench/streams_vs_greedy.py``), the
tests and docs/streams.md all measure convergence with it.

**Total cost** (:attr:`Convergence.total_cost`): every state restoration on
the way, summed over the rounds, at ``non_overlap_cost`` each
(:func:`restorations`: an active task that leaves its previous client, a
standby on a client that held its task in no role, a warm-up on such a
client), plus ``traffic_cost x`` the cross-rack replicas of the assignment it
settles on. The costs are the snapshot's (Kafka's task defaults unless
configured: 1 and 10 for a stateful task, 0 and 1 for a stateless one);
without a rack-aware strategy every restoration counts 1 and there is no
traffic cost, as in the spec's cost.

**The next round** (:func:`next_round`): each client reports what it ran as
``previous_active`` (lag ``-2``) and its standbys and warm-ups as
``previous_standby`` (warm-ups travel as standbys, as in Kafka), all caught up
(lag 0). A task it no longer holds leaves no state behind by default (its
state directory is cleaned up: a later return restores it again);
``keep_state=True`` keeps it on disk, caught up as when it was dropped.
``now_ms`` advances by ``probing_rebalance_interval_ms``.

>>> import stickyflow
>>> doc = {"format": "stickyflow.snapshot/1", "kind": "streams",
...        "tasks": [{"id": f"0_{i}", "stateful": True, "end_offset_sum": 10**6} for i in range(4)],
...        "clients": [{"process_id": "a", "previous_active": ["0_0", "0_1", "0_2", "0_3"],
...                     "previous_standby": []},
...                    {"process_id": "b", "previous_active": [], "previous_standby": []}]}
>>> run = converge(doc, "optimal")
>>> run.rounds, run.restorations, run.total_cost, run.round_bound   # two warm-ups on b, then two moves
(2, (2, 2), 4, 3)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

__all__ = ["Convergence", "converge", "next_round", "restorations", "round_bound", "settled_excess",
           "at_least_as_balanced"]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Convergence:
    """One assignor's way from a snapshot to a settled assignment (:func:`converge`).

    ``rounds``: rebalances played, the last one included; ``converged``: the last
    asked for no follow-up (else the horizon ended the play); ``restorations``:
    each round's (:func:`restorations`); ``traffic``: ``traffic_cost x``
    cross-rack replicas of the last assignment (0 without a rack-aware
    strategy); ``total_cost``: their sum; ``round_bound``: :func:`round_bound`
    of the first snapshot; ``excess``: how far the last assignment is from
    **Balanced** in each count (:func:`settled_excess`); ``snapshots``,
    ``results``: every round's, in order.
    """

    assignor: str
    rounds: int
    converged: bool
    restorations: tuple[int, ...]
    traffic: int
    total_cost: int
    round_bound: int
    excess: dict[str, int | None]
    snapshots: tuple[Any, ...]
    results: tuple[Any, ...]

    @property
    def last(self) -> Any:
        """The last round's result."""
        return self.results[-1]


def converge(snapshot: Any, assignor: str = "optimal", *, horizon: int | None = None, keep_state: bool = False,
             check: Callable[[Any, Any], None] | None = None, **options: Any) -> Convergence:
    """Play ``snapshot`` with ``assignor`` until a result asks for no follow-up, or ``horizon`` rebalances.

    ``snapshot``: anything :func:`stickyflow.assign` takes; ``horizon``: at
    most this many rebalances (default: twice :func:`round_bound`, as Kafka's
    convergence test allows); ``check(snapshot, result)`` runs after every
    round (the tests' checker); ``options`` go to :func:`stickyflow.assign`
    (``time_limit``, ``seed``, ``method``, ...). See the module docstring for
    the rules and the cost.
    """
    import stickyflow
    from stickyflow.model.streams import streams_to_json

    snap = stickyflow.as_snapshot(snapshot)
    if snap.kind != "streams":
        raise ValueError(f"converge plays Streams snapshots, not {snap.kind!r} ones")
    bound = round_bound(snap)
    horizon = 2 * bound if horizon is None else int(horizon)
    doc = streams_to_json(snap)
    snaps: list[Any] = []
    results: list[Any] = []
    paid: list[int] = []
    while True:
        result = stickyflow.assign(snap, assignor, **options)
        if check is not None:
            check(snap, result)
        snaps.append(snap)
        results.append(result)
        paid.append(restorations(snap, result))
        if result.followup_rebalance_deadline_ms is None or len(results) >= horizon:
            break
        doc = next_round(doc, result, keep_state=keep_state)
        snap = stickyflow.parse_snapshot(doc)
    last = results[-1]
    traffic = int(last.metrics.get("traffic_cost") or 0) if snap.config.rack_aware else 0
    return Convergence(assignor=assignor, rounds=len(results),
                       converged=last.followup_rebalance_deadline_ms is None, restorations=tuple(paid),
                       traffic=traffic, total_cost=sum(paid) + traffic, round_bound=bound,
                       excess=settled_excess(snap, last), snapshots=tuple(snaps), results=tuple(results))


def restorations(snapshot: Any, result: Any) -> int:
    """The state restorations of one round, at ``non_overlap_cost`` each (1 each without a rack-aware strategy).

    An active task that leaves its previous client, a standby on a client that held its task in no role
    before (a standby move), and a warm-up on such a client: each restores the task's state there. A warm-up
    on a client that held a standby of the task continues that standby's state and costs nothing.
    """
    from stickyflow.check.streams import assignment_arrays, normalize_streams_assignment

    snap = snapshot
    idx = snap.index
    cfg = snap.config
    T = len(idx.task_ids)
    if not T or not len(idx.client_ids):
        return 0
    a = assignment_arrays(snap, normalize_streams_assignment(snap, result.assignment))
    if cfg.rack_aware:
        noc = np.where(idx.stateful, cfg.non_overlap_cost(), cfg.non_overlap_cost(stateless=True)).astype(np.int64)
    else:
        noc = np.ones(T, dtype=np.int64)
    held = np.unique(np.concatenate([idx.prev_active_client * T + idx.prev_active_task,
                                     idx.prev_standby_client * T + idx.prev_standby_task]))
    moved = np.zeros(T, dtype=bool)
    pt, pc = idx.prev_active_task, idx.prev_active_client
    moved[pt[a.active[pt] != pc]] = True
    rt = np.concatenate([a.standby_task, a.warmup_task])
    rc = np.concatenate([a.standby_client, a.warmup_client])
    fresh = ~np.isin(rc * T + rt, held)
    return int(noc[moved].sum()) + int(noc[rt[fresh]].sum())


def next_round(doc: dict[str, Any], result: Any, *, keep_state: bool = False, now_step: int | None = None
               ) -> dict[str, Any]:
    """The snapshot (spec JSON) of the rebalance after ``result``: its warm-ups and standbys caught up.

    Each client reports what it ran as ``previous_active`` and its standbys and warm-ups as
    ``previous_standby``, at lag 0. A task it no longer holds keeps no state, or, with ``keep_state``, the
    state it had (a task it ran until now: caught up). ``now_ms`` advances by ``now_step`` (default
    ``probing_rebalance_interval_ms``).
    """
    cfg = doc.get("config") or {}
    step = now_step if now_step is not None else int(cfg.get("probing_rebalance_interval_ms", 600_000))
    out = dict(doc)
    out["now_ms"] = int(doc.get("now_ms") or 0) + step
    clients = []
    for c in doc["clients"]:
        a = result.assignment[c["process_id"]]
        lags: dict[str, int] = {}
        if keep_state:
            lags.update(c.get("lags") or {})
            lags.update((tid, 0) for tid in c.get("previous_active", ()))  # it ran the task until now
        for tid in a.active:
            lags.pop(tid, None)  # it runs the task: lag -2, as an absent entry says
        lags.update((tid, 0) for tid in a.standby + a.warmup)
        d = dict(c)
        d["previous_active"] = list(a.active)
        d["previous_standby"] = list(a.standby + a.warmup)
        d["lags"] = lags
        clients.append(d)
    out["clients"] = clients
    return out


def round_bound(snapshot: Any) -> int:
    """The most rebalances a convergence may take: stateful tasks x (1 + standbys per task) over the warm-up
    budget (``max_warmup_replicas``; one learner in learner mode), rounded up, plus 1.

    >>> round_bound({"format": "stickyflow.snapshot/1", "kind": "streams",
    ...              "tasks": [{"id": f"0_{i}", "stateful": True} for i in range(5)],
    ...              "clients": [{"process_id": p, "previous_active": [], "previous_standby": []} for p in "ab"],
    ...              "config": {"num_standby_replicas": 1, "max_warmup_replicas": 3}})
    5
    """
    import stickyflow

    snap = stickyflow.as_snapshot(snapshot)
    n = int(np.count_nonzero(snap.index.stateful))
    budget = 1 if snap.config.rebalancing_mode == "learner" else snap.config.max_warmup_replicas
    return math.ceil(n * (1 + snap.standbys_per_task()) / budget) + 1


def settled_excess(snapshot: Any, result: Any) -> dict[str, int | None]:
    """How far each count of **Balanced** of ``result``'s assignment is from balanced (0: balanced): (1)
    ``active`` tasks, (2) ``stateful`` actives, (3) ``replicas`` and, under ``balance_subtopology``, (4)
    ``subtopology``, each subtopology's summed (None otherwise); see
    :func:`stickyflow.check.streams.balance_excess`.
    """
    from stickyflow.check.streams import assignment_arrays, balance_excess, normalize_streams_assignment

    snap = snapshot
    idx = snap.index
    C = len(idx.client_ids)
    th, bf = idx.threads, snap.config.balance_factor
    a = assignment_arrays(snap, normalize_streams_assignment(snap, result.assignment))
    act = np.bincount(a.active_client, minlength=C)
    stf = np.bincount(a.active_client[idx.stateful[a.active_task]], minlength=C)
    rep = act + np.bincount(a.standby_client, minlength=C) + np.bincount(a.warmup_client, minlength=C)
    out: dict[str, int | None] = {"active": balance_excess(act, th, bf), "stateful": balance_excess(stf, th, bf),
                                  "replicas": balance_excess(rep, th, bf), "subtopology": None}
    if snap.config.rack_aware_assignment_strategy == "balance_subtopology" and C:
        subs = np.fromiter((t.subtopology for t in snap.tasks), dtype=np.int64, count=len(snap.tasks))
        sub_of = subs[a.active_task]
        out["subtopology"] = int(sum(balance_excess(np.bincount(a.active_client[sub_of == g], minlength=C), th, bf)
                                     for g in np.unique(subs).tolist()))
    return out


def at_least_as_balanced(excess: dict[str, int | None], other: dict[str, int | None]) -> bool:
    """Whether ``excess`` (:func:`settled_excess`) is no farther from **Balanced** than ``other`` in every count.

    >>> at_least_as_balanced({"active": 0, "replicas": 2}, {"active": 0, "replicas": 3})
    True
    """
    return all((excess.get(k) or 0) <= (other.get(k) or 0) for k in set(excess) | set(other))
