"""``stickyflow simulate``: play a scenario over many rebalances for each assignor, and plot it.

``stickyflow simulate SCENARIO [-o OUTDIR] [--assignors optimal,sticky] [--readiness eager,conservative]``

A rate trace in place of SCENARIO (``trace:jpdc``, ``trace:walk:...``, a trace file)
plays an autoscaler instead: see :mod:`stickyflow.adapters.cli.trace`.

SCENARIO is a scenario JSON file (see :func:`stickyflow.datasets.simulator.scenario_from_json`)
or ``preset:NAME[:SEED]`` (``consumer-cooperative``, ``consumer-eager``,
``streams-warmup``, ``streams-learner``, ``streams-standbys``). The rounds to
converge per disturbance and per assignor go to standard output; with ``-o``,
OUTDIR receives ``rounds.csv``, ``convergence.csv``, ``scenario.json``,
``simulation.png`` and ``simulation.html``. Bad input (a bad option, a
missing file, an unknown preset or assignor, a scenario that breaks its
format) is one line on standard error and exit 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .input import BadInput, assignor_names, existing_path, int_at_least, names, output_location, seconds

EXIT_OK = 0
EXIT_BAD_INPUT = 2


READINESS = ("eager", "conservative")  # stickyflow.datasets.simulator.READINESS, without importing it for --help


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``simulate`` on the ``stickyflow`` command's subparsers."""
    p = subparsers.add_parser(
        "simulate", help="play a scenario over many rebalances and plot it",
        description="Play a scenario (a first snapshot and the joins, leaves and crashes that follow) over many "
                    "rebalances for each assignor; print the rounds each needs to settle after each "
                    "disturbance, and with -o write CSV tables, a PNG plot and an HTML page.")
    p.add_argument("scenario", metavar="SCENARIO", help="scenario JSON file, or preset:NAME[:SEED] (presets: "
                   "consumer-cooperative, consumer-eager, streams-warmup, streams-learner, streams-standbys); or a "
                   "rate trace: a trace JSON file, trace:jpdc[:SEED] or trace:walk:key=value,... (see below)")
    p.add_argument("-o", "--output", default=None, help="output folder for CSV, PNG and HTML")
    p.add_argument("--assignors", default="optimal,sticky",
                   help="comma-separated assignor names or module:function (default optimal,sticky)")
    p.add_argument("--readiness", type=names(READINESS, what="readiness"), default=None,
                   metavar="eager,conservative",
                   help="warm-up readiness to compare (default: the scenario's, else eager in learner mode and "
                        "conservative in warm-up mode)")
    p.add_argument("--rounds", type=int_at_least(1), default=None, help="override the scenario's number of rounds")
    p.add_argument("--seed", type=int_at_least(0), default=None, help="seed of a preset (same as preset:NAME:SEED)")
    p.add_argument("--time-limit", type=seconds, default=None, metavar="SECONDS", help="solver time limit per round")
    p.add_argument("--rounds-table", action="store_true", help="also print every round")
    from .trace import add_trace_options

    add_trace_options(p)
    p.set_defaults(func=run, cli_arguments=("SCENARIO", "preset"), cli_assignor_option="--assignors")
    return p


def _preset(text: str, seed: int | None) -> tuple[str, int]:
    """``preset:NAME[:SEED]`` as (name, seed); :class:`BadInput` naming SCENARIO when it is not one."""
    from stickyflow.datasets.simulator import PRESETS

    _, name, *rest = text.split(":")
    if name not in PRESETS:
        raise BadInput("argument SCENARIO", f"{name!r} is not a preset (known: {', '.join(PRESETS)})")
    if len(rest) > 1 or (rest and not rest[0].strip().isdigit()):
        raise BadInput("argument SCENARIO", f"{text!r} is not preset:NAME or preset:NAME:SEED (SEED an integer >= 0)")
    return name, seed if seed is not None else int(rest[0]) if rest else 0


def run(args: argparse.Namespace) -> int:
    from .trace import is_trace, run_trace

    if is_trace(args.scenario):
        return run_trace(args)
    for option in ("methods", "every", "trigger", "drain", "pause", "seeds", "deltas"):
        if getattr(args, option) is not None:
            raise BadInput(f"option --{option}", "applies to a rate trace (trace:... or a trace file) only")
    assignors = assignor_names(args.assignors, "--assignors")
    if args.output:
        output_location(args.output)  # made once the simulation has run
    if args.scenario.startswith("preset:"):
        name, seed = _preset(args.scenario, args.seed)
    else:
        existing_path(args.scenario, kind="scenario file")
        if args.seed is not None:
            raise BadInput("option --seed", "applies to preset:NAME only; a scenario file carries its own snapshot")

    from stickyflow.datasets.simulator import load_scenario, preset, simulate

    scenario = preset(name, seed=seed) if args.scenario.startswith("preset:") else load_scenario(args.scenario)
    if args.rounds is not None:
        scenario = _with_rounds(scenario, args.rounds)
    from ..runtime import warm_up

    warm_up(assignors)  # imports and first-call set-up are not the first round's solve time
    sim = simulate(scenario, assignors, readiness=args.readiness, time_limit=args.time_limit)
    _print(sim, rounds=args.rounds_table)
    if args.output:
        from stickyflow.model import jsonio

        from ..report import write_simulation_report

        rep = write_simulation_report(sim, args.output)
        scenario_path = Path(args.output) / "scenario.json"
        scenario_path.write_bytes(jsonio.dumps(scenario.to_json(), indent=True) + b"\n")
        files = [*rep.files.values(), scenario_path]
        print(f"stickyflow simulate: wrote {', '.join(str(p) for p in files)}", file=sys.stderr)
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
