"""The lazy packages: every public name of ``rocketq``, ``rocketq.client`` and
``rocketq.dashboard`` resolves, to the object its module defines, and ``import`` stays light."""

from __future__ import annotations

import doctest
import importlib
import subprocess
import sys

import pytest

from rocketq import lazy


def test_module_doctests() -> None:
    failures, tried = doctest.testmod(lazy)
    assert tried
    assert not failures


@pytest.mark.parametrize("package", ["rocketq", "rocketq.client", "rocketq.dashboard"])
def test_every_public_name_resolves(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None, name
        assert name in dir(module)
    with pytest.raises(AttributeError, match="no attribute"):
        _ = module.no_such_name


def test_the_spark_workers_import_no_consumer() -> None:
    """What the Spark source's Python workers import loads neither the consumers nor the producer
    (a fresh interpreter: this test process has loaded everything already)."""
    code = (
        "import sys, rocketq.client.config, rocketq.client.blocking\n"
        "loaded = [m for m in sys.modules if m.startswith(('rocketq.client.consumer', "
        "'rocketq.client.producer', 'rocketq.client.instance'))]\n"
        "print(loaded)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out
