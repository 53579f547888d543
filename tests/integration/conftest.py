"""Fixtures the integration tests share.

``cluster``: a :class:`~tests.integration.clientkit.ClusterThread` (embedded name server and
broker on port 0, data in the test's temp dir), closed after the test. A module that needs other
broker settings defines its own ``cluster`` fixture, which takes precedence over this one.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.clientkit import ClusterThread


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ClusterThread]:
    c = ClusterThread(tmp_path / "cluster")
    try:
        yield c
    finally:
        c.close()
