"""The rocketmq data source against Spark's Parquet source, in the same run (ratios are the figures).

Starts ``rocketq server`` in a child process on free ports in a temp dir, creates a topic with
``--queues`` queues and fills it with ``--messages`` messages of ``--size`` bytes (batch sends over
the protocol), then with one ``local[2]`` Spark session times:

* **read**: the data source reading every message (all columns materialised by the ``noop`` sink),
  once with Arrow record batches and once with tuples, beside Spark reading the same rows from a
  local Parquet file;
* **write**: the data source sending a DataFrame of ``--messages`` rows (body, tags, keys) to a
  second topic, beside Spark writing the same DataFrame to Parquet (``--no-write`` skips it);
* **analytics**: ``count()``, a group-by on ``queue_id``, both again with a schema of position
  columns only (``topic, broker, queue_id, queue_offset``: answered from the queues' offsets,
  nothing pulled), and filters pushdown can answer (``queue_id = 0``; a ``store_timestamp`` range
  matching nothing), each beside the same query on the Parquet copy (all its columns);
* **first action**: the first rocketmq query of the session (a ``count()`` of a 10-message topic),
  Python workers and imports included.

Each timing is the best of ``--repeat`` runs after a warm-up, the source's and Parquet's taken in
turns (the machine is shared: a burst of load falls on both). Run::

    python bench/bench_spark.py --messages 200000
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rocketq.client.blocking import BlockingClient
from rocketq.client.ids import next_uniq_id
from rocketq.embedded import spawn_server
from rocketq.protocol import ResponseCode, calls
from rocketq.protocol.message import Message
from rocketq.protocol.properties import MessageConst
from rocketq.remoting import BlockingRemotingClient

JAVA_HOME = "/usr/lib/jvm/java-17-openjdk-amd64"


def create_topic(broker: str, namesrv: str, topic: str, queues: int) -> None:
    with BlockingRemotingClient(broker) as client:
        r = client.invoke(calls.create_topic(topic, queues, queues).request)
    if r.code != ResponseCode.SUCCESS:
        raise SystemExit(f"cannot create {topic}: {r.remark}")
    with BlockingClient(namesrv) as io:
        deadline = time.monotonic() + 30
        while True:
            try:
                if len(io.read_queues(topic)) == queues:
                    return
            except Exception:
                pass
            if time.monotonic() > deadline:
                raise SystemExit(f"route of {topic} did not appear")
            time.sleep(0.05)


def produce(namesrv: str, topic: str, count: int, size: int, batch: int) -> float:
    """Send ``count`` messages with batch sends; returns messages per second."""
    body = os.urandom(size)
    t0 = time.perf_counter()
    with BlockingClient(namesrv, timeout=30) as io:
        routes = io.read_queues(topic)
        sent = 0
        qi = 0
        while sent < count:
            n = min(batch, count - sent)
            msgs = [
                Message(
                    topic,
                    body,
                    0,
                    {
                        MessageConst.TAGS: "TagA",
                        MessageConst.KEYS: f"k{sent + i}",
                        MessageConst.WAIT: "true",
                        MessageConst.UNIQ_KEY: next_uniq_id(),
                    },
                )
                for i in range(n)
            ]
            io.send_batch(routes[qi % len(routes)], msgs, producer_group="bench-producer")
            qi += 1
            sent += n
    return count / (time.perf_counter() - t0)


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def best_pair(base: Callable[[], object], other: Callable[[], object], repeat: int) -> tuple[float, float]:
    """The best times of ``base`` and ``other`` run in turns (base, other, base, ...), so that a
    burst of load from elsewhere on a shared machine falls on both rather than on one side."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeat):
        for fn, out in ((base, times[0]), (other, times[1])):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    return min(times[0]), min(times[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--queues", type=int, default=4)
    ap.add_argument(
        "--send-batch",
        type=int,
        default=None,
        help="sendBatchSize of the write (default: the source's); also the fill's batch (default 256)",
    )
    ap.add_argument(
        "--pull-batch", type=int, default=None, help="pullBatchSize of the read (default: the source's)"
    )
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--no-write", action="store_true", help="skip the write figures")
    ap.add_argument("--timeout", type=float, default=None, help="the source's timeout option (seconds)")
    ap.add_argument("--no-tuples", action="store_true", help="skip the tuple-rows read")
    args = ap.parse_args()

    os.environ["JAVA_HOME"] = JAVA_HOME
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    tmp = Path(tempfile.mkdtemp(prefix="bench-spark-"))
    server = spawn_server(tmp / "data")
    try:
        namesrv, broker = server.namesrv_addr, server.broker_addr
        create_topic(broker, namesrv, "BenchRead", args.queues)
        create_topic(broker, namesrv, "BenchWrite", args.queues)
        create_topic(broker, namesrv, "BenchSmall", 1)
        produce(namesrv, "BenchSmall", 10, args.size, 10)
        rate = produce(namesrv, "BenchRead", args.messages, args.size, args.send_batch or 256)
        print(f"produced {args.messages:,} messages of {args.size} B: {rate:,.0f} msg/s (batch sends)")

        from pyspark.sql import SparkSession
        from pyspark.sql import functions as F

        import rocketq.spark

        spark = (
            SparkSession.builder.master("local[2]")
            .config("spark.ui.enabled", "false")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.memory", "2g")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        rocketq.spark.register(spark)
        t0 = time.perf_counter()
        small = spark.read.format("rocketmq").option("namesrv", namesrv).option("topic", "BenchSmall").load()
        assert small.count() == 10
        t_first = time.perf_counter() - t0
        t0 = time.perf_counter()
        assert small.count() == 10
        print(
            f"first rocketmq action of the session: {t_first:.2f} s "
            f"(the next: {time.perf_counter() - t0:.2f} s)"
        )

        def source(schema: str | None = None, **opts: str) -> object:
            r = spark.read.format("rocketmq").option("namesrv", namesrv).option("topic", "BenchRead")
            if schema is not None:
                r = r.schema(schema)
            if args.pull_batch is not None:
                r = r.option("pullBatchSize", str(args.pull_batch))
            if args.timeout is not None:
                r = r.option("timeout", str(args.timeout))
            for k, v in opts.items():
                r = r.option(k, v)
            return r.load()

        n = args.messages
        parquet = tmp / "rows.parquet"
        source().write.parquet(str(parquet))  # also the warm-up of the source
        assert spark.read.parquet(str(parquet)).count() == n

        def noop(df: object) -> None:
            df.write.format("noop").mode("overwrite").save()  # type: ignore[attr-defined]

        t_parquet, t_arrow = best_pair(
            lambda: noop(spark.read.parquet(str(parquet))), lambda: noop(source()), args.repeat
        )
        t_tuples = best(lambda: noop(source(arrowBatches="false")), 1 if args.no_tuples else args.repeat)

        print(f"\nread {n:,} rows (all columns, best of {args.repeat})")
        print(f"  parquet                 {n / t_parquet:>12,.0f} rows/s   1.00")
        print(
            f"  rocketmq (arrow)        {n / t_arrow:>12,.0f} rows/s   {t_parquet / t_arrow:.3f} of parquet"
        )
        print(
            f"  rocketmq (tuples)       {n / t_tuples:>12,.0f} rows/s   {t_parquet / t_tuples:.3f} of parquet"
        )
        print(f"  arrow / tuples          {t_tuples / t_arrow:.2f}x")

        future = F.lit("2100-01-01 00:00:00").cast("timestamp")
        queries: list[tuple[str, Callable[[object], object]]] = [
            ("count()", lambda df: df.count()),  # type: ignore[attr-defined]
            ("group-by queue_id", lambda df: df.groupBy("queue_id").count().collect()),  # type: ignore[attr-defined]
            ("where queue_id = 0", lambda df: df.where(F.col("queue_id") == 0).count()),  # type: ignore[attr-defined]
            ("where store_timestamp > 2100", lambda df: df.where(F.col("store_timestamp") > future).count()),  # type: ignore[attr-defined]
        ]
        # a schema of position columns only: answered from the queues' offsets, nothing pulled
        positions = "topic string, broker string, queue_id int, queue_offset long"
        narrow: list[tuple[str, Callable[[object], object], str | None]] = [
            (name, query, None) for name, query in queries
        ]
        narrow[1:1] = [("count(), position schema", queries[0][1], positions)]
        narrow[3:3] = [("group-by, position schema", queries[1][1], positions)]
        print(f"\nanalytics on {n:,} rows (best of {args.repeat}; ratio = parquet time / rocketmq time)")
        for name, query, schema in narrow:
            t_p, t_s = best_pair(
                lambda q=query: q(spark.read.parquet(str(parquet))),
                lambda q=query, sc=schema: q(source(sc)),
                args.repeat,
            )
            print(f"  {name:<30} parquet {t_p:6.2f} s   rocketmq {t_s:6.2f} s   {t_p / t_s:.2f}")
        if args.no_write:
            spark.stop()
            return

        body = F.expr(f"unhex(repeat('ab', {args.size}))")
        rows = (
            spark.range(n, numPartitions=2)
            .select(
                body.alias("body"),
                F.lit("TagA").alias("tags"),
                F.concat(F.lit("k"), F.col("id")).alias("keys"),
            )
            .cache()
        )
        rows.count()
        out = tmp / "write.parquet"

        def write_parquet() -> None:
            rows.write.mode("overwrite").parquet(str(out))

        def write_source() -> None:
            w = rows.write.format("rocketmq").option("namesrv", namesrv).option("topic", "BenchWrite")
            if args.send_batch is not None:
                w = w.option("sendBatchSize", str(args.send_batch))
            w.mode("append").save()

        t_wp, t_ws = best_pair(write_parquet, write_source, args.repeat)
        print(f"\nwrite {n:,} rows of {args.size} B (best of {args.repeat})")
        print(f"  parquet                 {n / t_wp:>12,.0f} rows/s   1.00")
        print(f"  rocketmq                {n / t_ws:>12,.0f} rows/s   {t_wp / t_ws:.3f} of parquet")
        spark.stop()
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
