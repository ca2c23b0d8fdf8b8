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
            # nothing is handed to a new owner while another member still claims it
            from stickyflow.consumer import previous_owners

            prev = previous_owners(snapshot)
            index = snapshot.member_index()
            for mid, topics in result.assignment.items():
                for t, parts in topics.items():
                    for i, claimed in prev.claims.get(t, ()):
                        if i != index[mid]:
                            assert not set(parts) & set(claimed.tolist()) or set(parts) & set(claimed.tolist()) <= _claimed_by(prev, t, index[mid])
            assert (result.followup_rebalance_deadline_ms is not None) == any(result.revocations.values())
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


def _claimed_by(prev, topic, i) -> set[int]:
    out: set[int] = set()
    for j, claimed in prev.claims.get(topic, ()):
        if j == i:
            out |= set(claimed.tolist())
    return out
