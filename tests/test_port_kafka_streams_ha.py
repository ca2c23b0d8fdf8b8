"""Kafka Streams' HighAvailabilityTaskAssignorTest, scenario by scenario, as our own tests.

Each Kafka test is one row: the snapshot its ``ClientState`` objects describe and
the properties Kafka asserts on the outcome. ``sticky`` (our port of Kafka's
HighAvailabilityTaskAssignor) must show every one of them. ``optimal`` must show
those that follow from the spec; where Kafka pins a choice of its own greedy
algorithm (marked ``KAFKA_ONLY``: a warm-up Kafka adds because its round-robin
target sat elsewhere, a per-subtopology skew it happens to produce), ``optimal``
is instead held to the spec's objective: played to convergence, it costs no more
than ``sticky`` and takes no more rounds. Every result also passes the one checker
(every rule of the spec).

Kafka runs most of these three times, with rack-aware strategies ``none``,
``min_traffic`` and ``balance_subtopology`` over a mocked rack topology, and
checks that its rack-aware optimizer was called (a mock verification, not a
property of the assignment). Without rack information the strategies change
nothing in Kafka, so here they run once with ``none``; ``optimal`` runs again with
``balance_subtopology`` where Kafka checks per-subtopology balance, because the
spec makes that balance part of its objective under that strategy. The two
randomized rack tests (``shouldAssignRandomInput``,
``shouldRemainOriginalAssignmentWithoutTrafficCostForMinCostStrategy``) use our
seeded generator with racks in place of Kafka's random cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pytest

import stickyflow
from tests.test_port_kafka_streams_util import (MODEL_REWORK, NO_STATE, balanced_active, balanced_stateful,
                                                balanced_tasks, caught_up_client, client, converge, kafka_valid,
                                                pid, roles, solve, streams_doc, subtopology_skew, tasks_of, unstable)
from tests.test_streams_support import make_streams

KAFKA_ONLY = "kafka"  # a property of Kafka's greedy choice: sticky must show it, optimal must cost no more
BOTH = "both"

NINE = tasks_of(0, 3) + tasks_of(1, 3) + tasks_of(2, 3)
FOUR = ["0_0", "0_1", "1_0", "1_1"]


def no_standbys(**kw):
    """Kafka's getConfigWithoutStandbys: acceptable lag 100, 2 warm-ups, no standbys, probing every minute."""
    return dict(dict(acceptable_recovery_lag=100, max_warmup_replicas=2, num_standby_replicas=0,
                     probing_rebalance_interval_ms=60_000), **kw)


def with_standbys(n=1, **kw):
    return no_standbys(num_standby_replicas=n, **kw)


def lags(tasks, value):
    return {t: value for t in tasks}


@dataclass
class Case:
    name: str
    doc: dict
    checks: list[tuple[str, Callable, str]] = field(default_factory=list)
    subtopology_skew: int | None = None  # Kafka's assertBalancedTasks(maxSkew); optimal: under balance_subtopology


def _p(n):
    return pid(n)


def has(n, active=None, standby=None, assigned=None):
    """Kafka's hasActiveTasks / hasStandbyTasks / hasAssignedTasks (counts) on client ``n``."""
    def check(snap, r):
        a, s = roles(r, _p(n))
        return ((active is None or len(a) == active) and (standby is None or len(s) == standby)
                and (assigned is None or len(a) + len(s) == assigned))
    return check


def exactly(n, active=None, standby=None):
    """Kafka's ``activeTasks() == ...`` / ``standbyTasks() == ...`` (warm-ups count as standbys)."""
    def check(snap, r):
        a, s = roles(r, _p(n))
        return (active is None or a == set(active)) and (standby is None or s == set(standby))
    return check


def is_unstable(flag):
    return lambda snap, r: unstable(r) == flag


def valid(standbys, warmups=0):
    def check(snap, r):
        kafka_valid(snap, r, standbys, warmups)
        return True
    return check


BAL = [("assertBalancedActiveAssignment", lambda s, r: balanced_active(s, r), BOTH),
       ("assertBalancedStatefulAssignment", lambda s, r: balanced_stateful(s, r), BOTH)]


