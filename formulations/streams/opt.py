r"""The optimizing Kafka Streams assignor (``optimal`` for ``kind = "streams"``): the model and its dispatch.

One rebalance under KIP-441's high-availability rules, solved by min-cost
flows (:mod:`.flow`) or CP-SAT (:mod:`.cpsat`); the shared
arrays (:mod:`.model`), boxes (:mod:`.balance`) and decoding (:mod:`.plan`) live apart. The decision is a
*target* ``x[t, c]`` (task ``t`` active on client ``c`` once converged) with
``want = min(num_standby_replicas, clients - 1)`` standbys ``s[t, c]`` per
stateful task; what the clients run this round follows from it:

    balance     Balanced(sum_t x[t, c])                      (a rule: threads as weights, balance_factor slack)
                Balanced(sum_{t stateful} x[t, c]),  Balanced(sum_t x[t, c] + s[t, c]),
                Balanced(sum_{t in g} x[t, c]) per subtopology g under balance_subtopology
                                                             (rules wherever they can hold; else the least excess)
                Balanced(n) <=> n_c <= w_c * min_c' (n_c' / w_c') + balance_factor for every client c
    eligible    a stateful task runs on a caught-up client when one exists, else on a least-lag one; a
                target elsewhere is a *movement*: the task runs on its holder (its previous owner where
                eligible, else the cheapest eligible client) and the target gets a warm-up (at most
                max_warmup_replicas; one learner in learner mode) unless a standby of the task catches up
                there in its place
    standbys    converged: on clients other than the task's target; this round a movement's standby on its
                holder sits on the target instead (catching up in a warm-up's place; CP-SAT may also place
                a waiting task's standbys of this round elsewhere, each restoration priced); with
                rack_aware_assignment_tags spread over as many tag values as the clients allow, around what
                runs and, for a task that moves, around its target
    objective   minimize  non_overlap_cost * (moves + standby_moves) + traffic_cost * cross_rack
                of the converged assignment (targets as actives), a standby move being a standby on a
                client that held the task in no role, plus the way of each movement, every restoration at
                non_overlap_cost (StreamsModel.movement_cost: meanwhile it runs on its holder, a move unless
                that is its previous client; its state is restored on the target unless the target held it;
                then it moves), so that what the next rounds cost is priced now (issue 37); then the fewest
                movements (each waits a round); then the fewest active tasks leaving their client.
                In learner mode (one learner a rebalance: each movement is a round) the fewest movements come
                before the cost: each movement also pays round_price, more than any plan's cost

So the balance factor is slack within which stickiness wins: a balanced
assignment that moves nothing costs 0 and is kept. When nothing waits, the
target is what runs and no follow-up is asked for; otherwise
``followup_rebalance_deadline_ms`` is set and the next rebalances converge.

``solve_streams(snapshot, options)`` picks the backend from
``options.method``: ``None`` (the flow; then CP-SAT, hinted by the flow, when
the flow's answer is not proven optimal and the instance has at most
:data:`CPSAT_AUTO_PAIRS` (task, client) pairs, within
:data:`CPSAT_AUTO_TIME_LIMIT` unless ``options.time_limit`` says otherwise; or
when a side constraint needs it: ``max_moves`` in ``options.extra``, tags with
two or more standbys),
``"flow"`` or ``"cpsat"``. ``options.extra`` also takes ``spread_racks``
(spread standbys over racks as well, as Kafka's rack-aware standby assignor
does; default False), ``deterministic`` (CP-SAT: reproducible across runs;
default True) and ``movements_first`` (the fewest movements before the cost;
default None: in learner mode only).

>>> import stickyflow
>>> r = stickyflow.assign({"format": "stickyflow.snapshot/1", "kind": "streams", "now_ms": 0,
...     "tasks": [{"id": f"0_{i}", "stateful": True, "end_offset_sum": 10**6} for i in range(4)],
...     "clients": [{"process_id": "a", "previous_active": ["0_0", "0_1", "0_2", "0_3"],
...                  "previous_standby": []},
...                 {"process_id": "b", "previous_active": [], "previous_standby": []}]})
>>> r.to_json()["assignment"]["b"]
{'active': [], 'standby': [], 'warmup': ['0_2', '0_3']}
>>> r.solver.status, r.followup_rebalance_deadline_ms
('optimal', 600000)
"""

from __future__ import annotations

import time
from dataclasses import replace

from stickyflow.errors import InfeasibleError, StickyflowError, UnknownAssignorError
from stickyflow.model.streams import StreamsSnapshot
from stickyflow.registry import SolveOptions
from stickyflow.result import Decision

from .balance import balance_boxes, box_hull
from .model import StreamsModel, build_model
from .plan import StreamsPlan, choose_warmups, movements, plan_cost, plan_decision, target_cost

