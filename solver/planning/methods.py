"""The plan methods by name: the greedy ones of the literature here, the exact ones found by name.

========================  ==============================================================
``optimal`` (default)     fewest members (L2 bound, CP-SAT), then least moved load, then
                          fewest moves: :mod:`stickyflow.formulations.plan.cpsat`
``latency``               fewest members, then the least delay the fluid latency model
                          predicts for the moved partitions: :mod:`stickyflow.formulations.plan.latency`
``ff``, ``bf``, ``wf``,   first, best, worst, next fit in snapshot order; with ``d``
``nf``, ``ffd``, ...      (``ffd``, ``bfd``, ``wfd``, ``nfd``) in decreasing rate
                          (:mod:`stickyflow.planning.anyfit`)
``mwf``, ``mbf``,         Landau's modified worst and best fit, members by load or by
``mwfp``, ``mbfp``        largest partition (:mod:`stickyflow.planning.modified`)
``least-loaded``          Ezzeddine et al.'s least-loaded packing with thresholds ``up``
                          and ``down`` (:mod:`stickyflow.planning.leastloaded`)
========================  ==============================================================

A method is a function ``(problem, weights, options) -> slots`` (see
:mod:`stickyflow.check.plan`) or, for the exact ones, ``-> PlanDecision``; the front
door (:func:`stickyflow.plan`) checks what it returns. :func:`best_of` compares
answers the way a plan is judged: fewest members, then least moved load, then
fewest moves.

>>> sorted(PLAN_METHODS)[:4]
['bf', 'bfd', 'ff', 'ffd']
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from ..errors import UnknownAssignorError
from .anyfit import any_fit
from .leastloaded import least_loaded
from .modified import modified_fit
from .problem import PlanProblem, Weights

__all__ = ["PlanDecision", "PLAN_METHODS", "HEURISTICS", "EXACT", "get_method", "run_heuristic", "best_of",
           "plan_key", "INCUMBENTS"]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class PlanDecision:
    """A method's answer before the check: ``slots``; ``status`` ``"optimal"``, ``"feasible"`` or
    ``"heuristic"``; ``bound`` a proven lower bound on the members when the method proved more than L2."""

    slots: np.ndarray
    status: str
    bound: int | None = None
    reason: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


def _any(rule: str, decreasing: bool) -> Callable[..., np.ndarray]:
    return lambda problem, weights, options: any_fit(problem, weights, rule, decreasing=decreasing)


def _modified(rule: str, key: str) -> Callable[..., np.ndarray]:
    return lambda problem, weights, options: modified_fit(problem, weights, rule, key)


def _least_loaded(problem: PlanProblem, weights: Weights, options: Any) -> np.ndarray:
    extra = getattr(options, "extra", {}) or {}
    return least_loaded(problem, weights, up=float(extra.get("up", 1.0)), down=float(extra.get("down", 0.9)))


HEURISTICS: dict[str, tuple[Callable[..., np.ndarray], str]] = {
    **{f"{r[0]}f{d}": (_any(r, bool(d)), f"{r} fit{' decreasing' if d else ''}")
       for r in ("first", "best", "worst", "next") for d in ("", "d")},
    "mwf": (_modified("worst", "load"), "Landau's modified worst fit (members by load)"),
    "mbf": (_modified("best", "load"), "Landau's modified best fit (members by load)"),
    "mwfp": (_modified("worst", "largest"), "Landau's modified worst fit (members by largest partition)"),
    "mbfp": (_modified("best", "largest"), "Landau's modified best fit (members by largest partition)"),
    "least-loaded": (_least_loaded, "Ezzeddine et al.'s least-loaded packing, thresholds up and down"),
}
EXACT: dict[str, tuple[str, str]] = {
    "optimal": ("stickyflow.formulations.plan.cpsat:solve_plan_exact",
                "fewest members (proven), then least moved load, then fewest moves"),
    "latency": ("stickyflow.formulations.plan.latency:solve_plan_latency",
                "fewest members, then the least predicted delay of moved partitions"),
}
PLAN_METHODS: dict[str, str] = {**{k: d for k, (_, d) in EXACT.items()}, **{k: d for k, (_, d) in HEURISTICS.items()}}
#: the greedy answers the exact method starts from (the best of them is its first incumbent)
INCUMBENTS = ("bfd", "ffd", "wfd", "mwf", "mbf", "mwfp", "mbfp")


def get_method(name: str) -> Callable[..., Any]:
    """The function of plan method ``name``; :class:`UnknownAssignorError` lists the known names."""
    if name in HEURISTICS:
        return HEURISTICS[name][0]
    if name in EXACT:
        module, _, attr = EXACT[name][0].partition(":")
        return getattr(importlib.import_module(module), attr)
    raise UnknownAssignorError(f"method: {name!r} is not a plan method (known: {', '.join(PLAN_METHODS)})")


def run_heuristic(name: str, problem: PlanProblem, weights: Weights, options: Any = None) -> np.ndarray:
    """The slots of greedy method ``name``."""
    return HEURISTICS[name][0](problem, weights, options)


def plan_key(problem: PlanProblem, weights: Weights, slots: np.ndarray) -> tuple[int, int, int]:
    """How a plan ranks: (members, moved load in integer weights, moves); lower is better.

    >>> from stickyflow.planning.problem import scaled_weights
    >>> p = PlanProblem.from_arrays([60, 50], 100, owner=[0, 0], members=["a"])
    >>> plan_key(p, scaled_weights(p.rates, p.capacity), np.array([0, 1]))
    (2, 50, 1)
    """
    moved = (problem.owner >= 0) & (slots != problem.owner)
    return int(len(np.unique(slots))), int(weights.w[moved].sum()), int(moved.sum())


def best_of(problem: PlanProblem, weights: Weights, answers: Iterable[np.ndarray]) -> np.ndarray | None:
    """The best of ``answers`` by :func:`plan_key` (the first of equals), None for none."""
    best, key = None, None
    for s in answers:
        k = plan_key(problem, weights, s)
        if key is None or k < key:
            best, key = s, k
    return best
