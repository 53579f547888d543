"""TLS and the ACL together: a ``rocketq server --tls-mode enforcing --acl FILE`` serves clients that
speak TLS *and* sign, and refuses those that do only one of the two, each refusal one line saying
which. The account's keys and the message count are drawn at random; the draws are printed.
"""

from __future__ import annotations

import random
import string
import subprocess
from pathlib import Path

import pytest
import yaml

from rocketq import Message, Producer, SendStatus
from rocketq.admin import Admin
from rocketq.cli.main import main
from rocketq.client import ClientConfig
from rocketq.client.blocking import BlockingClient
from rocketq.embedded import spawn_server
from rocketq.errors import AccessDeniedError, RemotingClosedError, RemotingConnectError
from rocketq.models import PullStatus
from rocketq.protocol.acl import Credentials
from rocketq.protocol.message import decode_messages
from rocketq.remoting import TlsClientConfig
from rocketq.remoting.certs import make_test_certs

pytestmark = pytest.mark.integration

TOPIC, GROUP = "TlsAcl", "tls_acl_group"


def _key(n: int) -> str:
    return "".join(random.choices(string.ascii_letters + string.digits, k=n))


def test_a_client_with_tls_and_keys_is_served_by_an_enforcing_tls_server_with_acl(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    certs = make_test_certs(tmp_path / "certs")
    admin_keys = {"access_key": "ops" + _key(6), "secret_key": _key(12)}
    app_keys = {"access_key": "app" + _key(6), "secret_key": _key(12)}
    n = random.randint(3, 30)
    print("accounts", admin_keys["access_key"], app_keys["access_key"], "messages", n)
    acl = tmp_path / "plain_acl.yml"
    acl.write_text(
        yaml.safe_dump(
            {
                "globalWhiteRemoteAddresses": ["10.255.255.*"],  # not 127.0.0.1: every request is checked
                "accounts": [
                    {
                        "accessKey": admin_keys["access_key"],
                        "secretKey": admin_keys["secret_key"],
                        "admin": True,
                    },
                    {
                        "accessKey": app_keys["access_key"],
                        "secretKey": app_keys["secret_key"],
                        "defaultTopicPerm": "DENY",
                        "defaultGroupPerm": "DENY",
                        "topicPerms": [f"{TOPIC}=PUB|SUB"],
                        "groupPerms": [f"{GROUP}=SUB"],
                    },
                ],
            }
        )
    )
    args = (
        "--tls-mode",
        "enforcing",
        "--tls-cert",
        str(certs.server_cert),
        "--tls-key",
        str(certs.server_key),
    )
    args += ("--tls-ca", str(certs.ca), "--acl", str(acl))
    server = spawn_server(tmp_path / "data", extra_args=args, stderr=subprocess.DEVNULL)
    try:
        ns = server.namesrv_addr
        tls = TlsClientConfig(enable=True, trust_cert_path=str(certs.ca))
        with Admin(ns, tls=tls, **admin_keys) as admin:
            admin.create_topic(TOPIC, queues=1)

        # TLS and keys: served (the producer's loop client and its per-thread sockets)
        config = ClientConfig(namesrv=ns, client_ip="127.0.0.1", tls=tls, **app_keys)
        bodies = [f"m{i}-{_key(4)}".encode() for i in range(n)]
        with Producer("tls_acl_producer", client_config=config) as producer:
            for body in bodies:
                assert producer.send(Message(TOPIC, body)).status is SendStatus.SEND_OK
        # ... and the blocking client the Spark source reads through
        creds = Credentials(**app_keys)
        with BlockingClient(ns, credentials=creds, tls=tls) as io:
            q = io.read_queues(TOPIC)[0]
            got = io.pull(q, group=GROUP, offset=0, max_nums=64)
        assert got.status is PullStatus.FOUND
        assert [m.body for m in decode_messages(got.body)] == bodies

        # the CLI: one helper reads both the TLS options and the keys
        capsys.readouterr()
        cli = ["--namesrv", ns, "--tls", "--tls-ca", str(certs.ca)]
        keys = ["--access-key", app_keys["access_key"], "--secret-key", app_keys["secret_key"]]
        assert main(["produce", TOPIC, "--count", "2", *cli, *keys]) == 0
        assert "sent 2 messages to TlsAcl, 0 failed" in capsys.readouterr().out

        # TLS without keys: the ACL refuses; keys without TLS: the port closes the connection
        with pytest.raises(AccessDeniedError), BlockingClient(ns, tls=tls) as io:
            io.pull(q, group=GROUP, offset=0, max_nums=1)
        with (
            pytest.raises((RemotingClosedError, RemotingConnectError), match="enforcing TLS closes"),
            Admin(ns, timeout=3.0, **app_keys) as admin,
        ):
            admin.topic_route(TOPIC)
        assert main(["produce", TOPIC, "--count", "1", *cli]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1
        assert "refused by the broker's ACL" in err[0]
    finally:
        server.stop()
