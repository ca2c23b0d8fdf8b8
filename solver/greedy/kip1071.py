"""Kafka 4's server-side Streams task assignor (KIP-1071), as a baseline: the ``kip1071`` streams assignor.

With KIP-1071 the group coordinator assigns a Streams application's tasks
itself, with its ``StickyTaskAssignor``. Ours follows its design step by step:

1. **Capacity.** Each member of the group counts once; a client here is a
   process whose ``threads`` play its members, so a client's capacity is its
   thread count. Three per-member quotas, each ``ceil(tasks / members)``:
   stateful active tasks, active tasks, and all tasks (actives plus
   ``num_standby_replicas`` standbys per stateful task). When a member reaches
   a quota exactly, it leaves that quota's pool and the quota is recomputed over
   the members and tasks left (so the quotas stay reachable).
2. **Actives**, stateful ones first, then stateless ones, each pass in three
   steps: (a) tasks in (partition, subtopology) order stay on their previous
   active member while it is under the pass's quota; (b) the rest go to the
   least loaded previous standby member (previous standbys before members that
   merely report local state, the most caught-up first) while under quota;
   (c) the rest, in (subtopology, partition) order, go to the least loaded
   process (tasks per member; ties: fewer stateless actives per member), to
   its member with the fewest tasks.
3. **Standbys** for each stateful task, tasks in reverse (partition,
   subtopology) order: with ``rack_aware_assignment_tags``, first every standby
   that still adds a new value on the tag keys (in priority order; ties: the
   process that held the task as active, then as standby, then the least
   loaded), on processes with a member under the total quota; then the previous
   active member, then the least loaded previous standby member, while under
   the total quota; the rest, tasks in reverse (subtopology, partition) order,
   to the least loaded process not holding the task.

What this means for comparisons: the coordinator's assignor reads no lags
beyond ranking standby candidates and no racks (KIP-925's rack-aware
strategies are not used; only ``rack_aware_assignment_tags`` spread
standbys), has no notion of "caught up", assigns **no
warm-ups** and asks for no probing rebalance (Kafka 4 moves a task at once and
the new owner restores its state; warm-ups are left to the coordinator's
reconciliation, outside the assignor). A move to a client without the task's
state is therefore a full restore, which this baseline's moves and the
simulator's readiness show. Its results are held to KIP-924's rules (no task
twice, no unknown ids, no standby of a stateless task, one role per task and
client), to every task being active once and to the standby count; not to the
three high-availability rules of KIP-441 it does not follow (actives on
caught-up clients, thread balance checked without a follow-up, KIP-708's
single-move tag spread). The metrics show how close it comes.

Kafka's snapshot carries per-member previous tasks; ours carries them per
client, so a client's previous actives (and standbys) are dealt round-robin
over its members in TaskId order. Where Kafka's order comes from a hash map
(processes, members), ours is process-id order and member order, so the answer
is deterministic.

>>> import stickyflow
>>> doc = {"format": "stickyflow.snapshot/1", "kind": "streams",
...     "tasks": [{"id": f"0_{i}", "stateful": True, "end_offset_sum": 1000} for i in range(4)],
...     "clients": [{"process_id": "a", "previous_active": ["0_0", "0_1", "0_2", "0_3"], "previous_standby": []},
...                 {"process_id": "b", "previous_active": [], "previous_standby": []}]}
>>> r = stickyflow.assign(doc, "kip1071")
>>> {c: a["active"] for c, a in r.to_json()["assignment"].items()}
{'a': ['0_0', '0_1'], 'b': ['0_2', '0_3']}
>>> r.followup_rebalance_deadline_ms is None, r.metrics["warmups"]
(True, 0)
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from ..model.streams import ClientAssignment, StreamsSnapshot, parse_task_id, task_key
from ..registry import SolveOptions
from ..result import Decision

__all__ = ["assign_kip1071", "RULES_NOT_FOLLOWED"]

#: the spec's high-availability rules (KIP-441) that Kafka 4's coordinator assignor does not follow; the front
#: door holds ``kip1071`` results to every other rule
RULES_NOT_FOLLOWED = ("ACTIVE_TASK_NOT_CAUGHT_UP", "UNBALANCED_WITHOUT_FOLLOWUP", "STANDBY_TAGS_NOT_SPREAD")

_PREV_ACTIVE, _PREV_STANDBY, _NOT_PREV = 0, 1, 2


def _ceil_div(a: int, b: int) -> int:
    return 0 if b == 0 else -(-a // b)


@dataclass(eq=False)
class _Process:
    """One client: its members (threads) with their task counts, and what it has been given."""

    index: int
    pid: str
    tags: dict
    counts: list[int]
    active: list[list[str]] = field(default_factory=list)
    standby: list[list[str]] = field(default_factory=list)
    tasks: set[str] = field(default_factory=set)
    task_count: int = 0
    stateless_active: int = 0

    @property
    def capacity(self) -> int:
        return len(self.counts)

    def load(self) -> float:
        return self.task_count / self.capacity

    def stateless_load(self) -> float:
        return self.stateless_active / self.capacity

    def add(self, member: int, task: str, active: bool, stateful: bool) -> int:
        """Give ``task`` to ``member``; returns the member's new task count."""
        self.task_count += 1
        self.tasks.add(task)
        (self.active if active else self.standby)[member].append(task)
        if active and not stateful:
            self.stateless_active += 1
        self.counts[member] += 1
        return self.counts[member]

    def add_to_least_loaded_member(self, task: str, active: bool, stateful: bool) -> int:
        member = min(range(len(self.counts)), key=self.counts.__getitem__)
        return self.add(member, task, active, stateful)

    def has_room(self, quota: int) -> bool:
        return any(c < quota for c in self.counts)


