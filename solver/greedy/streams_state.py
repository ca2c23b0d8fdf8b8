"""The working state and the steps the greedy streams assignors share.

:class:`HAState` holds one assignment in progress (indexes, loads, roles;
clients ranked by process id, tasks in TaskId order). The steps here are those
of Kafka's high-availability assignor that learner mode runs too: standbys on
the least loaded clients, spread over tag values (KIP-708), the repair of a
spread that movements spoiled, and stateless tasks on the fewest active tasks
per thread. :mod:`stickyflow.greedy.streams_ha` and :mod:`stickyflow.greedy.streams_learner`
both build on this module and not on each other.
"""

from __future__ import annotations

import heapq

import numpy as np

from ..check.streams_tables import RACK_KEY, fully_spread, tag_combinations, tag_spread_improvement
from ..model.streams import ClientAssignment, StreamsSnapshot, task_key

__all__ = ["HAState", "spread_keys", "assign_standbys", "repair_tag_spread", "assign_stateless"]


# --------------------------------------------------------------------------- working state

class HAState:
    """The mutable working state of one assignment (indexes; clients ranked by process id).

    Shared by the high-availability and learner assignors and by the ranking
    helpers; ``to_assignment()`` turns it into process id -> :class:`ClientAssignment`.
    """

    def __init__(self, snap: StreamsSnapshot):
        idx = snap.index
        self.snap = snap
        self.T = T = len(idx.task_ids)
        self.C = C = len(idx.client_ids)
        self.threads: list[int] = idx.threads.tolist()
        self.client_order: list[int] = sorted(range(C), key=lambda c: idx.client_ids[c])
        self.rank: list[int] = [0] * C
        for r, c in enumerate(self.client_order):
            self.rank[c] = r
        self.task_order: list[int] = sorted(range(T), key=lambda t: task_key(idx.task_ids[t]))
        self.owner: list[int] = [-1] * T
        self.standby: list[list[int]] = [[] for _ in range(T)]
        self.warmup: list[list[int]] = [[] for _ in range(T)]
        self.n_active: list[int] = [0] * C
        self.n_replica: list[int] = [0] * C
        self.swapped: set[tuple[int, int]] = set()  # (task, client): a standby that took over from an active
        self.stateful: list[bool] = idx.stateful.tolist()
        self.end_offset: list[int] = idx.end_offset.tolist()
        self.everyone: list[bool] = idx.everyone_caught_up.tolist()
        self.caught: dict[int, set[int]] = {}
        for c, t in zip(idx.caught_up_client.tolist(), idx.caught_up_task.tolist()):
            self.caught.setdefault(t, set()).add(c)
        self.reported: dict[int, dict[int, int]] = {}
        for c, t, lag in zip(idx.lag_client.tolist(), idx.lag_task.tolist(), idx.lag_value.tolist()):
            if self.stateful[t]:
                self.reported.setdefault(t, {})[c] = lag

    # ---- lags
    def caught_up(self, c: int, t: int) -> bool:
        return self.everyone[t] or c in self.caught.get(t, ())

    def caught_up_clients(self, t: int) -> list[int]:
        """Caught-up clients of ``t`` in process-id order (every client when all are)."""
        if self.everyone[t]:
            return list(self.client_order)
        return sorted(self.caught.get(t, ()), key=self.rank.__getitem__)

    def lag(self, c: int, t: int) -> int:
        if not self.stateful[t]:
            return 0
        return self.reported.get(t, {}).get(c, self.end_offset[t])

    def most_caught_up_lag(self, t: int) -> int:
        # every lag is at most end_offset_sum (the index applies Client.lag), which is also everyone else's lag
        return min(self.reported.get(t, {}).values(), default=self.end_offset[t])

    def clients_by_lag(self, t: int):
        """Every client, most caught up first (ties by process id), lazily.

        Only reporting clients need sorting: all the others share the lag
        ``end_offset_sum``, the largest there is (the index clamps every report
        to it), and come last, in process-id order with the reports at that lag.
        """
        rep = self.reported.get(t, {})
        eo = self.end_offset[t] if self.stateful[t] else 0
        rank = self.rank
        for _, _, c in sorted((lag, rank[c], c) for c, lag in rep.items() if lag < eo):
            yield c
        for c in self.client_order:
            lag = rep.get(c)
            if lag is None or lag == eo:
                yield c

    # ---- loads and roles
    def load(self, c: int) -> float:
        """Kafka's ``assignedTaskLoad``: (active + standby + warm-up) tasks per thread."""
        return (self.n_active[c] + self.n_replica[c]) / self.threads[c]

    def active_load(self, c: int) -> float:
        return self.n_active[c] / self.threads[c]

    def holds(self, c: int, t: int) -> bool:
        return self.owner[t] == c or c in self.standby[t] or c in self.warmup[t]

    def set_active(self, t: int, c: int) -> None:
        old = self.owner[t]
        if old >= 0:
            self.n_active[old] -= 1
        self.owner[t] = c
        if c >= 0:
            self.n_active[c] += 1

    def add_standby(self, t: int, c: int) -> None:
        self.standby[t].append(c)
        self.n_replica[c] += 1

    def remove_standby(self, t: int, c: int) -> None:
        self.standby[t].remove(c)
        self.n_replica[c] -= 1

    def add_warmup(self, t: int, c: int) -> None:
        self.warmup[t].append(c)
        self.n_replica[c] += 1

    def least_loaded(self, candidates, *, key=None) -> int | None:
        """The candidate with the least ``key`` (default: :meth:`load`), ties by process id; None if none."""
        key = key or self.load
        best = None
        best_key = None
        for c in candidates:
            k = (key(c), self.rank[c])
            if best_key is None or k < best_key:
                best, best_key = c, k
        return best

    def owner_array(self) -> np.ndarray:
        return np.asarray(self.owner, dtype=np.int64)

    def set_owners(self, owner: np.ndarray, tasks: np.ndarray) -> None:
        for t in np.asarray(tasks).tolist():
            if self.owner[t] != int(owner[t]):
                self.set_active(t, int(owner[t]))

    def to_assignment(self) -> dict[str, ClientAssignment]:
        idx = self.snap.index
        roles: list[tuple[list[int], list[int], list[int]]] = [([], [], []) for _ in range(self.C)]
        for t in self.task_order:  # TaskId order, so every list comes out sorted
            c = self.owner[t]
            if c >= 0:
                roles[c][0].append(t)
            for c in self.standby[t]:
                roles[c][1].append(t)
            for c in self.warmup[t]:
                roles[c][2].append(t)
        ids = idx.task_ids
        out: dict[str, ClientAssignment] = {}
        for c, pid in enumerate(idx.client_ids):
            a, s, w = roles[c]
            out[pid] = ClientAssignment(active=tuple(ids[t] for t in a), standby=tuple(ids[t] for t in s),
                                        warmup=tuple(ids[t] for t in w))
        return out


