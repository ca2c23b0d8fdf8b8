"""KIP-924's own validation of a custom Streams assignor's answer (:func:`kip924_violations`).

Only KIP-924's rules and the shapes an assignment cannot take count here; the
high-availability rules are :func:`stickyflow.check.streams.validate_streams`'s.
:mod:`stickyflow.kip924` re-exports both names.
"""

from __future__ import annotations

from typing import Iterable

from ..model.streams import ClientAssignment, StreamsSnapshot
from ..result import Violation

__all__ = ["SHAPE_ERRORS", "kip924_violations"]


# shapes our assignment cannot take (Kafka's KafkaStreamsAssignment maps a task id to one role, so
# there they cannot even be written): rejected like KIP-924's errors, never returned
SHAPE_ERRORS = ("MALFORMED_ASSIGNMENT", "ACTIVE_AND_STANDBY_TASK_ASSIGNED_TO_SAME_KAFKASTREAMS",
                "STANDBY_TASK_ASSIGNED_MULTIPLE_TIMES")


def kip924_violations(snapshot: StreamsSnapshot,
                      entries: Iterable[tuple[str, ClientAssignment]]) -> list[Violation]:
    """KIP-924's validation of a custom assignor's answer, every error found, Kafka's answer first.

    ``entries`` are (process id, :class:`ClientAssignment`) pairs in the order the
    assignor returned them. The first element is what Kafka's
    ``TaskAssignmentUtils.validateTaskAssignment`` returns: walking the clients'
    tasks in order, an unknown task id or an active task seen a second time; then a
    standby (or warm-up) of a stateless task; then a client left out; then a process
    id that is not a client. After those come the shape errors (:data:`SHAPE_ERRORS`):
    a client holding one task in two roles, or one standby twice. Nothing else is
    checked: a task active nowhere, too few standbys, a lagging active, warm-ups
    beyond the budget or an uneven load are KIP-441's rules, not KIP-924's.

    >>> from stickyflow.model.streams import parse_streams
    >>> s = parse_streams({"format": "stickyflow.snapshot/1", "kind": "streams",
    ...     "tasks": [{"id": "0_0", "stateful": False}, {"id": "0_1", "stateful": True}],
    ...     "clients": [{"process_id": "a", "previous_active": [], "previous_standby": []},
    ...                 {"process_id": "b", "previous_active": [], "previous_standby": []}]})
    >>> [v.code for v in kip924_violations(s, [("a", ClientAssignment.of(["0_0"], [], []))])]
    ['MISSING_PROCESS_ID']
    >>> [v.code for v in kip924_violations(s, [("a", ClientAssignment.of(["0_0"], ["0_0"], [])),
    ...                                        ("b", ClientAssignment.of(["0_0", "7_7"], [], []))])]
    ['ACTIVE_TASK_ASSIGNED_MULTIPLE_TIMES', 'UNKNOWN_TASK_ID', 'INVALID_STANDBY_TASK', \
'ACTIVE_AND_STANDBY_TASK_ASSIGNED_TO_SAME_KAFKASTREAMS']
    """
    snap = snapshot
    idx = snap.index
    tasks = idx.task_pos
    first: dict[str, Violation] = {}  # code -> first occurrence, in the order found
    counts: dict[str, int] = {}
    active_on: dict[str, str] = {}
    replica_on: dict[str, str] = {}
    roles: dict[str, dict[str, list[str]]] = {}  # pid -> task -> roles (merged when a pid is listed twice)

    def found(code: str, message: str) -> None:
        counts[code] = counts.get(code, 0) + 1
        first.setdefault(code, Violation(code, message))

    listed: list[str] = []
    for pid, ca in entries:
        listed.append(pid)
        held = roles.setdefault(pid, {})
        for role in ("active", "standby", "warmup"):
            for tid in getattr(ca, role):
                held.setdefault(tid, []).append(role)
                if tid not in tasks:
                    found("UNKNOWN_TASK_ID", f"{pid!r} is assigned {tid!r}, which is not a task")
                elif role == "active":
                    if tid in active_on:
                        found("ACTIVE_TASK_ASSIGNED_MULTIPLE_TIMES",
                              f"{tid} is active on {active_on[tid]!r} and again on {pid!r}")
                    else:
                        active_on[tid] = pid
                else:
                    replica_on.setdefault(tid, pid)
    out = [_counted(first[c], counts[c]) for c in first]
    stateless = [t for t in replica_on if not idx.stateful[tasks[t]]]
    if stateless:
        out.append(_counted(Violation("INVALID_STANDBY_TASK", f"{stateless[0]} is stateless, yet "
                                      f"{replica_on[stateless[0]]!r} holds a standby of it"), len(stateless)))
    known = set(idx.client_ids)
    missing = [p for p in idx.client_ids if p not in roles]
    if missing:
        out.append(_counted(Violation("MISSING_PROCESS_ID", f"client {missing[0]!r} has no assignment"), len(missing)))
    unknown = [p for p in dict.fromkeys(listed) if p not in known]
    if unknown:
        out.append(_counted(Violation("UNKNOWN_PROCESS_ID", f"{unknown[0]!r} is not a client of the application"),
                            len(unknown)))
    both = [(p, t) for p, held in roles.items() for t, r in held.items() if "active" in r and len(r) > 1]
    if both:
        p, t = both[0]
        out.append(_counted(Violation("ACTIVE_AND_STANDBY_TASK_ASSIGNED_TO_SAME_KAFKASTREAMS",
                                      f"{p!r} holds {t} as active and as a standby or warm-up"), len(both)))
    twice = [(p, t) for p, held in roles.items() for t, r in held.items() if "active" not in r and len(r) > 1]
    if twice:
        p, t = twice[0]
        out.append(_counted(Violation("STANDBY_TASK_ASSIGNED_MULTIPLE_TIMES",
                                      f"{p!r} holds two standby or warm-up replicas of {t}"), len(twice)))
    return out


def _counted(v: Violation, n: int) -> Violation:
    return v if n <= 1 else Violation(v.code, f"{v.message} (and {n - 1} more)")
