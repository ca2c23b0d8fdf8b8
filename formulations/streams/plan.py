r"""What a streams solver returns (:class:`StreamsPlan`), what it costs, and the plan as a decision.

A plan holds per task its target, what runs this round, its warm-up and its standbys; its cost is the
spec's objective (:func:`plan_cost`: this round; :func:`target_cost`: the converged assignment and the way
there, :func:`waiting_cost` and :func:`path_cost` its parts). :func:`plan_decision` decodes a plan into the
result (decode ends with the validity check's arrays), :func:`decision_plan` reads a decision back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stickyflow.check.streams import assignment_arrays, balance_excess
from stickyflow.model.arrays import in_sorted
from stickyflow.model.streams import ClientAssignment, task_key
from stickyflow.result import Decision

from .model import StreamsModel

__all__ = ["StreamsPlan", "plan_cost", "target_cost", "waiting_cost", "path_cost", "plan_decision", "movements",
           "choose_warmups", "task_rank", "round_standbys", "converged_standbys", "plan_standbys", "replica_counts",
           "count_excess", "decision_plan"]



# --------------------------------------------------------------------------- what a solver returns

@dataclass(slots=True, eq=False)
class StreamsPlan:
    """A solved round: per task its target, what runs, warm-up and standbys (client indexes, -1 for none).

    ``standby`` is (T, want), this round's. ``converged`` is (T, want), the
    standbys once every movement has moved, or None where they follow from
    this round's (:func:`converged_standbys`: a movement's standby on its
    target is its holder's once it moved); a task that waits may hold its
    standbys this round elsewhere than once converged (CP-SAT's plans say
    so). ``bound`` is a proven lower bound on the cost of the converged
    (target) assignment among those the rules allow, or None.
    """

    target: np.ndarray
    active: np.ndarray
    warmup: np.ndarray
    standby: np.ndarray
    method: str
    status: str
    bound: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    converged: np.ndarray | None = None


def _standby_pairs(m: StreamsModel, plan: StreamsPlan, converged: bool = False
                   ) -> tuple[np.ndarray, np.ndarray]:
    if not m.want:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    st = np.repeat(np.arange(m.T), m.want)
    sc = (plan_standbys(m, plan) if converged else plan.standby).reshape(-1)
    ok = sc >= 0
    return st[ok], sc[ok]


def round_standbys(m: StreamsModel, target: np.ndarray, converged: np.ndarray) -> np.ndarray:
    """This round's standbys (T x want) from the converged ones, which sit on clients other than the target.

    A movement runs on its holder this round; a converged standby on the holder is, this round, a standby on
    the target instead, catching up there in a warm-up's place (the holder takes the standby once the task
    has moved). Every client's replica count is the same either way.

    >>> m = type("M", (), {"want": 1, "T": 2})()
    >>> m.constrained, m.holder = np.array([True, False]), np.array([0, -1])
    >>> m.cu_keys, m.T = np.array([0 * 2 + 0]), 2   # client 0 is caught up on task 0
    >>> round_standbys(m, np.array([1, 1]), np.array([[0], [0]])).tolist()   # task 0 moves 0 -> 1
    [[1], [0]]
    """
    if not m.want or not m.T:
        return converged
    moving = movements(m, target)
    swap = moving[:, None] & (converged == m.holder[:, None])
    return np.where(swap, target[:, None], converged)


def plan_standbys(m: StreamsModel, plan: StreamsPlan) -> np.ndarray:
    """A plan's converged standbys (T x want): its own where it says, else :func:`converged_standbys`."""
    if plan.converged is not None:
        return plan.converged
    return converged_standbys(m, plan.target, plan.standby)


def converged_standbys(m: StreamsModel, target: np.ndarray, standby: np.ndarray) -> np.ndarray:
    """The inverse of :func:`round_standbys`: a movement's standby on its target is the holder's once it moved."""
    if not m.want or not m.T:
        return standby
    moving = movements(m, target)
    swap = moving[:, None] & (standby == target[:, None])
    return np.where(swap, m.holder[:, None], standby)


