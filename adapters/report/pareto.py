"""The traffic-against-moves Pareto sweep: re-solve rack-aware snapshots while sweeping
``traffic_cost / non_overlap_cost``, total moves and cross-rack reads per ratio, the front, the plot and a
table without repeated rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from stickyflow.errors import InvalidSnapshotError, Problem

from .base import series_color, series_marker, pandas_module, place_labels, pyplot, save_png

__all__ = ["DEFAULT_RATIOS", "GREEDY", "pareto_snapshots", "snapshots_from", "batch_input", "first_with_racks",
           "has_racks", "with_cost_ratio", "pareto_sweep", "pareto_table", "pareto_front", "plot_pareto"]

DEFAULT_RATIOS = (0.0, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 100.0)
GREEDY = ("sticky", "range", "roundrobin")
COST_SCALE = 10  # non_overlap_cost in the sweep: ratios with one decimal stay exact integers
# --------------------------------------------------------------------------- the Pareto sweep

def pareto_snapshots(count: int = 12, seed: int = 0) -> list[dict[str, Any]]:
    """``count`` seeded rack-aware consumer-group snapshots where traffic and moves pull apart.

    Every group has three racks, partitions with two replicas, members with
    racks, previous owners placed without regard to racks, and a member that
    just joined or left, so balance forces moves and keeping a partition may
    mean reading it from another rack.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    racks = ["r0", "r1", "r2"]
    out = []
    for k in range(count):
        topics = {}
        for t in range(int(rng.integers(1, 4))):
            n = int(rng.integers(6, 30))
            topics[f"t{t}"] = {"partitions": n, "racks": [sorted(rng.choice(racks, 2, replace=False).tolist())
                                                         for _ in range(n)]}
        names = list(topics)
        n_members = int(rng.integers(3, 8))
        owners = {t: rng.integers(0, n_members, topics[t]["partitions"]) for t in names}
        members = []
        for i in range(n_members):
            owned = {t: np.flatnonzero(owners[t] == i).tolist() for t in names}
            members.append({"id": f"m{i}", "subscription": names, "rack": racks[int(rng.integers(0, 3))],
                            "generation": 1, "owned": {t: p for t, p in owned.items() if p}})
        if rng.random() < 0.5:
            members.append({"id": f"m{n_members}", "subscription": names, "rack": racks[int(rng.integers(0, 3))]})
        else:
            members.pop(int(rng.integers(0, n_members)))
        out.append({"format": "stickyflow.snapshot/1", "kind": "consumer", "id": f"pareto-{seed}-{k}",
                    "topics": topics, "members": members})
    return out


def snapshots_from(source: Any) -> list[Any]:
    """Snapshots from a dataset (a folder of JSON files, a JSON Lines file, a Parquet file or folder with a
    ``snapshot`` column: :func:`stickyflow.datasets.io.read_dataset`), ``suite:NAME`` (a bundled suite), or a list.

    Items that are not valid snapshots are skipped: a report is not the place to fail on one bad row. (Not
    :func:`stickyflow.adapters.spark.read_snapshots`, which reads a dataset into a Spark DataFrame.)
    """
    import stickyflow
    from stickyflow.model import jsonio

    if isinstance(source, (list, tuple)):
        items = list(source)
    elif isinstance(source, str) and source.startswith("suite:"):
        items = _suite(source[len("suite:"):])
    else:
        from stickyflow.datasets.io import read_dataset

        items = [rec.text for rec in read_dataset(source)]
    out = []
    for item in items:
        try:
            if isinstance(item, (bytes, str)):
                item = jsonio.loads(item)
            out.append(stickyflow.as_snapshot(item))
        except (InvalidSnapshotError, ValueError):
            continue
    return out


def batch_input(batch: Any) -> str | None:
    """Where the snapshots of a batch output came from: the input named in the ``_stickyflow.json`` that
    ``stickyflow batch`` writes into its output folder; None when ``batch`` is not such a folder (a frame, a CSV
    file, an output written before the record existed)."""
    import json

    from ..spark import BATCH_RECORD

    if not isinstance(batch, (str, Path)):
        return None
    record = Path(batch) / BATCH_RECORD
    try:
        doc = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    where = doc.get("input") if isinstance(doc, dict) else None
    return where if isinstance(where, str) and where else None