__all__ = ["solve_streams", "METHODS", "StreamsModel", "StreamsPlan", "build_model", "balance_boxes", "box_hull",
           "plan_cost", "target_cost", "plan_decision", "movements", "choose_warmups", "CPSAT_AUTO_PAIRS",
           "CPSAT_AUTO_TIME_LIMIT"]

METHODS = ("flow", "cpsat")
CPSAT_AUTO_PAIRS = 20_000  # instances up to this many (task, client) pairs go on to CP-SAT when the flow is unproven
#: CP-SAT's budget (deterministic seconds) when it only improves an unproven flow plan and no time limit was
#: given: a default ``assign`` answers in seconds, not tens of them; ``time_limit`` buys a longer search
CPSAT_AUTO_TIME_LIMIT = 2.0


def solve_streams(snapshot: StreamsSnapshot, options: SolveOptions | None = None) -> Decision:
    """The optimal streams assignment of ``snapshot`` (see the module docstring for the model).

    Raises :class:`stickyflow.InfeasibleError` when the model has no solution
    (e.g. ``max_moves`` below what balance needs) and
    :class:`stickyflow.StickyflowError` when the time limit ends with none;
    the front door then falls back to the greedy assignor.
    """
    options = options or SolveOptions()
    method = options.method
    if method not in (None, *METHODS):
        raise UnknownAssignorError(f"method: {method!r} is not a streams method (known: {', '.join(METHODS)})")
    t0 = time.perf_counter()
    model = build_model(snapshot, options)
    needs_cpsat = model.max_moves is not None or bool(model.tag_keys and model.want >= 2)
    if method == "flow" and needs_cpsat:
        what = "max_moves" if model.max_moves is not None else "tag spreading with two or more standbys"
        raise StickyflowError(f"method: the flow cannot enforce {what}; use method='cpsat'")
    if method == "cpsat" or (method is None and needs_cpsat):
        from .cpsat import solve_cpsat

        return plan_decision(model, solve_cpsat(model, options, started=t0, auto=method is None))
    from .flow import solve_flow

    plan = solve_flow(model)
    small = model.T * model.C <= CPSAT_AUTO_PAIRS
    if method is None and plan.status != "optimal" and small:
        from .cpsat import solve_cpsat

        if options.time_limit is None:
            options = replace(options, time_limit=CPSAT_AUTO_TIME_LIMIT)
        flow_plan = plan
        try:
            plan = solve_cpsat(model, options, started=t0, hint=flow_plan, retry=False)
        except InfeasibleError as exc:  # the flow's plan keeps every rule, so the model holds it: a model fault
            plan.extra = {**plan.extra, "cpsat_error": str(exc)}
        else:
            plan = _keep_flow_unless_better(model, flow_plan, plan)
            _best_bound(model, plan, flow_plan.bound)
    return plan_decision(model, plan)


def _best_bound(m: StreamsModel, plan: StreamsPlan, flow_bound: int | None) -> None:
    """The larger of CP-SAT's bound and the flow's: both bound every assignment balanced in every count, so
    either holds for a plan that is (then so is the optimum); the plan is proven when it meets the bound."""
    if plan.method == "cpsat":
        balanced = plan.extra.get("balance_excess", 1) == 0
    else:
        balanced = all(plan.extra.get("balanced_counts", {"x": False}).values())
    if flow_bound is None or not balanced:
        return
    plan.bound = flow_bound if plan.bound is None else max(plan.bound, flow_bound)
    if plan.bound == target_cost(m, plan):
        plan.status = "optimal"


def _keep_flow_unless_better(m: StreamsModel, flow: StreamsPlan, cp: StreamsPlan) -> StreamsPlan:
    """CP-SAT improves the flow's plan, it does not redraw it: where both are balanced in every count and CP-SAT
    is neither cheaper nor needs fewer movements, the flow's plan stands (its ties are the flow's: e.g. a warm-up
    that has caught up is taken up before an idle stateless task moves), with CP-SAT's proof when it has one."""
    if cp.method != "cpsat" or cp.extra.get("balance_excess", 1) or not all(
            flow.extra.get("balanced_counts", {"x": False}).values()):
        return cp
    if (target_cost(m, cp), cp.extra.get("movements", 0)) < (target_cost(m, flow), flow.extra.get("movements", 0)):
        return cp
    if cp.status == "optimal":
        flow.status = "optimal"
    if cp.bound is not None:
        flow.bound = cp.bound if flow.bound is None else max(flow.bound, cp.bound)
    flow.extra = {**flow.extra, "cpsat_status": cp.extra.get("cpsat_status"), "kept_flow_plan": True}
    if cp.extra.get("reason"):
        flow.extra["reason"] = cp.extra["reason"]
    return flow
