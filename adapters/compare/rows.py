"""The rows of a study: one snapshot solved by every assignor, its follow-up rebalances played; the worker
that a Spark task (or this process) runs."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from stickyflow.errors import InvalidSnapshotError

from ..load_rows import COMPARE_LOAD_COLUMNS, load_fields, share_bound
from ..plan_rows import PLAN_COLUMNS, plan_compare_rows
from ..runtime import warm_up
from .assignors import PEERS, register_peers, serves
from .source import Source


# name -> Arrow type name of one row of results.parquet
ROW_COLUMNS: dict[str, str] = {
    "suite": "string", "index": "int64", "id": "string", "kind": "string", "scenario": "string",
    "protocol": "string", "size": "int64", "group": "int64", "racks": "bool", "assignor": "string",
    "status": "string", "method": "string", "moves": "int64", "standby_moves": "int64", "imbalance": "double",
    "cross_rack": "int64", "cost": "int64", "balanced": "bool", "wall_ms": "double", "rounds": "int64",
    "converged": "bool", "converge_moves": "int64", "converge_min": "double", "error": "string",
    **COMPARE_LOAD_COLUMNS,  # balance by load: peak_utilization, ..., peak_ratio (adapters/load_rows.py)
}
ROW_COLUMNS.update(PLAN_COLUMNS)  # plan:METHOD rows (stickyflow.adapters.plan_rows)


ERROR_STATUSES = ("invalid", "error")
DEFAULT_ROUNDS = 30


@dataclass(frozen=True, slots=True)
class Worker:
    """What a Spark task runs (pickled): the assignors and how to solve and play."""

    assignors: tuple[str, ...]
    source: Source
    rounds: int = DEFAULT_ROUNDS
    time_limit: float | None = None
    cwd: str | None = None

    def setup(self) -> None:
        if self.cwd and self.cwd not in sys.path:
            sys.path.append(self.cwd)
        if any(a in PEERS for a in self.assignors):
            register_peers()
        warm_up(self.assignors)

    def index_rows(self, index: int) -> list[dict[str, Any]]:
        suite_name, i = self.source.locate(index)
        from stickyflow.datasets.suites import suite_item

        try:
            doc = suite_item(suite_name, i, self.source.seed)
        except Exception as exc:  # noqa: BLE001 - a generator failure costs one row
            return [_error_row(f"{type(exc).__name__}: {exc}", suite=suite_name, index=index)]
        return snapshot_rows(doc, self.assignors, suite=suite_name, index=index, rounds=self.rounds,
                             time_limit=self.time_limit)

    def text_rows(self, text: Any, index: int, source: str | None) -> list[dict[str, Any]]:
        from stickyflow.model import jsonio

        try:
            doc = jsonio.loads(text) if isinstance(text, (str, bytes)) else text
        except ValueError as exc:
            return [_error_row(f"snapshot: is not valid JSON ({str(exc).splitlines()[0][:120]})", suite=source,
                               index=index)]
        return snapshot_rows(doc, self.assignors, suite=source, index=index, rounds=self.rounds,
                             time_limit=self.time_limit)

    def arrow_indices(self, batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        self.setup()
        schema = arrow_schema()
        for batch in batches:
            rows = [r for i in batch.column(0).to_pylist() for r in self.index_rows(int(i))]
            yield pa.RecordBatch.from_pylist(rows, schema=schema)

    def arrow_texts(self, batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        self.setup()
        schema = arrow_schema()
        for batch in batches:
            texts = batch.column("snapshot").to_pylist()
            idx = batch.column("index").to_pylist()
            sources = batch.column("source").to_pylist()
            rows = [r for t, i, s in zip(texts, idx, sources) for r in self.text_rows(t, int(i), s)]
            yield pa.RecordBatch.from_pylist(rows, schema=schema)


def arrow_schema():
    """:data:`ROW_COLUMNS` as an Arrow schema."""
    import pyarrow as pa

    types = {"string": pa.string(), "int64": pa.int64(), "double": pa.float64(), "bool": pa.bool_()}
    return pa.schema([(c, types[t]) for c, t in ROW_COLUMNS.items()])


def spark_schema() -> str:
    """:data:`ROW_COLUMNS` as a Spark DDL schema."""
    types = {"string": "string", "int64": "bigint", "double": "double", "bool": "boolean"}
    return ", ".join(f"`{c}` {types[t]}" for c, t in ROW_COLUMNS.items())


def _error_row(message: str, **fields: Any) -> dict[str, Any]:
    row = dict.fromkeys(ROW_COLUMNS)
    row.update(fields, status="error" if not message.startswith(("snapshot", "invalid")) else "invalid",
               error=message)
    return row


def _scenario_of(ident: str | None) -> str | None:
    parts = (ident or "").split("/")
    return parts[2] if len(parts) >= 4 else None


def snapshot_rows(doc: Any, assignors: Sequence[str], *, suite: str | None = None, index: int | None = None,
                  rounds: int = DEFAULT_ROUNDS, time_limit: float | None = None) -> list[dict[str, Any]]:
    """Rows (:data:`ROW_COLUMNS`) of one snapshot solved by every assignor that serves its kind; never raises
    for a bad snapshot or a failing assignor (a row with ``error``)."""
    import stickyflow

    try:
        snap = stickyflow.as_snapshot(doc)
    except InvalidSnapshotError as exc:
        ident = doc.get("id") if isinstance(doc, dict) else None
        return [dict(_error_row(str(exc), suite=suite, index=index, id=ident), status="invalid")]
    base: dict[str, Any] = {"suite": suite, "index": index, "id": snap.id, "kind": snap.kind,
                            "scenario": _scenario_of(snap.id)}
    if snap.kind == "consumer":
        base.update(protocol=snap.protocol, size=sum(t.partitions for t in snap.topics.values()),
                    group=len(snap.members), racks=bool(snap.rack_aware))
    else:
        base.update(protocol=snap.config.rebalancing_mode, size=len(snap.tasks), group=len(snap.clients),
                    racks=bool(snap.racks_known()))
    out = []
    for name in assignors:
        if not serves(name, snap.kind):
            continue
        row = dict.fromkeys(ROW_COLUMNS)
        row.update(base, assignor=name)
        try:
            result = stickyflow.assign(snap, name, time_limit=time_limit, num_workers=1)
        except Exception as exc:  # noqa: BLE001 - one failing assignor costs one row
            if type(exc).__name__ == "PeerUnsupportedError":
                continue  # kafka-python's round-robin refuses mixed subscriptions: not a comparison
            text = str(exc).splitlines()[0] if str(exc) else ""
            row.update(status="invalid" if isinstance(exc, InvalidSnapshotError) else "error",
                       error=f"{type(exc).__name__}: {text}"[:500])
            out.append(row)
            continue
        row.update(_result_fields(snap, result))
        share_bound([r for r in out if r.get("peak_bound") is not None] + [row])  # one yardstick per snapshot
        if result.followup_rebalance_deadline_ms is None:
            row.update(rounds=1, converged=True, converge_moves=row["moves"], converge_min=0.0)
        elif rounds == 1:  # nothing to play: the one rebalance asks for more
            row.update(rounds=1, converged=False, converge_moves=row["moves"], converge_min=0.0)
        else:
            row.update(_play(snap, name, rounds, time_limit))
        out.append(row)
    return out + plan_compare_rows(snap, assignors, base, list(ROW_COLUMNS), time_limit=time_limit)


def _result_fields(snap: Any, result: Any) -> dict[str, Any]:
    m = result.metrics
    moves = int(m["moves"])
    cross = m.get("cross_rack")
    if snap.kind == "consumer":
        cfg = snap.config
        cost = cfg.non_overlap_cost * moves + (cfg.traffic_cost * int(cross) if cross is not None else 0)
        balanced = None
    else:
        cost = m.get("cost")
        balanced = m.get("balanced")
    return {"status": result.solver.status, "method": result.solver.method, "moves": moves,
            "standby_moves": m.get("standby_moves"), "imbalance": float(m["imbalance"]),
            "cross_rack": None if cross is None else int(cross), "cost": None if cost is None else int(cost),
            "balanced": None if balanced is None else bool(balanced), "wall_ms": 1000.0 * float(result.solver.wall_s),
            **load_fields(m)}


def _play(snap: Any, assignor: str, rounds: int, time_limit: float | None) -> dict[str, Any]:
    """Rebalances until no follow-up is asked for (the simulator's members report what they were given)."""
    from stickyflow.datasets.simulator import Scenario, run_scenario

    try:
        run = run_scenario(Scenario(snapshot=snap, rounds=rounds, events=()), assignor, time_limit=time_limit,
                           keep=False)
    except Exception as exc:  # noqa: BLE001 - playing is a measurement; its failure must not lose the row
        return {"rounds": None, "converged": None, "error": f"playing follow-ups: {type(exc).__name__}: {exc}"[:500]}
    ep = run.episodes[0]
    end = ep.converged_round if ep.converged_round is not None else len(run.rounds) - 1
    span = run.rounds[: end + 1]
    return {"rounds": ep.rounds_to_converge if ep.converged_round is not None else len(run.rounds),
            "converged": ep.converged_round is not None, "converge_moves": sum(r.moves for r in span),
            "converge_min": (span[-1].time_ms - span[0].time_ms) / 60_000.0}
