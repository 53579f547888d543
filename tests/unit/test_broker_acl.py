"""The broker's ACL rules (4.9.4's ``PlainPermissionManager``), its file, reloads and admin changes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from rocketq.broker.acl import (
    DENY,
    PUB,
    SUB,
    AclAdminError,
    AclManager,
    AclRefused,
    check_permission,
    decide,
    needed_resources,
    parse_acl,
    parse_address_pattern,
    parse_perm,
)
from rocketq.errors import ConfigError
from rocketq.protocol.acl import Credentials, PlainAccessConfig, sign
from rocketq.protocol.bodies import ConsumerData, HeartbeatData, SubscriptionData
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.command import RemotingCommand

FILE = {
    "globalWhiteRemoteAddresses": ["10.10.103.*", "192.168.0.{1,2}"],
    "accounts": [
        {
            "accessKey": "RocketMQ",
            "secretKey": 12345678,  # YAML reads it as a number; 4.9 takes its text
            "whiteRemoteAddress": None,
            "admin": False,
            "defaultTopicPerm": "DENY",
            "defaultGroupPerm": "SUB",
            "topicPerms": ["topicA=DENY", "topicB=PUB|SUB", "topicC=SUB"],
            "groupPerms": ["groupA=DENY", "groupB=PUB|SUB", "groupC=SUB"],
        },
        {
            "accessKey": "rocketmq2",
            "secretKey": "12345678",
            "whiteRemoteAddress": "192.168.1.*",
            "admin": True,
        },
    ],
}
RULES = parse_acl(FILE)
ROCKETMQ = Credentials(access_key="RocketMQ", secret_key="12345678")
ADMIN = Credentials(access_key="rocketmq2", secret_key="12345678")


def _send(topic: str, creds: Credentials | None = ROCKETMQ) -> RemotingCommand:
    req = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"a": "PG", "b": topic, "e": "0"}, b"x")
    return sign(req, creds) if creds is not None else req


def _pull(topic: str, group: str) -> RemotingCommand:
    fields = {"consumerGroup": group, "topic": topic, "queueId": "0", "queueOffset": "0"}
    return sign(RemotingCommand.request(RequestCode.PULL_MESSAGE, fields), ROCKETMQ)


def _refusal(rules: object, req: RemotingCommand, host: str = "127.0.0.1") -> str:
    with pytest.raises(AclRefused) as info:
        decide(RULES if rules is None else rules, req, host)  # type: ignore[arg-type]
    return info.value.remark


def test_permissions_as_4_9() -> None:
    assert parse_perm("PUB|SUB") == parse_perm(" SUB|PUB ") == PUB | SUB
    assert parse_perm(None) == parse_perm("nonsense") == parse_perm("DENY") == DENY
    assert check_permission(PUB, PUB | SUB)
    assert not check_permission(PUB, SUB)
    assert not check_permission(SUB, DENY | SUB)


def test_topic_and_group_permissions_with_4_9s_remarks() -> None:
    assert decide(RULES, _send("topicB"), "127.0.0.1") is not None
    remark = _refusal(None, _send("topicA"))
    assert remark == (
        "org.apache.rocketmq.acl.common.AclException: No default permission for topic:topicA, "
        "org.apache.rocketmq.acl.plain.PlainPermissionManager.checkPerm(PlainPermissionManager.java:610)"
    )
    assert "No default permission for topic:other" in _refusal(None, _send("other"))
    assert "java:605" in _refusal(None, _send("other"))  # the default-permission frame
    assert decide(RULES, _pull("topicC", "groupC"), "127.0.0.1") is not None
    assert decide(RULES, _pull("topicC", "anyGroup"), "127.0.0.1") is not None  # defaultGroupPerm SUB
    assert "No default permission for group:groupA" in _refusal(None, _pull("topicC", "groupA"))
    assert "topic:topicA" in _refusal(None, _pull("topicA", "groupC"))


def test_authentication_failures() -> None:
    unsigned = _send("topicB", None)
    assert _refusal(None, unsigned).startswith(
        "org.apache.rocketmq.acl.common.AclException: No accessKey is configured, "
    )
    unknown = _send("topicB", Credentials(access_key="nobody12", secret_key="12345678"))
    assert "No acl config for nobody12" in _refusal(None, unknown)
    wrong = _send("topicB", Credentials(access_key="RocketMQ", secret_key="87654321"))
    remark = _refusal(None, wrong)
    assert remark.endswith(
        "Check signature failed for accessKey=RocketMQ, "
        "org.apache.rocketmq.acl.plain.PlainPermissionManager.validate(PlainPermissionManager.java:683)"
    )
    assert "87654321" not in remark
    assert "12345678" not in remark


def test_white_lists_and_admin() -> None:
    anonymous = RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "T"})
    assert decide(RULES, anonymous, "10.10.103.7") is None  # global white list: anything goes
    assert decide(RULES, anonymous, "192.168.0.2") is None
    with pytest.raises(AclRefused):
        decide(RULES, anonymous, "192.168.0.3")
    # as 4.9, the request is read before the white list is looked at
    unreadable = RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, {"topic": "T"})
    assert "PlainAccessValidator.parse" in _refusal(None, unreadable, "10.10.103.7")
    no_fields = RemotingCommand.request(RequestCode.HEART_BEAT)  # a heartbeat with no ext fields at all
    assert decide(RULES, no_fields, "10.10.103.7") is None
    # the account's own white address: its requests pass unsigned
    unsigned_admin = RemotingCommand.request(
        RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "T", "AccessKey": "rocketmq2"}
    )
    assert decide(RULES, unsigned_admin, "192.168.1.20") is not None
    assert "Check signature failed" in _refusal(None, unsigned_admin, "192.168.2.20")
    create = sign(RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, {"topic": "T"}), ROCKETMQ)
    assert "Need admin permission for request code=17, but accessKey=RocketMQ is not" in _refusal(
        None, create
    )
    acl = sign(RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG, {}), ROCKETMQ)
    assert "Need admin permission for request code=54" in _refusal(None, acl)  # ours: ACL codes are admin's
    assert decide(
        RULES, sign(RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG, {}), ADMIN), "1.2.3.4"
    )


def test_heartbeat_and_retry_topic_resources() -> None:
    hb = HeartbeatData(
        client_id="c",
        consumer_data_set=(
            ConsumerData(
                group_name="groupB", subscription_data_set=(SubscriptionData(topic="topicC", sub_string="*"),)
            ),
        ),
    )
    req = RemotingCommand.request(RequestCode.HEART_BEAT, {}, hb.encode())
    assert needed_resources(req) == {"%RETRY%groupB": SUB, "topicC": SUB}
    assert decide(RULES, sign(req, ROCKETMQ), "127.0.0.1") is not None
    retry_send = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"a": "groupA", "b": "%RETRY%groupA"})
    assert needed_resources(retry_send) == {"%RETRY%groupA": SUB}
    assert needed_resources(RemotingCommand.request(RequestCode.SEND_BATCH_MESSAGE, {"b": "T"})) == {}
    empty_hb = sign(RemotingCommand.request(RequestCode.HEART_BEAT, {}), ROCKETMQ)
    assert _refusal(None, empty_hb).startswith("org.apache.rocketmq.acl.common.AclException, ")
    bad = sign(RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, {"topic": "T"}), ROCKETMQ)
    assert "PlainAccessValidator.parse(PlainAccessValidator.java:134)" in _refusal(None, bad)


def test_trace_topic_publication_is_not_checked() -> None:
    assert decide(RULES, _send("RMQ_SYS_TRACE_TOPIC"), "127.0.0.1") is not None


@given(
    a=st.integers(0, 255),
    b=st.integers(0, 255),
    c=st.integers(0, 255),
    d=st.integers(0, 255),
    lo=st.integers(0, 255),
    span=st.integers(0, 255),
    where=st.integers(1, 3),
)
def test_ipv4_range_patterns_match_as_their_numbers_say(
    a: int, b: int, c: int, d: int, lo: int, span: int, where: int
) -> None:
    hi = min(255, lo + span)
    parts = ["192", "168", "7", "9"]
    parts[where] = f"{lo}-{hi}"
    for i in range(where + 1, 4):
        parts[i] = "*"
    pattern = parse_address_pattern(".".join(parts))
    host = [192, 168, 7, 9]
    host[where] = [a, b, c, d][where]
    for i in range(where + 1, 4):
        host[i] = [a, b, c, d][i]
    expected = lo <= host[where] <= hi
    assert pattern.matches(".".join(map(str, host))) == expected
    assert not pattern.matches(f"10.{b}.{c}.{d}")
    assert parse_address_pattern(".".join(map(str, host))).matches(".".join(map(str, host)))


def test_bad_files_are_refused_without_secrets() -> None:
    for bad in ("1.2.3", "1.2.3.-5", "1.2.3.5-300", "a.b.c.*", "not-an-ip", "1.2.{3,4}"):
        with pytest.raises(ConfigError):
            parse_address_pattern(bad)
    with pytest.raises(ConfigError) as info:
        parse_acl({"accounts": [{"accessKey": "longenough", "secretKey": "short"}]})
    assert "short" not in str(info.value)
    assert parse_address_pattern("").matches("127.0.0.1") is False
    assert parse_address_pattern("*").matches("::1")
    assert parse_address_pattern("::1").matches("0:0:0:0:0:0:0:1")


def test_reload_by_now_and_admin_changes_write_the_file(tmp_path: Path) -> None:
    path = tmp_path / "plain_acl.yml"
    path.write_text(yaml.safe_dump(FILE))
    acl = AclManager(path, check_interval=5.0, wall_ms=lambda: 1_700_000_000_000)
    assert acl.refresh(now=100.0) is False  # looked: unchanged
    data = yaml.safe_load(path.read_text())
    data["accounts"][0]["topicPerms"] = ["topicA=PUB"]
    path.write_text(yaml.safe_dump(data))
    os.utime(path, ns=(1, 1))  # a different mtime even on a coarse clock
    assert acl.refresh(now=101.0) is False  # not due yet
    with pytest.raises(AclRefused):  # the old rules until the next look
        decide(acl.rules, _send("topicA"), "127.0.0.1")
    assert acl.refresh(now=105.0) is True
    assert decide(acl.rules, _send("topicA"), "127.0.0.1") is not None
    path.write_text("accounts: [unclosed")
    os.utime(path, ns=(2, 2))
    assert acl.refresh(now=111.0) is False  # a broken file keeps the rules in force
    assert decide(acl.rules, _send("topicA"), "127.0.0.1") is not None

    path.write_text(yaml.safe_dump(FILE))
    acl.load()
    acl.update_account(
        PlainAccessConfig(access_key="newuser1", secret_key="newsecret1", default_topic_perm="PUB")
    )
    written = yaml.safe_load(path.read_text())
    assert [a["accessKey"] for a in written["accounts"]] == ["RocketMQ", "rocketmq2", "newuser1"]
    assert written["dataVersion"] == [{"counter": 1, "timestamp": 1_700_000_000_000}]
    assert acl.version_json == '{"counter":1,"timestamp":1700000000000}'
    new = sign(
        RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"b": "Any"}),
        Credentials(access_key="newuser1", secret_key="newsecret1"),
    )
    assert decide(acl.rules, new, "127.0.0.1") is not None
    with pytest.raises(AclAdminError) as info:
        acl.update_account(PlainAccessConfig(access_key="newuser1", secret_key="tiny"))
    assert "tiny" not in str(info.value)
    with pytest.raises(AclAdminError):
        acl.update_account(
            PlainAccessConfig(access_key="newuser1", secret_key="newsecret1", topic_perms=("A=ALL",))
        )
    acl.update_global_white(["127.0.0.1"])
    assert (
        decide(acl.rules, RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_BROKER, {}), "127.0.0.1")
        is None
    )
    assert acl.delete_account("newuser1") is True
    assert acl.delete_account("newuser1") is False
    whites, configs = acl.cluster_config()
    assert whites == ["127.0.0.1"]
    assert [c.access_key for c in configs] == ["RocketMQ", "rocketmq2"]
    assert acl.rules.counter == 3
