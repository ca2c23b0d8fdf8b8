"""The members' side of a simulated group: what each member reports every round, and how that evolves.

A consumer member reports the partitions it received last round as ``owned``
with that round's generation. A Streams client reports the tasks it ran as
``previous_active``, its standbys and warm-ups as ``previous_standby`` (warm-ups
travel as standbys in Kafka) and the lag of its local state, which shrinks at
the restore rate for standbys and warm-ups while the changelogs grow at the
write rate; tasks it no longer holds keep their state on disk (it only falls
behind). A client that leaves keeps its state for a later rejoin under the
same process id; one that crashes loses it.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from .scenario import Event, Scenario


class Group:
    """The members' side of a group: what each reports, and how that evolves between rounds."""

    leader: str | None
    order: list[str]

    @property
    def size(self) -> int:
        return len(self.order)

    def _lose_leader(self) -> None:
        if not self.order:
            self.leader = None
        elif self.leader in self.order:
            self.leader = self.order[(self.order.index(self.leader) + 1) % len(self.order)]
        else:
            self.leader = self.order[0]

    def apply(self, event: Event) -> None:
        if event.action == "leader_lost":
            self._lose_leader()
            return
        if event.action == "join":
            self.join(event.member, event.spec)
            self.order.append(event.member)
        else:
            self.order.remove(event.member)
            self.depart(event.member, crashed=event.action == "crash")
        if self.leader not in self.order:  # the coordinator picks the first member still there
            self.leader = self.order[0] if self.order else None
        elif self.leader is None and self.order:
            self.leader = self.order[0]

    def join(self, member: str, spec: Mapping[str, Any]) -> None: ...

    def depart(self, member: str, *, crashed: bool) -> None: ...

    def snapshot_json(self, rnd: int, now: int) -> dict[str, Any]: ...

    def round_metrics(self, snapshot: Any, res: Mapping[str, Any]) -> dict[str, Any]: ...

    def absorb(self, res: Mapping[str, Any]) -> None: ...

    def next_delay(self, res: Mapping[str, Any], now: int, readiness: str, sc: Scenario) -> tuple[int, str]: ...

    def advance(self, delay: int, sc: Scenario) -> None: ...


class ConsumerGroup(Group):
    def __init__(self, sc: Scenario):
        from stickyflow.model.consumer import consumer_to_json

        base = consumer_to_json(sc.snapshot)
        self.base = {k: v for k, v in base.items() if k not in ("members", "id", "now_ms")}
        self.name = sc.name or "consumer"
        self.members: dict[str, dict[str, Any]] = {m["id"]: dict(m) for m in base["members"]}
        self.order = list(self.members)
        self.leader = self.order[0] if self.order else None
        self.generation = max([m.generation or 0 for m in sc.snapshot.members], default=0)
        self.idle_ms = sc.effective_idle_ms()
        self.all_topics = list(base["topics"])

    def join(self, member: str, spec: Mapping[str, Any]) -> None:
        d: dict[str, Any] = {"id": member, "subscription": list(spec.get("subscription", self.all_topics))}
        for key in ("rack", "instance_id"):
            if spec.get(key) is not None:
                d[key] = spec[key]
        self.members[member] = d  # a consumer that joins owns nothing yet

    def depart(self, member: str, *, crashed: bool) -> None:
        del self.members[member]

    def snapshot_json(self, rnd: int, now: int) -> dict[str, Any]:
        doc = dict(self.base)
        doc["id"] = f"{self.name}#r{rnd}"
        doc["now_ms"] = now
        doc["members"] = [self.members[m] for m in self.order]
        return doc

    def round_metrics(self, snapshot: Any, res: Mapping[str, Any]) -> dict[str, Any]:
        revoked = sum(len(p) for topics in res["revocations"].values() for p in topics.values())
        return {"revoked": revoked, "withheld": int(res["metrics"].get("withheld", 0))}

    def absorb(self, res: Mapping[str, Any]) -> None:
        self.generation += 1
        for mid, topics in res["assignment"].items():
            m = dict(self.members[mid])
            owned = {t: list(p) for t, p in topics.items() if p}
            if owned:
                m["owned"] = owned
            else:
                m.pop("owned", None)
            m["generation"] = self.generation
            self.members[mid] = m

    def next_delay(self, res: Mapping[str, Any], now: int, readiness: str, sc: Scenario) -> tuple[int, str]:
        deadline = res["followup_rebalance_deadline_ms"]
        if deadline is None:
            return self.idle_ms, "idle"
        return max(0, int(deadline) - now), "followup"

    def advance(self, delay: int, sc: Scenario) -> None:
        return None


