r"""KIP-925's rack-aware task optimizer as min-cost flows (OR-Tools ``SimpleMinCostFlow``, imported on use).

Kafka Streams optimizes a balanced assignment for cross-rack traffic without
changing how many tasks each client holds. For a set of tasks :math:`S`, with
``x[t, c] = 1`` when task ``t`` goes to client ``c`` and ``n_c`` the tasks of
``S`` that ``c`` holds now:

.. math::

    \min \sum_{t,c} x_{tc}\,\bigl(\text{traffic} \cdot \text{cross}(t, c)
        + \text{non\_overlap} \cdot [c \ne \text{now}(t)]\bigr)
    \quad\text{s.t.}\quad \sum_c x_{tc} = 1,\; \sum_t x_{tc} = n_c

where ``cross(t, c)`` counts the task's input partitions (actives) or changelog
partitions (standbys) whose known racks exclude ``c``'s rack. With
``balance_subtopology`` each client also takes at most
:math:`\lceil n_c \cdot |S_s| / |S| \rceil` tasks of each subtopology ``s``.

The cost depends on a client only through its rack, so actives are solved on a
compressed graph: task -> rack group (every client of that rack) or task -> its
current client, then group -> client. That keeps the arc count near
``tasks x (racks + 1)`` where Kafka's graph has ``tasks x clients`` arcs.

Standbys need "no two replicas of a task on one client", which the compressed
graph cannot say; they use the full task -> client graph, split by client tag
values so that tag spreading (KIP-708) is kept exactly, and are skipped above
:data:`MAX_STANDBY_ARCS` arcs.
"""

from __future__ import annotations

import numpy as np

from ..check.streams_tables import rack_tables
from ..model.streams import StreamsSnapshot

__all__ = ["optimize_active_tasks", "optimize_standby_tasks", "MAX_STANDBY_ARCS", "subtopology_of"]

MAX_STANDBY_ARCS = 3_000_000


def subtopology_of(snap: StreamsSnapshot) -> np.ndarray:
    """Subtopology number of every task (int64 array)."""
    return snap.cached("subtopology", lambda s: np.fromiter((t.subtopology for t in s.tasks), dtype=np.int64,
                                                             count=len(s.tasks)))


