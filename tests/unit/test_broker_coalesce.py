"""Notification coalescing (:mod:`rocketq.broker.coalesce`) and its settings."""

from __future__ import annotations

import pytest

from rocketq.broker import BrokerConfig
from rocketq.broker.coalesce import NotifyCoalescer
from rocketq.cli.main import build_parser
from rocketq.cli.server import broker_feature_options
from rocketq.errors import ConfigError


def test_the_first_change_opens_a_window_and_later_ones_join_it() -> None:
    c = NotifyCoalescer(0.3)
    assert c.change("g", 10.0) == pytest.approx(10.3)
    assert c.change("g", 10.1) is None
    assert c.change("g", 10.29) is None
    assert c.change("h", 10.2) == pytest.approx(10.5)
    assert c.due(10.29) == []
    assert c.due(10.3) == ["g"]
    assert c.pending() == {"h": pytest.approx(10.5)}
    # a change after g's window ended opens a new one
    assert c.change("g", 10.31) == pytest.approx(10.61)
    assert c.due(11.0) == ["h", "g"]  # oldest deadline first
    assert c.pending() == {}
    assert (c.stats.changes, c.stats.rounds) == (5, 3)


@pytest.mark.parametrize("window", [0.0, -0.1, float("nan")])
def test_a_coalescer_needs_a_positive_window(window: float) -> None:
    with pytest.raises(ValueError, match="positive"):
        NotifyCoalescer(window)


def test_the_broker_setting_defaults_to_rocketmqs_one_notice_per_change() -> None:
    assert BrokerConfig().notify_coalesce_window == 0.0
    assert BrokerConfig(notify_coalesce_window=0.25).notify_coalesce_window == 0.25
    for bad in (-1.0, float("inf"), float("nan")):
        with pytest.raises(ConfigError, match="notify_coalesce_window"):
            BrokerConfig(notify_coalesce_window=bad)


@pytest.mark.parametrize("command", ["server", "broker"])
def test_server_and_broker_take_the_window_option(command: str) -> None:
    required = ["--namesrv", "127.0.0.1:9876"] if command == "broker" else []
    args = build_parser().parse_args([command, *required, "--notify-coalesce-window", "0.3"])
    assert broker_feature_options(args)["notify_coalesce_window"] == 0.3
    args = build_parser().parse_args([command, *required])
    assert broker_feature_options(args)["notify_coalesce_window"] == 0.0


@pytest.mark.parametrize("value", ["-0.1", "soon", "inf"])
def test_a_bad_window_is_a_usage_error(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["server", "--notify-coalesce-window", value])
    assert exc.value.code == 2
    assert "--notify-coalesce-window" in capsys.readouterr().err
