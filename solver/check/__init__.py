"""Checks of answers and inputs: validity, metrics, KIP-429's cooperative split, the snapshot readers' checker.

Consumer groups: :mod:`~stickyflow.check.answer` (the answer's array form),
:mod:`~stickyflow.check.consumer` (the check and metrics), :mod:`~stickyflow.check.cooperative`
(KIP-429's split). Streams: :mod:`~stickyflow.check.streams` (validation and metrics),
:mod:`~stickyflow.check.streams_tables` (the lookup tables the assignors share) and
:mod:`~stickyflow.check.kip924` (KIP-924's own rules). Load and plans:
:mod:`~stickyflow.check.load`, :mod:`~stickyflow.check.plan`. Input:
:mod:`~stickyflow.check.input` collects the problems a snapshot reader finds.
"""
