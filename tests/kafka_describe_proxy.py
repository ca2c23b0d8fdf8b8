"""Tansu behind a loopback proxy that completes DescribeGroups and ListGroups as Apache Kafka answers them.

Why: Tansu, the Kafka-protocol broker the live tests run (``tests/kafka_coordinator.py``), coordinates
groups correctly but answers DescribeGroups with every member's ``member_metadata`` and
``member_assignment`` empty (and no client id, host or protocol name), and ListGroups with no groups.
Apache Kafka returns, for each member, the bytes the member sent in its JoinGroup (the metadata of the
protocol the group chose) and the bytes the leader assigned it in SyncGroup; no Apache Kafka broker can
be installed here from the package registries.

What: Tansu listens on one loopback port and advertises another, where this proxy listens; every client
(members, admin) thus talks to the proxy, which forwards every frame unchanged except two answers. It
records, per group and member id, the metadata of the chosen protocol from each JoinGroup (request and
response together) and the assignment from each SyncGroup response; in a DescribeGroups response it
fills, for the members Tansu lists (Tansu still decides who is in the group), exactly those bytes, the
client id and host, and the protocol name; in an empty ListGroups response it lists the groups seen
joining. Nothing is invented: each byte comes from the member that sent it, as Kafka's coordinator keeps
them. :mod:`stickyflow.adapters.capture` talks to it as to any broker.
"""

from __future__ import annotations

import socket
import struct
import subprocess
import threading
import time
from typing import Any

from tests import kafka_coordinator as kc

JOIN_GROUP, SYNC_GROUP, DESCRIBE_GROUPS, LIST_GROUPS = 11, 14, 15, 16


def _raw(value: Any) -> bytes:
    if value is None:
        return b""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return bytes(value.encode())  # kafka-python decoded it into an ApiData: its own bytes again


