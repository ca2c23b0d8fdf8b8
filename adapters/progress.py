"""Progress lines for long commands: a line every few seconds while work runs, however long one step takes.

A loop that reports every k items goes silent while one item is slow, and a study's solve, its Pareto sweep and
its plots each take tens of seconds; :class:`Ticker` reports from a background thread instead, so a user sees
``what: done/total, elapsed`` at least every ``every`` seconds.

>>> lines = []
>>> with Ticker(lines.append, "solving", total=3, every=60) as tick:
...     for _ in range(3):
...         tick.step()
>>> lines  # nothing was slow enough for a line: only the closing one
['solving: 3/3 done in 0 s']
"""

from __future__ import annotations

import threading
import time
from typing import Callable

__all__ = ["Ticker"]


class Ticker:
    """Says ``"{what}: {done}/{total}, {elapsed} s"`` every ``every`` seconds while the ``with`` block runs, and
    ``"{what}: {done}/{total} done in {elapsed} s"`` when it ends (``total`` None: no count, only the time).

    ``step()`` counts a finished item; the count is read by the reporting thread, so a step costs nothing more.
    """

    def __init__(self, say: Callable[[str], None], what: str, *, total: int | None = None, every: float = 5.0):
        self.say, self.what, self.total, self.every = say, what, total, every
        self.done = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="stickyflow-ticker", daemon=True)
        self._t0 = time.perf_counter()

    def step(self, n: int = 1) -> None:
        """Count ``n`` finished items."""
        self.done += n

    def line(self, final: bool = False) -> str:
        """The progress line as it stands."""
        elapsed = f"{time.perf_counter() - self._t0:.0f} s"
        count = "" if self.total is None else f"{self.done}/{self.total}"
        if final:
            return f"{self.what}: {count + ' done in ' if count else 'done in '}{elapsed}"
        return f"{self.what}: {count + ', ' if count else ''}{elapsed}"

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.say(self.line())

    def __enter__(self) -> "Ticker":
        self._t0 = time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, kind, exc, tb) -> None:
        self._stop.set()
        self._thread.join()
        if kind is None:
            self.say(self.line(final=True))