def optimize_active_tasks(snap: StreamsSnapshot, owner: np.ndarray, tasks: np.ndarray, *, traffic_cost: int,
                          non_overlap_cost: int, strategy: str = "min_traffic",
                          forbidden: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """Reassign the active ``tasks`` (indexes) among their current clients to minimize KIP-925's cost.

    ``owner[t]`` is task ``t``'s client; the returned copy keeps every client's
    count of ``tasks``. ``forbidden`` lists (client, task) pairs that must not
    be formed (a client already holding a standby or warm-up of the task).
    Does nothing when racks are unknown, or when forbidden pairs leave the
    ``balance_subtopology`` caps unreachable (Kafka would fail there).

    Compressed graph: task t -> group (subtopology part, rack r) with cost
    ``traffic x cross(t, r) + non_overlap``; task t -> (its client, part) with
    cost ``traffic x cross(t, rack of its client)``; group -> (client, part) free;
    (client, part) -> client with the subtopology cap; client -> sink with
    capacity its current count. A task with forbidden clients skips the groups
    and gets one arc per allowed client instead.
    """
    racks = rack_tables(snap)
    tasks = np.asarray(tasks, dtype=np.int64)
    out = owner.copy()
    if not racks.known or len(tasks) < 2 or len(snap.clients) < 2:
        return out
    from ortools.graph.python import min_cost_flow

    C = len(snap.clients)
    T = len(snap.tasks)
    R1 = len(racks.racks) + 1
    cur = owner[tasks]
    if (cur < 0).any():
        raise ValueError("optimize_active_tasks: every task must have a client")
    cross = racks.input_cross[tasks]  # (n, R1)
    n = len(tasks)
    counts = np.bincount(cur, minlength=C)
    if strategy == "balance_subtopology":
        sub = subtopology_of(snap)[tasks]
        parts, part = np.unique(sub, return_inverse=True)
        P = len(parts)
        per_part = np.bincount(part, minlength=P)
        cap = np.ceil(np.outer(counts, per_part) / n).astype(np.int64)  # (C, P)
    else:
        P = 1
        part = np.zeros(n, dtype=np.int64)
        cap = counts.reshape(C, 1).copy()
    crack = racks.client_rack
    constrained = np.zeros(n, dtype=bool)
    bad_keys = np.zeros(0, dtype=np.int64)
    if forbidden is not None and len(forbidden[0]):
        pos = np.full(T, -1, dtype=np.int64)
        pos[tasks] = np.arange(n)
        fc, ft = np.asarray(forbidden[0], dtype=np.int64), np.asarray(forbidden[1], dtype=np.int64)
        hit = pos[ft] >= 0
        constrained[pos[ft[hit]]] = True
        bad_keys = np.unique(pos[ft[hit]] * C + fc[hit])
    free = np.flatnonzero(~constrained)
    tied = np.flatnonzero(constrained)
    # node numbering
    group_base = n                       # (part, rack) groups: P * R1
    cp_base = group_base + P * R1        # (client, part): C * P
    client_base = cp_base + C * P
    sink = client_base + C
    present = np.zeros(R1, dtype=bool)
    present[crack] = True
    rk = np.flatnonzero(present)
    # 1. free task -> every rack group of its part (cross cost + non-overlap)
    g_t = np.repeat(free, len(rk))
    g_r = np.tile(rk, len(free))
    # 2. constrained task -> (client, part) for every allowed client other than its own
    d_t = np.repeat(tied, C)
    d_c = np.tile(np.arange(C), len(tied))
    ok = (d_c != cur[d_t]) & ~np.isin(d_t * C + d_c, bad_keys)
    d_t, d_c = d_t[ok], d_c[ok]
    cc = np.repeat(np.arange(C), P)
    pp = np.tile(np.arange(P), C)
    tails = [g_t, d_t, np.arange(n), group_base + pp * R1 + crack[cc], cp_base + cc * P + pp, client_base + np.arange(C)]
    heads = [group_base + part[g_t] * R1 + g_r, cp_base + d_c * P + part[d_t], cp_base + cur * P + part,
             cp_base + cc * P + pp, client_base + cc, np.full(C, sink)]
    caps = [np.ones(len(g_t)), np.ones(len(d_t)), np.ones(n), np.full(C * P, n), cap[cc, pp], counts]
    costs = [traffic_cost * cross[g_t, g_r] + non_overlap_cost, traffic_cost * cross[d_t, crack[d_c]] + non_overlap_cost,
             traffic_cost * cross[np.arange(n), crack[cur]], np.zeros(C * P), np.zeros(C * P), np.zeros(C)]
    sizes = [len(x) for x in tails]
    f = min_cost_flow.SimpleMinCostFlow()
    f.add_arcs_with_capacity_and_unit_cost(*(np.concatenate(x).astype(np.int64) for x in (tails, heads, caps, costs)))
    supplies = np.zeros(sink + 1, dtype=np.int64)
    supplies[:n] = 1
    supplies[sink] = -n
    f.set_nodes_supplies(np.arange(sink + 1), supplies)
    if f.solve() != f.OPTIMAL:
        return out  # cannot happen (the current assignment is a solution); keep it if it does
    flow = np.split(f.flows(np.arange(sum(sizes))), np.cumsum(sizes)[:-1])
    g_flow, d_flow, stay_flow, gc_flow = flow[0] > 0, flow[1] > 0, flow[2] > 0, flow[3]
    new = np.full(n, -1, dtype=np.int64)
    new[stay_flow] = cur[stay_flow]
    new[d_t[d_flow]] = d_c[d_flow]
    # group tasks are dealt to the clients their group sends flow to (conservation makes the counts match)
    g_task = g_t[g_flow]
    g_key = part[g_task] * R1 + g_r[g_flow]
    order = np.argsort(g_key, kind="stable")
    g_task, g_key = g_task[order], g_key[order]
    cp_group = pp * R1 + crack[cc]
    slots = np.argsort(cp_group, kind="stable")
    recv = gc_flow[slots].astype(np.int64)
    slot_client = np.repeat(cc[slots], recv)
    slot_key = np.repeat(cp_group[slots], recv)
    if len(slot_client) != len(g_task) or (slot_key != g_key).any():
        return out  # should not happen
    new[g_task] = slot_client
    if (new < 0).any():
        return out
    out[tasks] = new
    return out


def optimize_standby_tasks(snap: StreamsSnapshot, active: np.ndarray, standby_client: np.ndarray,
                           standby_task: np.ndarray, blocked_client: np.ndarray, blocked_task: np.ndarray, *,
                           traffic_cost: int, non_overlap_cost: int,
                           tag_group: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """Move standbys between clients to minimize KIP-925's cost; keeps every client's standby count.

    ``(standby_client, standby_task)`` are the current standby pairs; a client
    never receives a task it is active for, or one of the ``blocked`` pairs
    (warm-ups), or a second replica. With ``tag_group`` (client -> tag-value
    combination) a standby only moves between clients of the same combination,
    so KIP-708 spreading is unchanged. Returns the new pairs, or None when
    racks are unknown or the graph would exceed :data:`MAX_STANDBY_ARCS` arcs.
    """
    racks = rack_tables(snap)
    m = len(standby_task)
    if not racks.known or m < 2:
        return None
    C = len(snap.clients)
    T = len(snap.tasks)
    group = np.zeros(C, dtype=np.int64) if tag_group is None else np.asarray(tag_group, dtype=np.int64)
    G = int(group.max()) + 1 if C else 1
    # supply nodes: (task, group) with supply = standbys of the task in that group
    key = standby_task * G + group[standby_client]
    ukeys, inv, supply = np.unique(key, return_inverse=True, return_counts=True)
    node_task = ukeys // G
    node_group = ukeys % G
    members = [np.flatnonzero(group == g) for g in range(G)]
    size = np.array([len(x) for x in members], dtype=np.int64)
    n_arcs = int(size[node_group].sum())
    if n_arcs > MAX_STANDBY_ARCS:
        return None
    from ortools.graph.python import min_cost_flow

    S = len(ukeys)
    tail = np.repeat(np.arange(S), size[node_group])
    head = np.concatenate([members[g] for g in node_group]) if S else np.zeros(0, dtype=np.int64)
    t_of_arc = node_task[tail]
    # forbidden: the active client, warm-up holders
    forbid = head == active[t_of_arc]
    if len(blocked_task):
        bk = np.unique(blocked_client * T + blocked_task)
        forbid |= np.isin(head * T + t_of_arc, bk)
    cur_keys = np.unique(standby_client * T + standby_task)
    here = np.isin(head * T + t_of_arc, cur_keys)
    keep = ~forbid
    tail, head, t_of_arc, here = tail[keep], head[keep], t_of_arc[keep], here[keep]
    cost = traffic_cost * racks.changelog_cross[t_of_arc, racks.client_rack[head]] + non_overlap_cost * (~here)
    counts = np.bincount(standby_client, minlength=C)
    sink = S + C
    f = min_cost_flow.SimpleMinCostFlow()
    f.add_arcs_with_capacity_and_unit_cost(tail, S + head, np.ones(len(tail), dtype=np.int64),
                                                cost.astype(np.int64))
    f.add_arcs_with_capacity_and_unit_cost(S + np.arange(C), np.full(C, sink), counts.astype(np.int64),
                                           np.zeros(C, dtype=np.int64))
    supplies = np.zeros(sink + 1, dtype=np.int64)
    supplies[:S] = supply
    supplies[sink] = -m
    f.set_nodes_supplies(np.arange(sink + 1), supplies)
    if f.solve() != f.OPTIMAL:
        return None
    flow = f.flows(np.arange(len(tail)))  # the task -> client arcs were added first
    chosen = flow > 0
    return head[chosen].astype(np.int64), t_of_arc[chosen].astype(np.int64)
