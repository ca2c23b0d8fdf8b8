"""``stickyflow capture --rates SECONDS``: the rate each partition is written at, from its log-end offset.

Every partition of the topics the captured consumer groups read has its log-end offset read twice, ``SECONDS``
apart (one ListOffsets request for all of them each time); a partition's rate is the offsets it advanced over the
seconds between the two reads (each read's moment is the middle of its request), in **records/s** (offsets
taken by transaction markers count as records). A partition whose offset went back (the topic was deleted and
made again, or truncated) gets 0 and a note. The rates land in each consumer snapshot's ``topics.*.rates``
(:doc:`balance by load <load>`); Streams snapshots are left as they are. The snapshot's ``config`` is not
changed: to balance by load, set ``"balance": "load"`` in it.

>>> ticks = iter([0.0, 0.2, 5.0, 5.2])
>>> reads = iter([{("t", 0): 100, ("t", 1): 7}, {("t", 0): 600, ("t", 1): 7}])
>>> measure_rates(lambda tps: next(reads), [("t", 0), ("t", 1)], 5.0, sleep=lambda s: None,
...               clock=lambda: next(ticks))
({('t', 0): 100.0, ('t', 1): 0.0}, {})
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Callable, Iterable, Mapping, Sequence

__all__ = ["measure_rates", "log_end_offsets", "with_measured_rates"]


def log_end_offsets(admin: Any, tps: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """Every partition's log-end offset now (one ListOffsets request through kafka-python's admin client)."""
    from kafka import TopicPartition
    from kafka.protocol.consumer import OffsetSpec

    got = admin.list_partition_offsets({TopicPartition(t, p): OffsetSpec.LATEST for t, p in tps})
    return {(tp.topic, tp.partition): int(o.offset) for tp, o in got.items()}


def measure_rates(read: Callable[[list[tuple[str, int]]], Mapping[tuple[str, int], int]],
                  tps: Iterable[tuple[str, int]], seconds: float, *, sleep: Callable[[float], None] = time.sleep,
                  clock: Callable[[], float] = time.monotonic) -> tuple[dict[tuple[str, int], float], dict[tuple[str, int], str]]:
    """``(rates, notes)``: records/s per partition from two ``read``s of its log-end offset ``seconds`` apart,
    and a note for each partition whose rate could not be measured (it is then 0)."""
    tps = sorted(set(tps))
    t0 = clock()
    first = read(tps)
    t1 = clock()
    sleep(seconds)
    t2 = clock()
    second = read(tps)
    t3 = clock()
    elapsed = max((t2 + t3) / 2 - (t0 + t1) / 2, 1e-9)
    rates: dict[tuple[str, int], float] = {}
    notes: dict[tuple[str, int], str] = {}
    for tp in tps:
        a, b = first.get(tp), second.get(tp)
        if a is None or b is None or a < 0 or b < 0:
            rates[tp] = 0.0
            notes[tp] = f"partition {tp[0]}-{tp[1]}: no log-end offset read; rate 0"
        elif b < a:
            rates[tp] = 0.0
            notes[tp] = f"partition {tp[0]}-{tp[1]}: its log-end offset went back ({a} -> {b}); rate 0"
        else:
            rates[tp] = (b - a) / elapsed
    return rates, notes


def with_measured_rates(groups: Sequence[Any], read: Callable[[list[tuple[str, int]]], Mapping], seconds: float,
                        **timing: Any) -> list[Any]:
    """``groups`` (:class:`~stickyflow.adapters.capture.CapturedGroup`) with ``rates`` in every consumer snapshot
    (one measurement for all of them) and a note saying how they were measured."""
    import stickyflow

    def consumer(g: Any) -> bool:
        return g.snapshot is not None and g.snapshot.get("kind") == "consumer"

    tps = {(t, p) for g in groups if consumer(g) for t, spec in g.snapshot["topics"].items()
           for p in range(spec["partitions"])}
    if not tps:
        return list(groups)
    rates, notes = measure_rates(read, tps, seconds, **timing)
    out = []
    for g in groups:
        if not consumer(g):
            out.append(g)
            continue
        doc = dict(g.snapshot, topics={
            t: dict(spec, rates=[round(rates[(t, p)], 6) for p in range(spec["partitions"])])
            for t, spec in g.snapshot["topics"].items()})
        stickyflow.parse_snapshot(doc)  # what we write must read back
        mine = [text for (t, _), text in sorted(notes.items()) if t in doc["topics"]]
        out.append(replace(g, snapshot=doc, notes=tuple(g.notes) + tuple(mine) + (
            f"rates: records/s written, from log-end offsets read {seconds:g} s apart",)))
    return out
