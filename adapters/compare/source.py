"""What a study solves: ``suite:NAME[,NAME...]`` or a dataset path, parsed."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from stickyflow.errors import InvalidSnapshotError, Problem


@dataclass(frozen=True, slots=True, kw_only=True)
class Source:
    """What a study solves: ``suites`` (names, each with its ``counts``) or a dataset ``path``."""

    text: str
    suites: tuple[str, ...] = ()
    counts: tuple[int, ...] = ()
    seed: int = 0
    path: str | None = None

    @property
    def total(self) -> int | None:
        return sum(self.counts) if self.suites else None

    def locate(self, index: int) -> tuple[str, int]:
        """The suite and the index inside it of the study's snapshot ``index``."""
        for name, n in zip(self.suites, self.counts):
            if index < n:
                return name, index
            index -= n
        raise IndexError(index)

    def to_json(self) -> dict[str, Any]:
        if self.suites:
            return {"source": self.text, "suites": dict(zip(self.suites, self.counts)), "seed": self.seed}
        return {"source": self.text, "dataset": self.path}


def parse_source(text: str, *, count: int | None = None, seed: int = 0) -> Source:
    """``suite:NAME[,NAME...]`` (``count`` snapshots of each; default each suite's own) or a dataset path.

    Raises :class:`InvalidSnapshotError` naming ``SOURCE`` for an unknown suite or a path that does not exist.
    """
    from stickyflow.datasets.suites import SUITES, suite_count

    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        raise InvalidSnapshotError(Problem("--count", "must be an integer >= 1"))
    if text.startswith("suite:"):
        names = tuple(n.strip() for n in text[len("suite:"):].split(",") if n.strip())
        if not names:
            raise InvalidSnapshotError(Problem("SOURCE", "suite: names no suite (e.g. suite:churn)"))
        for n in names:
            if n not in SUITES:
                raise InvalidSnapshotError(Problem("SOURCE", f"{n!r} is not a suite (known: {', '.join(SUITES)})"))
        return Source(text=text, suites=names, counts=tuple(suite_count(n, count) for n in names), seed=seed)
    if not os.path.exists(text):
        raise InvalidSnapshotError(Problem("SOURCE", f"{text!r} is neither suite:NAME nor an existing dataset"))
    return Source(text=text, path=text, seed=seed)
