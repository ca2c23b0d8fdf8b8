"""kafka-python's own consumer assignors, run in-process on a stickyflow snapshot.

These are *peers*: independent implementations of Kafka's algorithms that
stickyflow's baselines and optimizer are compared against. :func:`run_peer`
builds exactly what a kafka-python group leader would hold during a rebalance,
then calls the assignor's ``assign(cluster, members)``:

* a real :class:`kafka.cluster.ClusterMetadata`, filled from a
  ``MetadataResponse`` with every topic of the snapshot (all partitions led by
  one fake broker: kafka-python's assignors never look at racks or leaders);
* one ``JoinGroupResponseMember`` per member, in snapshot order, carrying its
  ``group.instance.id`` and the subscription metadata that member's own
  assignor would have sent (the sticky assignor's ``user_data`` holds the
  partitions it owned and its generation, as ``StickyAssignorUserData``),
  encoded to wire bytes and decoded again as the leader does.

>>> import stickyflow
>>> snap = stickyflow.parse_snapshot({"format": "stickyflow.snapshot/1", "kind": "consumer",
...     "topics": {"t": {"partitions": 3}},
...     "members": [{"id": "a", "subscription": ["t"]}, {"id": "b", "subscription": ["t"]}]})
>>> run_peer(snap, "range")
{'a': {'t': [0, 1]}, 'b': {'t': [2]}}

What kafka-python 3.0.12 does differently from Kafka (found by running it):

* ``roundrobin`` crashes with mixed subscriptions. Its skip loop
  (``while partition.topic not in member_topics[member_id]``) rebinds
  ``member_id`` to the iterator's ``(group_instance_id, member_id)`` tuple,
  so the first time it must skip a member that does not subscribe to a
  partition's topic it raises ``KeyError``. Whether that happens depends on the
  layout, so :func:`run_peer` refuses every snapshot whose members do not all
  subscribe to the same existing topics with :class:`PeerUnsupportedError`
  (stickyflow's own ``roundrobin`` handles mixed subscriptions as Kafka does).
* ``range`` and ``roundrobin`` put static members (with ``group.instance.id``)
  first, as Kafka does, but split static from dynamic with an unsorted
  ``itertools.groupby``: when the two kinds are interleaved in JoinGroup order,
  only the last run of each kind survives and the other members silently get
  nothing (the assignment stays valid, but it is not Kafka's). Members are
  passed in snapshot order, so this shows up as it would in a real group.
* ``sticky`` resolves conflicting claims its own way: with equal generations
  (unknown ones included) the first claimant in member order keeps the
  partition, where stickyflow (KIP-341) lets nobody's claim win; with
  generation 0 the *last* claimant keeps it (a truthiness test on the
  generation).
* ``sticky`` remembers the runner-up of a conflict (the claimant with the
  next lower generation) and, while balancing, may hand the partition back to
  it without checking that it still subscribes to the topic: the answer then
  assigns a topic to a member that does not read it (invalid; about 1% of the
  random groups in ``tests/strategies.py``), or, when that member subscribes to
  nothing assignable, the balancing loop crashes with ``KeyError``. :func:`run_peer`
  checks every answer and raises :class:`PeerInvalidError` or :class:`PeerError`.
* ``sticky`` crashes (``TypeError``) on a group without members; :func:`run_peer`
  answers ``{}`` there without calling any peer.
* None of the three is rack-aware (KIP-881 is not implemented).
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

from stickyflow.errors import BackendMissingError, StickyflowError, UnknownAssignorError
from stickyflow.model.consumer import ConsumerSnapshot

__all__ = ["run_peer", "peer_names", "PeerError", "PeerUnsupportedError", "PeerInvalidError"]

# kafka-python's assignor per peer name: (module, class)
PEER_CLASSES = {
    "sticky": ("kafka.coordinator.assignors.sticky.sticky_assignor", "StickyPartitionAssignor"),
    "range": ("kafka.coordinator.assignors.range", "RangePartitionAssignor"),
    "roundrobin": ("kafka.coordinator.assignors.roundrobin", "RoundRobinPartitionAssignor"),
}


class PeerError(StickyflowError, RuntimeError):
    """A kafka-python assignor failed on a snapshot (the message says which and how)."""


class PeerUnsupportedError(PeerError):
    """kafka-python's assignor cannot handle this snapshot (e.g. ``roundrobin`` with mixed subscriptions)."""


