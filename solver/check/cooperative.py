"""KIP-429's cooperative step: split a target assignment into this round's assignment and the revocations.

:func:`cooperative_split` gives a claimed partition this round only to its valid
previous owner (KIP-341) and withholds the rest until the follow-up rebalance.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..model.consumer import ConsumerSnapshot
from ..model.consumer_claims import PreviousOwners, previous_owners
from .answer import ArrayAssignment, nested_assignment, run_tuples

__all__ = ["CooperativeStep", "cooperative_split"]


@dataclass(frozen=True, slots=True, eq=False)
class CooperativeStep:
    """One KIP-429 round: what each member gets now, what it must give up first."""

    assignment: dict[str, dict[str, tuple[int, ...]]]
    revocations: dict[str, dict[str, tuple[int, ...]]]
    withheld: dict[str, np.ndarray]  # topic -> mask of partitions held back this round

    @property
    def revoking(self) -> bool:
        return any(self.revocations.values())


def cooperative_split(snap: ConsumerSnapshot, target: Mapping[str, Mapping[str, Sequence[int]]],
                      prev: PreviousOwners | None = None) -> CooperativeStep:
    """Split a target assignment into a safe cooperative round (KIP-429).

    A partition that some member claims goes this round only to its valid
    previous owner (KIP-341); a target that sends it anywhere else (away from
    that owner, or to anyone at all when its claims tie) withholds it until the
    follow-up rebalance. A partition nobody claims goes to its target at once.
    Each member revokes what it claims and is not given this round (stale claims
    included), which is what a Kafka client does by itself: so no partition is
    ever consumed by two members at once, not even by a stale claimant.
    """
    prev = prev or previous_owners(snap)
    if isinstance(target, ArrayAssignment) and target.snapshot is snap:
        return _cooperative_arrays(snap, target, prev)
    ids = snap._column("id")
    new_owner: dict[str, np.ndarray] = {}
    for t, topic in snap.topics.items():
        new_owner[t] = np.full(topic.partitions, -1, dtype=np.int32)
    index = snap.member_index()
    for mid, topics in target.items():
        i = index.get(mid)
        if i is None:  # an unknown id holding nothing (one holding something fails the check first)
            continue
        for t, parts in topics.items():
            if len(parts):
                new_owner[t][np.asarray(parts, dtype=np.int64)] = i
    revocations: dict[str, dict[str, tuple[int, ...]]] = {mid: {} for mid in ids}
    withheld: dict[str, np.ndarray] = {}
    for t, claims in prev.claims.items():
        owner = new_owner[t]
        claimed = np.zeros(len(owner), dtype=bool)
        for _, parts in claims:
            claimed[parts] = True
        # a claimed partition goes this round only to its valid previous owner (a stale claimant or a
        # newcomer waits until every claimant has revoked it)
        mask = claimed & (owner >= 0) & (owner != prev.owner[t])
        round_owner = np.where(mask, -1, owner)
        for i, parts in claims:
            lost = parts[round_owner[parts] != i]
            if len(lost):
                revocations[ids[i]][t] = tuple(lost.tolist())
        if mask.any():
            withheld[t] = mask
    assignment: dict[str, dict[str, tuple[int, ...]]] = {}
    for mid, topics in target.items():
        out: dict[str, tuple[int, ...]] = {}
        for t, parts in topics.items():
            arr = np.asarray(parts, dtype=np.int64)
            w = withheld.get(t)
            if w is not None and len(arr):
                arr = arr[~w[arr]]
            if len(arr):
                out[t] = tuple(arr.tolist())
        assignment[mid] = out
    revocations = {m: r for m, r in revocations.items() if r}
    return CooperativeStep(assignment=assignment, revocations=revocations, withheld=withheld)


def _cooperative_arrays(snap: ConsumerSnapshot, target: ArrayAssignment, prev: PreviousOwners) -> CooperativeStep:
    """:func:`cooperative_split` for an :class:`ArrayAssignment`, on flat arrays of every claim."""
    names = list(snap.topics)
    sizes = np.fromiter((t.partitions for t in snap.topics.values()), dtype=np.int64, count=len(names))
    offsets = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    total = int(offsets[-1])
    pos = {t: j for j, t in enumerate(names)}
    own = np.full(total, -1, dtype=np.int64)
    for t, arr in target.owners.items():
        own[offsets[pos[t]]:offsets[pos[t] + 1]] = arr
    flat = getattr(prev.claims, "flat_arrays", None)
    if flat is not None:
        gid, member = flat()
    else:  # a hand-made PreviousOwners: flatten its claims
        g, m = [], []
        for t, claims in prev.claims.items():
            for i, parts in claims:
                g.append(offsets[pos[t]] + np.asarray(parts, dtype=np.int64))
                m.append(np.full(len(parts), i, dtype=np.int64))
        gid = np.concatenate(g) if g else np.zeros(0, dtype=np.int64)
        member = np.concatenate(m) if m else np.zeros(0, dtype=np.int64)
    valid = (np.concatenate([prev.owner[t] for t in names]) if names else np.zeros(0, dtype=np.int32))
    mask = np.zeros(total, dtype=bool)
    mask[gid] = True  # claimed by someone
    # a claimed partition goes this round only to its valid previous owner (a stale claimant or a
    # newcomer waits until every claimant has revoked it)
    mask &= (own >= 0) & (own != valid)
    withheld = {t: mask[offsets[j]:offsets[j + 1]].copy() for j, t in enumerate(names)
                if mask[offsets[j]:offsets[j + 1]].any()}
    round_own = np.where(mask, -1, own)
    lost = round_own[gid] != member  # owned minus this round's assignment, stale claims included
    lost_g, lost_m = gid[lost], member[lost]
    assignment = ArrayAssignment(snap, {t: round_own[offsets[pos[t]]:offsets[pos[t] + 1]] for t in target.owners})
    order = np.lexsort((lost_g, lost_m))
    lost_g, lost_m = lost_g[order], lost_m[order]
    topic = np.searchsorted(offsets, lost_g, side="right") - 1
    revoked = nested_assignment(snap, names, lost_m, topic, lost_g - offsets[topic], run_tuples)
    return CooperativeStep(assignment=assignment.to_tuples(), revocations={m: r for m, r in revoked.items() if r},
                           withheld=withheld)
