"""Every option of the rocketmq source: the error for a bad value (checked when Spark creates the
source, at ``load()``, where the option does not depend on batch vs stream) and what a good value
does, against a real broker and the shared ``local[2]`` session. docs/spark.md has the table."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from rocketq.errors import ConfigError
from rocketq.protocol.acl import Credentials
from rocketq.spark.source import OPTION_NAMES, parse_options

from .conftest import ClusterThread

NS = "127.0.0.1:9876"

# (options, mode, the error's words): mode is what Spark would be doing (batch / stream / write)
BAD: list[tuple[dict[str, str], str, str]] = [
    ({"namesrv": "nohost"}, "batch", "option 'namesrv': name server address must look like host:port"),
    ({"topic": " , "}, "batch", "option 'topic' names no topic"),
    ({"topic": "A", "subscribe": "A"}, "batch", "options 'topic' and 'subscribe' are the same"),
    (
        {"subscribePattern": "(", "topic": None},
        "batch",
        "option 'subscribePattern' is not a regular expression",
    ),
    (
        {"subscribePattern": "A.*"},
        "batch",
        "give one of the options 'topic' (or 'subscribe'), 'subscribePattern'",
    ),
    ({"assign": "[0]", "topic": None}, "batch", "option 'assign' must be JSON like"),
    ({"assign": '{"T": {"broker-a": [-1]}}', "topic": None}, "batch", "must be a list of queue ids >= 0"),
    ({"startingOffsets": "middle"}, "batch", "option 'startingOffsets' must be earliest or latest or JSON"),
    ({"startingOffsets": "latest"}, "batch", "'startingOffsets' cannot be latest in a batch read"),
    (
        {"startingOffsets": '{"T": {"broker-a": {"0": -1}}}'},
        "batch",
        "cannot use -1 (latest) in a batch read",
    ),
    ({"startingOffsets": '{"Other": {"broker-a": {"0": 1}}}'}, "batch", "names topics not read: ['Other']"),
    ({"endingOffsets": "earliest"}, "batch", "option 'endingOffsets' must be latest or JSON"),
    ({"endingOffsets": '{"T": {"broker-a": {"0": -2}}}'}, "batch", "cannot use -2 (earliest)"),
    (
        {
            "startingOffsets": '{"T": {"broker-a": {"0": 9}}}',
            "endingOffsets": '{"T": {"broker-a": {"0": 3}}}',
        },
        "batch",
        "would start at 9, past its end 3",
    ),
    ({"endingOffsets": "latest"}, "stream", "option 'endingOffsets' applies to batch reads only"),
    ({"startingTimestamp": "yesterday"}, "batch", "option 'startingTimestamp' must be an integer >= 0"),
    ({"startingTimestamp": "-5"}, "batch", "option 'startingTimestamp' must be an integer >= 0"),
    ({"endingTimestamp": "x"}, "batch", "option 'endingTimestamp' must be an integer >= 0"),
    ({"startingTimestamp": "9", "endingTimestamp": "3"}, "batch", "the start is past the end"),
    ({"endingTimestamp": "3"}, "stream", "option 'endingTimestamp' applies to batch reads only"),
    (
        {"startingOffsetsByTimestamp": "1000"},
        "batch",
        "option 'startingOffsetsByTimestamp' must be JSON like",
    ),
    (
        {"startingOffsetsByTimestamp": '{"T": {"broker-a": {"0": -1}}}'},
        "batch",
        "'startingOffsetsByTimestamp' holds negative timestamps",
    ),
    (
        {"startingOffsetsByTimestamp": "{}", "startingTimestamp": "1"},
        "batch",
        "give one of 'startingTimestamp'",
    ),
    ({"endingOffsetsByTimestamp": "[]"}, "batch", "option 'endingOffsetsByTimestamp' must be JSON like"),
    ({"endingOffsetsByTimestamp": "{}", "endingTimestamp": "1"}, "batch", "give one of 'endingOffsets'"),
    ({"startingOffsetsByTimestampStrategy": "maybe"}, "batch", "must be error or latest, got 'maybe'"),
    ({"maxOffsetsPerTrigger": "0"}, "stream", "option 'maxOffsetsPerTrigger' must be an integer >= 1, got 0"),
    ({"maxOffsetsPerTrigger": "abc"}, "stream", "option 'maxOffsetsPerTrigger' must be an integer >= 1"),
    (
        {"maxOffsetsPerTrigger": "10"},
        "batch",
        "option 'maxOffsetsPerTrigger' applies to streaming reads only",
    ),
    ({"minOffsetsPerTrigger": "0"}, "stream", "option 'minOffsetsPerTrigger' must be an integer >= 1"),
    ({"minOffsetsPerTrigger": "9", "maxOffsetsPerTrigger": "5"}, "stream", "is over 'maxOffsetsPerTrigger'"),
    ({"maxTriggerDelay": "soon"}, "stream", "option 'maxTriggerDelay' must be a duration like 500ms"),
    ({"minPartitions": "0"}, "batch", "option 'minPartitions' must be an integer >= 1"),
    ({"failOnDataLoss": "maybe"}, "batch", "option 'failOnDataLoss' must be true or false"),
    ({"pullBatchSize": "lots"}, "batch", "option 'pullBatchSize' must be an integer >= 1"),
    ({"pullBatchBytes": "0"}, "batch", "option 'pullBatchBytes' must be an integer >= 1"),
    ({"maxMessagesPerPartition": "0"}, "batch", "option 'maxMessagesPerPartition' must be an integer >= 1"),
    ({"sendBatchSize": "0"}, "write", "option 'sendBatchSize' must be an integer >= 1"),
    ({"sendBatchBytes": "1MB"}, "write", "option 'sendBatchBytes' must be an integer >= 1"),
    ({"exactlyOnce": "yes"}, "write", "option 'exactlyOnce' must be true or false"),
    ({"timeout": "0"}, "batch", "option 'timeout' must be a number of seconds > 0"),
    ({"timeout": "soon"}, "batch", "option 'timeout' must be a number of seconds > 0"),
    ({"arrowBatches": "nah"}, "batch", "option 'arrowBatches' must be true or false"),
    ({"accessKey": "rocketmq2"}, "batch", "option 'accessKey' needs option 'secretKey'"),
    ({"secretKey": "12345678"}, "write", "option 'secretKey' needs option 'accessKey'"),
    ({"accessKey": " ", "secretKey": "12345678"}, "stream", "option 'secretKey' needs option 'accessKey'"),
    (
        {"subscribepatern": "A"},
        "batch",
        "unknown option 'subscribepatern' (did you mean 'subscribePattern'?)",
    ),
    ({"kafka.bootstrap.servers": "h:9092"}, "batch", "Kafka option with no RocketMQ meaning: use 'namesrv'"),
    ({"topic": "A,B"}, "write", "option 'topic' of a write names one topic, got several"),
    ({"nameServer": "h:1"}, "batch", "options 'namesrv' and 'nameServer' are the same"),
    (
        {"nameServer": "nohost", "namesrv": None},
        "batch",
        "option 'namesrv': name server address must look like",
    ),
    ({"maxRecordsPerPartition": "0"}, "batch", "option 'maxMessagesPerPartition' must be an integer >= 1"),
    ({"tls.enable": "yes"}, "batch", "option 'tls.enable' must be true or false"),
    (
        {"tls.client.trustCertPath": "/nonexistent/ca.pem", "tls.enable": "true"},
        "batch",
        "option 'tls.client.trustCertPath': no such file '/nonexistent/ca.pem'",
    ),
    ({"tls.client.trustCertPath": "ca.pem"}, "batch", "option 'tls.client.trustCertPath' needs 'tls.enable'"),
    ({"tls.client.certPath": "c.pem", "tls.enable": "true"}, "batch", "certPath and tls.client.keyPath go"),
    ({"tls.client.keyPath": "c.key", "tls.enable": "true"}, "batch", "certPath and tls.client.keyPath go"),
    (
        {"tls.client.authServer": "maybe", "tls.enable": "true"},
        "write",
        "option 'tls.client.authServer' must be true or false",
    ),
]


def _options(extra: dict[str, str | None]) -> dict[str, str]:
    opts: dict[str, str | None] = {"namesrv": NS, "topic": "T", **extra}
    # Spark hands a source its keys lower-cased
    return {k.lower(): v for k, v in opts.items() if v is not None}


@pytest.mark.parametrize(("extra", "mode", "words"), BAD, ids=[next(iter(b[0])) + "-" + b[1] for b in BAD])
def test_a_bad_value_is_one_line_naming_the_option_and_what_it_accepts(
    extra: dict[str, str], mode: str, words: str
) -> None:
    opts = _options(extra)  # type: ignore[arg-type]
    with pytest.raises(ConfigError) as info:
        parse_options(opts, streaming=mode == "stream", writing=mode == "write")
    message = str(info.value)
    assert words in message
    assert "\n" not in message


def test_every_option_has_a_bad_value_row_or_none_to_have() -> None:
    covered = {k.lower() for extra, _, _ in BAD for k in extra}
    free_text = {"group", "producergroup", "tags", "path", "checkpointlocation"}  # any string is valid
    assert set(OPTION_NAMES) - free_text <= covered


def _load(
    spark: Any, ct: ClusterThread, topic: str | None = None, *, stream: bool = False, **options: str
) -> Any:
    r = (spark.readStream if stream else spark.read).format("rocketmq").option("namesrv", ct.namesrv)
    if topic is not None:
        r = r.option("topic", topic)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


@pytest.mark.spark
@pytest.mark.integration
def test_errors_come_at_load_in_one_line_and_stream_errors_at_start(
    spark: Any, cluster: ClusterThread
) -> None:
    """The same refusals through Spark: at ``load()`` for mode-free options (PySpark prints the
    one frame that raised), from the query's first call for stream-only ones."""
    for extra, words in [
        ({"pullBatchSize": "lots"}, "option 'pullBatchSize' must be an integer >= 1, got 'lots'"),
        ({"maxOffsetsPerTrigger": "abc"}, "option 'maxOffsetsPerTrigger' must be an integer >= 1"),
        ({"subscribePatern": "x"}, "did you mean 'subscribePattern'?"),
    ]:
        with pytest.raises(Exception, match="PYTHON_DATA_SOURCE_ERROR") as info:
            _load(spark, cluster, "T", **extra)
        text = str(info.value)
        assert words in text
        assert len(text.splitlines()) <= 6, text  # Spark's banner, one frame, our line
    df = _load(spark, cluster, "T", stream=True, endingOffsets="latest")
    query = df.writeStream.format("noop").start()
    with pytest.raises(Exception, match="endingOffsets") as info:
        query.awaitTermination(60)
    assert "option 'endingOffsets' applies to batch reads only" in str(info.value)
    assert "UnboundLocalError" not in str(info.value)
    with pytest.raises(Exception, match="save mode 'overwrite' is not supported"):
        spark.createDataFrame([("x",)], "body string").write.format("rocketmq").option(
            "namesrv", cluster.namesrv
        ).option("topic", "T").mode("overwrite").save()