def first_with_racks(source: Any, count: int) -> tuple[list[Any], int]:
    """The first ``count`` snapshots with racks (:func:`has_racks`) of each kind in the dataset ``source``, and
    how many records were read to find them (the reading stops once both kinds have ``count``). Records that are
    not valid snapshots are passed over."""
    import stickyflow
    from stickyflow.datasets.io import read_dataset
    from stickyflow.model import jsonio

    found: dict[str, list[Any]] = {"consumer": [], "streams": []}
    read = 0
    for rec in read_dataset(source):
        read += 1
        try:
            snap = stickyflow.as_snapshot(jsonio.loads(rec.text))
        except (InvalidSnapshotError, ValueError):
            continue
        if len(found[snap.kind]) < count and has_racks(snap):
            found[snap.kind].append(snap)
        if all(len(v) >= count for v in found.values()):
            break
    return found["consumer"] + found["streams"], read


def _suite(name: str) -> list[Any]:
    from stickyflow.datasets.suites import SUITES, suite

    if name not in SUITES:
        raise InvalidSnapshotError(Problem("pareto-input", f"{name!r} is not a suite (known: {', '.join(SUITES)})"))
    return suite(name)


def has_racks(snapshot: Any) -> bool:
    """Whether cross-rack reads can be counted: racks known on both sides (members or clients, and partitions)."""
    if snapshot.kind == "consumer":
        return any(m.rack is not None for m in snapshot.members) and any(
            t.racks is not None and any(t.racks) for t in snapshot.topics.values())
    return snapshot.racks_known()


def with_cost_ratio(snapshot: Any, ratio: float, scale: int = COST_SCALE) -> dict[str, Any]:
    """The snapshot's JSON with ``traffic_cost = round(ratio * scale)`` and ``non_overlap_cost = scale``.

    Consumer groups get ``rack_aware: true``; Streams applications get the
    ``rack_aware_assignment_*_cost`` keys and, when their strategy is
    ``"none"``, ``"min_traffic"``.

    >>> snap = {"format": "stickyflow.snapshot/1", "kind": "consumer", "topics": {}, "members": []}
    >>> with_cost_ratio(snap, 0.5)["config"]
    {'traffic_cost': 5, 'non_overlap_cost': 10, 'rack_aware': True}
    """
    import stickyflow

    doc = stickyflow.snapshot_to_json(stickyflow.as_snapshot(snapshot))
    config = dict(doc.get("config") or {})
    traffic = int(round(ratio * scale))
    if doc["kind"] == "consumer":
        config.update(traffic_cost=traffic, non_overlap_cost=scale, rack_aware=True)
    else:
        config.update(rack_aware_assignment_traffic_cost=traffic, rack_aware_assignment_non_overlap_cost=scale)
        if config.get("rack_aware_assignment_strategy", "none") == "none":
            config["rack_aware_assignment_strategy"] = "min_traffic"
    doc["config"] = config
    return doc


