"""The trace dispatcher's batching and encoding, and the producer/consumer hooks' records.

Golden lines are written field by field in the order RocketMQ 4.9.4's ``TraceDataEncoder`` appends
them, so a change of layout shows here.
"""

from __future__ import annotations

import concurrent.futures
import json
import threading

from rocketq.client.message import AnsweredSend, ConsumeConcurrentlyStatus, SendResult, SendStatus
from rocketq.client.rebalance.log import RebalanceLog, RebalanceRecord, RebalanceTrigger
from rocketq.client.trace import (
    CLIENT_ID_PROPERTY,
    REBALANCE_TOPIC,
    ConsumerTracing,
    ConsumeTraceHook,
    ProducerTracing,
    TraceBatcher,
    TraceDispatcher,
    consume_return_type,
    rebalance_message,
)
from rocketq.models import MessageQueue
from rocketq.protocol.message import Message, MessageExt
from rocketq.protocol.properties import MessageConst
from rocketq.protocol.trace import (
    RMQ_SYS_TRACE_TOPIC,
    ConsumeReturnType,
    TraceBean,
    TraceContext,
    TraceType,
    decode_trace,
    encode_trace,
    trace_keys,
)

C, F = "\x01", "\x02"


def sub_after(msg_id: str, keys: str = "k") -> TraceContext:
    return TraceContext(
        trace_type=TraceType.SUB_AFTER, timestamp=1_700_000_000_000, group_name="G", request_id="R",
        beans=(TraceBean(msg_id=msg_id, keys=keys),),
    )  # fmt: skip


class Recorder:
    """A send function that keeps what it was given and completes each send at once."""

    def __init__(self) -> None:
        self.sent: list[Message] = []
        self.lock = threading.Lock()

    def __call__(self, msg: Message) -> concurrent.futures.Future[object]:
        with self.lock:
            self.sent.append(msg)
        f: concurrent.futures.Future[object] = concurrent.futures.Future()
        f.set_result(None)
        return f


def dispatcher(rec: Recorder, **kw: object) -> TraceDispatcher:
    return TraceDispatcher("G", "CONSUMER", client_id="10.0.0.1@c1", send=rec, **kw)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ batching


def test_batcher_packs_by_size_including_the_context_that_crosses_it() -> None:
    b = TraceBatcher(max_chars=100, wait_threshold=10.0)
    line = f"SubAfter{C}R{C}M0{C}0{C}true{C}k{C}0{C}1700000000000{C}G{F}"
    assert len(line) == 41
    assert b.add(sub_after("M0"), 0.0) == []
    assert b.add(sub_after("M1"), 0.0) == []
    out = b.add(sub_after("M2"), 0.0)  # 123 >= 100: all three go, the third included
    assert len(out) == 1
    assert len(b) == 0
    assert out[0].body.decode() == line + line.replace("M0", "M1") + line.replace("M0", "M2")
    assert set(out[0].keys) == {"M0", "M1", "M2", "k"}
    assert b.drain() == []


def test_batcher_sends_what_waited_long_enough_and_skips_empty_contexts() -> None:
    b = TraceBatcher(max_chars=10_000, wait_threshold=0.5)
    assert b.add(TraceContext(trace_type=TraceType.SUB_BEFORE), 0.0) == []  # no beans: nothing
    assert len(b) == 0
    b.add(sub_after("M0"), 1.0)
    b.add(sub_after("M1"), 1.4)
    assert b.due(1.49) == []
    (msg,) = b.due(1.5)  # judged from the first context's arrival
    assert [c.beans[0].msg_id for c in decode_trace(msg.body)] == ["M0", "M1"]
    assert b.due(5.0) == []


# ------------------------------------------------------------------------------ dispatcher


