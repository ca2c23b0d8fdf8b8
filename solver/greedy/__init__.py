"""Kafka's own assignment algorithms, as faithful greedy baselines: one module per algorithm.

Consumer groups: sticky, range and round-robin, uniform (KIP-848), KIP-1071's
streams-group assignor and the load-based ones (LPT, lag-based); Streams: the
high-availability assignor, learner mode, rack-aware moves and the rank of a
rebalance. Each is registered by name in :mod:`stickyflow.registry`.
"""
