"""Which build runs: the hot path compiled with mypyc, or pure Python (docs/compiled.md).

The build (``hatch_build.py``) compiles the modules listed in ``pyproject.toml`` into extension
modules beside their ``.py`` sources and writes ``_native.json``: the modules, and the SHA-256 of
each source as compiled. :func:`install` runs first thing in ``import rocketq`` and decides once
per process:

* no manifest: a pure-Python install (``ROCKETQ_PURE=1`` at build time, or no C compiler), the
  ``.py`` files are all there is;
* ``ROCKETQ_PURE=1`` in the environment, or a source that changed since it was compiled (an
  edited checkout whose ``.so`` would run the old code): every listed module loads from its
  ``.py``, all of them together, since compiled modules call each other's native code and
  classes directly and a mix would hold two different classes of one name;
* otherwise the extension modules load (Python's path finder prefers them to a ``.py`` of the
  same name).

Importing this module installs the decision (``rocketq/__init__.py`` imports it before anything
else). Nothing here imports a compiled module; :func:`status` says what was decided and
:func:`loaded_from` what each listed module really loaded from.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Final

__all__ = ["PURE_ENV", "NativeStatus", "decide", "install", "loaded_from", "status"]

PURE_ENV: Final = "ROCKETQ_PURE"
"""``ROCKETQ_PURE=1`` at build time compiles nothing; at run time it loads every ``.py``."""

_PACKAGE_DIR: Final = os.path.dirname(os.path.abspath(__file__))
_MANIFEST: Final = os.path.join(_PACKAGE_DIR, "_native.json")


@dataclass(frozen=True, slots=True, kw_only=True)
class NativeStatus:
    """What :func:`install` decided for this process."""

    compiled: bool
    """The compiled modules are the ones imported."""
    reason: str
    """Why the run is pure Python ("" when compiled)."""
    modules: tuple[str, ...]
    """The modules the build compiled (empty for a pure install)."""
    mypy: str
    """The mypy (mypyc) version that compiled them ("" for a pure install)."""

    def summary(self) -> str:
        if self.compiled:
            return f"compiled with mypyc {self.mypy} ({len(self.modules)} modules)"
        return f"pure Python ({self.reason})"


class _PureFinder(importlib.abc.MetaPathFinder):
    """Finds the listed modules' ``.py`` sources, ahead of the extension modules beside them."""

    def __init__(self, names: Sequence[str]) -> None:
        self._names = frozenset(names)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self._names:
            return None
        leaf = fullname.rpartition(".")[2] + ".py"
        for entry in path or ():
            candidate = os.path.join(entry, leaf)
            if os.path.isfile(candidate):
                return importlib.util.spec_from_file_location(fullname, candidate)
        return None


_status: NativeStatus | None = None


def decide(manifest_path: str, root: str, environ: Mapping[str, str]) -> tuple[NativeStatus, bool]:
    """The status for the manifest at ``manifest_path`` (module sources under ``root``, the folder
    that holds the ``rocketq`` package), and whether the ``.py`` files must be forced over the
    extension modules beside them."""
    try:
        with open(manifest_path, encoding="utf-8") as f:
            manifest = json.load(f)
        digests: dict[str, str] = dict(manifest["modules"])
        mypy = str(manifest["mypy"])
        suffix = str(manifest["ext_suffix"])
    except (OSError, ValueError, KeyError, TypeError):
        return NativeStatus(compiled=False, reason="a pure-Python install", modules=(), mypy=""), False
    modules = tuple(sorted(digests))

    def pure(reason: str, force: bool = True) -> tuple[NativeStatus, bool]:
        return NativeStatus(compiled=False, reason=reason, modules=modules, mypy=mypy), force

    if environ.get(PURE_ENV) == "1":
        return pure(f"{PURE_ENV}=1")
    if suffix not in importlib.machinery.EXTENSION_SUFFIXES:
        return pure(f"compiled for another interpreter ({suffix})", force=False)
    for name, digest in digests.items():
        path = os.path.join(root, *name.split(".")) + ".py"
        try:
            with open(path, "rb") as source:
                current = hashlib.sha256(source.read()).hexdigest()
        except OSError:
            current = ""
        if current != digest:
            return pure(f"{name} changed since it was compiled; rebuild: pip install -e .")
        if not os.path.isfile(path[: -len(".py")] + suffix):
            return pure(f"{name} has no compiled module; rebuild: pip install -e .")
    return NativeStatus(compiled=True, reason="", modules=modules, mypy=mypy), False


def install() -> NativeStatus:
    """Decide compiled or pure for this process (once; later calls return the first answer)."""
    global _status
    if _status is None:
        decided, force = decide(_MANIFEST, os.path.dirname(_PACKAGE_DIR), os.environ)
        if force:
            sys.meta_path.insert(0, _PureFinder(decided.modules))
        _status = decided
    return _status


def status() -> NativeStatus:
    """What :func:`install` decided."""
    return install()


def loaded_from(name: str) -> str:
    """What ``name`` loads from, as the import system finds it (without running it):
    ``"compiled"`` (an extension module), ``"pure"`` (its ``.py``), or ``"unavailable"`` (its
    package needs an extra that is not installed, e.g. ``rocketq.spark`` without ``[spark]``)."""
    try:
        spec = importlib.util.find_spec(name)
    except ImportError:
        return "unavailable"
    origin = (spec.origin if spec is not None else None) or ""
    if origin.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
        return "compiled"
    return "pure" if origin.endswith(".py") else "unavailable"


install()