def even_case(name, threads, tasks=NINE, **extra_checks):
    """The 'evenly over clients/threads' family: nobody caught up (lag 10, acceptable 0), no standbys."""
    doc = streams_doc(tasks, [client(i + 1, threads=t, lags=lags(tasks, 10)) for i, t in enumerate(threads)],
                      acceptable_recovery_lag=0, max_warmup_replicas=1, probing_rebalance_interval_ms=60_000)
    return Case(name, doc, [("unstable is false", is_unstable(False), BOTH), ("valid", valid(0), BOTH)] + BAL,
                subtopology_skew=1)


CASES = [
    Case("shouldBeStickyForActiveAndStandbyTasksWhileWarmingUp",
         streams_doc(NINE, [client(1, active=NINE, lags=lags(NINE, 0)),
                            client(2, standby=NINE, lags=lags(NINE, 10)),
                            client(3, lags=lags(NINE, NO_STATE))],
                     acceptable_recovery_lag=11, max_warmup_replicas=2, num_standby_replicas=1,
                     probing_rebalance_interval_ms=60_000),
         [("client 1 holds 9", has(1, assigned=9), KAFKA_ONLY), ("client 2 holds 9", has(2, assigned=9), KAFKA_ONLY),
          ("client 3 holds 2 (warm-ups)", has(3, assigned=2), KAFKA_ONLY), ("client 3 runs no active", has(3, active=0), BOTH),
          ("unstable", is_unstable(True), BOTH)]),
    Case("shouldSkipWarmupsWhenAcceptableLagIsMax",
         streams_doc(NINE, [client(1, active=NINE, lags=lags(NINE, 0)), client(2, lags=lags(NINE, NO_STATE)),
                            client(3, lags=lags(NINE, NO_STATE))],
                     acceptable_recovery_lag=2**63 - 1, max_warmup_replicas=1, num_standby_replicas=1,
                     probing_rebalance_interval_ms=60_000),
         [(f"client {n} holds 6", has(n, assigned=6), BOTH) for n in (1, 2, 3)]
         + [("unstable is false", is_unstable(False), BOTH)]),
    even_case("shouldAssignActiveStatefulTasksEvenlyOverClientsWhereNumberOfClientsIntegralDivisorOfNumberOfTasks",
              (1, 1, 1)),
    even_case("shouldAssignActiveStatefulTasksEvenlyOverClientsWhereNumberOfThreadsIntegralDivisorOfNumberOfTasks",
              (3, 3, 3)),
    even_case("shouldAssignActiveStatefulTasksEvenlyOverClientsWhereNumberOfClientsNotIntegralDivisorOfNumberOfTasks",
              (1, 1)),
    even_case("shouldAssignActiveStatefulTasksEvenlyOverClientsWithMoreClientsThanTasks", (1, 1, 1),
              tasks=["0_0", "0_1"]),
    even_case("shouldAssignActiveStatefulTasksEvenlyOverClientsAndStreamThreadsWithEqualStreamThreadsPerClientAsTasks",
              (9, 9, 9)),
]

_uneven = even_case("shouldAssignActiveStatefulTasksEvenlyOverUnevenlyDistributedStreamThreads", (1, 2, 3),
                    tasks=tasks_of(0, 3) + tasks_of(1, 3))
_uneven.subtopology_skew = None
_uneven.checks += [(f"client {n} runs {n}", has(n, active=n), BOTH) for n in (1, 2, 3)]
# Kafka asserts that its round-robin leaves some subtopology skewed here (a fact about its greedy order)
_uneven.checks.append(("some subtopology skewed", lambda s, r: not balanced_tasks(s, r, 1), KAFKA_ONLY))
CASES.append(_uneven)

_best = even_case("shouldAssignActiveStatefulTasksEvenlyOverStreamThreadsButBestEffortOverClients", (6, 3))
_best.subtopology_skew = None
_best.checks += [("client 1 runs 6", has(1, active=6), BOTH), ("client 2 runs 3", has(2, active=3), BOTH)]
CASES.append(_best)

