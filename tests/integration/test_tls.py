"""TLS on every port, RocketMQ 4.9's three server modes, with rocketq's real servers and clients.

* each mode (disabled, permissive, enforcing) with a TLS client and a plaintext client: the
  producer (its loop client and per-thread sockets), the admin, the blocking client the Spark
  source reads through; the pairs that cannot talk fail with one line that says why;
* an enforcing broker under plaintext peers (real frames, junk, silence, a fake ClientHello):
  each is closed, none stalls the TLS clients being served meanwhile;
* the HA link over TLS (a sync master answers SEND_OK only once its slave has the bytes), and
  its port refusing a plaintext slave;
* the dashboard and the exporter over HTTPS, reading a TLS cluster.

Counts and behaviours are drawn at random; the draws are printed.
"""

from __future__ import annotations

import random
import socket
import ssl
import struct
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rocketq import ConsumeConcurrentlyStatus, Message, Producer, PushConsumer, SendStatus
from rocketq.admin import Admin
from rocketq.broker import Broker
from rocketq.broker.config import BrokerConfig
from rocketq.broker.ha import HAConfig
from rocketq.cli.main import main
from rocketq.client import ClientConfig
from rocketq.client.blocking import BlockingClient
from rocketq.dashboard import create_app, create_exporter_app
from rocketq.dashboard.config import DashboardConfig
from rocketq.dashboard.server import BackgroundServer, Https
from rocketq.embedded import spawn_server
from rocketq.errors import RemotingClosedError, RemotingConnectError, RocketQError
from rocketq.protocol.frame import encode_frame
from rocketq.protocol.ha import encode_report
from rocketq.protocol.message import decode_messages
from rocketq.remoting import ServerConfig, TlsClientConfig, TlsMode, TlsServerConfig
from rocketq.remoting.certs import TestCerts, make_test_certs
from tests.integration.brokerkit import heartbeat_request
from tests.integration.clientkit import FAST_DELAY_LEVELS, ClusterThread, wait_until

pytestmark = pytest.mark.integration

FAST_HA = HAConfig(
    heartbeat_interval=0.5, housekeeping_interval=3.0, slave_timeout=2.0, reconnect_interval=0.3
)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> TestCerts:
    return make_test_certs(tmp_path_factory.mktemp("certs"))


def server_tls(certs: TestCerts, mode: str, **extra: object) -> TlsServerConfig:
    if mode == "disabled":
        return TlsServerConfig()
    return TlsServerConfig(
        mode=TlsMode(mode),
        cert_path=str(certs.server_cert),
        key_path=str(certs.server_key),
        trust_cert_path=str(certs.ca),
        **extra,  # type: ignore[arg-type]
    )


def client_tls(certs: TestCerts) -> TlsClientConfig:
    return TlsClientConfig(enable=True, trust_cert_path=str(certs.ca))


def broker_config(certs: TestCerts, mode: str, **overrides: object) -> BrokerConfig:
    tls = server_tls(certs, mode, handshake_timeout=1.0)
    return BrokerConfig(
        message_delay_level=FAST_DELAY_LEVELS,
        remoting=ServerConfig(tls=tls),
        tls_client=client_tls(certs) if tls.enabled else TlsClientConfig(),
        **overrides,  # type: ignore[arg-type]
    )


@pytest.fixture
def enforcing(certs: TestCerts, tmp_path: Path) -> Iterator[ClusterThread]:
    cluster = ClusterThread(tmp_path, broker=broker_config(certs, "enforcing"))
    try:
        yield cluster
    finally:
        cluster.close()


def _create_topic(namesrv: str, tls: TlsClientConfig, topic: str) -> None:
    with Admin(namesrv, tls=tls) as admin:
        assert wait_until(lambda: bool(admin.master_addrs()), 10)  # the broker registered, over TLS too
        admin.create_topic(topic, read_queues=4, write_queues=4)


