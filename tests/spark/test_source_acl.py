"""The Spark source and sink against a broker with ACL on: ``accessKey`` / ``secretKey`` sign every
request the driver and the executors make; without them (or with a wrong secret) the job fails
with the broker's refusal in one line, and no secret shows in an error or a plan."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from rocketq.admin import Admin
from rocketq.broker import BrokerConfig

from .conftest import ClusterThread

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.timeout(300)]

WRITER = ("sparkwriter", "writer-secret-1")
READER = ("sparkreader", "reader-secret-1")
ADMIN = ("sparkadmin", "admin-secret-1")
SECRETS = (WRITER[1], READER[1], ADMIN[1])
ACL = {
    "globalWhiteRemoteAddresses": ["10.255.255.*"],  # not 127.0.0.1: every request is checked
    "accounts": [
        {"accessKey": WRITER[0], "secretKey": WRITER[1], "defaultTopicPerm": "PUB"},
        {
            "accessKey": READER[0],
            "secretKey": READER[1],
            "defaultTopicPerm": "SUB",
            "defaultGroupPerm": "SUB",
        },
        {"accessKey": ADMIN[0], "secretKey": ADMIN[1], "admin": True},
    ],
}


@pytest.fixture(scope="module")
def acl_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterThread]:
    data = tmp_path_factory.mktemp("rocketq-spark-acl")
    acl = Path(data) / "plain_acl.yml"
    acl.write_text(yaml.safe_dump(ACL))
    ct = ClusterThread(data / "cluster", BrokerConfig(acl_file=acl)).start()
    yield ct
    ct.stop()


def _create(ct: ClusterThread, topic: str, queues: int) -> None:
    with Admin(ct.namesrv, access_key=ADMIN[0], secret_key=ADMIN[1]) as admin:
        admin.create_topic(topic, queues=queues)


def _keyed(builder: Any, keys: tuple[str, str] | None) -> Any:
    if keys is None:
        return builder
    return builder.option("accessKey", keys[0]).option("secretKey", keys[1])


def _reader(spark: Any, ct: ClusterThread, topic: str, keys: tuple[str, str] | None) -> Any:
    return _keyed(
        spark.read.format("rocketmq").option("namesrv", ct.namesrv).option("topic", topic), keys
    ).load()


def _no_secret(text: str) -> None:
    assert not any(secret in text for secret in SECRETS), text


def test_the_sink_signs_its_sends(spark: Any, acl_cluster: ClusterThread) -> None:
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    n = random.Random(seed).randrange(20, 200)
    _create(acl_cluster, "AclSink", 2)
    df = spark.createDataFrame([(f"m-{i}",) for i in range(n)], "value string")

    def write(keys: tuple[str, str] | None) -> None:
        w = df.write.format("rocketmq").option("namesrv", acl_cluster.namesrv).option("topic", "AclSink")
        _keyed(w, keys).mode("append").save()

    with pytest.raises(Exception, match="refused by the broker's ACL") as refused:
        write((WRITER[0], "not-the-writer-secret"))
    assert f"Check signature failed for accessKey={WRITER[0]}" in str(refused.value)
    _no_secret(str(refused.value))
    write(WRITER)
    rows = _reader(spark, acl_cluster, "AclSink", READER).select("body").collect()
    assert sorted(r["body"].decode() for r in rows) == sorted(f"m-{i}" for i in range(n))


def test_the_source_signs_its_reads(spark: Any, acl_cluster: ClusterThread) -> None:
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    n = random.Random(seed).randrange(20, 200)
    _create(acl_cluster, "AclSource", 2)
    w = spark.createDataFrame([(f"r-{i}",) for i in range(n)], "value string").write.format("rocketmq")
    _keyed(w.option("namesrv", acl_cluster.namesrv).option("topic", "AclSource"), WRITER).mode(
        "append"
    ).save()
    with pytest.raises(
        Exception, match="refused by the broker's ACL: No accessKey is configured"
    ) as unsigned:
        _reader(spark, acl_cluster, "AclSource", None).collect()
    _no_secret(str(unsigned.value))
    # the writer's account may publish, not subscribe: refused, naming the pulls' group
    with pytest.raises(Exception, match="No default permission for group:rocketq_spark_reader"):
        _reader(spark, acl_cluster, "AclSource", WRITER).collect()
    df = _reader(spark, acl_cluster, "AclSource", READER)
    assert sorted(r["body"].decode() for r in df.select("body").collect()) == sorted(
        f"r-{i}" for i in range(n)
    )
    _no_secret(df._jdf.queryExecution().toString())  # the plan shows the options, secret redacted