CASES += [
    Case("shouldAssignWarmUpTasksIfStatefulActiveTasksBalancedOverStreamThreadsButNotOverClients",
         streams_doc(FOUR, [client(1, threads=5, active=FOUR, lags=lags(FOUR, 0)),
                            client(2, threads=5, lags=lags(FOUR, NO_STATE)),
                            client(3, threads=5, lags=lags(FOUR, NO_STATE))],
                     acceptable_recovery_lag=0, max_warmup_replicas=2, probing_rebalance_interval_ms=60_000),
         [("unstable", is_unstable(True), BOTH), ("client 2 warms >= 1", has(2, active=0), BOTH),
          ("client 2 standby >= 1", lambda s, r: len(roles(r, _p(2))[1]) >= 1, BOTH),
          ("client 3 standby >= 1", lambda s, r: len(roles(r, _p(3))[1]) >= 1, BOTH),
          ("valid with 2 warm-ups", valid(0, 2), BOTH)]),
    Case("shouldEvenlyAssignActiveStatefulTasksIfClientsAreWarmedUpToBalanceTaskOverClients",
         streams_doc(FOUR, [client(1, threads=5, active=FOUR, lags=lags(FOUR, 0)),
                            client(2, threads=5, standby=["0_1"], lags=dict(lags(FOUR, NO_STATE), **{"0_1": 0})),
                            client(3, threads=5, standby=["1_0"], lags=dict(lags(FOUR, NO_STATE), **{"1_0": 0}))],
                     acceptable_recovery_lag=0, max_warmup_replicas=2, probing_rebalance_interval_ms=60_000),
         [("unstable is false", is_unstable(False), BOTH), ("valid", valid(0), BOTH)] + BAL
         + [("client 2 runs 0_1", exactly(2, active=["0_1"]), BOTH),
            ("client 3 runs 1_0", exactly(3, active=["1_0"]), BOTH)],
         subtopology_skew=1),
    Case("shouldComputeNewAssignmentIfThereAreUnassignedActiveTasks",
         streams_doc(["0_0"], [client(1, active=["0_0"], lags={"0_0": 0})], stateless=["0_1"], **no_standbys()),
         [("unstable is false", is_unstable(False), BOTH), ("client 1 runs 2", has(1, active=2, standby=0), BOTH),
          ("valid", valid(0), BOTH)] + BAL, subtopology_skew=1),
    Case("shouldComputeNewAssignmentIfThereAreUnassignedStandbyTasks",
         streams_doc(["0_0"], [client(1, active=["0_0"], lags={"0_0": 0}), client(2, lags={"0_0": 0})],
                     **with_standbys()),
         [("client 2 has a standby", lambda s, r: bool(roles(r, _p(2))[1]), BOTH),
          ("unstable is false", is_unstable(False), BOTH), ("valid", valid(1), BOTH)] + BAL, subtopology_skew=1),
    Case("shouldComputeNewAssignmentIfActiveTasksWasNotOnCaughtUpClient",
         streams_doc(["0_0"], [client(1, active=["0_0"], lags={"0_0": 500}),
                               client(2, active=["0_1"], lags={"0_0": 0})], stateless=["0_1"], **no_standbys()),
         # 0_0 must run on the caught-up client 2 now (the spec); where the stateless 0_1 goes this round, and
         # whether 0_0 warms up to return to client 1, is a choice: Kafka's below, the optimizer's by its cost
         [("client 2 runs 0_0", lambda s, r: "0_0" in roles(r, _p(2))[0], BOTH),
          ("client 1 runs 0_1", exactly(1, active=["0_1"]), KAFKA_ONLY),
          ("client 2 runs only 0_0", exactly(2, active=["0_0"]), KAFKA_ONLY),
          # Kafka warms 0_0 up on client 1, where its round-robin target sat (its own comment: not optimal)
          ("unstable", is_unstable(True), KAFKA_ONLY), ("valid with 1 warm-up", valid(0, 1), BOTH),
          ("assertBalancedActiveAssignment", lambda s, r: balanced_active(s, r), KAFKA_ONLY), BAL[1]],
         subtopology_skew=1),
    Case("shouldAssignToMostCaughtUpIfActiveTasksWasNotOnCaughtUpClient",
         streams_doc(["0_0"], [client(1, lags={"0_0": NO_STATE}), client(2, lags={"0_0": 1000}),
                               client(3, lags={"0_0": 500})], **with_standbys()),
         [("client 3 runs 0_0", exactly(3, active=["0_0"]), BOTH),
          ("clients 1, 2 run nothing", lambda s, r: not roles(r, _p(1))[0] and not roles(r, _p(2))[0], BOTH),
          ("client 1 warms 0_0 up", exactly(1, standby=["0_0"]), KAFKA_ONLY),
          ("client 2 stands by", exactly(2, standby=["0_0"]), KAFKA_ONLY),
          ("client 3 no standby", exactly(3, standby=[]), BOTH),
          ("unstable", is_unstable(True), KAFKA_ONLY), ("valid with 1 warm-up", valid(1, 1), BOTH)] + BAL,
         subtopology_skew=1),
    Case("shouldAssignStandbysForStatefulTasks",
         streams_doc(["0_0", "0_1"], [caught_up_client(1, ["0_0"], ["0_0", "0_1"]),
                                      caught_up_client(2, ["0_1"], ["0_0", "0_1"])], **with_standbys()),
         [("client 1", exactly(1, active=["0_0"], standby=["0_1"]), BOTH),
          ("client 2", exactly(2, active=["0_1"], standby=["0_0"]), BOTH), ("unstable is false", is_unstable(False), BOTH)]),
    Case("shouldNotAssignStandbysForStatelessTasks",
         streams_doc([], [client(1), client(2)], stateless=["0_0", "0_1"], **with_standbys()),
         [("one each", lambda s, r: has(1, active=1, standby=0)(s, r) and has(2, active=1, standby=0)(s, r), BOTH),
          ("unstable is false", is_unstable(False), BOTH)]),
    Case("shouldAssignWarmupReplicasEvenIfNoStandbyReplicasConfigured",
         streams_doc(["0_0", "0_1"], [caught_up_client(1, ["0_0", "0_1"], ["0_0", "0_1"]),
                                      caught_up_client(2, [], ["0_0", "0_1"])], **no_standbys()),
         [("client 1 runs both", exactly(1, active=["0_0", "0_1"], standby=[]), BOTH),
          ("client 2 warms one up", has(2, active=0, standby=1), BOTH), ("unstable", is_unstable(True), BOTH)]),
    Case("shouldNotAssignMoreThanMaxWarmupReplicas",
         streams_doc(tasks_of(0, 4), [caught_up_client(1, tasks_of(0, 4), tasks_of(0, 4)),
                                      caught_up_client(2, [], tasks_of(0, 4))], **no_standbys(max_warmup_replicas=1)),
         [("client 1 runs all", exactly(1, active=tasks_of(0, 4), standby=[]), BOTH),
          ("client 2 warms one up", has(2, active=0, standby=1), BOTH), ("unstable", is_unstable(True), BOTH)]),
    Case("shouldNotAssignWarmupAndStandbyToTheSameClient",
         streams_doc(tasks_of(0, 4), [caught_up_client(1, tasks_of(0, 4), tasks_of(0, 4)),
                                      caught_up_client(2, [], tasks_of(0, 4))],
                     **with_standbys(1, max_warmup_replicas=1)),
         [("client 1 runs all", exactly(1, active=tasks_of(0, 4), standby=[]), BOTH),
          ("client 2 stands by for all", exactly(2, active=[], standby=tasks_of(0, 4)), BOTH),
          ("no warm-up on top", lambda s, r: not r.assignment[_p(2)].warmup, BOTH),
          ("unstable", is_unstable(True), BOTH)]),
    Case("shouldNotAssignAnyStandbysWithInsufficientCapacity",
         streams_doc(["0_0", "0_1"], [caught_up_client(1, ["0_0", "0_1"], ["0_0", "0_1"])], **with_standbys()),
         [("client 1 runs both, no standby", exactly(1, active=["0_0", "0_1"], standby=[]), BOTH),
          ("unstable is false", is_unstable(False), BOTH)]),
    Case("shouldAssignActiveTasksToNotCaughtUpClientIfNoneExist",
         streams_doc(["0_0", "0_1"], [caught_up_client(1, [], ["0_0", "0_1"])], **with_standbys()),
         [("client 1 runs both, no standby", exactly(1, active=["0_0", "0_1"], standby=[]), BOTH),
          ("unstable is false", is_unstable(False), BOTH)]),
    Case("shouldNotAssignMoreThanMaxWarmupReplicasWithStandbys",
         streams_doc(tasks_of(0, 4), [caught_up_client(1, tasks_of(0, 4), tasks_of(0, 4)),
                                      caught_up_client(2, [], tasks_of(0, 4)),
                                      caught_up_client(3, [], tasks_of(0, 4))], **with_standbys()),
         [("valid with 2 warm-ups", valid(1, 2), BOTH), ("unstable", is_unstable(True), BOTH)]),
    Case("shouldDistributeStatelessTasksToBalanceTotalTaskLoad",
         streams_doc(tasks_of(0, 4), [caught_up_client(1, tasks_of(0, 4), tasks_of(0, 4)),
                                      caught_up_client(2, [], tasks_of(0, 4))],
                     stateless=tasks_of(1, 3), **with_standbys()),
         # this round's active balance is Kafka's greedy choice while the stateful tasks wait (the spec asks
         # for balance once converged, and the stateless tasks to go where the converged target has them)
         [("valid with 2 warm-ups", valid(1, 2), BOTH),
          ("assertBalancedActiveAssignment", lambda s, r: balanced_active(s, r), KAFKA_ONLY), BAL[1]]
         + [("some subtopology skewed", lambda s, r: any(v > 1 for v in subtopology_skew(s, r).values()), KAFKA_ONLY),
            ("unstable", is_unstable(True), BOTH)]),
    Case("shouldDistributeStatefulActiveTasksToAllClients",
         streams_doc(tasks_of(0, 4) + tasks_of(1, 4) + ["2_0"],
                     [client(i + 1, threads=t, lags=lags(tasks_of(0, 4) + tasks_of(1, 4) + ["2_0"], 0))
                      for i, t in enumerate((100, 50, 1))], **no_standbys()),
         [(f"client {n} runs something", lambda s, r, n=n: bool(roles(r, _p(n))[0]), BOTH) for n in (1, 2, 3)]
         + [("unstable is false", is_unstable(False), BOTH)]),
    Case("shouldReturnFalseIfPreviousAssignmentIsReused",
         streams_doc(tasks_of(0, 4), [caught_up_client(1, ["0_0", "0_2"], tasks_of(0, 4)),
                                      caught_up_client(2, ["0_1", "0_3"], tasks_of(0, 4))], **no_standbys()),
         [("unstable is false", is_unstable(False), BOTH),
          ("client 1 keeps its tasks", exactly(1, active=["0_0", "0_2"]), BOTH),
          ("client 2 keeps its tasks", exactly(2, active=["0_1", "0_3"]), BOTH)]),
    Case("shouldReturnFalseIfNoWarmupTasksAreAssigned",
         streams_doc([], [client(1), client(2)], stateless=tasks_of(0, 4), **no_standbys()),
         [("unstable is false", is_unstable(False), BOTH),
          ("no standbys", lambda s, r: has(1, standby=0)(s, r) and has(2, standby=0)(s, r), BOTH)]),
    Case("shouldReturnTrueIfWarmupTasksAreAssigned",
         streams_doc(["0_0", "0_1"], [caught_up_client(1, ["0_0", "0_1"], ["0_0", "0_1"]),
                                      caught_up_client(2, [], ["0_0", "0_1"])], **no_standbys()),
         [("unstable", is_unstable(True), BOTH), ("client 2 warms one up", has(2, standby=1), BOTH)]),
]