def test_dispatcher_publishes_batches_to_the_trace_topic_with_keys_and_client_id() -> None:
    rec = Recorder()
    d = dispatcher(rec, wait_threshold=0.05).start()
    try:
        for i in range(5):
            assert d.append(sub_after(f"M{i}", keys=f"order-{i} x"))
        assert d.flush(5.0)
    finally:
        d.shutdown()
    assert rec.sent
    contexts = [c for m in rec.sent for c in decode_trace(m.body)]
    assert [c.beans[0].msg_id for c in contexts] == [f"M{i}" for i in range(5)]
    for m in rec.sent:
        assert m.topic == RMQ_SYS_TRACE_TOPIC
        assert m.properties[CLIENT_ID_PROPERTY] == "10.0.0.1@c1"
        keys = set(m.properties[MessageConst.KEYS].split(" "))
        ids = {c.beans[0].msg_id for c in decode_trace(m.body)}
        assert ids <= keys
        assert "x" in keys
    assert d.sent_messages == len(rec.sent)
    assert d.discarded == 0


def test_dispatcher_splits_at_the_size_limit_and_drains_on_shutdown() -> None:
    rec = Recorder()
    d = dispatcher(rec, max_chars=200, wait_threshold=60.0).start()
    for i in range(10):
        d.append(sub_after(f"M{i}"))
    d.shutdown()  # the time threshold never passed: shutdown sends the rest
    sizes = [len(decode_trace(m.body)) for m in rec.sent]
    assert sum(sizes) == 10
    assert len(sizes) >= 2
    assert all(len(m.body) >= 200 for m in rec.sent[:-1])


def test_a_full_queue_drops_and_counts() -> None:
    rec = Recorder()
    d = dispatcher(rec, queue_size=2)  # not started: nothing drains the queue
    assert d.append(sub_after("M0"))
    assert d.append(sub_after("M1"))
    assert not d.append(sub_after("M2"))
    assert d.discarded == 1


def test_a_failing_send_is_counted_not_raised() -> None:
    def broken(msg: Message) -> concurrent.futures.Future[object]:
        raise OSError("no broker")

    d = TraceDispatcher("G", "PRODUCER", client_id="c", send=broken, wait_threshold=0.01).start()
    d.append(sub_after("M0"))
    d.shutdown()
    assert d.failed_messages == 1
    assert d.sent_messages == 0


# ------------------------------------------------------------------------------ rebalance records


def record(trigger: RebalanceTrigger = RebalanceTrigger.NOTIFY) -> RebalanceRecord:
    q = [MessageQueue("T", "broker-a", i) for i in range(4)]
    return RebalanceRecord(
        seq=3, trigger=trigger, group="G", client_id="10.0.0.1@c1", topic="T", message_model="CLUSTERING",
        strategy="AVG", client_ids=("10.0.0.1@c1", "10.0.0.2@c2"), all_queues=tuple(q), owned=tuple(q[:2]),
        removed=tuple(q[2:]), committed={q[2]: 17}, start_ms=1000, end_ms=1004,
    )  # fmt: skip


def test_rebalance_message_is_the_documented_json() -> None:
    msg = rebalance_message(record())
    assert msg.topic == REBALANCE_TOPIC
    assert msg.properties[MessageConst.TAGS] == "G"
    assert msg.properties[MessageConst.KEYS] == "G 10.0.0.1@c1"
    assert msg.properties[CLIENT_ID_PROPERTY] == "10.0.0.1@c1"
    doc = json.loads(msg.body)
    assert doc["v"] == 1
    assert doc["trigger"] == "notify"
    assert doc["seq"] == 3
    assert doc["owned"] == [{"topic": "T", "broker": "broker-a", "queue_id": i} for i in (0, 1)]
    assert doc["removed"][1] == {"topic": "T", "broker": "broker-a", "queue_id": 3}
    assert doc["committed"] == [{"topic": "T", "broker": "broker-a", "queue_id": 2, "offset": 17}]
    assert (doc["start_ms"], doc["end_ms"], doc["duration_ms"], doc["changed"]) == (1000, 1004, 4, True)


def test_consumer_tracing_publishes_the_rebalance_log_until_shut_down() -> None:
    rec = Recorder()
    log = RebalanceLog()
    tracing = ConsumerTracing(dispatcher(rec, wait_threshold=0.01).start(), log)
    log.publish(record(RebalanceTrigger.START))
    tracing.dispatcher.flush(5.0)
    tracing.shutdown()
    log.publish(record(RebalanceTrigger.SHUTDOWN))  # no longer listened to
    assert [json.loads(m.body)["trigger"] for m in rec.sent] == ["start"]


# ------------------------------------------------------------------------------ hooks


