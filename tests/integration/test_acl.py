"""RocketMQ 4.9's ACL on a live broker over 127.0.0.1: who may do what, and hostile signatures.

Requests are built by ``rocketq.protocol.calls`` (the calls rocketq's clients send) and signed
with :func:`rocketq.protocol.acl.sign`, as a 4.9 client's ``AclClientRPCHook`` signs them.
"""

from __future__ import annotations

import base64
import logging
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketq.broker import BrokerConfig
from rocketq.models import MessageQueue
from rocketq.protocol import RemotingCommand, ResponseCode, calls
from rocketq.protocol.acl import (
    ACCESS_KEY,
    SIGNATURE,
    Credentials,
    PlainAccessConfig,
    delete_acl_config,
    get_broker_acl_info,
    get_broker_cluster_acl_config,
    sign,
    update_acl_config,
    update_global_white_addrs,
)
from rocketq.protocol.bodies import HeartbeatData
from rocketq.protocol.calls import Call
from rocketq.protocol.headers import PullMessageRequestHeader, SendMessageRequestHeaderV2
from rocketq.protocol.properties import properties_to_string
from rocketq.remoting.blocking import BlockingRemotingClient

from .brokerkit import heartbeat_request
from .clientkit import FAST_DELAY_LEVELS, ClusterThread

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

T = TypeVar("T")

TOPIC, GROUP = "AclT", "AclG"
ACL_EXCEPTION = "org.apache.rocketmq.acl.common.AclException"

SUB_ONLY = Credentials(access_key="subonly1", secret_key="subsecret-1")
PUB_ONLY = Credentials(access_key="pubonly1", secret_key="pubsecret-1")
ADMIN = Credentials(access_key="adminacc1", secret_key="adminsecret-1")
WHITE = Credentials(access_key="whitelisted", secret_key="whitesecret-1")
ELSEWHERE = Credentials(access_key="elsewhere1", secret_key="elsewhere-secret")
SECRETS = [c.secret_key for c in (SUB_ONLY, PUB_ONLY, ADMIN, WHITE, ELSEWHERE)]

ACL_FILE = {
    # the global white list leaves 127.0.0.1 out: every test request must be signed or white-listed
    "globalWhiteRemoteAddresses": ["10.255.255.*"],
    "accounts": [
        {
            "accessKey": "subonly1",
            "secretKey": "subsecret-1",
            "defaultTopicPerm": "SUB",
            "defaultGroupPerm": "SUB",
        },
        {
            "accessKey": "pubonly1",
            "secretKey": "pubsecret-1",
            "defaultTopicPerm": "PUB",
            "defaultGroupPerm": "DENY",
        },
        {"accessKey": "adminacc1", "secretKey": "adminsecret-1", "admin": True},
        {"accessKey": "whitelisted", "secretKey": "whitesecret-1", "whiteRemoteAddress": "127.0.0.1"},
        {"accessKey": "elsewhere1", "secretKey": "elsewhere-secret", "whiteRemoteAddress": "10.1.1.*"},
    ],
}


@dataclass(frozen=True)
class Kind:
    name: str
    prepare: Callable[[RemotingCommand], RemotingCommand]


def _signed(creds: Credentials) -> Callable[[RemotingCommand], RemotingCommand]:
    return lambda req: sign(req, creds)


def _key_only(access_key: str) -> Callable[[RemotingCommand], RemotingCommand]:
    def prepare(req: RemotingCommand) -> RemotingCommand:
        req.ext_fields[ACCESS_KEY] = access_key
        return req

    return prepare


KINDS = {
    "none": Kind("none", lambda req: req),
    "wrong-secret": Kind("wrong-secret", _signed(replace(SUB_ONLY, secret_key="not-the-secret"))),
    "sub-only": Kind("sub-only", _signed(SUB_ONLY)),
    "pub-only": Kind("pub-only", _signed(PUB_ONLY)),
    "admin": Kind("admin", _signed(ADMIN)),
    # an account whose whiteRemoteAddress is not 127.0.0.1: unsigned, it is refused
    "not-white-listed": Kind("not-white-listed", _key_only(ELSEWHERE.access_key)),
    # an account whose whiteRemoteAddress is 127.0.0.1: 4.9 lets it in unsigned, for anything
    "white-listed": Kind("white-listed", _key_only(WHITE.access_key)),
}


def _send(kind: str) -> RemotingCommand:
    header = SendMessageRequestHeaderV2(
        producer_group="AclPG",
        topic=TOPIC,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=0,
        sys_flag=0,
        born_timestamp=int(time.time() * 1000),
        flag=0,
        properties=properties_to_string({"WAIT": "true", "KEYS": "k1"}),
    )
    return calls.send_message_request(header, f"from {kind}".encode())