# --------------------------------------------------------------------------- 3. standbys

def spread_keys(snap: StreamsSnapshot) -> tuple[str, ...]:
    """The keys standbys are spread over: ``rack_aware_assignment_tags``, else the rack under a rack-aware strategy."""
    tags = snap.config.rack_aware_assignment_tags
    if tags:
        return tuple(tags)
    if snap.config.rack_aware and snap.clients and all(c.rack is not None for c in snap.clients):
        return (RACK_KEY,)
    return ()


class _ComboHeaps:
    """Clients grouped by tag-value combination, each group a heap by (load, process-id rank)."""

    def __init__(self, st: HAState, client_combo: np.ndarray, M: int, load):
        self.st = st
        self.load = load
        self.combo = client_combo.tolist()
        self.heaps: list[list[tuple[float, int, int]]] = [[] for _ in range(M)]
        for c in range(st.C):
            self.heaps[self.combo[c]].append((load(c), st.rank[c], c))
        for h in self.heaps:
            heapq.heapify(h)

    def top_eligible(self, m: int, ok) -> int | None:
        """The least loaded client of combination ``m`` with ``ok(c)``, left in the heap."""
        h = self.heaps[m]
        stash = []
        found = None
        while h:
            load, r, c = h[0]
            if load != self.load(c):
                heapq.heappop(h)  # stale: a fresher entry for c exists
                continue
            if ok(c):
                found = c
                break
            stash.append(heapq.heappop(h))
        for e in stash:
            heapq.heappush(h, e)
        return found

    def update(self, c: int) -> None:
        heapq.heappush(self.heaps[self.combo[c]], (self.load(c), self.st.rank[c], c))


