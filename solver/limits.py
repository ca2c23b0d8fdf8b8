"""The largest problem one solve accepts: checked when a snapshot is read, before anything large is built.

Beyond a limit the reader raises :class:`~stickyflow.InvalidSnapshotError` naming the field and the
limit (exit 2 on the command line), so that no input makes the process run out of memory. The limits
hold on a machine with 8 GiB of memory with room to spare: at the consumer limit, the optimizer peaks
near 4 GiB (about 360 bytes per partition at 1,000,000 partitions, measured; see the README).

>>> MAX_PARTITIONS
10000000
"""

from __future__ import annotations

__all__ = ["MAX_PARTITIONS", "MAX_MEMBERS", "MAX_SUBSCRIPTIONS", "MAX_TASKS", "MAX_CLIENTS", "MAX_TASK_CLIENT_PAIRS"]

#: Consumer groups: partitions of subscribed and unsubscribed topics together.
MAX_PARTITIONS = 10_000_000
#: Consumer groups: members.
MAX_MEMBERS = 100_000
#: Consumer groups: (member, topic) subscription pairs.
MAX_SUBSCRIPTIONS = 20_000_000
#: Streams applications: tasks.
MAX_TASKS = 1_000_000
#: Streams applications: clients.
MAX_CLIENTS = 100_000
#: Streams applications: tasks x clients (the optimizer's placement choices).
MAX_TASK_CLIENT_PAIRS = 50_000_000