def consumed(msg_id: str, *, keys: str | None = "k1", trace_on: str | None = None) -> MessageExt:
    props = {MessageConst.UNIQ_KEY: msg_id, MessageConst.MSG_REGION: "DefaultRegion"}
    if keys is not None:
        props[MessageConst.KEYS] = keys
    if trace_on is not None:
        props[MessageConst.TRACE_ON] = trace_on
    return MessageExt("T", b"body", properties=props, reconsume_times=2, queue_offset=7)


def test_consume_hook_writes_sub_before_and_sub_after_in_java_layout() -> None:
    rec = Recorder()
    d = dispatcher(rec, wait_threshold=0.01)
    hook = ConsumeTraceHook(d, "G")
    msgs = [consumed("A1"), consumed("A2", keys=None), consumed("A3", trace_on="false")]
    token = hook.before(msgs)
    hook.after(token, len(msgs), success=False, return_type=ConsumeReturnType.FAILED)
    d.start()
    d.shutdown()
    (msg,) = rec.sent
    lines = msg.body.decode().split(F)[:-1]
    assert len(lines) == 4  # A3 carries TRACE_ON=false: not traced
    before = lines[0].split(C)
    ts, req = before[1], before[4]
    assert lines[0] == C.join(["SubBefore", ts, "DefaultRegion", "G", req, "A1", "2", "k1"])
    assert lines[1] == C.join(["SubBefore", ts, "DefaultRegion", "G", req, "A2", "2", "null"])
    after = lines[2].split(C)
    cost, ts2 = after[3], after[7]
    assert lines[2] == C.join(["SubAfter", req, "A1", cost, "false", "k1", "4", ts2, "G"])
    assert lines[3] == C.join(["SubAfter", req, "A2", cost, "false", "null", "4", ts2, "G"])
    assert len(req) == 32
    assert int(ts2) >= int(ts)
    assert int(cost) >= 0
    # keys: msg ids and the messages' keys; a message without keys adds none (Java skips a null)
    assert set(msg.properties[MessageConst.KEYS].split(" ")) == {"A1", "A2", "k1"}


def test_consume_hook_skips_calls_with_nothing_traced() -> None:
    rec = Recorder()
    d = dispatcher(rec)
    hook = ConsumeTraceHook(d, "G")
    token = hook.before([consumed("A3", trace_on="false")])
    assert token is None
    hook.after(token, 1, success=True, return_type=ConsumeReturnType.SUCCESS)
    assert d.append(sub_after("probe"))
    assert d.discarded == 0


def test_return_types_follow_java_classification() -> None:
    ok, later = ConsumeConcurrentlyStatus.CONSUME_SUCCESS, ConsumeConcurrentlyStatus.RECONSUME_LATER
    assert consume_return_type(ok, False, 0.1, 900.0) is ConsumeReturnType.SUCCESS
    assert consume_return_type(later, False, 0.1, 900.0) is ConsumeReturnType.FAILED
    assert consume_return_type(None, True, 0.1, 900.0) is ConsumeReturnType.EXCEPTION
    assert consume_return_type(None, False, 0.1, 900.0) is ConsumeReturnType.RETURNNULL
    assert consume_return_type(ok, False, 900.0, 900.0) is ConsumeReturnType.TIME_OUT


def send_result(**kw: object) -> SendResult:
    base: dict[str, object] = {
        "status": SendStatus.SEND_OK, "msg_id": "7F00000100002A9F0000000000000001",
        "offset_msg_id": "7F00000100002A9F0000000000000ABC",
        "message_queue": MessageQueue("T", "broker-a", 1), "queue_offset": 5,
    }  # fmt: skip
    base.update(kw)
    return SendResult(**base)  # type: ignore[arg-type]


