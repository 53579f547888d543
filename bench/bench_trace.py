"""What message tracing costs: the dispatcher's throughput, and a push consumer with and without it.

    python bench/bench_trace.py [--quick]

* **dispatcher**: SubBefore + SubAfter records for N consumed messages, made by the consume hook
  and published by :class:`~rocketq.client.trace.TraceDispatcher` (queue, worker thread, packing
  to 118,000-character messages; the send is a no-op here), against the **baseline** of encoding
  the same records with :func:`~rocketq.protocol.trace.encode_trace` in a plain loop. Java's
  dispatcher holds at most 1,024 waiting contexts and drops the rest; so does ours — the figure
  says how many messages per second a consumer can trace before that happens.
* **consume**: a push consumer draining a backlog from a rocketq broker (in its own process) with
  ``trace=True`` against the same consumer without tracing, in the same run.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import threading
import time
from pathlib import Path

from rocketq import ClientConfig, ConsumeConcurrentlyStatus, ConsumeFromWhere, Message, Producer, PushConsumer
from rocketq.client.trace import ConsumeTraceHook, TraceDispatcher
from rocketq.embedded import spawn_server
from rocketq.protocol import ResponseCode, calls
from rocketq.protocol.message import MessageExt
from rocketq.protocol.properties import MessageConst
from rocketq.protocol.trace import ConsumeReturnType, TraceBean, TraceContext, TraceType, encode_trace
from rocketq.remoting import RemotingClient


def messages(n: int) -> list[MessageExt]:
    return [
        MessageExt(
            "BenchTrace",
            b"x" * 64,
            properties={MessageConst.UNIQ_KEY: f"{i:032X}", MessageConst.KEYS: f"k{i}"},
        )
        for i in range(n)
    ]


def bench_dispatcher(n: int) -> tuple[float, float, int]:
    msgs = messages(n)
    # baseline: the same records, encoded in a loop
    began = time.perf_counter()
    for m in msgs:
        bean = (TraceBean(msg_id=m.msg_id, keys=m.properties[MessageConst.KEYS]),)
        encode_trace(
            (
                TraceContext(
                    trace_type=TraceType.SUB_BEFORE, timestamp=1, group_name="g", request_id="r", beans=bean
                ),
                TraceContext(
                    trace_type=TraceType.SUB_AFTER, timestamp=2, group_name="g", request_id="r", beans=bean
                ),
            )
        )
    baseline = n / (time.perf_counter() - began)

    sent = [0]

    def send(message: Message) -> None:
        sent[0] += 1

    dispatcher = TraceDispatcher("g", "CONSUMER", client_id="c", send=send, queue_size=1 << 30).start()  # type: ignore[arg-type]
    hook = ConsumeTraceHook(dispatcher, "g")
    began = time.perf_counter()
    for m in msgs:
        token = hook.before([m])
        hook.after(token, 1, success=True, return_type=ConsumeReturnType.SUCCESS)
    dispatcher.flush(60.0)
    rate = n / (time.perf_counter() - began)
    dispatcher.shutdown()
    return rate, baseline, sent[0]


async def create_topic(broker: str, topic: str, queues: int) -> None:
    client = RemotingClient()
    resp = await client.invoke(broker, calls.create_topic(topic, queues, queues).request, 5.0)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    await client.close()


def drain(namesrv: str, topic: str, group: str, total: int, *, trace: bool) -> float:
    done = threading.Event()
    count = [0]
    lock = threading.Lock()

    def listener(msgs: list[MessageExt]) -> ConsumeConcurrentlyStatus:
        with lock:
            count[0] += len(msgs)
            if count[0] >= total:
                done.set()
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        group, client_config=ClientConfig(namesrv=namesrv, client_ip="127.0.0.1", instance_name=group),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, trace=trace,
    )  # fmt: skip
    consumer.subscribe(topic)
    consumer.register_listener(listener)
    began = time.perf_counter()
    with consumer:
        assert done.wait(300), count[0]
        elapsed = time.perf_counter() - began
        tracing = consumer._tracing  # what tracing dropped
        if tracing is not None:
            print(f"  traced consumer: {tracing.dispatcher.discarded} trace contexts dropped (queue full)")
    return count[0] / elapsed


def main() -> None:
    quick = "--quick" in sys.argv
    n = 20_000 if quick else 100_000
    rate, baseline, sent = bench_dispatcher(n)
    print(f"dispatcher: {rate:,.0f} traced messages/s (SubBefore + SubAfter, {sent} trace messages); "
          f"encoding alone {baseline:,.0f}/s; ratio {rate / baseline:.2f}")  # fmt: skip

    total = 10_000 if quick else 50_000
    with tempfile.TemporaryDirectory() as tmp, spawn_server(Path(tmp)) as server:
        asyncio.run(create_topic(server.broker_addr, "BenchTrace", 8))
        time.sleep(0.5)
        with Producer("bench_trace_pg", client_config=ClientConfig(namesrv=server.namesrv_addr)) as producer:
            batch: list[Message] = []
            for i in range(total):
                batch.append(Message("BenchTrace", b"x" * 256, keys=f"k{i}"))
                if len(batch) == 64:
                    producer.send_batch(batch)
                    batch = []
            if batch:
                producer.send_batch(batch)
        plain = drain(server.namesrv_addr, "BenchTrace", "bench_plain", total, trace=False)
        traced = drain(server.namesrv_addr, "BenchTrace", "bench_traced", total, trace=True)
    ratio = traced / plain
    print(f"consume: {traced:,.0f} msg/s with trace=True, {plain:,.0f} msg/s without; ratio {ratio:.2f}")


if __name__ == "__main__":
    main()
