"""Plans for an autoscaler: the fewest members, then the least moved load, in CP-SAT (:mod:`.cpsat`), and the plan
of least predicted delay (:mod:`.latency`)."""