def pareto_sweep(snapshots: Iterable[Any], ratios: Sequence[float] = DEFAULT_RATIOS,
                 assignors: Sequence[str] = ("optimal",) + GREEDY, *, time_limit: float | None = None,
                 progress: Callable[[], None] | None = None):
    """Solve every snapshot at every ratio with every assignor; one row per (kind, assignor, ratio) with totals.

    Columns: ``kind``, ``assignor``, ``ratio``, ``traffic_cost``,
    ``non_overlap_cost``, ``snapshots`` (solved), ``skipped`` (the assignor
    does not serve that kind, or failed), ``moves``, ``cross_rack``,
    ``imbalance_max``, ``proven`` (solves with status ``"optimal"``),
    ``fallbacks``, ``followups`` (answers that ask for a follow-up
    rebalance), ``wall_s``. Kinds are totalled apart: a consumer-only
    assignor is compared on the same snapshots as the optimizer. Only proven
    optima make a true front: give large Streams snapshots a ``time_limit``
    and read ``proven``. And only final answers: the moves and cross-rack
    reads are those of what runs this round, while a Streams optimum is one
    of the converged assignment, which an answer with warm-ups out
    (``followups``) has not reached yet; there the totals need not fall and
    rise with the ratio. ``progress()`` is called after each solve (skipped ones too).
    """
    import stickyflow

    pd = pandas_module()
    snaps = [stickyflow.as_snapshot(s) for s in snapshots]
    rows = []
    for kind in sorted({s.kind for s in snaps}):
        of_kind = [s for s in snaps if s.kind == kind]
        for assignor in assignors:
            if assignor not in stickyflow.available_assignors(kind) and ":" not in assignor:
                continue
            for ratio in ratios:
                tot = {"kind": kind, "assignor": assignor, "ratio": float(ratio),
                       "traffic_cost": int(round(ratio * COST_SCALE)), "non_overlap_cost": COST_SCALE, "snapshots": 0,
                       "skipped": 0, "moves": 0, "cross_rack": 0, "imbalance_max": 0, "proven": 0, "fallbacks": 0,
                       "followups": 0, "wall_s": 0.0}
                for snap in of_kind:
                    try:
                        r = stickyflow.assign(with_cost_ratio(snap, ratio), assignor, time_limit=time_limit)
                    except Exception:  # noqa: BLE001 - a failing assignor is a skipped point, not a failed report
                        tot["skipped"] += 1
                        continue
                    finally:
                        if progress is not None:
                            progress()
                    tot["snapshots"] += 1
                    tot["moves"] += int(r.metrics["moves"])
                    tot["cross_rack"] += int(r.metrics.get("cross_rack") or 0)
                    tot["imbalance_max"] = max(tot["imbalance_max"], int(r.metrics["imbalance"]))
                    tot["proven"] += r.solver.status == "optimal"
                    tot["fallbacks"] += r.solver.status == "fallback"
                    tot["followups"] += r.followup_rebalance_deadline_ms is not None
                    tot["wall_s"] += r.solver.wall_s
                rows.append(tot)
    return pd.DataFrame(rows)


def pareto_table(sweep):
    """The sweep's totals with no repeated row: where an assignor's totals are the same at consecutive ratios
    (a greedy assignor that ignores the costs gives one answer at every ratio) they are one row, and
    ``ratios`` lists the ratios it stands for.

    >>> import pandas as pd
    >>> t = pd.DataFrame({"kind": "consumer", "assignor": ["optimal"] * 2 + ["range"] * 2, "ratio": [0.0, 1.0] * 2,
    ...                   "snapshots": 3, "skipped": 0, "moves": [5, 9, 40, 40], "cross_rack": [9, 2, 30, 30],
    ...                   "imbalance_max": 0, "proven": [3, 3, 0, 0], "fallbacks": 0, "wall_s": 0.01})
    >>> pareto_table(t)[["assignor", "ratios", "moves"]].to_dict("records")
    [{'assignor': 'optimal', 'ratios': '0', 'moves': 5}, {'assignor': 'optimal', 'ratios': '1', 'moves': 9}, {'assignor': 'range', 'ratios': 'all (0 to 1)', 'moves': 40}]
    """
    pd = pandas_module()
    if sweep is None or not len(sweep):
        return sweep
    same = [c for c in ("snapshots", "skipped", "moves", "cross_rack", "imbalance_max", "proven", "fallbacks",
                        "followups") if c in sweep.columns]
    every = sorted(set(float(r) for r in sweep["ratio"]))
    rows = []
    for (kind, assignor), g in sweep.groupby(["kind", "assignor"], sort=True):
        g = g.sort_values("ratio")
        runs: list[list[Any]] = []
        for _, r in g.iterrows():
            key = tuple(r[c] for c in same)
            if runs and runs[-1][0] == key:
                runs[-1][1].append(float(r["ratio"]))
                runs[-1][2] += float(r.get("wall_s", 0.0) or 0.0)
            else:
                runs.append([key, [float(r["ratio"])], float(r.get("wall_s", 0.0) or 0.0)])
        for key, ratios, wall in runs:
            if len(ratios) == len(every) and len(every) > 1:
                text = f"all ({ratios[0]:g} to {ratios[-1]:g})"
            elif len(ratios) > 2:
                text = f"{ratios[0]:g} to {ratios[-1]:g} ({len(ratios)} ratios)"
            else:
                text = ", ".join(f"{x:g}" for x in ratios)
            rows.append({"kind": kind, "assignor": assignor, "ratios": text, **dict(zip(same, key)),
                         "wall_s": wall})
    return pd.DataFrame(rows)