@pytest.mark.parametrize("mode", ["disabled", "permissive", "enforcing"])
def test_clients_in_each_mode(mode: str, certs: TestCerts, tmp_path: Path) -> None:
    cluster = ClusterThread(tmp_path, broker=broker_config(certs, mode))
    try:
        topic = "TlsModes"
        not_yet_sent = True  # the second client (permissive mode) finds the first one's messages too
        for use_tls in random.sample([False, True], 2):
            tls = client_tls(certs) if use_tls else TlsClientConfig()
            served = mode == "permissive" or (mode == "enforcing") == use_tls
            n = random.randint(5, 30)
            print(f"mode {mode}, TLS client {use_tls}: {n} messages, served {served}")
            if not served:
                with (
                    Admin(cluster.namesrv, tls=tls, timeout=3.0) as admin,
                    pytest.raises(RocketQError) as refused,
                ):
                    admin.topic_list()
                message = str(refused.value)
                print(message)
                assert "\n" not in message
                if use_tls:  # a TLS client at a plaintext port
                    assert isinstance(refused.value, RemotingConnectError)
                    assert "TLS handshake failed: the server closed the connection" in message
                else:  # a plaintext client at a TLS-only port
                    assert isinstance(refused.value, RemotingClosedError)
                    assert "one enforcing TLS closes plaintext connections" in message
                with pytest.raises(RocketQError), BlockingClient(cluster.namesrv, timeout=3.0, tls=tls) as io:
                    io.route(topic)
                continue
            _create_topic(cluster.namesrv, tls, topic)
            config = ClientConfig(
                namesrv=cluster.namesrv, client_ip="127.0.0.1", instance_name=f"p{use_tls}", tls=tls
            )
            bodies = [random.randbytes(random.randint(1, 3000)) for _ in range(n)]
            with Producer("tls_producer", client_config=config) as producer:
                results = [producer.send(Message(topic, body)) for body in bodies]
            assert all(r.status is SendStatus.SEND_OK for r in results)
            # read back through the blocking client (the Spark source's way), over the same TLS
            got: list[bytes] = []
            with BlockingClient(cluster.namesrv, timeout=5.0, tls=tls) as io:
                for q in io.read_queues(topic):
                    result = io.pull(q, group="tls_reader", offset=0, max_nums=1024)
                    got.extend(m.body for m in decode_messages(result.body))
            assert sorted(got) == sorted(bodies) if not_yet_sent else set(bodies) <= set(got)
            not_yet_sent = False
    finally:
        cluster.close()


def _plaintext_peer(addr: str, kind: str) -> socket.socket:
    host, port = addr.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=5)
    if kind == "frame":
        sock.sendall(encode_frame(heartbeat_request("hostile@1", None)))
    elif kind == "junk":
        sock.sendall(bytes([random.choice([b for b in range(256) if b != 0x16])]) + random.randbytes(200))
    elif kind == "fake-hello":  # looks like TLS, is not
        sock.sendall(b"\x16\x03\x01" + struct.pack(">H", 300) + random.randbytes(300))
    return sock  # "silent": connects and says nothing


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    sock.settimeout(seconds)
    try:
        while True:
            data = sock.recv(4096)
            if not data:
                return True
            if data[:1] != b"\x15":  # a TLS alert is all a fake ClientHello may get back
                return False
    except (ConnectionError, ssl.SSLError):
        return True
    except TimeoutError:
        return False
    finally:
        sock.close()


def test_plaintext_peers_of_an_enforcing_broker_are_closed_and_tls_clients_keep_being_served(
    enforcing: ClusterThread, certs: TestCerts
) -> None:
    kinds = random.choices(["frame", "junk", "silent", "fake-hello"], k=random.randint(6, 16))
    print("plaintext peers:", kinds)
    tls = client_tls(certs)
    latencies: list[float] = []
    stop = threading.Event()
    failures: list[BaseException] = []

    def serve_meanwhile() -> None:
        with Admin(enforcing.namesrv, tls=tls) as admin:
            while not stop.is_set():
                began = time.monotonic()
                try:
                    admin.topic_list()
                except BaseException as exc:  # reported below
                    failures.append(exc)
                    return
                latencies.append(time.monotonic() - began)

    worker = threading.Thread(target=serve_meanwhile)
    worker.start()
    try:
        assert wait_until(lambda: len(latencies) >= 3, 10)
        targets = [enforcing.namesrv, enforcing.broker_addr]
        peers = [(k, _plaintext_peer(random.choice(targets), k)) for k in kinds]
        # each is closed: at once when it spoke plaintext, after the 1 s handshake timeout when silent
        for kind, sock in peers:
            assert _closed_within(sock, 5.0), kind
        served = len(latencies)
        assert wait_until(lambda: len(latencies) >= served + 3, 10)
    finally:
        stop.set()
        worker.join(10)
    assert not failures, failures
    print(f"{len(latencies)} TLS requests meanwhile, slowest {max(latencies) * 1000:.0f} ms")
    assert max(latencies) < 2.0


