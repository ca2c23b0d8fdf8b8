"""Shared test set-up: the --runslow flag, printed seeds, the shared examples and the one checker."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.json"))
SHARED_EXAMPLES = sorted((ROOT.parent / "shared" / "examples").glob("*.json"))


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False, help="run tests marked slow")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def seed(request) -> int:
    """A random seed, printed so a failure can be replayed (STICKYFLOW_SEED=... pins it)."""
    value = int(os.environ.get("STICKYFLOW_SEED", random.SystemRandom().randrange(2**31)))
    print(f"\n[seed] {request.node.nodeid}: STICKYFLOW_SEED={value}")
    return value


@pytest.fixture(scope="session")
def spark():
    """One local Spark session per worker (its tests carry ``xdist_group("spark")``: one JVM, not two)."""
    pytest.importorskip("pyspark")
    import shutil

    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        pytest.skip("Spark needs Java")
    from stickyflow.adapters.spark import spark_session

    # loopback only: the driver neither binds to nor advertises the machine's outside address
    session = spark_session("local[2]", app_name="stickyflow-tests",
                            conf={"spark.sql.shuffle.partitions": "2", "spark.driver.memory": "1g",
                                  "spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1"})
    yield session
    session.stop()


def example_paths() -> list[Path]:
    """The shared KIP examples (the contract's originals win over the bundled copies of the same name)."""
    seen = {p.name: p for p in EXAMPLES}
    seen.update({p.name: p for p in SHARED_EXAMPLES})
    return sorted(seen.values(), key=lambda p: p.name)


def bench_module(name: str):
    """``bench/<name>.py`` loaded as a module (the benchmarks are scripts, not part of the package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
