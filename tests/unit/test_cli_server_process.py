"""Process-wide settings ``rocketq server`` and ``rocketq broker`` apply before serving."""

from __future__ import annotations

import sys

from rocketq.cli.server import SERVER_SWITCH_INTERVAL, tune_server_process


def test_server_process_gets_a_short_switch_interval_for_the_group_commit_thread() -> None:
    before = sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.005)  # CPython's default
        tune_server_process()
        assert sys.getswitchinterval() == SERVER_SWITCH_INTERVAL
        assert SERVER_SWITCH_INTERVAL < 0.005  # shorter than the default, or it changes nothing
    finally:
        sys.setswitchinterval(before)
