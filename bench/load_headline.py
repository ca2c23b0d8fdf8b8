"""The headline of balance by load (issue 35): how far above the least possible peak each assignor ends, per
load suite, as a Markdown table, from what ``stickyflow compare`` wrote.

    stickyflow compare suite:hot-partitions,skewed-topics,rate-drift --engine local --pareto-count 0 \\
        --assignors optimal,lpt,lag-based,sticky,uniform,range,roundrobin -o out/load-study
    .venv/bin/python bench/load_headline.py out/load-study

Each cell: the mean over the suite's snapshots of ``peak_ratio`` (the peak over the largest proven bound on the
least possible peak among the assignors' results for that snapshot; 1 = the least possible), the worst in
brackets, and the mean moves.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

SUITES = ("hot-partitions", "skewed-topics", "rate-drift")
ORDER = ("optimal", "lpt", "lag-based", "sticky", "uniform", "range", "roundrobin")


def headline(by_suite: Path) -> str:
    """The Markdown table of ``by_suite.csv``."""
    rows = {(r["suite"], r["assignor"]): r for r in csv.DictReader(by_suite.open(encoding="utf-8"))}
    suites = [s for s in SUITES if any(k[0] == s for k in rows)]
    names = [a for a in ORDER if any(k[1] == a for k in rows)] + sorted(
        {k[1] for k in rows} - set(ORDER))
    head = "| assignor | " + " | ".join(f"{s}: peak / least (worst); moves" for s in suites) + " |"
    lines = [head, "|---" * (len(suites) + 1) + "|"]
    for a in names:
        cells = []
        for s in suites:
            r = rows.get((s, a))
            if r is None or not r.get("peak_ratio_mean"):
                cells.append("—")
                continue
            cells.append(f"{float(r['peak_ratio_mean']):.3f} ({float(r['peak_ratio_max']):.3f}); "
                         f"{float(r['moves_mean']):.0f}")
        lines.append(f"| `{a}` | " + " | ".join(cells) + " |")
    sizes = {s: next(r["size_mean"] for k, r in rows.items() if k[0] == s) for s in suites}
    counts = {s: next(r["snapshots"] for k, r in rows.items() if k[0] == s) for s in suites}
    lines.append("")
    lines.append("Snapshots per suite: " + ", ".join(f"{s} {counts[s]} (mean size {float(sizes[s]):.0f} partitions)"
                                                     for s in suites) + ".")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("study", type=Path, help="the folder stickyflow compare wrote")
    args = p.parse_args()
    print(headline(args.study / "by_suite.csv"))


if __name__ == "__main__":
    main()