class PeerInvalidError(PeerError):
    """kafka-python's assignor returned an invalid assignment; ``violations`` lists what is wrong, ``assignment`` holds it."""

    def __init__(self, message: str, violations: tuple = (), assignment: dict | None = None):
        super().__init__(message)
        self.violations = tuple(violations)
        self.assignment = assignment


def peer_names() -> list[str]:
    """The kafka-python assignors :func:`run_peer` can run: ``["range", "roundrobin", "sticky"]``."""
    return sorted(PEER_CLASSES)


def kafka_classes():
    """kafka-python's classes the peers need (``ClusterMetadata``, ``JoinGroupResponse``,
    ``ConsumerProtocolSubscription``, ``MetadataResponse``, ``TopicPartition``), its assignors imported too;
    :class:`~stickyflow.errors.BackendMissingError` when kafka-python is not installed."""
    try:
        with warnings.catch_warnings():  # its schema loader uses deprecated importlib.resources calls
            warnings.simplefilter("ignore", DeprecationWarning)
            from kafka.cluster import ClusterMetadata
            from kafka.protocol.consumer.group import JoinGroupResponse
            from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription
            from kafka.protocol.metadata import MetadataResponse
            from kafka.structs import TopicPartition
            for module, _ in PEER_CLASSES.values():
                importlib.import_module(module)
    except ImportError as exc:
        raise BackendMissingError(
            "kafka-python is not installed: pip install kafka-python (needed for the peer assignors)") from exc
    return ClusterMetadata, JoinGroupResponse, ConsumerProtocolSubscription, MetadataResponse, TopicPartition


def _cluster(snapshot: ConsumerSnapshot, ClusterMetadata, MetadataResponse):
    """A ClusterMetadata holding every topic of the snapshot, as a MetadataResponse (v1) would fill it."""
    v = 1
    broker = MetadataResponse.MetadataResponseBroker(version=v, node_id=0, host="localhost", port=9092, rack=None)
    Topic = MetadataResponse.MetadataResponseTopic
    Part = Topic.MetadataResponsePartition
    topics = [
        Topic(version=v, error_code=0, name=name, is_internal=False,
              partitions=[Part(version=v, error_code=0, partition_index=p, leader_id=0, replica_nodes=[0],
                               isr_nodes=[0]) for p in range(t.partitions)])
        for name, t in snapshot.topics.items()
    ]
    cluster = ClusterMetadata()
    cluster.update_metadata(MetadataResponse(version=v, brokers=[broker], controller_id=0, topics=topics))
    return cluster


def _subscription(name: str, member, assignor_cls, TopicPartition):
    """The metadata this member's own assignor would put in its JoinGroup request."""
    topics = list(member.subscription)
    if name != "sticky":  # range, roundrobin: topics only
        return assignor_cls.metadata(topics)
    # sticky: a consumer that never got an assignment sends no user data; one that did sends what it
    # owns and the generation it got it in (kafka-python's on_assignment keeps both)
    if not member.owned and member.generation is None:
        owned = None
    else:
        owned = [TopicPartition(t, p) for t, parts in member.owned.items() for p in dict.fromkeys(parts)]
    generation = -1 if member.generation is None else member.generation
    return assignor_cls._metadata(topics, owned, generation)


