"""``rocketq namesrv`` as a process: prints where it listens, serves, stops cleanly on a signal."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketq.protocol.bodies import ClusterInfo
from rocketq.remoting import BlockingRemotingClient

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

_COMMAND = [sys.executable, "-m", "rocketq"]


@pytest.fixture
def namesrv_process() -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [*_COMMAND, "namesrv", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serves_until_signalled_then_exits_zero(namesrv_process: subprocess.Popen[str], sig: int) -> None:
    assert namesrv_process.stdout is not None
    line = namesrv_process.stdout.readline()
    match = re.fullmatch(r"rocketq name server listening on (127\.0\.0\.1:\d+)\n", line)
    assert match, line
    with BlockingRemotingClient(match.group(1)) as client:
        answer = client.invoke(RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), timeout=5)
    assert answer.code == ResponseCode.SUCCESS
    assert ClusterInfo.decode(answer.body) == ClusterInfo()
    namesrv_process.send_signal(sig)
    _, err = namesrv_process.communicate(timeout=20)
    assert namesrv_process.returncode == 0, err
    assert "rocketq name server stopped" in err


def test_port_in_use_is_one_line_and_exit_2() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [*_COMMAND, "namesrv", "--port", str(port)],
            check=False,
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"rocketq namesrv: error: cannot listen on 127.0.0.1:{port}")
