"""stickyflow: Kafka consumer-group and Kafka Streams assignment by optimization.

The front door is :func:`assign`::

    import stickyflow
    result = stickyflow.assign("snapshot.json")          # optimal by default
    greedy = stickyflow.assign("snapshot.json", "sticky")  # Kafka's own algorithm
    print(result.metrics["moves"], greedy.metrics["moves"])

See ``snapshot-format.md`` for the snapshot and result JSON.
"""

from typing import TYPE_CHECKING

__version__ = "0.1.0"

# Every public name is imported on first use (PEP 562), so that ``import stickyflow`` (and with it the
# command line's ``--help`` and ``--version``) loads no numpy and no solver until something needs one.
_EXPORTS = {
    "api": ("assign",),
    "planning.planner": ("plan", "Plan"),
    "planning.problem": ("PlanProblem",),
    "model.consumer": ("ConsumerConfig", "ConsumerSnapshot", "Member", "Topic", "parse_consumer"),
    "model.consumer_claims": ("previous_owners",),
    "check.consumer": ("consumer_metrics", "validate_consumer"),
    "check.cooperative": ("cooperative_split",),
    "errors": ("BackendMissingError", "CostRangeError", "InfeasibleError", "InvalidAssignmentError",
               "InvalidSnapshotError", "Problem", "SolverFaultError", "StickyflowError", "TimeLimitError",
               "UnknownAssignorError"),
    "registry": ("SolveOptions", "available_assignors", "get_assignor", "register_assignor", "unregister_assignor"),
    "result": ("AssignmentResult", "Decision", "SolverInfo", "Violation"),
    "snapshot": ("as_snapshot", "dumps_result", "load_snapshot", "loads_snapshot", "parse_snapshot",
                 "snapshot_to_json"),
    "model.streams": ("Client", "ClientAssignment", "StreamsConfig", "StreamsSnapshot", "Task", "parse_streams"),
    "check.streams": ("streams_metrics", "validate_streams"),
    "greedy.streams_rank": ("rank", "should_rebalance"),
}
_HOME = {name: module for module, names in _EXPORTS.items() for name in names}


def __getattr__(name: str):
    import importlib

    module = _HOME.get(name)
    if module is not None:
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        globals()[name] = value
        return value
    try:  # a submodule reached as an attribute (``stickyflow.kip924``)
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{name}":
            raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # what static tools and IDEs read
    from . import kip924
    from .api import assign
    from .check.consumer import consumer_metrics, validate_consumer
    from .check.cooperative import cooperative_split
    from .check.streams import streams_metrics, validate_streams
    from .errors import (BackendMissingError, CostRangeError, InfeasibleError, InvalidAssignmentError,
                         InvalidSnapshotError, Problem, SolverFaultError, StickyflowError, TimeLimitError,
                         UnknownAssignorError)
    from .greedy.streams_rank import rank, should_rebalance
    from .model.consumer import ConsumerConfig, ConsumerSnapshot, Member, Topic, parse_consumer
    from .model.consumer_claims import previous_owners
    from .model.streams import Client, ClientAssignment, StreamsConfig, StreamsSnapshot, Task, parse_streams
    from .planning.planner import Plan, plan
    from .planning.problem import PlanProblem
    from .registry import SolveOptions, available_assignors, get_assignor, register_assignor, unregister_assignor
    from .result import AssignmentResult, Decision, SolverInfo, Violation
    from .snapshot import (as_snapshot, dumps_result, load_snapshot, loads_snapshot, parse_snapshot,
                           snapshot_to_json)

__all__ = [
    "assign", "plan", "Plan", "PlanProblem",
    "AssignmentResult", "Decision", "SolverInfo", "Violation", "SolveOptions",
    "ConsumerSnapshot", "ConsumerConfig", "Member", "Topic", "parse_consumer", "previous_owners",
    "validate_consumer", "consumer_metrics", "cooperative_split",
    "StreamsSnapshot", "StreamsConfig", "Task", "Client", "ClientAssignment", "parse_streams",
    "validate_streams", "streams_metrics", "rank", "should_rebalance", "kip924",
    "parse_snapshot", "loads_snapshot", "load_snapshot", "as_snapshot", "snapshot_to_json", "dumps_result",
    "register_assignor", "unregister_assignor", "available_assignors", "get_assignor",
    "StickyflowError", "InvalidSnapshotError", "Problem", "InfeasibleError", "BackendMissingError",
    "SolverFaultError", "InvalidAssignmentError", "CostRangeError", "TimeLimitError", "UnknownAssignorError",
]
