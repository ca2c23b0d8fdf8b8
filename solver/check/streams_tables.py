"""Lookup tables of a Streams snapshot that the check, the greedy assignors and the formulations share.

:func:`rack_tables` (which client reads which task's partitions across racks,
KIP-925) and :func:`eligible_pairs` (where each stateful task may run this
round) are built once per snapshot and kept on it; :func:`tag_combinations`
codes the clients' tag values (KIP-708, with :data:`RACK_KEY` for the rack), and
:func:`fully_spread` and :func:`tag_spread_improvement` test a spread with them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.arrays import nonzero_pairs
from ..model.streams import StreamsSnapshot

__all__ = ["RACK_KEY", "RackTables", "rack_tables", "EligiblePairs", "eligible_pairs", "tag_combinations",
           "fully_spread", "tag_spread_improvement"]

RACK_KEY = "\x00rack"  # pseudo tag key: the client's rack (KIP-925 spreads standbys over racks)


# --------------------------------------------------------------------------- racks

@dataclass(frozen=True, slots=True, eq=False)
class RackTables:
    """Per-task cross-rack counts by client rack (KIP-925), for checks, metrics and the rack optimizer.

    ``client_rack[c]`` indexes ``racks`` (``len(racks)`` for a client without
    rack); ``input_cross[t, r]`` is how many input partitions of task ``t`` have
    known racks that exclude rack ``r`` (the last column, a client without rack,
    is 0: unknown is not cross-rack); ``changelog_cross`` likewise.
    """

    racks: tuple[str, ...]
    client_rack: np.ndarray
    input_cross: np.ndarray
    changelog_cross: np.ndarray
    known: bool

    def active_cost(self, c: np.ndarray, t: np.ndarray) -> np.ndarray:
        return self.input_cross[t, self.client_rack[c]]

    def replica_cost(self, c: np.ndarray, t: np.ndarray) -> np.ndarray:
        return self.changelog_cross[t, self.client_rack[c]]


def rack_tables(snap: StreamsSnapshot) -> RackTables:
    """The :class:`RackTables` of ``snap`` (computed once per snapshot)."""
    return snap.cached("rack_tables", _build_rack_tables)


def _build_rack_tables(snap: StreamsSnapshot) -> RackTables:
    racks: dict[str, int] = {}
    for c in snap.clients:
        if c.rack is not None:
            racks.setdefault(c.rack, len(racks))
    R = len(racks)
    client_rack = np.fromiter((racks[c.rack] if c.rack is not None else R for c in snap.clients),
                              dtype=np.int64, count=len(snap.clients))
    T = len(snap.tasks)
    inp = np.zeros((T, R + 1), dtype=np.int64)
    chg = np.zeros((T, R + 1), dtype=np.int64)
    rows: dict[frozenset, np.ndarray] = {}
    any_known = False

    def row(rs: frozenset) -> np.ndarray:
        r = rows.get(rs)
        if r is None:
            r = np.zeros(R + 1, dtype=np.int64)
            for name, i in racks.items():
                r[i] = name not in rs
            rows[rs] = r
        return r

    for ti, t in enumerate(snap.tasks):
        for p in t.input_partitions:
            if p.racks:
                inp[ti] += row(p.racks)
                any_known = True
        for p in t.changelog_partitions:
            if p.racks:
                chg[ti] += row(p.racks)
                any_known = True
    for a in (client_rack, inp, chg):
        a.setflags(write=False)
    return RackTables(racks=tuple(racks), client_rack=client_rack, input_cross=inp, changelog_cross=chg,
                      known=bool(R) and any_known)


# --------------------------------------------------------------------------- eligible clients and tag spread

@dataclass(frozen=True, slots=True, eq=False)
class EligiblePairs:
    """Where a stateful task may run this round: its caught-up clients, or, when it has none, the clients
    with the least lag for it (KIP-441's rank 0). ``free[t]``: every client is eligible (stateless tasks,
    and stateful tasks every client is caught up for or equally behind on); otherwise the (client, task)
    pairs list the eligible clients, sorted by task then client."""

    free: np.ndarray
    client: np.ndarray
    task: np.ndarray
    caught_up: np.ndarray  # per task: some client is caught up


def eligible_pairs(snap: StreamsSnapshot) -> EligiblePairs:
    """The :class:`EligiblePairs` of ``snap`` (computed once per snapshot)."""
    return snap.cached("eligible_pairs", _build_eligible)


def _build_eligible(snap: StreamsSnapshot) -> EligiblePairs:
    idx = snap.index
    T, C = len(idx.task_ids), len(idx.client_ids)
    cu = np.zeros(T, dtype=bool)
    cu[idx.caught_up_task] = True
    cu |= idx.everyone_caught_up
    free = ~idx.stateful | idx.everyone_caught_up
    parts_c = [idx.caught_up_client]
    parts_t = [idx.caught_up_task]
    # tasks nobody is caught up for: the least lag wins; a client that reported nothing lags by the end offset sum
    lagging = np.flatnonzero(idx.stateful & ~cu)
    if len(lagging) and C:
        lt, lc, lv = idx.lag_task, idx.lag_client, idx.lag_value
        sel = np.isin(lt, lagging)
        lt, lc, lv = lt[sel], lc[sel], lv[sel]
        reported = np.bincount(lt, minlength=T)
        least = idx.end_offset.copy()
        if len(lt):
            np.minimum.at(least, lt, lv)
        silent_least = (reported < C) & (least == idx.end_offset)  # the silent clients are among the least
        everyone = np.zeros(T, dtype=bool)
        everyone[lagging] = True
        # every client at the least lag: free
        at_least = np.zeros(T, dtype=np.int64)
        if len(lt):
            np.add.at(at_least, lt, lv == least[lt])
        all_least = everyone & ((at_least == C) | (silent_least & (at_least == reported)))
        free = free | all_least
        keep = ~all_least[lt] & (lv == least[lt])
        parts_c.append(lc[keep])
        parts_t.append(lt[keep])
        # silent clients of tasks whose least lag is the end offset sum (and not everyone is least)
        need = np.flatnonzero(everyone & silent_least & ~all_least)
        if len(need):
            said = np.zeros((len(need), C), dtype=bool)
            pos = np.full(T, -1, dtype=np.int64)
            pos[need] = np.arange(len(need))
            m = pos[lt] >= 0
            said[pos[lt[m]], lc[m]] = True
            r, c = nonzero_pairs(~said)
            parts_c.append(c)
            parts_t.append(need[r])
    ec = np.concatenate(parts_c).astype(np.int64)
    et = np.concatenate(parts_t).astype(np.int64)
    keep = ~free[et]
    ec, et = ec[keep], et[keep]
    order = np.lexsort((ec, et))
    out = EligiblePairs(free=free, client=ec[order], task=et[order], caught_up=cu)
    for arr in (out.free, out.client, out.task, out.caught_up):
        arr.setflags(write=False)
    return out


def tag_combinations(snap: StreamsSnapshot, keys: tuple[str, ...] | None = None
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The clients' tag values as codes: (combos (M, K), -1 for a missing tag; client -> combo; clients per combo).

    ``keys`` defaults to ``rack_aware_assignment_tags``; the pseudo-key
    ``RACK_KEY`` stands for the client's rack.
    """
    keys = snap.config.rack_aware_assignment_tags if keys is None else keys
    codes: list[dict[str, int]] = [{} for _ in keys]
    rows = np.full((len(snap.clients), len(keys)), -1, dtype=np.int64)
    for ci, c in enumerate(snap.clients):
        for k, key in enumerate(keys):
            val = c.rack if key == RACK_KEY else c.tags.get(key)
            if val is not None:
                rows[ci, k] = codes[k].setdefault(val, len(codes[k]))
    if not len(rows):
        return np.zeros((0, len(keys)), dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if not len(keys):
        return (np.zeros((1, 0), dtype=np.int64), np.zeros(len(rows), dtype=np.int64),
                np.array([len(rows)], dtype=np.int64))
    combos, client_combo, counts = np.unique(rows, axis=0, return_inverse=True, return_counts=True)
    return combos, client_combo.reshape(-1), counts


def fully_spread(combo_rows: list[list[int]], replica_combos: list[int]) -> bool:
    """True when every replica brings its own value on every key: nothing can be spread further."""
    n = len(replica_combos)
    for k in range(len(combo_rows[0]) if combo_rows else 0):
        vals = {combo_rows[r][k] for r in replica_combos}
        if len(vals) < n or -1 in vals:
            return False
    return True


def tag_spread_improvement(combo_rows: list[list[int]], replica_combos: list[int], free_combo: list[bool],
                           position: int) -> list[int]:
    """Combos that could replace replica ``position`` and add a tag value on some key without losing one on any.

    ``combo_rows[m]`` holds combo ``m``'s value code per key (-1: no value);
    ``replica_combos`` the combo of every replica of a task (active first);
    ``free_combo[m]`` whether some client of combo ``m`` holds no replica of the task.
    """
    K = len(combo_rows[0]) if combo_rows else 0
    others = [r for i, r in enumerate(replica_combos) if i != position]
    mine = combo_rows[replica_combos[position]]
    used = [{combo_rows[r][k] for r in others} - {-1} for k in range(K)]
    now = [len(used[k] | ({mine[k]} - {-1})) for k in range(K)]
    out = []
    for m, row in enumerate(combo_rows):
        if not free_combo[m]:
            continue
        strict = False
        for k in range(K):
            new = len(used[k]) + (row[k] >= 0 and row[k] not in used[k])
            if new < now[k]:
                break
            strict |= new > now[k]
        else:
            if strict:
                out.append(m)
    return out
