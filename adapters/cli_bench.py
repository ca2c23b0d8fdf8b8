"""``stickyflow bench``: speed and quality at scale, stickyflow next to its peers, on the same input.

The suite runs every case (size x event x subscriptions) through stickyflow's
assignors (``optimal``, ``sticky``, ``range``, ``roundrobin``, and Kafka 4's server-side ``uniform`` and
``kip1071``, each on the kind it serves) and kafka-python's
(``kp-sticky``, ``kp-range``, ``kp-roundrobin``) in the same process, on the
same snapshot, and records for each run the wall time (median of repeated
runs), the peak memory, moves, imbalance, cross-rack reads and the gap to the
lower bound. It writes JSON, a Markdown table and a PNG plot::

    stickyflow bench --quick                 # a smoke run, well under a minute
    stickyflow bench                         # the full suite (long: kafka-python is slow)
    stickyflow bench --goals                 # the issue's speed goals, pass or fail

How it measures (``bench-results/`` is git-ignored):

* Each (case, assignor) runs in a forked child of the process that built the
  input, so every assignor sees the very same objects, a slow peer can be
  stopped at ``--timeout`` and the child's peak resident memory (``VmHWM``,
  reset at the start of the child) belongs to that assignor alone:
  ``peak_mib`` is the child's peak, ``extra_mib`` the part above what the
  process held before the assignor ran (imports and the input).
* ``wall_s`` is the median of up to ``--repeats`` warm runs (fewer when one
  run exceeds the time budget). stickyflow's time is the whole front door
  (:func:`stickyflow.assign`: validation, solving, cooperative step, metrics);
  a kafka-python peer's is its ``assign(cluster, members)`` call, the part a
  group leader runs (``total_s`` adds building its metadata objects).
* Every assignment, peers' included, goes through stickyflow's own checker
  (:func:`stickyflow.consumer_check.inspect_consumer`), so moves and balance
  are counted the same way for all.
* Lower bounds: ``bound_sumsq`` (the least sum of squared loads) and
  ``bound_cost`` (the least ``non_overlap_cost x moves + traffic_cost x
  cross_rack`` among the most balanced assignments) come from the optimal
  assignor's proven optimum; with equal subscriptions and no racks,
  ``bound_moves`` is also computed in closed form (every member keeps at most
  its quota, and the members that owned more than the floor get the ceilings),
  independently of any solver. ``gap_cost`` and ``gap_sumsq`` are a run's
  distance to them (0: optimal).

The cases (seeded, deterministic): consumer groups of ``P`` partitions in
topics of ``--per-topic`` partitions (2,000, as in Kafka's own 1,000,000 x
2,000 sticky-assignor test: 500 topics), ``M`` members; ``equal``: everyone
subscribes to every topic; ``mixed``: every member picks one of 8
subscription profiles (all topics, or a random half). The previous assignment
is a balanced round-robin one (what Kafka's assignors leave behind), by the
members still there (``join``: 10% of the members are new and own nothing;
``leave``: 10% of the previous group left, their partitions are orphaned;
``fresh``: nobody owns anything). With ``--racks R`` members and two
replicas per partition are spread over ``R`` racks (KIP-881 costs apply).
Streams applications have ``T`` tasks in 4 subtopologies and ``C`` one-thread
clients, all ``stateless``, or all ``stateful`` with one standby replica and
lags on the standbys; the events are the same, for clients.

The generators are the bench's own (numpy, seconds at 1,000,000 partitions)
so that every case is exactly the issue's: ``stickyflow.datasets.generators``
serves the dataset and simulator work with its own scenario shapes.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import select
import signal
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Iterable, Sequence

import numpy as np

__all__ = [
    "Case",
    "consumer_snapshot",
    "streams_document",
    "consumer_cases",
    "streams_cases",
    "run_suite",
    "run_goals",
    "min_moves_equal",
    "ASSIGNORS",
    "add_parser",
]

STICKYFLOW_ASSIGNORS = ("optimal", "sticky", "range", "roundrobin", "uniform", "kip1071")
PEER_ASSIGNORS = ("kp-sticky", "kp-range", "kp-roundrobin")
ASSIGNORS = STICKYFLOW_ASSIGNORS + PEER_ASSIGNORS
EVENTS = ("fresh", "join", "leave")
SUBSCRIPTIONS = ("equal", "mixed")

# the suite's sizes: consumer (partitions, members), streams (tasks, clients)
FULL_CONSUMER_SIZES = ((100, 10), (1_000, 50), (10_000, 100), (10_000, 1_000), (100_000, 500), (1_000_000, 2_000))
QUICK_CONSUMER_SIZES = ((100, 10), (1_000, 50))
FULL_STREAMS_SIZES = ((100, 10), (1_000, 100), (10_000, 1_000))
QUICK_STREAMS_SIZES = ((100, 10),)


# --------------------------------------------------------------------------- cases

@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    """One benchmark input: its kind, size and situation. ``name`` is stable across runs.

    For consumers ``size`` is partitions and ``members`` the group's members; for
    streams ``size`` is tasks and ``members`` the clients. ``subscriptions`` is
    ``"equal"``/``"mixed"`` (consumers) or ``"stateless"``/``"stateful"`` (streams).

    >>> Case(kind="consumer", size=10_000, members=100, event="join", subscriptions="equal").name
    'consumer-10000x100-join-equal'
    """

    kind: str
    size: int
    members: int
    event: str
    subscriptions: str
    racks: int = 0
    per_topic: int = 2000
    seed: int = 0

    @property
    def name(self) -> str:
        base = f"{self.kind}-{self.size}x{self.members}-{self.event}-{self.subscriptions}"
        if self.racks:
            base += f"-racks{self.racks}"
        if self.kind == "consumer" and self.per_topic != 2000:
            base += f"-pt{self.per_topic}"
        return base


def consumer_cases(sizes: Iterable[tuple[int, int]], events: Iterable[str] = EVENTS,
                   subscriptions: Iterable[str] = SUBSCRIPTIONS, *, racks: int = 0, per_topic: int = 2000,
                   seed: int = 0) -> list[Case]:
    """Every combination, smallest sizes first."""
    return [Case(kind="consumer", size=p, members=m, event=e, subscriptions=s, racks=racks, per_topic=per_topic,
                 seed=seed)
            for p, m in sizes for s in subscriptions for e in events]


def streams_cases(sizes: Iterable[tuple[int, int]], events: Iterable[str] = EVENTS,
                  kinds: Iterable[str] = ("stateless", "stateful"), *, seed: int = 0) -> list[Case]:
    """Streams cases: tasks x clients, events, stateless or stateful (one standby) tasks."""
    return [Case(kind="streams", size=n, members=c, event=e, subscriptions=s, seed=seed)
            for n, c in sizes for s in kinds for e in events]


def _previous_group(members: int, event: str) -> tuple[int, int]:
    """(new members that own nothing, departed members whose partitions are orphaned)."""
    if event == "join":
        return (max(1, round(members * 0.1)) if members > 1 else 0), 0
    if event == "leave":
        return 0, max(1, round(members / 9))  # 10% of the previous group
    if event == "fresh":
        return members, 0
    raise ValueError(f"event: {event!r} is not one of {', '.join(EVENTS)}")


def _waterfill(loads: np.ndarray, n: int) -> np.ndarray:
    """How many of ``n`` units each entry gets when every unit goes to the least loaded (ties: lowest index)."""
    lo, hi = int(loads.min()), int(loads.min()) + n + 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if int(np.maximum(mid - loads, 0).sum()) <= n:
            lo = mid
        else:
            hi = mid
    counts = np.maximum(lo - loads, 0)
    rest = n - int(counts.sum())
    if rest:
        counts[np.flatnonzero(loads + counts == lo)[:rest]] += 1
    return counts


def _interleave(who: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Owners of consecutive partitions dealt round-robin: ``counts[k]`` partitions to ``who[k]``."""
    seq = np.repeat(who, counts)
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    rank = np.arange(len(seq)) - starts
    return seq[np.lexsort((np.arange(len(seq)), rank))]