def _recv_exact(sock: socket.socket, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def _frames(sock: socket.socket):
    while True:
        head = _recv_exact(sock, 4)
        if head is None:
            return
        body = _recv_exact(sock, struct.unpack(">i", head)[0])
        if body is None:
            return
        yield body


class GroupMemory:
    """What Apache Kafka's coordinator keeps per member: chosen protocol's metadata, assignment, client."""

    def __init__(self):
        self.lock = threading.Lock()
        self.members: dict[tuple[str, str], dict[str, Any]] = {}
        self.groups: dict[str, dict[str, Any]] = {}

    def joined(self, request: Any, response: Any, client_host: str) -> None:
        if response.error_code or not response.member_id:
            return
        chosen = response.protocol_name
        metadata = next((_raw(p.metadata) for p in request.protocols if p.name == chosen), b"")
        with self.lock:
            self.groups[request.group_id] = {"protocol_type": request.protocol_type, "protocol": chosen}
            entry = self.members.setdefault((request.group_id, response.member_id), {})
            entry.update(metadata=metadata, client_id=request.header.client_id or "", client_host=client_host)
            entry.pop("assignment", None)  # a new generation: the old assignment no longer holds

    def synced(self, request: Any, response: Any) -> None:
        if response.error_code:
            return
        with self.lock:
            entry = self.members.setdefault((request.group_id, request.member_id), {})
            entry["assignment"] = _raw(response.assignment)

    def fill(self, response: Any) -> None:
        with self.lock:
            for group in response.groups:
                known = self.groups.get(group.group_id, {})
                if not group.protocol_data and known.get("protocol"):
                    group.protocol_data = known["protocol"]
                for m in group.members:
                    entry = self.members.get((group.group_id, m.member_id), {})
                    if not m.member_metadata:
                        m.member_metadata = entry.get("metadata", b"")
                    if not m.member_assignment:
                        m.member_assignment = entry.get("assignment", b"")
                    if not m.client_id:
                        m.client_id = entry.get("client_id", "")
                    if not m.client_host:
                        m.client_host = entry.get("client_host", "")

    def listed(self, response: Any) -> None:
        if response.groups:
            return
        from kafka.protocol.admin import ListGroupsResponse

        cls = ListGroupsResponse.ListedGroup
        with self.lock:
            response.groups = [cls(group_id=g, protocol_type=v["protocol_type"], version=response.version)
                               for g, v in sorted(self.groups.items())]


class DescribeProxy:
    """Forwards 127.0.0.1:``port`` to 127.0.0.1:``upstream``, completing DescribeGroups and ListGroups."""

    def __init__(self, port: int, upstream: int):
        self.port, self.upstream = port, upstream
        self.memory = GroupMemory()
        self.server = socket.create_server(("127.0.0.1", port))
        self._stop = threading.Event()
        self._socks: list[socket.socket] = []
        self.errors: list[str] = []
        threading.Thread(target=self._accept, daemon=True, name="describe-proxy").start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, addr = self.server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream))
            except OSError:
                client.close()
                continue
            self._socks += [client, upstream]
            pending: dict[int, tuple[int, int, bytes]] = {}
            host = f"/{addr[0]}"
            threading.Thread(target=self._requests, args=(client, upstream, pending), daemon=True).start()
            threading.Thread(target=self._responses, args=(upstream, client, pending, host), daemon=True).start()

    def _requests(self, client, upstream, pending) -> None:
        try:
            for body in _frames(client):
                key, version, correlation = struct.unpack(">hhi", body[:8])
                if key in (JOIN_GROUP, SYNC_GROUP, DESCRIBE_GROUPS, LIST_GROUPS):
                    pending[correlation] = (key, version, body)
                upstream.sendall(struct.pack(">i", len(body)) + body)
        except OSError:
            pass
        finally:
            _close(upstream)

    def _responses(self, upstream, client, pending, host) -> None:
        try:
            for body in _frames(upstream):
                (correlation,) = struct.unpack(">i", body[:4])
                job = pending.pop(correlation, None)
                if job is not None:
                    try:
                        body = self._complete(job, body, host)
                    except Exception as exc:  # never break the stream: forward Tansu's answer as it was
                        self.errors.append(f"{type(exc).__name__}: {exc}")
                client.sendall(struct.pack(">i", len(body)) + body)
        except OSError:
            pass
        finally:
            _close(client)

    def _complete(self, job: tuple[int, int, bytes], body: bytes, host: str) -> bytes:
        from kafka.protocol.admin import DescribeGroupsResponse, ListGroupsResponse
        from kafka.protocol.consumer.group import (JoinGroupRequest, JoinGroupResponse, SyncGroupRequest,
                                                   SyncGroupResponse)

        key, version, request_body = job
        if key == JOIN_GROUP:
            self.memory.joined(JoinGroupRequest.decode(request_body, version=version, header=True),
                               JoinGroupResponse.decode(body, version=version, header=True), host)
            return body
        if key == SYNC_GROUP:
            self.memory.synced(SyncGroupRequest.decode(request_body, version=version, header=True),
                               SyncGroupResponse.decode(body, version=version, header=True))
            return body
        cls = DescribeGroupsResponse if key == DESCRIBE_GROUPS else ListGroupsResponse
        response = cls.decode(body, version=version, header=True)
        (self.memory.fill if key == DESCRIBE_GROUPS else self.memory.listed)(response)
        response._version = version  # (encode(version=...) would stamp it into the header, which a response's lacks)
        return bytes(response.encode(header=True))

    def close(self) -> None:
        self._stop.set()
        _close(self.server)
        for s in self._socks:
            _close(s)


def _close(sock: socket.socket) -> None:
    try:
        sock.close()
    except OSError:
        pass


class DescribingCoordinator(kc.Coordinator):
    """Tansu advertising the proxy's port; ``bootstrap`` is the proxy. Stops both."""

    proxy: DescribeProxy | None = None

    def start(self) -> "DescribingCoordinator":
        binary = kc.tansu_binary()
        for _attempt in range(3):
            tansu_port, self.port = kc._free_port(), kc._free_port()
            try:
                self.process = subprocess.Popen(
                    [binary, "broker", "--listener-url", f"tcp://127.0.0.1:{tansu_port}",
                     "--advertised-listener-url", f"tcp://127.0.0.1:{self.port}",
                     "--storage-engine", "memory://tansu/", "--cluster-id", "stickyflow-capture"],
                    stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT, env=kc.child_env())
            except FileNotFoundError as exc:
                raise kc.CoordinatorUnavailable(f"Tansu {binary!r} cannot be run: {exc}") from exc
            except OSError as exc:
                raise self._did_not_start(f"Tansu {binary!r} cannot be executed: {exc}") from exc
            deadline = time.monotonic() + self.start_timeout
            while time.monotonic() < deadline and self.process.poll() is None:
                try:
                    socket.create_connection(("127.0.0.1", tansu_port), timeout=0.2).close()
                    self.proxy = DescribeProxy(self.port, tansu_port)
                    return self
                except OSError:
                    time.sleep(0.02)
            self.stop()
        raise self._did_not_start(f"Tansu {binary!r} did not start; its output ends: {self.log()[-500:]!r}")

    def stop(self) -> None:
        if self.proxy is not None:
            self.proxy.close()
            self.proxy = None
        super().stop()
