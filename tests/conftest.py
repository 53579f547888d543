"""Test-run configuration shared by every tier.

By default ``pytest`` runs the fast unit tests only. ``pytest --all`` (the README's test command,
and what CI runs) also runs the tests marked ``integration``, ``spark`` and ``slow``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests import browserkit

_SLOW_MARKERS = ("integration", "spark", "slow")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--all",
        action="store_true",
        default=False,
        help="also run the tests marked integration, spark and slow (CI does)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--all") or config.getoption("-m"):
        return
    selected: list[pytest.Item] = []
    deselected: list[pytest.Item] = []
    for item in items:
        if any(item.get_closest_marker(name) for name in _SLOW_MARKERS):
            deselected.append(item)
        else:
            selected.append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = selected


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """A headless Debian Chromium driven by Playwright (see :mod:`tests.browserkit`), shared by the
    tests of one module; skips with the reason when Chromium or Playwright is missing.

    Not shared by the whole session: while Playwright's sync API is open it keeps an event loop
    running on the main thread, and every later test that calls ``asyncio.run()`` there would
    fail ("cannot be called from a running event loop")."""
    why = browserkit.missing()
    if why is not None:
        pytest.skip(why)
    with browserkit.launch() as browser:
        yield browser
