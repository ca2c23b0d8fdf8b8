"""Plans as rows of ``compare`` and ``batch``: the assignor name ``plan:METHOD`` runs plan method METHOD.

A plan method (:mod:`stickyflow.planning.methods`) joins the assignors of a study or a
batch as ``plan:optimal``, ``plan:mwf``, ``plan:bfd``, ...:

* in ``stickyflow batch`` its row has the batch columns of
  :mod:`stickyflow.adapters.pandas` (``moves``: the plan's moves, ``objective``: its
  moved load, ``bound``: the proven least member count, ``metrics``: ``members``,
  ``keep``, ``stop``, ``add`` (counts), ``moved_load``, ``moves``, ``bound`` as JSON);
* in ``stickyflow compare`` the row adds :data:`PLAN_COLUMNS` (members, moved load,
  bound) to the study's columns.

A snapshot that is no plan's input (a Streams application, or a consumer group with
no ``config.capacity``) gets no plan row in ``compare`` (as an assignor that does not
serve a kind gets none) and an ``unsupported`` row in ``batch``; one that breaks a
plan rule otherwise is an ``invalid`` row naming the rule.

>>> is_plan("plan:mwf"), is_plan("optimal")
(True, False)
>>> check_plan_names(["optimal", "plan:bfd"])
['plan:bfd']
"""

from __future__ import annotations

import json
import time
from typing import Any, Sequence

from stickyflow.errors import InvalidSnapshotError, StickyflowError, UnknownAssignorError

__all__ = ["PLAN_PREFIX", "PLAN_COLUMNS", "is_plan", "check_plan_names", "plan_batch_row", "plan_compare_rows",
           "serves_plan"]

PLAN_PREFIX = "plan:"
#: what a plan adds to a row of ``compare`` (name -> Arrow type name)
PLAN_COLUMNS = {"plan_members": "int64", "plan_moved_load": "double", "plan_bound": "int64"}


def is_plan(name: str) -> bool:
    return name.startswith(PLAN_PREFIX)


def check_plan_names(names: Sequence[str]) -> list[str]:
    """The ``plan:METHOD`` names of ``names``, each METHOD checked; :class:`UnknownAssignorError` names the
    first unknown one with the known methods."""
    from stickyflow.planning.methods import PLAN_METHODS

    plans = [n for n in names if is_plan(n)]
    for n in plans:
        if n[len(PLAN_PREFIX):] not in PLAN_METHODS:
            raise UnknownAssignorError(f"--assignors: {n!r} names no plan method (known: "
                                       f"{', '.join(PLAN_PREFIX + m for m in PLAN_METHODS)})")
    return plans


def serves_plan(snap: Any) -> bool:
    """Is ``snap`` a plan's kind of input: a consumer group with a ``config.capacity``."""
    return snap.kind == "consumer" and getattr(snap.config, "capacity", None) is not None


def _run(snap: Any, name: str, time_limit: float | None, seed: int, num_workers: int | None):
    import stickyflow

    return stickyflow.plan(snap, name[len(PLAN_PREFIX):], time_limit=time_limit, seed=seed,
                           num_workers=num_workers)


def _failure(exc: Exception) -> tuple[str, str]:
    status = "invalid" if isinstance(exc, InvalidSnapshotError) else "error"
    detail = str(exc) if isinstance(exc, StickyflowError) else f"{type(exc).__name__}: {exc}"
    return status, (detail.splitlines()[0] if detail else type(exc).__name__)[:500]


def plan_batch_row(snap: Any, name: str, *, source: str | None = None, time_limit: float | None = None,
                   seed: int = 0, num_workers: int | None = None, include_result: bool = False) -> dict[str, Any]:
    """The batch row (:data:`stickyflow.adapters.pandas.RESULT_COLUMNS`) of plan ``name`` on ``snap``."""
    from .pandas import RESULT_COLUMNS

    row = dict.fromkeys(RESULT_COLUMNS)
    if not include_result:
        del row["result"]
    row.update(id=snap.id, kind=snap.kind, assignor=name, source=source)
    t0 = time.perf_counter()
    if not serves_plan(snap):
        row.update(status="unsupported", wall_s=0.0,
                   error="a plan needs a consumer group with config.capacity (snapshot-format.md, Plans)")
        return row
    try:
        plan = _run(snap, name, time_limit, seed, num_workers)
    except Exception as exc:  # one bad snapshot must not stop a batch
        status, error = _failure(exc)
        row.update(status=status, error=error, wall_s=time.perf_counter() - t0)
        return row
    metrics = {"members": plan.members, "keep": len(plan.keep), "stop": len(plan.stop), "add": len(plan.add),
               "moved_load": plan.moved_load, "moves": plan.moves, "bound": plan.bound}
    row.update(status=plan.solver.status, method=plan.method, reason=plan.solver.reason, moves=plan.moves,
               objective=plan.moved_load, bound=float(plan.bound), wall_s=float(plan.solver.wall_s),
               metrics=json.dumps(metrics))
    if include_result:
        row["result"] = json.dumps(plan.to_json())
    return row


def plan_compare_rows(snap: Any, names: Sequence[str], base: dict[str, Any], columns: Sequence[str], *,
                      time_limit: float | None = None) -> list[dict[str, Any]]:
    """Rows of ``compare`` (with ``columns``) for the plan names of ``names`` on ``snap`` (none when ``snap``
    is no plan's input)."""
    if not serves_plan(snap):
        return []
    out = []
    for name in (n for n in names if is_plan(n)):
        row = dict.fromkeys(columns)
        row.update(base, assignor=name)
        try:
            plan = _run(snap, name, time_limit, 0, 1)
        except Exception as exc:  # noqa: BLE001 - one failing plan costs one row
            status, error = _failure(exc)
            row.update(status=status, error=error)
        else:
            row.update(status=plan.solver.status, method=plan.method, moves=plan.moves,
                       wall_ms=1000.0 * float(plan.solver.wall_s), plan_members=plan.members,
                       plan_moved_load=plan.moved_load, plan_bound=plan.bound, rounds=1, converged=True,
                       converge_moves=plan.moves, converge_min=0.0)
        out.append(row)
    return out