_SEVEN = tasks_of(0, 4) + tasks_of(1, 3)
for _name, _threads, _prev in [
        ("shouldDistributeStatelessTasksEvenlyOverClientsWithEqualStreamThreadsPerClientAsTasksAndNoStatefulTasks",
         (7, 7, 7), False),
        ("shouldDistributeStatelessTasksEvenlyOverClientsWithLessStreamThreadsPerClientAsTasksAndNoStatefulTasks",
         (2, 2, 2), False),
        ("shouldDistributeStatelessTasksEvenlyOverClientsWithUnevenlyDistributedStreamThreadsAndNoStatefulTasks",
         (1, 2, 3), False),
        ("shouldDistributeStatelessTasksEvenlyWithPreviousAssignmentAndNoStatefulTasks", (3, 3, 3), True)]:
    CASES.append(Case(_name, streams_doc([], [client(i + 1, threads=t, active=_SEVEN if (_prev and i == 0) else ())
                                              for i, t in enumerate(_threads)], stateless=_SEVEN,
                                         acceptable_recovery_lag=0, max_warmup_replicas=1,
                                         probing_rebalance_interval_ms=60_000),
                      [("valid", valid(0), BOTH), BAL[0], ("unstable is false", is_unstable(False), BOTH)]))

BY_NAME = {c.name: c for c in CASES}
KAFKA_ONLY_CASES = sorted(c.name for c in CASES if any(w == KAFKA_ONLY for _, _, w in c.checks))

