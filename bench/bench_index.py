"""Looking messages up by key: the message index at two store sizes, against a scan, same run.

Cases (all in process, on the store: the broker's QUERY_MESSAGE adds one worker-thread hop):

* **index**: ``MessageStore.query_message`` for a random key of a message stored among 10,000
  and among 1,000,000 messages (RocketMQ's default index geometry: 5 M slots, 20 M entries);
  a lookup hashes the key, walks its slot's chain and reads the one record it names, so the
  two sizes should cost about the same;
* **scan**: what rocketq did before it had an index - read the topic's queues from the first
  message on, decoding properties, until the key turns up - at 10,000 messages (at 1,000,000 it
  would be a hundred times slower again; it is not run);
* **append**: ``put_message`` of pre-encoded records (what a send does) with the index on and
  off, best of two runs each, in CPU time, after 200,000 appends have touched the index's pages:
  what indexing two keys a message (its unique id and one key) costs the send path;
* **through the client API**: a ``rocketq server`` process holding 10,000 messages sent by
  ``Producer.send_batch``, looked up with ``Admin.query_message`` (by key) and
  ``Admin.view_message`` (by the producer's id in its topic, and by the broker's offset id) -
  what ``rocketq message query`` / ``show`` wait for: the request's round trip and the admin's
  event-loop hop around the broker's look-up.

Every message has a unique id (``UNIQ_KEY``, as producers set it) and one key. Lookups are
timed one by one; the table gives the mean and p99 in microseconds and the scan / index ratio.

Run: ``python bench/bench_index.py`` (``--big`` to change the 1,000,000, ``--dir`` for the disk).
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rocketq import Admin, ClientConfig, Message, MessageQueue, Producer, SendResult
from rocketq.embedded import spawn_server
from rocketq.protocol.message import decode_messages, encode_message
from rocketq.protocol.properties import KEY_SEPARATOR, MessageConst, properties_to_string
from rocketq.store import MessageStore, StoreConfig

TOPIC = "BenchIndex"
QUEUES = 8
BATCH = 32


def records(start: int, count: int) -> list[bytes]:
    out = []
    for i in range(start, start + count):
        props = properties_to_string(
            {"TAGS": "TagA", "KEYS": f"order-{i}", "UNIQ_KEY": f"7F0000010000{i:020X}", "WAIT": "true"}
        )
        out.append(encode_message(topic=TOPIC, body=b"x" * 100, properties=props, queue_id=0))
    return out


def fill(store: MessageStore, total: int) -> float:
    """Append ``total`` messages in batches over the queues; returns messages per second."""
    started = time.perf_counter()
    done = 0
    while done < total:
        n = min(BATCH, total - done)
        store.put_messages(TOPIC, (done // BATCH) % QUEUES, records(done, n))
        done += n
    return total / (time.perf_counter() - started)


def scan(store: MessageStore, key: str) -> list[bytes]:
    """The pre-index QUERY_MESSAGE: every queue from its first message, properties decoded."""
    found: list[bytes] = []
    for queue_id in store.queue_ids(TOPIC):
        offset = store.min_offset(TOPIC, queue_id)
        end = store.max_offset(TOPIC, queue_id)
        while offset < end and not found:
            result = store.get_messages(TOPIC, queue_id, offset, 32)
            if not result.message_count:
                break
            for msg in decode_messages(result.data, read_body=False):
                keys = (msg.properties.get(MessageConst.KEYS) or "").split(KEY_SEPARATOR)
                if key in keys:
                    data = store.read_message_bytes(msg.commit_log_offset)
                    if data is not None:
                        found.append(data)
            offset = result.next_begin_offset
    return found


def time_lookups(lookup: Callable[[str], int], keys: list[str]) -> tuple[float, float]:
    """Mean and p99 microseconds of ``lookup`` over ``keys`` (each must find one message)."""
    times = []
    for key in keys:
        t = time.perf_counter()
        found = lookup(key)
        times.append((time.perf_counter() - t) * 1e6)
        assert found == 1, (key, found)
    times.sort()
    return sum(times) / len(times), times[int(len(times) * 0.99) - 1]


def index_lookup(store: MessageStore) -> Callable[[str], int]:
    return lambda key: len(store.query_message(TOPIC, key, 32, 0, 2**63 - 1).messages)


def client_lookups(base: Path, lookups: int, rng: random.Random) -> list[tuple[str, float, float]]:
    """Look-ups through ``Admin`` against a server process holding 10,000 messages."""
    with spawn_server(base / "server") as server:
        config = ClientConfig(namesrv=server.namesrv_addr, client_ip="127.0.0.1", instance_name="bench")
        sent: list[SendResult] = []
        with Producer("bench_index_producer", client_config=config) as producer:
            for start in range(0, 10_000, BATCH):
                msgs = [Message(TOPIC, b"x" * 100, keys=f"order-{i}") for i in range(start, start + BATCH)]
                queue = MessageQueue(TOPIC, "broker-a", (start // BATCH) % 4)
                result = producer.send_batch(msgs, queue=queue)
                for n, (msg_id, offset_id) in enumerate(
                    zip(result.msg_id.split(","), result.offset_msg_id.split(","), strict=True)
                ):
                    sent.append(SendResult(result.status, msg_id, offset_id, queue, result.queue_offset + n))
        with Admin(server.namesrv_addr) as admin:
            admin.query_message(TOPIC, "order-0")  # connections and route, before the clock
            picks = [rng.randrange(len(sent)) for _ in range(lookups)]
            rows = []
            for name, lookup in (
                (
                    "Admin.query_message (key), 10 k stored",
                    lambda i: admin.query_message(TOPIC, f"order-{i}"),
                ),
                (
                    "Admin.view_message (producer id + topic)",
                    lambda i: admin.view_message(sent[i].msg_id, topic=TOPIC),
                ),
                ("Admin.view_message (offset id)", lambda i: admin.view_message(sent[i].offset_msg_id)),
            ):
                mean, p99 = time_lookups(lambda i, f=lookup: len(f(int(i))), [str(p) for p in picks])  # type: ignore[misc]
                rows.append((name, mean, p99))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--big", type=int, default=1_000_000, help="messages in the big store")
    parser.add_argument("--lookups", type=int, default=2000, help="lookups per case")
    parser.add_argument("--dir", type=Path, default=None, help="where to put the stores")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="bench-index-", dir=args.dir))
    rng = random.Random(7)
    rows: list[tuple[str, float, float]] = []
    try:
        cfg = StoreConfig(commit_log_segment_size=256 * 1024 * 1024)
        for label, total in (("10 k", 10_000), (f"{args.big // 1000:,} k", args.big)):
            with MessageStore(base / f"s{total}", cfg, start_services=False) as store:
                rate = fill(store, total)
                print(f"stored {total:,} messages ({rate:,.0f} msg/s with the index)", flush=True)
                keys = [f"order-{rng.randrange(total)}" for _ in range(args.lookups)]
                mean, p99 = time_lookups(index_lookup(store), keys)
                rows.append((f"index lookup, {label} messages stored", mean, p99))
                uniq = [f"7F0000010000{rng.randrange(total):020X}" for _ in range(args.lookups)]
                mean, p99 = time_lookups(index_lookup(store), uniq)
                rows.append((f"index lookup by unique id, {label} stored", mean, p99))
                if total == 10_000:
                    few = keys[: max(20, args.lookups // 20)]
                    mean, p99 = time_lookups(lambda k, s=store: len(scan(s, k)), few)  # type: ignore[misc]
                    rows.append(("scan (no index), 10 k messages stored", mean, p99))
        appends: dict[bool, float] = {}
        warm = records(0, 200_000)
        recs = records(200_000, 100_000)
        for enabled in (True, False, True, False):
            root = base / f"append-{enabled}"
            config = StoreConfig(commit_log_segment_size=256 * 1024 * 1024, message_index_enable=enabled)
            with MessageStore(root, config, start_services=False) as store:
                for i, rec in enumerate(warm):  # steady state: the index's slot pages touched once
                    store.put_message(TOPIC, i % QUEUES, rec)
                started = time.process_time()
                for i, rec in enumerate(recs):
                    store.put_message(TOPIC, i % QUEUES, rec)
                rate = len(recs) / (time.process_time() - started)
                appends[enabled] = max(appends.get(enabled, 0.0), rate)
            shutil.rmtree(root)
        rows.extend(client_lookups(base, min(args.lookups, 500), rng))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print()
    print(f"{'case':48} {'mean µs':>9} {'p99 µs':>9}")
    for name, mean, p99 in rows:
        print(f"{name:48} {mean:9.1f} {p99:9.1f}")
    small = rows[0][1]
    print()
    print(f"index lookup, {args.big:,} vs 10,000 stored: {rows[3][1] / small:.2f}x the time")
    print(f"scan / index at 10,000 stored: {rows[2][1] / small:,.0f}x")
    cost = (1 / appends[True] - 1 / appends[False]) * 1e6
    print(
        f"single appends (put_message, CPU time): {appends[True]:,.0f} msg/s indexed, "
        f"{appends[False]:,.0f} msg/s without the index "
        f"({appends[True] / appends[False]:.2f}x, {cost:.1f} µs a message)"
    )


if __name__ == "__main__":
    main()
