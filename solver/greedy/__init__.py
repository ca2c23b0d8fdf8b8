"""Kafka's own assignment algorithms, as faithful greedy baselines: one module per algorithm.

Consumer groups: sticky (:mod:`~stickyflow.greedy.sticky`), range and round-robin,
uniform (KIP-848) and the load-based LPT and lag-based (:mod:`~stickyflow.greedy.by_load`).
Kafka Streams: the high-availability assignor (:mod:`~stickyflow.greedy.streams_ha`), learner
mode, the rack-aware moves, KIP-1071's server-side sticky task assignor, and the rank
of a rebalance; :mod:`~stickyflow.greedy.streams_state` holds the steps they share.
Each assignor is registered by name in :mod:`stickyflow.registry`.
"""