def _pull(kind: str) -> RemotingCommand:
    header = PullMessageRequestHeader(
        consumer_group=GROUP,
        topic=TOPIC,
        queue_id=0,
        queue_offset=0,
        max_msg_nums=4,
        sys_flag=0,
        commit_offset=0,
        suspend_timeout_millis=0,
        subscription="*",
        sub_version=0,
    )
    return calls.pull_message(header).request


def _heartbeat(kind: str) -> RemotingCommand:
    body = HeartbeatData.decode(heartbeat_request(f"c-{kind}", GROUP, {TOPIC: "*"}).body)
    return calls.send_heartbeat(body).request


REQUESTS: dict[str, tuple[Callable[[str], RemotingCommand], frozenset[int]]] = {
    "send": (_send, frozenset({ResponseCode.SUCCESS})),
    "heartbeat": (_heartbeat, frozenset({ResponseCode.SUCCESS})),
    "pull": (
        _pull,
        frozenset({ResponseCode.SUCCESS, ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_OFFSET_MOVED}),
    ),
    "offset commit": (
        lambda k: calls.update_consumer_offset(GROUP, MessageQueue(TOPIC, "broker-a", 0), 1).request,
        frozenset({ResponseCode.SUCCESS}),
    ),
    "topic create": (
        lambda k: calls.create_topic(f"Made-{k}", 1, 1).request,
        frozenset({ResponseCode.SUCCESS}),
    ),
    "topic delete": (
        lambda k: calls.delete_topic_in_broker(f"Made-{k}").request,
        frozenset({ResponseCode.SUCCESS}),
    ),
    "group reset": (
        lambda k: calls.invoke_broker_to_reset_offset(TOPIC, GROUP, 0).request,
        frozenset({ResponseCode.SUCCESS}),
    ),
    "message query": (
        lambda k: calls.query_message(TOPIC, "k1").request,
        frozenset({ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND}),
    ),
    "ACL admin": (lambda k: get_broker_cluster_acl_config().request, frozenset({ResponseCode.SUCCESS})),
}

# 4.9.4's rules (ACL admin: rocketq's, see docs/security.md): which account kinds pass each class
_ANY_SIGNED = {"sub-only", "pub-only", "admin", "white-listed"}
ALLOWED = {
    "send": {"pub-only", "admin", "white-listed"},
    "pull": {"sub-only", "admin", "white-listed"},
    "heartbeat": {"sub-only", "admin", "white-listed"},
    "offset commit": {"sub-only", "admin", "white-listed"},
    "topic create": {"admin", "white-listed"},
    "topic delete": {"admin", "white-listed"},
    "group reset": _ANY_SIGNED,  # 4.9 checks no resource and no admin role for it
    "message query": {"sub-only", "admin", "white-listed"},
    "ACL admin": {"admin", "white-listed"},
}
EXPECTED_REFUSAL = {
    "none": "No accessKey is configured",
    "wrong-secret": "Check signature failed for accessKey=subonly1",
    "not-white-listed": "Check signature failed for accessKey=elsewhere1",
}


def _write(path: Path, data: object) -> None:
    path.write_text(yaml.safe_dump(data, sort_keys=False))


@pytest.fixture
def acl_cluster(tmp_path: Path) -> Iterator[tuple[ClusterThread, Path]]:
    acl_file = tmp_path / "plain_acl.yml"
    _write(acl_file, ACL_FILE)
    config = BrokerConfig(message_delay_level=FAST_DELAY_LEVELS, acl_file=acl_file, acl_check_interval=1e-9)
    cluster = ClusterThread(tmp_path / "cluster", broker=config)
    try:
        yield cluster, acl_file
    finally:
        cluster.close()


def _refused(response: RemotingCommand) -> bool:
    return response.code == ResponseCode.SYSTEM_ERROR and (response.remark or "").startswith(ACL_EXCEPTION)


def test_permission_matrix(acl_cluster: tuple[ClusterThread, Path], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="rocketq")
    cluster, _ = acl_cluster
    with BlockingRemotingClient(cluster.broker_addr, request_timeout=10.0) as client:
        setup = sign(calls.create_topic(TOPIC, 1, 1).request, ADMIN)
        assert client.invoke(setup).code == ResponseCode.SUCCESS
        outcome: dict[tuple[str, str], str] = {}
        for what, (build, ok_codes) in REQUESTS.items():
            for kind in KINDS.values():
                response = client.invoke(kind.prepare(build(kind.name)))
                allowed = kind.name in ALLOWED[what]
                if allowed:
                    assert response.code in ok_codes, (what, kind.name, response.code, response.remark)
                else:
                    assert _refused(response), (what, kind.name, response.code, response.remark)
                    expected = EXPECTED_REFUSAL.get(kind.name)
                    if expected is not None:
                        assert expected in (response.remark or "")
                    elif what in ("topic create", "topic delete", "ACL admin"):
                        assert "Need admin permission" in (response.remark or ""), response.remark
                    else:
                        assert "No default permission for" in (response.remark or ""), response.remark
                remark = response.remark or ""
                assert not any(secret in remark for secret in SECRETS)
                outcome[what, kind.name] = "allowed" if allowed else "refused"
    assert len(outcome) == len(REQUESTS) * len(KINDS)
    for record in caplog.records:
        text = record.getMessage()
        assert not any(secret in text for secret in SECRETS), text


