"""The exposition is what Prometheus reads back, counters get their _total, rates need two looks."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from rocketq.dashboard.metrics import Snapshot, _Rates, exposition
from rocketq.dashboard.monitor import describe_error, is_user_group
from rocketq.dashboard.views import PALETTE, colour_of, topic_kind
from rocketq.errors import RemotingConnectError


def test_snapshot_round_trips_through_prometheus_own_parser() -> None:
    snap = Snapshot()
    snap.gauge(
        "rocketmq_group_diff", "lag", ["group", "topic", "countOfOnlineConsumers", "msgModel"]
    ).add_metric(["g", "T", "2", "1"], 12)
    snap.counter("rocketq_rebalances", "changes", ["group"]).add_metric(["g"], 3)
    families = {f.name: f for f in text_string_to_metric_families(exposition(snap).decode())}
    (diff,) = families["rocketmq_group_diff"].samples
    assert (diff.labels, diff.value) == (
        {"group": "g", "topic": "T", "countOfOnlineConsumers": "2", "msgModel": "1"},
        12,
    )
    assert families["rocketq_rebalances"].type == "counter"
    assert [s.name for s in families["rocketq_rebalances"].samples if s.name.endswith("_total")] == [
        "rocketq_rebalances_total"
    ]


def test_rates_need_two_collections_and_a_counter_that_went_back_is_no_negative_rate() -> None:
    r = _Rates()
    assert r.rate(("p", "b", "T"), 100, 10.0) == 0.0
    assert r.rate(("p", "b", "T"), 150, 15.0) == 10.0
    assert r.rate(("p", "b", "T"), 20, 20.0) == 0.0  # topic recreated: offsets start again


def test_small_helpers_of_the_pages() -> None:
    taken: dict[str, str] = {}
    assert [colour_of(c, taken) for c in ("a", "b", "a")] == [PALETTE[0], PALETTE[1], PALETTE[0]]
    assert [topic_kind(t) for t in ("%RETRY%g", "%DLQ%g", "TBW102", "RQ_SYS_REBALANCE_TOPIC", "T")] == [
        "retry", "dlq", "system", "system", "normal",
    ]  # fmt: skip
    assert not is_user_group("TOOLS_CONSUMER")
    assert not is_user_group("CID_RMQ_SYS_TRANS")
    assert is_user_group("orders")
    text = describe_error(RemotingConnectError("cannot reach name server 127.0.0.1:1"))
    assert text.endswith("(is the name server running? rocketq dashboard --namesrv HOST:PORT)")


def test_the_dashboard_knows_the_broker_s_own_groups() -> None:
    from rocketq.broker.subscriptions import BUILTIN_SUBSCRIPTION_GROUPS
    from rocketq.dashboard.monitor import BROKER_GROUPS

    assert frozenset(BUILTIN_SUBSCRIPTION_GROUPS) == BROKER_GROUPS
