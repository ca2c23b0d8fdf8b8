"""stickyflow: Kafka consumer-group and Kafka Streams assignment by optimization.

The front door is :func:`assign`::

    import stickyflow
    result = stickyflow.assign("snapshot.json")          # optimal by default
    greedy = stickyflow.assign("snapshot.json", "sticky")  # Kafka's own algorithm
    print(result.metrics["moves"], greedy.metrics["moves"])

See ``snapshot-format.md`` for the snapshot and result JSON.
"""

from .api import assign
from .consumer import ConsumerConfig, ConsumerSnapshot, Member, Topic, parse_consumer, previous_owners
from .consumer_check import consumer_metrics, cooperative_split, validate_consumer
from .errors import (BackendMissingError, CostRangeError, InfeasibleError, InvalidAssignmentError,
                     InvalidSnapshotError, Problem, SolverFaultError, StickyflowError, TimeLimitError,
                     UnknownAssignorError)
from .registry import SolveOptions, available_assignors, get_assignor, register_assignor, unregister_assignor
from .result import AssignmentResult, Decision, SolverInfo, Violation
from .snapshot import as_snapshot, dumps_result, load_snapshot, loads_snapshot, parse_snapshot, snapshot_to_json
from .streams import Client, ClientAssignment, StreamsConfig, StreamsSnapshot, Task, parse_streams
from .streams_check import streams_metrics, validate_streams
from .streams_rank import rank, should_rebalance
from . import kip924

__version__ = "0.1.0"

__all__ = [
    "assign",
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