def test_producer_hook_writes_pub_in_java_layout() -> None:
    rec = Recorder()
    d = TraceDispatcher("PG", "PRODUCER", client_id="10.0.0.1@p", send=rec, wait_threshold=0.01)
    tracing = ProducerTracing(d)
    props = {MessageConst.TAGS: "TagA", MessageConst.KEYS: "order-1", MessageConst.UNIQ_KEY: "x"}
    tracing.on_send(AnsweredSend(group="PG", topic="T", properties=props, body_length=11,
                    broker_addr="127.0.0.1:10911", begin_ms=1_700_000_000_000,
                    result=send_result()))  # fmt: skip
    tracing.on_send(AnsweredSend(group="PG", topic="T", properties={MessageConst.DELAY: "3"}, body_length=1,
                    broker_addr="127.0.0.1:10911", begin_ms=1_700_000_000_000,
                    result=send_result(status=SendStatus.FLUSH_DISK_TIMEOUT)))  # fmt: skip
    # not traced: the broker switched tracing off; a trace-topic send
    tracing.on_send(AnsweredSend(group="PG", topic="T", properties=props, body_length=11, broker_addr="b",
                    begin_ms=1, result=send_result(trace_on=False)))  # fmt: skip
    tracing.on_send(AnsweredSend(group="PG", topic=RMQ_SYS_TRACE_TOPIC, properties=props, body_length=11,
                    broker_addr="b", begin_ms=1, result=send_result()))  # fmt: skip
    d.start()
    tracing.shutdown()
    (msg,) = rec.sent
    lines = msg.body.decode().split(F)[:-1]
    assert len(lines) == 2
    cost = lines[0].split(C)[10]
    assert lines[0] == C.join([
        "Pub", "1700000000000", "DefaultRegion", "PG", "T", "7F00000100002A9F0000000000000001", "TagA",
        "order-1", "127.0.0.1:10911", "11", cost, "0", "7F00000100002A9F0000000000000ABC", "true",
    ])  # fmt: skip
    second = lines[1].split(C)
    assert (second[6], second[7], second[11], second[13]) == ("null", "null", "3", "false")  # delay msg
    assert int(cost) >= 0
    (ctx, _) = decode_trace(msg.body)
    assert ctx.beans[0].store_host == "127.0.0.1:10911"
    assert ctx.region_id == "DefaultRegion"


def test_tracing_and_the_report_command_do_not_import_pyspark() -> None:
    import subprocess
    import sys

    code = (
        "import sys, rocketq.client.trace, rocketq.spark.report, rocketq.cli.report\n"
        "from rocketq.cli.main import build_parser\n"
        "assert 'report' in build_parser().format_help()\n"
        "heavy = ('pyspark', 'matplotlib', 'pandas')\n"
        "sys.exit(1 if any(m.split('.')[0] in heavy for m in sys.modules) else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_hook_text_is_what_the_codec_encodes_for_the_same_contexts() -> None:
    rec = Recorder()
    d = dispatcher(rec, wait_threshold=0.01)
    hook = ConsumeTraceHook(d, "G")
    msgs = [consumed(f"M{i}", keys=None if i % 3 == 0 else f"k{i} x{i}") for i in range(7)]
    token = hook.before(msgs)
    hook.after(token, len(msgs), success=True, return_type=ConsumeReturnType.SUCCESS)
    d.start()
    d.shutdown()
    (msg,) = rec.sent
    before, after = decode_trace(msg.body)[0], decode_trace(msg.body)[-1]
    keys = [m.properties.get(MessageConst.KEYS) for m in msgs]
    before_beans = tuple(
        TraceBean(msg_id=m.msg_id, retry_times=2, keys=k or "null") for m, k in zip(msgs, keys, strict=True)
    )
    after_beans = tuple(TraceBean(msg_id=m.msg_id, keys=k or "null") for m, k in zip(msgs, keys, strict=True))
    expected = [
        TraceContext(
            trace_type=TraceType.SUB_BEFORE, timestamp=before.timestamp, region_id="DefaultRegion",
            group_name="G", request_id=before.request_id, beans=before_beans,
        ),
        TraceContext(
            trace_type=TraceType.SUB_AFTER, timestamp=after.timestamp, group_name="G",
            request_id=before.request_id, cost_time=after.cost_time, beans=after_beans,
        ),
    ]  # fmt: skip
    assert msg.body.decode() == encode_trace(expected)
    java_keys = [TraceBean(msg_id=m.msg_id, keys=k or "") for m, k in zip(msgs, keys, strict=True)]
    ctx = TraceContext(trace_type=TraceType.SUB_AFTER, beans=tuple(java_keys))
    assert msg.properties[MessageConst.KEYS].split(" ") == trace_keys([ctx])
