"""The streams CP-SAT model's data: the candidate (task, client) pairs and their costs (:class:`CpsatData`),
the relaxed model the flow's hint is solved on, and the best tag spread a task can reach.

On small instances every pair is a candidate; on large ones (above :data:`FULL_PAIRS`) the eligible,
held, local-state and the flow's own pairs, plus a few clients per rack and tag combination.
"""

from __future__ import annotations

import itertools

import numpy as np

from stickyflow.errors import StickyflowError
from stickyflow.model.arrays import in_sorted

from .model import StreamsModel
from .plan import StreamsPlan, plan_standbys

__all__ = ["CpsatData", "relaxed", "best_spread", "spread_table", "group_lists", "FULL_PAIRS"]

FULL_PAIRS = 60_000  # above this many (task, client) pairs the model keeps candidate pairs only


# --------------------------------------------------------------------------- data

class CpsatData:
    """Candidate pairs and their costs."""

    def __init__(self, m: StreamsModel, hint: StreamsPlan | None):
        T, C = m.T, m.C
        self.full = T * C <= FULL_PAIRS
        if self.full:
            xt, xc = np.meshgrid(np.arange(T), np.arange(C), indexing="ij")
            xt, xc = xt.reshape(-1), xc.reshape(-1)
        else:
            parts_t = [m.cu_t, m.prev_t, m.state_t, m.held_t]
            parts_c = [m.cu_c, m.prev_c, m.state_c, m.held_c]
            if hint is not None:
                parts_t += [np.arange(T)]
                parts_c += [hint.target]
            sample_t, sample_c = _samples(m, np.arange(T), 2)
            parts_t.append(sample_t)
            parts_c.append(sample_c)
            key = np.unique(np.concatenate(parts_c) * T + np.concatenate(parts_t))
            xc, xt = key // T, key % T
        keys = xc * T + xt
        self.x_t, self.x_c = xt, xc
        self.x_move = m.constrained[xt] & ~in_sorted(keys, m.cu_keys)
        S = np.flatnonzero(m.stateful)
        if not m.want or not len(S):
            st = sc = np.zeros(0, dtype=np.int64)
        elif self.full:
            st, sc = np.meshgrid(S, np.arange(C), indexing="ij")
            st, sc = st.reshape(-1), sc.reshape(-1)
        else:
            parts_t = [xt[m.stateful[xt]], m.state_t, m.held_t]
            parts_c = [xc[m.stateful[xt]], m.state_c, m.held_c]
            if hint is not None:  # its converged standbys and this round's
                parts_t += [np.repeat(np.arange(T), m.want)] * 2
                parts_c += [plan_standbys(m, hint).reshape(-1), hint.standby.reshape(-1)]
            mv = np.flatnonzero(m.constrained & (m.holder >= 0))
            parts_t.append(mv)  # a holder's standby covers a movement
            parts_c.append(m.holder[mv])
            sample_t, sample_c = _samples(m, S, 2 + m.want)
            parts_t.append(sample_t)
            parts_c.append(sample_c)
            tt, cc_ = np.concatenate(parts_t), np.concatenate(parts_c)
            ok = (cc_ >= 0) & m.stateful[tt]
            key = np.unique(cc_[ok] * T + tt[ok])
            sc, st = key // T, key % T
        self.s_t, self.s_c = st, sc
        self.s_index = {(int(a), int(b)): j for j, (a, b) in enumerate(zip(st.tolist(), sc.tolist()))}
        tie = np.full(len(st), 2, dtype=np.int64)
        if len(st) and len(m.state_t):
            lookup = {(int(t), int(c)): int(v) for t, c, v in zip(m.state_t, m.state_c, m.state_tie)}
            tie = np.array([lookup.get((int(t), int(c)), 2) for t, c in zip(st.tolist(), sc.tolist())],
                           dtype=np.int64)
        self.s_tie = tie


