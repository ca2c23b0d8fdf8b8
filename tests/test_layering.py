"""Imports flow one way: adapters -> formulations, datasets -> core; the core imports nothing heavy. Rooms by
role: no package folder over 15 modules, no module over 700 lines, no ``_private`` name imported across modules.

import-linter cannot follow this layout (its subpackages live beside ``solver/``, mapped by
``package-dir``, so grimp does not see them under ``stickyflow``); this AST walk enforces the same contract.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("pandas", "pyspark", "matplotlib", "kafka", "aiokafka", "pyarrow", "networkx", "ortools")
MAX_MODULES = 15  # per package folder, its __init__ included
MAX_LINES = 700   # per module

# What may break the three room rules while a folder's restructuring is under way. Issue 38 emptied them (the
# solver, the adapters and the formulations in rooms by role); an entry added later leaves when its file is fixed
# (test_allowlists_hold_only_what_still_fails says so).
_CROWDED_FOLDERS_ALLOWED: set[str] = set()
_BIG_MODULES_ALLOWED: set[str] = set()
_PRIVATE_IMPORTS_ALLOWED: set[str] = set()  # modules that import another module's _private name


FOLDERS = {"solver": "stickyflow", "formulations": "stickyflow.formulations", "adapters": "stickyflow.adapters",
           "datasets": "stickyflow.datasets"}


def _module_name(path: Path) -> str:
    """The dotted name a source file imports as: ``solver/greedy/sticky.py`` is ``stickyflow.greedy.sticky``."""
    rel = path.relative_to(ROOT)
    parts = [FOLDERS[rel.parts[0]], *rel.parts[1:-1]]
    return ".".join(parts if path.stem == "__init__" else [*parts, path.stem])


def _package(path: Path) -> str:
    """The package a file's relative imports resolve against (a package's ``__init__`` is its own)."""
    name = _module_name(path)
    return name if path.stem == "__init__" else name.rpartition(".")[0]


def _imports(path: Path, *, top_level_only: bool) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found = []
    for node in nodes:
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append((_absolute(node, path), node.lineno))
    return found


def _absolute(node: ast.ImportFrom, path: Path) -> str:
    """The absolute module name of a ``from ... import``, relative ones resolved against the file's package."""
    base = node.module or ""
    if not node.level:
        return base
    parts = _package(path).split(".")
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join(parts + ([base] if base else []))


def _files(folder: str) -> list[Path]:
    """Every module of a folder, its subpackages' too."""
    return sorted((ROOT / folder).rglob("*.py"))


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


# ``python -m stickyflow`` is a launcher for the command line, not part of the library: it alone may reach up
_LAUNCHERS = ("__main__.py",)


@pytest.mark.parametrize("path", [p for p in _files("solver") if p.name not in _LAUNCHERS], ids=_rel)
def test_core_never_imports_upper_layers(path):
    for name, line in _imports(path, top_level_only=False):
        assert not name.startswith(("stickyflow.formulations", "stickyflow.adapters", "stickyflow.datasets")), \
            f"{_rel(path)}:{line} imports {name}"
        assert name.split(".")[0] not in ("pandas", "pyspark", "matplotlib", "kafka", "aiokafka"), \
            f"{_rel(path)}:{line} imports {name}"


@pytest.mark.parametrize("path", _files("solver"), ids=_rel)
def test_core_imports_nothing_heavy_at_import_time(path):
    for name, line in _imports(path, top_level_only=True):
        assert name.split(".")[0] not in HEAVY, f"{_rel(path)}:{line} imports {name} at import time"


@pytest.mark.parametrize("path", _files("formulations") + _files("datasets"), ids=_rel)
def test_formulations_and_datasets_never_import_adapters(path):
    for name, line in _imports(path, top_level_only=False):
        assert not name.startswith("stickyflow.adapters"), f"{path}:{line} imports {name}"


def test_import_stickyflow_stays_light():
    code = ("import sys, stickyflow; heavy = [m for m in %r if m in sys.modules]; "
            "print(','.join(heavy))" % (HEAVY,))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "", f"import stickyflow pulled in: {out}"


