"""The compiled build (mypyc, docs/compiled.md): what runs, and that pure Python still works.

* this install says what it runs (``rocketq --version``, ``rocketq info``), and a machine with a
  C compiler runs the compiled modules unless told not to;
* ``ROCKETQ_PURE=1`` at run time loads every listed ``.py``; a changed source does too;
* a build with no working C compiler still installs, pure, and the unit tests of the codec, the
  store and the send handler pass on that pure install (slow: it runs mypy and a wheel build).
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import json
import os
import random
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

from rocketq import __version__ as rocketq_version
from rocketq import _native
from rocketq.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]

#: The unit tests that run on the pure wheel: the codec, the store and the send handler, the
#: modules compiled in the normal build.
PURE_TESTS = (
    "tests/unit/test_protocol_frame.py",
    "tests/unit/test_protocol_command.py",
    "tests/unit/test_protocol_correlation.py",
    "tests/unit/test_protocol_hostile.py",
    "tests/unit/test_protocol_message.py",
    "tests/unit/test_protocol_message_ids.py",
    "tests/unit/test_protocol_message_properties.py",
    "tests/unit/test_protocol_message_captures.py",
    "tests/unit/test_store.py",
    "tests/unit/test_store_index.py",
    "tests/unit/test_broker_handlers.py",
)


def compiled_list() -> list[str]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        config = tomllib.load(f)
    modules: list[str] = config["tool"]["hatch"]["build"]["targets"]["wheel"]["hooks"]["custom"]["compile"]
    return modules


def rocketq(*args: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "rocketq", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={**os.environ, **(env or {})},
    )
    return proc.stdout


def have_c_compiler() -> bool:
    cc = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
    headers = Path(sysconfig.get_paths()["include"]) / "Python.h"
    return shutil.which(cc) is not None and headers.is_file()


def test_the_install_says_what_it_runs_and_compiles_where_it_can(capsys: pytest.CaptureFixture[str]) -> None:
    status = _native.status()
    assert main(["info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["compiled"] == status.compiled
    assert info["build"] == status.summary()
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.strip() == f"rocketq {rocketq_version}, {status.summary()}"
    if status.compiled:
        assert sorted(info["modules"]) == sorted(compiled_list())
        assert set(info["modules"].values()) <= {"compiled", "unavailable"}
        assert info["modules"]["rocketq.protocol.frame"] == "compiled"
    elif os.environ.get(_native.PURE_ENV) != "1" and have_c_compiler():
        pytest.fail(f"a C compiler is here but the install runs pure Python: {status.reason}")


def test_rocketq_pure_at_run_time_loads_every_source() -> None:
    info = json.loads(rocketq("info", "--json", env={_native.PURE_ENV: "1"}))
    assert info["compiled"] is False
    assert set(info["modules"].values()) <= {"pure", "unavailable"}
    if _native.status().modules:
        assert info["build"] == "pure Python (ROCKETQ_PURE=1)"
        assert info["modules"]["rocketq.protocol.frame"] == "pure"


def _fake_build(tmp_path: Path, names: list[str]) -> Path:
    """A package tree under ``tmp_path`` with a manifest of ``names`` as a build writes it."""
    digests = {}
    for name in names:
        source = tmp_path.joinpath(*name.split(".")).with_suffix(".py")
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_text(f"X = {random.randrange(10**9)}\n")
        source.with_suffix(SUFFIX).write_bytes(b"")
        digests[name] = hashlib.sha256(source.read_bytes()).hexdigest()
    manifest = tmp_path / "_native.json"
    manifest.write_text(json.dumps({"mypy": "2.4.1", "ext_suffix": SUFFIX, "modules": digests}))
    return manifest


def test_decide_is_all_or_nothing(tmp_path: Path) -> None:
    names = random.sample([f"rocketq.m{i}" for i in range(20)], k=random.randint(2, 6))
    manifest = _fake_build(tmp_path, names)

    status, force = _native.decide(str(manifest), str(tmp_path), {})
    assert (status.compiled, force, status.modules) == (True, False, tuple(sorted(names)))

    status, force = _native.decide(str(manifest), str(tmp_path), {_native.PURE_ENV: "1"})
    assert (status.compiled, force, status.reason) == (False, True, "ROCKETQ_PURE=1")

    # one source edited after the build: its .so would run the old code, so nothing compiled runs
    edited = random.choice(names)
    source = tmp_path.joinpath(*edited.split(".")).with_suffix(".py")
    source.write_text(source.read_text() + "Y = 1\n")
    status, force = _native.decide(str(manifest), str(tmp_path), {})
    assert (status.compiled, force) == (False, True)
    assert edited in status.reason

    status, force = _native.decide(str(tmp_path / "missing.json"), str(tmp_path), {})
    assert (status.compiled, force, status.modules) == (False, False, ())


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_no_c_compiler_installs_pure_python_and_its_unit_tests_pass(tmp_path: Path) -> None:
    """``CC=/bin/false``: the build hook's compile fails, the wheel still builds (pure, with a
    warning), and the codec, store and send-handler unit tests pass on that wheel's code."""
    pytest.importorskip("hatchling")
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("hatch_build.py", "README.md"):
        shutil.copy(ROOT / name, tree / name)
    # the fallback does not depend on which modules fail to compile: one small module keeps
    # mypy's analysis (before the C compiler is called) short
    pyproject = (ROOT / "pyproject.toml").read_text()
    start = pyproject.index("compile = [")
    end = pyproject.index("]", start) + 1
    (tree / "pyproject.toml").write_text(
        pyproject[:start] + 'compile = ["rocketq.protocol.codes"]' + pyproject[end:]
    )
    shutil.copytree(
        ROOT / "src",
        tree / "src",
        ignore=shutil.ignore_patterns("*.so", "*.pyd", "_native.json", "__pycache__"),
    )
    wheels = tmp_path / "wheels"
    env = {**os.environ, "CC": "/bin/false"}
    env.pop(_native.PURE_ENV, None)
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-v",  # pip shows a build backend's output only then
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(wheels),
            str(tree),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        check=False,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    assert "the mypyc build failed, installing pure Python instead" in build.stdout + build.stderr
    (wheel,) = wheels.glob("rocketq-*.whl")
    assert wheel.name.endswith("-py3-none-any.whl")  # a pure wheel
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        z.extractall(site)
    assert not [n for n in names if n.endswith((".so", ".pyd", "_native.json"))]
    assert "rocketq/protocol/frame.py" in names

    pure_env = {**os.environ, "PYTHONPATH": str(site)}
    pure_env.pop(_native.PURE_ENV, None)
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import rocketq, rocketq._native as n; print(rocketq.__file__, n.status().summary())",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=pure_env,
        check=True,
    )
    assert probe.stdout.startswith(str(site)), probe.stdout
    assert "pure Python (a pure-Python install)" in probe.stdout
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *PURE_TESTS],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
        env=pure_env,
        check=False,
    )
    assert tests.returncode == 0, tests.stdout[-4000:]
    assert " passed" in tests.stdout
