"""The bench suite's names and sizes: which assignors, events, subscriptions and sizes ``stickyflow bench`` runs.

Standard library only: the command line reads these for its defaults and checks without importing numpy.
"""

STICKYFLOW_ASSIGNORS = ("optimal", "sticky", "range", "roundrobin", "uniform", "kip1071")
PEER_ASSIGNORS = ("kp-sticky", "kp-range", "kp-roundrobin")
ASSIGNORS = STICKYFLOW_ASSIGNORS + PEER_ASSIGNORS
EVENTS = ("fresh", "join", "leave")
SUBSCRIPTIONS = ("equal", "mixed")

# the suite's sizes: consumer (partitions, members), streams (tasks, clients)
FULL_CONSUMER_SIZES = ((100, 10), (1_000, 50), (10_000, 100), (10_000, 1_000), (100_000, 500), (1_000_000, 2_000))
QUICK_CONSUMER_SIZES = ((100, 10), (1_000, 50))
FULL_STREAMS_SIZES = ((100, 10), (1_000, 100), (10_000, 1_000))
QUICK_STREAMS_SIZES = ((100, 10),)
