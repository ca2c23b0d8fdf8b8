"""The optimization models, a room per problem: :mod:`.consumer` (the consumer group's min-cost flow and its
networkx reference), :mod:`.streams` (Kafka Streams tasks: flows and CP-SAT), :mod:`.load` (balance by load) and
:mod:`.plan` (plans for an autoscaler); :mod:`.cpsat_backend` imports CP-SAT for all of them."""
