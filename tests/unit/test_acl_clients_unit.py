"""The client side of RocketMQ 4.9's ACL without a server: how a refusal is read, where the signing
hook runs, and that the secret stays out of every ``repr``."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.client.config import ClientConfig, credentials_of
from rocketq.client.instance import ClientInstance
from rocketq.errors import (
    ACL_EXCEPTION,
    AccessDeniedError,
    BrokerError,
    BrokerSystemError,
    ConfigError,
    NoPermissionError,
)
from rocketq.protocol.acl import Credentials, signing_content, verify
from rocketq.protocol.command import RemotingCommand
from rocketq.remoting import RemotingClient, RemotingClientConfig, RPCHook

TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="()"), max_size=60)
FRAMES = st.sampled_from(
    [
        "",
        ", org.apache.rocketmq.acl.plain.PlainPermissionManager.checkPerm(PlainPermissionManager.java:610)",
        ", org.apache.rocketmq.acl.plain.PlainAccessValidator.parse(PlainAccessValidator.java:134)",
    ]
)


@given(what=TEXT, reason=TEXT, frame=FRAMES)
def test_an_acl_remark_becomes_one_line_naming_what_and_why(what: str, reason: str, frame: str) -> None:
    prefix = f"{what}: " if what.strip(" :") else ""
    error = BrokerError.for_code(1, f"{prefix}{ACL_EXCEPTION}: {reason}{frame}")
    assert isinstance(error, AccessDeniedError)
    assert isinstance(error, NoPermissionError)  # what callers catch for "not allowed"
    assert error.code == 1
    assert error.reason == (reason.strip() or "no reason given")
    assert ACL_EXCEPTION not in str(error)
    assert "java:" not in str(error).lower() or "java:" in reason.lower()
    assert str(error).endswith(f"refused by the broker's ACL: {error.reason}")
    if not prefix:
        error.add_note("create topic T at 127.0.0.1:10911")  # the clients name the call so
        assert str(error).startswith("create topic T at 127.0.0.1:10911: refused by the broker's ACL")


def test_other_refusals_keep_their_classes() -> None:
    assert type(BrokerError.for_code(1, "store error")) is BrokerSystemError
    assert type(BrokerError.for_code(16, "the topic[T] sending message is forbidden")) is NoPermissionError
    assert type(BrokerError.for_code(1, None)) is BrokerSystemError


class _AddsAField(RPCHook):
    def before_request(self, addr: str, request: RemotingCommand) -> None:
        request.ext_fields["traceId"] = "t-1"


@given(
    access_key=st.text(min_size=1, max_size=20),
    secret=st.text(min_size=1, max_size=20),
    fields=st.dictionaries(st.text(min_size=1, max_size=8), st.text(max_size=12), max_size=5),
    body=st.binary(max_size=64),
)
def test_the_signing_hook_runs_last_so_what_other_hooks_add_is_signed(
    access_key: str, secret: str, fields: dict[str, str], body: bytes
) -> None:
    creds = Credentials(access_key=access_key, secret_key=secret)
    client = RemotingClient(config=RemotingClientConfig(credentials=creds))
    client.add_hook(_AddsAField())
    assert type(client.handlers.hooks[-1]).__name__ == "AclSigningHook"
    request = RemotingCommand.request(10, dict(fields), body)
    for hook in client.handlers.hooks:
        hook.before_request("127.0.0.1:10911", request)
    assert request.ext_fields["traceId"] == "t-1"
    assert request.ext_fields["AccessKey"] == access_key
    assert verify(request, secret)
    assert b"t-1" in signing_content(request.ext_fields, request.body)
    assert "secret_key" not in repr(client.config)


@given(access_key=st.text("abcdefgh", min_size=7, max_size=12), secret=st.text("QXZJ", min_size=7))
def test_no_repr_shows_the_secret(access_key: str, secret: str) -> None:
    config = ClientConfig(namesrv="127.0.0.1:9876", access_key=access_key, secret_key=secret)
    assert config.credentials == Credentials(access_key=access_key, secret_key=secret)
    for shown in (config, config.credentials, RemotingClientConfig(credentials=config.credentials)):
        assert secret not in repr(shown)
        assert access_key in repr(shown)


@pytest.mark.parametrize(("access_key", "secret_key"), [("ak", None), (None, "sk"), ("", "sk"), ("ak", "")])
def test_half_an_account_is_a_config_error(access_key: str | None, secret_key: str | None) -> None:
    with pytest.raises(ConfigError, match="access_key and secret_key go together"):
        ClientConfig(access_key=access_key, secret_key=secret_key)
    with pytest.raises(ConfigError, match="access_key and secret_key go together"):
        credentials_of(access_key, secret_key)
    assert credentials_of(None, None) is None


def test_one_client_id_signs_for_one_account() -> None:
    """Producers and consumers of one client id share its connections, and so its account."""
    base = ClientConfig(namesrv="127.0.0.1:1", client_ip="127.0.0.1", instance_name="acl-unit")
    first = ClientInstance.acquire(_keyed(base, "a1", "s1"))
    try:
        with pytest.raises(ConfigError, match="in use with another ACL account"):
            ClientInstance.acquire(_keyed(base, "a2", "s2"))
        with pytest.raises(ConfigError, match="in use with another ACL account"):
            ClientInstance.acquire(base)
        same = ClientInstance.acquire(_keyed(base, "a1", "s1"))
        assert same is first
        same.release()
    finally:
        first.release()


def _keyed(config: ClientConfig, access_key: str, secret_key: str) -> ClientConfig:
    return replace(config, access_key=access_key, secret_key=secret_key)
