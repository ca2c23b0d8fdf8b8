"""Sizes beyond stickyflow.limits are refused when the snapshot is read (issue 18, item 1).

The refusal must come before any allocation sized by the input: the command line is run under a
1.5 GiB address-space limit and must exit 2 with one line naming the field and the limit.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

import stickyflow
from stickyflow import limits
from stickyflow.errors import InvalidSnapshotError

HEAD = {"format": "stickyflow.snapshot/1"}


def _consumer(topics: dict, members: list) -> dict:
    return {**HEAD, "kind": "consumer", "topics": topics, "members": members}


def _streams(n_tasks: int, n_clients: int) -> dict:
    tasks = [{"id": f"0_{i}", "stateful": False} for i in range(n_tasks)]
    clients = [{"process_id": f"c{i}", "previous_active": [], "previous_standby": []} for i in range(n_clients)]
    return {**HEAD, "kind": "streams", "tasks": tasks, "clients": clients}


CASES = {
    "one-huge-topic": (_consumer({"t": {"partitions": 2**31 - 1}}, [{"id": "a", "subscription": ["t"]}]),
                       "topics.t.partitions", "MAX_PARTITIONS"),
    "many-topics": (_consumer({f"t{i}": {"partitions": 5_000_000} for i in range(3)},
                              [{"id": "a", "subscription": ["t0"]}]), "topics", "MAX_PARTITIONS"),
    "members": (_consumer({"t": {"partitions": 1}},
                          [{"id": f"m{i}", "subscription": []} for i in range(limits.MAX_MEMBERS + 1)]),
                "members", "MAX_MEMBERS"),
    "tasks-x-clients": (_streams(limits.MAX_TASK_CLIENT_PAIRS // 5_000 + 1, 5_000), "tasks", "MAX_TASK_CLIENT_PAIRS"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_beyond_a_limit_is_an_invalid_snapshot(name):
    doc, field, limit = CASES[name]
    with pytest.raises(InvalidSnapshotError) as exc:
        stickyflow.assign(doc)
    assert exc.value.problems[0].field == field
    assert limit in exc.value.problems[0].rule


def test_at_the_partition_limit_is_accepted_by_the_reader():
    doc = _consumer({"t": {"partitions": limits.MAX_PARTITIONS}}, [{"id": "a", "subscription": ["t"]}])
    snap = stickyflow.parse_snapshot(doc)
    assert snap.topics["t"].partitions == limits.MAX_PARTITIONS


def _limit_memory() -> None:
    cap = 1536 * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


@pytest.mark.parametrize("name", ["one-huge-topic", "tasks-x-clients"])
def test_beyond_a_limit_exits_2_under_a_memory_cap(name, tmp_path: Path):
    doc, field, limit = CASES[name]
    path = tmp_path / "big.json"
    path.write_text(json.dumps(doc))
    proc = subprocess.run([sys.executable, "-m", "stickyflow", "solve", str(path)], capture_output=True, text=True,
                          preexec_fn=_limit_memory, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and field in lines[0] and limit in lines[0]


@pytest.mark.parametrize("one_by_one", [False, True])
def test_the_subscription_limit_counts_what_members_read(one_by_one, monkeypatch):
    """MAX_SUBSCRIPTIONS counts (member, topic) subscriptions after repeats are dropped, whether the bulk
    reader took the members (it counts from its subscription groups) or the member-by-member reader did (a
    member with a rack of the wrong type sends them all there; that error and the limit are both reported)."""
    monkeypatch.setattr(limits, "MAX_SUBSCRIPTIONS", 5)
    members = [{"id": "a", "subscription": ["t0", "t1", "t0", "t0"]}, {"id": "b", "subscription": ["t0", "t1"]},
               {"id": "c", "subscription": ["t1"]}]
    if one_by_one:
        members[2]["rack"] = 7
    doc = _consumer({"t0": {"partitions": 2}, "t1": {"partitions": 2}}, members)
    if one_by_one:
        with pytest.raises(InvalidSnapshotError) as exc:
            stickyflow.parse_snapshot(doc)
        assert [p.field for p in exc.value.problems] == ["members[2].rack"]  # 5 pairs: within the limit
    else:
        assert len(stickyflow.parse_snapshot(doc).members) == 3  # 2 + 2 + 1 = 5 pairs, repeats dropped
    members[2]["subscription"] = ["t1", "t0"]  # 6 pairs
    with pytest.raises(InvalidSnapshotError) as exc:
        stickyflow.parse_snapshot(doc)
    assert [p.field for p in exc.value.problems][-1] == "members" and "MAX_SUBSCRIPTIONS" in exc.value.problems[-1].rule
