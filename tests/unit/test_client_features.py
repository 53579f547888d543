"""The client side of transactions, SQL92 selectors and request-reply, against the Java captures:
the END_TRANSACTION headers a producer sends (after its local transaction and answering the
broker's check), the subscription an SQL92 selector makes, a request's properties and the reply
``create_reply`` makes of the request a Java replier received."""

from __future__ import annotations

import json
import logging

import pytest

from rocketq import LocalTransactionState, MessageSelector, TransactionSendResult, create_reply
from rocketq.client.consumer.selector import subscription_of
from rocketq.client.producer.request import REPLY_MESSAGE_FLAG, prepare_request
from rocketq.client.producer.transaction import (
    check_answer_header,
    commit_log_offset_of,
    end_header,
    local_state,
    transaction_code,
)
from rocketq.errors import ConfigError
from rocketq.models import MessageQueue, SendResult, SendStatus
from rocketq.protocol import RemotingCommand, decode_frame, decode_messages
from rocketq.protocol.bodies import HeartbeatData
from rocketq.protocol.headers import (
    CheckTransactionStateRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
)
from rocketq.protocol.message import Message, decode_message
from rocketq.protocol.properties import string_to_properties
from tests.wirecaps import frame_bytes, load


def _frame(name: str, seq: int) -> RemotingCommand:
    (line,) = [x for x in load(name) if x["seq"] == seq]
    return decode_frame(frame_bytes(line))


# ------------------------------------------------------------------------------------ transactions


@pytest.mark.parametrize(
    ("send", "answer", "end", "state"),
    [
        (15, 16, 17, LocalTransactionState.COMMIT_MESSAGE),
        (18, 19, 20, LocalTransactionState.ROLLBACK_MESSAGE),
        (21, 22, 23, LocalTransactionState.UNKNOW),
    ],
)
def test_the_end_of_a_local_transaction_is_the_java_producer_s_request(
    send: int, answer: int, end: int, state: LocalTransactionState
) -> None:
    """transaction.jsonl: each half message's send answer, then END_TRANSACTION with the state."""
    sent = SendMessageRequestHeaderV2.from_ext_fields(_frame("transaction.jsonl", send).ext_fields)
    reply = SendMessageResponseHeader.from_ext_fields(_frame("transaction.jsonl", answer).ext_fields)
    props = string_to_properties(sent.properties or "")
    assert (props["TRAN_MSG"], props["PGROUP"], sent.sys_flag) == ("true", sent.producer_group, 4)
    result = SendResult(
        SendStatus.SEND_OK,
        props["UNIQ_KEY"],
        reply.msg_id,
        MessageQueue(sent.topic, "broker-a", reply.queue_id),
        reply.queue_offset,
        transaction_id=reply.transaction_id,
    )
    java = _frame("transaction.jsonl", end)
    ours = end_header(sent.producer_group, result, state).to_ext_fields()
    assert ours == java.ext_fields
    assert list(ours) == list(java.ext_fields)  # in the order Java's HashMap writes them
    assert commit_log_offset_of(result) == int(java.ext_fields["commitLogOffset"])


def test_the_answer_to_a_check_is_the_java_producer_s_request() -> None:
    check = _frame("transaction.jsonl", 26)
    header = CheckTransactionStateRequestHeader.from_ext_fields(check.ext_fields)
    msg, _ = decode_message(check.body)
    assert msg.properties["PGROUP"] == "wire_tx_group"  # how the client finds the producer
    java = _frame("transaction.jsonl", 27)
    ours = check_answer_header("wire_tx_group", msg, header, LocalTransactionState.COMMIT_MESSAGE)
    assert ours.to_ext_fields() == java.ext_fields
    assert list(ours.to_ext_fields()) == list(java.ext_fields)


def test_local_states_codes_and_results(caplog: pytest.LogCaptureFixture) -> None:
    assert [transaction_code(s) for s in LocalTransactionState] == [8, 12, 0]
    assert local_state(LocalTransactionState.ROLLBACK_MESSAGE, "x") is LocalTransactionState.ROLLBACK_MESSAGE
    assert local_state("UNKNOW", "x") is LocalTransactionState.UNKNOW
    assert local_state(None, "x") is LocalTransactionState.UNKNOW  # Java reads a null as UNKNOW
    with caplog.at_level(logging.ERROR):
        assert local_state(True, "execute") is LocalTransactionState.UNKNOW
    assert "execute returned True" in caplog.text
    result = TransactionSendResult(
        SendStatus.SEND_OK, "U", "O", MessageQueue("T", "b", 0), 3,
        local_transaction_state=LocalTransactionState.COMMIT_MESSAGE,
    )  # fmt: skip
    assert isinstance(result, SendResult)
    assert result.local_transaction_state == "COMMIT_MESSAGE"  # RocketMQ's names


