"""``stickyflow simulate``: play a scenario over many rebalances for each assignor, and plot it.

``stickyflow simulate SCENARIO [-o OUTDIR] [--assignors optimal,sticky] [--readiness eager,conservative]``

SCENARIO is a scenario JSON file (see :func:`stickyflow.datasets.simulator.scenario_from_json`)
or ``preset:NAME[:SEED]`` (``consumer-cooperative``, ``consumer-eager``,
``streams-warmup``, ``streams-learner``, ``streams-standbys``). The rounds to
converge per disturbance and per assignor go to standard output; with ``-o``,
OUTDIR receives ``rounds.csv``, ``convergence.csv``, ``scenario.json``,
``simulation.png`` and ``simulation.html``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

EXIT_OK = 0
EXIT_BAD_INPUT = 2


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``simulate`` on the ``stickyflow`` command's subparsers."""
    p = subparsers.add_parser("simulate", help="play a scenario over many rebalances and plot it",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("scenario", help="scenario JSON file, or preset:NAME[:SEED]")
    p.add_argument("-o", "--output", default=None, help="output folder for CSV, PNG and HTML")
    p.add_argument("--assignors", default="optimal,sticky", help="comma-separated assignors (default optimal,sticky)")
    p.add_argument("--readiness", default=None, metavar="eager,conservative",
                   help="warm-up readiness to compare (default: the scenario's, else eager in learner mode and "
                        "conservative in warm-up mode)")
    p.add_argument("--rounds", type=int, default=None, help="override the scenario's number of rounds")
    p.add_argument("--seed", type=int, default=None, help="seed of a preset (same as preset:NAME:SEED)")
    p.add_argument("--time-limit", type=float, default=None, metavar="SECONDS", help="solver time limit per round")
    p.add_argument("--rounds-table", action="store_true", help="also print every round")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    from stickyflow.datasets.simulator import READINESS, load_scenario, preset, simulate
    from stickyflow.errors import InvalidSnapshotError, UnknownAssignorError

    readiness = None
    if args.readiness:
        readiness = [r for r in args.readiness.split(",") if r]
        bad = [r for r in readiness if r not in READINESS]
        if bad:
            print(f"stickyflow simulate: --readiness: {bad[0]!r} is not eager or conservative", file=sys.stderr)
            return EXIT_BAD_INPUT
    try:
        if args.scenario.startswith("preset:") and args.seed is not None:
            scenario = preset(args.scenario.split(":")[1], seed=args.seed)
        else:
            scenario = load_scenario(args.scenario)
        if args.rounds is not None:
            scenario = _with_rounds(scenario, args.rounds)
        assignors = [a for a in args.assignors.split(",") if a]
        from .compare import _warm_up

        _warm_up(assignors)  # imports and first-call set-up are not the first round's solve time
        sim = simulate(scenario, assignors, readiness=readiness, time_limit=args.time_limit)
    except (InvalidSnapshotError, UnknownAssignorError) as exc:
        print(f"stickyflow simulate: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    _print(sim, rounds=args.rounds_table)
    if args.output:
        from stickyflow import _jsonio

        from .report import write_simulation_report

        rep = write_simulation_report(sim, args.output)
        scenario_path = Path(args.output) / "scenario.json"
        scenario_path.write_bytes(_jsonio.dumps(scenario.to_json(), indent=True) + b"\n")
        files = [*rep.files.values(), scenario_path]
        print(f"wrote {', '.join(str(p) for p in files)}", file=sys.stderr)
    return EXIT_OK


def _with_rounds(scenario, rounds: int):
    return scenario.replace(rounds=rounds, events=tuple(e for e in scenario.events if e.round < rounds))


def _print(sim, *, rounds: bool) -> None:
    width = max(len(r.label) for r in sim.runs) if sim.runs else 8
    print(f"scenario {sim.scenario.name or '-'}: {sim.scenario.kind}, {sim.scenario.rounds} rounds")
    print(f"{'assignor':<{width}}  {'round':>5}  {'cause':<28}  {'rounds to converge':>18}  {'time':>9}  {'moves':>6}")
    for row in sim.summary():
        rtc = "never" if row["rounds_to_converge"] is None else str(row["rounds_to_converge"])
        ms = row["time_to_converge_ms"]
        t = "-" if ms is None else f"{ms / 60000:.1f} min"
        print(f"{row['label']:<{width}}  {row['start_round']:>5}  {row['cause'][:28]:<28}  {rtc:>18}  {t:>9}  "
              f"{row['moves']:>6}")
    if rounds:
        for run in sim.runs:
            print(f"\n{run.label}")
            for r in run.rounds:
                extra = (f"warmups={r.warmups} restoring={r.restoring_actives}" if run.kind == "streams"
                         else f"revoked={r.revoked} withheld={r.withheld}")
                print(f"  r{r.round:<3} {r.trigger:<9} moves={r.moves:<4} imbalance={r.imbalance:<3} "
                      f"cross_rack={r.cross_rack} {extra} followup={r.followup} {'; '.join(r.events)}")