_PROFILES = 8  # subscription profiles of a mixed group


def topic_count(case: Case) -> int:
    """How many topics the case's partitions fill: ``--per-topic`` each, and at least 8 when mixed."""
    T = max(1, -(-case.size // case.per_topic))
    return max(T, _PROFILES) if case.subscriptions == "mixed" else T


def consumer_snapshot(case: Case):
    """The case's consumer group as a :class:`stickyflow.ConsumerSnapshot` (numpy-built, seconds at 1M).

    >>> snap = consumer_snapshot(Case(kind="consumer", size=100, members=10, event="join", subscriptions="equal"))
    >>> len(snap.members), sum(len(p) for m in snap.members for p in m.owned.values())
    (10, 100)
    """
    from stickyflow.consumer import ConsumerSnapshot, Member, Topic

    rng = np.random.default_rng(case.seed)
    P, M = case.size, case.members
    profiles = _PROFILES
    if case.subscriptions not in SUBSCRIPTIONS:
        raise ValueError(f"subscriptions: {case.subscriptions!r} is not one of {', '.join(SUBSCRIPTIONS)}")
    T = topic_count(case)
    sizes = np.full(T, P // T, dtype=np.int64)
    sizes[: P % T] += 1
    if sizes.min() < 1:
        raise ValueError(f"size: {P} partitions cannot fill {T} topics")
    names = [f"topic-{j:04d}" for j in range(T)]
    if case.subscriptions == "equal":
        prof_topics = [np.arange(T)]
    else:
        prof_topics = [np.arange(T)] + [np.sort(rng.choice(T, size=max(1, T // 2), replace=False))
                                        for _ in range(profiles - 1)]
    n_new, n_left = _previous_group(M, case.event)
    stay = M - n_new
    prev_n = stay + n_left
    # profiles of the current members, then of the departed ones (index >= M - n_new in the previous group)
    profile = (np.zeros(M + n_left, dtype=np.int64) if len(prof_topics) == 1
               else rng.integers(0, len(prof_topics), size=M + n_left))
    prev_profile = np.concatenate([profile[:stay], profile[M:]])
    # previous owners: per topic, round-robin over its subscribers, least loaded first (balanced overall)
    owner_of = np.full(P, -1, dtype=np.int64)  # index into the previous group
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    if prev_n:
        loads = np.zeros(prev_n, dtype=np.int64)
        subscribes = np.zeros((len(prof_topics), T), dtype=bool)
        for k, ts in enumerate(prof_topics):
            subscribes[k, ts] = True
        for j in range(T):
            subs = np.flatnonzero(subscribes[prev_profile, j])
            if not len(subs):
                continue
            counts = _waterfill(loads[subs], int(sizes[j]))
            loads[subs] += counts
            keep = counts > 0
            owner_of[offsets[j]:offsets[j + 1]] = _interleave(subs[keep], counts[keep])
    # previous-group index -> current member index (departed members: -1)
    to_member = np.concatenate([np.arange(stay), np.full(n_left, -1)]).astype(np.int64)
    owner = (np.where(owner_of >= 0, to_member[np.maximum(owner_of, 0)], -1) if prev_n
             else np.full(P, -1, dtype=np.int64))
    topic_of = np.repeat(np.arange(T), sizes)
    part_of = np.arange(P) - offsets[topic_of]
    owned_by: list[dict[str, tuple[int, ...]]] = [{} for _ in range(M)]
    has = owner >= 0
    if has.any():
        o, t, p = owner[has], topic_of[has], part_of[has]
        order = np.lexsort((p, t, o))
        o, t, p = o[order], t[order], p[order]
        cut = np.flatnonzero(np.r_[True, (o[1:] != o[:-1]) | (t[1:] != t[:-1]), True])
        flat = p.tolist()
        heads_o, heads_t = o[cut[:-1]].tolist(), t[cut[:-1]].tolist()
        bounds = cut.tolist()
        for k in range(len(heads_o)):
            owned_by[heads_o[k]][names[heads_t[k]]] = tuple(flat[bounds[k]:bounds[k + 1]])
    if case.racks:
        R = case.racks
        pair = [frozenset({f"az{r}", f"az{(r + 1) % R}"}) for r in range(R)]
    topics = {}
    for j, name in enumerate(names):
        racks = None
        if case.racks:
            racks = tuple(pair[(int(x) + j) % case.racks] for x in range(int(sizes[j])))
        topics[name] = Topic(name=name, partitions=int(sizes[j]), racks=racks)
    sub_names = [tuple(names[j] for j in ts) for ts in prof_topics]
    members = tuple(
        Member(id=f"member-{i:05d}", subscription=sub_names[int(profile[i])],
               rack=f"az{i % case.racks}" if case.racks else None,
               generation=7 if i < stay else None,
               owned=MappingProxyType(owned_by[i]) if owned_by[i] else MappingProxyType({}))
        for i in range(M))
    return ConsumerSnapshot(topics=MappingProxyType(topics), members=members, id=case.name)


def streams_document(case: Case) -> dict[str, Any]:
    """The case's Kafka Streams application as snapshot JSON (a dict).

    Tasks spread over 4 subtopologies; ``stateful`` tasks carry a changelog and
    one standby replica; ``join`` adds 10% new clients with no state, ``leave``
    removes 10% of the previous clients (their tasks lose their active owner).
    """
    rng = np.random.default_rng(case.seed)
    N, C = case.size, case.members
    subtopologies = min(4, N)
    stateful = case.subscriptions == "stateful"
    if case.subscriptions not in ("stateful", "stateless"):
        raise ValueError(f"subscriptions: {case.subscriptions!r} is not stateless or stateful for streams")
    per = [N // subtopologies + (1 if s < N % subtopologies else 0) for s in range(subtopologies)]
    ids = [f"{s}_{p}" for s in range(subtopologies) for p in range(per[s])]
    offsets = rng.integers(1_000, 1_000_000, size=N) if stateful else np.zeros(N, dtype=np.int64)
    tasks = [{"id": tid, "stateful": stateful, "end_offset_sum": int(offsets[k]) if stateful else 0}
             for k, tid in enumerate(ids)]
    n_new, n_left = _previous_group(C, case.event)
    stay = C - n_new
    prev_n = stay + n_left
    active_of = np.full(N, -1, dtype=np.int64)
    standby_of = np.full(N, -1, dtype=np.int64)
    if prev_n:
        active_of = np.arange(N) % prev_n
        if stateful and prev_n > 1:
            standby_of = (active_of + 1 + np.arange(N) // prev_n % (prev_n - 1)) % prev_n
    clients = []
    for c in range(C):
        d: dict[str, Any] = {"process_id": f"client-{c:05d}", "threads": 1, "previous_active": [],
                             "previous_standby": []}
        clients.append(d)
    if prev_n:
        act = [[] for _ in range(prev_n)]
        stb = [[] for _ in range(prev_n)]
        for k, (a, s) in enumerate(zip(active_of.tolist(), standby_of.tolist())):
            act[a].append(ids[k])
            if s >= 0:
                stb[s].append(ids[k])
        for c in range(stay):
            clients[c]["previous_active"] = act[c]
            clients[c]["previous_standby"] = stb[c]
            if stateful and stb[c]:
                lag = rng.integers(0, 20_000, size=len(stb[c]))
                clients[c]["lags"] = {t: int(x) for t, x in zip(stb[c], lag.tolist())}
    config: dict[str, Any] = {"num_standby_replicas": 1 if stateful else 0}
    return {"format": "stickyflow.snapshot/1", "kind": "streams", "id": case.name, "tasks": tasks,
            "clients": clients, "config": config}


# --------------------------------------------------------------------------- lower bounds

def min_moves_equal(snap) -> int | None:
    """The least moves of any most-balanced assignment, when every member subscribes to the same topics and
    no rack costs apply (closed form, no solver); ``None`` otherwise.

    With equal subscriptions the loads are ``q`` or ``q + 1`` (``r`` members
    get ``q + 1``). A member keeps at most its quota of what it validly owned;
    the ``q + 1`` quotas go best to members owning more than ``q``.

    >>> from stickyflow import parse_snapshot
    >>> s = parse_snapshot({"format": "stickyflow.snapshot/1", "kind": "consumer",
    ...     "topics": {"t": {"partitions": 5}},
    ...     "members": [{"id": "a", "subscription": ["t"], "generation": 1, "owned": {"t": [0, 1, 2, 3, 4]}},
    ...                 {"id": "b", "subscription": ["t"]}]})
    >>> min_moves_equal(s)
    2
    """
    from stickyflow.consumer import previous_owners

    if snap.rack_aware or not snap.members:
        return None
    subs = {frozenset(t for t in m.subscription if t in snap.topics) for m in snap.members}
    if len(subs) != 1:
        return None
    (topics,) = subs
    prev = previous_owners(snap)
    M = len(snap.members)
    owned = np.zeros(M, dtype=np.int64)
    total_owned = 0
    for t, arr in prev.owner.items():
        valid = arr[arr >= 0]
        total_owned += len(valid)
        if t in topics:
            owned += np.bincount(valid, minlength=M)
    P = sum(snap.topics[t].partitions for t in topics)
    q, r = divmod(P, M)
    kept = int(np.minimum(owned, q).sum()) + min(r, int(np.count_nonzero(owned > q)))
    return total_owned - kept


# --------------------------------------------------------------------------- running one assignor

def _peer_module():
    from stickyflow.adapters import peers

    return peers


def _timed_peer(snap, name: str) -> tuple[dict, float]:
    """Run kafka-python's assignor, timing only its ``assign(cluster, members)`` call."""
    import importlib

    peers = _peer_module()
    module, cls_name = peers._PEERS[name]
    cls = getattr(importlib.import_module(module), cls_name)
    original = cls.__dict__["assign"]
    spent = [0.0]
    if isinstance(original, classmethod):
        inner = original.__func__

        def timed(klass, cluster, members):
            t = time.perf_counter()
            try:
                return inner(klass, cluster, members)
            finally:
                spent[0] += time.perf_counter() - t

        cls.assign = classmethod(timed)
    else:
        def timed(self, cluster, members):
            t = time.perf_counter()
            try:
                return original(self, cluster, members)
            finally:
                spent[0] += time.perf_counter() - t

        cls.assign = timed
    try:
        out = peers.run_peer(snap, name)
    finally:
        cls.assign = original
    return out, spent[0]


def _one_run(case: Case, snap, assignor: str) -> tuple[float, float, dict[str, Any]]:
    """(algorithm seconds, total seconds, facts) of one run."""
    import stickyflow

    t0 = time.perf_counter()
    if assignor.startswith("kp-"):
        try:
            assignment, algo = _timed_peer(snap, assignor[3:])
        except _peer_module().PeerUnsupportedError as exc:
            raise _Unsupported(str(exc)) from None
        total = time.perf_counter() - t0
        from stickyflow.consumer_check import as_array_assignment, inspect_consumer

        arrays = as_array_assignment(snap, assignment)  # the checker's numpy path, when the answer is plain
        violations, metrics = inspect_consumer(snap, assignment if arrays is None else arrays)
        facts = {"status": "heuristic", "method": "kafka-python", "objective": None, "bound": None,
                 "error": str(violations[0]) if violations else None, **_metric_facts(snap, metrics)}
        return algo, total, facts
    result = stickyflow.assign(snap, assignor)
    total = time.perf_counter() - t0
    facts = {"status": result.solver.status, "method": result.solver.method, "objective": result.solver.objective,
             "bound": result.solver.bound, "error": None if result.error == "NONE" else result.error,
             "reason": result.solver.reason}
    if case.kind == "consumer":
        facts.update(_metric_facts(snap, result.metrics))
    else:
        # cost: the KIP-925 cost of what runs, which the optimizer's proven bound is a bound on
        facts.update({k: result.metrics.get(k) for k in ("moves", "imbalance", "cross_rack", "cost")})
        facts["followup"] = result.followup_rebalance_deadline_ms is not None
    return total, total, facts


class _Unsupported(Exception):
    """A peer that cannot take this input at all (recorded as skipped, not as an error)."""


def _metric_facts(snap, metrics: dict) -> dict[str, Any]:
    cfg = snap.config
    cross = metrics.get("cross_rack")
    cost = cfg.non_overlap_cost * metrics["moves"] + (cfg.traffic_cost * cross if cross is not None else 0)
    return {"moves": metrics["moves"], "imbalance": metrics["imbalance"], "cross_rack": cross,
            "sumsq": metrics.get("sum_squared_loads"), "cost": cost}


def _vm_kib(field_name: str) -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field_name + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # resets the peak resident set size (Linux >= 4.0)
        return True
    except OSError:
        return False


def _peak_kib() -> int:
    peak = _vm_kib("VmHWM")
    if peak is None:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak)


def _measure(case: Case, snap, assignor: str, repeats: int, budget_s: float) -> dict[str, Any]:
    """In the child: repeated warm runs, then the peak memory of this process."""
    gc.collect()
    _reset_peak()
    base_kib = _vm_kib("VmRSS") or _peak_kib()
    walls, totals, facts = [], [], {}
    start = time.perf_counter()
    for k in range(max(1, repeats)):
        algo, total, facts = _one_run(case, snap, assignor)
        walls.append(algo)
        totals.append(total)
        if time.perf_counter() - start > budget_s:
            break
    peak_kib = _peak_kib()
    return {"wall_s": statistics.median(walls), "wall_min_s": min(walls), "wall_max_s": max(walls),
            "total_s": statistics.median(totals), "runs": len(walls),
            "peak_mib": round(peak_kib / 1024, 1), "extra_mib": round(max(0, peak_kib - base_kib) / 1024, 1),
            **facts}


def _in_child(fn: Callable[[], dict[str, Any]], timeout_s: float) -> dict[str, Any]:
    """Run ``fn`` in a forked child; its JSON answer, or ``{"status": "timeout"}`` / ``{"status": "error"}``."""
    if not hasattr(os, "fork"):  # pragma: no cover - non-POSIX: in-process, no timeout, no memory isolation
        try:
            return fn()
        except Exception as exc:
            return {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.flush()
    sys.stderr.flush()
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(rfd)
        try:
            out = fn()
        except _Unsupported as exc:
            out = {"status": "skipped", "error": f"unsupported: {str(exc)[:300]}"}
        except BaseException as exc:  # report, never raise out of a forked child
            out = {"status": "error", "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        data = json.dumps(out, default=_json_default).encode()
        with os.fdopen(wfd, "wb") as fh:
            fh.write(data)
        os._exit(0)
    os.close(wfd)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    timed_out = False
    with os.fdopen(rfd, "rb", buffering=0) as fh:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([fh], [], [], left)
            if not ready:
                continue
            chunk = fh.read(1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    if timed_out:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if timed_out:
        return {"status": "timeout", "error": f"no answer within {timeout_s:g} s"}
    try:
        return json.loads(b"".join(chunks))
    except ValueError:
        return {"status": "error", "error": f"the benchmark child died (wait status {status})"}


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    raise TypeError(type(obj).__name__)


# --------------------------------------------------------------------------- the suite

def _available(assignor: str, kind: str) -> str | None:
    """None when ``assignor`` can run on ``kind``, else why not."""
    if assignor.startswith("kp-"):
        if kind != "consumer":
            return "kafka-python has no Kafka Streams assignor"
        try:
            _peer_module()._kafka()
        except Exception as exc:
            return f"kafka-python peers unavailable ({type(exc).__name__}: {exc})"
        return None
    from stickyflow.registry import _REGISTRY

    spec = _REGISTRY.get((assignor, kind))
    if spec is None:
        return f"stickyflow has no {assignor!r} assignor for {kind}"
    try:
        spec.load()
    except (ImportError, AttributeError) as exc:
        return f"not available ({type(exc).__name__}: {str(exc)[:120]})"
    return None


def _build(case: Case):
    if case.kind == "consumer":
        return consumer_snapshot(case)
    from stickyflow.snapshot import parse_snapshot

    return parse_snapshot(streams_document(case))


def _warm_up(kinds: Iterable[str], assignors: Sequence[str]) -> None:
    """Import and exercise every backend once, so that no run pays for first-use imports."""
    for kind in kinds:
        case = (Case(kind=kind, size=20, members=4, event="join", subscriptions="mixed") if kind == "consumer"
                else Case(kind=kind, size=8, members=3, event="join", subscriptions="stateful"))
        try:
            snap = _build(case)
        except Exception:
            continue
        for a in assignors:
            if _available(a, kind) is None:
                try:
                    _one_run(case, snap, a)
                except Exception:
                    pass


def run_suite(cases: Sequence[Case], assignors: Sequence[str] = ASSIGNORS, *, repeats: int = 5,
              budget_s: float = 3.0, timeout_s: float = 300.0, log: Callable[[str], None] | None = None,
              progress: Callable[[list[dict[str, Any]]], None] | None = None) -> list[dict[str, Any]]:
    """Run every case through every assignor; one record per (case, assignor), gaps filled in.

    An assignor that timed out on a case is skipped, with a note, on the cases
    at least as large with the same subscriptions (and racks on or off).
    """
    log = log or (lambda s: None)
    kinds = sorted({c.kind for c in cases})
    _warm_up(kinds, assignors)
    records: list[dict[str, Any]] = []
    # (kind, assignor, subscriptions, racks?) -> the size it timed out at: larger cases are skipped
    gave_up: dict[tuple[str, str, str, bool], tuple[int, int]] = {}
    for case in cases:
        t_build = time.perf_counter()
        try:
            snap = _build(case)
        except Exception as exc:
            log(f"{case.name}: cannot build the input ({type(exc).__name__}: {exc})")
            for a in assignors:
                records.append(_record(case, a, {"status": "skipped", "error": f"no input: {exc}"}))
            continue
        build_s = time.perf_counter() - t_build
        bound_moves = min_moves_equal(snap) if case.kind == "consumer" else None
        case_records = []
        for a in assignors:
            why = _available(a, case.kind)
            key = (case.kind, a, case.subscriptions, bool(case.racks))
            if why is None and key in gave_up:
                size, members = gave_up[key]
                if case.size >= size and case.members >= members:
                    why = f"took over {timeout_s:g} s at {size:,} x {members:,}"
            if why:
                rec = {"status": "skipped", "error": why}
            else:
                rec = _in_child(lambda: _measure(case, snap, a, repeats, budget_s), timeout_s)
                if rec.get("status") == "timeout":
                    gave_up[key] = (case.size, case.members)
            r = _record(case, a, rec)
            r["build_s"] = round(build_s, 3)
            if bound_moves is not None:
                r["bound_moves"] = bound_moves
            case_records.append(r)
            log(_line(r))
        _fill_gaps(case_records)
        records.extend(case_records)
        if progress is not None:
            progress(records)
        del snap
        gc.collect()
    return records


def _record(case: Case, assignor: str, rec: dict[str, Any]) -> dict[str, Any]:
    return {"case": case.name, "kind": case.kind, "size": case.size, "members": case.members, "event": case.event,
            "subscriptions": case.subscriptions, "racks": case.racks, "per_topic": case.per_topic,
            "seed": case.seed, "assignor": assignor, **rec}


def _fill_gaps(recs: list[dict[str, Any]]) -> None:
    # the optimizer's proven bound (CP-SAT may stop at "feasible" with one), else its proven optimum
    opt = next((r for r in recs if r["assignor"] == "optimal"
                and (r.get("status") == "optimal" or r.get("bound") is not None)), None)
    for r in recs:
        if opt is not None and r.get("cost") is not None:
            r["bound_cost"] = opt["bound"] if opt.get("bound") is not None else opt["cost"]
            r["gap_cost"] = r["cost"] - r["bound_cost"]
            if opt.get("sumsq") is not None and r.get("sumsq") is not None:
                r["bound_sumsq"] = opt["sumsq"]
                r["gap_sumsq"] = r["sumsq"] - opt["sumsq"]
        if r.get("bound_moves") is not None and r.get("moves") is not None:
            r["gap_moves"] = r["moves"] - r["bound_moves"]


def _fmt_s(x: float | None) -> str:
    if x is None:
        return "-"
    if x < 1e-3:
        return f"{x * 1e6:.0f} µs"
    if x < 1:
        return f"{x * 1e3:.1f} ms" if x < 0.1 else f"{x * 1e3:.0f} ms"
    return f"{x:.2f} s" if x < 100 else f"{x:.0f} s"


def _line(r: dict[str, Any]) -> str:
    if r.get("status") in ("skipped", "timeout", "error"):
        return f"{r['case']:<44s} {r['assignor']:<14s} {r['status']}: {r.get('error')}"
    gap = r.get("gap_moves", r.get("gap_cost"))
    return (f"{r['case']:<44s} {r['assignor']:<14s} {_fmt_s(r['wall_s']):>9s} x{r['runs']}  "
            f"peak {r['peak_mib']:7.1f} MiB (+{r['extra_mib']:.1f})  moves {r.get('moves')}  "
            f"imbalance {r.get('imbalance')}  cross_rack {r.get('cross_rack')}  {r.get('status')}"
            + (f"  gap {gap}" if gap is not None else "")
            + (f"  ERROR {r['error']}" if r.get("error") else ""))


# --------------------------------------------------------------------------- outputs

def environment() -> dict[str, Any]:
    """Where the numbers come from: machine, Python and library versions."""
    import importlib.metadata as md

    versions = {}
    for pkg in ("stickyflow", "numpy", "ortools", "orjson", "kafka-python"):
        try:
            versions[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            versions[pkg] = None
    cpu = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"python": platform.python_version(), "platform": platform.platform(), "cpu": cpu,
            "cpus": os.cpu_count(), "versions": versions,
            "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def markdown_table(records: Sequence[dict[str, Any]], assignors: Sequence[str], *, what: str = "time") -> str:
    """One row per case, one column per assignor.

    ``what="time"``: median wall time and moves (plus imbalance when not the most
    balanced, cross-rack reads when racks are on); ``what="memory"``: peak
    resident memory of the run, and in brackets what it added to the input.
    """
    cases: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        cases.setdefault(r["case"], []).append(r)
    present = [a for a in assignors if any(r["assignor"] == a and r.get("status") != "skipped" for r in records)]
    head = "| case | least moves (or cost) | " + " | ".join(present) + " |"
    lines = [head, "|" + "---|" * (2 + len(present))]
    for name, recs in cases.items():
        r0 = recs[0]
        unit = " tasks" if r0["kind"] == "streams" else ""
        racks = f", {r0['racks']} racks" if r0.get("racks") else ""
        label = f"{r0['kind']} {r0['size']:,}{unit} x {r0['members']:,}, {r0['event']}, {r0['subscriptions']}{racks}"
        opt = next((r for r in recs if r["assignor"] == "optimal"), {})
        bound = "-"
        if r0.get("bound_moves") is not None:
            bound = f"{r0['bound_moves']:,}"
        elif opt.get("status") == "optimal":  # the proven optimum: moves, or the cost when racks count too
            bound = f"{opt['moves']:,}" if not opt.get("cross_rack") and not r0.get("racks") else f"cost {opt['cost']:,}"
        cells = []
        for a in present:
            r = next((x for x in recs if x["assignor"] == a), None)
            cells.append(_cell(r) if what == "time" else _mem_cell(r))
        lines.append(f"| {label} | {bound} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _mem_cell(r: dict[str, Any] | None) -> str:
    if r is None or r.get("peak_mib") is None:
        return "" if r is None else {"skipped": "n/a"}.get(r.get("status"), r.get("status") or "")
    return f"{r['peak_mib']:,.0f} ({r['extra_mib']:,.0f})"


def _cell(r: dict[str, Any] | None) -> str:
    if r is None:
        return ""
    st = r.get("status")
    if st == "skipped":
        return "n/a"
    if st == "timeout":
        return "timeout"
    if st == "error" or r.get("error"):
        return "error"
    out = f"{_fmt_s(r['wall_s'])}, {r['moves']:,} mv"
    if r.get("gap_sumsq"):
        out += f", imb {r['imbalance']}"
    if r.get("cross_rack"):
        out += f", {r['cross_rack']:,} xr"
    return out


def _short_n(n: int) -> str:
    return f"{n // 1_000_000}M" if n >= 1_000_000 and n % 1_000_000 == 0 else (
        f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else str(n))


def plot(records: Sequence[dict[str, Any]], path: Path, assignors: Sequence[str]) -> Path | None:
    """Median wall time (ms) against size, one panel per (kind, subscriptions, event), one line per assignor
    (no racks). A panel with a single size is a bar per assignor instead of a one-point line; log axes only
    where the values span enough, with plain tick labels (ms)."""
    try:
        from .report_base import _color, _from_zero, _log_axis, _marker, _pyplot
        plt = _pyplot()
    except Exception:  # noqa: BLE001 - no matplotlib: no plot
        return None
    panels = sorted({(r["kind"], r["subscriptions"], r["event"]) for r in records},
                    key=lambda k: (k[0], k[1], EVENTS.index(k[2]) if k[2] in EVENTS else 9))
    if not panels:
        return None
    cols = min(3, len(panels))
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.9 * rows), squeeze=False)
    for ax, (kind, subs, event) in zip(axes.flat, panels):
        mine = [r for r in records if (r["kind"], r["subscriptions"], r["event"]) == (kind, subs, event)
                and r.get("wall_s") is not None and not r.get("error") and not r.get("racks")]
        sizes = sorted({(r["size"], r["members"]) for r in mine})
        unit = "tasks x clients" if kind == "streams" else "partitions x members"
        ax.set_title(f"{kind}: {subs} subscriptions, {event}" if kind == "consumer" else f"{kind}: {subs}, {event}",
                     fontsize=10)
        ax.set_ylabel("wall time per solve (ms, median)")
        ax.grid(True, alpha=0.3)
        if len(sizes) == 1:
            names = [a for a in assignors if any(r["assignor"] == a for r in mine)]
            ms = [1000 * next(r["wall_s"] for r in mine if r["assignor"] == a) for a in names]
            ax.bar(range(len(names)), ms, color=[_color(a) for a in names])
            ax.set_xticks(range(len(names)), names, rotation=30, fontsize=8, ha="right")
            p, m = sizes[0]
            ax.set_xlabel(f"assignor ({unit}: {_short_n(p)} x {_short_n(m)})")
            if ms and min(ms) > 0 and max(ms) >= 30 * min(ms):
                _log_axis(ax, "y")
            else:
                _from_zero(ax, ms)
            continue
        ys: list[float] = []
        for a in assignors:
            pts = sorted((r["size"] * r["members"], 1000 * r["wall_s"]) for r in mine if r["assignor"] == a)
            if not pts:
                continue
            ys += [p[1] for p in pts]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=_marker(a), color=_color(a), label=a,
                    linestyle="--" if a.startswith("kp-") else "-")
        ax.set_xscale("log")
        ax.set_xticks([p * m for p, m in sizes], [f"{_short_n(p)}x{_short_n(m)}" for p, m in sizes],
                      rotation=30, fontsize=7)
        ax.xaxis.set_minor_locator(plt.NullLocator())
        ax.set_xlabel(unit)
        if ys and min(ys) > 0 and max(ys) >= 30 * min(ys):
            _log_axis(ax, "y")
        else:
            _from_zero(ax, ys)
        if len(ax.get_legend_handles_labels()[1]) > 1:
            ax.legend(fontsize=7, title="assignor", title_fontsize=7)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# --------------------------------------------------------------------------- the goals

@dataclass(slots=True)
class Goal:
    name: str
    passed: bool | None
    detail: str
    numbers: dict[str, Any] = field(default_factory=dict)


def run_goals(out_dir: Path, *, repeats: int = 5, log: Callable[[str], None] = print,
              per_topic: int = 2000, skip_peer: bool = False, timeout_s: float = 1800.0) -> list[Goal]:
    """Measure the issue's speed goals on this machine; each line says pass or fail with the numbers."""
    goals: list[Goal] = []
    _warm_up(["consumer"], ["optimal"])

    def run(case: Case, assignor: str, reps: int = repeats) -> dict[str, Any]:
        snap = consumer_snapshot(case)
        rec = _in_child(lambda: _measure(case, snap, assignor, reps, 30.0), timeout_s)
        rec["bound_moves"] = min_moves_equal(snap)
        return rec

    # 1. equal, 1M x 2000, 10% join: <= 1 s, optimal moves
    for pt in sorted({per_topic, 1_000_000}):
        c = Case(kind="consumer", size=1_000_000, members=2_000, event="join", subscriptions="equal", per_topic=pt)
        r = run(c, "optimal")
        ok = r.get("wall_s") is not None and r["wall_s"] <= 1.0 and r.get("moves") == r["bound_moves"]
        goals.append(Goal(f"equal 1,000,000 x 2,000 join ({_topics_label(c)}): <= 1 s, optimal moves", ok,
                          f"{_fmt_s(r.get('wall_s'))}, moves {r.get('moves')} (least possible {r['bound_moves']}), "
                          f"peak {r.get('peak_mib')} MiB", r))
        log(_goal_line(goals[-1]))
    # 2. equal, 10k x 100, 10% join: <= 30 ms
    for pt in sorted({per_topic, 10_000}):
        c = Case(kind="consumer", size=10_000, members=100, event="join", subscriptions="equal", per_topic=pt)
        r = run(c, "optimal", max(repeats, 21))
        ok = r.get("wall_s") is not None and r["wall_s"] <= 0.030 and r.get("moves") == r["bound_moves"]
        goals.append(Goal(f"equal 10,000 x 100 join ({_topics_label(c)}): <= 30 ms", ok,
                          f"{_fmt_s(r.get('wall_s'))} (median of {r.get('runs')}), moves {r.get('moves')}", r))
        log(_goal_line(goals[-1]))
    # 3. mixed, 10% join: <= 3 s, proven optimal (1M x 2000, and 10k x 100)
    for size, members in ((1_000_000, 2_000), (10_000, 100)):
        c = Case(kind="consumer", size=size, members=members, event="join", subscriptions="mixed",
                 per_topic=per_topic)
        r = run(c, "optimal", 3 if size > 100_000 else repeats)
        ok = r.get("wall_s") is not None and r["wall_s"] <= 3.0 and r.get("status") == "optimal"
        goals.append(Goal(f"mixed {size:,} x {members:,} join ({_topics_label(c)}, 8 profiles): <= 3 s, proven optimal",
                          ok, f"{_fmt_s(r.get('wall_s'))}, status {r.get('status')}, moves {r.get('moves')}, "
                              f"peak {r.get('peak_mib')} MiB", r))
        log(_goal_line(goals[-1]))
    # 4. 10k x 1000 equal: >= 100x faster than kafka-python's sticky, no more moves
    c = Case(kind="consumer", size=10_000, members=1_000, event="join", subscriptions="equal", per_topic=per_topic)
    mine = run(c, "optimal")
    if skip_peer or _available("kp-sticky", "consumer"):
        goals.append(Goal("equal 10,000 x 1,000 join: >= 100x faster than kafka-python sticky, no more moves", None,
                          f"optimal {_fmt_s(mine.get('wall_s'))}; kafka-python not run", {"optimal": mine}))
    else:
        peer = run(c, "kp-sticky", 1)
        if peer.get("wall_s"):
            speedup = peer["wall_s"] / mine["wall_s"]
            ok = speedup >= 100 and mine["moves"] <= peer["moves"]
            detail = (f"optimal {_fmt_s(mine['wall_s'])} / {mine['moves']} moves; kafka-python sticky "
                      f"{_fmt_s(peer['wall_s'])} / {peer['moves']} moves: {speedup:,.0f}x")
        else:
            ok, detail = False, f"kafka-python sticky: {peer.get('status')} {peer.get('error')}"
        goals.append(Goal("equal 10,000 x 1,000 join: >= 100x faster than kafka-python sticky, no more moves", ok,
                          detail, {"optimal": mine, "kp-sticky": peer}))
    log(_goal_line(goals[-1]))
    # 5. the whole `stickyflow solve` process on the 1M x 2000 snapshot file
    c = Case(kind="consumer", size=1_000_000, members=2_000, event="join", subscriptions="equal", per_topic=per_topic)
    r = solve_process(c, out_dir)
    ok = r["exit"] == 0 and r["wall_s"] <= 10.0 and r["peak_mib"] <= 2048
    goals.append(Goal(f"`stickyflow solve` process, equal 1,000,000 x 2,000 join ({_topics_label(c)}), JSON in and out:"
                      " <= 10 s, <= 2 GiB", ok,
                      f"{r['wall_s']:.2f} s, peak {r['peak_mib']:.0f} MiB, exit {r['exit']} "
                      f"(snapshot {r['snapshot_mib']:.1f} MiB, result {r['result_mib']:.1f} MiB)", r))
    log(_goal_line(goals[-1]))
    return goals


def _topics_label(c: Case) -> str:
    t = topic_count(c)
    return f"{t} topic{'s' if t > 1 else ''} of {c.size // t:,}"


def _goal_line(g: Goal) -> str:
    mark = {True: "PASS", False: "FAIL", None: "SKIP"}[g.passed]
    return f"[{mark}] {g.name}: {g.detail}"


def solve_process(case: Case, out_dir: Path) -> dict[str, Any]:
    """Write the case as a snapshot file and time a fresh ``stickyflow solve`` process on it (wall, peak RSS)."""
    import subprocess

    from stickyflow.consumer import consumer_to_json
    from stickyflow import _jsonio

    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{case.name}.json"
    result = out_dir / f"{case.name}.result.json"
    if not path.exists():
        path.write_bytes(_jsonio.dumps(consumer_to_json(consumer_snapshot(case))))
    cmd = [sys.executable, "-c", "import sys; from stickyflow.adapters.cli import main; sys.exit(main())",
           "solve", str(path), "-o", str(result), "--compact"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    return {"command": "stickyflow solve " + " ".join(cmd[4:]), "exit": proc.returncode, "wall_s": wall,
            "peak_mib": usage.ru_maxrss / 1024, "snapshot_mib": path.stat().st_size / 2**20,
            "result_mib": result.stat().st_size / 2**20 if result.exists() else 0.0, "stderr": err[-500:]}


# --------------------------------------------------------------------------- the command

def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``stickyflow bench`` on the CLI's subparsers."""
    b = subparsers.add_parser("bench", help="benchmark the assignors against kafka-python's at scale",
                              description="Benchmark stickyflow's assignors against kafka-python's on seeded cases.")
    b.add_argument("--quick", action="store_true", help="a small smoke run (well under a minute)")
    b.add_argument("--goals", action="store_true", help="measure the issue's speed goals (pass/fail) instead")
    b.add_argument("--kinds", default="consumer,streams", help="consumer,streams (default both)")
    b.add_argument("--sizes", default=None,
                   help="consumer sizes as PARTITIONSxMEMBERS,... (default: the suite's; --quick: 100x10,1000x50)")
    b.add_argument("--streams-sizes", default=None, help="streams sizes as TASKSxCLIENTS,...")
    b.add_argument("--events", default=",".join(EVENTS), help="fresh,join,leave")
    b.add_argument("--subscriptions", default=",".join(SUBSCRIPTIONS), help="equal,mixed")
    b.add_argument("--assignors", default=",".join(ASSIGNORS), help="which assignors (default all)")
    b.add_argument("--racks", default="0",
                   help="rack counts to run, e.g. 0,3 (members and 2 replicas per partition spread over them; 0: none)")
    b.add_argument("--per-topic", type=int, default=2000, help="partitions per topic (default 2000)")
    b.add_argument("--repeats", type=int, default=None, help="runs per measurement; the median is kept (default 5)")
    b.add_argument("--budget", type=float, default=3.0, help="stop repeating once this many seconds are spent")
    b.add_argument("--timeout", type=float, default=None, help="give up on one (case, assignor) after this many seconds")
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--out", default="bench-results", help="output folder (default bench-results/)")
    b.add_argument("--no-plot", action="store_true")
    b.add_argument("--from-json", default=None, metavar="FILE",
                   help="do not run: write the table and plot again from a bench JSON file")
    b.set_defaults(func=_cmd_bench)
    return b


def _sizes(text: str | None, default: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    if not text:
        return list(default)
    out = []
    for part in text.split(","):
        a, _, b = part.strip().lower().replace("_", "").partition("x")
        out.append((int(a), int(b)))
    return out


def _write_outputs(out: Path, doc: dict[str, Any], assignors: Sequence[str], log: Callable[[str], None], *,
                   plot_too: bool) -> None:
    """``bench-MODE.json``, ``.md`` (time and memory tables) and ``.png`` in ``out``."""
    mode, records, command = doc.get("mode", "full"), doc["records"], doc.get("command", "stickyflow bench")
    json_path = out / f"bench-{mode}.json"
    json_path.write_text(json.dumps(doc, indent=1, default=_json_default))
    table = markdown_table(records, assignors)
    memory = markdown_table(records, assignors, what="memory")
    env = doc.get("environment", {})
    (out / f"bench-{mode}.md").write_text(
        f"Command: `{command}` ({env.get('cpu')}, {env.get('cpus')} CPUs, Python {env.get('python')}, "
        f"{doc.get('elapsed_s', '?')} s)\n\nMedian wall time and moves:\n\n{table}\n\n"
        f"Peak resident memory in MiB (in brackets: above the process holding the input):\n\n{memory}\n")
    log("")
    log(table)
    log(f"\nwrote {json_path} and {out / f'bench-{mode}.md'}")
    if plot_too:
        png = plot(records, out / f"bench-{mode}.png", assignors)
        if png:
            log(f"wrote {png}")


def _command_line(args: argparse.Namespace) -> str:
    """The command that reproduces this run: ``stickyflow bench`` and every option not left at its default."""
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    defaults = vars(parser.parse_args(["bench"]))
    words = ["stickyflow", "bench"]
    for key, value in vars(args).items():
        if key in defaults and key not in ("func", "command") and value != defaults[key]:
            flag = "--" + key.replace("_", "-")
            words += [flag] if value is True else [flag, str(value)]
    return " ".join(words)


def _ints(text: str) -> list[int]:
    return [int(x) for x in str(text).split(",") if x.strip()]


def _cmd_bench(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = lambda s: print(s, flush=True)  # noqa: E731
    command = _command_line(args)
    if args.goals:
        goals = run_goals(out, repeats=args.repeats or 5, log=log, per_topic=args.per_topic,
                          timeout_s=args.timeout or 1800.0)
        doc = {"command": command, "environment": environment(),
               "goals": [{"name": g.name, "passed": g.passed, "detail": g.detail, "numbers": g.numbers}
                         for g in goals]}
        (out / "goals.json").write_text(json.dumps(doc, indent=2, default=_json_default))
        log(f"wrote {out / 'goals.json'}")
        return 0 if all(g.passed is not False for g in goals) else 1
    if args.from_json:
        doc = json.loads(Path(args.from_json).read_text())
        _write_outputs(out, doc, [a.strip() for a in args.assignors.split(",") if a.strip()], log,
                       plot_too=not args.no_plot)
        return 0
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    events = [e.strip() for e in args.events.split(",") if e.strip()]
    subs = [s.strip() for s in args.subscriptions.split(",") if s.strip()]
    assignors = [a.strip() for a in args.assignors.split(",") if a.strip()]
    unknown = [a for a in assignors if a not in ASSIGNORS]
    if unknown:
        print(f"stickyflow: --assignors: unknown {', '.join(unknown)} (known: {', '.join(ASSIGNORS)})", file=sys.stderr)
        return 2
    cases: list[Case] = []
    if "consumer" in kinds:
        sizes = _sizes(args.sizes, QUICK_CONSUMER_SIZES if args.quick else FULL_CONSUMER_SIZES)
        for racks in _ints(args.racks):
            cases += consumer_cases(sizes, events, [s for s in subs if s in SUBSCRIPTIONS], racks=racks,
                                    per_topic=args.per_topic, seed=args.seed)
    if "streams" in kinds:
        ssizes = _sizes(args.streams_sizes, QUICK_STREAMS_SIZES if args.quick else FULL_STREAMS_SIZES)
        cases += streams_cases(ssizes, events, seed=args.seed)
    repeats = args.repeats or (3 if args.quick else 5)
    timeout = args.timeout or (20.0 if args.quick else 300.0)
    t0 = time.perf_counter()
    mode = "quick" if args.quick else "full"
    partial = out / f"bench-{mode}.partial.json"

    def save(records: list[dict[str, Any]]) -> None:  # a long run keeps what it measured so far
        partial.write_text(json.dumps({"command": command, "mode": mode, "records": records}, default=_json_default))

    records = run_suite(cases, assignors, repeats=repeats, budget_s=args.budget, timeout_s=timeout, log=log,
                        progress=save)
    partial.unlink(missing_ok=True)
    doc = {"command": command, "environment": environment(), "mode": mode, "repeats": repeats,
           "timeout_s": timeout, "elapsed_s": round(time.perf_counter() - t0, 1), "records": records}
    _write_outputs(out, doc, assignors, log, plot_too=not args.no_plot)
    bad = [r for r in records if r["assignor"] in STICKYFLOW_ASSIGNORS and r.get("status") == "error"]
    return 1 if bad else 0
