"""Reading a Streams snapshot's tasks, clients and config: the readers behind :func:`stickyflow.model.streams.parse_streams`.

Each names the field of every problem it finds and states the rule (see
:class:`stickyflow.check.input.Checker`); the tuples they return are the model's.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Mapping

from ..check.input import Checker, is_int, join
from .streams import (EMPTY, LATEST_OFFSET, REBALANCING_MODES, STRATEGIES, Client, StreamsConfig, Task,
                      TopicPartitionRef, parse_task_id)

__all__ = ["parse_tasks", "parse_clients", "parse_config"]

_TASK_KEYS = frozenset({"id", "stateful", "end_offset_sum", "input_partitions", "changelog_partitions"})
_CLIENT_KEYS = frozenset({"process_id", "threads", "rack", "tags", "previous_active", "previous_standby", "lags"})
_PARTITION_KEYS = frozenset({"topic", "partition", "racks"})
_CONFIG_KEYS = frozenset(StreamsConfig().to_json())


def _parse_partitions(spec: Mapping[str, Any], key: str, path: str, chk: Checker,
                      interned: dict) -> tuple[TopicPartitionRef, ...]:
    raw = chk.array(spec, key, path, required=False)
    if not raw:
        return ()
    out = []
    for ppath, p, _ in chk.entries(raw, f"{path}.{key}", _PARTITION_KEYS, where=f"tasks[*].{key}[*]"):
        topic = chk.string(p, "topic", ppath)
        part = chk.integer(p, "partition", ppath, minimum=0)
        racks_raw = p.get("racks")  # absent or null: unknown
        racks = None
        if racks_raw is not None:
            if not isinstance(racks_raw, list) or not all(isinstance(r, str) for r in racks_raw):
                chk.fail(f"{ppath}.racks", "must be an array of rack names (strings)")
            else:
                key_ = tuple(racks_raw)
                racks = interned.get(key_)
                if racks is None:
                    racks = interned[key_] = frozenset(racks_raw)
        if topic is not None and part is not None:
            out.append(TopicPartitionRef(topic=topic, partition=part, racks=racks))
    return tuple(out)


def parse_tasks(doc: Mapping[str, Any], chk: Checker) -> tuple[Task, ...]:
    raw = chk.array(doc, "tasks", "")
    if raw is None:
        return ()
    tasks: list[Task] = []
    seen: set[str] = set()
    interned: dict = {}
    for i, t in enumerate(raw):
        path = f"tasks[{i}]"
        if not isinstance(t, dict):
            chk.fail(path, "must be an object")
            continue
        chk.extra_keys(t, _TASK_KEYS, path, "tasks[*]")
        tid = chk.string(t, "id", path)
        if tid is not None:
            if parse_task_id(tid) is None:
                chk.fail(f"{path}.id", 'must be a TaskId "<subtopology>_<partition>" (two non-negative integers), '
                                       f'not "{tid}"')
                tid = None
            elif tid in seen:
                chk.fail(f"{path}.id", f'must be unique ("{tid}" appears twice)')
            else:
                seen.add(tid)
        stateful = chk.boolean(t, "stateful", path)
        eos = chk.integer(t, "end_offset_sum", path, required=False, minimum=0, default=0)
        inputs = _parse_partitions(t, "input_partitions", path, chk, interned)
        changelogs = _parse_partitions(t, "changelog_partitions", path, chk, interned)
        if tid is None or stateful is None:
            continue
        tasks.append(Task(id=tid, stateful=stateful, end_offset_sum=eos or 0,
                          input_partitions=inputs, changelog_partitions=changelogs))
    return tuple(tasks)


def parse_clients(doc: Mapping[str, Any], chk: Checker) -> tuple[Client, ...]:
    raw = chk.array(doc, "clients", "")
    if raw is None:
        return ()
    clients: list[Client] = []
    for path, c, pid in chk.entries(raw, "clients", _CLIENT_KEYS, "process_id"):
        threads = chk.integer(c, "threads", path, required=False, minimum=1, default=1)
        rack = chk.string(c, "rack", path, required=False, allow_null=True)
        tags_raw = chk.obj(c, "tags", path, required=False)
        tags: dict[str, str] = {}
        if tags_raw:
            for k, v in tags_raw.items():
                if not isinstance(v, str):
                    chk.fail(join(f"{path}.tags", k), "must be a string")
                else:
                    tags[k] = v
        prev_active = chk.string_list(c, "previous_active", path)
        prev_standby = chk.string_list(c, "previous_standby", path)
        lags_raw = chk.obj(c, "lags", path, required=False)
        lags: dict[str, int] = {}
        running: set[str] = set()
        if lags_raw:
            for k, v in lags_raw.items():
                if not is_int(v) or (v < 0 and v != LATEST_OFFSET):
                    chk.fail(join(f"{path}.lags", k), "must be an integer >= 0, or -2 (was running it)")
                elif v == LATEST_OFFSET:
                    running.add(k)
                else:
                    lags[k] = v
        # a previous active task absent from lags has lag -2; one with a reported lag keeps it
        running.update(t for t in (prev_active or ()) if t not in lags)
        if pid is None or prev_active is None or prev_standby is None:
            continue
        clients.append(Client(
            process_id=pid,
            threads=threads or 1,
            rack=rack,
            tags=MappingProxyType(tags) if tags else EMPTY,
            previous_active=tuple(dict.fromkeys(prev_active)),
            previous_standby=tuple(dict.fromkeys(prev_standby)),
            lags=MappingProxyType(lags) if lags else EMPTY,
            running=frozenset(running),
        ))
    return tuple(clients)


def parse_config(doc: Mapping[str, Any], chk: Checker) -> StreamsConfig:
    raw = chk.obj(doc, "config", "", required=False)
    if raw is None:
        return StreamsConfig()
    chk.unknown_keys(raw, _CONFIG_KEYS, "config")
    d = StreamsConfig()
    c = "config"
    arl = chk.integer(raw, "acceptable_recovery_lag", c, required=False, minimum=0, default=d.acceptable_recovery_lag)
    mwr = chk.integer(raw, "max_warmup_replicas", c, required=False, minimum=1, default=d.max_warmup_replicas)
    nsr = chk.integer(raw, "num_standby_replicas", c, required=False, minimum=0, default=d.num_standby_replicas)
    pri = chk.integer(raw, "probing_rebalance_interval_ms", c, required=False, minimum=60000,
                      default=d.probing_rebalance_interval_ms)
    bf = chk.integer(raw, "balance_factor", c, required=False, minimum=1, default=d.balance_factor)
    strategy = chk.choice(raw, "rack_aware_assignment_strategy", c, STRATEGIES, default="none")
    traffic = chk.integer(raw, "rack_aware_assignment_traffic_cost", c, required=False, minimum=0, allow_null=True)
    overlap = chk.integer(raw, "rack_aware_assignment_non_overlap_cost", c, required=False, minimum=0,
                          allow_null=True)
    tags = chk.string_list(raw, "rack_aware_assignment_tags", c, required=False) or []
    mode = chk.choice(raw, "rebalancing_mode", c, REBALANCING_MODES, default="warmup")
    return StreamsConfig(
        acceptable_recovery_lag=arl, max_warmup_replicas=mwr, num_standby_replicas=nsr,
        probing_rebalance_interval_ms=pri, balance_factor=bf, rack_aware_assignment_strategy=strategy,
        rack_aware_assignment_traffic_cost=traffic, rack_aware_assignment_non_overlap_cost=overlap,
        rack_aware_assignment_tags=tuple(dict.fromkeys(tags)), rebalancing_mode=mode)
