r"""A sticky plan for balance by load, fast and in numpy only: the load optimizer's plan at scale, and its fallback.

Given a target peak ``U`` (the optimizer passes ``(1 + slack)`` times its proven bound), every member ``m`` may
hold up to ``U cap_m``. :func:`sticky_plan` then

1. keeps every partition with its valid previous owner, where the owner still reads it (with racks costing more
   than moves, a partition its owner reads across racks is let go when a reader on its racks exists);
2. lets each member above ``U cap_m`` release the least load that brings it down, in few partitions
   (:func:`release`: the smallest single partition that covers the excess, or the largest ones that fit in it
   and the smallest that closes the gap, whichever moves less load);
3. deals the released and unowned partitions (:func:`fill`), topic class by topic class, the classes with the
   fewest readers first: the readers are filled up to a common utilization (the water level that the class's
   load reaches over them, at most ``U``), on the replica racks first where racks cost; the partitions too large
   for the room between that level and ``U`` go first, in rounds, to the least utilized readers; the others are
   cut into the rooms along a running sum in partition order, and what straddles two rooms is placed in rounds
   (the largest partitions to the largest rooms), within ``U``;
4. repairs: a member still above ``U`` releases again (partitions that moved already first, which costs nothing
   more), and those are dealt again, a few rounds;
5. where racks cost, a moved partition read across racks goes to a reader on its racks with room (it moves
   anyway); then gives back: a moved partition whose previous owner has room under ``U`` returns to it (the
   largest first), which only lowers the moved load.

Every step is a handful of numpy operations over all partitions, or a loop over topic classes or rounds: no
Python step per partition. With no previous owners this is a balancing greedy (the fallback's non-sticky case).

Where members read different topics and that misses ``U``, :func:`quota_plan` deals by per-class quotas from a
min-cost flow that the caller passes (the core imports no solver); :func:`planned` tries the plans in turn and,
where no sticky one meets ``U``, takes the best balancing candidate (:func:`lpt_plan` among them) repaired toward
the owners, with a note for the result's reason.

>>> from stickyflow.load.problem import LoadProblem, measure
>>> p = LoadProblem.of(rates=[4.0, 3.0, 2.0, 1.0], topic=[0] * 4, reads=[[True]], member_class=[0, 0, 0],
...                    capacity=[1.0] * 3, owner=[0, 0, 1, 1])
>>> x = sticky_plan(p, 4.0)
>>> x.tolist(), measure(p, x).peak
([0, 2, 1, 1], 4.0)
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..check.answer import ArrayAssignment
from ..check.load import cheap_peak_bound
from ..result import Decision
from .problem import (BOUND_MARGIN, LoadProblem, has_local_reader, load_problem, measure, partition_bound,
                      peak_limit, readers_of, topic_classes)

__all__ = ["sticky_plan", "quota_plan", "aimed_plan", "planned", "lpt_plan", "fallback", "release", "fill",
           "give_back", "go_local", "water_level"]

_TOL = 1e-12  # relative: a member counts as above its limit only beyond it by more than float noise
_EXACT_LPT = 20_000  # partitions up to which lpt_plan places one at a time (a fallback's candidate only)
_FLOWS = 32  # quota_plan solves its flow again for at most this many classes (those of the largest partitions)
_ROUNDS = 64  # rounds of dealing large or straddling partitions, at most (each a few numpy steps)


def sticky_plan(problem: LoadProblem, target: float, *, sticky: bool = True, repairs: int = 8) -> np.ndarray:
    """An owner array (partition -> member) that keeps what the previous owners can keep under ``target`` and
    balances the rest (see the module's text). ``sticky=False`` ignores the previous owners."""
    ceiling = np.where(problem.active, target * problem.capacity, 0.0)
    x = _kept(problem, sticky)
    loads = _loads(problem, x)
    release(problem, x, loads, ceiling, held=x >= 0)
    return _finish(problem, x, loads, ceiling, target, sticky=sticky, repairs=repairs)


def _kept(problem: LoadProblem, sticky: bool) -> np.ndarray:
    """Step 1: every partition with its valid previous owner (all -1 when not ``sticky``)."""
    N = problem.n_partitions
    parts = np.arange(N)
    x = np.full(N, -1, dtype=np.int64)
    if sticky:
        own = problem.owner >= 0
        own[own] = problem.allowed(parts[own], problem.owner[own])
        x[own] = problem.owner[own]
        if problem.racks_matter and problem.tc > problem.noc:
            # a move costs noc r, a read across racks tc r for good: let it go where a local reader exists
            away = own & (problem.rates > 0) & problem.far(parts, np.where(own, x, -1)) & has_local_reader(problem)
            x[away] = -1
    return x


def _finish(problem: LoadProblem, x: np.ndarray, loads: np.ndarray, ceiling: np.ndarray, target: float, *,
            sticky: bool, repairs: int) -> np.ndarray:
    """Steps 3 to 5: deal what no member holds, repair what is above its ceiling, give back."""
    pinned = np.zeros(problem.n_partitions, dtype=bool)  # fit under no ceiling: where they went, others make room
    pinned[fill(problem, x, loads, ceiling, target)] = True
    for _ in range(repairs):
        over = loads > ceiling * (1 + _TOL)
        if not over.any():
            break
        moved = (x >= 0) & (x != problem.owner)
        release(problem, x, loads, ceiling, held=moved & ~pinned)  # moving a moved partition again costs nothing
        release(problem, x, loads, ceiling, held=(x >= 0) & ~pinned)
        pinned[fill(problem, x, loads, ceiling, target)] = True
    if problem.racks_matter:
        go_local(problem, x, loads, ceiling)
    if sticky:
        give_back(problem, x, loads, ceiling)
    return x


def go_local(problem: LoadProblem, x: np.ndarray, loads: np.ndarray, ceiling: np.ndarray) -> None:
    """Moved partitions read across racks go to a reader on their replica racks where one has room under its
    ceiling (in place; the largest first, in rounds): they move anyway, so this only lowers rule 4's cost.

    >>> from stickyflow.load.problem import LoadProblem
    >>> p = LoadProblem.of(rates=[2.0, 1.0], topic=[0, 0], reads=[[True]], member_class=[0, 0, 0],
    ...                    capacity=[1.0] * 3, owner=[2, 2], tc=2, rackset=[1, 1], member_rack=[0, 1, 1],
    ...                    cross=[[False, False, False], [False, True, True]])
    >>> x = np.array([1, 0]); loads = np.array([1.0, 2.0, 0.0])
    >>> go_local(p, x, loads, np.array([3.0, 3.0, 0.0])); x.tolist(), loads.tolist()  # member 0 is on rack 0
    ([0, 0], [3.0, 0.0, 0.0])
    """
    parts = np.arange(problem.n_partitions)
    away = np.flatnonzero((x >= 0) & (x != problem.owner) & (problem.rates > 0) & problem.far(parts, x))
    if not len(away):
        return
    pg, who, far = _quota_groups(problem)
    r = problem.rates
    for g in np.unique(pg[away]).tolist():
        local = np.flatnonzero(who[:, g] & (far[:, g] == 0))
        items = away[pg[away] == g]
        if not len(local):
            continue
        was = x[items].copy()
        np.subtract.at(loads, was, r[items])
        x[items] = -1
        left = _rounds(problem, x, loads, ceiling, items[np.lexsort((items, -r[items]))], local)
        back = np.isin(items, left)
        x[items[back]] = was[back]
        np.add.at(loads, was[back], r[items[back]])


def quota_plan(problem: LoadProblem, target: float, transport: Callable[..., np.ndarray | None], *,
               level: float | None = None, sticky: bool = True, repairs: int = 8) -> np.ndarray:
    """The sticky plan for mixed subscriptions: like :func:`sticky_plan`, but each member's load of each topic
    class (where racks cost: of each replica rack set within a class, a "class" below) aims at a quota that
    ``transport(who, held, need, room, cost=, move=)`` gives (float64[M, C] or None: the load optimizer's
    :func:`stickyflow.formulations.load.flow.transport`, a min-cost flow at rule 4's cost). Where subscriptions
    differ, a member's room under ``target`` is worth something only to the classes it reads: the plain deal,
    filling one class at a time up to a water level, can fill a member with one class and leave another class's
    readers without room. Here, class by class, the largest partitions first:

    1. the quotas of the classes not dealt yet, for the room each member has left under ``level`` (default
       ``target``; under ``target`` where ``level`` leaves none), the partitions of those classes that members
       still hold counting as staying (cost 0);
    2. each member above its quota of this class releases the least load of it that brings it down
       (:func:`release`);
    3. the class's free partitions go, in rounds, largest to the member with the most quota left (where it
       fits the quota), at most :data:`_ROUNDS` rounds; the rest are cut into the quotas left along a running
       sum; what fits no quota goes to the largest room under the ceiling less the other classes' quotas,
       then under the ceiling less only the classes dealt already (the next flows then move the partitions
       of the other classes that this member held away from it);
    4. what fits nowhere yet, the repairs and the give-back of :func:`sticky_plan`.

    The loops are over classes and rounds, each a few numpy steps over the members and the class's partitions,
    and one flow for each of the first :data:`_FLOWS` classes (the later ones, of smaller partitions, keep the
    last flow's quotas).

    >>> from stickyflow.formulations.load.flow import transport
    >>> from stickyflow.load.problem import LoadProblem, measure
    >>> p = LoadProblem.of(rates=[3.0, 3.0, 1.0, 1.0], topic=[0, 0, 1, 1], reads=[[True, True], [False, True]],
    ...                    member_class=[0, 1], capacity=[1.0, 1.0], owner=[0, 0, 0, 0])
    >>> quota_plan(p, 6.0, transport).tolist()  # member 1 reads only topic 1: it takes that
    [0, 0, 1, 1]
    """
    M = problem.n_members
    ceiling = np.where(problem.active, target * problem.capacity, 0.0)
    aim = np.where(problem.active, (target if level is None else level) * problem.capacity, 0.0)
    x = _kept(problem, sticky)
    r = problem.rates
    pc, who, far = _quota_groups(problem)
    C = who.shape[1]
    by_class = np.argsort(pc, kind="stable")
    cut = np.searchsorted(pc[by_class], np.arange(C + 1)).tolist()
    eps = float(r.sum()) * 2.0 ** -36  # the quotas are the flow's integers rounded down: not a reason to move
    need = np.bincount(pc, weights=r, minlength=C)
    given = x >= 0
    held = np.zeros((M, C))
    np.add.at(held, (x[given], pc[given]), r[given])
    fixed = np.zeros(M)  # the load of the classes dealt already
    top = np.array([r[by_class[a:z]].max(initial=0.0) for a, z in zip(cut[:-1], cut[1:])])
    todo = np.ones(C, dtype=bool)
    quota = np.zeros((M, C))
    for step, c in enumerate(np.lexsort((np.arange(C), -top)).tolist()):
        for room in (aim - fixed, ceiling - fixed) if step < _FLOWS else ():  # 1
            q = transport(who & todo, held * todo, need * todo, np.maximum(room, 0.0), cost=far, move=problem.noc)
            if q is not None:
                quota = q
                break
        todo[c] = False
        mine = by_class[cut[c]:cut[c + 1]]
        mask = np.zeros(problem.n_partitions, dtype=bool)
        mask[mine[x[mine] >= 0]] = True
        load_c = held[:, c].copy()
        release(problem, x, load_c, quota[:, c] + eps, held=mask)  # 2
        items = mine[x[mine] < 0]
        readers = np.flatnonzero(who[:, c])
        if len(items) and len(readers):  # 3
            readers = readers[np.argsort(far[readers, c], kind="stable")]  # local ones first where rooms tie
            kept_others = held.sum(axis=1) - held[:, c]  # what the next flows may still move
            loads = fixed + kept_others + load_c
            others = (np.maximum(quota - held, 0.0) * todo).sum(axis=1)
            before = loads.copy()
            _deal_quota(problem, x, loads, items[np.lexsort((items, -r[items]))], readers,
                        np.maximum(quota[readers, c] - load_c[readers], 0.0),
                        (np.maximum(ceiling - others, loads), ceiling + kept_others))
            load_c += loads - before
        fixed += load_c
        held[:, c] = 0.0
    return _finish(problem, x, _loads(problem, x), ceiling, target, sticky=sticky, repairs=repairs)


def _quota_groups(problem: LoadProblem) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The groups :func:`quota_plan` deals by: a topic class, and where racks cost, a replica rack set within
    it. Each partition's group (int64[N]), member x group: does the member read it (bool[M, G]), and rule 4's
    cost per unit of load of reading it there (int64[M, G]: ``tc`` across racks, else 0)."""
    tclass, class_reads = topic_classes(problem)
    who = readers_of(problem, class_reads)
    pc = tclass[problem.topic]
    if not problem.racks_matter:
        return pc, who, np.zeros(who.shape, dtype=np.int64)
    sets = problem.cross.shape[0]
    groups, pg = np.unique(pc * sets + problem.rackset, return_inverse=True)
    rack = problem.member_rack
    col = np.where(rack < 0, problem.cross.shape[1] - 1, rack)
    far = problem.cross[groups % sets][:, col].T.astype(np.int64) * problem.tc  # member x group
    return pg.reshape(-1).astype(np.int64), who[:, groups // sets], far


def _deal_quota(problem: LoadProblem, x: np.ndarray, loads: np.ndarray, items: np.ndarray, readers: np.ndarray,
                room: np.ndarray, hards: tuple[np.ndarray, ...]) -> None:
    """Deal ``items`` (decreasing rate) to ``readers`` against their quota ``room`` (in place): rounds of the
    largest items to the largest rooms where they fit, then a running-sum cut of the rest into the rooms, then
    what is left to the readers with the most room under each of ``hards`` in turn (ceilings); what fits
    nowhere stays unassigned (-1)."""
    r = problem.rates
    room = room.copy()
    for _ in range(_ROUNDS):
        n = min(len(items), int(np.count_nonzero(room > 0)))
        if not n:
            break
        by_room = np.argsort(-room, kind="stable")[:n]
        fit = r[items[:n]] <= room[by_room] * (1 + _TOL) + 1e-300
        if not fit.any():
            break
        got, to = items[:n][fit], by_room[fit]
        x[got] = readers[to]
        loads[readers[to]] += r[got]
        room[to] -= r[got]
        items = np.concatenate([items[:n][~fit], items[n:]])
        items = items[np.lexsort((items, -r[items]))]
    if len(items):  # the small rest: a running-sum cut into the rooms, in partition order
        items = np.sort(items)
        by_room = np.argsort(-room, kind="stable")
        rm = np.maximum(room[by_room], 0.0)
        bounds = np.cumsum(rm)
        end = np.cumsum(r[items])
        j = np.searchsorted(bounds, end - r[items], side="right")
        fits = (j < len(rm)) & (end <= bounds[np.minimum(j, len(rm) - 1)] * (1 + _TOL) + 1e-300)
        got = items[fits]
        x[got] = readers[by_room[j[fits]]]
        np.add.at(loads, x[got], r[got])
        rest = items[~fits]
        rest = rest[np.lexsort((rest, -r[rest]))]
        for hard in hards:
            rest = _rounds(problem, x, loads, hard, rest, readers)


def aimed_plan(problem: LoadProblem, bound: float, *,
               transport: Callable[..., np.ndarray | None] | None = None) -> np.ndarray:
    """:func:`planned`'s owner array alone."""
    return planned(problem, bound, transport=transport)[0]


def planned(problem: LoadProblem, bound: float, *,
            transport: Callable[..., np.ndarray | None] | None = None) -> tuple[np.ndarray, str | None]:
    """The plan aimed at rule 2's limit ``lim(bound)`` for a proven ``bound`` on ``U*``, and a note on how it
    was found when not by the sticky plan itself (None then).

    In turn, the first within the limit: :func:`sticky_plan`; where subscriptions differ and ``transport`` is
    given (a min-cost flow, see :func:`quota_plan`), :func:`quota_plan` with the flow aimed at the limit, then
    at the bound itself (more room for whole partitions). Where none is, the candidates are balancing
    (non-sticky) plans, the water-level deal and :func:`lpt_plan`, each repaired by :func:`give_back` (moved
    partitions back to their owners under the limit), and the sticky plan aimed again at the peak the
    balancing one reaches: the best by the rules wins (within the limit first, then the least peak, the
    least cost, the fewest moves), and the note says so.

    >>> from stickyflow.load.problem import LoadProblem
    >>> p = LoadProblem.of(rates=[4.0, 3.0, 2.0, 1.0], topic=[0] * 4, reads=[[True]], member_class=[0, 0],
    ...                    capacity=[1.0] * 2, owner=[0, 0, 0, 0])
    >>> planned(p, 5.0)[0].tolist(), planned(p, 5.0)[1]
    ([1, 0, 0, 1], None)
    """
    target = peak_limit(problem, bound)
    ceiling = np.where(problem.active, target * problem.capacity, 0.0)
    limit = target * (1 + _TOL)  # within the limit, float noise aside
    x = sticky_plan(problem, target)
    if measure(problem, x).peak <= limit:
        return x, None
    mixed = transport is not None and topic_classes(problem)[1].shape[1] > 1
    if mixed:
        for level in (target, bound):
            q = quota_plan(problem, target, transport, level=level)
            if measure(problem, q).peak <= limit:
                return q, None
    candidates = {"the sticky plan": x}
    seeds = [("a balancing water-level deal", sticky_plan(problem, target, sticky=False)),
             ("a balancing lpt", lpt_plan(problem))]
    if mixed:
        seeds.append(("a balancing deal by quotas", quota_plan(problem, target, transport, level=bound, sticky=False)))
    for name, seed in seeds:
        reach = measure(problem, seed).peak
        fits = reach <= limit
        if fits and mixed:  # the seed's load of each class per member as the first quotas: kept where owners can
            candidates[f"the sticky deal to the quotas of {name}"] = quota_plan(
                problem, target, _seeded(transport, _class_loads(problem, seed)))
        candidates[f"the sticky plan aimed at the peak of {name}"] = sticky_plan(problem, reach)
        if fits:
            give_back(problem, seed, _loads(problem, seed), ceiling)
            candidates[name + " with partitions given back to their owners"] = seed
        else:
            candidates[name] = seed
    scores = {k: measure(problem, v) for k, v in candidates.items()}  # once each (a pass over every partition)
    best = min(candidates, key=lambda k: (scores[k].peak > limit, scores[k].key()))
    peak = scores[best].peak
    if peak <= limit:
        return candidates[best], (f"the sticky plan and the deal by flow quotas miss the slack's limit "
                                  f"{target:.6g}: the answer is {best}")
    return candidates[best], (f"no plan found reaches the slack's limit {target:.6g}: the least peak found, "
                              f"{peak:.6g}, is that of {best}")


def _class_loads(problem: LoadProblem, x: np.ndarray) -> np.ndarray:
    """Member x group of :func:`quota_plan`: the load each member holds of each group in ``x``."""
    pg, who, _ = _quota_groups(problem)
    out = np.zeros(who.shape)
    np.add.at(out, (x, pg), problem.rates)
    return out


def _seeded(transport: Callable[..., np.ndarray | None], first: np.ndarray) -> Callable[..., np.ndarray | None]:
    """``transport`` that answers its first call with ``first`` (a whole plan's class loads, which fit)."""
    calls = []

    def quotas(*args: Any, **kwargs: Any) -> np.ndarray | None:
        calls.append(1)
        return first if len(calls) == 1 else transport(*args, **kwargs)
    return quotas


def lpt_plan(problem: LoadProblem, *, exact: int = _EXACT_LPT) -> np.ndarray:
    """A balancing (non-sticky) plan for any subscriptions: Graham's largest-rate-first, exactly (one partition at
    a time) up to ``exact`` partitions, beyond that a round at a time. Every round takes the largest partitions
    not yet placed, at most as many of a topic class as it has readers, and gives each class's, the largest
    first, to its readers of least utilization after taking it (one each, as long as one at a time would do the
    same; the rest wait for the next round). A loop over rounds and the classes in each, a few numpy steps each.

    >>> from stickyflow.load.problem import LoadProblem
    >>> p = LoadProblem.of(rates=[5.0, 4.0, 3.0, 3.0, 1.0], topic=[0, 0, 1, 1, 1], reads=[[True, True], [False, True]],
    ...                    member_class=[0, 1], capacity=[1.0, 1.0], owner=[-1] * 5)
    >>> lpt_plan(p).tolist(), lpt_plan(p, exact=0).tolist()  # topic 0 only member 0 reads
    ([0, 0, 1, 1, 1], [0, 0, 1, 1, 1])
    """
    r = problem.rates
    tclass, class_reads = topic_classes(problem)
    who = readers_of(problem, class_reads)
    pc = tclass[problem.topic]
    n_read = who.sum(axis=0)
    cap = problem.capacity
    x = np.full(problem.n_partitions, -1, dtype=np.int64)
    loads = np.zeros(problem.n_members)
    pending = np.lexsort((np.arange(problem.n_partitions), -r))
    if problem.n_partitions <= exact:  # small: one partition at a time, as Graham's rule says
        readers = [np.flatnonzero(who[:, c]) for c in range(who.shape[1])]
        for p in pending.tolist():
            g = readers[pc[p]]
            m = g[int(np.argmin((loads[g] + r[p]) / cap[g]))]
            x[p] = m
            loads[m] += r[p]
        return x
    width = max(int(problem.active.sum()), 1)
    while len(pending):
        chunk = pending[:width]
        cls = pc[chunk]
        order = np.argsort(cls, kind="stable")  # by class, rates still decreasing within one
        first = np.searchsorted(cls[order], cls[order], side="left")
        take = np.zeros(len(chunk), dtype=bool)
        take[order] = (np.arange(len(chunk)) - first) < n_read[cls[order]]
        for c in np.unique(cls[take]).tolist():
            got = chunk[take & (cls == c)]
            readers = np.flatnonzero(who[:, c])
            to = readers[np.argsort((loads[readers] + r[got[0]]) / cap[readers], kind="stable")[:len(got)]]
            # as one at a time would: the k-th goes on only while its reader is below what the earlier ones reach
            reach = np.minimum.accumulate((loads[to] + r[got]) / cap[to])
            stop = np.flatnonzero(loads[to][1:] / cap[to][1:] >= reach[:-1])
            n = len(got) if not len(stop) else int(stop[0]) + 1
            take[np.flatnonzero(take & (cls == c))[n:]] = False
            x[got[:n]] = to[:n]
            loads[to[:n]] += r[got[:n]]
        pending = np.concatenate([chunk[~take], pending[width:]])
    return x


def fallback(snapshot: Any, options: Any = None) -> Decision:
    """The load-aware stand-in when the load optimizer fails (OR-Tools missing, a crash, an invalid answer):
    :func:`aimed_plan` on the cheap bounds that need no solver (the average, the largest rates, and the
    checker's per-class bound). Sticky like the optimizer, in numpy only; proves nothing (status
    ``"heuristic"``, which the front door reports as ``"fallback"``)."""
    problem, topics, offsets = load_problem(snapshot)
    active = problem.active
    bound = 0.0
    if active.any() and problem.n_partitions:
        average = float(problem.rates.sum()) / float(problem.capacity[active].sum()) * (1 - BOUND_MARGIN)
        bound = max(average, partition_bound(problem), cheap_peak_bound(snapshot) or 0.0)
    x = aimed_plan(problem, bound) if problem.n_partitions and active.any() else \
        np.full(problem.n_partitions, -1, dtype=np.int64)
    return Decision(assignment=ArrayAssignment.of_flat(snapshot, topics, x, offsets), method="greedy",
                    status="heuristic", objective=measure(problem, x).peak if len(x) else 0.0, bound=bound,
                    extra={"peak_bound": bound})


def _loads(problem: LoadProblem, x: np.ndarray) -> np.ndarray:
    given = x >= 0  # (bincount of nothing is an int64 array, weights or not: float64 asked for)
    return np.bincount(x[given], weights=problem.rates[given], minlength=problem.n_members).astype(np.float64)


def release(problem: LoadProblem, x: np.ndarray, loads: np.ndarray, ceiling: np.ndarray, held: np.ndarray) -> None:
    """Members above their ``ceiling`` let go of partitions among ``held`` (in place: ``x`` -1, ``loads`` less).

    Per member, with excess ``e`` and its candidates by decreasing rate: A, the smallest partition of rate
    ``>= e``; B, the largest ones below ``e`` while their sum stays ``<= e``, then the smallest remaining one
    that closes the gap. The one of less load wins (A on a tie: one move). Partitions without load never help
    and are never released. When the candidates cannot cover the excess, all of them go.

    >>> from stickyflow.load.problem import LoadProblem
    >>> p = LoadProblem.of(rates=[5.0, 3.0, 2.0, 1.0], topic=[0] * 4, reads=[[True]], member_class=[0, 0],
    ...                    capacity=[1.0, 1.0], owner=[0] * 4)
    >>> x = np.zeros(4, dtype=np.int64); loads = np.array([11.0, 0.0])
    >>> release(p, x, loads, np.array([7.0, 7.0]), held=x >= 0); x.tolist(), loads.tolist()  # 4 over: 3 + 1
    ([0, -1, 0, -1], [7.0, 0.0])
    """
    excess = loads - ceiling
    over = excess > np.abs(ceiling) * _TOL
    if not over.any():
        return
    r = problem.rates
    cand = np.flatnonzero(held & (x >= 0) & (r > 0))
    cand = cand[over[x[cand]]]
    if not len(cand):
        return
    m = x[cand]
    order = np.lexsort((cand, -r[cand], m))  # by member, rate descending, partition
    cand, m = cand[order], m[order]
    rate = r[cand]
    e = excess[m]
    start = np.searchsorted(m, m, side="left")  # each item's segment start
    pos = np.arange(len(cand)) - start
    members, first = np.unique(m, return_index=True)
    seg = np.repeat(np.arange(len(members)), np.diff(np.append(first, len(m))))

    def seg_sum(v):
        return np.bincount(seg, weights=v, minlength=len(members))

    def seg_cumsum(v):
        c = np.cumsum(v)
        return c - np.repeat(c[first] - v[first], np.diff(np.append(first, len(m))))

    k_ge = seg_sum(rate >= e).astype(np.int64)  # items at least the excess (a prefix)
    a_load = np.where(k_ge > 0, rate[first + np.maximum(k_ge - 1, 0)], np.inf)
    below = pos >= k_ge[seg]
    cs = seg_cumsum(np.where(below, rate, 0.0))
    take = below & (cs <= e)
    t = seg_sum(take).astype(np.int64)
    s = seg_sum(np.where(take, rate, 0.0))
    gap = excess[members] - s
    rest = pos >= (k_ge + t)[seg]
    closing = rest & (rate >= gap[seg])
    n_close = seg_sum(closing).astype(np.int64)
    has_close = (gap > 0) & (n_close > 0)
    close_at = first + k_ge + t + n_close - 1
    b_load = s + np.where(has_close, rate[np.minimum(close_at, len(rate) - 1)], 0.0)
    b_ok = (gap <= 0) | has_close
    use_a = (k_ge > 0) & ((a_load <= b_load) | ~b_ok)
    out = np.zeros(len(cand), dtype=bool)
    # A: the one item; B: the prefix taken, the closing item; neither possible: everything
    a_item = (first + k_ge - 1)[use_a]
    out[a_item] = True
    use_b = ~use_a & b_ok
    out |= take & use_b[seg]
    out[close_at[use_b & has_close]] = True
    out |= ~use_a[seg] & ~b_ok[seg]
    gone = cand[out]
    np.subtract.at(loads, x[gone], r[gone])
    x[gone] = -1


def water_level(loads: np.ndarray, caps: np.ndarray, amount: float) -> float:
    """The utilization ``w`` at which ``sum max(0, w cap - load)`` over these members is ``amount``.

    >>> water_level(np.array([0.0, 2.0, 9.0]), np.array([1.0, 1.0, 1.0]), 4.0)
    3.0
    """
    if not len(loads):
        return 0.0
    u = loads / caps
    order = np.argsort(u, kind="stable")
    u, c, ld = u[order], caps[order], loads[order]
    level = (amount + np.cumsum(ld)) / np.cumsum(c)  # the level if the lowest k take it all
    nxt = np.append(u[1:], np.inf)
    k = int(np.argmax(level <= nxt))
    return float(level[k])


def fill(problem: LoadProblem, x: np.ndarray, loads: np.ndarray, ceiling: np.ndarray, target: float) -> np.ndarray:
    """Deal every partition with ``x == -1`` to readers (in place), as the module's step 3 says; returns those
    that fit under no reader's ceiling (given to the reader whose utilization they raise least)."""
    pool = np.flatnonzero(x < 0)
    over: list[np.ndarray] = []
    if not len(pool):
        return pool
    tclass, class_reads = topic_classes(problem)
    who = readers_of(problem, class_reads)  # member x topic class
    pc = tclass[problem.topic[pool]]
    classes = np.unique(pc)
    # the most constrained first: fewest readers, then least reader capacity
    n_read = who[:, classes].sum(axis=0)
    cap_read = (who[:, classes] * problem.capacity[:, None]).sum(axis=0)
    classes = classes[np.lexsort((classes, cap_read, n_read))]
    order = np.lexsort((pool, pc))
    pool, pc = pool[order], pc[order]
    cut = np.searchsorted(pc, classes)
    ends = np.searchsorted(pc, classes, side="right")
    near = _near(problem) if problem.racks_matter else None
    for c, a, z in zip(classes.tolist(), cut.tolist(), ends.tolist()):
        items = pool[a:z]
        readers = np.flatnonzero(who[:, c])
        if near is not None:  # first on the replica racks, by rack set
            rs = problem.rackset[items]
            for s in np.unique(rs).tolist():
                local = readers[near[s, readers]]
                if s != 0 and len(local):  # rack set 0: no replica racks known, read locally by anyone
                    _deal(problem, x, loads, ceiling, target, items[rs == s], local, last=False)
            items = items[x[items] < 0]
        over.append(_deal(problem, x, loads, ceiling, target, items, readers))
    return np.concatenate(over) if over else np.zeros(0, dtype=np.int64)


def _near(problem: LoadProblem) -> np.ndarray:
    """Rack set x member: is the member on one of the set's racks (rack set 0, none known: everyone is)."""
    rack = problem.member_rack
    col = np.where(rack < 0, problem.cross.shape[1] - 1, rack)
    return ~problem.cross[:, col]


def _deal(problem: LoadProblem, x: np.ndarray, loads: np.ndarray, ceiling: np.ndarray, target: float,
          items: np.ndarray, readers: np.ndarray, last: bool = True) -> np.ndarray:
    """Deal ``items`` to ``readers``: the large ones in rounds to the least utilized readers below the water
    level, the rest up to the level by a running-sum cut, straddlers in rounds within the ceiling, and whatever
    still fits nowhere to the readers whose utilization it raises least.

    An item is large when it exceeds the room between the level and the ceiling of some reader: a straddler of
    the cut may be that large, and then would not fit. At most :data:`_ROUNDS` rounds' worth are large.
    """
    if not len(items) or not len(readers):
        return items[:0]
    r = problem.rates
    caps = problem.capacity[readers]
    items = np.sort(items)  # partition order (fill's slices are in it already: then a cheap pass)
    level = min(water_level(loads[readers], caps, float(r[items].sum())), target)
    spare = np.maximum(ceiling[readers] - np.maximum(level * caps, loads[readers]), 0.0)
    large = items[r[items] > float(spare.min())]
    if len(large):
        if len(large) > _ROUNDS * len(readers):  # keep the rounds few: the largest ones only
            large = large[np.argpartition(-r[large], _ROUNDS * len(readers) - 1)[:_ROUNDS * len(readers)]]
        _largest_first(problem, x, loads, ceiling, large[np.lexsort((large, -r[large]))], readers, level)
        items = items[x[items] < 0]
        level = min(water_level(loads[readers], caps, float(r[items].sum())), target)
    room = np.clip(level * caps - loads[readers], 0.0, np.maximum(ceiling[readers] - loads[readers], 0.0))
    # the running-sum cut, in partition order (each reader gets a mix of rates, not a run of alike ones, so that
    # a later rebalance finds partitions of every size to release): an item goes to the room its start lies in,
    # if it ends there too; the rest (straddlers) go in rounds, largest first
    by_room = np.argsort(-room, kind="stable")
    rd, rm = readers[by_room], room[by_room]
    bounds = np.cumsum(rm)
    end = np.cumsum(r[items])
    begin = end - r[items]
    j = np.searchsorted(bounds, begin, side="right")
    fits = (j < len(rd)) & (end <= bounds[np.minimum(j, len(rd) - 1)] * (1 + _TOL) + 1e-300)
    got = items[fits]
    x[got] = rd[j[fits]]
    np.add.at(loads, x[got], r[got])
    rest = items[~fits]
    rest = _rounds(problem, x, loads, ceiling, rest[np.lexsort((rest, -r[rest]))], readers)
    if last:
        _overflow(problem, x, loads, rest, readers)
        return rest
    return rest[:0]


def _largest_first(problem: LoadProblem, x: np.ndarray, loads: np.ndarray, ceiling: np.ndarray, items: np.ndarray,
                   readers: np.ndarray, level: float) -> None:
    """Large items (decreasing rate) in rounds: each round, the next ones to the readers below the water level,
    the largest to the least utilized, where it stays within the ceiling (LPT, a round at a time)."""
    r = problem.rates
    caps = problem.capacity[readers]
    for _ in range(_ROUNDS + 1):
        if not len(items):
            return
        util = loads[readers] / caps
        low = np.flatnonzero(util < level)
        if not len(low):
            return
        low = low[np.argsort(util[low], kind="stable")]
        n = min(len(items), len(low))
        to = readers[low[:n]]
        ok = loads[to] + r[items[:n]] <= ceiling[to] * (1 + _TOL) + 1e-300
        got = items[:n][ok]
        x[got] = to[ok]
        np.add.at(loads, to[ok], r[got])
        if not ok.any():
            return
        items = np.concatenate([items[:n][~ok], items[n:]])


def _rounds(problem: LoadProblem, x: np.ndarray, loads: np.ndarray, ceiling: np.ndarray, items: np.ndarray,
            readers: np.ndarray) -> np.ndarray:
    """Items (decreasing rate) matched in rounds to the readers with the most room under their ceilings, the
    largest item to the largest room, each only where it fits; returns those that fit nowhere."""
    r = problem.rates
    for _ in range(_ROUNDS):
        if not len(items):
            break
        room = ceiling[readers] - loads[readers]
        best = float(room.max())
        hopeless = r[items] > best * (1 + _TOL) + 1e-300
        if hopeless.all():
            break
        left = items[hopeless]
        items = items[~hopeless]
        by_room = np.argsort(-room, kind="stable")
        n = min(len(items), len(readers))
        fit = r[items[:n]] <= room[by_room[:n]] * (1 + _TOL) + 1e-300
        got = items[:n][fit]
        x[got] = readers[by_room[:n][fit]]
        np.add.at(loads, x[got], r[got])
        items = np.concatenate([items[:n][~fit], items[n:], left])
        items = items[np.lexsort((items, -r[items]))]
    return items


def _overflow(problem: LoadProblem, x: np.ndarray, loads: np.ndarray, items: np.ndarray,
              readers: np.ndarray) -> None:
    """Items that fit under no ceiling, each round the largest to the reader of least utilization after it."""
    r = problem.rates
    caps = problem.capacity[readers]
    while len(items):
        order = np.argsort(loads[readers] / caps, kind="stable")
        n = min(len(items), len(readers))
        got = items[:n]
        x[got] = readers[order[:n]]
        np.add.at(loads, x[got], r[got])
        items = items[n:]


def give_back(problem: LoadProblem, x: np.ndarray, loads: np.ndarray, ceiling: np.ndarray, passes: int = 3) -> None:
    """Moved partitions return to their valid previous owner where it has room under its ceiling (in place),
    the largest first, where that does not make rule 4's cost larger (racks)."""
    r = problem.rates
    o = problem.owner
    for _ in range(passes):
        cand = np.flatnonzero((o >= 0) & (x >= 0) & (x != o))
        if not len(cand):
            return
        cand = cand[problem.allowed(cand, o[cand])]
        if problem.racks_matter:  # returning saves noc r of moved load and changes tc r of cross-rack load
            delta = problem.tc * (problem.far(cand, o[cand]).astype(np.int64) - problem.far(cand, x[cand]))
            cand = cand[delta < problem.noc]
        if not len(cand):
            return
        owner = o[cand]
        order = np.lexsort((cand, -r[cand], owner))
        cand, owner = cand[order], owner[order]
        first = np.searchsorted(owner, owner, side="left")
        cs = np.cumsum(r[cand])
        within = cs - (cs[first] - r[cand][first])
        room = ceiling[owner] - loads[owner]
        back = within <= room * (1 + _TOL) + 1e-300
        if not back.any():
            return
        got = cand[back]
        np.subtract.at(loads, x[got], r[got])
        x[got] = o[got]
        np.add.at(loads, x[got], r[got])