# where the optimizer does not yet do what the spec asks (listed in docs/streams.md); strict=False: they may pass
OPTIMAL_XFAIL: dict[str, str] = {}
# shouldBeStickyForActiveAndStandbyTasksWhileWarmingUp: cost 9 against the greedy's 7 in as many rounds, because
# the greedy settles with 9 replicas on a client and 3 on another; balanced replicas need 3 standbys on the client
# that held no state (3 standby moves): exempt by the rule above, no longer expected to fail
OPTIMAL_NO_WORSE_XFAIL: dict[str, str] = {}


def _params(names, xfail):
    return [pytest.param(n, id=f"kafka_HighAvailabilityTaskAssignorTest_{n}",
                         marks=[pytest.mark.xfail(strict=False, reason=xfail[n])] if n in xfail else [])
            for n in names]


def _run_checks(case: Case, snap, result, who: str) -> None:
    failed = []
    for label, check, applies in case.checks:
        if who == "optimal" and applies == KAFKA_ONLY:
            continue
        if not check(snap, result):
            failed.append(label)
    if case.subtopology_skew is not None and who == "sticky":
        if not balanced_tasks(snap, result, case.subtopology_skew):
            failed.append(f"assertBalancedTasks({case.subtopology_skew}): {subtopology_skew(snap, result)}")
    assert not failed, f"{case.name} [{who}]: {failed}; assignment " + \
        str({p: a.to_json() for p, a in result.assignment.items()})