class StreamsApp(Group):
    def __init__(self, sc: Scenario):
        snap = sc.snapshot
        from stickyflow.model.streams import streams_to_json

        base = streams_to_json(snap)
        self.name = sc.name or "streams"
        self.config = base["config"]
        self.tasks = base["tasks"]
        self.stateful = {t.id for t in snap.tasks if t.stateful}
        self.end_offset = {t.id: int(t.end_offset_sum) for t in snap.tasks}
        self.arl = snap.config.acceptable_recovery_lag
        self.idle_ms = sc.effective_idle_ms()
        self.clients: dict[str, dict[str, Any]] = {}
        self.departed: dict[str, dict[str, Any]] = {}
        task_of = {t.id: t for t in snap.tasks}
        for c in snap.clients:
            # the snapshot's one lag rule, Client.lag (a report above the end offset sum counts as that sum)
            state = {tid: c.lag(task_of[tid]) for tid in c.lags if tid in self.stateful}
            state.update({tid: 0 for tid in c.running if tid in self.stateful})
            self.clients[c.process_id] = {
                "process_id": c.process_id, "threads": c.threads, "rack": c.rack, "tags": dict(c.tags),
                "active": list(c.previous_active), "standby": list(c.previous_standby), "warmup": [],
                "state": state}
        self.order = list(self.clients)
        self.leader = self.order[0] if self.order else None

    def join(self, member: str, spec: Mapping[str, Any]) -> None:
        old = self.departed.pop(member, None)
        if old is not None:  # a client that left gracefully comes back with its state on disk
            c = old
            for key in ("threads", "rack", "tags"):
                if key in spec:
                    c[key] = spec[key]
        else:
            c = {"process_id": member, "threads": int(spec.get("threads", 1)), "rack": spec.get("rack"),
                 "tags": dict(spec.get("tags") or {}), "state": {}}
        c.update(active=[], standby=[], warmup=[])
        self.clients[member] = c

    def depart(self, member: str, *, crashed: bool) -> None:
        c = self.clients.pop(member)
        if not crashed:
            self.departed[member] = c

    def snapshot_json(self, rnd: int, now: int) -> dict[str, Any]:
        clients = []
        for pid in self.order:
            c = self.clients[pid]
            d: dict[str, Any] = {"process_id": pid, "threads": c["threads"]}
            if c["rack"] is not None:
                d["rack"] = c["rack"]
            if c["tags"]:
                d["tags"] = dict(c["tags"])
            active = set(c["active"])
            d["previous_active"] = list(c["active"])
            d["previous_standby"] = list(c["standby"]) + list(c["warmup"])  # warm-ups travel as standbys
            lags = {tid: lag for tid, lag in c["state"].items() if not (tid in active and lag == 0)}
            if lags:
                d["lags"] = lags
            clients.append(d)
        tasks = []
        for t in self.tasks:
            t = dict(t)
            if t["stateful"]:
                t["end_offset_sum"] = self.end_offset[t["id"]]
            tasks.append(t)
        return {"format": "stickyflow.snapshot/1", "kind": "streams", "id": f"{self.name}#r{rnd}",
                "now_ms": now, "tasks": tasks, "clients": clients, "config": dict(self.config)}

    def _lag(self, pid: str, tid: str) -> int:
        lag = self.clients[pid]["state"].get(tid)
        return self.end_offset[tid] if lag is None else lag

    def round_metrics(self, snapshot: Any, res: Mapping[str, Any]) -> dict[str, Any]:
        warmups = standbys = restoring = 0
        for pid, a in res["assignment"].items():
            warmups += len(a["warmup"])
            standbys += len(a["standby"])
            # the state this client reported before this round (self.clients not yet updated)
            restoring += sum(1 for tid in a["active"] if tid in self.stateful and self._lag(pid, tid) > self.arl)
        return {"warmups": warmups, "standbys": standbys, "restoring_actives": restoring}

    def absorb(self, res: Mapping[str, Any]) -> None:
        for pid, a in res["assignment"].items():
            c = self.clients[pid]
            c["active"], c["standby"], c["warmup"] = list(a["active"]), list(a["standby"]), list(a["warmup"])
            state = c["state"]
            for tid in a["active"]:
                if tid in self.stateful:
                    state[tid] = 0  # it runs the task now: restored first, then processing (Kafka reports -2)
            for tid in a["standby"] + a["warmup"]:
                state.setdefault(tid, self.end_offset[tid])  # no local state: restores from the start

    def _lag_after(self, lag: int, dt: int, restore: float, write: float) -> int:
        return max(0, lag + math.floor(write * dt) - math.floor(restore * dt))

    def _ready_in(self, lag: int, restore: float, write: float) -> int | None:
        """Milliseconds until ``lag`` is at most the acceptable recovery lag (None: never)."""
        if lag <= self.arl:
            return 0
        if restore <= write:
            return None
        dt = max(0, math.ceil((lag - self.arl) / (restore - write)) - 1)
        while self._lag_after(lag, dt, restore, write) > self.arl:
            dt += 1
        return dt

    def next_delay(self, res: Mapping[str, Any], now: int, readiness: str, sc: Scenario) -> tuple[int, str]:
        deadline = res["followup_rebalance_deadline_ms"]
        if deadline is None:
            return self.idle_ms, "idle"
        delay = max(0, int(deadline) - now)
        if readiness == "eager":
            restore, write = sc.restore_rate(), float(sc.write_per_ms)
            ready = [self._ready_in(self._lag(pid, tid), restore, write)
                     for pid, a in res["assignment"].items() for tid in a["warmup"]]
            ready = [r for r in ready if r is not None]
            if ready and min(ready) < delay:
                return min(ready), "ready"
        return delay, "probing"

    def advance(self, delay: int, sc: Scenario) -> None:
        if delay <= 0:
            return
        restore, write = sc.restore_rate(), float(sc.write_per_ms)
        written = math.floor(write * delay)
        for tid in self.stateful:
            self.end_offset[tid] += written
        for c in self.clients.values():
            replicas = set(c["standby"]) | set(c["warmup"])
            active = set(c["active"])
            state = c["state"]
            for tid, lag in state.items():
                if tid in active:
                    state[tid] = 0
                elif tid in replicas:
                    state[tid] = self._lag_after(lag, delay, restore, write)
                else:
                    state[tid] = lag + written
        for c in self.departed.values():
            for tid in c["state"]:
                c["state"][tid] += written
