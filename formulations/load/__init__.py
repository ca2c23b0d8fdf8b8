"""Balance by load: the front door (:mod:`.opt`), the fractional bound as a max flow (:mod:`.flow`) and CP-SAT's
proof of the rules (:mod:`.cpsat`)."""
