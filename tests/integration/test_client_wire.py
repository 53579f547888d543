"""Our clients' requests against the Java client's captured requests (tests/data/rocketmq-wire).

A producer and a push consumer run the operations of ``produce.jsonl``, ``push-consume.jsonl`` and
``retry.jsonl`` against the embedded broker while every request they send is recorded at the
transport. For each request code both sides sent, our ext-field names (in order) and oneway flag
must be ones the Java client used, and JSON bodies must have the same shape (keys, recursively).
Expected differences: ``language`` (we are ``PYTHON``) and the final offset commit at shutdown,
which we send synchronously (flag 0) where Java sends it oneway.
"""

from __future__ import annotations

import collections
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rocketq import ClientConfig, ConsumeConcurrentlyStatus, ConsumeFromWhere, Message, Producer, PushConsumer
from rocketq.client.producer.direct import ThreadConnections
from rocketq.protocol import RemotingCommand, RequestCode, decode_batch, decode_frame, encode_frame
from rocketq.protocol.calls import LEASE_FIELD, VIEW_FIELD, VIEW_TOPIC_FIELD
from rocketq.protocol.codes import CURRENT_VERSION, LanguageCode
from rocketq.protocol.headers import SendMessageRequestHeaderV2
from rocketq.remoting import RemotingClient, RemotingConnection
from tests import wirecaps
from tests.integration.clientkit import ClusterThread, wait_until

pytestmark = pytest.mark.integration

CLIENT_CODES = {
    RequestCode.SEND_MESSAGE_V2,
    RequestCode.SEND_BATCH_MESSAGE,
    RequestCode.PULL_MESSAGE,
    RequestCode.QUERY_CONSUMER_OFFSET,
    RequestCode.UPDATE_CONSUMER_OFFSET,
    RequestCode.HEART_BEAT,
    RequestCode.UNREGISTER_CLIENT,
    RequestCode.GET_CONSUMER_LIST_BY_GROUP,
    RequestCode.GET_ROUTEINFO_BY_TOPIC,
    RequestCode.CONSUMER_SEND_MSG_BACK,
}


#: rocketq-only ext fields its consumers add, per request code (see docs/chaos.md, the view fence)
ROCKETQ_FIELDS = {
    RequestCode.PULL_MESSAGE: {VIEW_FIELD},
    RequestCode.UPDATE_CONSUMER_OFFSET: {VIEW_FIELD},  # the stamp the queue was pulled under
    RequestCode.GET_CONSUMER_LIST_BY_GROUP: {VIEW_TOPIC_FIELD},
    RequestCode.LOCK_BATCH_MQ: {LEASE_FIELD},  # the clean handoff's leases
}