def plan_cost(model: StreamsModel, plan: StreamsPlan) -> int:
    """The spec's cost of what runs this round (``streams_metrics(...)["cost"]`` of the decision)."""
    m = model
    if not m.T or not m.C:
        return 0
    t = np.arange(m.T)
    cost = int(m.active_cost(t, plan.active).sum())
    w = plan.warmup >= 0
    cost += int(m.replica_cost(t[w], plan.warmup[w]).sum())
    st, sc = _standby_pairs(m, plan)
    cost += int(m.standby_cost(st, sc).sum())
    return cost


def target_cost(model: StreamsModel, plan: StreamsPlan) -> int:
    """What the plan costs until it has converged: the converged assignment (targets as actives, the converged
    standbys, :func:`plan_standbys`) and the way there (:func:`path_cost`, :func:`waiting_cost`)."""
    m = model
    if not m.T or not m.C:
        return 0
    cost = int(m.active_cost(np.arange(m.T), plan.target).sum())
    st, sc = _standby_pairs(m, plan, converged=True)
    return cost + int(m.standby_cost(st, sc).sum()) + path_cost(m, plan.target) + waiting_cost(m, plan)


def waiting_cost(m: StreamsModel, plan: StreamsPlan) -> int:
    """What this round of a plan costs on the way beyond :func:`path_cost`, every restoration at ``noc``.

    A client keeps no state of a task it no longer holds. So a standby of a waiting task this round on a
    client that neither held the task nor keeps it once converged is restored for this round alone (one on
    the movement's target is the movement's own restoration, in its way); a converged standby on a client that
    held the task but does not keep it this round is restored once the task has moved (not on the holder,
    which runs it meanwhile); and a movement whose target held the task, with neither a warm-up nor a standby
    there this round, loses that state: its turn restores it again. A plan whose standbys follow
    :func:`round_standbys` pays none of the first two, and with warm-ups first where the target held the task
    (:func:`choose_warmups`) the third only beyond the warm-up budget.

    >>> m = type("M", (), {"T": 1, "C": 3, "want": 1, "budget": 1, "noc": np.array([1])})()
    >>> m.constrained, m.cu_keys = np.array([True]), np.array([0 * 1 + 0])   # client 0 caught up on the task
    >>> m.holder = np.array([0])                      # ... and runs it while it waits
    >>> m.held_keys = np.array([0, 1])                # clients 0 and 1 held it; client 2 did not
    >>> plan = type("P", (), {"target": np.array([1]), "warmup": np.array([-1]), "converged": np.array([[0]])})()
    >>> plan.standby = np.array([[1]]); waiting_cost(m, plan)   # a standby on the target keeps its state
    0
    >>> plan.standby = np.array([[2]]); waiting_cost(m, plan)   # 2 only this round, and 1's state is lost
    2
    >>> plan.converged, plan.target = np.array([[1]]), np.array([2])
    >>> plan.standby = np.array([[2]]); waiting_cost(m, plan)   # 1 drops its state, taken up again later
    1
    """
    if not m.T or not m.C:
        return 0
    T = m.T
    mv = np.flatnonzero(movements(m, plan.target))
    if not len(mv):
        return 0
    tg = plan.target[mv]
    kept = plan.warmup[mv] == tg
    cost = 0
    if m.want:
        now = plan.standby[mv]
        conv = plan_standbys(m, plan)[mv]
        kept |= (now == tg[:, None]).any(axis=1)
        rt = np.repeat(mv, m.want)
        rc = now.reshape(-1)
        only_now = (rc >= 0) & (rc != np.repeat(tg, m.want)) & ~(now[:, :, None] == conv[:, None, :]).any(axis=2
                                                                                                       ).reshape(-1)
        only_now &= ~in_sorted(rc * T + rt, m.held_keys)
        cost += int(m.noc[rt[only_now]].sum())
        cc = conv.reshape(-1)
        dropped = (cc >= 0) & (cc != np.repeat(m.holder[mv], m.want)) & in_sorted(cc * T + rt, m.held_keys) & \
            ~(conv[:, :, None] == now[:, None, :]).any(axis=2).reshape(-1)
        cost += int(m.noc[rt[dropped]].sum())
    lost = in_sorted(tg * T + mv, m.held_keys) & ~kept
    return cost + int(m.noc[mv[lost]].sum())