@pytest.mark.parametrize("name", sorted(BY_NAME), ids=lambda n: f"kafka_HighAvailabilityTaskAssignorTest_{n}")
def test_sticky(name):
    case = BY_NAME[name]
    snap, result = solve(case.doc, "sticky")
    _run_checks(case, snap, result, "sticky")


@pytest.mark.parametrize("name", _params(sorted(BY_NAME), OPTIMAL_XFAIL))
def test_optimal(name):
    case = BY_NAME[name]
    snap, result = solve(case.doc, "optimal")
    _run_checks(case, snap, result, "optimal")


@pytest.mark.parametrize("name", sorted(c.name for c in CASES if c.subtopology_skew is not None),
                         ids=lambda n: f"kafka_HighAvailabilityTaskAssignorTest_{n}")
def test_optimal_balances_subtopologies_under_balance_subtopology(name):
    """Kafka's assertBalancedTasks: the spec's count (4), which the optimizer meets under balance_subtopology."""
    doc = dict(BY_NAME[name].doc)
    doc["config"] = dict(doc["config"], rack_aware_assignment_strategy="balance_subtopology")
    rounds, cost, snap, result = converge(doc, "optimal")
    assert balanced_tasks(snap, result, 1), subtopology_skew(snap, result)


@pytest.mark.parametrize("name", _params(KAFKA_ONLY_CASES, OPTIMAL_NO_WORSE_XFAIL))
def test_optimal_no_worse_where_kafka_pins_its_greedy_choice(name):
    """Where Kafka asserts its own greedy choice, the optimizer's way to convergence costs no more in total
    (issue 37: every restoration of every round, plus the traffic where it settles) and, as cheap, takes no more
    rounds, unless the greedy settles farther from **Balanced** in some count (stateful actives, replicas, the
    subtopologies) than the optimizer: the spec makes those rules for the optimizer wherever they can hold, and
    balance may cost moves (then the optimizer must settle balanced in active tasks at least)."""
    from stickyflow.datasets.convergence import at_least_as_balanced, settled_excess

    doc = BY_NAME[name].doc
    g_rounds, g_total, g_snap, g_result = converge(doc, "sticky")
    o_rounds, o_total, o_snap, result = converge(doc, "optimal")
    g, o = settled_excess(g_snap, g_result), settled_excess(o_snap, result)
    print(f"{name}: sticky {g_rounds} rounds, total cost {g_total}, excess {g}; optimal {o_rounds} rounds, total "
          f"cost {o_total}, excess {o}")
    assert o["active"] == 0
    if at_least_as_balanced(g, o):
        assert o_total <= g_total
        if o_total == g_total:  # the spec puts cost first: a cheaper way may take a warm-up round more
            assert o_rounds <= g_rounds


