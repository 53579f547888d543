"""``rocketq server`` and ``rocketq broker`` as real subprocesses on free loopback ports."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from rocketq.embedded import READY_PREFIX, parse_ready_line, spawn_server
from rocketq.errors import BrokerError
from rocketq.protocol import RequestCode, ResponseCode, decode_messages
from rocketq.protocol.bodies import TopicRouteData
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import GetRouteInfoRequestHeader
from rocketq.protocol.trace import RMQ_SYS_TRACE_TOPIC
from rocketq.remoting import RemotingClient, run

from .brokerkit import pull_request, send_request

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


async def _send_all(addr: str, topic: str, bodies: list[bytes]) -> None:
    async with RemotingClient() as client:
        for body in bodies:
            r = await client.invoke(addr, send_request(topic, body), 10)
            assert r.code == ResponseCode.SUCCESS, r.remark


async def _pull_all(addr: str, topic: str) -> list[bytes]:
    async with RemotingClient() as client:
        r = await client.invoke(addr, pull_request("cli-group", topic, 0, 0), 10)
        assert r.code == ResponseCode.SUCCESS, r.remark
        return [m.body for m in decode_messages(r.body)]


async def _route(namesrv: str, topic: str) -> TopicRouteData:
    async with RemotingClient() as client:
        req = RemotingCommand.request(
            RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic=topic).to_ext_fields()
        )
        r = await client.invoke(namesrv, req, 10)
        assert r.code == ResponseCode.SUCCESS, r.remark
        return TopicRouteData.decode(r.body)


@pytest.mark.parametrize("flush", ["sync", "async"])
def test_server_serves_stops_on_sigterm_and_restarts_with_its_data(tmp_path: Path, flush: str) -> None:
    data = tmp_path / "data"
    with spawn_server(data, flush=flush) as server:  # type: ignore[arg-type]
        assert server.data_dir == data.resolve()
        run(_send_all(server.broker_addr, "CliTopic", [b"one", b"two", b"three"]))
        route = run(_route(server.namesrv_addr, "TBW102"))
        assert route.broker_datas[0].broker_addrs[0] == server.broker_addr
        assert server.stop() == 0
    assert not (data / "abort").exists()  # a clean shutdown
    with spawn_server(data, flush=flush) as server:
        assert run(_pull_all(server.broker_addr, "CliTopic")) == [b"one", b"two", b"three"]
        assert server.stop() == 0


def test_port_in_use_is_one_line_and_exit_2(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        proc = subprocess.run(
            [sys.executable, "-m", "rocketq", "server", "--data-dir", str(tmp_path), "--namesrv-port", "0",
             "--broker-port", str(port)],
            check=False, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.startswith("rocketq server: error")]
    assert len(lines) == 1
    assert str(port) in lines[0]


def test_bad_data_dir_is_one_line_and_exit_2(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    proc = subprocess.run(
        [sys.executable, "-m", "rocketq", "server", "--data-dir", str(not_a_dir), "--namesrv-port", "0",
         "--broker-port", "0"],
        check=False, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("rocketq server: error: data dir")


def test_broker_command_joins_a_cluster(tmp_path: Path) -> None:
    with spawn_server(tmp_path / "a") as server:
        proc = subprocess.Popen(
            [sys.executable, "-m", "rocketq", "broker", "--namesrv", server.namesrv_addr,
             "--broker-port", "0", "--broker-name", "broker-b", "--data-dir", str(tmp_path / "b"),
             "--trace-topic"],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line.startswith("rocketq broker broker-b (cluster DefaultCluster) listening on 127.0.0.1:")
            route = run(_route(server.namesrv_addr, "TBW102"))
            assert sorted(b.broker_name for b in route.broker_datas) == ["broker-a", "broker-b"]
            trace = run(_route(server.namesrv_addr, RMQ_SYS_TRACE_TOPIC))  # only broker-b has --trace-topic
            assert [b.broker_name for b in trace.broker_datas] == ["broker-b"]
            assert [q.read_queue_nums for q in trace.queue_datas] == [1]
            os.kill(proc.pid, signal.SIGTERM)
            assert proc.wait(30) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        route = run(_route(server.namesrv_addr, "TBW102"))
        assert [b.broker_name for b in route.broker_datas] == ["broker-a"]
    assert READY_PREFIX.startswith("rocketq server ready")
    assert parse_ready_line(f"{READY_PREFIX} namesrv=1.2.3.4:1 broker=1.2.3.4:2 data=/x y").data_dir == Path(
        "/x y"
    )


def test_server_trace_topic_flag_creates_the_trace_topic(tmp_path: Path) -> None:
    with spawn_server(tmp_path / "data", extra_args=("--trace-topic",)) as server:
        route = run(_route(server.namesrv_addr, RMQ_SYS_TRACE_TOPIC))
        assert [b.broker_name for b in route.broker_datas] == ["broker-a"]

        async def config_lines() -> dict[str, str]:
            async with RemotingClient() as client:
                request = RemotingCommand.request(RequestCode.GET_BROKER_CONFIG, None)
                r = await client.invoke(server.broker_addr, request, 10)
                return dict(line.split("=", 1) for line in r.body.decode().splitlines())

        lines = run(config_lines())
        assert lines["traceTopicEnable"] == "true"
        assert lines["msgTraceTopicName"] == RMQ_SYS_TRACE_TOPIC
        assert server.stop() == 0


def test_server_expires_a_silent_consumer_after_the_channel_expired_timeout(tmp_path: Path) -> None:
    """``--channel-expired-timeout`` / ``--client-scan-interval`` reach the broker: a consumer that
    heartbeats once and then stays silent (its connection open) is dropped from its group and its
    connection closed within about a second, where the defaults (120 s, every 10 s) keep it."""
    from rocketq.protocol import calls

    from .brokerkit import heartbeat_request

    args = ("--channel-expired-timeout", "0.6", "--client-scan-interval", "0.2")
    with spawn_server(tmp_path / "data", extra_args=args) as server:

        async def scenario() -> tuple[list[str], list[str], bool]:
            async with RemotingClient() as silent, RemotingClient() as asker:
                request = heartbeat_request("127.0.0.1@silent", "expiry-g", {"TBW102": "*"})
                r = await silent.invoke(server.broker_addr, request, 10)
                assert r.code == ResponseCode.SUCCESS, r.remark
                conn = await silent.get_connection(server.broker_addr)
                before = await asker.call(server.broker_addr, calls.get_consumer_list_by_group("expiry-g"))
                await asyncio.wait_for(conn.wait_closed(), 10)  # the broker closes the expired channel
                after: list[str] = []
                try:
                    after = await asker.call(server.broker_addr, calls.get_consumer_list_by_group("expiry-g"))
                except BrokerError:
                    pass  # the group emptied: the broker answers "no consumer" (SYSTEM_ERROR)
                return before, after, conn.is_closed

        before, after, closed = run(scenario())
        assert before == ["127.0.0.1@silent"]
        assert after == []
        assert closed
