"""The machinery of ``stickyflow bench`` (the command itself: :mod:`stickyflow.adapters.cli.bench`).

The work is split by idea (``bench-results/`` is git-ignored):

* :mod:`~stickyflow.adapters.bench.config`: the suite's assignors, events and sizes;
* :mod:`~stickyflow.adapters.bench.cases`: the seeded inputs and the closed-form least moves;
* :mod:`~stickyflow.adapters.bench.measure`: one assignor on one input, in a forked child
  (``peak_mib`` is the child's peak, ``extra_mib`` the part above what the
  process held before the assignor ran; ``wall_s`` the median of up to
  ``--repeats`` warm runs);
* :mod:`~stickyflow.adapters.bench.suite`: every case through every assignor, with the gaps
  to the lower bounds (``bound_sumsq``, ``bound_cost`` from the optimizer's
  proven optimum; ``bound_moves`` in closed form with equal subscriptions and no
  racks, independently of any solver);
* :mod:`~stickyflow.adapters.bench.output`: Markdown tables, the plot (the environment and the warm-up:
  :mod:`stickyflow.adapters.runtime`);
* :mod:`~stickyflow.adapters.bench.goals`: the speed targets.

The public names of the modules above are importable from here
(``from stickyflow.adapters.bench import Case, run_suite``); all but the
configuration load on first use, so that the command line's defaults and
checks import no numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .config import ASSIGNORS, EVENTS, PEER_ASSIGNORS, STICKYFLOW_ASSIGNORS, SUBSCRIPTIONS

if TYPE_CHECKING:  # what static tools read; at run time these load on first use (``__getattr__`` below)
    from .cases import (Case, consumer_cases, consumer_snapshot, min_moves_equal, streams_cases, streams_document,
                        topic_count)
    from .goals import Goal, run_goals, solve_process
    from ..runtime import environment
    from .output import markdown_table, plot
    from .suite import run_suite

__all__ = [
    "Case",
    "consumer_snapshot",
    "streams_document",
    "consumer_cases",
    "streams_cases",
    "run_suite",
    "run_goals",
    "min_moves_equal",
    "markdown_table",
    "plot",
    "environment",
    "topic_count",
    "Goal",
    "solve_process",
    "ASSIGNORS",
    "STICKYFLOW_ASSIGNORS",
    "PEER_ASSIGNORS",
    "EVENTS",
    "SUBSCRIPTIONS",
]

# public name -> the module that defines it, relative to this package (imported on first use: numpy and the
# solvers load only then)
_HOME = {
    "Case": ".cases", "consumer_cases": ".cases", "streams_cases": ".cases", "topic_count": ".cases",
    "consumer_snapshot": ".cases", "streams_document": ".cases", "min_moves_equal": ".cases",
    "run_suite": ".suite",
    "environment": "..runtime", "markdown_table": ".output", "plot": ".output",
    "Goal": ".goals", "run_goals": ".goals", "solve_process": ".goals",
}


def __getattr__(name: str):
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