def pareto_front(points: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """The points no other point beats on both coordinates (fewer moves and fewer cross-rack reads), sorted.

    >>> pareto_front([(0, 9), (2, 5), (3, 5), (5, 1), (4, 7)])
    [(0, 9), (2, 5), (5, 1)]
    """
    front: list[tuple[float, float]] = []
    for x, y in sorted(set(points)):
        if not front or y < front[-1][1]:
            front.append((x, y))
    return front


def plot_pareto(sweep, path: str | Path | None = None, *, optimizer: str = "optimal",
                source: str | None = None) -> bytes:
    """Total cross-rack reads against total moves, one panel per kind: the optimizer's points joined in ratio
    order and labelled with their ratio, its Pareto front boxed, every other assignor's points marked.
    ``source`` says in the title and the legend which snapshots were swept (``"generated"``: the seeded
    :func:`pareto_snapshots`, not the batch's own)."""
    plt = pyplot()
    sweep = sweep[sweep["snapshots"] > 0] if len(sweep) else sweep
    kinds = sorted(set(sweep["kind"])) if len(sweep) else ["consumer"]
    fig, axes = plt.subplots(1, len(kinds), figsize=(7.5 * len(kinds), 6.2), squeeze=False)
    for ax, kind in zip(axes[0], kinds):
        part = sweep[sweep["kind"] == kind] if len(sweep) else sweep
        if len(part):
            n = int(part["snapshots"].max())
            what = "generated " if source == "generated" else ""
            ax.set_title(f"{kind}: {n} {what}snapshot{'s' if n != 1 else ''} swept", fontsize=10)
        else:
            ax.text(0.5, 0.5, "no snapshots solved", ha="center", va="center", transform=ax.transAxes)
        unit = "partitions" if kind == "consumer" else "tasks"
        ax.set_xlabel(f"moves ({unit}, total over the snapshots)")
        ax.set_ylabel(f"cross-rack reads ({'partitions' if kind == 'consumer' else 'topic partitions'}, total)")
        ax.grid(alpha=0.3)
        if len(part):
            _pareto_panel(ax, part, optimizer, "generated snapshots, not the batch's" if source == "generated"
                          else None)
    title = "Traffic against moves: sweeping traffic_cost / non_overlap_cost"
    if source == "generated":
        title += "\non generated rack-aware groups, not the batch's own snapshots"
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return save_png(fig, path)


def _pareto_panel(ax, part, optimizer: str, legend_title: str | None = None) -> None:
    opt = part[part["assignor"] == optimizer].sort_values("ratio")
    if len(opt):
        ax.plot(opt["moves"], opt["cross_rack"], "-o", color=series_color(optimizer),
                label=f"{optimizer}, r = traffic_cost / non_overlap_cost", zorder=3)
        labels: dict[tuple[float, float], list[str]] = {}
        for _, row in opt.iterrows():  # ratios that land on the same point share one label; * = not all proven
            star = "" if row.get("proven", row["snapshots"]) == row["snapshots"] else "*"
            labels.setdefault((row["moves"], row["cross_rack"]), []).append(f"{row['ratio']:g}{star}")
        front = pareto_front(zip(opt["moves"], opt["cross_rack"]))
        ax.plot([p[0] for p in front], [p[1] for p in front], "s", mfc="none", ms=11, color="black",
                label="Pareto front", zorder=4)
    for name, g in part[part["assignor"] != optimizer].groupby("assignor", sort=True):
        pts = g[["moves", "cross_rack"]].drop_duplicates()
        ax.scatter(pts["moves"], pts["cross_rack"], marker=series_marker(name), s=70, color=series_color(name),
                   label=name if len(pts) == 1 else f"{name} ({len(pts)} points)", zorder=5)
    # below the panel: inside it, the legend would cover points wherever they fall
    ax.legend(fontsize=8, title=legend_title, title_fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.13),
              ncol=3, frameon=False)
    if len(opt):
        place_labels(ax, [(x, y, "r=" + ", ".join(t)) for (x, y), t in labels.items()], color=series_color(optimizer))


