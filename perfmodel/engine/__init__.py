"""Serving engines as one model: scheduler knobs plus the step- and request-level terms fitted on
measurements, and the engine-aware step time that every command (``predict``, the simulator, the
steady state, ``max-load``, ``plan``, ``estimate``, ``validate``) uses.

Data flow: specs -> ops -> step (:mod:`perfmodel.core.step`) -> **engine** -> serving -> planning.
"""
