"""``stickyflow simulate TRACE``: the autoscaler over a rate trace, for each plan method, and the study it makes.

    stickyflow simulate trace:jpdc [--seeds 0-4] [--deltas 5,25] [--methods optimal,latency,bfd,mwf,kafka:10-32]
                        [--every N] [--trigger X] [--drain X] [--pause S] [--time-limit S] [-o OUT]

TRACE is a trace JSON file (``"format": "stickyflow.trace/1"``), ``trace:jpdc[:SEED]``
(the JPDC setup) or ``trace:walk:key=value,...`` (see
:mod:`stickyflow.datasets.traces`). ``--seeds`` and ``--deltas`` make one generated
trace per seed and delta. Methods are plan methods (``stickyflow.planning.methods``) and
``kafka:K`` (a static round-robin over K consumers; ``kafka:10-32`` is every K from 10
to 32). Each run's consumers, R-score and latency percentiles go to standard output;
with ``-o`` the study (:mod:`stickyflow.adapters.report.autoscale`) goes to OUT. Bad
input is one line on standard error and exit 2.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from .input import BadInput, int_at_least, positive_number

__all__ = ["add_trace_options", "is_trace", "run_trace", "DEFAULT_METHODS", "bounded_number", "NON_NEGATIVE"]

DEFAULT_METHODS = "optimal,latency,bfd,mwf,mbfp,least-loaded,kafka:10-32"


def bounded_number(low: float, high: float, rule: str, *, open_low: bool = False):
    """An option type: a number from ``low`` to ``high`` (above ``low`` with ``open_low``), else ``rule``.

    >>> bounded_number(0, 1, "must be a fraction", open_low=True)("0.5")
    0.5
    """
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not (low < value if open_low else low <= value) or not value <= high:
            raise argparse.ArgumentTypeError(f"{text!r} {rule}")
        return value

    return parse


NON_NEGATIVE = bounded_number(0.0, float("inf"), "must be a finite number >= 0")
NON_NEGATIVE.__name__ = "non-negative number"


def _int_list(text: str) -> list[int]:
    """``0-4`` or ``0,2,5`` (integers >= 0)."""
    out: list[int] = []
    for part in filter(None, text.split(",")):
        a, sep, b = part.partition("-")
        if not a.isdigit() or (sep and not b.isdigit()):
            raise argparse.ArgumentTypeError(f"{text!r} is not A-B or A,B,... (integers >= 0)")
        out.extend(range(int(a), int(b) + 1) if sep else [int(a)])
    if not out:
        raise argparse.ArgumentTypeError("names no seed")
    return out


def _number_list(text: str) -> list[float]:
    try:
        out = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not comma-separated numbers") from None
    if not out or any(not 0 <= x <= 100 for x in out):
        raise argparse.ArgumentTypeError(f"{text!r}: each delta is a percentage from 0 to 100")
    return out


def add_trace_options(p: argparse.ArgumentParser) -> None:
    """The trace mode's options on ``simulate``'s parser (they apply to a TRACE only)."""
    g = p.add_argument_group("rate traces (TRACE: a trace file, trace:jpdc[:SEED] or trace:walk:key=value,...)")
    g.add_argument("--methods", default=None, help=f"plan methods and kafka:K or kafka:A-B (default {DEFAULT_METHODS})")
    g.add_argument("--every", type=int_at_least(1), default=None, metavar="N", help="plan at least every N steps "
                   "(default 1: every step)")
    g.add_argument("--trigger", type=positive_number, default=None, metavar="X",
                   help="plan when a member's load exceeds X (default 1.33 x the capacity)")
    g.add_argument("--drain", type=positive_number, default=None, metavar="X",
                   help="what a member consumes per second (default: the trigger)")
    g.add_argument("--pause", type=NON_NEGATIVE, default=None, metavar="S",
                   help="seconds a member pauses per partition it gains (default 5)")
    g.add_argument("--seeds", type=_int_list, default=None, metavar="A-B", help="generated traces: these seeds")
    g.add_argument("--deltas", type=_number_list, default=None, metavar="D,...",
                   help="generated traces: these deltas (percent of the capacity per step)")


def is_trace(text: str) -> bool:
    """Is SCENARIO a trace: ``trace:...`` or a JSON file whose format is a trace's."""
    if text.startswith("trace:"):
        return True
    if not os.path.isfile(text):
        return False
    try:
        with open(text, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return b'"stickyflow.trace/1"' in head


def _methods(text: str) -> list[str]:
    from stickyflow.datasets.trace_sim import check_method
    from stickyflow.errors import InvalidSnapshotError

    out: list[str] = []
    for name in filter(None, (x.strip() for x in text.split(","))):
        if name.startswith("kafka:") and "-" in name[6:]:
            a, _, b = name[6:].partition("-")
            if not (a.isdigit() and b.isdigit() and 1 <= int(a) <= int(b)):
                raise BadInput("option --methods", f"{name!r} is not kafka:A-B with 1 <= A <= B")
            out.extend(f"kafka:{k}" for k in range(int(a), int(b) + 1))
            continue
        try:
            out.append(check_method(name))
        except InvalidSnapshotError as exc:
            raise BadInput("option --methods", exc.rule) from None
    if not out:
        raise BadInput("option --methods", "names no method")
    return list(dict.fromkeys(out))


def _traces(args: argparse.Namespace) -> list:
    from stickyflow.datasets.traces import JPDC, load_trace, named_trace, random_walk
    from stickyflow.errors import InvalidSnapshotError

    text = args.scenario
    try:
        if not text.startswith("trace:"):
            if args.seeds or args.deltas or args.seed is not None:
                raise BadInput("option --seeds", "--seeds, --deltas and --seed apply to generated traces only")
            return [(load_trace(text), None)]
        if args.seeds is None and args.deltas is None:
            if args.seed is not None:
                text = f"trace:jpdc:{args.seed}" if text == "trace:jpdc" else text
            t = named_trace(text)
            return [(t, JPDC["delta"] if text.startswith("trace:jpdc") else _walk_delta(text, JPDC["delta"]))]
        if not text.startswith("trace:jpdc") and not text.startswith("trace:walk"):
            raise BadInput("argument SCENARIO", f"{text!r} is not a generated trace")
        base = dict(JPDC)
        if text.startswith("trace:walk"):
            first = named_trace(text)
            base.update(partitions=first.partitions, steps=first.steps, capacity=first.capacity,
                        step_s=first.step_s, topics=len(first.topics))
            base["delta"] = _walk_delta(text, base["delta"])
        seeds = args.seeds or [args.seed or 0]
        deltas = args.deltas or [base["delta"]]
        return [(random_walk(**{**base, "delta": d}, seed=s), d) for d in deltas for s in seeds]
    except InvalidSnapshotError as exc:
        if text.startswith("trace:"):
            raise BadInput("argument SCENARIO", exc.rule) from None
        raise BadInput("trace", str(exc)) from None


def _walk_delta(text: str, default: float) -> float:
    for item in text.split(":", 2)[-1].split(","):
        key, _, value = item.partition("=")
        if key == "delta":
            return float(value)
    return default


def run_trace(args: argparse.Namespace) -> int:
    """The ``simulate`` command on a rate trace."""
    if args.readiness is not None or args.rounds is not None or args.rounds_table:
        raise BadInput("option --readiness", "--readiness, --rounds and --rounds-table apply to scenarios, "
                                             "not to rate traces")
    if args.assignors != "optimal,sticky":
        raise BadInput("option --assignors", "a rate trace takes --methods (plan methods), not --assignors")
    from .input import output_location

    if args.output:
        output_location(args.output)
    methods = _methods(args.methods or DEFAULT_METHODS)
    traces = _traces(args)
    from stickyflow.datasets.trace_sim import TraceSettings, simulate_trace

    settings = TraceSettings(trigger=args.trigger, drain=args.drain, pause=5.0 if args.pause is None else args.pause,
                             every=args.every or 1, time_limit=args.time_limit)
    started = time.perf_counter()
    runs = {}
    for trace, delta in traces:
        key = (trace.id or "trace", float(delta) if delta is not None else None)
        runs[key] = {}
        print(f"trace {trace.id}: {trace.partitions} partitions, {trace.steps} steps of {trace.step_s:g} s, "
              f"capacity {trace.capacity:g}")
        print(f"  {'method':<14} {'consumers':>9} {'R-score':>8} {'p50 s':>8} {'p90 s':>8} {'p99 s':>9} "
              f"{'proven':>8} {'time s':>7}")
        for m in methods:
            t = time.perf_counter()
            run = simulate_trace(trace, m, settings)
            runs[key][m] = run
            s = run.summary()
            proven = "-" if m.startswith("kafka:") else f"{s['proven']}/{s['plans']}"
            print(f"  {m:<14} {s['consumers']:>9.2f} {s['rscore']:>8.3f} {s['p50_s']:>8.2f} {s['p90_s']:>8.2f} "
                  f"{s['p99_s']:>9.2f} {proven:>8} {time.perf_counter() - t:>7.1f}", flush=True)
    wall = time.perf_counter() - started
    if args.output:
        from ..report.autoscale import write_autoscale_report

        record = {"command": ["stickyflow", *sys.argv[1:]], "methods": methods, "traces": [k[0] for k in runs],
                  "every": settings.every, "trigger": settings.trigger, "drain": settings.drain,
                  "pause": settings.pause, "time_limit": settings.time_limit, "wall_s": round(wall, 1),
                  "load_average": list(os.getloadavg()),
                  "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        have = {"optimal", "bfd", "mwf"} <= set(methods)
        files = write_autoscale_report(args.output, runs, record=record, checks=have)
        print(f"wrote {', '.join(str(p) for p in files.values())}", file=sys.stderr)
    print(f"{len(traces)} traces x {len(methods)} methods in {wall:.1f} s", file=sys.stderr)
    return 0
