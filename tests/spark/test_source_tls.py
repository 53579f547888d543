"""The Spark source and sink over TLS: RocketMQ's ``tls.*`` client options, against a cluster that
enforces TLS (its executors' blocking clients speak TLS; without ``tls.enable`` a read fails)."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rocketq.broker import BrokerConfig
from rocketq.protocol import ResponseCode, calls
from rocketq.remoting import BlockingRemotingClient, ServerConfig, TlsClientConfig, TlsMode, TlsServerConfig
from rocketq.remoting.certs import TestCerts, make_test_certs

from .conftest import ClusterThread

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> TestCerts:
    return make_test_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory: pytest.TempPathFactory, certs: TestCerts) -> Iterator[ClusterThread]:
    tls = TlsServerConfig(
        mode=TlsMode.ENFORCING, cert_path=str(certs.server_cert), key_path=str(certs.server_key)
    )
    client = TlsClientConfig(enable=True, trust_cert_path=str(certs.ca))
    broker = BrokerConfig(remoting=ServerConfig(tls=tls), tls_client=client)
    ct = ClusterThread(Path(tmp_path_factory.mktemp("rocketq-spark-tls")), broker).start()
    yield ct
    ct.stop()


def test_write_and_read_over_tls(spark: Any, tls_cluster: ClusterThread, certs: TestCerts) -> None:
    tls = TlsClientConfig(enable=True, trust_cert_path=str(certs.ca))
    with BlockingRemotingClient(tls_cluster.broker_addr, tls=tls) as client:
        create = calls.create_topic("SparkTls", 4, 4).request
        assert client.invoke(create).code == ResponseCode.SUCCESS
    n = random.randint(50, 300)
    print("rows", n)
    options = {"namesrv": tls_cluster.namesrv, "topic": "SparkTls", "tls.enable": "true"}
    options["tls.client.trustCertPath"] = str(certs.ca)
    rows = [(f"m-{i}-{random.randrange(10**9)}",) for i in range(n)]
    began = time.monotonic()
    spark.createDataFrame(rows, "value string").coalesce(1).write.format("rocketmq").options(**options).mode(
        "append"
    ).save()
    print(f"written in {time.monotonic() - began:.1f} s")
    got = spark.read.format("rocketmq").options(**options).load().select("body").collect()
    assert sorted(r["body"].decode() for r in got) == sorted(v for (v,) in rows)
    print(f"written and read in {time.monotonic() - began:.1f} s")
    plain = {k: v for k, v in options.items() if not k.startswith("tls.")}
    began = time.monotonic()
    with pytest.raises(Exception, match="enforcing TLS closes plaintext connections"):
        spark.read.format("rocketmq").options(**plain, timeout="3").load().collect()
    print(f"plaintext read refused in {time.monotonic() - began:.1f} s")
