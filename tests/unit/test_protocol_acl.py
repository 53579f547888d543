"""RocketMQ 4.9's ACL signature (``AclClientRPCHook`` / ``AclUtils`` / ``AclSigner``).

The golden signatures were computed outside Python, from the content written out by hand from
4.9.4's algorithm, with ``printf CONTENT | openssl dgst -sha1 -hmac SECRET -binary | base64``.
The Go client's own test vector (apache/rocketmq-client-go ``interceptor_test.go``) checks the
HMAC-SHA1/base64 step against an independent implementation.
"""

from __future__ import annotations

import base64

from hypothesis import given
from hypothesis import strategies as st

from rocketq.protocol.acl import (
    ACCESS_KEY,
    SECURITY_TOKEN,
    SIGNATURE,
    UNIQUE_KEY_QUERY,
    ClusterAclConfig,
    CreateAccessConfigRequestHeader,
    Credentials,
    PlainAccessConfig,
    calc_signature,
    sign,
    signing_content,
    update_acl_config,
    verify,
)
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.frame import decode_frame, encode_frame

ROCKETMQ = Credentials(access_key="RocketMQ", secret_key="12345678")


def test_hmac_step_matches_the_go_clients_vector() -> None:
    assert (
        calc_signature(b"Hello RocketMQ Client ACL Feature", "adiaushdiaushd")
        == "tAb/54Rwwcq+pbH8Loi7FWX4QSQ="
    )
    assert calc_signature(b"RocketMQ", "12345678") == "IUc8rrO/0gDch8CjObLQsW2rsiA="


def test_send_request_golden_signature() -> None:
    req = RemotingCommand.request(10, {"topic": "TopicTest", "queueId": "0", "producerGroup": "PG"}, b"Hello")
    sign(req, ROCKETMQ)
    # AccessKey < producerGroup < queueId < topic (upper case first), then the body
    assert signing_content(req.ext_fields, req.body) == b"RocketMQPG0TopicTestHello"
    assert req.ext_fields[ACCESS_KEY] == "RocketMQ"
    assert req.ext_fields[SIGNATURE] == "kGk8Ma1fv8xQ+zPSRidnT0HnWkg="
    assert SECURITY_TOKEN not in req.ext_fields


def test_security_token_is_signed() -> None:
    req = RemotingCommand.request(10, {"topic": "TopicTest", "queueId": "0", "producerGroup": "PG"}, b"Hello")
    sign(req, Credentials(access_key="RocketMQ", secret_key="12345678", security_token="tok"))
    assert signing_content(req.ext_fields, req.body) == b"RocketMQtokPG0TopicTestHello"
    assert req.ext_fields[SIGNATURE] == "xUrDVqp+8RpMlYjKNyI8C30WJAQ="
    assert verify(req, "12345678")
    req.ext_fields[SECURITY_TOKEN] = "other"
    assert not verify(req, "12345678")


def test_utf8_secret_and_no_body() -> None:
    req = RemotingCommand.request(11, {"topic": "OrderTopic", "consumerGroup": "G1"})
    sign(req, Credentials(access_key="rocketmq2", secret_key="secret-ü-key"))
    assert signing_content(req.ext_fields, req.body) == b"rocketmq2G1OrderTopic"
    assert req.ext_fields[SIGNATURE] == "tz1Zwx5HU4IqD7h9PikgNt3oL1E="


def test_keys_sort_as_java_strings_utf16_not_code_points() -> None:
    # U+1F600 is a surrogate pair (D83D DE00) in Java: it sorts before U+FF01, unlike Python's order
    req = RemotingCommand.request(10, {"\uff01": "\uff01", "\U0001f600": "\U0001f600"})
    sign(req, Credentials(access_key="AK1", secret_key="1234567"))
    assert signing_content(req.ext_fields, req.body) == "AK1\U0001f600\uff01".encode()
    assert req.ext_fields[SIGNATURE] == "FOyLfS/3z0uYNdiXR6PYXbxL3iI="


def test_unique_key_flag_is_outside_the_content_but_either_form_verifies() -> None:
    fields = {"topic": "T", "key": "K", "maxNum": "32", "beginTimestamp": "0", "endTimestamp": "9"}
    ours = sign(RemotingCommand.request(12, {**fields, UNIQUE_KEY_QUERY: "true"}), ROCKETMQ)
    assert b"true" not in signing_content(ours.ext_fields, ours.body)  # what a 4.9 broker checks
    assert verify(ours, "12345678")
    # a 4.9 Java client adds the flag before its hook signs: its content has the flag's value
    java = RemotingCommand.request(12, {**fields, UNIQUE_KEY_QUERY: "false", ACCESS_KEY: "RocketMQ"})
    content = signing_content(java.ext_fields, b"", leave_out=(SIGNATURE,))
    java.ext_fields[SIGNATURE] = calc_signature(content, "12345678")
    assert verify(java, "12345678")


def test_signature_survives_the_wire() -> None:
    req = sign(RemotingCommand.request(10, {"topic": "T", "a": "1"}, b"\x00\xffbody", opaque=3), ROCKETMQ)
    again = decode_frame(encode_frame(req))
    assert verify(again, "12345678")
    assert not verify(again, "12345679")


def test_credentials_and_headers_hide_the_secret() -> None:
    assert "12345678" not in repr(ROCKETMQ)
    assert "s3cr3t-value" not in repr(
        CreateAccessConfigRequestHeader(access_key="abcdefgh", secret_key="s3cr3t-value")
    )
    assert "s3cr3t-value" not in repr(PlainAccessConfig(access_key="abcdefgh", secret_key="s3cr3t-value"))


def test_acl_admin_call_and_body_round_trip() -> None:
    config = PlainAccessConfig(
        access_key="newaccount",
        secret_key="newsecret1",
        white_remote_address="10.0.0.*",
        admin=False,
        default_topic_perm="DENY",
        topic_perms=("A=PUB", "B=SUB"),
    )
    call = update_acl_config(config)
    assert call.request.code == RequestCode.UPDATE_AND_CREATE_ACL_CONFIG
    assert call.request.ext_fields["topicPerms"] == "A=PUB,B=SUB"
    assert call.request.ext_fields["admin"] == "false"
    body = ClusterAclConfig(global_white_addrs=("10.*",), plain_access_configs=(config,))
    assert ClusterAclConfig.decode(body.encode()) == body


@given(
    fields=st.dictionaries(st.text(min_size=1, max_size=8), st.text(max_size=12), max_size=6),
    body=st.binary(max_size=64),
    secret=st.text(min_size=1, max_size=16),
    flip=st.integers(min_value=0, max_value=10_000),
)
def test_any_change_breaks_the_signature(fields: dict[str, str], body: bytes, secret: str, flip: int) -> None:
    fields.pop(SIGNATURE, None)
    fields.pop(UNIQUE_KEY_QUERY, None)
    req = sign(
        RemotingCommand.request(10, dict(fields), body), Credentials(access_key="AK", secret_key=secret)
    )
    assert verify(req, secret)
    assert not verify(req, secret + "x")
    sig = base64.b64decode(req.ext_fields[SIGNATURE])
    forged = bytearray(sig)
    forged[flip % len(forged)] ^= 1 << (flip % 8)
    req.ext_fields[SIGNATURE] = base64.b64encode(bytes(forged)).decode()
    assert not verify(req, secret)
    if body:
        req2 = sign(
            RemotingCommand.request(10, dict(fields), body), Credentials(access_key="AK", secret_key=secret)
        )
        req2.body = body[:-1]
        assert not verify(req2, secret)
