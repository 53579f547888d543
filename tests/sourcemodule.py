"""A module as its ``.py`` source runs it, for doctests of modules the build compiles with mypyc.

A mypyc-compiled module keeps no docstrings (neither the module's nor its functions'), so
``doctest.testmod`` on it finds nothing. :func:`source_module` returns the module itself when it
runs from its source, and otherwise a second copy executed from the ``.py`` beside the extension
(under another name, so that it replaces nothing): the doctests then run, on the same code.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["source_module"]


def source_module(module: ModuleType) -> ModuleType:
    origin = module.__file__ or ""
    if not origin.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
        return module
    source = Path(origin).parent / (module.__name__.rpartition(".")[2] + ".py")
    name = f"{module.__name__}__source"
    spec = importlib.util.spec_from_file_location(name, source)
    assert spec is not None
    assert spec.loader is not None
    copy = importlib.util.module_from_spec(spec)
    sys.modules[name] = copy  # dataclasses look their module up while the class is made
    spec.loader.exec_module(copy)
    return copy
