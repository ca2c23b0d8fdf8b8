"""The snapshot models: consumer groups and Streams applications, frozen, with their JSON readers and writers.

:mod:`stickyflow.model.consumer` and :mod:`stickyflow.model.streams` hold the models;
:mod:`stickyflow.model.jsonio` and :mod:`stickyflow.model.arrays` are the JSON and
numpy helpers that the solver and the formulations share.
"""