class _Quota:
    """A per-member quota, ``ceil(tasks / members)``, recomputed when a member reaches it exactly."""

    def __init__(self, tasks: int, members: int):
        self.tasks, self.members = tasks, members
        self.value = _ceil_div(tasks, members)

    def reached(self, count: int) -> None:
        if count == self.value:
            self.members -= 1
            self.tasks -= count
            self.value = _ceil_div(self.tasks, self.members)


class _Assignor:
    def __init__(self, snap: StreamsSnapshot):
        self.snap = snap
        cfg = snap.config
        self.standbys = cfg.num_standby_replicas
        self.tag_keys = tuple(cfg.rack_aware_assignment_tags)
        clients = sorted(snap.clients, key=lambda c: c.process_id)
        self.procs = [_Process(index=k, pid=c.process_id, tags=dict(c.tags), counts=[0] * c.threads,
                               active=[[] for _ in range(c.threads)], standby=[[] for _ in range(c.threads)])
                      for k, c in enumerate(clients)]
        by_id = {t.id: t for t in snap.tasks}
        self.stateful = {t.id: t.stateful for t in snap.tasks}
        self.stateful_ids = [t.id for t in snap.tasks if t.stateful]
        self.stateless_ids = [t.id for t in snap.tasks if not t.stateful]
        members = sum(p.capacity for p in self.procs)
        n_stateful, n_all = len(self.stateful_ids), len(snap.tasks)
        self.q_stateful = _Quota(n_stateful, members)
        self.q_active = _Quota(n_all, members)
        self.q_total = _Quota(n_all + n_stateful * self.standbys, members)
        # previous holders: (process, member); a client's tasks dealt round-robin over its members
        self.prev_active: dict[str, tuple[_Process, int]] = {}
        candidates: dict[str, list[tuple[int, int, int, _Process, int]]] = {}
        seq = 0
        for p, c in zip(self.procs, clients):
            for k, t in enumerate(sorted((t for t in set(c.previous_active) if t in by_id), key=task_key)):
                self.prev_active[t] = (p, k % p.capacity)
            standby = sorted((t for t in set(c.previous_standby) if t in by_id), key=task_key)
            for k, t in enumerate(standby):
                candidates.setdefault(t, []).append((0, -self._offset_sum(c, by_id[t]), seq, p, k % p.capacity))
                seq += 1
            # a member that only reports local state for a task ranks after every previous standby
            held = set(standby) | set(c.previous_active)
            for t in sorted((t for t in c.lags if t in by_id and t not in held), key=task_key):
                candidates.setdefault(t, []).append((1, -self._offset_sum(c, by_id[t]), seq, p, 0))
                seq += 1
        self.prev_standby = {t: [(p, m) for *_, p, m in sorted(cs, key=lambda x: x[:3])]
                             for t, cs in candidates.items()}

    @staticmethod
    def _offset_sum(client, task) -> int:
        """The offsets of the client's local state for ``task`` (end minus lag); 0 when it reports none."""
        if task.id in client.running:
            return task.end_offset_sum
        reported = client.lags.get(task.id)
        if reported is None:
            return 0
        return max(0, task.end_offset_sum - min(reported, task.end_offset_sum))

    # ------------------------------------------------------------------ actives

    def run(self) -> dict[str, ClientAssignment]:
        self._actives(list(self.stateful_ids), stateful=True)
        self._actives(list(self.stateless_ids), stateful=False)
        if self.standbys > 0:
            self._standbys(list(self.stateful_ids))
        out = {}
        for p in self.procs:
            out[p.pid] = ClientAssignment.of([t for m in p.active for t in m], [t for m in p.standby for t in m], ())
        return out

    def _add_active(self, p: _Process, member: int, task: str, stateful: bool) -> None:
        count = p.add(member, task, True, stateful)
        if stateful:  # nothing else is assigned yet: the member's count is its stateful active count
            self.q_stateful.reached(count)
        self.q_active.reached(count)
        self.q_total.reached(count)

    def _under(self, p: _Process, member: int, stateful: bool) -> bool:
        quota = self.q_stateful.value if stateful else self.q_active.value
        return p.counts[member] < quota

    def _actives(self, tasks: list[str], stateful: bool) -> None:
        tasks.sort(key=_by_partition)
        rest = []
        for t in tasks:  # (a) the previous active member, while under quota
            prev = self.prev_active.get(t)
            if prev is not None and self._under(*prev, stateful):
                self._add_active(*prev, t, stateful)
            else:
                rest.append(t)
        tasks, rest = rest, []
        for t in tasks:  # (b) the least loaded previous standby member, while under quota
            prev = self._least_loaded_prev(self.prev_standby.get(t), None)
            if prev is not None and self._under(*prev, stateful):
                self._add_active(*prev, t, stateful)
            else:
                rest.append(t)
        rest.sort(key=_by_subtopology)
        heap = [(p.load(), p.stateless_load(), p.index) for p in self.procs]
        heapq.heapify(heap)
        for t in rest:  # (c) the least loaded process, its least loaded member
            _, _, k = heapq.heappop(heap)
            p = self.procs[k]
            count = p.add_to_least_loaded_member(t, True, stateful)
            self.q_active.reached(count)
            self.q_total.reached(count)
            heapq.heappush(heap, (p.load(), p.stateless_load(), k))

    def _least_loaded_prev(self, members, task: str | None):
        """Kafka's pick among previous holders: the first in rank order, replaced only by one whose process and
        member are both strictly less loaded; with ``task``, processes already holding it are skipped."""
        if not members:
            return None
        best = None
        best_p = best_m = float("inf")
        for p, m in members:
            if task is not None and task in p.tasks:
                continue
            pl, ml = p.load(), p.counts[m]
            if best is None or (pl < best_p and ml < best_m):
                best, best_p, best_m = (p, m), pl, ml
        return best

    # ------------------------------------------------------------------ standbys

    def _standbys(self, tasks: list[str]) -> None:
        picker = _TagPicker(self.tag_keys, self.procs) if self.tag_keys else None
        tasks.sort(key=_by_partition, reverse=True)
        later: list[tuple[str, int]] = []
        for t in tasks:
            placed = self._tag_standbys(picker, t) if picker is not None else 0
            self._sticky_standbys(t, placed, later)
        later.sort(key=lambda x: _by_subtopology(x[0]), reverse=True)
        heap = [(p.load(), p.index) for p in self.procs]
        heapq.heapify(heap)
        for t, remaining in later:
            for _ in range(remaining):
                if not self._to_least_loaded(heap, t):
                    break  # no process without the task is left (Kafka logs a warning)

    def _to_least_loaded(self, heap: list, task: str) -> bool:
        popped = []
        found = False
        while heap:
            entry = heapq.heappop(heap)
            p = self.procs[entry[1]]
            if task not in p.tasks:
                self.q_total.reached(p.add_to_least_loaded_member(task, False, True))
                popped.append((p.load(), p.index))
                found = True
                break
            popped.append(entry)
        for e in popped:
            heapq.heappush(heap, e)
        return found

    def _tag_standbys(self, picker: "_TagPicker", task: str) -> int:
        picker.start()
        for p in self.procs:
            if task in p.tasks:
                picker.mark_used(p)
        rank = {p.index: _PREV_STANDBY for p, _ in self.prev_standby.get(task, ())}
        prev = self.prev_active.get(task)
        if prev is not None:
            rank[prev[0].index] = _PREV_ACTIVE
        quota = self.q_total

        def eligible(p: _Process) -> bool:
            return task not in p.tasks and p.has_room(quota.value)

        def preference(p: _Process) -> tuple:
            return (rank.get(p.index, _NOT_PREV), p.load())

        placed = 0
        while placed < self.standbys:
            winner = picker.pick(eligible, preference)
            if winner is None:
                break
            self.q_total.reached(winner.add_to_least_loaded_member(task, False, True))
            picker.mark_used(winner)
            placed += 1
        return placed

    def _sticky_standbys(self, task: str, first: int, later: list[tuple[str, int]]) -> None:
        for i in range(first, self.standbys):
            prev = self.prev_active.get(task)
            if prev is not None:
                p, m = prev
                if task not in p.tasks and p.counts[m] < self.q_total.value:
                    self.q_total.reached(p.add(m, task, False, True))
                    continue
            prev = self._least_loaded_prev(self.prev_standby.get(task), task)
            if prev is not None:
                p, m = prev
                if p.counts[m] < self.q_total.value:
                    self.q_total.reached(p.add(m, task, False, True))
                    continue
            later.append((task, self.standbys - i))
            return


