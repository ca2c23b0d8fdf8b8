"""Balance by load where members subscribe to different topics (issue 35fix): the plan's deal must not take members
for interchangeable. Whenever the non-sticky ``lpt`` shows rule 2's limit is reachable, ``optimal`` meets it too,
and where it misses the slack's limit the answer never claims it.

Before the fix, the plan (method ``plan``) broke that on 7 of the 36 seeded snapshots below (1.06 to 1.14 times
the bound, lpt within 1.05), and on ``skewed-topics`` ``mixed/11`` and ``mixed/15`` (1.136 and 1.093 against lpt's
1.042 and 1.006).
"""

from __future__ import annotations

import numpy as np
import pytest

import stickyflow
from stickyflow.datasets.generators import consumer_snapshot
from stickyflow.datasets.suites import suite
from stickyflow.formulations.load.flow import transport
from stickyflow.load.plan import lpt_plan, quota_plan
from stickyflow.load.problem import LoadProblem, load_problem, measure
from tests.checker import check_result

SIZES = ((60, 6, 3), (120, 10, 4), (240, 16, 5))


def mixed(size, seed: int, shape: str = "hot_topic") -> stickyflow.ConsumerSnapshot:
    p, m, t = size
    options = {"factor": 10.0} if shape == "hot_topic" else {"sigma": 1.0}
    return stickyflow.parse_snapshot(consumer_snapshot("mixed", partitions=p, members=m, topics=t, seed=seed,
                                                       rates=shape, rate_options=options))


def held_to_lpt(snap, method: str | None, **options) -> tuple[float, float, float]:
    """optimal's and lpt's peaks and rule 2's limit on the best proven bound, after checking both answers and
    optimal's claim."""
    o = stickyflow.assign(snap, "optimal", method=method, **options)
    g = stickyflow.assign(snap, "lpt")
    check_result(snap, o)
    check_result(snap, g)
    bound = max(o.metrics["peak_bound"], g.metrics["peak_bound"])
    peak, lpt = o.metrics["peak_utilization"], g.metrics["peak_utilization"]
    limit = (1 + snap.config.load_slack) * bound
    if peak > limit * (1 + 1e-9):  # not within the slack of the bound: never claimed
        assert o.solver.status != "optimal" and "not proven within the slack" in o.solver.reason
    return peak, lpt, limit


@pytest.mark.parametrize("shape", ["hot_topic", "lognormal"])
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_plan_meets_the_limit_lpt_shows_reachable(size, shape):
    """Six seeds per size: where lpt's peak is within the slack of the bound (so ``U*`` is too), the plan's
    peak is within the slack of lpt's, which is at least ``U*`` (and usually within the slack of the bound)."""
    for seed in range(6):
        snap = mixed(size, seed, shape)
        peak, lpt, limit = held_to_lpt(snap, "plan")
        if lpt <= limit:
            assert peak <= (1 + snap.config.load_slack) * lpt * (1 + 1e-9), (size, seed)


def test_auto_meets_the_limit_too():
    """The default method (CP-SAT on small groups, started from the plan, kept where CP-SAT finds nothing better
    by the rules) holds the same property; a short deterministic limit keeps the test quick."""
    for size, seed, shape in ((SIZES[1], 2, "hot_topic"), (SIZES[0], 5, "lognormal")):  # failed before
        snap = mixed(size, seed, shape)
        peak, lpt, limit = held_to_lpt(snap, None, time_limit=0.2)
        if lpt <= limit:
            assert peak <= (1 + snap.config.load_slack) * lpt * (1 + 1e-9), (size, seed)


@pytest.mark.parametrize("name", ["mixed/11", "mixed/15"])
def test_skewed_topics_regressions(name):
    """The two suite snapshots of the report: within the slack of the proven bound, proven so, sticky, and
    rack-aware (traffic_cost 10: partitions read across racks move to local readers, and the deal keeps them
    local) (before: 1.136 and 1.093 x the bound, mixed/15 moving 95% of the load)."""
    doc = next(d for d in suite("skewed-topics") if d["id"].endswith(name))
    snap = stickyflow.parse_snapshot(doc)
    peak, lpt, limit = held_to_lpt(snap, None)
    assert peak <= limit * (1 + 1e-12)
    r = stickyflow.assign(snap)
    assert "not proven within the slack" not in (r.solver.reason or "")
    total = sum(float(t.rates.sum()) for t in snap.topics.values())
    assert r.metrics["moved_load"] <= 0.4 * total and r.metrics["cross_rack_load"] <= 0.02 * total


def test_quota_plan_routes_around_a_member_that_reads_one_topic():
    """Member 1 reads only topic 1 and owns nothing: the interchangeable deal would fill member 0 with topic 1
    first; the quotas give topic 1 to member 1 and let member 0 keep topic 0."""
    p = LoadProblem.of(rates=[3.0, 3.0, 1.0, 1.0, 1.0], topic=[0, 0, 1, 1, 1], reads=[[True, True], [False, True]],
                       member_class=[0, 1], capacity=[1.0, 1.0], owner=[0, 0, 0, 0, 0], slack=0.0)
    x = quota_plan(p, 6.0, transport)
    assert x.tolist() == [0, 0, 1, 1, 1] and measure(p, x).peak == 6.0


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("exact", [20_000, 0], ids=["one-at-a-time", "rounds"])
def test_lpt_plan_is_valid_and_balancing(seed, exact):
    """The fallback's balancing candidate: every partition to a reader of its topic, one at a time or in rounds
    (as above 20,000 partitions), and its peak within Graham's 4/3 of the bound on these groups."""
    snap = mixed((240, 16, 5), seed)
    problem, _, _ = load_problem(snap)
    x = lpt_plan(problem, exact=exact)
    assert (x >= 0).all() and problem.allowed(np.arange(problem.n_partitions), x).all()
    bound = stickyflow.assign(snap, "lpt").metrics["peak_bound"]
    assert measure(problem, x).peak <= 4 / 3 * bound
