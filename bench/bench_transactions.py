"""Transactional sends against plain sends, same broker, same run.

    python bench/bench_transactions.py [--duration SECONDS] [--concurrency N]

A ``rocketq server`` runs in a subprocess (temp data dir, free ports). This process drives it
with ``N`` concurrent senders (default 32) on one asyncio ``RemotingClient``, 1 KiB bodies over 8
queues, each case for ``--duration`` seconds:

* **plain**: SEND_MESSAGE_V2 as a Java ``DefaultMQProducer.send`` makes it, each sender waiting
  for its answer;
* **transactional**: what ``TransactionMQProducer.sendMessageInTransaction`` does - the half
  message (``TRAN_MSG=true``, ``PGROUP``), its answer, then END_TRANSACTION commit *oneway* (as
  Java sends it; the local transaction is instant here). The rate counts transactions whose
  committed message is readable in the real topic: the run ends when the last one is.

Each transaction costs the broker two requests and three appends (half message, committed
message, op record) and a message-index look-up for exactly-once, against one request and one
append for a plain send; the ratio below is transactions/s over plain sends/s.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from rocketq.embedded import spawn_server
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketq.protocol.headers import (
    CreateTopicRequestHeader,
    EndTransactionRequestHeader,
    GetMaxOffsetRequestHeader,
    SendMessageRequestHeaderV2,
)
from rocketq.protocol.message_id import parse_offset_msg_id
from rocketq.protocol.properties import properties_to_string
from rocketq.remoting import RemotingClient, run

QUEUES = 8
GROUP = "bench_tx_group"
BODY = bytes(1024)


def _send(topic: str, queue_id: int, n: int, *, transactional: bool) -> RemotingCommand:
    props = {
        "KEYS": f"order-{n}",
        "UNIQ_KEY": f"FD00000000000000000000000000000200000000{n:016X}",
        "WAIT": "true",
    }
    if transactional:
        props["TRAN_MSG"] = "true"
        props["PGROUP"] = GROUP
    props["TAGS"] = "TagTx"
    header = SendMessageRequestHeaderV2(
        producer_group=GROUP,
        topic=topic,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=queue_id,
        sys_flag=4 if transactional else 0,
        born_timestamp=int(time.time() * 1000),
        flag=0,
        properties=properties_to_string(props),
        reconsume_times=0,
    )
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, header.to_ext_fields(), BODY)


async def _create(client: RemotingClient, addr: str, topic: str) -> None:
    header = CreateTopicRequestHeader(
        topic=topic,
        default_topic="TBW102",
        read_queue_nums=QUEUES,
        write_queue_nums=QUEUES,
        perm=6,
        topic_filter_type="SINGLE_TAG",
        topic_sys_flag=0,
        order=False,
    )
    r = await client.invoke(
        addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_ext_fields())
    )
    assert r.code == ResponseCode.SUCCESS, r.remark


async def _readable(client: RemotingClient, addr: str, topic: str) -> int:
    total = 0
    for q in range(QUEUES):
        header = GetMaxOffsetRequestHeader(topic=topic, queue_id=q)
        r = await client.invoke(
            addr, RemotingCommand.request(RequestCode.GET_MAX_OFFSET, header.to_ext_fields())
        )
        total += int(r.ext_fields["offset"])
    return total


async def _case(
    addr: str, topic: str, *, transactional: bool, concurrency: int, duration: float, serial: int
) -> tuple[int, float, list[float]]:
    async with RemotingClient() as client:
        await _create(client, addr, topic)
        done = 0
        latencies: list[float] = []
        stop_at = time.perf_counter() + duration
        t0 = time.perf_counter()

        async def sender(w: int) -> None:
            nonlocal done
            i = 0
            while time.perf_counter() < stop_at:
                n = serial * 1_000_000_000 + w * 10_000_000 + i  # unique ids stay unique across runs
                start = time.perf_counter()
                r = await client.invoke(
                    addr, _send(topic, (w + i) % QUEUES, n, transactional=transactional), 30
                )
                if r.code != ResponseCode.SUCCESS:
                    raise RuntimeError(f"send failed: {r.code} {r.remark}")
                if transactional:
                    end = EndTransactionRequestHeader(
                        producer_group=GROUP,
                        tran_state_table_offset=int(r.ext_fields["queueOffset"]),
                        commit_log_offset=parse_offset_msg_id(r.ext_fields["msgId"])[1],
                        commit_or_rollback=8,
                        from_transaction_check=False,
                        msg_id=f"FD00000000000000000000000000000200000000{n:016X}",
                    )
                    request = RemotingCommand.request(
                        RequestCode.END_TRANSACTION, end.to_ext_fields(), oneway=True
                    )
                    await client.invoke_oneway(addr, request)
                latencies.append(time.perf_counter() - start)
                done += 1
                i += 1

        await asyncio.gather(*(sender(w) for w in range(concurrency)))
        while await _readable(client, addr, topic) < done:  # the last commits are on their way
            await asyncio.sleep(0.005)
        return done, time.perf_counter() - t0, latencies


def _lat(latencies: list[float]) -> str:
    ordered = sorted(latencies)
    p50, p99 = ordered[len(ordered) // 2], ordered[int(len(ordered) * 0.99)]
    return f"p50 {p50 * 1000:5.2f} ms  p99 {p99 * 1000:5.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration", type=float, default=4.0, help="seconds per case (default 4)")
    parser.add_argument("--concurrency", type=int, default=32, help="concurrent senders (default 32)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of both cases (best is kept)")
    args = parser.parse_args()
    best: dict[str, tuple[float, str]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-tx-") as tmp, spawn_server(Path(tmp) / "data") as server:
        for r in range(args.rounds):
            for name, transactional in (("plain", False), ("transactional", True)):
                n, secs, lat = run(
                    _case(
                        server.broker_addr,
                        f"BenchTx{name}{r}",
                        transactional=transactional,
                        concurrency=args.concurrency,
                        duration=args.duration,
                        serial=r * 2 + int(transactional),
                    )
                )
                rate = n / secs
                if rate > best.get(name, (0.0, ""))[0]:
                    best[name] = (rate, _lat(lat))
    print(
        f"{args.concurrency} concurrent senders, 1 KiB, best of {args.rounds} rounds of {args.duration:g} s"
    )
    for name in ("plain", "transactional"):
        rate, latency = best[name]
        unit = "sends/s" if name == "plain" else "transactions/s (half + commit, committed readable)"
        print(f"{name:14} {rate:>9,.0f} {unit}   {latency} (send answered)")
    print(f"transactional / plain: {best['transactional'][0] / best['plain'][0]:.2f}x")


if __name__ == "__main__":
    main()