def test_the_ha_link_over_tls(certs: TestCerts, tmp_path: Path) -> None:
    mode = random.choice(["permissive", "enforcing"])
    print("mode", mode)
    master_cfg = broker_config(certs, mode, role="sync-master", ha=FAST_HA)
    cluster = ClusterThread(tmp_path / "master", broker=master_cfg)
    slave_cfg = broker_config(
        certs,
        mode,
        port=0,
        role="slave",
        broker_id=1,
        broker_name="broker-a",
        data_dir=tmp_path / "slave",
        namesrv_addrs=(cluster.namesrv,),
        ha=FAST_HA,
        slave_sync_period=0.5,
    )
    slave = Broker(slave_cfg)
    cluster.thread.call(slave.start(), timeout=30)
    try:
        master = cluster.cluster.broker
        assert master is not None
        ha = master.ha_master
        assert ha is not None
        assert wait_until(lambda: bool(ha.slaves) and ha.slaves[0].ack_offset >= 0, 15)
        tls = client_tls(certs)
        _create_topic(cluster.namesrv, tls, "HaTls")
        n = random.randint(10, 40)
        print("messages", n)
        config = ClientConfig(namesrv=cluster.namesrv, client_ip="127.0.0.1", instance_name="ha", tls=tls)
        with Producer("ha_tls_producer", client_config=config) as producer:
            results = [
                producer.send(Message("HaTls", random.randbytes(random.randint(1, 2000)))) for _ in range(n)
            ]
        # a sync master says SEND_OK only once the slave acknowledged the bytes over the TLS link
        assert all(r.status is SendStatus.SEND_OK for r in results)
        assert slave.store.commit_log_max_offset >= master.store.commit_log_max_offset > 0
        # a plaintext "slave" at the HA port: closed in enforcing mode, served in permissive
        peer = socket.create_connection(("127.0.0.1", ha.port), timeout=5)
        peer.sendall(encode_report(0))
        closed = _closed_within(peer, 1.5)
        print("plaintext HA peer closed:", closed)
        assert closed == (mode == "enforcing")
    finally:
        cluster.thread.call(slave.close(), timeout=30)
        cluster.close()


def _https_get(url: str, ca: Path) -> tuple[int, str]:
    ctx = ssl.create_default_context(cafile=str(ca))
    with urllib.request.urlopen(url, timeout=30, context=ctx) as answer:
        return answer.status, answer.read().decode()


def test_dashboard_and_exporter_over_https_reading_a_tls_cluster(
    enforcing: ClusterThread, certs: TestCerts
) -> None:
    tls = client_tls(certs)
    topic = f"HttpsTopic{random.randint(0, 999)}"
    print("topic", topic)
    _create_topic(enforcing.namesrv, tls, topic)
    config = DashboardConfig(namesrv=enforcing.namesrv, poll_interval=0.3, metrics_interval=0.5, tls=tls)
    https = Https(str(certs.server_cert), str(certs.server_key))
    with BackgroundServer(create_app(config), https=https) as dashboard:
        assert dashboard.url.startswith("https://127.0.0.1:")
        status, page = _https_get(dashboard.url + "topics", certs.ca)
        assert status == 200
        assert topic in page  # read from the cluster over TLS
        with pytest.raises((urllib.error.URLError, ConnectionError, http_client_errors())):
            urllib.request.urlopen(dashboard.url.replace("https:", "http:") + "topics", timeout=10)
    with BackgroundServer(create_exporter_app(config), https=https) as exporter:
        status, text = _https_get(exporter.url + "metrics", certs.ca)
        assert status == 200
        assert "rocketmq_" in text
        with pytest.raises(urllib.error.URLError):  # a client that does not trust the CA
            urllib.request.urlopen(exporter.url + "metrics", timeout=10)


def http_client_errors() -> type[Exception]:
    import http.client

    return http.client.HTTPException