@pytest.mark.spark
@pytest.mark.integration
def test_read_options_do_what_kafkas_do(spark: Any, cluster: ClusterThread) -> None:
    """subscribe, subscribePattern, assign, the timestamp options and their strategy,
    minPartitions, a user schema, pullBatchSize / pullBatchBytes / timeout / arrowBatches, and
    queues the route does not hold: one query each."""
    cluster.create_topic("OptA", 2)
    cluster.create_topic("OptB", 1)
    cluster.create_topic("OtherC", 1)
    cluster.produce("OptA", 20, batch=5)  # 10 per queue
    cluster.produce("OptB", 6, batch=3)
    cluster.produce("OtherC", 4, batch=4)
    time.sleep(0.02)
    cut = int(time.time() * 1000)
    time.sleep(0.02)
    cluster.produce("OptA", 10, batch=5, start=20)  # 5 more per queue, stored after cut

    def count(df: Any) -> dict[str, int]:
        return {r["topic"]: r["count"] for r in df.groupBy("topic").count().collect()}

    assert count(_load(spark, cluster, subscribe="OptA")) == {"OptA": 30}
    assert count(_load(spark, cluster, subscribePattern="Opt.*")) == {"OptA": 30, "OptB": 6}
    assigned = _load(spark, cluster, assign=json.dumps({"OptA": {"broker-a": [1]}}))
    assert {(r["queue_id"]) for r in assigned.select("queue_id").collect()} == {1}
    assert assigned.count() == 15
    after = _load(spark, cluster, "OptA", startingTimestamp=str(cut))
    assert (
        sorted(r["queue_offset"] for r in after.select("queue_offset").collect())
        == [10] * 2 + [11] * 2 + [12] * 2 + [13] * 2 + [14] * 2
    )
    before = _load(spark, cluster, "OptA", endingTimestamp=str(cut))
    assert before.count() == 20
    per_queue = json.dumps({"OptA": {"broker-a": {"0": cut}}})
    assert _load(spark, cluster, "OptA", startingOffsetsByTimestamp=per_queue).count() == 5 + 15
    assert _load(spark, cluster, "OptA", endingOffsetsByTimestamp=per_queue).count() == 10 + 15
    future = str(int(time.time() * 1000) + 3_600_000)
    with pytest.raises(Exception, match="no message of OptA broker-a:0 was stored at or after"):
        _load(spark, cluster, "OptA", startingTimestamp=future).count()
    late = _load(
        spark, cluster, "OptA", startingTimestamp=future, startingOffsetsByTimestampStrategy="latest"
    )
    assert late.count() == 0
    with pytest.raises(
        Exception, match=r"option 'startingOffsets' names queues that are not read: OptA broker-a:7"
    ):
        _load(spark, cluster, "OptA", startingOffsets=json.dumps({"OptA": {"broker-a": {"7": 0}}})).count()
    with pytest.raises(Exception, match="option 'assign' names queues the topic's route does not hold"):
        _load(spark, cluster, assign=json.dumps({"OptA": {"broker-b": [0]}})).count()
    assert _load(spark, cluster, "OptA", minPartitions="7").rdd.getNumPartitions() >= 7
    slim = (
        spark.read.format("rocketmq")
        .schema("queue_offset long, topic string")
        .option("namesrv", cluster.namesrv)
        .option("topic", "OptB")
        .load()
    )
    assert sorted(tuple(r) for r in slim.collect()) == sorted((o, "OptB") for o in range(6))
    with pytest.raises(Exception, match="the schema gives column 'queue_id' the type string"):
        spark.read.format("rocketmq").schema("queue_id string").option("namesrv", cluster.namesrv).option(
            "topic", "OptB"
        ).load().collect()
    small = _load(
        spark, cluster, "OptA", pullBatchSize="3", pullBatchBytes="200", timeout="5", arrowBatches="false"
    )
    assert sorted(r["queue_offset"] for r in small.select("queue_offset").collect()) == sorted(
        list(range(15)) * 2
    )


def test_the_acl_keys_sign_and_stay_out_of_the_options_repr() -> None:
    opts = parse_options(_options({"accessKey": " rocketmq2 ", "secretKey": "S3cr3t-Key"}), writing=True)
    assert opts.credentials == Credentials(access_key="rocketmq2", secret_key="S3cr3t-Key")
    assert "S3cr3t-Key" not in repr(opts)
    assert parse_options(_options({})).credentials is None