def path_cost(m: StreamsModel, target: np.ndarray) -> int:
    """What the movements of ``target`` cost on the way, beyond the converged assignment
    (:meth:`StreamsModel.movement_cost`): the restorations of their state and the moves of waiting."""
    if not m.T:
        return 0
    mv = np.flatnonzero(movements(m, target))
    return int(m.movement_cost(mv, target[mv]).sum())


def movements(model: StreamsModel, target: np.ndarray) -> np.ndarray:
    """Tasks whose target client is not eligible (caught up, or least lag) while some client is (mask)."""
    m = model
    if not m.T:
        return np.zeros(0, dtype=bool)
    keys = target * m.T + np.arange(m.T)
    return m.constrained & ~in_sorted(keys, m.cu_keys)


def choose_warmups(model: StreamsModel, target: np.ndarray, moving: np.ndarray, active: np.ndarray) -> np.ndarray:
    """Warm-ups for up to ``budget`` movements (-1 elsewhere): first those whose target held the task in some
    role (its state there goes on restoring; a movement left waiting loses it, and pays a restoration when its
    turn comes), then the cheapest, ties in TaskId order.

    In learner mode the one learner is a task of the most loaded client (active tasks per thread).
    """
    m = model
    warm = np.full(m.T, -1, dtype=np.int64)
    tasks = np.flatnonzero(moving)
    if not len(tasks) or m.budget <= 0:
        return warm
    rank = task_rank(m)
    cost = m.replica_cost(tasks, target[tasks])
    fresh = ~in_sorted(target[tasks] * m.T + tasks, m.held_keys)
    if m.learner:
        load = np.bincount(active, minlength=m.C) / m.threads
        order = np.lexsort((rank[tasks], cost, fresh, -load[active[tasks]]))
    else:
        order = np.lexsort((rank[tasks], cost, fresh))
    pick = tasks[order[:m.budget]]
    warm[pick] = target[pick]
    return warm


def task_rank(model: StreamsModel) -> np.ndarray:
    """Each task's position in Kafka's TaskId order."""
    r = model.extra.get("task_rank")
    if r is None:
        ids = model.snap.index.task_ids
        order = sorted(range(model.T), key=lambda i: task_key(ids[i]))
        r = np.empty(model.T, dtype=np.int64)
        r[np.asarray(order, dtype=np.int64)] = np.arange(model.T)
        model.extra["task_rank"] = r
    return r


def plan_decision(model: StreamsModel, plan: StreamsPlan) -> Decision:
    """The :class:`Decision` of a plan: process id -> roles, cost, bound, follow-up.

    ``objective`` is the cost of what runs (the result's ``metrics.cost``);
    ``bound`` is the proven bound when nothing waits (what runs is then the
    converged assignment), else None. ``extra`` carries ``target_cost`` and
    ``target_bound``: the converged assignment's cost and the proven bound on
    it, which ``status`` (``"optimal"`` when they meet) is about. In learner
    mode the fewest movements come first (:func:`round_price`): the bound is
    then on the plans with no more movements than this one.
    """
    m = model
    snap = m.snap
    idx = snap.index
    ids = idx.task_ids
    rank = task_rank(m)
    roles: dict[str, list[list[int]]] = {pid: [[], [], []] for pid in idx.client_ids}
    if m.T and m.C:
        t = np.arange(m.T)
        pairs = [(plan.active, t, 0)]
        w = plan.warmup >= 0
        pairs.append((plan.warmup[w], t[w], 2))
        st, sc = _standby_pairs(m, plan)
        pairs.append((sc, st, 1))
        cids = idx.client_ids
        for cs, ts, role in pairs:
            order = np.lexsort((rank[ts], cs))
            cs, ts = cs[order], ts[order]
            bounds = np.searchsorted(cs, np.arange(m.C + 1))
            tl = ts.tolist()
            for c in np.flatnonzero(np.diff(bounds)).tolist():
                roles[cids[c]][role] = tl[bounds[c]:bounds[c + 1]]
    assignment = {pid: ClientAssignment(active=tuple(ids[i] for i in a), standby=tuple(ids[i] for i in s),
                                        warmup=tuple(ids[i] for i in w))
                  for pid, (a, s, w) in roles.items()}
    moving = movements(m, plan.target) if m.T and m.C else np.zeros(0, dtype=bool)
    covered = moving & (plan.standby == plan.target[:, None]).any(axis=1) if m.want and m.T else \
        np.zeros(m.T, dtype=bool)
    waits = bool((plan.warmup >= 0).any() or covered.any())
    followup = snap.followup_deadline() if waits else None
    cost = plan_cost(m, plan)
    tcost = target_cost(m, plan)
    bound = plan.bound
    status = plan.status
    extra = dict(plan.extra)
    extra.pop("task_rank", None)
    extra.update(movements=int(moving.sum()), covered_by_standby=int(covered.sum()),
                 warmups=int((plan.warmup >= 0).sum()))
    if bound is not None and bound > tcost:  # never claim a bound the solution beats: a bug, not a bound
        bound = None
    if status == "optimal" and bound is not None and bound != tcost:
        status = "feasible"
    # learner mode: the round price of the plan's movements, out of what is reported; a bound less that price
    # still bounds the cost of every plan with no more movements (each pays the price at least that often)
    paid = m.round_price * int(moving.sum())
    if m.round_price:
        extra["round_price"] = m.round_price
    tcost -= paid
    bound = None if bound is None else bound - paid
    extra.update(target_cost=tcost, target_bound=bound)
    if waits:  # what runs is not the converged assignment: the bound (on that one) is in extra only
        bound = None
    return Decision(assignment=assignment, method=plan.method, status=status, objective=cost, bound=bound,
                    reason=extra.get("reason"), followup_rebalance_deadline_ms=followup, extra=extra)


