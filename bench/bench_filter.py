"""Consuming with an SQL92 filter against a tag filter, same broker, same messages, same run.

    python bench/bench_filter.py [--messages N] [--rounds R]

A ``rocketq server --enable-property-filter`` runs in a subprocess (temp data dir, free ports).
This process stores ``N`` messages (default 200,000, 128 B bodies) over 4 queues with
``Producer.send_batch`` (batches of 32); every message has a tag, ``TagA`` or ``TagB`` (half
each), and user properties ``region`` (``eu``/``us``) and ``amount`` (0..999). Then a
``LitePullConsumer`` of a new group (pulls of 32, from the first offset) subscribes to the topic
with each filter in turn - a ``MessageSelector``, as an application would - and is polled until
it has received every message the filter selects:

* ``*`` - no filter: the ceiling (every message delivered);
* tag ``TagA`` - the consume queue's tag hash codes select half the messages, no record read;
* SQL92 ``TAGS = 'TagA'`` - the same half, chosen by evaluating the expression on each
  message's properties, which the broker reads from the commit log;
* SQL92 ``region = 'eu' AND amount BETWEEN 100 AND 599`` - a quarter, on user properties.

For each: messages delivered per second and messages examined per second (the whole topic is
read to its end: delivered + skipped), best of ``R`` rounds, and the ratios against the tag
filter. Consumer start (route, rebalance) is inside the time; it is a few milliseconds.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rocketq import (
    Admin,
    ClientConfig,
    ConsumeFromWhere,
    LitePullConsumer,
    Message,
    MessageQueue,
    MessageSelector,
    Producer,
)
from rocketq.embedded import spawn_server

TOPIC = "BenchFilter"
QUEUES = 4
BATCH = 32

# (name, selector, which message numbers it selects)
CASES: list[tuple[str, MessageSelector, Callable[[int], bool]]] = [
    ("no filter (*)", MessageSelector.by_tag("*"), lambda i: True),
    ("tag TagA", MessageSelector.by_tag("TagA"), lambda i: i % 2 == 0),
    ("SQL92 TAGS = 'TagA'", MessageSelector.by_sql("TAGS = 'TagA'"), lambda i: i % 2 == 0),
    (
        "SQL92 region = 'eu' AND amount BETWEEN 100 AND 599",
        MessageSelector.by_sql("region = 'eu' AND amount BETWEEN 100 AND 599"),
        lambda i: (i // 2) % 2 == 0 and 100 <= (i * 7) % 1000 <= 599,
    ),
]


def _message(i: int) -> Message:
    return Message(
        TOPIC,
        bytes(128),
        tags="TagA" if i % 2 == 0 else "TagB",
        keys=f"order-{i}",
        properties={"region": "eu" if (i // 2) % 2 == 0 else "us", "amount": str((i * 7) % 1000)},
    )


def _fill(config: ClientConfig, total: int) -> None:
    with Producer("bench_filter_producer", client_config=config) as producer:
        for start in range(0, total, BATCH):
            queue = MessageQueue(TOPIC, "broker-a", (start // BATCH) % QUEUES)
            producer.send_batch([_message(i) for i in range(start, start + BATCH)], queue=queue)


def _consume(config: ClientConfig, group: str, selector: MessageSelector, expected: int) -> float:
    """Seconds from the consumer's start until it received ``expected`` messages."""
    consumer = LitePullConsumer(
        group,
        client_config=config,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        pull_batch_size=BATCH,
        auto_commit=False,
    )
    consumer.subscribe(TOPIC, selector)
    t0 = time.perf_counter()
    consumer.start()
    try:
        received = 0
        while received < expected:
            batch = consumer.poll(10.0)
            if not batch:
                raise RuntimeError(f"{group}: no message for 10 s after {received} of {expected}")
            received += len(batch)
        secs = time.perf_counter() - t0
    finally:
        consumer.shutdown()
    if received != expected:
        raise RuntimeError(f"{group}: received {received}, expected {expected}")
    return secs


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=200_000, help="messages stored (a multiple of 128)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per filter (best is shown)")
    args = parser.parse_args()
    total = args.messages - args.messages % (QUEUES * BATCH)
    rows = []
    with (
        tempfile.TemporaryDirectory(prefix="bench-filter-") as tmp,
        spawn_server(Path(tmp) / "data", extra_args=("--enable-property-filter",)) as server,
    ):
        config = ClientConfig(namesrv=server.namesrv_addr, client_ip="127.0.0.1", instance_name="bench")
        with Admin(server.namesrv_addr) as admin:
            admin.create_topic(TOPIC, queues=QUEUES)
        _fill(config, total)
        for n, (name, selector, selects) in enumerate(CASES):
            expected = sum(1 for i in range(total) if selects(i))
            best = min(
                _consume(config, f"bench_filter_{n}_{r}", selector, expected) for r in range(args.rounds)
            )
            rows.append((name, expected / best, total / best))
    tag_rate, tag_examined = rows[1][1], rows[1][2]
    print(
        f"{total:,} messages of 128 B over {QUEUES} queues; LitePullConsumer, pulls of {BATCH}, "
        f"best of {args.rounds}"
    )
    print(f"{'filter':55} {'delivered msg/s':>16} {'examined msg/s':>15} {'vs tag':>7}")
    for name, rate, examined_rate in rows:
        print(f"{name:55} {rate:>16,.0f} {examined_rate:>15,.0f} {examined_rate / tag_examined:>6.2f}x")
    sql = rows[2]
    print()
    print(
        f"SQL92 vs tag for the same half of the messages: {sql[1] / tag_rate:.2f}x the delivered rate "
        f"({sql[1]:,.0f} vs {tag_rate:,.0f} msg/s)"
    )


if __name__ == "__main__":
    main()
