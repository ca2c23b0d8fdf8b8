"""The consumer optimum in closed form when every member reads the same topics and racks cost nothing.

    variables   each member's quota (its load) and which of its owned partitions it keeps
    constraints quotas ``q = P // n`` or ``q + 1``, summing to ``P``; a member keeps at most its quota
    objective   the fewest moves: the ``P % n`` larger quotas go to the members that owned the most
"""

from __future__ import annotations

import numpy as np

from stickyflow.check.answer import stable_order
from stickyflow.errors import SolverFaultError

from .model import ConsumerData, as_assignment, flat_owners

__all__ = ["equal_subscriptions"]


def equal_subscriptions(d: ConsumerData):
    """The optimum in closed form when every member reads the same topics and racks cost nothing.

    Then any partition can go to any member, so only each member's total matters: the loads are
    ``q = P // n`` or ``q + 1`` (``r = P % n`` members get ``q + 1``), and a member keeps at most its load of
    the partitions it validly owned. The kept total ``sum min(owned_m, quota_m)`` is largest when the ``r``
    larger quotas go to the members that owned the most (an exchange argument: a ``q + 1`` quota gains one
    kept partition exactly when its member owned more than ``q``), so moves are least; ties go by member
    order. As in the flow's decoding, a member keeps its lowest partitions (topic order, then number), and
    the rest, in that order, fill the members still short of their quota, in member order. Returns what
    :func:`.flow._phase2` returns, or None when the shape does not apply (the flow then decides).
    """
    if d.n_classes != 1 or (d.rack_aware and d.tc != 0):
        return None
    M = len(d.snap.members)
    readers = np.flatnonzero(d.member_class == 0)
    n = len(readers)
    _, offsets, owner = flat_owners(d)
    total = int(offsets[-1])
    claimed = owner >= 0
    keepable = claimed.copy()
    keepable[claimed] = d.member_class[owner[claimed]] == 0
    owned_cnt = np.bincount(owner[keepable], minlength=M)
    q, r = divmod(total, n)
    quota = np.zeros(M, dtype=np.int64)
    quota[readers] = q
    by_owned = readers[np.argsort(-owned_cnt[readers], kind="stable")]
    quota[by_owned[:r]] += 1
    # keep: the first min(owned, quota) of each member's owned partitions in partition order
    if d.prev.by_member is not None and d.every_topic:  # the claims came in that order
        held, holder = d.prev.by_member
        mine = d.member_class[holder] == 0
        if not mine.all():
            held, holder = held[mine], holder[mine]
    else:
        held = np.flatnonzero(keepable)
        holder = owner[held]
        order = stable_order(holder, M)  # a stable sort by holder (by radix below 32,768 members)
        held, holder = held[order], holder[order]
    start = np.searchsorted(holder, np.arange(M))
    rank = np.arange(len(held)) - start[holder]
    keep = rank < quota[holder]
    new_owner = np.full(total, -1, dtype=np.int64)
    new_owner[held[keep]] = holder[keep]
    kept = np.bincount(holder[keep], minlength=M)
    short = quota - kept
    moving = np.flatnonzero(new_owner < 0)
    if len(moving) != int(short.sum()):
        raise SolverFaultError("the closed form dealt a different number of partitions than the quotas take")
    new_owner[moving] = np.repeat(np.arange(M), short)
    moves = int(np.count_nonzero(claimed)) - int(keep.sum())
    sumsq = int(np.dot(quota, quota))
    return as_assignment(d, new_owner, offsets), d.noc * moves, sumsq
