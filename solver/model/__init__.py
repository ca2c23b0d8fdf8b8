"""The snapshot models: consumer groups and Streams applications, frozen, with their JSON readers and writers.

:mod:`~stickyflow.model.consumer` (with its readers of members and topics,
:mod:`~stickyflow.model.consumer_members`, and KIP-341's claims,
:mod:`~stickyflow.model.consumer_claims`) and :mod:`~stickyflow.model.streams` (with
:mod:`~stickyflow.model.streams_read`) hold the models; :mod:`~stickyflow.model.jsonio`
and :mod:`~stickyflow.model.arrays` are the JSON and numpy helpers the solver and the
formulations share.
"""
