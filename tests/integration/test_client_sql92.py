"""SQL92 subscriptions through rocketq's consumers against our broker.

The differential table of ``tests/unit/test_broker_sql92.py`` (expressions × property maps, each
row's delivery derived from RocketMQ 4.9's evaluator rules) runs end to end: every distinct
expression gets a topic of one queue holding its rows' messages (sent by ``Producer`` with the
row's properties), one consumer subscribes to all of them, each with
``MessageSelector.by_sql(expression)``, and receives exactly the rows the table marks true.
Then the refusals a consumer meets: a broker without ``enablePropertyFilter`` and an expression
the broker cannot parse, at start and when subscribing while running; tag selectors still work.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketq import (
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    LitePullConsumer,
    Message,
    MessageQueue,
    MessageSelector,
    Producer,
    PushConsumer,
)
from rocketq.errors import BrokerError, SubscriptionError
from tests.integration.clientkit import ClusterThread, wait_until
from tests.unit.test_broker_sql92 import TABLE

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

FIRST = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET


def _expressions() -> dict[str, list[int]]:
    """Each distinct expression of the table with its rows, non-matching rows first (so the last
    message of a topic with a matching row is a matching one)."""
    by_expr: dict[str, list[int]] = {}
    for i, (expression, _, _, _) in enumerate(TABLE):
        by_expr.setdefault(expression, []).append(i)
    return {e: sorted(rows, key=lambda i: TABLE[i][2] is True) for e, rows in by_expr.items()}


EXPRESSIONS = _expressions()
TOPICS = {expression: f"SqlRow{n}" for n, expression in enumerate(EXPRESSIONS)}


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterThread]:
    """A broker with ``enablePropertyFilter``, every expression's topic filled with its rows."""
    cluster = ClusterThread(tmp_path_factory.mktemp("sql92") / "c", enable_property_filter=True)
    try:
        with Producer("sql_rows_producer", client_config=cluster.client_config("rows")) as producer:
            for expression, rows in EXPRESSIONS.items():
                topic = TOPICS[expression]
                cluster.create_topic(topic, 1)
                for i in rows:
                    producer.send(
                        Message(topic, f"row-{i}", properties=TABLE[i][1]),
                        queue=MessageQueue(topic, "broker-a", 0),
                    )
        yield cluster
    finally:
        cluster.close()


def _expected() -> set[str]:
    return {f"row-{i}" for i, row in enumerate(TABLE) if row[2] is True}


def test_the_differential_table_through_a_push_consumer(filled: ClusterThread) -> None:
    got: list[str] = []
    lock = threading.Lock()

    def listener(msgs: list[object]) -> ConsumeConcurrentlyStatus:
        with lock:
            got.extend(m.body.decode() for m in msgs)  # type: ignore[attr-defined]
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    c = PushConsumer("sql_push_group", client_config=filled.client_config("push"), consume_from_where=FIRST)
    for expression, topic in TOPICS.items():
        c.subscribe(topic, MessageSelector.by_sql(expression))
    c.register_listener(listener)
    c.start()
    try:
        # every queue's offset passes all its messages: the broker examined each (a message that
        # does not match moves the offset with NO_MATCHED_MESSAGE) and the listener saw the matches
        counts = {MessageQueue(TOPICS[e], "broker-a", 0): len(rows) for e, rows in EXPRESSIONS.items()}
        assert wait_until(lambda: all(c.committed_offsets().get(q) == n for q, n in counts.items()), 60.0)
        with lock:
            delivered = list(got)
    finally:
        c.shutdown()
    wrong = sorted(set(delivered) ^ _expected(), key=lambda r: int(r[4:]))
    assert not wrong, "\n".join(
        f"{r}: {TABLE[int(r[4:])][:2]} should be {TABLE[int(r[4:])][2]}" for r in wrong
    )
    assert len(delivered) == len(set(delivered))


