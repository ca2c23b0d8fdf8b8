"""Plans: the problem, the planner front door (:func:`stickyflow.plan`) and one module per method."""
