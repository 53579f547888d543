"""The layering of docs/architecture.md, as tests: the import contracts of pyproject.toml
(``lint-imports``, the maintained import-linter) and the private-module rule it cannot express."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
ROOT = SRC.parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _package_of(module: str, is_package: bool) -> str:
    return module if is_package else module.rpartition(".")[0]


def _imports(path: Path) -> list[tuple[int, str]]:
    """Absolute names of the rocketq modules (or module attributes) ``path`` imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    here = _module_name(path)
    package = _package_of(here, path.name == "__init__.py")
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names if a.name.startswith("rocketq"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            if module.startswith("rocketq"):
                out.append((node.lineno, module))
                out.extend((node.lineno, f"{module}.{a.name}") for a in node.names)
    return out


def _package_path(owner: str) -> str:
    """The package that may use ``owner``'s private parts: ``owner`` itself when it is a package,
    else the package of the module ``owner``."""
    if (SRC / Path(*owner.split("."))).is_dir():
        return owner
    return owner.rpartition(".")[0]


def test_no_module_imports_another_package_s_private_module() -> None:
    """``rocketq.a._b`` (a private module, or a private name of a module of ``rocketq.a``) may be
    imported from inside ``rocketq.a`` only."""
    offences = []
    for path in sorted(SRC.rglob("*.py")):
        here = _module_name(path)
        for lineno, name in _imports(path):
            parts = name.split(".")
            for i, part in enumerate(parts):
                if part.startswith("_") and not part.startswith("__") and i > 0:
                    owner = _package_path(".".join(parts[:i]))
                    if not (here == owner or here.startswith(owner + ".")):
                        offences.append(f"{path.relative_to(ROOT)}:{lineno} imports {name}")
                    break
    assert offences == []


@pytest.mark.skipif(shutil.which("lint-imports") is None, reason="import-linter is not installed")
def test_import_contracts_hold() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    cmd = [str(lint) if lint.exists() else "lint-imports", "--no-cache"]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