def run_peer(snapshot: ConsumerSnapshot, name: str, *, check: bool = True) -> dict[str, dict[str, list[int]]]:
    """Run kafka-python's assignor ``name`` (``"sticky"``, ``"range"``, ``"roundrobin"``) on ``snapshot``.

    Returns member id -> topic -> sorted partitions, every member present
    (possibly with ``{}``), topics in snapshot order. The three are eager
    assignors: the snapshot's ``protocol`` is ignored, so compare the answer
    with a stickyflow result's ``target`` (its full decision). Raises
    :class:`BackendMissingError` without kafka-python,
    :class:`UnknownAssignorError` for an unknown name,
    :class:`PeerUnsupportedError` for ``roundrobin`` with mixed subscriptions,
    :class:`PeerError` when the assignor itself crashes, and (with ``check``,
    the default) :class:`PeerInvalidError` when its answer breaks the
    consumer-group rules; ``check=False`` returns such answers as they are.

    >>> import stickyflow
    >>> snap = stickyflow.parse_snapshot({"format": "stickyflow.snapshot/1", "kind": "consumer",
    ...     "topics": {"t": {"partitions": 2}},
    ...     "members": [{"id": "a", "subscription": ["t"], "generation": 3, "owned": {"t": [0, 1]}},
    ...                 {"id": "b", "subscription": ["t"]}]})
    >>> out = run_peer(snap, "sticky")
    >>> sorted(len(out[m]["t"]) for m in out)
    [1, 1]
    """
    if getattr(snapshot, "kind", None) != "consumer":
        raise PeerUnsupportedError("snapshot: the kafka-python peers take consumer snapshots only")
    if name not in PEER_CLASSES:
        raise UnknownAssignorError(f"name: {name!r} is not a kafka-python peer (known: {', '.join(peer_names())})")
    ClusterMetadata, JoinGroupResponse, Subscription, MetadataResponse, TopicPartition = kafka_classes()
    if name == "roundrobin":
        _refuse_mixed_subscriptions(snapshot)
    if not snapshot.members:  # no member, no leader: nothing runs in a real group either
        return {}
    module, cls_name = PEER_CLASSES[name]
    assignor_cls = getattr(importlib.import_module(module), cls_name)
    cluster = _cluster(snapshot, ClusterMetadata, MetadataResponse)
    members = []
    for m in snapshot.members:
        wire = _subscription(name, m, assignor_cls, TopicPartition).encode()
        members.append(JoinGroupResponse.JoinGroupResponseMember(
            member_id=m.id, group_instance_id=m.instance_id, metadata=Subscription.decode(wire)))
    assignor = assignor_cls() if name == "sticky" else assignor_cls
    try:
        raw = assignor.assign(cluster, members)
    except KeyError as exc:
        if name == "roundrobin":
            raise PeerUnsupportedError(f"kafka-python's roundrobin crashed (KeyError {exc}): it cannot skip "
                                       "a member that does not subscribe to a topic") from exc
        raise PeerError(f"kafka-python's {name} assignor crashed: KeyError: {exc}") from exc
    except Exception as exc:
        raise PeerError(f"kafka-python's {name} assignor crashed: {type(exc).__name__}: {exc}") from exc
    out = _decode(snapshot, raw)
    if check:
        from stickyflow.check.consumer import validate_consumer

        violations = validate_consumer(snapshot, out)
        if violations:
            more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
            raise PeerInvalidError(f"kafka-python's {name} assignor returned an invalid assignment: "
                                   f"{violations[0]}{more}", violations, out)
    return out


def _refuse_mixed_subscriptions(snapshot: ConsumerSnapshot) -> None:
    subs = {frozenset(t for t in m.subscription if t in snapshot.topics) for m in snapshot.members}
    if len(subs) > 1:
        raise PeerUnsupportedError(
            "members: kafka-python's roundrobin needs every member to subscribe to the same topics "
            "(with mixed subscriptions its skip loop raises KeyError)")


def _decode(snapshot: ConsumerSnapshot, raw: dict[str, Any]) -> dict[str, dict[str, list[int]]]:
    order = {t: i for i, t in enumerate(snapshot.topics)}
    out: dict[str, dict[str, list[int]]] = {m.id: {} for m in snapshot.members}
    for mid, assignment in raw.items():
        dest = out.setdefault(mid, {})
        for tp in assignment.assigned_partitions:
            topic, parts = tp[0], tp[1]
            if len(parts):
                dest.setdefault(topic, []).extend(int(p) for p in parts)
    return {mid: {t: sorted(topics[t]) for t in sorted(topics, key=lambda t: (order.get(t, len(order)), t))}
            for mid, topics in out.items()}
