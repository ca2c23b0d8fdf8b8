"""The malformed-snapshot corpus: the library raises the typed error naming the field; the CLI exits 2 with one line.

``tests/malformed/_manifest.json`` maps each file to the field its error must name.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import stickyflow
from stickyflow.adapters.cli import main

CORPUS = Path(__file__).parent / "malformed"
MANIFEST = {k: v for k, v in json.loads((CORPUS / "_manifest.json").read_text()).items() if not k.startswith("_")}


def test_corpus_is_big_enough():
    assert len(MANIFEST) >= 50
    assert set(MANIFEST) == {p.name for p in CORPUS.glob("*.json") if not p.name.startswith("_")}


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_library_raises_typed_error_naming_the_field(name):
    with pytest.raises(stickyflow.InvalidSnapshotError) as err:
        stickyflow.load_snapshot(CORPUS / name)
    assert err.value.field == MANIFEST[name], [str(p) for p in err.value.problems]
    with pytest.raises(stickyflow.InvalidSnapshotError):
        stickyflow.assign(CORPUS / name)


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_cli_exits_2_with_one_line(name, capsys):
    code = main(["solve", str(CORPUS / name)])
    out = capsys.readouterr()
    assert code == 2
    assert out.out == ""
    lines = out.err.strip().splitlines()
    assert len(lines) == 1, out.err
    assert MANIFEST[name] in lines[0] and "Traceback" not in out.err


def test_cli_process_never_prints_a_traceback():
    """The installed entry point, in a real process, on a few representative files."""
    for name in ("truncated.json", "config-unknown-key.json", "owned-negative.json"):
        proc = subprocess.run([sys.executable, "-m", "stickyflow.adapters.cli", "solve", str(CORPUS / name)],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_missing_file_and_bad_flags_exit_2(tmp_path, capsys):
    assert main(["solve", str(tmp_path / "nope.json")]) == 2
    assert "snapshot" in capsys.readouterr().err
    good = Path(__file__).parent.parent / "examples" / "consumer-kip54-join.json"
    assert main(["solve", str(good), "--assignor", "nonesuch"]) == 2
    assert "nonesuch" in capsys.readouterr().err
    assert main(["solve", str(good), "--time-limit", "0"]) == 2
    assert "--time-limit" in capsys.readouterr().err
