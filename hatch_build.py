"""Build hook: the hot path compiled with mypyc (docs/compiled.md).

hatchling runs :class:`NativeBuildHook` for every wheel, the editable one of
``pip install -e '.[test,spark]'`` included. It compiles the modules listed in ``pyproject.toml``
(``[tool.hatch.build.targets.wheel.hooks.custom] compile``, the one list) with mypyc, in place:
each ``src/rocketq/.../name.py`` gets a ``name.cpython-*.so`` beside it and the group's shared
library ``rocketq__mypyc.cpython-*.so`` lands in ``src/``. An extension module beside a ``.py``
of the same name is what Python imports (extension suffixes come first in the path finder), so
an editable install runs the compiled code straight from the source tree, and a regular wheel
carries the ``.so`` files beside the same ``.py`` files.

Pure Python stays an install away, never an error:

* ``ROCKETQ_PURE=1`` at build time compiles nothing;
* a build that cannot compile (no C compiler, no Python headers, a mypyc error) prints one
  warning and installs pure Python;
* the manifest ``src/rocketq/_native.json`` (written last, only after a successful build) names
  the compiled modules and the SHA-256 of each source (and of the whole tree: a second build of
  an unchanged tree, as CI's two README commands make, reuses the first one's modules);
  ``rocketq._native`` reads it at import and falls back to the ``.py`` files, all of them, when
  ``ROCKETQ_PURE=1`` is set at run time or when a source changed since it was compiled (the
  ``.so`` would run stale code).

``python hatch_build.py`` compiles in place outside pip (after editing a compiled module);
``python hatch_build.py --clean`` removes the artefacts.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import subprocess
import sys
import sysconfig
import tempfile
import time
import tomllib
from typing import Any

MANIFEST = "src/rocketq/_native.json"
GROUP = "rocketq"  # the shared library: rocketq__mypyc.<ext-suffix> in src/
SRC = "src"

# mypy reads [tool.mypy] (strict) too. Modules it follows but does not compile are checked by
# `mypy` in CI, not here. Third-party packages are seen as Any whatever is installed: pip's build
# environment has none of the project's dependencies while the venv beside it may have some by
# then (mypy would find them there), and a build must not depend on install order.
MYPY_FLAGS = (
    "--follow-imports=silent",
    "--no-site-packages",
    "--ignore-missing-imports",
    "--no-warn-unused-ignores",  # an ignore for a third-party type has nothing to ignore here
)


def module_path(name: str) -> str:
    """``rocketq.protocol.frame`` -> ``src/rocketq/protocol/frame.py``."""
    return os.path.join(SRC, *name.split(".")) + ".py"


def artefacts(root: str) -> list[str]:
    """Every file a compiled build leaves in the source tree (any interpreter's suffix)."""
    found = glob.glob(os.path.join(root, SRC, "**", "*.so"), recursive=True)
    found += glob.glob(os.path.join(root, SRC, "**", "*.pyd"), recursive=True)
    manifest = os.path.join(root, MANIFEST)
    if os.path.exists(manifest):
        found.append(manifest)
    return found


def clean(root: str) -> None:
    for path in artefacts(root):
        os.remove(path)


def source_digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def tree_digest(root: str, modules: list[str], opt_level: str) -> str:
    """What a build depends on: every source of the package (compiled code bakes in the types of
    the modules it imports), the module list, the compiler and the interpreter."""
    import mypy.version  # noqa: PLC0415

    h = hashlib.sha256()
    h.update(f"{mypy.version.__version__} {sys.version} {opt_level} {sorted(modules)} {MYPY_FLAGS}".encode())
    base = os.path.join(root, SRC)
    for path in sorted(glob.glob(os.path.join(base, "**", "*.py"), recursive=True)):
        h.update(os.path.relpath(path, base).encode() + b"\0")
        with open(path, "rb") as f:
            h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()


def up_to_date(root: str, modules: list[str], opt_level: str = "3") -> bool:
    """A previous build of this very tree is in place (pip install -e run twice compiles once)."""
    try:
        with open(os.path.join(root, MANIFEST), encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, ValueError):
        return False
    if manifest.get("tree") != tree_digest(root, modules, opt_level):
        return False
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    return all(os.path.isfile(os.path.join(root, module_path(m))[: -len(".py")] + suffix) for m in modules)


def compile_in_place(root: str, modules: list[str], opt_level: str = "3") -> dict[str, Any]:
    """Compile ``modules`` with mypyc into ``src/`` and write the manifest; raises on failure
    (with the artefacts of the attempt removed)."""
    # mypy and setuptools load in the child interpreter that compiles, not in the frontend's
    from mypyc.build import mypycify  # noqa: PLC0415
    from setuptools import Distribution  # noqa: PLC0415

    clean(root)
    started = time.monotonic()
    cwd = os.getcwd()
    paths = [module_path(m) for m in modules]
    with tempfile.TemporaryDirectory(prefix="rocketq-mypyc-") as tmp:
        os.chdir(root)
        try:
            extensions = mypycify(
                [*MYPY_FLAGS, *paths],
                opt_level=opt_level,
                group_name=GROUP,
                target_dir=os.environ.get("ROCKETQ_MYPYC_C_DIR") or os.path.join(tmp, "c"),
            )
            dist = Distribution({"ext_modules": extensions, "package_dir": {"": SRC}, "script_name": "-"})
            cmd = dist.get_command_obj("build_ext")
            cmd.inplace = True  # type: ignore[attr-defined]
            cmd.build_temp = os.path.join(tmp, "o")  # type: ignore[attr-defined]
            cmd.build_lib = os.path.join(tmp, "lib")  # type: ignore[attr-defined]
            cmd.parallel = os.cpu_count() or 1  # type: ignore[attr-defined]
            dist.run_command("build_ext")
        except BaseException:
            clean(root)
            raise
        finally:
            os.chdir(cwd)
    import mypy.version  # noqa: PLC0415

    manifest = {
        "mypy": mypy.version.__version__,
        "python": sys.version.split()[0],
        "ext_suffix": sysconfig.get_config_var("EXT_SUFFIX"),
        "group": f"{GROUP}__mypyc",
        "opt_level": opt_level,
        "seconds": round(time.monotonic() - started, 1),
        "modules": {m: source_digest(os.path.join(root, module_path(m))) for m in modules},
        "tree": tree_digest(root, modules, opt_level),
    }
    with open(os.path.join(root, MANIFEST), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    return manifest


def run_compile(root: str, modules: list[str]) -> tuple[bool, str]:
    """Compile in a child interpreter (mypy and setuptools stay out of the build frontend's
    process). Returns (ok, output)."""
    proc = subprocess.run(
        [sys.executable, os.path.join(root, "hatch_build.py"), *modules],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )
    return proc.returncode == 0, proc.stdout


if __name__ != "__main__":
    from hatchling.builders.hooks.plugin.interface import BuildHookInterface

    class NativeBuildHook(BuildHookInterface):  # type: ignore[misc]
        PLUGIN_NAME = "custom"

        def initialize(self, version: str, build_data: dict[str, Any]) -> None:
            if self.target_name != "wheel":
                return
            modules = list(self.config.get("compile", []))
            if os.environ.get("ROCKETQ_PURE") == "1":
                clean(self.root)
                self.app.display_info("rocketq: ROCKETQ_PURE=1, building pure Python (nothing compiled)")
                return
            if not modules:
                clean(self.root)
                return
            if up_to_date(self.root, modules):
                ok, output = True, "rocketq: the compiled modules in place are this tree's"
            else:
                ok, output = run_compile(self.root, modules)
            if not ok:
                tail = "\n".join(output.strip().splitlines()[-15:])
                # pip shows a build backend's stderr only with -v; print it anyway, and say why
                message = (
                    "rocketq: the mypyc build failed, installing pure Python instead "
                    "(same behaviour, slower; see docs/compiled.md):\n" + tail
                )
                self.app.display_warning(message)
                print(message, file=sys.stderr)
                clean(self.root)
                return
            build_data["pure_python"] = False
            build_data["infer_tag"] = True
            if version == "editable":
                return  # the .so files stay in src/, which the editable install puts on sys.path
            found = artefacts(self.root)
            build_data["artifacts"].extend("/" + os.path.relpath(p, self.root) for p in found)
            for path in found:  # the group's shared library sits at the top of the wheel
                rel = os.path.relpath(path, os.path.join(self.root, SRC))
                if os.sep not in rel:
                    build_data["force_include"][path] = rel


def _main(argv: list[str]) -> int:
    root = os.path.dirname(os.path.abspath(__file__))
    if argv == ["--clean"]:
        clean(root)
        return 0
    if not argv:
        with open(os.path.join(root, "pyproject.toml"), "rb") as f:
            config = tomllib.load(f)
        argv = config["tool"]["hatch"]["build"]["targets"]["wheel"]["hooks"]["custom"]["compile"]
    manifest = compile_in_place(root, argv)
    print(f"rocketq: compiled {len(manifest['modules'])} modules with mypyc in {manifest['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
