"""What ``stickyflow batch`` shows a new user (issue 38): no JVM start-up chatter before its own first line, and
the file and line of every JSON Lines record that failed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from stickyflow.adapters.spark import LineFinder

GOOD = {"format": "stickyflow.snapshot/1", "kind": "consumer", "id": "good", "topics": {"t": {"partitions": 2}},
        "members": [{"id": "a", "subscription": ["t"]}]}


def test_line_finder_numbers_lines_as_the_file_has_them(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(b'{"a": 1}\r\n\n"bad"\n"bad"\n{"b": 2}')
    lines = LineFinder()
    assert lines.line(str(path), '{"b": 2}') == 5
    assert lines.line(path.as_uri(), '{"a": 1}') == 1
    assert [lines.line(str(path), '"bad"'), lines.line(str(path), '"bad"')] == [3, 4]  # repeats in file order
    assert lines.line(str(path), "absent") is None
    assert lines.line("hdfs://nn/x.jsonl", '{"a": 1}') is None and lines.line(None, "x") is None


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_batch_says_its_own_lines_only_and_names_the_failed_line(tmp_path):
    pytest.importorskip("pyspark")
    pd = pytest.importorskip("pandas")
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        pytest.skip("Spark needs Java")
    source = tmp_path / "groups.jsonl"
    source.write_text(json.dumps(GOOD) + "\n\n{not json\n" + json.dumps(dict(GOOD, id="bad", members=5)) + "\n")
    out = tmp_path / "out.parquet"
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_LOCAL_IP", "PYSPARK_GATEWAY_PORT")}
    proc = subprocess.run([sys.executable, "-m", "stickyflow", "batch", str(source), str(out), "--assignors",
                           "optimal", "--master", "local[1]"], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines and all(line.startswith("stickyflow batch: ") for line in lines), lines
    rows = pd.read_parquet(out).set_index("id", drop=False)
    assert rows.loc["good", "source"] == "groups.jsonl"
    assert rows.loc["bad", "source"] == "groups.jsonl:4"
    assert sorted(rows["source"]) == ["groups.jsonl", "groups.jsonl:3", "groups.jsonl:4"]
    assert json.loads((out / "_stickyflow.json").read_text())["input"] == str(source)