def assign_standbys(st: HAState, tasks: list[int], per_task: int, keys: tuple[str, ...]) -> None:
    """Give each of ``tasks`` ``per_task`` standbys: most new tag values first, then least loaded."""
    if per_task <= 0 or not tasks:
        return
    combos, client_combo, _ = tag_combinations(st.snap, keys)
    M = len(combos)
    heaps = _ComboHeaps(st, client_combo, M, st.load)
    K = combos.shape[1]
    combo_rows = combos.tolist()
    cc = client_combo.tolist()
    for t in tasks:
        for _ in range(per_task):
            holders = [st.owner[t]] + st.standby[t]
            if K:
                used = [{combo_rows[cc[h]][k] for h in holders if h >= 0} for k in range(K)]
                gain = [sum(1 for k in range(K) if row[k] >= 0 and row[k] not in used[k]) for row in combo_rows]
            else:
                gain = [0] * M
            ok = lambda c, t=t: not st.holds(c, t)  # noqa: E731
            chosen = None
            for g in sorted(set(gain), reverse=True):
                best = None
                for m in range(M):
                    if gain[m] != g:
                        continue
                    c = heaps.top_eligible(m, ok)
                    if c is not None and (best is None or (st.load(c), st.rank[c]) < (st.load(best), st.rank[best])):
                        best = c
                if best is not None:
                    chosen = best
                    break
            if chosen is None:
                break  # fewer clients than replicas: cannot happen with min(num_standby_replicas, clients - 1)
            st.add_standby(t, chosen)
            heaps.update(chosen)


def repair_tag_spread(st: HAState, keys: tuple[str, ...], budget: list[int] | None = None, *,
                      passes: int = 3) -> int:
    """Move standbys that keep a task's replicas on too few tag values (after movements); returns how many moved.

    A standby moves when some client holding no replica of the task would add a
    tag value on some key without losing one on another (the check's rule); to
    a caught-up client of such a combination first, else the least loaded one.
    A standby that an active movement left on the task's target client stays
    there as a warm-up while ``budget[0]`` lasts, so that the target still catches up.
    """
    if not keys or st.C < 2:
        return 0
    combos, client_combo, counts = tag_combinations(st.snap, keys)
    if len(combos) <= 1:
        return 0
    cc = client_combo.tolist()
    combo_rows = combos.tolist()
    count = counts.tolist()
    M = len(combos)
    heaps = _ComboHeaps(st, client_combo, M, st.load)
    moved = 0
    for _ in range(passes):
        changed = False
        for t in st.task_order:
            if not st.stateful[t] or not st.standby[t] or st.owner[t] < 0:
                continue
            reps = [cc[st.owner[t]]] + [cc[s] for s in st.standby[t]]
            if fully_spread(combo_rows, reps):
                continue
            holders = [st.owner[t]] + st.standby[t] + st.warmup[t]
            held = [0] * M
            for h in holders:
                held[cc[h]] += 1
            free = [count[m] > held[m] for m in range(M)]
            for pos in range(1, len(reps)):
                better = tag_spread_improvement(combo_rows, reps, free, pos)
                if not better:
                    continue
                ok = lambda c, t=t: not st.holds(c, t)  # noqa: E731
                bset = set(better)
                v = st.least_loaded([c for c in st.caught_up_clients(t) if cc[c] in bset and ok(c)]) \
                    if not st.everyone[t] else None
                if v is None:
                    tops = [c for c in (heaps.top_eligible(m, ok) for m in better) if c is not None]
                    v = st.least_loaded(tops)
                if v is None:
                    continue
                s = st.standby[t][pos - 1]
                st.remove_standby(t, s)
                st.add_standby(t, v)
                heaps.update(s)
                heaps.update(v)
                if (t, s) in st.swapped and budget is not None and budget[0] > 0:
                    st.add_warmup(t, s)
                    budget[0] -= 1
                    heaps.update(s)
                moved += 1
                changed = True
                break
        if not changed:
            break
    return moved


# --------------------------------------------------------------------------- 6. stateless tasks

def assign_stateless(st: HAState, tasks: list[int]) -> None:
    """Each stateless task to the client with the fewest active tasks per thread (ties by process id)."""
    if not tasks or not st.C:
        return
    heap = [(st.active_load(c), st.rank[c], c) for c in range(st.C)]
    heapq.heapify(heap)
    for t in tasks:
        _, r, c = heapq.heappop(heap)
        st.set_active(t, c)
        heapq.heappush(heap, (st.active_load(c), r, c))