def _import_graph(folders=("solver", "formulations")) -> dict[str, set[str]]:
    """Module -> the package modules it imports anywhere in its body (deferred imports count too)."""
    paths = [p for f in folders for p in _files(f) if p.name not in _LAUNCHERS]
    names = {_module_name(p) for p in paths}
    graph: dict[str, set[str]] = {}
    for p in paths:
        deps = set()
        for name, _ in _imports(p, top_level_only=False):
            while name and name not in names:
                name = name.rpartition(".")[0]
            if name and name != _module_name(p) and name not in ("stickyflow", "stickyflow.formulations"):
                deps.add(name)
        graph[_module_name(p)] = deps
    return graph


@pytest.mark.parametrize("pair", [("stickyflow.greedy.streams_ha", "stickyflow.greedy.streams_learner"),
                                  ("stickyflow.formulations.streams.opt", "stickyflow.formulations.streams.flow"),
                                  ("stickyflow.formulations.streams.opt", "stickyflow.formulations.streams.cpsat")])
def test_no_import_circle_between(pair):
    """Issue 18's two circles stay untied: neither module reaches the other and back, deferred imports included."""
    graph = _import_graph()

    def reaches(a: str, b: str) -> bool:
        seen, todo = set(), [a]
        while todo:
            x = todo.pop()
            if x == b:
                return True
            if x not in seen:
                seen.add(x)
                todo += graph.get(x, ())
        return False

    a, b = pair
    assert a in graph and b in graph
    assert not (reaches(a, b) and reaches(b, a)), f"{a} and {b} import each other (through {graph[a] & graph[b]})"


# what a command line solve of a small snapshot must not import: each costs its start-up more than the solve
_SOLVE_SPARES = ("pathlib", "pandas")
_CP_MODEL = "ortools.sat.python.cp_model"


@pytest.mark.parametrize("example, cpsat", [("consumer-kip54-join.json", False), ("streams-scale-out.json", False),
                                            ("streams-racks-standbys.json", True)])
def test_a_command_line_solve_spares_slow_imports(example, cpsat, tmp_path):
    """``stickyflow solve`` on a bundled example loads none of ``_SOLVE_SPARES``: pathlib and what it pulls in
    were 7 ms of a 0.14 s process, and pandas, which OR-Tools' ``cp_model`` imports, 0.3 s of a streams solve
    that runs CP-SAT (the third example does: its flow plan is not proven). An editable install's import hook
    loads pathlib before anything of ours, so the child forgets it first and looks again after the solve."""
    out = tmp_path / "result.json"
    code = ("import sys\n"
            "for name in %r: sys.modules.pop(name, None)\n"
            "from stickyflow.adapters.cli import main\n"
            "assert main(['solve', %r, '-o', %r]) == 0\n"
            "print(','.join(n for n in %r if n in sys.modules), %r in sys.modules)"
            % (_SOLVE_SPARES, str(ROOT / "examples" / example), str(out), _SOLVE_SPARES, _CP_MODEL))
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded, cp_model = run.stdout.split()[:-1], run.stdout.split()[-1]
    assert cp_model == str(cpsat), f"the solve of {example} {'did not run' if cpsat else 'ran'} CP-SAT"
    assert not loaded, f"stickyflow solve {example} imported {loaded[0]}"
    assert out.read_bytes().startswith(b"{")


