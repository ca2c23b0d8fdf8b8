"""Helpers for the streams tests: a seeded snapshot generator and the re-solve loop (plus their own sanity tests).

``make_streams`` builds spec JSON for the scenarios the issue names (fresh,
steady, scale out, scale in, lagging clients) with racks, tags, threads and
stateless mixes; ``next_round`` plays one rebalance forward the way the
convergence test needs it: the round's assignment becomes the previous one,
every warm-up and standby has caught up, active tasks report ``-2``.
"""

from __future__ import annotations

import numpy as np

import stickyflow
from stickyflow.model.streams import parse_streams

SCENARIOS = ("fresh", "steady", "scale_out", "scale_in", "lagging")


def make_streams(rng: np.random.Generator, scenario: str = "steady", *, tasks: int = 12, clients: int = 4,
                 subtopologies: int = 2, stateful_fraction: float = 0.6, standbys: int = 0,
                 threads: tuple[int, ...] = (1,), racks: int | None = None, tags: int | None = None,
                 max_warmup: int = 2, acceptable_lag: int = 10000, strategy: str | None = None,
                 balance_factor: int = 1, mode: str = "warmup", churn: int = 1) -> dict:
    """A streams snapshot dict. Clients are ``c00, c01, ...``; tasks spread over ``subtopologies``."""
    per = max(1, tasks // subtopologies)
    ids = [f"{s}_{p}" for s in range(subtopologies) for p in range(per)][:tasks]
    n_stateful_subs = max(1, round(subtopologies * stateful_fraction)) if stateful_fraction > 0 else 0
    rack_names = [f"r{i}" for i in range(racks)] if racks else []
    task_docs = []
    for tid in ids:
        sub = int(tid.split("_")[0])
        stateful = sub < n_stateful_subs
        d = {"id": tid, "stateful": stateful}
        if stateful:
            d["end_offset_sum"] = int(rng.integers(50_000, 500_000))
        if rack_names:
            pick = lambda: sorted(rng.choice(rack_names, size=min(2, len(rack_names)), replace=False).tolist())  # noqa: E731
            d["input_partitions"] = [{"topic": f"in{sub}", "partition": int(tid.split("_")[1]), "racks": pick()}]
            if stateful:
                d["changelog_partitions"] = [{"topic": f"cl{sub}", "partition": int(tid.split("_")[1]),
                                              "racks": pick()}]
        task_docs.append(d)
    stateful_ids = [d["id"] for d in task_docs if d["stateful"]]
    # who ran what before: a balanced round-robin over the "old" clients
    n_old = clients - churn if scenario == "scale_out" else clients + churn if scenario == "scale_in" else clients
    n_old = max(1, n_old)
    names = [f"c{i:02d}" for i in range(max(n_old, clients))]
    prev_active: dict[str, list[str]] = {n: [] for n in names}
    prev_standby: dict[str, list[str]] = {n: [] for n in names}
    if scenario != "fresh":
        order = rng.permutation(len(ids))
        for k, i in enumerate(order.tolist()):
            prev_active[names[k % n_old]].append(ids[i])
        for tid in stateful_ids:
            owner = next(n for n in names[:n_old] if tid in prev_active[n])
            others = [n for n in names[:n_old] if n != owner]
            for n in rng.permutation(others)[:min(standbys, len(others))].tolist():
                prev_standby[n].append(tid)
    live = names[:clients] if scenario != "scale_in" else names[churn:churn + clients]
    client_docs = []
    for k, n in enumerate(live):
        c = {"process_id": n, "threads": int(rng.choice(threads)), "previous_active": prev_active[n],
             "previous_standby": prev_standby[n]}
        lags = {}
        for tid in prev_standby[n]:
            lags[tid] = int(rng.integers(0, 30_000))
        if scenario == "lagging":
            for tid in prev_active[n]:
                if tid in stateful_ids and rng.random() < 0.3:
                    lags[tid] = int(rng.integers(0, 40_000))
            for tid in rng.choice(stateful_ids, size=min(3, len(stateful_ids)), replace=False).tolist() \
                    if stateful_ids else []:
                if tid not in prev_active[n]:
                    lags[tid] = int(rng.integers(0, 100_000))
        if lags:
            c["lags"] = lags
        if rack_names:
            c["rack"] = rack_names[k % len(rack_names)]
        if tags:
            c["tags"] = {"zone": f"z{k % tags}", "cluster": f"k{(k // tags) % 2}"}
        client_docs.append(c)
    config = {"num_standby_replicas": standbys, "max_warmup_replicas": max_warmup,
              "acceptable_recovery_lag": acceptable_lag, "balance_factor": balance_factor, "rebalancing_mode": mode}
    if strategy:
        config["rack_aware_assignment_strategy"] = strategy
    if tags:
        config["rack_aware_assignment_tags"] = ["zone"] if tags and rng.random() < 0.5 else ["zone", "cluster"]
    return {"format": "stickyflow.snapshot/1", "kind": "streams", "id": f"gen/{scenario}", "now_ms": 1_000_000,
            "tasks": task_docs, "clients": client_docs, "config": config}


def random_streams(seed: int, **overrides) -> dict:
    """A snapshot with every knob drawn from ``seed`` (scenario, sizes, threads, racks, tags, standbys)."""
    rng = np.random.default_rng(seed)
    clients = int(rng.integers(1, 9))
    kw = dict(
        scenario=str(rng.choice(SCENARIOS)),
        tasks=int(rng.integers(1, 40)),
        clients=clients,
        subtopologies=int(rng.integers(1, 4)),
        stateful_fraction=float(rng.choice([0.0, 0.5, 1.0])),
        standbys=int(rng.integers(0, 3)),
        threads=tuple(int(x) for x in rng.choice([1, 1, 2, 3, 4], size=3)),
        racks=int(rng.integers(2, 4)) if rng.random() < 0.5 else None,
        tags=int(rng.integers(2, 4)) if rng.random() < 0.4 else None,
        max_warmup=int(rng.integers(1, 4)),
        acceptable_lag=int(rng.choice([0, 10_000, 100_000])),
        balance_factor=int(rng.choice([1, 1, 2])),
        churn=int(rng.integers(1, 3)),
    )
    kw["strategy"] = str(rng.choice(["min_traffic", "balance_subtopology"])) if kw["racks"] else None
    kw.update(overrides)
    scenario = kw.pop("scenario")
    return make_streams(rng, scenario, **kw)


def next_round(doc: dict, result, *, keep_state: bool = True, now_step: int | None = None) -> dict:
    """The next rebalance after ``result``: warm-ups and standbys caught up, actives at ``-2``
    (:func:`stickyflow.datasets.convergence.next_round`; here clients keep the state of tasks they dropped
    unless ``keep_state`` is False)."""
    from stickyflow.datasets.convergence import next_round as play_on

    return play_on(doc, result, keep_state=keep_state, now_step=now_step)


def round_bound(doc: dict) -> int:
    """ceil(stateful tasks x (1 + standbys per task) / budget) + 1, the budget being max_warmup_replicas
    (one learner a round in learner mode): :func:`stickyflow.datasets.convergence.round_bound`."""
    from stickyflow.datasets.convergence import round_bound as bound

    return bound(doc)


def resolve_until_stable(doc: dict, assignor: str = "sticky", *, keep_state: bool = True, limit: int = 200,
                         check=None):
    """Solve, play forward, solve again ... until no follow-up (:func:`stickyflow.datasets.convergence.converge`).
    Returns (rounds, last result, last snapshot)."""
    from stickyflow.datasets.convergence import converge

    run = converge(doc, assignor, horizon=limit, keep_state=keep_state, check=check)
    return run.rounds, run.last, run.snapshots[-1]


# --------------------------------------------------------------------------- sanity of the helpers

def test_generator_is_valid_and_seeded():
    for seed in range(30):
        a, b = random_streams(seed), random_streams(seed)
        assert a == b
        snap = stickyflow.parse_snapshot(a)
        assert snap.kind == "streams"


def test_next_round_marks_replicas_caught_up():
    doc = make_streams(np.random.default_rng(1), "scale_out", tasks=8, clients=3, stateful_fraction=1.0)
    r = stickyflow.assign(doc, "sticky")
    nxt = parse_streams(next_round(doc, r))
    for c in nxt.clients:
        a = r.assignment[c.process_id]
        for tid in a.active + a.standby + a.warmup:
            assert nxt.is_caught_up(c, nxt.task(tid))
