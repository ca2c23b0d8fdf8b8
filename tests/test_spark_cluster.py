"""``stickyflow batch`` on a real Spark standalone cluster: a master and one worker on loopback.

Both are started from the installed PySpark with its own ``spark-class``
(``org.apache.spark.deploy.master.Master`` and ``...worker.Worker``), bound to
127.0.0.1 (``SPARK_LOCAL_IP`` and ``--host``; web UIs on free loopback ports), and
stopped however the test ends. The batch runs as the CLI runs it, in a
subprocess with ``--master spark://127.0.0.1:PORT``; its rows must equal a
local-mode run of the same input on the tests' own Spark session (made while
the cluster starts), column by column (all but ``wall_s``).
Skips when Java or ``spark-class`` is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pyspark = pytest.importorskip("pyspark")
pd = pytest.importorskip("pandas")

from tests.conftest import EXAMPLES  # noqa: E402

SPARK_HOME = Path(pyspark.__file__).resolve().parent
SPARK_CLASS = SPARK_HOME / "bin" / "spark-class"
STICKYFLOW = [sys.executable, "-m", "stickyflow"]

pytestmark = [
    pytest.mark.spark,
    pytest.mark.xdist_group("spark"),  # the local-mode run is on the session the other Spark tests use
    pytest.mark.slow,  # two JVMs for the cluster, a driver JVM and an executor
    pytest.mark.timeout(300),
    pytest.mark.skipif(not (os.environ.get("JAVA_HOME") or shutil.which("java")), reason="Spark needs Java"),
    pytest.mark.skipif(not SPARK_CLASS.is_file(), reason=f"no spark-class in the installed PySpark ({SPARK_CLASS})"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env() -> dict[str, str]:
    return dict(os.environ, SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP="127.0.0.1",
                PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
                SPARK_NO_DAEMONIZE="1")


class Standalone:
    """A master and a worker (2 cores, 1 GiB) on 127.0.0.1; each in its own process group, stopped on exit."""

    def __init__(self, root: Path):
        self.root = root
        self.port, self.ui = _free_port(), _free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen] = []

    def _start(self, name: str, *args: str) -> None:
        log = open(self.root / f"{name}.log", "wb")
        self.procs.append(subprocess.Popen([str(SPARK_CLASS), *args], stdout=log, stderr=subprocess.STDOUT,
                                           stdin=subprocess.DEVNULL, env=_env(), start_new_session=True))

    def log(self, name: str) -> str:
        return (self.root / f"{name}.log").read_text(errors="replace")[-2000:]

    def launch(self) -> None:
        """Start the master and the worker (without waiting: see :meth:`wait_ready`)."""
        self._start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                    "--port", str(self.port), "--webui-port", str(self.ui))
        self._start("worker", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                    "--webui-port", str(_free_port()), "--cores", "2", "--memory", "1g",
                    "--work-dir", str(self.root / "work"), self.url)

    def wait_ready(self, timeout: float = 90) -> "Standalone":
        """Wait until a worker has registered with the master."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for p, name in zip(self.procs, ("master", "worker")):
                if p.poll() is not None:
                    raise RuntimeError(f"the {name} exited with {p.returncode}: {self.log(name)}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.ui}/json/", timeout=2) as r:
                    if json.load(r).get("aliveworkers", 0) >= 1:
                        return self
            except OSError:
                pass
            time.sleep(0.5)
        raise TimeoutError(f"no worker registered within {timeout} s; master: {self.log('master')}; "
                           f"worker: {self.log('worker')}")

    def stop(self) -> None:
        for p in reversed(self.procs):  # the worker first: it takes its executors down with it
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait(timeout=10)
        self.procs.clear()


ASSIGNORS = "optimal,sticky,range"


def batch(src: Path, out: Path, master: str) -> subprocess.Popen:
    """The CLI's batch in a subprocess of its own (its own driver JVM); ``.communicate()`` waits for it."""
    cmd = [*STICKYFLOW, "batch", str(src), str(out), "--assignors", ASSIGNORS, "--master", master,
           "--partitions", "4", "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
           "--conf", "spark.driver.memory=1g", "--conf", "spark.executor.memory=768m"]
    return subprocess.Popen(cmd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(p: subprocess.Popen) -> tuple[int, str]:
    try:
        _, err = p.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
    return p.returncode, err


def rows(path: Path):
    frame = pd.read_parquet(path).drop(columns=["wall_s"])
    return frame.sort_values(["source", "id", "assignor"], na_position="last").reset_index(drop=True)


def test_batch_on_a_standalone_cluster_equals_local_mode(spark, tmp_path):
    from stickyflow.adapters.spark import run_batch
    from stickyflow.datasets import consumer_snapshot, streams_snapshot

    src = tmp_path / "in"
    src.mkdir()
    for p in EXAMPLES:  # pretty-printed files, one snapshot each, plus two generated ones and a broken one
        shutil.copy(p, src / p.name)
    (src / "gen-consumer.json").write_text(json.dumps(consumer_snapshot("rack_outage", partitions=40, members=5,
                                                                        topics=2, seed=3, racks=3), indent=2))
    (src / "gen-streams.json").write_text(json.dumps(streams_snapshot("lag_skew", tasks=12, clients=3, seed=4)))
    (src / "broken.json").write_text('{"format": "stickyflow.snapshot/1", "kind": "consumer",\n')
    files = len(list(src.glob("*.json")))

    # the local-mode run (in this process, the CLI's settings) goes on while the cluster's JVMs start
    t0 = time.monotonic()
    cluster = Standalone(tmp_path)
    try:
        cluster.launch()
        run_batch(str(src), str(tmp_path / "local.parquet"), ASSIGNORS, spark=spark, partitions=4)
        cluster.wait_ready()
        t1 = time.monotonic()
        code, err = finish(batch(src, tmp_path / "cluster.parquet", cluster.url))
        t2 = time.monotonic()
    finally:
        cluster.stop()
    print(f"\ncluster up {t1 - t0:.1f} s, batch on it {t2 - t1:.1f} s, stopped in {time.monotonic() - t2:.1f} s")
    assert code == 0, err[-3000:]
    assert f"on {cluster.url} ready" in err
    assert cluster.procs == []
    got, want = rows(tmp_path / "cluster.parquet"), rows(tmp_path / "local.parquet")
    assert len(got) == 3 * files
    pd.testing.assert_frame_equal(got, want)
    bad = got[got["source"] == "broken.json"]
    assert len(bad) == 3 and (bad["status"] == "invalid").all()
    good = got[got["source"] != "broken.json"]
    assert good["error"].isna().sum() == len(good) - (good["status"] == "unsupported").sum()
