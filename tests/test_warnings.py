"""Unknown snapshot fields are reported, not fatal (issue 18, item 3)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import stickyflow

CONSUMER = {"format": "stickyflow.snapshot/1", "kind": "consumer", "protocl": "cooperative",
            "topics": {"t": {"partitions": 2, "rak": []}},
            "members": [{"id": "a", "subscription": ["t"], "rak": "r1"},
                        {"id": "b", "subscription": ["t"], "rak": "r2"}]}
STREAMS = {"format": "stickyflow.snapshot/1", "kind": "streams", "nowms": 5,
           "tasks": [{"id": "0_0", "stateful": True, "input_partitions": [{"topic": "in", "partition": 0, "rack": []}]}],
           "clients": [{"process_id": "a", "previous_active": [], "previous_standby": [], "thread": 2}]}


def test_consumer_typos_are_named_with_the_nearest_known_field():
    result = stickyflow.assign(CONSUMER)
    assert result.error == "NONE"
    assert result.protocol == "eager"  # the typo is ignored, as the spec says ...
    text = "\n".join(result.warnings)  # ... but the user hears about it
    assert 'protocl: unknown field, ignored (did you mean "protocol"?)' in text
    assert 'members[0].rak: unknown field, ignored (did you mean "rack"?); 1 more like it' in text
    assert 'topics.t.rak' in text and '"racks"' in text
    assert len(result.warnings) == 3


def test_streams_typos_are_named():
    result = stickyflow.assign(STREAMS)
    text = "\n".join(result.warnings)
    assert '"now_ms"' in text and '"threads"' in text and "input_partitions[0].rack" in text


def test_a_clean_snapshot_has_no_warnings():
    clean = {k: v for k, v in CONSUMER.items() if k != "protocl"}
    clean["topics"] = {"t": {"partitions": 2}}
    clean["members"] = [{"id": "a", "subscription": ["t"]}]
    assert stickyflow.assign(clean).warnings == ()


def test_warnings_do_not_enter_the_result_json():
    assert "warnings" not in stickyflow.assign(CONSUMER).to_json()


@pytest.mark.parametrize("doc", [CONSUMER, STREAMS], ids=["consumer", "streams"])
def test_the_command_line_prints_each_warning_and_still_solves(doc, tmp_path):
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(doc))
    proc = subprocess.run([sys.executable, "-m", "stickyflow", "solve", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0
    lines = proc.stderr.strip().splitlines()
    assert lines and all(line.startswith("stickyflow solve: warning: ") for line in lines)
    assert json.loads(proc.stdout)["error"] == "NONE"