def test_acl_admin_requests_rewrite_the_file_and_apply_at_once(
    acl_cluster: tuple[ClusterThread, Path],
) -> None:
    cluster, acl_file = acl_cluster
    newbie = Credentials(access_key="newbie01", secret_key="newbie-secret")
    with BlockingRemotingClient(cluster.broker_addr) as client:
        info = client.call(signed_call(get_broker_acl_info(), ADMIN))
        assert info.broker_addr == cluster.broker_addr
        assert info.version == '{"counter":0,"timestamp":0}'
        send = sign(_send("newbie"), newbie)
        assert "No acl config for newbie01" in (client.invoke(send).remark or "")
        account = PlainAccessConfig(
            access_key="newbie01", secret_key="newbie-secret", default_topic_perm="PUB"
        )
        client.call(signed_call(update_acl_config(account), ADMIN))
        assert client.invoke(sign(_send("newbie"), newbie)).code == ResponseCode.SUCCESS
        written = yaml.safe_load(acl_file.read_text())
        assert written["accounts"][-1]["accessKey"] == "newbie01"
        assert written["dataVersion"][0]["counter"] == 1
        config = client.call(signed_call(get_broker_cluster_acl_config(), ADMIN))
        assert "newbie01" in [c.access_key for c in config.plain_access_configs]
        # a too-short secret: refused with 209, and the remark does not show it
        bad = update_acl_config(PlainAccessConfig(access_key="newbie01", secret_key="short"))
        response = client.invoke(sign(bad.request, ADMIN))
        assert response.code == ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED
        assert "short" not in (response.remark or "")
        client.call(signed_call(delete_acl_config("newbie01"), ADMIN))
        assert _refused(client.invoke(sign(_send("newbie"), newbie)))
        response = client.invoke(sign(delete_acl_config("newbie01").request, ADMIN))
        assert response.code == ResponseCode.DELETE_ACL_CONFIG_FAILED
        assert (
            response.remark
            == "The accesskey[newbie01] corresponding to accessConfig has been deleted failed."
        )
        # the global white list: now 127.0.0.1 needs no signature at all
        assert _refused(client.invoke(calls.delete_topic_in_broker("Nothing").request))
        client.call(signed_call(update_global_white_addrs(["127.0.0.*"]), ADMIN))
        assert client.invoke(calls.delete_topic_in_broker("Nothing").request).code == ResponseCode.SUCCESS


def test_large_requests_are_checked_off_the_loop(acl_cluster: tuple[ClusterThread, Path]) -> None:
    """A heartbeat over the offload threshold (16 KiB) is read and verified on the worker thread."""
    cluster, _ = acl_cluster
    topics = {f"T{i:04d}": "*" for i in range(600)}
    body = HeartbeatData.decode(heartbeat_request("c-big", GROUP, topics).body)
    with BlockingRemotingClient(cluster.broker_addr) as client:
        big = calls.send_heartbeat(body).request
        assert len(big.body) > 16 * 1024
        assert client.invoke(sign(big, SUB_ONLY)).code == ResponseCode.SUCCESS
        refused = client.invoke(sign(calls.send_heartbeat(body).request, PUB_ONLY))  # group DENY
        assert _refused(refused)
        assert "No default permission for" in (refused.remark or "")
        forged = sign(calls.send_heartbeat(body).request, SUB_ONLY)
        forged.body = forged.body.replace(b"T0001", b"T9999")
        assert "Check signature failed" in (client.invoke(forged).remark or "")


def signed_call(call: Call[T], creds: Credentials) -> Call[T]:
    sign(call.request, creds)
    return call