def replica_counts(m: StreamsModel, plan: StreamsPlan) -> np.ndarray:
    """Replicas (active + standby) per client in the converged assignment the plan aims for: targets as
    actives, the converged standbys (:func:`converged_standbys`)."""
    sc = plan_standbys(m, plan).reshape(-1)
    return np.bincount(plan.target, minlength=m.C) + np.bincount(sc[sc >= 0], minlength=m.C)


def count_excess(m: StreamsModel, plan: StreamsPlan) -> dict[str, int]:
    """How far each count of the converged assignment (targets as actives, converged standbys) is from
    **Balanced** (:func:`balance_excess`): active tasks, stateful actives, replicas, and under
    ``balance_subtopology`` the subtopologies' summed."""
    C, bf, th = m.C, m.bf, m.threads
    tg = plan.target
    out = {"active": balance_excess(np.bincount(tg, minlength=C), th, bf),
           "stateful": balance_excess(np.bincount(tg[m.stateful], minlength=C), th, bf),
           "replicas": balance_excess(replica_counts(m, plan), th, bf)}
    if m.sub_balance:
        out["subtopology"] = sum(balance_excess(np.bincount(tg[m.sub == g], minlength=C), th, bf) for g in range(m.G))
    return out


def decision_plan(model: StreamsModel, decision: Decision, method: str = "greedy") -> StreamsPlan:
    """The plan of another assignor's decision (roughly the inverse of :func:`plan_decision`), e.g. a hint.

    A task's target is its warm-up's client where it has one, else where it runs;
    a standby catching up in a warm-up's place reads as an ordinary standby.
    Run it through :func:`plan_decision` and the check before relying on it.
    """
    m = model
    arr = assignment_arrays(m.snap, decision.assignment)
    warmup = np.full(m.T, -1, dtype=np.int64)
    warmup[arr.warmup_task] = arr.warmup_client
    standby = np.full((m.T, m.want), -1, dtype=np.int64)
    order = np.argsort(arr.standby_task, kind="stable")  # each task's standbys in the decision's order
    st, sc = arr.standby_task[order], arr.standby_client[order]
    rank = np.arange(len(st)) - np.searchsorted(st, st)  # a standby's place among its task's
    keep = rank < m.want
    standby[st[keep], rank[keep]] = sc[keep]
    target = np.where(warmup >= 0, warmup, arr.active)
    return StreamsPlan(target=target, active=arr.active.copy(), warmup=warmup, standby=standby, method=method,
                       status="feasible")
