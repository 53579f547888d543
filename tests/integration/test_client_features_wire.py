"""The requests of the four features as our clients send them, against the Java 4.9.4 client's
captured requests: a TransactionProducer (half message, END_TRANSACTION after the local
transaction and answering a check; ``transaction.jsonl``), an SQL92 push consumer
(CHECK_CLIENT_CONFIG, heartbeat, pulls; ``filter.jsonl``), a requester and a replier
(``request-reply.jsonl``). Every request is recorded at the transport while they run against the
embedded broker; ext-field names (in Java's order), flags, and bodies or properties must be the
ones Java sent (values differ: ids, offsets, times).
"""

from __future__ import annotations

import collections
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rocketq import (
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    LocalTransactionState,
    Message,
    MessageExt,
    MessageSelector,
    Producer,
    PushConsumer,
    TransactionProducer,
    create_reply,
)
from rocketq.client.producer.direct import ThreadConnections
from rocketq.protocol import RemotingCommand, RequestCode, decode_frame
from rocketq.protocol.bodies import CheckClientRequestBody, HeartbeatData
from rocketq.protocol.calls import VIEW_FIELD
from rocketq.protocol.codes import LanguageCode
from rocketq.protocol.headers import SendMessageRequestHeaderV2
from rocketq.protocol.properties import string_to_properties
from rocketq.remoting import RemotingClient, RemotingConnection
from tests import wirecaps
from tests.integration.clientkit import ClusterThread, wait_until

pytestmark = pytest.mark.integration

CODES = {
    RequestCode.SEND_MESSAGE_V2,
    RequestCode.END_TRANSACTION,
    RequestCode.CHECK_CLIENT_CONFIG,
    RequestCode.HEART_BEAT,
    RequestCode.PULL_MESSAGE,
    RequestCode.SEND_REPLY_MESSAGE_V2,
}


def java(name: str, code: int) -> list[RemotingCommand]:
    return [
        decode_frame(wirecaps.frame_bytes(line))
        for line in wirecaps.load(name)
        if line["from"] == "client" and line["header"]["code"] == code
    ]


def props(request: RemotingCommand) -> dict[str, str]:
    return string_to_properties(
        SendMessageRequestHeaderV2.from_ext_fields(request.ext_fields).properties or ""
    )


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[int, list[RemotingCommand]]]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield from _record(tmp_path_factory.mktemp("features-wire"), monkeypatch)


def _record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[int, list[RemotingCommand]]]:
    cluster = ClusterThread(
        tmp_path / "c", enable_property_filter=True, transaction_timeout=0.3, transaction_check_interval=0.3
    )
    sent: dict[int, list[RemotingCommand]] = collections.defaultdict(list)
    real_invoke, real_oneway = RemotingClient.invoke, RemotingClient.invoke_oneway
    real_threadsafe = RemotingConnection.invoke_threadsafe
    real_direct = ThreadConnections.invoke

    def keep(request: RemotingCommand) -> None:
        if request.code in CODES and request.language == LanguageCode.PYTHON:
            sent[request.code].append(request)

    async def invoke(
        self: RemotingClient, addr: str, request: RemotingCommand, timeout: float | None = None
    ) -> Any:
        keep(request)
        return await real_invoke(self, addr, request, timeout)

    async def invoke_oneway(self: RemotingClient, addr: str, request: RemotingCommand) -> None:
        keep(request)
        await real_oneway(self, addr, request)

    def invoke_threadsafe(self: RemotingConnection, request: RemotingCommand, timeout: float) -> Any:
        keep(request)
        return real_threadsafe(self, request, timeout)

    def direct(
        self: ThreadConnections,
        conn: RemotingConnection,
        request: RemotingCommand,
        timeout: float,
        hooks: Any,
    ) -> Any:
        keep(request)
        return real_direct(self, conn, request, timeout, hooks)

    monkeypatch.setattr(RemotingClient, "invoke", invoke)
    monkeypatch.setattr(RemotingClient, "invoke_oneway", invoke_oneway)
    monkeypatch.setattr(RemotingConnection, "invoke_threadsafe", invoke_threadsafe)
    monkeypatch.setattr(ThreadConnections, "invoke", direct)
    try:
        for topic in ("WireTx", "WireDemo", "WireRequest"):
            cluster.create_topic(topic, 2)
        # transactions: commit, rollback, unknown (then the check, answered commit)
        checked: list[str] = []
        commit = LocalTransactionState.COMMIT_MESSAGE
        with TransactionProducer(
            "wire_tx_group",
            client_config=cluster.client_config("tx"),
            checker=lambda m: (checked.append(m.msg_id), commit)[1],
        ) as tx:
            for state in (commit, LocalTransactionState.ROLLBACK_MESSAGE, LocalTransactionState.UNKNOW):
                tx.send_in_transaction(
                    Message("WireTx", f"tx-{state}", tags="TagTx", keys="tx"), lambda m, a, s=state: s
                )
            assert wait_until(lambda: len(checked) >= 1, 20.0)
            assert wait_until(lambda: tx.tx_core.checks_answered >= 1, 10.0)
        # an SQL92 consumer
        got: list[MessageExt] = []
        sql = PushConsumer(
            "WireSqlGroup",
            client_config=cluster.client_config("sql"),
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        )
        sql.subscribe("WireDemo", MessageSelector.by_sql("batchIndex>0"))
        sql.register_listener(lambda msgs: (got.extend(msgs), ConsumeConcurrentlyStatus.CONSUME_SUCCESS)[1])
        with Producer("wire_demo_producer", client_config=cluster.client_config("demo")) as p:
            for i in range(3):
                p.send(Message("WireDemo", f"b{i}", properties={"batchIndex": str(i)}))
        with sql:
            assert wait_until(lambda: len(got) == 2, 15.0)
        # request-reply
        replier = Producer("WireReplyGroup_replier", client_config=cluster.client_config("replier")).start()
        consumer = PushConsumer("WireReplyGroup", client_config=cluster.client_config("replier"))
        consumer.subscribe("WireRequest")

        def answer(msgs: list[MessageExt]) -> ConsumeConcurrentlyStatus:
            for m in msgs:
                replier.send(create_reply(m, b"reply"))
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        consumer.register_listener(answer)
        try:
            with consumer, Producer("wire_request_group", client_config=cluster.client_config("req")) as req:
                reply = req.request(
                    Message("WireRequest", "request", tags="TagRequest", keys="request-0"), 10.0
                )
                assert reply.body == b"reply"
        finally:
            replier.shutdown()
        yield sent
    finally:
        cluster.close()


