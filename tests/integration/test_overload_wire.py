"""A Java producer flooding a rocketq broker gets RocketMQ 4.9's busy answer, and nothing it was
told is stored is lost.

Several connections each write a burst of the SEND_MESSAGE_V2 frame a real 4.9.4 Java producer
sent (``produce.jsonl``, byte for byte) at once: far more than the broker serves in 200 ms, so the
requests queue in its connections' buffers while it takes turns between them, and the ones that
waited over ``waitTimeMillsInSendQueue`` are answered ``SYSTEM_BUSY`` (2) unserved, with the remark
of 4.9.4's ``BrokerFastFailure`` - in a JSON header shaped as the Java broker's answers are (the
keys of a captured Java error answer, in its order). Every request gets an answer, each is SUCCESS
or SYSTEM_BUSY, and the topic then holds exactly as many messages as were answered SUCCESS. The
number of connections and the burst size are drawn at random (the seed is printed).
"""

from __future__ import annotations

import asyncio
import json
import random
import re
from pathlib import Path

import pytest

from rocketq.broker import Broker, BrokerConfig
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketq.protocol.frame import FrameDecoder
from rocketq.protocol.headers import CreateTopicRequestHeader
from rocketq.remoting import RemotingClient
from tests.wirecaps import frame_bytes, load

pytestmark = pytest.mark.integration

#: BrokerFastFailure's remark (4.9.4), as a pattern
BUSY = re.compile(
    r"\[TIMEOUT_CLEAN_QUEUE\]broker busy, start flow control for a while, "
    r"period in queue: (\d+)ms, size of queue: (\d+)"
)


def _java_send() -> tuple[bytes, str]:
    line = next(x for x in load("produce.jsonl") if x["header"]["code"] == RequestCode.SEND_MESSAGE_V2)
    return frame_bytes(line), line["header"]["extFields"]["b"]


def _java_error_header_keys() -> list[str]:
    """The keys of a 4.9.4 broker's JSON error answer, in its order."""
    for line in load("errors.jsonl"):
        if line["from"] == "broker" and line["header"].get("remark"):
            raw = frame_bytes(line)
            size = int.from_bytes(raw[4:8], "big") & 0xFFFFFF
            return list(json.loads(raw[8 : 8 + size]))
    raise AssertionError("no captured error answer")


def _header_json(raw: bytes) -> dict[str, object]:
    size = int.from_bytes(raw[4:8], "big") & 0xFFFFFF
    return json.loads(raw[8 : 8 + size])  # type: ignore[no-any-return]


def test_a_java_producer_flooding_the_broker_gets_rocketmqs_busy_answer(tmp_path: Path) -> None:
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    conns, burst = rng.randint(6, 10), rng.randint(2500, 4000)
    print(f"seed {seed}: {conns} connections x {burst} Java sends at once")
    frame, topic = _java_send()

    async def main() -> tuple[dict[int, int], list[bytes], int]:
        # a 20 ms bound (RocketMQ's waitTimeMillsInSendQueue is 200 ms): a flood on a fast, quiet
        # machine may never queue 200 ms, and the answer under test is the same
        config = BrokerConfig(port=0, data_dir=tmp_path, wait_time_in_send_queue=0.02)
        async with Broker(config) as broker:
            addr = broker.address
            async with RemotingClient() as client:
                header = CreateTopicRequestHeader(
                    topic=topic, default_topic="TBW102", read_queue_nums=4, write_queue_nums=4, perm=6,
                    topic_filter_type="SINGLE_TAG", topic_sys_flag=0, order=False,
                )  # fmt: skip
                r = await client.invoke(
                    addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_ext_fields())
                )
                assert r.code == ResponseCode.SUCCESS, r.remark
            host, port = addr.rsplit(":", 1)
            streams = [await asyncio.open_connection(host, int(port)) for _ in range(conns)]
            for _, writer in streams:
                writer.write(frame * burst)
            codes: dict[int, int] = {}
            busy_frames: list[bytes] = []

            async def read_all(reader: asyncio.StreamReader) -> None:
                decoder = FrameDecoder()
                got = 0
                pending = b""
                while got < burst:
                    data = await reader.read(1 << 16)
                    assert data, "the broker closed the connection"
                    decoder.receive_data(data)
                    pending += data
                    while (cmd := decoder.next_command()) is not None:
                        got += 1
                        codes[cmd.code] = codes.get(cmd.code, 0) + 1
                        size = int.from_bytes(pending[:4], "big")
                        raw, pending = pending[: 4 + size], pending[4 + size :]
                        if cmd.code == ResponseCode.SYSTEM_BUSY and len(busy_frames) < 50:
                            busy_frames.append(raw)

            await asyncio.wait_for(asyncio.gather(*(read_all(r) for r, _ in streams)), 120)
            for _, writer in streams:
                writer.close()
            stored = sum(broker.store.max_offset(topic, q) for q in range(4))
            return codes, busy_frames, stored

    codes, busy_frames, stored = asyncio.run(main())
    print(f"answers by code: {codes}; stored {stored}")
    assert sum(codes.values()) == conns * burst  # every request answered
    assert set(codes) <= {ResponseCode.SUCCESS, ResponseCode.SYSTEM_BUSY}, codes
    assert codes.get(ResponseCode.SYSTEM_BUSY, 0) > 0, "a flood this size must meet the 20 ms bound"
    assert codes.get(ResponseCode.SUCCESS, 0) > 0
    assert stored == codes[ResponseCode.SUCCESS]  # busy answers stored nothing; successes all kept
    keys = _java_error_header_keys()
    for raw in busy_frames:
        header = _header_json(raw)
        assert list(header) == keys, (list(header), keys)
        assert header["code"] == 2
        assert header["flag"] == 1
        assert header["serializeTypeCurrentRPC"] == "JSON"
        m = BUSY.fullmatch(str(header["remark"]))
        assert m is not None, header["remark"]
        assert int(m.group(1)) >= 20  # it waited over the test's waitTimeMillsInSendQueue