def test_cp_model_without_pandas_keeps_its_pandas_helpers():
    """The stand-in that spares pandas while ``cp_model`` is imported (``cpsat_backend.import_cp_model``) leaves
    no trace: pandas is not loaded by it, ``import pandas`` afterwards is the real module, and cp_model's own
    pandas helpers (which read ``pd.Index`` and ``pd.Series`` through the stand-in) still build and check
    series."""
    code = """
import sys
from stickyflow.formulations.cpsat_backend import import_cp_model
cp_model = import_cp_model()
assert "pandas" not in sys.modules, "pandas was imported"
import pandas as pd
assert type(pd) is type(sys) and pd.__file__.endswith("__init__.py") and sys.modules["pandas"] is pd, pd
m = cp_model.CpModel()
xs = m.new_bool_var_series("x", pd.Index(range(3)))
assert isinstance(xs, pd.Series) and len(xs) == 3
try:
    m.new_bool_var_series("y", [0, 1])  # not an Index: cp_model's own check, through the stand-in
except TypeError:
    pass
else:
    raise AssertionError("a list was taken for a pandas Index")
m.add(sum(xs) == 2)
solver = cp_model.CpSolver()
assert solver.solve(m) == cp_model.OPTIMAL and sum(solver.boolean_value(x) for x in xs) == 2
print("ok")
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-2000:]


# --------------------------------------------------------------------------- rooms by role

def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _private_imports(path: Path) -> list[str]:
    """Where ``path`` takes a ``_private`` name of another of our modules: ``from m import _x`` (relative too),
    ``from pkg import _mod``, ``import pkg._mod``, or anything from a ``_private`` module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom):
            base = _absolute(node, path)
            if not base.startswith("stickyflow"):
                continue
            names = [a.name for a in node.names if _private(a.name)]
            if names or any(_private(part) for part in base.split(".")):
                found.append(f"{_rel(path)}:{node.lineno} from {base} import {', '.join(names) or '...'}")
        elif isinstance(node, ast.Import):
            found += [f"{_rel(path)}:{node.lineno} import {a.name}" for a in node.names
                      if a.name.startswith("stickyflow") and any(_private(p) for p in a.name.split("."))]
    return found


def _package_folders() -> list[Path]:
    return sorted({p.parent for f in FOLDERS for p in _files(f)})


def _crowded(folder: Path) -> bool:
    return len(list(folder.glob("*.py"))) > MAX_MODULES


def _big(path: Path) -> bool:
    return len(path.read_text().splitlines()) > MAX_LINES


@pytest.mark.parametrize("path", [p for f in FOLDERS for p in _files(f)], ids=_rel)
def test_no_module_imports_a_private_name_of_another(path):
    """A helper two modules share has a public name in the module that owns it."""
    if _rel(path) in _PRIVATE_IMPORTS_ALLOWED:
        pytest.skip("allowed until its folder is restructured")
    assert not _private_imports(path), "\n".join(_private_imports(path))


@pytest.mark.parametrize("folder", _package_folders(), ids=_rel)
def test_no_package_folder_holds_more_than_15_modules(folder):
    if _rel(folder) in _CROWDED_FOLDERS_ALLOWED:
        pytest.skip("allowed until it is restructured")
    modules = sorted(p.name for p in folder.glob("*.py"))
    assert len(modules) <= MAX_MODULES, f"{_rel(folder)} holds {len(modules)} modules: {', '.join(modules)}"


@pytest.mark.parametrize("path", [p for f in FOLDERS for p in _files(f)], ids=_rel)
def test_no_module_is_longer_than_700_lines(path):
    if _rel(path) in _BIG_MODULES_ALLOWED:
        pytest.skip("allowed until it is split")
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{_rel(path)} has {lines} lines: split it along its seams"


def test_allowlists_hold_only_what_still_fails():
    """An allowlisted file or folder that now keeps the rule leaves its list (the lists only shrink)."""
    assert {f for f in _CROWDED_FOLDERS_ALLOWED if not _crowded(ROOT / f)} == set()
    assert {f for f in _BIG_MODULES_ALLOWED if not _big(ROOT / f)} == set()
    assert {f for f in _PRIVATE_IMPORTS_ALLOWED if not _private_imports(ROOT / f)} == set()


def test_the_walk_sees_subpackages():
    """The walk reaches modules in subpackages and names them as Python imports them."""
    names = {_module_name(p) for f in FOLDERS for p in _files(f)}
    assert {"stickyflow", "stickyflow.greedy", "stickyflow.greedy.sticky", "stickyflow.load",
            "stickyflow.datasets.simulator", "stickyflow.datasets.simulator.run", "stickyflow.adapters.cli",
            "stickyflow.adapters.cli.capture", "stickyflow.adapters.compare.rows"} <= names
    path = ROOT / "solver" / "greedy" / "sticky.py"
    assert _package(path) == "stickyflow.greedy"
    relative = ast.parse("from ..model.consumer import ConsumerSnapshot").body[0]
    assert _absolute(relative, path) == "stickyflow.model.consumer"