def test_cli_server_with_supervised_brokers_enforcing_tls(
    certs: TestCerts, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``rocketq server --brokers 2 --tls-mode enforcing``: the child brokers get the TLS options
    and register over TLS; ``rocketq produce --tls`` reaches both; a plaintext command gets one line."""
    tls_args = ("--tls-mode", "enforcing", "--tls-cert", str(certs.server_cert))
    tls_args += ("--tls-key", str(certs.server_key), "--tls-ca", str(certs.ca))
    server = spawn_server(tmp_path / "data", brokers=2, extra_args=tls_args, stderr=subprocess.DEVNULL)
    try:
        ns = server.namesrv_addr
        client = ["--namesrv", ns, "--tls", "--tls-ca", str(certs.ca)]
        n = random.randint(8, 40)
        print("messages", n)
        capsys.readouterr()
        assert main(["topic", "create", "CliTls", "--queues", "2", *client]) == 0
        assert capsys.readouterr().out.count("created on broker-") == 2  # both children, over TLS
        assert main(["produce", "CliTls", "--count", str(n), *client]) == 0
        assert f"sent {n} messages to CliTls, 0 failed" in capsys.readouterr().out
        assert main(["topic", "list", "--namesrv", ns]) == 2
        out, err = capsys.readouterr()
        assert out == ""
        lines = err.strip().splitlines()
        assert len(lines) == 1
        assert "one enforcing TLS closes plaintext connections" in lines[0]
    finally:
        server.stop()


def test_a_browser_sees_live_owners_on_the_https_dashboard_of_a_tls_cluster(
    enforcing: ClusterThread, certs: TestCerts, chromium: Any
) -> None:
    tls = client_tls(certs)
    topic, group = "BrowserTls", "browser_tls_group"
    _create_topic(enforcing.namesrv, tls, topic)
    name = f"c{random.randint(0, 99)}"
    print("consumer", name)
    config = ClientConfig(namesrv=enforcing.namesrv, client_ip="127.0.0.1", instance_name=name, tls=tls)
    consumer = PushConsumer(group, client_config=config)
    consumer.subscribe(topic)
    consumer.register_listener(lambda msgs: ConsumeConcurrentlyStatus.CONSUME_SUCCESS)
    consumer.start()
    dash = DashboardConfig(namesrv=enforcing.namesrv, poll_interval=0.3, tls=tls)
    https = Https(str(certs.server_cert), str(certs.server_key))
    try:
        with BackgroundServer(create_app(dash), https=https) as dashboard:
            context = chromium.new_context(ignore_https_errors=True)  # Chromium has its own trust store
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(dashboard.url + f"groups/{group}")
            page.wait_for_function(
                "() => [...document.querySelectorAll('#ownership .cell')]"
                f".filter((e) => e.dataset.queue.startsWith('{topic}@')).length === 4",
                timeout=30_000,
            )
            owners = page.eval_on_selector_all(
                "#ownership .cell", "els => els.map((e) => [e.dataset.queue, e.dataset.owner])"
            )
            assert {o for q, o in owners if q.startswith(topic + "@")} == {f"127.0.0.1@{name}"}
            assert page.url.startswith("https://")
            assert not errors
            context.close()
    finally:
        consumer.shutdown()


def test_a_server_that_requires_client_certificates(certs: TestCerts, tmp_path: Path) -> None:
    with_cert = TlsClientConfig(
        enable=True,
        trust_cert_path=str(certs.ca),
        cert_path=str(certs.client_cert),
        key_path=str(certs.client_key),
    )
    mode = random.choice(["permissive", "enforcing"])
    print("mode", mode)
    tls = server_tls(certs, mode, need_client_auth="require")
    cluster = ClusterThread(
        tmp_path, broker=BrokerConfig(remoting=ServerConfig(tls=tls), tls_client=with_cert)
    )
    try:
        _create_topic(cluster.namesrv, with_cert, "ClientAuth")  # the broker registered with its certificate
        without = Admin(cluster.namesrv, tls=client_tls(certs), timeout=3.0)
        with without, pytest.raises(RocketQError) as refused:
            without.topic_list()
        print(refused.value)
        assert "does it ask for a client certificate?" in str(refused.value)
    finally:
        cluster.close()
