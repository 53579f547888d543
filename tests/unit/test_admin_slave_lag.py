"""A slave's lag from two runtime tables (:class:`rocketq.admin.SlaveLag`): bytes and seconds, and
what is unknown when a broker does not say."""

from __future__ import annotations

import doctest

from hypothesis import given
from hypothesis import strategies as st

import rocketq.admin.monitoring as monitoring_module
import rocketq.cli.cluster as cluster_module
import rocketq.store.config as store_config_module
from rocketq.admin import BrokerRuntime, SlaveLag
from tests.sourcemodule import source_module


def runtime(addr: str, end: int | None, latest_ms: int | None) -> BrokerRuntime:
    table = {}
    if end is not None:
        table["commitLogMaxOffset"] = str(end)
    if latest_ms is not None:
        table["latestMessageTimeStamp"] = str(latest_ms)
    return BrokerRuntime(addr, table)


@given(
    st.integers(0, 1 << 40),
    st.integers(0, 1 << 40),
    st.integers(1, 1 << 42),
    st.integers(-1, 1 << 42),
)
def test_bytes_and_seconds_between_two_tables(m_end: int, s_end: int, m_ms: int, s_ms: int) -> None:
    lag = SlaveLag.between("b", 1, runtime("m:1", m_end, m_ms), runtime("s:1", s_end, s_ms))
    assert (lag.addr, lag.master_addr, lag.error) == ("s:1", "m:1", None)
    assert lag.lag_bytes == max(m_end - s_end, 0)  # a slave read a moment later may be ahead
    if lag.lag_bytes == 0:
        assert lag.lag_seconds == 0.0  # every byte there: no lag, whatever the clocks say
    elif s_ms <= 0:
        assert lag.lag_seconds is None  # the slave holds no whole message yet
    else:
        assert lag.lag_seconds == max(m_ms - s_ms, 0) / 1000


def test_a_broker_that_does_not_say_gives_unknown() -> None:
    rocketmq = BrokerRuntime("s:1", {"commitLogMaxOffset": "10"})  # RocketMQ's table: no store time
    lag = SlaveLag.between("b", 1, runtime("m:1", 50, 9000), rocketmq)
    assert (lag.lag_bytes, lag.lag_seconds) == (40, None)
    lag = SlaveLag.between("b", 1, BrokerRuntime("m:1", {}), rocketmq)
    assert (lag.lag_bytes, lag.lag_seconds) == (None, None)
    assert lag.to_dict()["lag_bytes"] is None


def test_the_doctests() -> None:
    for module in (monitoring_module, cluster_module, store_config_module):
        failures, tried = doctest.testmod(source_module(module))
        assert tried > 0, module
        assert failures == 0, module
