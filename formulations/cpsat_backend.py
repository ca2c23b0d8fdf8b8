"""OR-Tools for every formulation, with a typed error when it is missing: CP-SAT (``cp_model``) for the CP-SAT
formulations (:mod:`.streams.cpsat`, :mod:`.load.cpsat`), imported without pandas where that is safe, and the
graph solvers (``max_flow``, ``min_cost_flow``) for the flows.
"""

from __future__ import annotations

import importlib
import sys
import threading
import types

from stickyflow.errors import BackendMissingError

__all__ = ["cp_model_module", "import_cp_model", "short_solver", "ortools_graph"]


def cp_model_module():
    """OR-Tools' ``cp_model`` for every CP-SAT formulation, imported as :func:`import_cp_model` says (typed error
    when OR-Tools is missing)."""
    try:
        return import_cp_model()
    except ImportError as exc:  # pragma: no cover
        raise BackendMissingError("OR-Tools is not installed: pip install ortools (a core dependency)") from exc


def ortools_graph():
    """OR-Tools' ``max_flow`` and ``min_cost_flow`` modules (typed error when OR-Tools is missing)."""
    try:
        from ortools.graph.python import max_flow, min_cost_flow
    except ImportError as exc:  # pragma: no cover - exercised by the fallback tests, which block the import
        raise BackendMissingError("OR-Tools is not installed: pip install ortools (a core dependency)") from exc
    return max_flow, min_cost_flow


def short_solver(cp_model, *, seed: int, det_time: float, wall_s: float = 60.0):
    """A CP-SAT solver for a short side search (a start, a bound, a check of a hint): one worker, a fixed seed,
    stopped by ``det_time`` deterministic seconds, so the same model gives the same answer however busy the
    machine; ``wall_s`` of wall time is a safety net only."""
    solver = cp_model.CpSolver()
    p = solver.parameters
    p.num_workers = 1
    p.random_seed = int(seed)
    p.max_deterministic_time = max(det_time, 1e-3)
    p.max_time_in_seconds = wall_s
    return solver


_CP_IMPORT = threading.Lock()


def import_cp_model():
    """OR-Tools' ``cp_model``, imported without importing pandas where that is safe.

    ``cp_model`` imports pandas at its top for its pandas helpers (``new_int_var_series`` and the like),
    which stickyflow does not use: on this project's machine 0.3 s of the 0.9 s that ``stickyflow solve``
    took on a small streams snapshot solved by CP-SAT. In a process with one thread that has not loaded pandas,
    a stand-in (:class:`_PandasOnDemand`) sits in pandas' place in ``sys.modules`` while ``cp_model`` is
    imported and is taken out right after. ``cp_model`` keeps it as its ``pd``; from then on it hands every
    name to the real pandas, imported on first use, so those helpers work as before, and ``import pandas``
    anywhere gets the real module. With a second thread (which could import pandas meanwhile), with pandas
    loaded already, or when the import fails with the stand-in, ``cp_model`` is imported as it is.
    """
    done = sys.modules.get("ortools.sat.python.cp_model")
    if done is not None:
        return done
    with _CP_IMPORT:
        if "pandas" in sys.modules or threading.active_count() > 1:
            from ortools.sat.python import cp_model
            return cp_model
        stand_in = _PandasOnDemand("pandas")
        sys.modules["pandas"] = stand_in
        try:
            from ortools.sat.python import cp_model
        except Exception:  # noqa: BLE001  (another OR-Tools wants more of pandas at import: import it whole)
            cp_model = None
        finally:
            stand_in.__dict__["_importing"] = False
            if sys.modules.get("pandas") is stand_in:
                del sys.modules["pandas"]
        if cp_model is None:
            from ortools.sat.python import cp_model
        return cp_model


class _PandasOnDemand(types.ModuleType):
    """Pandas' place in ``sys.modules`` while ``cp_model`` is imported (:func:`import_cp_model`): meanwhile a
    name read from it is a placeholder class (``cp_model`` reads ``pd.Index`` and ``pd.Series`` for its type
    annotations); afterwards every name comes from the real pandas, imported on first use.

    >>> pd = _PandasOnDemand("pandas")
    >>> pd.Series.__name__, pd.Series is pd.Series
    ('Series', True)
    """

    def __init__(self, name: str):
        super().__init__(name)
        self.__dict__.update(_importing=True, _placeholders={})

    def __getattr__(self, name: str):
        if self.__dict__["_importing"]:
            if name.startswith("__"):
                raise AttributeError(name)
            return self.__dict__["_placeholders"].setdefault(name, type(name, (), {"__module__": "pandas"}))
        return getattr(importlib.import_module("pandas"), name)
