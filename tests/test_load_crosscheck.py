"""Balance by load held to the spec's rules, in order, against independent exact references.

Seeded random groups that nobody chose: tiny ones against the brute force of ``tests/load_reference.py`` (every
assignment, exact arithmetic), small ones against its SCIP model. Every answer must be valid, its bound at most
the least possible peak, and an answer claimed ``optimal`` must be one of the reference's optima; with integer
rates CP-SAT must prove them.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from stickyflow.formulations.load.flow import peak_bound
from stickyflow.formulations.load.opt import optimize
from stickyflow.load.problem import LoadProblem, measure, peak_limit_exact
from stickyflow.registry import SolveOptions

from tests.load_reference import brute_force, mip

RACK_SETS = (frozenset(), frozenset({0}), frozenset({1}), frozenset({0, 1}))


def random_group(rng: np.random.Generator, *, n_max: int, m_max: int, integer: bool = True) -> tuple:
    """A LoadProblem and the same group as plain data for the references."""
    N = int(rng.integers(1, n_max + 1))
    M = int(rng.integers(1, m_max + 1))
    T = int(rng.integers(1, 3))
    K = int(rng.integers(1, 3))
    topic = rng.integers(0, T, N)
    member_class = rng.integers(0, K, M)
    if M > 1 and rng.random() < 0.15:
        member_class[int(rng.integers(1, M))] = -1  # a member that reads nothing assignable
    reads = rng.random((K, T)) < 0.7
    for t in range(T):  # every topic has an active reader
        if not reads[member_class[member_class >= 0], t].any():
            reads[member_class[0] if member_class[0] >= 0 else 0, t] = True
    member_class[0] = max(member_class[0], 0)
    if integer:
        rates = rng.integers(0, 21, N).astype(float)
        rates[rng.random(N) < 0.15] = 0.0
        if rng.random() < 0.3:
            rates[int(rng.integers(0, N))] = float(rng.integers(20, 60))  # a hot partition
    else:
        rates = np.round(rng.lognormal(1.0, 1.0, N), 3)
    given = bool(rng.random() < 0.6)
    capacity = rng.integers(1, 11, M).astype(float) * (10 if given else 1) if given else np.ones(M)
    if given and rng.random() < 0.4:
        capacity[:] = capacity[0]
    owner = rng.integers(-1, M, N)
    tc = int(rng.choice([0, 1, 10])) if rng.random() < 0.5 else 0
    noc = int(rng.choice([0, 1, 2], p=[0.1, 0.7, 0.2]))
    slack = float(rng.choice([0.0, 0.05, 0.25]))
    rackset = rng.integers(0, 4, N)
    member_rack = rng.integers(-1, 2, M)
    cross = np.array([[bool(s) and r not in s for r in (0, 1)] + [False] for s in RACK_SETS])
    problem = LoadProblem.of(rates=rates, topic=topic, reads=reads, member_class=member_class, capacity=capacity,
                             owner=owner, capacity_given=given, slack=slack, noc=noc, tc=tc, rackset=rackset,
                             member_rack=member_rack, cross=cross)
    allowed = [[m for m in range(M) if member_class[m] >= 0 and reads[member_class[m], topic[p]]] for p in range(N)]
    far = [[bool(problem.far(np.array([p]), np.array([m]))[0]) for m in range(M)] for p in range(N)]
    data = dict(rates=rates.tolist(), allowed=allowed, capacity=capacity.tolist(), owner=owner.tolist(), far=far,
                slack=slack, capacity_given=given, noc=noc, tc=tc)
    return problem, data, (member_class >= 0).tolist()


def _assert_sound(problem: LoadProblem, answer, u_star: Fraction, optima: set | None) -> None:
    x = answer.x
    assert problem.allowed(np.arange(problem.n_partitions), x).all(), "an invalid answer"
    assert Fraction(answer.bound) <= u_star, (answer.bound, u_star)
    if answer.status == "optimal":
        assert Fraction(measure(problem, x).peak) <= peak_limit_exact(problem, u_star) * (1 + Fraction(1, 10**12))
        if optima is not None:
            assert tuple(x.tolist()) in optima, (x.tolist(), sorted(optima)[:3])


def test_tiny_groups_against_brute_force(seed):
    """Integer rates: CP-SAT proves every rule and lands on one of the brute force's optima; the plan's claims
    hold where it makes them; every bound is at most U*."""
    rng = np.random.default_rng(seed)
    proven_plans = 0
    for _ in range(60):
        problem, data, active = random_group(rng, n_max=7, m_max=3)
        optima, u_star = brute_force(**data, active=active)
        exact = optimize(problem, SolveOptions(method="cpsat"))
        assert exact.status == "optimal", exact.reason
        _assert_sound(problem, exact, u_star, optima)
        plan = optimize(problem, SolveOptions(method="plan"))
        _assert_sound(problem, plan, u_star, optima)
        proven_plans += plan.status == "optimal"
        assert Fraction(peak_bound(problem)) <= u_star
    print(f"plans proven optimal: {proven_plans} of 60")


def test_tiny_groups_float_rates(seed):
    """Rates that no power of two makes integers: the answer keeps rule 2 on the true rates and claims no more
    than it proved."""
    rng = np.random.default_rng(seed)
    for _ in range(25):
        problem, data, active = random_group(rng, n_max=6, m_max=3, integer=False)
        optima, u_star = brute_force(**data, active=active)
        answer = optimize(problem, SolveOptions(method="cpsat"))
        _assert_sound(problem, answer, u_star, optima)
        if problem.slack > 0:  # rule 2 always holds (slack 0 asks for U* exactly, which rounding may miss)
            limit = peak_limit_exact(problem, u_star) * (1 + Fraction(1, 10**9))
            assert Fraction(measure(problem, answer.x).peak) <= limit


def test_small_groups_against_scip(seed):
    """Up to 14 partitions and 4 members: the same lexicographic key as SCIP's stage-by-stage optimum."""
    pytest.importorskip("ortools.linear_solver.pywraplp")
    rng = np.random.default_rng(seed)
    for _ in range(12):
        problem, data, active = random_group(rng, n_max=14, m_max=4)
        if not all(active):
            continue  # (the SCIP model takes every member's peak)
        ref, u_star, key = mip(**data)
        answer = optimize(problem, SolveOptions(method="cpsat"))
        assert answer.status == "optimal", answer.reason
        assert Fraction(answer.bound) <= u_star
        mine = measure(problem, answer.x)
        over, cost, moves = key
        assert (mine.overload, mine.cost, mine.moves) == (float(over), float(cost), moves), (mine, key, ref)