def test_transactional_requests_are_java_s(recorded: dict[int, list[RemotingCommand]]) -> None:
    java_half = java("transaction.jsonl", RequestCode.SEND_MESSAGE_V2)
    ours_half = [r for r in recorded[RequestCode.SEND_MESSAGE_V2] if props(r).get("TRAN_MSG") == "true"]
    assert len(ours_half) == 3
    for r in ours_half:
        assert list(r.ext_fields) == list(java_half[0].ext_fields)
        assert r.ext_fields["f"] == java_half[0].ext_fields["f"] == "4"  # sysFlag: prepared
        assert set(props(r)) == set(props(java_half[0]))  # KEYS TRAN_MSG UNIQ_KEY WAIT PGROUP TAGS
        assert props(r)["PGROUP"] == "wire_tx_group"
    java_ends = java("transaction.jsonl", RequestCode.END_TRANSACTION)
    forms = {(tuple(r.ext_fields), r.flag, r.ext_fields["fromTransactionCheck"]) for r in java_ends}
    ours = recorded[RequestCode.END_TRANSACTION]
    states = sorted((r.ext_fields["commitOrRollback"], r.ext_fields["fromTransactionCheck"]) for r in ours)
    assert states[:3] == [("0", "false"), ("12", "false"), ("8", "false")]
    assert ("8", "true") in states  # the answer to the broker's check
    for r in ours:
        assert (tuple(r.ext_fields), r.flag, r.ext_fields["fromTransactionCheck"]) in forms
        assert r.is_oneway


def test_sql92_consumer_requests_are_java_s(recorded: dict[int, list[RemotingCommand]]) -> None:
    (java_check,) = java("filter.jsonl", RequestCode.CHECK_CLIENT_CONFIG)
    (ours_check,) = recorded[RequestCode.CHECK_CLIENT_CONFIG]
    assert list(json.loads(ours_check.body)) == list(json.loads(java_check.body))
    ours_sub = CheckClientRequestBody.decode(ours_check.body).subscription_data
    java_sub = CheckClientRequestBody.decode(java_check.body).subscription_data
    assert ours_sub is not None
    assert java_sub is not None
    assert (ours_sub.expression_type, ours_sub.sub_string, ours_sub.tags_set, ours_sub.code_set) == (
        java_sub.expression_type, java_sub.sub_string, java_sub.tags_set, java_sub.code_set,
    )  # fmt: skip
    beats = [HeartbeatData.decode(r.body) for r in recorded[RequestCode.HEART_BEAT]]
    sql_subs = [
        s
        for b in beats
        for c in b.consumer_data_set
        if c.group_name == "WireSqlGroup"
        for s in c.subscription_data_set
    ]
    assert {(s.topic, s.expression_type) for s in sql_subs} == {
        ("WireDemo", "SQL92"),
        ("%RETRY%WireSqlGroup", "TAG"),
    }
    java_pulls = {
        tuple(r.ext_fields)
        for r in java("filter.jsonl", RequestCode.PULL_MESSAGE)
        if r.ext_fields["expressionType"] == "SQL92"
    }
    ours_pulls = [r for r in recorded[RequestCode.PULL_MESSAGE] if r.ext_fields.get("topic") == "WireDemo"]
    assert ours_pulls
    for r in ours_pulls:
        assert r.ext_fields["expressionType"] == "SQL92"
        if "subscription" not in r.ext_fields:  # Java posts no subscription by default; neither do we
            # Java's fields, plus the consumer's view (rqEpoch: the view fence, which a RocketMQ
            # broker ignores); one more field can change a Java HashMap's order, not its content
            fields = [k for k in r.ext_fields if k != VIEW_FIELD]
            assert r.ext_fields.get(VIEW_FIELD) is not None
            assert {frozenset(fields)} & {frozenset(j) for j in java_pulls}


def test_request_and_reply_are_java_s(recorded: dict[int, list[RemotingCommand]]) -> None:
    (java_request,) = java("request-reply.jsonl", RequestCode.SEND_MESSAGE_V2)
    (ours_request,) = [r for r in recorded[RequestCode.SEND_MESSAGE_V2] if "CORRELATION_ID" in props(r)]
    assert list(ours_request.ext_fields) == list(java_request.ext_fields)
    assert set(props(ours_request)) == set(props(java_request))
    (java_reply,) = java("request-reply.jsonl", RequestCode.SEND_REPLY_MESSAGE_V2)
    (ours_reply,) = recorded[RequestCode.SEND_REPLY_MESSAGE_V2]
    assert list(ours_reply.ext_fields) == list(java_reply.ext_fields)
    assert set(props(ours_reply)) == set(props(java_reply))
    assert props(ours_reply)["CORRELATION_ID"] == props(ours_request)["CORRELATION_ID"]