def shape(value: Any) -> Any:
    """The keys of a JSON value, recursively (lists by their first element)."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return type(value).__name__


def java_requests() -> dict[int, list[RemotingCommand]]:
    out: dict[int, list[RemotingCommand]] = collections.defaultdict(list)
    for name in ("produce.jsonl", "push-consume.jsonl", "retry.jsonl", "rebalance-notify.jsonl"):
        for line in wirecaps.load(name):
            if line["from"] == "client" and line["header"]["code"] in CLIENT_CODES:
                out[line["header"]["code"]].append(decode_frame(wirecaps.frame_bytes(line)))
    return out


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[RemotingCommand]]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield from _record(tmp_path_factory.mktemp("wire"), monkeypatch)


def _record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[RemotingCommand]]:
    cluster = ClusterThread(tmp_path / "cluster")
    sent: list[RemotingCommand] = []
    real_invoke, real_oneway = RemotingClient.invoke, RemotingClient.invoke_oneway
    real_threadsafe = RemotingConnection.invoke_threadsafe
    real_direct = ThreadConnections.invoke

    async def invoke(
        self: RemotingClient, addr: str, request: RemotingCommand, timeout: float | None = None
    ) -> Any:
        if request.code in CLIENT_CODES and request.language == LanguageCode.PYTHON:
            sent.append(request)
        return await real_invoke(self, addr, request, timeout)

    async def invoke_oneway(self: RemotingClient, addr: str, request: RemotingCommand) -> None:
        if request.code in CLIENT_CODES:
            sent.append(request)
        await real_oneway(self, addr, request)

    def invoke_threadsafe(self: RemotingConnection, request: RemotingCommand, timeout: float) -> Any:
        if request.code in CLIENT_CODES and request.language == LanguageCode.PYTHON:
            sent.append(request)  # the blocking producer's own path (ProducerCore.send_blocking)
        return real_threadsafe(self, request, timeout)

    def direct(
        self: ThreadConnections,
        conn: RemotingConnection,
        request: RemotingCommand,
        timeout: float,
        hooks: Any,
    ) -> Any:
        if request.code in CLIENT_CODES and request.language == LanguageCode.PYTHON:
            sent.append(request)  # the blocking producer's sends on its thread's own socket
        return real_direct(self, conn, request, timeout, hooks)

    monkeypatch.setattr(RemotingClient, "invoke", invoke)
    monkeypatch.setattr(RemotingConnection, "invoke_threadsafe", invoke_threadsafe)
    monkeypatch.setattr(ThreadConnections, "invoke", direct)
    monkeypatch.setattr(RemotingClient, "invoke_oneway", invoke_oneway)
    try:
        cluster.create_topic("WireDemo", 2)
        cfg = ClientConfig(namesrv=cluster.namesrv, client_ip="127.0.0.1")
        with Producer("wire_producer_group", client_config=cfg) as producer:
            producer.send(
                Message(
                    "WireDemo",
                    b"hello",
                    tags="TagA",
                    keys=["order-1001", "user-42"],
                    properties={"color": "red"},
                )
            )
            producer.send_batch([Message("WireDemo", f"batch-{i}") for i in range(3)])
            producer.send(Message("WireDemo", b"z" * 5175))
            producer.send(Message("WireDemo", b"later", delay_level=1))
            producer.send_oneway(Message("WireDemo", b"oneway", tags="TagOneway", keys="oneway-1"))
        bodies: list[bytes] = []

        def listener(msgs: list[Any]) -> ConsumeConcurrentlyStatus:
            bodies.extend(m.body for m in msgs)
            if msgs[0].body == b"hello" and msgs[0].reconsume_times == 0:
                return ConsumeConcurrentlyStatus.RECONSUME_LATER
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        consumer = PushConsumer(
            "WirePushGroup",
            client_config=ClientConfig(namesrv=cluster.namesrv, client_ip="127.0.0.1", instance_name="w1"),
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        )
        consumer.subscribe("WireDemo", "*")
        consumer.register_listener(listener)
        with consumer:
            assert wait_until(lambda: bodies.count(b"hello") >= 2 and len(set(bodies)) >= 7, 15.0), bodies
        yield sent
    finally:
        cluster.close()


def test_our_requests_carry_the_java_clients_fields_and_flags(recorded: list[RemotingCommand]) -> None:
    java = java_requests()
    ours: dict[int, list[RemotingCommand]] = collections.defaultdict(list)
    for request in recorded:
        ours[request.code].append(request)
    assert set(ours) == CLIENT_CODES  # every operation of the scenario was exercised
    for code, requests in ours.items():
        java_forms = {(tuple(r.ext_fields), r.flag) for r in java[code]}
        for request in requests:
            form = (tuple(request.ext_fields), request.flag)
            if code == RequestCode.UPDATE_CONSUMER_OFFSET and request.flag == 0:
                form = (form[0], 2)  # our shutdown commit is synchronous on purpose
            extra = [k for k in request.ext_fields if k in ROCKETQ_FIELDS.get(code, set())]
            if extra:
                # a rocketq consumer's view (rqEpoch on pulls and commits, rqTopic on member-list
                # queries, rqLease on the clean handoff's locks), which a RocketMQ broker ignores:
                # Java's fields besides (one more field can change a Java HashMap's order, not
                # its content)
                assert ROCKETQ_FIELDS[code] == set(extra), (RequestCode(code).name, extra)
                rest = frozenset(request.ext_fields) - set(extra)
                assert (rest, form[1]) in {(frozenset(f), flag) for f, flag in java_forms}, (form, java_forms)
                continue
            assert form in java_forms, (RequestCode(code).name, form, java_forms)
            assert request.version == CURRENT_VERSION
            # and each frame survives our own codec
            assert decode_frame(encode_frame(request)).ext_fields == request.ext_fields


def test_our_heartbeat_body_has_the_java_shape(recorded: list[RemotingCommand]) -> None:
    java = [json.loads(r.body) for r in java_requests()[RequestCode.HEART_BEAT]]
    java_consumer = next(b for b in java if b["consumerDataSet"])
    ours = [json.loads(r.body) for r in recorded if r.code == RequestCode.HEART_BEAT]
    our_consumer = next(b for b in ours if b["consumerDataSet"])
    assert shape(our_consumer) == shape(java_consumer)
    assert list(our_consumer) == list(java_consumer)  # fastjson's sorted keys
    subs = {s["topic"]: s for s in our_consumer["consumerDataSet"][0]["subscriptionDataSet"]}
    assert set(subs) == {"WireDemo", "%RETRY%WirePushGroup"}
    assert subs["WireDemo"]["subString"] == "*"
    producer_only = next(b for b in ours if not b["consumerDataSet"])
    assert {p["groupName"] for p in producer_only["producerDataSet"]} == {
        "wire_producer_group",
        "CLIENT_INNER_PRODUCER",
    }


def test_send_properties_and_flags_as_java_sets_them(recorded: list[RemotingCommand]) -> None:
    sends = [r for r in recorded if r.code == RequestCode.SEND_MESSAGE_V2]
    for send in sends:  # the producer's copied header templates are what the header class writes
        rewritten = SendMessageRequestHeaderV2.from_ext_fields(send.ext_fields).to_ext_fields()
        assert list(rewritten.items()) == list(send.ext_fields.items())
    props = [dict(p.split("\x01", 1) for p in r.ext_fields["i"].split("\x02") if p) for r in sends]
    first = props[0]
    assert first["TAGS"] == "TagA"
    assert first["KEYS"] == "order-1001 user-42"
    assert first["WAIT"] == "true"
    assert first["color"] == "red"
    assert len(first["UNIQ_KEY"]) == 32
    assert sends[0].ext_fields["c"] == "TBW102"
    assert sends[0].ext_fields["d"] == "4"
    compressed = next(r for r in sends if len(r.body) < 5175 and r.ext_fields["f"] != "0")
    assert int(compressed.ext_fields["f"]) == 769  # COMPRESSED | ZLIB, as the Java capture shows
    assert any(p.get("DELAY") == "1" for p in props)
    batch = next(r for r in recorded if r.code == RequestCode.SEND_BATCH_MESSAGE)
    assert batch.ext_fields["m"] == "true"
    assert batch.ext_fields["i"] == "WAIT\x01true"
    assert [m.body for m in decode_batch(batch.body)] == [b"batch-0", b"batch-1", b"batch-2"]
    assert all("UNIQ_KEY" in m.properties for m in decode_batch(batch.body))


def test_send_back_names_the_original_topic_and_message(recorded: list[RemotingCommand]) -> None:
    back = next(r for r in recorded if r.code == RequestCode.CONSUMER_SEND_MSG_BACK)
    assert back.ext_fields["originTopic"] == "WireDemo"
    assert back.ext_fields["group"] == "WirePushGroup"
    assert back.ext_fields["delayLevel"] == "0"
    assert back.ext_fields["maxReconsumeTimes"] == "16"
