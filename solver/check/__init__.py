"""Checks of answers and inputs: validity, metrics, KIP-429's cooperative split, the snapshot readers' checker.

One module per subject: :mod:`~stickyflow.check.consumer` and :mod:`~stickyflow.check.streams`
validate assignments and measure them, :mod:`~stickyflow.check.load` and
:mod:`~stickyflow.check.plan` do the same for load balancing and plans, and
:mod:`~stickyflow.check.input` collects the problems a snapshot reader finds.
"""
