"""The same snapshot gives the same result, apart from timings, across runs and processes."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest

import stickyflow


def _random_consumer(rng: random.Random) -> dict:
    racks = ["r1", "r2", "r3"]
    topics = {f"topic-{j}": {"partitions": rng.randint(1, 12),} for j in range(rng.randint(1, 5))}
    for spec in topics.values():
        spec["racks"] = [rng.sample(racks, rng.randint(1, 2)) for _ in range(spec["partitions"])]
    names = list(topics)
    members = []
    for i in range(rng.randint(1, 8)):
        sub = rng.sample(names, rng.randint(1, len(names)))
        owned = {t: rng.sample(range(topics[t]["partitions"]), rng.randint(0, topics[t]["partitions"]))
                 for t in rng.sample(names, rng.randint(0, len(names)))}
        members.append({"id": f"member-{i}", "subscription": sub, "rack": rng.choice(racks),
                        "generation": rng.randint(1, 3), "owned": owned})
    return {"format": "stickyflow.snapshot/1", "kind": "consumer", "id": "det", "topics": topics,
            "members": members, "protocol": rng.choice(["eager", "cooperative"])}


def _strip(result: dict) -> dict:
    result = dict(result)
    result["solver"] = {k: v for k, v in result["solver"].items() if k != "wall_s"}
    return result


def test_same_result_in_process(seed):
    rng = random.Random(seed)
    for _ in range(20):
        doc = _random_consumer(rng)
        for name in stickyflow.available_assignors("consumer"):
            first = _strip(stickyflow.assign(doc, name).to_json())
            again = _strip(stickyflow.assign(json.loads(json.dumps(doc)), name).to_json())
            assert first == again, name


@pytest.mark.parametrize("kind", ["consumer", "streams"])
def test_same_result_across_processes_and_hash_seeds(tmp_path, seed, kind):
    """Set iteration order changes with PYTHONHASHSEED; results must not."""
    if kind == "consumer":
        doc = _random_consumer(random.Random(seed))
    else:
        doc = json.loads((__import__("pathlib").Path(__file__).parent.parent / "examples"
                          / "streams-racks-standbys.json").read_text())
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(doc))
    names = stickyflow.available_assignors(kind)
    outputs = {}
    for hash_seed in ("1", "2", "3"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        code = ("import json, sys, stickyflow\n"
                "out = {}\n"
                f"for name in {names!r}:\n"
                f"    r = stickyflow.assign({str(path)!r}, name).to_json()\n"
                "    r['solver'].pop('wall_s')\n"
                "    out[name] = r\n"
                "print(json.dumps(out, sort_keys=True))\n")
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        outputs[hash_seed] = proc.stdout
    assert outputs["1"] == outputs["2"] == outputs["3"]
