"""Pulls filtered by SQL92 against pulls filtered by tag, same broker, same messages, same run.

    python bench/bench_filter.py [--messages N] [--rounds R]

A ``rocketq server --enable-property-filter`` runs in a subprocess (temp data dir, free ports).
This process stores ``N`` messages (default 200,000, 128 B bodies) over 4 queues in batches;
every message has a tag, ``TagA`` or ``TagB`` (half each), and user properties ``region``
(``eu``/``us``) and ``amount`` (0..999). Then one puller per queue reads every queue from its
start in pulls of 32, subscription in the request, as a pull consumer does, once per filter:

* ``*`` - no filter: the ceiling (every message delivered);
* tag ``TagA`` - the consume queue's tag hash codes select half the messages, no record read;
* SQL92 ``TAGS = 'TagA'`` - the same half, chosen by evaluating the expression on each
  message's properties, which the broker reads from the commit log;
* SQL92 ``region = 'eu' AND amount BETWEEN 100 AND 599`` - a quarter, on user properties.

For each: messages delivered per second and messages examined per second (delivered + skipped),
best of ``R`` rounds, and the ratios against the tag filter.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rocketq.embedded import spawn_server
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketq.protocol.headers import (
    CreateTopicRequestHeader,
    PullMessageRequestHeader,
    SendMessageRequestHeaderV2,
)
from rocketq.protocol.message import Message, encode_batch
from rocketq.remoting import RemotingClient, run

TOPIC = "BenchFilter"
QUEUES = 4
BATCH = 32

# (name, expression type, expression, which message numbers it selects)
CASES: list[tuple[str, str, str, Callable[[int], bool]]] = [
    ("no filter (*)", "TAG", "*", lambda i: True),
    ("tag TagA", "TAG", "TagA", lambda i: i % 2 == 0),
    ("SQL92 TAGS = 'TagA'", "SQL92", "TAGS = 'TagA'", lambda i: i % 2 == 0),
    (
        "SQL92 region = 'eu' AND amount BETWEEN 100 AND 599",
        "SQL92",
        "region = 'eu' AND amount BETWEEN 100 AND 599",
        lambda i: (i // 2) % 2 == 0 and 100 <= (i * 7) % 1000 <= 599,
    ),
]


def _batch(start: int) -> bytes:
    messages = []
    for i in range(start, start + BATCH):
        props = {
            "TAGS": "TagA" if i % 2 == 0 else "TagB",
            "KEYS": f"order-{i}",
            "UNIQ_KEY": f"FD00000000000000000000000000000200000000{i:016X}",
            "region": "eu" if (i // 2) % 2 == 0 else "us",
            "amount": str((i * 7) % 1000),
        }
        messages.append(Message(TOPIC, bytes(128), 0, props))
    return encode_batch(messages)


async def _fill(client: RemotingClient, addr: str, total: int) -> None:
    header = CreateTopicRequestHeader(
        topic=TOPIC,
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

    async def sender(q: int) -> None:
        for start in range(q * BATCH, total, QUEUES * BATCH):
            fields = SendMessageRequestHeaderV2(
                producer_group="bench_filter_producer",
                topic=TOPIC,
                default_topic="TBW102",
                default_topic_queue_nums=4,
                queue_id=q,
                sys_flag=0,
                born_timestamp=int(time.time() * 1000),
                flag=0,
                properties="WAIT\x01true",
                batch=True,
            ).to_ext_fields()
            body = _batch(start)
            r = await client.invoke(
                addr, RemotingCommand.request(RequestCode.SEND_BATCH_MESSAGE, fields, body), 30
            )
            assert r.code == ResponseCode.SUCCESS, r.remark

    await asyncio.gather(*(sender(q) for q in range(QUEUES)))


async def _pull_all(
    client: RemotingClient, addr: str, expression_type: str, expression: str
) -> tuple[int, int, float]:
    """Read every queue from its start; (delivered, examined, seconds)."""
    delivered = examined = 0

    async def puller(qid: int) -> None:
        nonlocal delivered, examined
        offset = 0
        while True:
            h = PullMessageRequestHeader(
                consumer_group="bench_filter_group",
                topic=TOPIC,
                queue_id=qid,
                queue_offset=offset,
                max_msg_nums=32,
                sys_flag=4,
                commit_offset=0,
                suspend_timeout_millis=0,
                subscription=expression,
                sub_version=0,
                expression_type=expression_type,
            )
            r = await client.invoke(
                addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, h.to_ext_fields()), 30
            )
            if r.code == ResponseCode.PULL_NOT_FOUND:
                return
            if r.code not in (ResponseCode.SUCCESS, ResponseCode.PULL_RETRY_IMMEDIATELY):
                raise RuntimeError(f"pull failed: {r.code} {r.remark}")
            nxt = int(r.ext_fields["nextBeginOffset"])
            examined += nxt - offset
            if r.code == ResponseCode.SUCCESS:
                delivered += r.body.count(b"\xda\xa3\x20\xa7")  # one magic code per record
            offset = nxt

    t0 = time.perf_counter()
    await asyncio.gather(*(puller(q) for q in range(QUEUES)))
    return delivered, examined, time.perf_counter() - t0


async def _bench(addr: str, total: int, rounds: int) -> list[tuple[str, float, float, int]]:
    async with RemotingClient() as client:
        await _fill(client, addr, total)
        rows = []
        for name, kind, expression, selects in CASES:
            best = (0.0, 0.0)
            expected = sum(1 for i in range(total) if selects(i))
            for _ in range(rounds):
                delivered, examined, secs = await _pull_all(client, addr, kind, expression)
                assert examined == total, (name, examined, total)
                assert delivered == expected, (name, delivered, expected)
                best = max(best, (delivered / secs, examined / secs))
            rows.append((name, best[0], best[1], delivered))
        return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=200_000, help="messages stored (a multiple of 128)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per filter (best is shown)")
    args = parser.parse_args()
    total = args.messages - args.messages % (QUEUES * BATCH)
    with (
        tempfile.TemporaryDirectory(prefix="bench-filter-") as tmp,
        spawn_server(Path(tmp) / "data", extra_args=("--enable-property-filter",)) as server,
    ):
        rows = run(_bench(server.broker_addr, total, args.rounds))
    tag_rate = rows[1][1]
    tag_examined = rows[1][2]
    print(f"{total:,} messages of 128 B over {QUEUES} queues, pulls of 32, one puller per queue")
    print(f"{'filter':55} {'delivered msg/s':>16} {'examined msg/s':>15} {'vs tag':>7}")
    for name, rate, examined_rate, _delivered in rows:
        print(f"{name:55} {rate:>16,.0f} {examined_rate:>15,.0f} {examined_rate / tag_examined:>6.2f}x")
    sql = rows[2]
    print()
    print(
        f"SQL92 vs tag for the same half of the messages: {sql[1] / tag_rate:.2f}x the delivered rate "
        f"({sql[1]:,.0f} vs {tag_rate:,.0f} msg/s)"
    )


if __name__ == "__main__":
    main()
