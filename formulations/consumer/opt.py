"""The optimal consumer-group assignment's front door: ``options.method`` picks the backend.

``"flow"`` (the default) is the min-cost flow of :mod:`.flow`, ``"networkx"`` the independent reference of
:mod:`.nx_flow`; a group balanced by load has a model of its own (:mod:`stickyflow.formulations.load.opt`).
Unknown methods are rejected with the list of known ones.
"""

from __future__ import annotations

import time

from stickyflow.errors import UnknownAssignorError
from stickyflow.model.consumer import ConsumerSnapshot
from stickyflow.registry import SolveOptions
from stickyflow.result import Decision

__all__ = ["solve_consumer", "METHODS"]

METHODS = ("flow", "networkx")


def solve_consumer(snapshot: ConsumerSnapshot, options: SolveOptions | None = None) -> Decision:
    """The optimal consumer assignment; ``options.method`` picks ``"flow"`` (default) or ``"networkx"``.

    >>> import stickyflow
    >>> snap = stickyflow.parse_snapshot({"format": "stickyflow.snapshot/1", "kind": "consumer",
    ...     "topics": {"t": {"partitions": 3}},
    ...     "members": [{"id": "a", "subscription": ["t"], "generation": 1, "owned": {"t": [0, 1, 2]}},
    ...                 {"id": "b", "subscription": ["t"]}]})
    >>> d = solve_consumer(snap)
    >>> d.assignment["a"]["t"].tolist(), d.assignment["b"]["t"].tolist(), d.objective
    ([0, 1], [2], 1)
    """
    options = options or SolveOptions()
    if snapshot.config.balance == "load":  # balanced by load: a model of its own (load/opt.py)
        from ..load.opt import solve_load

        return solve_load(snapshot, options)
    method = options.method or "flow"
    if method == "networkx":
        from .nx_flow import solve_consumer_networkx

        return solve_consumer_networkx(snapshot, options)
    if method != "flow":
        raise UnknownAssignorError(f"method: {method!r} is not a consumer method (known: {', '.join(METHODS)})")
    from .flow import solve_flow  # read at each call: tests replace it

    deadline = None if options.time_limit is None else time.perf_counter() + options.time_limit
    return solve_flow(snapshot, deadline)
