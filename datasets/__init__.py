"""Making and reading data: scenario generators, named suites, dataset files.

>>> from stickyflow.datasets import consumer_snapshot, suite
>>> doc = consumer_snapshot("scale_out", partitions=100, members=10, seed=7)
>>> len(doc["members"]), len(suite("smoke"))
(10, 24)

Generators return the spec's JSON dicts (``stickyflow.parse_snapshot`` reads
them); :mod:`stickyflow.datasets.io` reads and writes datasets (a folder of
JSON files, JSON Lines, Parquet); :mod:`stickyflow.datasets.rates` draws
partition rates and makes load snapshots of count snapshots (``with_rates``).
Only numpy is needed, except for Parquet (pyarrow).
"""

from .generators import SCENARIOS, consumer_snapshot, snapshot, streams_snapshot
from .io import Record, dataset_format, load_dataset, read_dataset, write_dataset
from .rates import draw_rates, drift_rates, topic_rates, with_rates
from .suites import SUITES, bundled_path, iter_suite, load_bundled, suite, write_bundled

__all__ = [
    "SCENARIOS", "consumer_snapshot", "streams_snapshot", "snapshot",
    "SUITES", "suite", "iter_suite", "load_bundled", "bundled_path", "write_bundled",
    "draw_rates", "topic_rates", "drift_rates", "with_rates",
    "Record", "read_dataset", "load_dataset", "write_dataset", "dataset_format",
]