def test_the_differential_table_through_a_lite_pull_consumer(filled: ClusterThread) -> None:
    """Topics whose rows match somewhere end with a matching message: once every matching row has
    arrived, the queue was read to its end, so anything else that matched would have come."""
    c = LitePullConsumer(
        "sql_lite_group", client_config=filled.client_config("lite"), consume_from_where=FIRST
    )
    checked = {e: rows for e, rows in EXPRESSIONS.items() if any(TABLE[i][2] is True for i in rows)}
    for expression in checked:
        c.subscribe(TOPICS[expression], MessageSelector.by_sql(expression))
    c.start()
    expected = {f"row-{i}" for rows in checked.values() for i in rows if TABLE[i][2] is True}
    delivered: list[str] = []
    try:
        assert wait_until(
            lambda: (delivered.extend(m.body.decode() for m in c.poll(0.2)), expected <= set(delivered))[1],
            60.0,
        )
    finally:
        c.shutdown()
    assert set(delivered) == expected
    assert len(delivered) == len(set(delivered))


def test_a_broker_without_the_property_filter_refuses_and_says_what_to_turn_on(
    cluster: ClusterThread,
) -> None:
    cluster.create_topic("SqlOff", 1)
    c = PushConsumer("sql_off_group", client_config=cluster.client_config("off"))
    c.subscribe("SqlOff", MessageSelector.by_sql("a > 5"))
    c.register_listener(lambda msgs: ConsumeConcurrentlyStatus.CONSUME_SUCCESS)
    with pytest.raises(BrokerError, match="enable-property-filter") as refused:
        c.start()
    assert "SqlOff" in str(refused.value)
    with pytest.raises(Exception, match="not started"):
        c.assigned_queues()  # it did not start
    lite = LitePullConsumer("sql_off_lite", client_config=cluster.client_config("off-lite"))
    lite.subscribe("SqlOff", MessageSelector.by_sql("a > 5"))
    with pytest.raises(BrokerError, match="enable-property-filter"):
        lite.start()


def test_bad_expressions_are_refused_at_start_and_when_subscribing_while_running(tmp_path: Path) -> None:
    cluster = ClusterThread(tmp_path / "c", enable_property_filter=True)
    try:
        for topic in ("SqlA", "SqlB"):
            cluster.create_topic(topic, 1)
        bad = PushConsumer("sql_bad_group", client_config=cluster.client_config("bad"))
        bad.subscribe("SqlA", MessageSelector.by_sql("a >"))
        bad.register_listener(lambda msgs: ConsumeConcurrentlyStatus.CONSUME_SUCCESS)
        with pytest.raises(SubscriptionError, match="SqlA"):
            bad.start()
        got: list[bytes] = []
        c = PushConsumer("sql_ok_group", client_config=cluster.client_config("ok"), consume_from_where=FIRST)
        c.subscribe("SqlA", MessageSelector.by_tag("TagA || TagB"))  # a tag selector, as a string did
        c.register_listener(
            lambda msgs: (got.extend(m.body for m in msgs), ConsumeConcurrentlyStatus.CONSUME_SUCCESS)[1]
        )
        c.start()
        try:
            with pytest.raises(SubscriptionError):
                c.subscribe("SqlB", MessageSelector.by_sql("a = = 1"))
            c.subscribe("SqlB", MessageSelector.by_sql("a = 1"))  # a good one is taken while running
            with Producer("sql_ok_producer", client_config=cluster.client_config("p")) as p:
                p.send(Message("SqlA", "tag-c", tags="TagC"))
                p.send(Message("SqlA", "tag-a", tags="TagA"))
                p.send(Message("SqlB", "b-2", properties={"a": "2"}))
                p.send(Message("SqlB", "b-1", properties={"a": "1"}))
            assert wait_until(lambda: sorted(got) == [b"b-1", b"tag-a"], 20.0)
        finally:
            c.shutdown()
    finally:
        cluster.close()
