"""Every example in a docstring of the package runs and prints what it says (the docs cannot rot)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import stickyflow


def _modules() -> list[str]:
    names = ["stickyflow"]
    for info in pkgutil.walk_packages(stickyflow.__path__, "stickyflow."):
        names.append(info.name)
    for sub in ("formulations", "adapters", "datasets"):
        pkg = importlib.import_module(f"stickyflow.{sub}")
        names.append(pkg.__name__)
        names += [i.name for i in pkgutil.walk_packages(pkg.__path__, f"stickyflow.{sub}.")]
    return sorted(set(names))


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples(name):
    if name.endswith("__main__"):
        pytest.skip("entry point")
    try:
        mod = importlib.import_module(name)
    except ImportError as exc:  # an optional extra that is not installed
        pytest.skip(f"{name}: {exc}")
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} docstring examples of {name} failed"
