"""The registry of assignors, found by name; backends are imported on first use.

Built-in names: ``optimal`` (the optimizer; the default), ``sticky`` (Kafka's
greedy sticky / high-availability algorithms), ``range`` and ``roundrobin``
(consumer groups only), ``uniform`` and ``kip1071`` (Kafka 4's server-side
assignors), ``lpt`` and ``lag-based`` (consumer groups, by load). Register your own with :func:`register_assignor`:

>>> from stickyflow.result import Decision
>>> def everything_to_first(snapshot, options):
...     first = snapshot.members[0].id
...     return Decision(assignment={first: {t: range(snapshot.topics[t].partitions)
...                                         for t in snapshot.assignable_topics()}},
...                     method="custom", status="heuristic")
>>> register_assignor("first", everything_to_first, kinds=("consumer",))
>>> "first" in available_assignors("consumer")
True
>>> unregister_assignor("first")
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol

from .errors import UnknownAssignorError
from .result import Decision

__all__ = [
    "SolveOptions",
    "AssignorFunction",
    "AssignorSpec",
    "register_assignor",
    "unregister_assignor",
    "get_assignor",
    "available_assignors",
    "registered_assignor",
    "registered_assignors",
    "KINDS",
]

KINDS = ("consumer", "streams")


@dataclass(frozen=True, slots=True, kw_only=True)
class SolveOptions:
    """How to solve (not what): these travel with the call, the problem settings with the snapshot.

    ``method`` picks a backend of an assignor that has several (``optimal``:
    ``"flow"`` (default), ``"networkx"``, ``"cpsat"``); ``time_limit`` is in
    seconds (for the streams CP-SAT model, CP-SAT's deterministic seconds, with a
    wall-clock guard of 3 x the limit + 5 s: docs/streams.md); ``seed`` and
    ``num_workers`` reach CP-SAT; ``extra`` carries assignor-specific settings
    (e.g. ``max_moves``).
    """

    time_limit: float | None = None
    seed: int = 0
    num_workers: int | None = None
    method: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


class AssignorFunction(Protocol):
    """What an assignor is: a function of a snapshot and options returning a :class:`Decision`."""

    def __call__(self, snapshot: Any, options: SolveOptions) -> Decision: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class AssignorSpec:
    """A registered assignor: its name, the kinds it serves, where its code lives."""

    name: str
    kind: str
    target: str | Callable[..., Decision]  # "module:function", imported on first use, or the function
    optimizing: bool = False  # optimizers fall back to ``sticky`` when they fail
    description: str = ""

    def load(self) -> AssignorFunction:
        if callable(self.target):
            return self.target
        module, _, attr = self.target.partition(":")
        return getattr(importlib.import_module(module), attr)


_REGISTRY: dict[tuple[str, str], AssignorSpec] = {}


def register_assignor(name: str, function: str | Callable[..., Decision], *, kinds: tuple[str, ...] = KINDS,
                      optimizing: bool = False, description: str = "", replace: bool = False) -> None:
    """Make ``function`` reachable as ``assign(snapshot, assignor=name)`` and ``stickyflow solve --assignor name``.

    ``function`` is a callable ``(snapshot, options) -> Decision`` or a
    ``"module:function"`` string imported on first use.
    """
    for kind in kinds:
        if kind not in KINDS:
            raise ValueError(f"kinds: {kind!r} is not one of {', '.join(KINDS)}")
        if (name, kind) in _REGISTRY and not replace:
            raise ValueError(f"name: an assignor {name!r} for {kind} is already registered (pass replace=True)")
        _REGISTRY[(name, kind)] = AssignorSpec(name=name, kind=kind, target=function, optimizing=optimizing,
                                               description=description)


def unregister_assignor(name: str) -> None:
    """Remove every registration of ``name``."""
    for key in [k for k in _REGISTRY if k[0] == name]:
        del _REGISTRY[key]


def available_assignors(kind: str | None = None) -> list[str]:
    """Registered assignor names, for one kind or all."""
    return sorted({n for (n, k) in _REGISTRY if kind is None or k == kind})


def registered_assignor(name: str, kind: str) -> AssignorSpec | None:
    """The spec registered as ``name`` for ``kind``, or None: unlike :func:`get_assignor`, no error and no
    ``"module:function"`` import.

    >>> registered_assignor("sticky", "consumer").name, registered_assignor("no-such", "consumer")
    ('sticky', None)
    """
    return _REGISTRY.get((name, kind))


def registered_assignors() -> list[AssignorSpec]:
    """Every registration, by name, then kind."""
    return [spec for _, spec in sorted(_REGISTRY.items())]


def get_assignor(name: str, kind: str) -> AssignorSpec:
    """The spec of ``name`` for ``kind``; ``"module:function"`` names a custom assignor directly.

    Unknown names raise :class:`UnknownAssignorError` listing the known ones.
    """
    spec = registered_assignor(name, kind)
    if spec is not None:
        return spec
    if ":" in name:
        try:
            spec = AssignorSpec(name=name, kind=kind, target=name)
            spec.load()
            return spec
        except (ImportError, AttributeError, ValueError) as exc:
            raise UnknownAssignorError(f"assignor: cannot import {name!r} ({exc})") from None
    known = ", ".join(available_assignors(kind)) or "none"
    raise UnknownAssignorError(f"assignor: {name!r} is not an assignor for {kind} snapshots (known: {known})")


def _builtin() -> None:
    c = "consumer"
    s = "streams"
    register_assignor("optimal", "stickyflow.formulations.consumer.opt:solve_consumer", kinds=(c,), optimizing=True,
                      description="min-cost flow: most balanced, then fewest moves and cross-rack reads (proven)")
    register_assignor("optimal", "stickyflow.formulations.streams.opt:solve_streams", kinds=(s,), optimizing=True,
                      description="min-cost flow and CP-SAT under KIP-441's high-availability rules")
    register_assignor("sticky", "stickyflow.greedy.sticky:assign_sticky", kinds=(c,),
                      description="Kafka's sticky assignor (KIP-54, KIP-341, KIP-881; KAFKA-9987 for equal subscriptions)")
    register_assignor("sticky", "stickyflow.greedy.streams_ha:assign_high_availability", kinds=(s,),
                      description="Kafka Streams' high-availability task assignor (KIP-441, KIP-708, KIP-925)")
    register_assignor("range", "stickyflow.greedy.range_roundrobin:assign_range", kinds=(c,),
                      description="Kafka's RangeAssignor (3.5+: KIP-881 racks, co-partitioning, static members first)")
    register_assignor("roundrobin", "stickyflow.greedy.range_roundrobin:assign_roundrobin", kinds=(c,),
                      description="Kafka's RoundRobinAssignor")
    register_assignor("uniform", "stickyflow.greedy.uniform:assign_uniform", kinds=(c,),
                      description="Kafka 4's server-side UniformAssignor (KIP-848; group coordinator)")
    register_assignor("lpt", "stickyflow.greedy.by_load:assign_lpt", kinds=(c,),
                      description="largest rate first, to the least utilized subscriber after taking it (not sticky)")
    register_assignor("lag-based", "stickyflow.greedy.by_load:assign_lag_based", kinds=(c,),
                      description="grantneale's LagBasedPartitionAssignor with rates for lags (per topic; not sticky)")
    register_assignor("kip1071", "stickyflow.greedy.kip1071:assign_kip1071", kinds=(s,),
                      description="Kafka 4's server-side StickyTaskAssignor (KIP-1071; no warm-ups, reads no lags)")


_builtin()