def _samples(m: StreamsModel, tasks: np.ndarray, per_cell: int) -> tuple[np.ndarray, np.ndarray]:
    """For every task, ``per_cell`` clients of each (rack, tag combination) cell, rotating with the task."""
    M = len(m.combos)
    cellkey = m.cell * M + m.client_combo
    groups = group_lists(np.unique(cellkey, return_inverse=True)[1], len(np.unique(cellkey)))
    ts, cs = [], []
    for members in groups:
        members = np.asarray(members, dtype=np.int64)
        n = len(members)
        for k in range(min(per_cell, n)):
            ts.append(tasks)
            cs.append(members[(tasks + k) % n])
    return np.concatenate(ts), np.concatenate(cs)


def group_lists(keys: np.ndarray, n: int) -> list[list[int]]:
    out: list[list[int]] = [[] for _ in range(n)]
    for i, k in enumerate(np.asarray(keys).tolist()):
        out[k].append(i)
    return out





def relaxed(m: StreamsModel) -> StreamsModel:
    """The same model without the move cap, and without tags unless one standby (what the flow can solve)."""
    import copy

    r = copy.copy(m)
    r.max_moves = None
    if m.want <= 1:
        return r
    r.tag_keys = ()
    r.combos = np.zeros((1, 0), dtype=np.int64)
    r.client_combo = np.zeros(m.C, dtype=np.int64)
    r.combo_count = np.array([m.C], dtype=np.int64)
    r.extra = m.extra
    return r


def _cost_max(m: StreamsModel) -> int:
    """An upper bound on the cost of any converged assignment (actives and standbys)."""
    act = m.act_cell.max(axis=1) + m.move_cost
    rep = m.rep_cell.max(axis=1) + m.noc
    return int((act + m.want * np.where(m.stateful, rep, 0)).sum())


def best_spread(m: StreamsModel) -> tuple[np.ndarray, np.ndarray]:
    """The most distinct tag values (summed over keys) a task's active and standbys can cover.

    ``best[a]``: with the active on a client of combination ``a``;
    ``best2[a, b]``: the same with one more client, of combination ``b``, taken (by a warm-up).
    """
    counts, scores = spread_table(m)
    M = len(m.combos)

    def best_for(avail: np.ndarray, a: int) -> int:
        ok = (counts <= avail[None, :]).all(axis=1)
        return int(scores[ok, a].max()) if ok.any() else -1

    best = np.zeros(M, dtype=np.int64)
    best2 = np.zeros((M, M), dtype=np.int64)
    for a in range(M):
        avail = m.combo_count - (np.arange(M) == a)
        best[a] = best_for(avail, a)
        for b in range(M):
            av2 = avail - (np.arange(M) == b)
            best2[a, b] = best_for(av2, a) if (av2 >= 0).all() else best[a]
    return best, np.minimum(best2, best[:, None])


def spread_table(m: StreamsModel) -> tuple[np.ndarray, np.ndarray]:
    """Every multiset of ``want`` tag combinations a task's standbys can take (``counts[i, b]``: how many on
    combination ``b``), and ``scores[i, a]``: the distinct tag values (summed over keys) they cover with the
    active on combination ``a``."""
    M, K = m.combos.shape
    want = m.want
    if _n_multisets(M, want) > 200_000:
        raise StickyflowError(f"CP-SAT: too many tag combinations ({M}) to price tag spreading exactly")
    sets = [np.bincount(np.asarray(c, dtype=np.int64), minlength=M)
            for c in itertools.combinations_with_replacement(range(M), want)]
    counts = np.array(sets, dtype=np.int64).reshape(len(sets), M)
    scores = np.zeros((len(sets), M), dtype=np.int64)
    for i, cnt in enumerate(sets):
        members = np.flatnonzero(cnt)
        for a in range(M):
            chosen = np.concatenate([[a], members])
            scores[i, a] = sum(len({int(v) for v in m.combos[chosen, k]} - {-1}) for k in range(K))
    return counts, scores


def _n_multisets(M: int, k: int) -> int:
    from math import comb

    return comb(M + k - 1, k) if k else 1
