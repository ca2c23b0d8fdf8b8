"""Each greedy plan method held to examples worked out by hand (capacity 10, rates in the same unit).

Instance ONE: members a, b, c; partitions t-0..t-5 with rates 4, 7, 2, 5, 3, 6, owned by a, a, b, b, c
and nobody. Instance TWO: members a, b, c, d; rates 6 (a), 3, 3, 3 (b), 1, 1 (c), 5 (d): its members
differ in load order (b, a, d, c) and in largest-partition order (a, d, b, c), which tells MWF from MWFP.
The comments give the steps each method takes; every answer also passes the one plan check.
"""

from __future__ import annotations

import numpy as np
import pytest

from stickyflow.check.plan import check_plan, plan_measures
from stickyflow.planning.methods import HEURISTICS, run_heuristic
from stickyflow.planning.problem import PlanProblem, scaled_weights

A, B, C, D = 0, 1, 2, 3
NEW = 4  # instance ONE has 3 members: its first new member is slot 3; TWO has 4: slot 4

ONE = PlanProblem.from_arrays([4, 7, 2, 5, 3, 6], 10, owner=[A, A, B, B, C, -1], members=["a", "b", "c"])
TWO = PlanProblem.from_arrays([6, 3, 3, 3, 1, 1, 5], 10, owner=[A, B, B, B, C, C, D], members=["a", "b", "c", "d"])

HAND_WORKED = {
    # in snapshot order. ff: 4 opens a; 7 opens b; 2 first fits a (6); 5 fits neither, opens c; 3 fits a (9);
    # 6 fits nowhere, opens a new member
    ("ff", "one"): ([A, B, A, C, A, 3], 4, 17.0, 4),
    # bf: 2 goes where least room is left (b: 9); 5 then fits a (9); 3 opens its owner c; 6 joins c (9)
    ("bf", "one"): ([A, B, B, A, C, C], 3, 12.0, 2),
    # wf: 2 goes where most room is left (a); 5 opens c; 3 to c (most room: 5); 6 fits nowhere
    ("wf", "one"): ([A, B, A, C, C, 3], 4, 14.0, 3),
    # nf: only the last opened member: 7 opens b, 2 joins b, 5 opens c, 3 joins c, 6 opens a new one
    ("nf", "one"): ([A, B, B, C, C, 3], 4, 12.0, 2),
    # decreasing: 7, 6, 5, 4, 3, 2. ffd: 7 opens a; 6 opens b (first existing not open); 5 opens c;
    # 4 first fits b (10); 3 fits a (10); 2 fits c (7)
    ("ffd", "one"): ([B, A, C, C, A, B], 3, 14.0, 4),
    # bfd: the same choices: 4 goes to b (room 4, the least that fits), 3 to a (room 3), 2 to c
    ("bfd", "one"): ([B, A, C, C, A, B], 3, 14.0, 4),
    # wfd: 4 to c (most room: 5), 3 to b (room 4), 2 to a (room 3)
    ("wfd", "one"): ([C, A, A, C, B, B], 3, 14.0, 4),
    # nfd: 7 opens a; 6 opens b; 5 opens c (its owner b is open); 4 joins c; 3 opens a new one; 2 joins it
    ("nfd", "one"): ([C, A, 3, C, 3, B], 4, 14.0, 4),
    # mwf: members by load a (11), b (7), c (3). a: its smallest (4) fits no member in the plan: a joins
    # and keeps 7, 4 waits. b: 2 moves to a (9); 5 fits nowhere, b joins and keeps it. c: 3 moves to b
    # (most room). Waiting 6 (nobody's) and 4: 6 opens c, 4 joins c (10)
    ("mwf", "one"): ([C, A, A, B, B, C], 3, 9.0, 3),
    # mbf: the same choices (one member fits each time)
    ("mbf", "one"): ([C, A, A, B, B, C], 3, 9.0, 3),
    # mwf on TWO: members by load b (9), a (6), d (5), c (2). b: its smallest 3 fits nowhere, b keeps all;
    # a keeps 6; d keeps 5; c: its 1 (t-5) moves where most room is (d: 5), its other 1 (t-4) to a
    # (a and d both have 4 left: the first)
    ("mwf", "two"): ([A, B, B, B, A, D, D], 3, 2.0, 2),
    # mbf on TWO: c's 1s go where least room is left that fits: t-5 to b (room 1), t-4 to a (room 4)
    ("mbf", "two"): ([A, B, B, B, A, B, D], 3, 2.0, 2),
    # mwfp on TWO: members by largest partition a (6), d (5), b (3), c (1). a keeps 6; d keeps 5 (a has
    # room 4); b: t-3 moves to d (most room), t-2 to a, t-1 fits nowhere and b keeps it; c: both 1s to
    # b (room 7, then 6)
    ("mwfp", "two"): ([A, B, A, D, B, B, D], 3, 8.0, 4),
    # mbfp on TWO: b: t-3 to a (room 4, the least that fits), t-2 to d, t-1 stays; c: t-5 to a (room 1),
    # t-4 to d (room 2)
    ("mbfp", "two"): ([A, B, D, A, D, A, D], 3, 8.0, 4),
    # least-loaded on ONE: 3 members (L2) take 7, 6, 5, then 4 onto the least loaded (5: 9), 3 onto 6 (9),
    # 2 onto 7 (9); at 0.9 x the capacity it needs 3 too: the group keeps its size. The bins go to the
    # members they share most with: {7, 2} to a, {5, 4} to b, {6, 3} to c
    ("least-loaded", "one"): ([B, A, A, B, C, C], 3, 6.0, 2),
    # least-loaded on TWO: 6, 5, 3 open three bins; 3 onto 3 (6), 3 onto 5 (8), 1 onto 6 (7; 6 and 6 tie:
    # the first), 1 onto the 6 of 3 + 3 (7). Loads 7, 8, 7 fit 0.9 x 10 too: 3 < 4 members, the group
    # shrinks. Matching: {3, 3, 1} to b, {6, 1} to a, {5, 3} to d; c stops
    ("least-loaded", "two"): ([A, B, B, D, A, B, D], 3, 5.0, 3),
}
INSTANCES = {"one": ONE, "two": TWO}