class _TagPicker:
    """Standby placement over the tag keys (highest priority first): a standby goes to an eligible process whose
    value for the priority key no holder of the task carries yet; among those, the one new on the most
    lower-priority keys (compared key by key), then the assignor's preference. A key whose values cannot be
    diversified any more is given up; when all are, the picker has nothing more to offer."""

    def __init__(self, keys: tuple[str, ...], procs: list[_Process]):
        self.keys = keys
        self.procs = procs
        self.used: list[set[str]] = [set() for _ in keys]
        self.level = 0
        self.pool = procs

    def start(self) -> None:
        for s in self.used:
            s.clear()
        self.level = 0
        self.pool = self.procs

    def mark_used(self, p: _Process) -> None:
        for i, k in enumerate(self.keys):
            v = p.tags.get(k)
            if v is not None:
                self.used[i].add(v)

    def _new(self, p: _Process, i: int) -> bool:
        v = p.tags.get(self.keys[i])
        return v is not None and v not in self.used[i]

    def pick(self, eligible, preference):
        while self.level < len(self.keys):
            i = self.level
            alive = [p for p in self.pool if self._new(p, i) and eligible(p)]
            if not alive:
                self.level += 1
                self.pool = self.procs
                continue
            lower = range(i + 1, len(self.keys))
            # more new values on lower keys first (key by key), then the preference, then the first in the pool
            best = min(alive, key=lambda p: (tuple(not self._new(p, j) for j in lower), preference(p)))
            alive.remove(best)
            self.pool = alive
            return best
        return None


def _parts(task: str) -> tuple[str, int]:
    parsed = parse_task_id(task)
    if parsed is None:  # not a TaskId (the reader rejects these): order by text
        return (task, -1)
    return (str(parsed[0]), parsed[1])  # Kafka 4's subtopology ids are strings, compared as text


def _by_partition(task: str) -> tuple[int, str]:
    sub, part = _parts(task)
    return (part, sub)


def _by_subtopology(task: str) -> tuple[str, int]:
    return _parts(task)


def assign_kip1071(snapshot: StreamsSnapshot, options: SolveOptions | None = None) -> Decision:
    """Kafka 4's coordinator ``StickyTaskAssignor`` on ``snapshot`` (see the module docstring).

    Returns ``Decision(method="kip1071", status="heuristic")`` with no
    warm-ups and no follow-up rebalance.
    """
    assignment = _Assignor(snapshot).run() if snapshot.clients else {}
    return Decision(assignment=assignment, method="kip1071", status="heuristic",
                    extra={"rules_not_followed": RULES_NOT_FOLLOWED})