# ------------------------------------------------------------------------------------ selectors


def test_an_sql92_selector_makes_the_java_subscription() -> None:
    """filter.jsonl: the SQL92 subscription of the Java consumer's heartbeat."""
    beat = HeartbeatData.decode(_frame("filter.jsonl", 13).body)
    (java,) = [s for c in beat.consumer_data_set for s in c.subscription_data_set if s.topic == "WireDemo"]
    ours = subscription_of("WireDemo", MessageSelector.by_sql("batchIndex>0"), sub_version=java.sub_version)
    assert ours == java
    assert json.loads(ours.encode()) == json.loads(java.encode())
    tags = subscription_of("T", MessageSelector.by_tag("TagA || TagB"), sub_version=1)
    assert tags == subscription_of("T", "TagA || TagB", sub_version=1)  # a string is a tag expression
    assert (tags.expression_type, tags.tags_set) == ("TAG", ("TagA", "TagB"))
    assert MessageSelector.by_tag(None).expression == "*"


@pytest.mark.parametrize(
    "make",
    [
        lambda: MessageSelector.by_sql(""),
        lambda: MessageSelector.by_sql("   "),
        lambda: MessageSelector("XPATH", "a"),  # type: ignore[arg-type]
        lambda: subscription_of("T", 42, sub_version=1),  # type: ignore[arg-type]
    ],
)
def test_bad_selectors_are_refused_before_anything_is_sent(make: object) -> None:
    with pytest.raises(ConfigError):
        make()  # type: ignore[operator]


# ------------------------------------------------------------------------------------ request-reply


def test_a_request_carries_what_java_s_request_carries() -> None:
    java = SendMessageRequestHeaderV2.from_ext_fields(_frame("request-reply.jsonl", 47).ext_fields)
    sent = string_to_properties(java.properties or "")
    msg = Message("WireRequest", b"x")
    msg.tags, msg.keys = "TagRequest", "request-0"
    cid = prepare_request(
        msg.properties,
        sent["REPLY_TO_CLIENT"],
        int(sent["TTL"]) / 1000,
        correlation_id=sent["CORRELATION_ID"],
    )
    assert cid == sent["CORRELATION_ID"]
    ours = {**msg.properties, "UNIQ_KEY": sent["UNIQ_KEY"], "WAIT": "true"}
    assert ours == sent
    fresh: dict[str, str] = {}
    assert len(prepare_request(fresh, "c", 1.5)) == 36  # a UUID, as Java's CorrelationIdUtil
    assert fresh["TTL"] == "1500"


def test_create_reply_makes_the_reply_a_java_replier_sent() -> None:
    """The request as the Java replier pulled it (with the CLUSTER the broker added), and the reply
    it sent with MessageUtil.createReplyMessage (SEND_REPLY_MESSAGE_V2, seq 53)."""
    (request,) = decode_messages(_frame("request-reply.jsonl", 49).body)
    java = _frame("request-reply.jsonl", 53)
    header = SendMessageRequestHeaderV2.from_ext_fields(java.ext_fields)
    reply = create_reply(request, java.body)
    assert reply.topic == header.topic == "DefaultCluster_REPLY_TOPIC"
    sent = string_to_properties(header.properties or "")
    assert {**reply.properties, "UNIQ_KEY": sent["UNIQ_KEY"]} == sent
    assert reply.properties["MSG_TYPE"] == REPLY_MESSAGE_FLAG
    assert reply.body == java.body
    assert create_reply(request, "text").body == b"text"
    with pytest.raises(ConfigError, match="no CLUSTER property"):
        create_reply(Message("T", b"?", properties={"REPLY_TO_CLIENT": "c"}), b"")
    with pytest.raises(ConfigError, match="not a request"):
        create_reply(Message("T", b"?", properties={"CLUSTER": "DefaultCluster"}), b"")
