"""Tables and plots: a batch's results per assignor, the traffic-against-moves Pareto front, simulations.

* :func:`summary_table` turns a batch output (one row per snapshot and
  assignor: ``id``, ``kind``, ``assignor``, ``moves``, ``imbalance``,
  ``cross_rack``, ``status``, ``wall_s``, ``error``, and size columns when
  present) into one row per kind and assignor.
* :func:`plot_metrics` draws moves, imbalance, cross-rack reads and solve time
  per assignor; :func:`plot_time_vs_size` the solve time against the size.
* :func:`pareto_sweep` re-solves a set of snapshots with racks while sweeping
  the ratio ``traffic_cost / non_overlap_cost`` (rewriting each snapshot's
  config), and :func:`plot_pareto` draws total cross-rack reads against total
  moves, the optimizer's points joined in ratio order, the greedy ones marked.
* :func:`plot_simulation` draws a :mod:`stickyflow.datasets.simulator` run
  round by round.
* :func:`write_report` and :func:`write_simulation_report` write the PNGs, CSV
  tables and one self-contained HTML page (PNGs embedded as data URIs).

pandas and matplotlib are imported on first use (``pip install stickyflow[plots]``);
matplotlib runs on its Agg backend, so no display is needed.

>>> import pandas as pd
>>> frame = pd.DataFrame({"id": ["a", "a"], "kind": "consumer", "assignor": ["optimal", "range"],
...                       "moves": [0, 3], "imbalance": [0, 2], "cross_rack": [1, 4],
...                       "status": ["optimal", "heuristic"], "wall_s": [0.01, 0.001], "error": None})
>>> summary_table(frame)[["assignor", "moves_total", "imbalance_max"]].to_dict("records")
[{'assignor': 'optimal', 'moves_total': 0, 'imbalance_max': 0}, {'assignor': 'range', 'moves_total': 3, 'imbalance_max': 2}]

The code lives in one module per idea: :mod:`.base` (backends, colours, axes, the HTML page),
:mod:`.batch` (a batch's table and plots), :mod:`.pareto` (the sweep), :mod:`.load` (load columns and the
peak-against-moved-load front), :mod:`.simulation`, :mod:`.study` (``stickyflow compare``) and
:mod:`.autoscale` (``stickyflow simulate --trace``); the public names of base, batch, pareto and simulation
stay importable here.
"""

from __future__ import annotations

from .base import PAGE_CSS, Html, html_page  # noqa: F401
from .batch import (BATCH_COLUMNS, STATUSES, SUMMARY_COLUMNS, UNKNOWN, Report, load_batch,  # noqa: F401
                    plot_metrics, plot_time_vs_size, summary_table, write_report)
from .pareto import (COST_SCALE, DEFAULT_RATIOS, GREEDY, has_racks, pareto_front, pareto_snapshots,  # noqa: F401
                     pareto_sweep, pareto_table, plot_pareto, snapshots_from, with_cost_ratio)
from .simulation import plot_simulation, write_simulation_report  # noqa: F401

__all__ = [
    "DEFAULT_RATIOS",
    "BATCH_COLUMNS",
    "GREEDY",
    "load_batch",
    "summary_table",
    "plot_metrics",
    "plot_time_vs_size",
    "pareto_snapshots",
    "snapshots_from",
    "has_racks",
    "with_cost_ratio",
    "pareto_sweep",
    "pareto_front",
    "pareto_table",
    "plot_pareto",
    "Html",
    "plot_simulation",
    "html_page",
    "Report",
    "write_report",
    "write_simulation_report",
]
