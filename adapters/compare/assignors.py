"""The assignors a study compares: registered names, kafka-python's own (registered here on first use)
and ``module:function``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from stickyflow.errors import UnknownAssignorError

from ..plan_rows import check_plan_names, is_plan


PEERS = ("kp-sticky", "kp-range", "kp-roundrobin")


def _peer_assignor(name: str) -> Callable[..., Any]:
    def run(snapshot: Any, options: Any) -> Any:
        from stickyflow.result import Decision

        from ..peers import run_peer

        return Decision(assignment=run_peer(snapshot, name, check=False), method="kafka-python", status="heuristic")

    return run


def register_peers() -> None:
    """Register kafka-python's assignors (:data:`PEERS`) once, so that a worker solves them by name."""
    from stickyflow.registry import register_assignor, registered_assignor

    for p in PEERS:
        if registered_assignor(p, "consumer") is None:
            register_assignor(p, _peer_assignor(p[3:]), kinds=("consumer",),
                              description=f"kafka-python's {p[3:]} assignor, in process")


def check_assignors(names: Sequence[str]) -> tuple[str, ...]:
    """The names, checked: registered, kafka-python's (``kp-*``, needs kafka-python) or an importable
    ``module:function`` (the working directory is searched). Raises :class:`UnknownAssignorError` in one line."""
    from stickyflow.registry import available_assignors, get_assignor

    names = tuple(dict.fromkeys(n.strip() for n in names if n.strip()))
    if not names:
        raise UnknownAssignorError("--assignors: names no assignor")
    known = set(available_assignors())
    check_plan_names(names)
    for n in names:
        if n in known or is_plan(n):
            continue
        if n in PEERS:
            try:
                from ..peers import kafka_classes

                kafka_classes()
            except Exception as exc:  # noqa: BLE001 - any reason kafka-python cannot load
                raise UnknownAssignorError(f"--assignors: {n} needs kafka-python ({exc})") from None
            continue
        if ":" in n:
            here = str(Path.cwd())
            if here not in sys.path:
                sys.path.append(here)
            get_assignor(n, "consumer").load()  # raises UnknownAssignorError naming it when it cannot be imported
            continue
        raise UnknownAssignorError(f"--assignors: {n!r} is not an assignor (known: "
                                   f"{', '.join(sorted(known | set(PEERS)))}, or module:function)")
    return names


def serves(name: str, kind: str) -> bool:
    """Whether ``name`` solves snapshots of ``kind`` here (plans have rows of their own)."""
    from stickyflow.registry import registered_assignor

    if is_plan(name):  # plans have rows of their own (plan_compare_rows)
        return False
    return registered_assignor(name, kind) is not None or ":" in name
