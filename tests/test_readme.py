"""The README is for users: short, its first commands the two of the set-up, its library example runnable, its
links alive (issue 38)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_readme_is_short_and_starts_with_the_two_commands():
    assert len(README.splitlines()) <= 200
    first = re.search(r"```sh\n(.*?)```", README, flags=re.S).group(1)
    assert [line.split()[:2] for line in first.splitlines()] == [["make", "demo"], ["make", "test"]]


def test_readme_library_example_runs(monkeypatch, capsys):
    block = re.search(r"```python\n(import stickyflow\n.*?)```", README, flags=re.S).group(1)
    monkeypatch.chdir(ROOT)
    exec(compile(block, "README.md", "exec"), {})
    assert "'0'" not in capsys.readouterr().out  # printed something, and assign found the example from the root


def test_readme_links_point_at_files_and_headings():
    for target in re.findall(r"\]\(([^)#]+\.md)(#[^)]*)?\)", README):
        path, anchor = ROOT / target[0], target[1][1:]
        assert path.exists(), target
        if anchor:
            slugs = {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-")
                     for h in re.findall(r"^#+ (.*)$", path.read_text(), flags=re.M)}
            assert anchor in slugs, target


def test_readme_commands_are_real_commands():
    import subprocess
    import sys

    blocks = "\n".join(re.findall(r"```sh\n(.*?)```", README, flags=re.S))
    used = sorted(set(re.findall(r"^stickyflow ([a-z]+)", blocks, flags=re.M)))
    assert len(used) >= 8
    out = subprocess.run([sys.executable, "-m", "stickyflow", "--help"], capture_output=True, text=True,
                         check=True).stdout
    listed = set(re.findall(r"^    ([a-z]+)", out, flags=re.M))
    assert set(used) <= listed, set(used) - listed