@pytest.mark.parametrize("method, name", sorted(HAND_WORKED), ids=lambda v: str(v))
def test_hand_worked_example(method, name):
    problem = INSTANCES[name]
    slots = run_heuristic(method, problem, scaled_weights(problem.rates, problem.capacity))
    expected, members, moved_load, moves = HAND_WORKED[(method, name)]
    assert slots.tolist() == expected
    assert check_plan(problem, slots) == ()
    meas = plan_measures(problem, slots)
    assert (meas.members, meas.moved_load, meas.moves) == (members, moved_load, moves)


def test_every_greedy_method_has_a_hand_worked_example():
    assert {m for m, _ in HAND_WORKED} == set(HEURISTICS)


def test_a_partition_above_the_capacity_stands_alone_in_every_method():
    p = PlanProblem.from_arrays([12, 0, 3, 15, 0], 10, owner=[0, 0, 0, 1, 1], members=["a", "b"])
    w = scaled_weights(p.rates, p.capacity)
    for method in HEURISTICS:
        slots = run_heuristic(method, p, w)
        assert check_plan(p, slots) == (), method
        for j in (0, 3):  # the two partitions above the capacity share their member with nothing
            assert (slots == slots[j]).sum() == 1, method


def test_new_members_come_only_after_every_existing_one(seed):
    rng = np.random.default_rng(seed)
    for _ in range(20):
        n, m = int(rng.integers(1, 12)), int(rng.integers(0, 5))
        rates = rng.integers(0, 12, n).astype(float)
        owner = rng.integers(-1, m, n) if m else np.full(n, -1)
        p = PlanProblem.from_arrays(rates, 10, owner=owner, members=[f"m{i}" for i in range(m)])
        w = scaled_weights(p.rates, p.capacity)
        for method in HEURISTICS:
            assert check_plan(p, run_heuristic(method, p, w)) == (), (method, rates.tolist(), owner.tolist())


def test_least_loaded_thresholds_hold_a_group_at_its_size():
    # 3 x 30 fit 1 member at 100% of 100, but not at 85%: a group of two keeps both members
    p = PlanProblem.from_arrays([30, 30, 30], 100, owner=[0, 0, 1], members=["a", "b"])
    w = scaled_weights(p.rates, p.capacity)
    from stickyflow.planning.leastloaded import least_loaded

    assert len(np.unique(least_loaded(p, w, up=1.0, down=0.85))) == 2
    assert len(np.unique(least_loaded(p, w, up=1.0, down=1.0))) == 1
    with pytest.raises(ValueError):
        least_loaded(p, w, up=0.8, down=0.9)