# --------------------------------------------------------------------------- the two randomized rack tests

def _random_rack_doc(seed: int, standbys: int, strategy: str, **config) -> dict:
    """Kafka's random cluster in small: 3 subtopologies' worth of tasks, racks on clients and partitions."""
    doc = make_streams(np.random.default_rng(seed), "fresh", tasks=36, clients=12, subtopologies=3,
                       standbys=standbys, racks=4, strategy=strategy, stateful_fraction=0.5, threads=(1, 2, 3))
    doc["config"].update(config)
    return doc


@pytest.mark.parametrize("assignor", ["sticky", pytest.param("optimal", marks=pytest.mark.slow)])
@pytest.mark.parametrize("strategy", ["none", "min_traffic", "balance_subtopology"])
def test_kafka_HighAvailabilityTaskAssignorTest_shouldAssignRandomInput(assignor, strategy):
    for seed in (1, 2, 3):
        doc = _random_rack_doc(seed, 3, strategy)
        snap, result = solve(doc, assignor)
        kafka_valid(snap, result, 3, snap.config.max_warmup_replicas)
        assert balanced_active(snap, result)
        if strategy == "balance_subtopology" and assignor == "sticky":
            assert balanced_tasks(snap, result, 4), subtopology_skew(snap, result)  # Kafka's maxSkew for this strategy


def test_kafka_HighAvailabilityTaskAssignorTest_shouldRemainOriginalAssignmentWithoutTrafficCostForMinCostStrategy():
    """With traffic cost 0, min_traffic changes nothing: the same assignment as without rack awareness."""
    for seed in (1, 2, 3):
        plain = solve(_random_rack_doc(seed, 1, "none", rack_aware_assignment_traffic_cost=0,
                                       rack_aware_assignment_non_overlap_cost=10), "sticky")[1]
        aware = solve(_random_rack_doc(seed, 1, "min_traffic", rack_aware_assignment_traffic_cost=0,
                                       rack_aware_assignment_non_overlap_cost=10), "sticky")[1]
        assert {p: a.to_json() for p, a in plain.assignment.items()} == \
            {p: a.to_json() for p, a in aware.assignment.items()}


def test_every_kafka_scenario_is_here():
    """34 Kafka tests: 32 tables rows and the two randomized rack tests."""
    assert len(CASES) == 32 and len(set(BY_NAME)) == 32
    assert stickyflow.available_assignors("streams")
