"""A study in one call: solve a suite (or any dataset) with several assignors, play follow-ups to convergence,
and write the rows, the tables, the plots, one HTML page and everything needed to run it again.

:func:`compare` is what ``stickyflow compare`` runs::

    stickyflow compare suite:churn --assignors optimal,sticky,uniform -o out/churn --master 'local[2]'

* **Rows** (``OUT/results.parquet``): one per snapshot and assignor, with the
  snapshot's size (partitions or tasks), group (members or clients), scenario
  and protocol, the result's moves, imbalance, cross-rack reads, cost and solve
  time, and, where the result asks for a follow-up rebalance (cooperative
  revocations, Streams warm-ups), the rebalances it takes to converge when the
  simulator (:mod:`stickyflow.datasets.simulator`) plays them. An assignor
  that does not serve a snapshot's kind gets no row; a snapshot an assignor
  cannot solve gets a row with its ``error``.
* **Where it runs.** On Spark (``engine="spark"``), snapshot ``i`` of a suite is
  made inside the Spark task that solves it (``spark.range(count)`` feeding
  ``mapInArrow``), so no list of snapshots ever exists on the driver, and the
  tables are aggregated by Spark: the driver holds only the aggregates, whatever
  the count. ``engine="local"`` does the same in this process (small studies,
  tests). Each worker solves a tiny snapshot with every assignor before it
  times anything, so imports and first-call set-up are not solve time.
* **Tables** (CSV): ``summary.csv`` per kind and assignor, ``by_size.csv`` per
  size band (powers of two), ``by_suite.csv`` per suite, ``pareto.csv`` the
  traffic-against-moves sweep over the study's first rack-aware consumer groups.
  Counts and metrics are exact and the same on every run of the same command;
  only the ``wall_ms_*`` columns (times) differ.
* **Pictures and page**: see :mod:`stickyflow.adapters.report.study`.
* ``study.json``: the command, the source (suites, count, seed), the
  assignors, the settings, the versions (stickyflow, OR-Tools, Spark, pandas,
  kafka-python, Python) and the machine.

Assignors are registered names (``stickyflow assignors``), kafka-python's own
(``kp-sticky``, ``kp-range``, ``kp-roundrobin``; consumer groups only) and
``module:function`` (a researcher's own, found in the working directory).

The code, one module a seam: :mod:`.source` (what a study solves), :mod:`.assignors` (the names, kafka-python's
registered on first use), :mod:`.rows` (one snapshot through every assignor; the Spark worker), :mod:`.tables`
(the aggregates, pandas and Spark alike) and :mod:`.study` (:func:`compare` on either engine); the names below are
importable from here.
"""

from __future__ import annotations

from ..runtime import environment
from .assignors import PEERS, check_assignors
from .rows import DEFAULT_ROUNDS, ERROR_STATUSES, ROW_COLUMNS, arrow_schema, snapshot_rows
from .source import Source, parse_source
from .study import Study, compare
from .tables import TABLES, TIME_COLUMNS, aggregate

__all__ = [
    "ROW_COLUMNS",
    "PEERS",
    "Source",
    "Study",
    "parse_source",
    "check_assignors",
    "snapshot_rows",
    "compare",
    "aggregate",
    "environment",
    "TIME_COLUMNS",
    "TABLES",
    "DEFAULT_ROUNDS",
    "ERROR_STATUSES",
    "arrow_schema",
]
