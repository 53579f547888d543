"""``rocketq server --brokers N``'s pure parts: the broker plan, the default count, the options each
child broker gets, and the ready line."""

from __future__ import annotations

import doctest
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rocketq.embedded as embedded_module
import rocketq.supervisor as supervisor_module
from rocketq.cli.main import build_parser
from rocketq.cli.server import broker_feature_options, child_broker_args
from rocketq.embedded import parse_ready_line
from rocketq.errors import ConfigError
from rocketq.supervisor import MAX_DEFAULT_BROKERS, broker_plan, default_broker_count, usable_cores


def test_module_doctests() -> None:
    for module in (supervisor_module, embedded_module):
        failures, tried = doctest.testmod(module)
        assert tried > 0
        assert failures == 0


@given(
    name=st.sampled_from(["broker-a", "broker-x", "edge", "b-1", "node-z"]),
    port=st.sampled_from([0, 10911, 20000]),
    count=st.integers(1, 40),
)
def test_a_plan_has_distinct_names_ports_and_data_dirs(name: str, port: int, count: int) -> None:
    plans = broker_plan(name, port, Path("/data"), count)
    assert len(plans) == count
    assert plans[0].name == name
    assert plans[0].data_dir == Path("/data")  # a one-broker data dir stays the first broker's
    assert len({p.name for p in plans}) == count
    assert len({p.data_dir for p in plans}) == count
    assert all(p.data_dir == Path("/data") / p.name for p in plans[1:])
    if port:
        assert [p.port for p in plans] == [port + 10 * i for i in range(count)]
    else:
        assert {p.port for p in plans} == {0}


def test_a_plan_refuses_what_cannot_be() -> None:
    with pytest.raises(ConfigError, match="at least one broker"):
        broker_plan("broker-a", 0, Path("/d"), 0)
    with pytest.raises(ConfigError, match="port 65545"):
        broker_plan("broker-a", 65535, Path("/d"), 2)


def test_the_default_is_one_broker_per_usable_core_capped() -> None:
    assert usable_cores() == len(os.sched_getaffinity(0))
    assert default_broker_count() == max(1, min(usable_cores(), MAX_DEFAULT_BROKERS))


PARSER = build_parser()


@settings(deadline=None, max_examples=60)
@given(
    flush=st.sampled_from(["async", "sync"]),
    switches=st.sets(st.sampled_from(["--trace-topic", "--enable-property-filter", "--no-message-index"])),
    timeout=st.none() | st.floats(0.1, 100).map(lambda v: round(v, 3)),
    check_max=st.none() | st.integers(1, 50),
    window=st.none() | st.floats(0, 5).map(lambda v: round(v, 3)),
)
def test_each_child_broker_gets_the_servers_broker_options(
    flush: str, switches: set[str], timeout: float | None, check_max: int | None, window: float | None
) -> None:
    argv = ["server", "--flush", flush, "--brokers", "3", "--broker-name", "x-a", *sorted(switches)]
    if timeout is not None:
        argv += ["--transaction-timeout", str(timeout)]
    if check_max is not None:
        argv += ["--transaction-check-max", str(check_max)]
    if window is not None:
        argv += ["--notify-coalesce-window", str(window)]
    server = PARSER.parse_args(argv)
    forwarded = child_broker_args(server)
    assert "--broker-name" not in forwarded  # set per child
    child = PARSER.parse_args(["broker", "--namesrv", "127.0.0.1:9876", *forwarded])
    assert broker_feature_options(child) == broker_feature_options(server)
    assert child.flush == flush


def test_ready_lines_old_and_new() -> None:
    one = parse_ready_line("rocketq server ready: namesrv=127.0.0.1:1 broker=127.0.0.1:2 data=/d")
    assert (one.namesrv_addr, one.broker_addr, one.broker_addrs) == (
        "127.0.0.1:1",
        "127.0.0.1:2",
        ("127.0.0.1:2",),
    )
    line = "rocketq server ready: brokers=h:2,h:3,h:4 namesrv=h:1 broker=h:2 data=/my data"
    many = parse_ready_line(line)
    assert (many.broker_addr, many.broker_addrs, many.data_dir) == (
        "h:2",
        ("h:2", "h:3", "h:4"),
        Path("/my data"),
    )