def test_the_file_is_reloaded_when_it_changes(acl_cluster: tuple[ClusterThread, Path]) -> None:
    cluster, acl_file = acl_cluster
    with BlockingRemotingClient(cluster.broker_addr) as client:
        assert (
            client.invoke(sign(calls.create_topic(TOPIC, 1, 1).request, ADMIN)).code == ResponseCode.SUCCESS
        )
        assert _refused(client.invoke(sign(_send("sub"), SUB_ONLY)))
        data = yaml.safe_load(acl_file.read_text())
        data["accounts"][0]["topicPerms"] = [f"{TOPIC}=PUB|SUB"]
        _write(acl_file, data)
        os.utime(acl_file, ns=(10**18, 10**18))  # a new mtime whatever the file system's clock
        assert client.invoke(sign(_send("sub"), SUB_ONLY)).code == ResponseCode.SUCCESS
        acl_file.write_text("accounts: [ {broken")
        os.utime(acl_file, ns=(2 * 10**18, 2 * 10**18))
        # a broken file is logged and the rules in force stay
        assert client.invoke(sign(_send("sub"), SUB_ONLY)).code == ResponseCode.SUCCESS


# ------------------------------------------------------------------------------------- hostile sweep


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


MUTATIONS = st.one_of(
    st.tuples(st.just("forged"), st.binary(min_size=0, max_size=40).map(_b64)),
    st.tuples(st.just("truncated"), st.integers(0, 27).map(str)),
    st.tuples(st.just("oversized"), st.integers(1, 200_000).map(str)),
    st.tuples(st.just("garbage"), st.text(max_size=60)),
    st.tuples(st.just("no-signature"), st.just("")),
    st.tuples(st.just("no-access-key"), st.just("")),
    st.tuples(st.just("unknown-key"), st.text(min_size=1, max_size=40)),
    st.tuples(st.just("tampered-field"), st.text(min_size=1, max_size=10)),
    st.tuples(st.just("tampered-body"), st.binary(min_size=1, max_size=64)),
    st.tuples(st.just("dropped-field"), st.sampled_from(["b", "a", "e"])),
    st.tuples(st.just("replayed"), st.just("")),
)


def _mutate(req: RemotingCommand, kind: str, arg: str | bytes) -> bool:
    """Apply the mutation; returns whether 4.9 accepts the result (only a replay is)."""
    ext = req.ext_fields
    if kind == "forged":
        ext[SIGNATURE] = str(arg)
    elif kind == "truncated":
        ext[SIGNATURE] = ext[SIGNATURE][: int(str(arg))]
    elif kind == "oversized":
        ext[SIGNATURE] = ext[SIGNATURE] + "A" * int(str(arg))
    elif kind == "garbage":
        ext[SIGNATURE] = str(arg)
    elif kind == "no-signature":
        del ext[SIGNATURE]
    elif kind == "no-access-key":
        del ext[ACCESS_KEY]
    elif kind == "unknown-key":
        ext[ACCESS_KEY] = "x" + str(arg) if str(arg) == PUB_ONLY.access_key else str(arg)
    elif kind == "tampered-field":
        ext["b"] = ext["b"] + str(arg)
    elif kind == "tampered-body":
        req.body = req.body + bytes(arg) if isinstance(arg, bytes) else req.body
    elif kind == "dropped-field":
        del ext[str(arg)]
    return kind == "replayed"


def test_hostile_signatures_are_refused_cleanly(
    acl_cluster: tuple[ClusterThread, Path], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="rocketq")
    cluster, _ = acl_cluster
    with BlockingRemotingClient(cluster.broker_addr, request_timeout=10.0) as client:
        assert (
            client.invoke(sign(calls.create_topic(TOPIC, 1, 1).request, ADMIN)).code == ResponseCode.SUCCESS
        )
        captured = sign(_send("replay"), PUB_ONLY)  # one signed request, captured on the wire
        seen: set[str] = set()

        @settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
        @given(mutation=MUTATIONS)
        def sweep(mutation: tuple[str, str | bytes]) -> None:
            kind, arg = mutation
            seen.add(kind)
            if kind == "replayed":
                req = RemotingCommand.request(captured.code, dict(captured.ext_fields), captured.body)
            else:
                req = sign(_send("hostile"), PUB_ONLY)
            accepted = _mutate(req, kind, arg)
            response = client.invoke(req)
            if accepted:  # 4.9 has no nonce or timestamp: the same signed request passes again
                assert response.code == ResponseCode.SUCCESS, response.remark
            else:
                assert _refused(response), (kind, response.code, response.remark)
            assert not any(secret in (response.remark or "") for secret in SECRETS)
            # the server neither crashed nor stalls: a good request is answered at once
            assert client.invoke(sign(_send("good"), PUB_ONLY), timeout=5.0).code == ResponseCode.SUCCESS

        sweep()
    assert {"forged", "truncated", "oversized", "replayed", "unknown-key"} <= seen
    for record in caplog.records:
        text = record.getMessage()
        assert not any(secret in text for secret in SECRETS), text
