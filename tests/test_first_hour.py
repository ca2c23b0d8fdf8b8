"""What a new user meets in the first hour (issue 38): messages that start the same way, hints for typos and for
hex given as bytes, plots that draw non-convergence as such, progress while a study solves."""

from __future__ import annotations

import json

import pytest

import stickyflow
from stickyflow.adapters.cli import main

CONSUMER = {"format": "stickyflow.snapshot/1", "kind": "consumer", "topics": {"t": {"partitions": 2}},
            "members": [{"id": "a", "subscription": ["t"]}]}


def _stderr_lines(capsys) -> list[str]:
    return capsys.readouterr().err.strip().splitlines()


@pytest.mark.parametrize("argv,command", [
    (["solve", "{snap}", "--bogus"], "solve"),
    (["assignors", "extra"], "assignors"),
    (["batch", "in", "out", "more"], "batch"),
    (["solve", "{warn}"], "solve"),
])
def test_every_line_on_stderr_starts_with_the_command(argv, command, tmp_path, capsys):
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps(CONSUMER))
    warn = tmp_path / "warn.json"
    warn.write_text(json.dumps({**CONSUMER, "memebrs": []}))
    main([a.format(snap=snap, warn=warn) for a in argv])
    lines = _stderr_lines(capsys)
    assert lines and all(line.startswith(f"stickyflow {command}: ") for line in lines), lines


@pytest.mark.parametrize("where,typo,field", [
    ("member", "subscripton", "members[0].subscription"),
    ("top", "topcs", "topics"),
])
def test_a_misspelt_required_field_gets_a_did_you_mean(where, typo, field):
    doc = json.loads(json.dumps(CONSUMER))
    holder = doc["members"][0] if where == "member" else doc
    good = field.rsplit(".", 1)[-1]
    holder[typo] = holder.pop(good)
    with pytest.raises(stickyflow.InvalidSnapshotError) as err:
        stickyflow.parse_snapshot(doc)
    assert err.value.field == field
    assert f'"{typo}"' in err.value.rule and f'did you mean "{good}"' in err.value.rule


def test_a_missing_field_with_no_look_alike_gets_no_hint():
    doc = json.loads(json.dumps(CONSUMER))
    del doc["members"][0]["subscription"]
    with pytest.raises(stickyflow.InvalidSnapshotError) as err:
        stickyflow.parse_snapshot(doc)
    assert err.value.rule == "is required"
