"""The broker feature switches of ``rocketq server`` / ``rocketq broker``: SQL92 filters and the
transaction checks reach :class:`BrokerConfig`; bad values are one line and exit code 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketq.broker import BrokerConfig
from rocketq.cli.main import build_parser, main
from rocketq.cli.server import broker_feature_options


@pytest.mark.parametrize("command", [["server"], ["broker", "--namesrv", "127.0.0.1:9876"]])
def test_switches_reach_the_broker_config(command: list[str]) -> None:
    args = build_parser().parse_args(
        [
            *command,
            "--enable-property-filter",
            "--transaction-timeout",
            "2.5",
            "--transaction-check-interval",
            "0.5",
            "--transaction-check-max",
            "3",
        ]
    )
    config = BrokerConfig(**broker_feature_options(args))
    assert config.enable_property_filter
    assert (config.transaction_timeout, config.transaction_check_interval) == (2.5, 0.5)
    assert config.transaction_check_max == 3


def test_defaults_are_rocketmqs() -> None:
    config = BrokerConfig(**broker_feature_options(build_parser().parse_args(["server"])))
    assert not config.enable_property_filter
    assert (config.transaction_timeout, config.transaction_check_interval) == (6.0, 60.0)
    assert config.transaction_check_max == 15


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--transaction-timeout", "0", "must be a positive number of seconds"),
        ("--transaction-check-interval", "soon", "not a number of seconds"),
        ("--transaction-timeout", "inf", "must be at most a year (31536000 seconds), got inf"),
        ("--transaction-check-max", "0", "must be at least 1"),
    ],
)
def test_bad_values_are_one_line_and_exit_2(
    option: str, value: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["server", option, value])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert message in err[0]
    assert "Traceback" not in err[0]


@pytest.mark.parametrize("command", [["server"], ["broker", "--namesrv", "127.0.0.1:9876"]])
def test_acl_file_reaches_the_broker_config(command: list[str], tmp_path: Path) -> None:
    acl = tmp_path / "plain_acl.yml"
    acl.write_text("accounts:\n  - accessKey: RocketMQ\n    secretKey: '12345678'\n    admin: true\n")
    config = BrokerConfig(**broker_feature_options(build_parser().parse_args([*command, "--acl", str(acl)])))
    assert config.acl_file == acl.resolve()
    assert BrokerConfig(**broker_feature_options(build_parser().parse_args(command))).acl_file is None


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read the ACL file"),
        ("accounts: [ {unclosed", "is not valid YAML"),
        ("accounts:\n  - accessKey: RocketMQ\n    secretKey: 'tiny-s'\n", "length should longer than 6"),
        ("globalWhiteRemoteAddresses: ['10.0.0.300-400']\n", "white address"),
    ],
)
def test_bad_acl_files_are_one_line_and_exit_2(
    content: str | None, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    acl = tmp_path / "plain_acl.yml"
    if content is not None:
        acl.write_text(content)
    data_dir = tmp_path / "data"
    with pytest.raises(SystemExit) as info:
        main(["server", "--data-dir", str(data_dir), "--acl", str(acl)])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert message in err[0]
    assert "tiny-s" not in err[0]
    assert not data_dir.exists()  # nothing changed before the error
