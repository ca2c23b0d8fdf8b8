"""The building blocks of the streams flows (:mod:`.actives`, :mod:`.standbys`): a min-cost flow built from
whole numpy arrays of arcs (:class:`Arcs`), rack pools split into direct and hub units, grouping by key, and
interleaved client slots.
"""

from __future__ import annotations

import numpy as np

from stickyflow.errors import InfeasibleError, SolverFaultError

from ..cpsat_backend import ortools_graph

__all__ = ["Arcs", "pool_split", "group_by", "interleaved_slots"]


class Arcs:
    """Arc arrays collected by kind, added to the solver in one call."""

    def __init__(self):
        self.parts: list[tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    def add(self, kind: str, tail, head, cap, cost) -> None:
        tail = np.asarray(tail, dtype=np.int64).reshape(-1)
        n = len(tail)
        head = np.broadcast_to(np.asarray(head, dtype=np.int64), (n,)) if np.ndim(head) == 0 else \
            np.asarray(head, dtype=np.int64).reshape(-1)
        cap = np.broadcast_to(np.asarray(cap, dtype=np.int64), (n,))
        cost = np.broadcast_to(np.asarray(cost, dtype=np.int64), (n,))
        self.parts.append((kind, tail, head, cap, cost))

    def solve(self, supplies: np.ndarray):
        """Solve; returns {kind: (tail, head, flow)} for every kind."""
        mcf = ortools_graph()[1]
        f = mcf.SimpleMinCostFlow()
        tails = np.concatenate([p[1] for p in self.parts])
        heads = np.concatenate([p[2] for p in self.parts])
        caps = np.concatenate([p[3] for p in self.parts])
        costs = np.concatenate([p[4] for p in self.parts])
        arcs = f.add_arcs_with_capacity_and_unit_cost(tails, heads, caps, costs)
        f.set_nodes_supplies(np.arange(len(supplies)), supplies)
        status = f.solve()
        if status == f.INFEASIBLE:
            raise InfeasibleError("the flow has no feasible solution")
        if status != f.OPTIMAL:
            raise SolverFaultError(f"min-cost flow ended with status {status}")
        flows = f.flows(arcs)
        out = {}
        pos = 0
        for kind, tail, head, _, _ in self.parts:
            n = len(tail)
            prev = out.get(kind)
            chunk = (tail, head, flows[pos:pos + n])
            if prev is not None:
                chunk = tuple(np.concatenate([a, b]) for a, b in zip(prev, chunk))
            out[kind] = chunk
            pos += n
        return out, int(f.optimal_cost())


def pool_split(units_direct: dict[int, np.ndarray], units_hub: dict[int, np.ndarray],
                hub_to_cell: tuple[np.ndarray, np.ndarray, np.ndarray]) -> dict[int, np.ndarray]:
    """Units (task ids, with repeats) arriving at each cell node: direct ones, then the hubs' shares."""
    cells: dict[int, list[np.ndarray]] = {k: [v] for k, v in units_direct.items()}
    tail, head, flow = hub_to_cell
    offset: dict[int, int] = {}
    for h, c, f in zip(tail.tolist(), head.tolist(), flow.tolist()):
        if f <= 0:
            continue
        units = units_hub.get(h)
        s = offset.get(h, 0)
        cells.setdefault(c, []).append(units[s:s + f])
        offset[h] = s + f
    return {k: np.concatenate(v) for k, v in cells.items()}


def group_by(keys: np.ndarray, values: np.ndarray) -> dict[int, np.ndarray]:
    """``values`` grouped by ``keys`` (stable)."""
    if not len(keys):
        return {}
    order = np.argsort(keys, kind="stable")
    k, v = keys[order], values[order]
    cuts = np.flatnonzero(np.diff(k)) + 1
    starts = np.concatenate([[0], cuts])
    return {int(k[s]): part for s, part in zip(starts, np.split(v, cuts))}


def interleaved_slots(clients: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Client slots in rounds (each client once per round while it has slots left), so neighbours differ."""
    keep = counts > 0
    clients, counts = clients[keep], counts[keep]
    if not len(clients):
        return np.zeros(0, dtype=np.int64)
    rep = np.repeat(clients, counts)
    rnd = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    order = np.lexsort((rep, rnd))
    return rep[order]
