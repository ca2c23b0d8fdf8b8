"""The one checker every test runs after every assignor: validity plus the result's own claims."""

from __future__ import annotations

from stickyflow.result import AssignmentResult


def check_result(snapshot, result: AssignmentResult) -> None:
    """Assert that ``result`` is a valid, self-consistent answer for ``snapshot``."""
    assert result.error == "NONE", result.error
    assert result.solver.status in ("optimal", "feasible", "heuristic", "fallback")
    if result.kind == "consumer":
        from stickyflow.consumer_check import inspect_consumer

        violations, metrics = inspect_consumer(snapshot, result.target)
        assert not violations, violations
        for key in ("moves", "imbalance", "cross_rack"):
            assert result.metrics[key] == metrics[key], (key, result.metrics[key], metrics[key])
        assert set(result.assignment) == {m.id for m in snapshot.members}
        if snapshot.protocol == "cooperative":
            check_cooperative_round(snapshot, result)
        else:
            assert not result.revocations
    else:
        from stickyflow.streams_check import validate_streams

        from stickyflow.streams_check import streams_metrics

        violations = validate_streams(snapshot, result.assignment,
                                      followup_rebalance_deadline_ms=result.followup_rebalance_deadline_ms)
        assert not violations, violations
        assert set(result.assignment) == {c.process_id for c in snapshot.clients}
        metrics = streams_metrics(snapshot, result.assignment)
        for key in ("moves", "imbalance", "cross_rack"):
            assert result.metrics[key] == metrics[key], (key, result.metrics[key], metrics[key])
        # still converging (a move waits on state being restored) exactly when a follow-up is asked for
        assert (result.metrics["warming_up"] > 0) == (result.followup_rebalance_deadline_ms is not None)


def check_cooperative_round(snapshot, result: AssignmentResult) -> None:
    """The spec's cooperative rules, checked partition by partition from the snapshot alone.

    A claimed partition is in this round's assignment only with its valid previous owner; everything
    else of the target is there unless claimed; each member revokes exactly what it claims (existing
    partitions, stale claims included) and is not assigned; a follow-up is due at ``now_ms`` exactly
    when something is revoked.
    """
    from stickyflow.consumer import previous_owners

    prev = previous_owners(snapshot)
    index = snapshot.member_index()
    claimed: dict[tuple[str, int], set[int]] = {}
    for t, claims in prev.claims.items():
        for i, parts in claims:
            for p in parts.tolist():
                claimed.setdefault((t, p), set()).add(i)
    holders: dict[tuple[str, int], list[str]] = {}
    for mid, topics in result.assignment.items():
        for t, parts in topics.items():
            for p in parts:
                holders.setdefault((t, p), []).append(mid)
                if (t, p) in claimed:
                    assert prev.of(t, p) == index[mid], (
                        f"{t}-{p} handed to {mid} while claimed by {sorted(claimed[(t, p)])}")
                assert p in result.target[mid].get(t, ()), f"{t}-{p} given to {mid} this round, not in target"
    assert all(len(v) == 1 for v in holders.values()), "a partition given twice this round"
    for mid, topics in result.target.items():
        for t, parts in topics.items():
            for p in parts:
                goes_now = (t, p) not in claimed or prev.of(t, p) == index[mid]
                assert goes_now == (p in result.assignment[mid].get(t, ())), (mid, t, p, goes_now)
    for m in snapshot.members:
        expect = {}
        for t, parts in m.owned.items():
            topic = snapshot.topics.get(t)
            if topic is None:
                continue
            given = set(result.assignment[m.id].get(t, ()))
            lost = sorted({p for p in parts if 0 <= p < topic.partitions and p not in given})
            if lost:
                expect[t] = lost
        got = {t: sorted(ps) for t, ps in result.revocations.get(m.id, {}).items() if len(ps)}
        assert got == expect, (m.id, got, expect)
    revoking = any(any(len(ps) for ps in r.values()) for r in result.revocations.values())
    assert result.followup_rebalance_deadline_ms == (snapshot.now_ms if revoking else None)
