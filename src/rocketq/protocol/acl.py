"""RocketMQ 4.9's ACL 1.0 on the wire: request signatures, the ACL admin headers, bodies and calls.

Sans-I/O: functions of a :class:`~rocketq.protocol.command.RemotingCommand` and a secret.

**The signature** (4.9's ``AclClientRPCHook`` / ``AclUtils`` / ``AclSigner``). A signed request
carries three more ext fields: ``AccessKey`` (the account), ``SecurityToken`` (optional, signed
when present, checked by nobody in 4.9) and ``Signature``. The signed content is every ext field
except ``Signature`` - ``AccessKey`` and ``SecurityToken`` included - sorted by key (Java's
``TreeMap``: ``String.compareTo``, UTF-16 code units), their *values* concatenated with no
separator, UTF-8 encoded, followed by the raw body. The signature is
``base64(HMAC-SHA1(key=utf8(secretKey), content))``.

One field is left out of the content as 4.9's *broker* leaves it out: ``_UNIQUE_KEY_QUERY``
(``MixAll.UNIQUE_MSG_QUERY_FLAG``, apache/rocketmq#1409). A 4.9 Java client adds it to a
QUERY_MESSAGE before its hook signs, so :func:`verify` accepts a signature computed with or
without it; :func:`sign` leaves it out, which is what a 4.9 broker checks.

>>> req = RemotingCommand.request(14, {"topic": "T", "queueId": "0"})
>>> _ = sign(req, Credentials(access_key="rocketmq2", secret_key="12345678"))
>>> sorted(req.ext_fields)
['AccessKey', 'Signature', 'queueId', 'topic']
>>> signing_content(req.ext_fields, req.body)
b'rocketmq20T'
>>> verify(req, "12345678"), verify(req, "wrong-secret")
(True, False)

There is no nonce and no timestamp in 4.9's scheme: a signed request captured on the wire can be
sent again and is accepted again (see ``docs/security.md``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from rocketq.errors import RemoteProtocolError
from rocketq.protocol.calls import Call, check
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.fastjson import dumps_bytes, loads
from rocketq.protocol.headers import CommandHeader, header_class

__all__ = [
    "ACCESS_KEY",
    "SECURITY_TOKEN",
    "SIGNATURE",
    "UNIQUE_KEY_QUERY",
    "AclConfigVersion",
    "ClusterAclConfig",
    "CreateAccessConfigRequestHeader",
    "Credentials",
    "DeleteAccessConfigRequestHeader",
    "GetBrokerAclConfigResponseHeader",
    "PlainAccessConfig",
    "UpdateGlobalWhiteAddrsConfigRequestHeader",
    "calc_signature",
    "delete_acl_config",
    "get_broker_acl_info",
    "get_broker_cluster_acl_config",
    "sign",
    "signing_content",
    "update_acl_config",
    "update_global_white_addrs",
    "verify",
]

ACCESS_KEY: Final = "AccessKey"
"""``SessionCredentials.ACCESS_KEY``: the ext field naming the account."""
SIGNATURE: Final = "Signature"
"""``SessionCredentials.SIGNATURE``: the ext field carrying the base64 HMAC-SHA1."""
SECURITY_TOKEN: Final = "SecurityToken"
"""``SessionCredentials.SECURITY_TOKEN``: optional, signed when present, never checked in 4.9."""
UNIQUE_KEY_QUERY: Final = "_UNIQUE_KEY_QUERY"
"""``MixAll.UNIQUE_MSG_QUERY_FLAG``: left out of the content by 4.9's broker."""

_NOT_SIGNED: Final = frozenset({SIGNATURE, UNIQUE_KEY_QUERY})


@dataclass(frozen=True, slots=True, kw_only=True)
class Credentials:
    """An account's keys (``SessionCredentials``); the secret never appears in ``repr``."""

    access_key: str
    secret_key: str = field(repr=False)
    security_token: str | None = None


def _java_key(key: str) -> bytes:
    # Java's String.compareTo compares UTF-16 code units; big-endian UTF-16 bytes sort the same way
    return key.encode("utf-16-be", "surrogatepass")


def _java_sorted(keys: Iterable[str]) -> list[str]:
    ordered = sorted(keys)
    # code points and UTF-16 units order alike unless a key has a character beyond U+FFFF
    if not all(k.isascii() for k in ordered) and any(max(k, default="\0") > "\uffff" for k in ordered):
        ordered.sort(key=_java_key)
    return ordered


def signing_content(
    ext_fields: Mapping[str, str], body: bytes, *, leave_out: Iterable[str] = _NOT_SIGNED
) -> bytes:
    """The bytes 4.9 signs: the values of ``ext_fields`` but those in ``leave_out``, in the order
    of their keys, concatenated and UTF-8 encoded (an unpaired surrogate as ``?``, as Java
    encodes it), then ``body``."""
    skip = leave_out if isinstance(leave_out, frozenset) else frozenset(leave_out)
    text = "".join([ext_fields[k] for k in _java_sorted(ext_fields) if k not in skip])
    try:
        return text.encode() + body
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace") + body


def calc_signature(content: bytes, secret_key: str) -> str:
    """``AclSigner.calSignature``: base64 of HMAC-SHA1 of ``content`` keyed by the UTF-8 secret.

    >>> calc_signature(b"RocketMQ", "12345678")
    'IUc8rrO/0gDch8CjObLQsW2rsiA='
    """
    mac = hmac.new(secret_key.encode("utf-8", "replace"), content, hashlib.sha1).digest()
    return base64.b64encode(mac).decode("ascii")


def sign(request: RemotingCommand, credentials: Credentials) -> RemotingCommand:
    """Add ``AccessKey``, ``SecurityToken`` (if the credentials have one) and ``Signature`` to
    ``request``'s ext fields (an older signature is replaced); returns ``request``.

    Sign last: any ext field or body byte changed afterwards breaks the signature."""
    fields = request.ext_fields
    fields.pop(SIGNATURE, None)
    fields[ACCESS_KEY] = credentials.access_key
    if credentials.security_token is not None:
        fields[SECURITY_TOKEN] = credentials.security_token
    request.write_empty_ext_fields = True
    fields[SIGNATURE] = calc_signature(signing_content(fields, request.body), credentials.secret_key)
    return request


def verify(request: RemotingCommand, secret_key: str) -> bool:
    """Whether ``request``'s ``Signature`` is the one ``secret_key`` gives its content (compared
    in constant time; 4.9's broker content first, then the content a 4.9 Java client signs when it
    adds ``_UNIQUE_KEY_QUERY`` before its hook runs)."""
    fields = request.ext_fields
    given = fields.get(SIGNATURE)
    if given is None:
        return False
    given_bytes = given.encode("utf-8", "replace")
    expected = calc_signature(signing_content(fields, request.body), secret_key)
    if hmac.compare_digest(expected.encode("ascii"), given_bytes):
        return True
    if UNIQUE_KEY_QUERY not in fields:
        return False
    with_flag = calc_signature(signing_content(fields, request.body, leave_out=(SIGNATURE,)), secret_key)
    return hmac.compare_digest(with_flag.encode("ascii"), given_bytes)


# ---------------------------------------------------------------------------------------------
# The ACL admin requests (codes 50-54) and their answers


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class CreateAccessConfigRequestHeader(CommandHeader):
    """UPDATE_AND_CREATE_ACL_CONFIG (50): an account to add or replace. ``topic_perms`` and
    ``group_perms`` are comma-separated ``resource=PERM`` lists."""

    access_key: str
    secret_key: str | None = None
    white_remote_address: str | None = None
    admin: bool = False
    default_topic_perm: str | None = None
    default_group_perm: str | None = None
    topic_perms: str | None = None
    group_perms: str | None = None

    def __repr__(self) -> str:  # the secret stays out of logs
        return f"CreateAccessConfigRequestHeader(access_key={self.access_key!r}, admin={self.admin!r}, ...)"


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteAccessConfigRequestHeader(CommandHeader):
    """DELETE_ACL_CONFIG (51): the account to remove."""

    access_key: str


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateGlobalWhiteAddrsConfigRequestHeader(CommandHeader):
    """UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53): the comma-separated global white list, and the ACL
    file to write it to (rocketq's broker has one file and ignores the path but for a check)."""

    global_white_addrs: str
    acl_file_full_path: str


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class GetBrokerAclConfigResponseHeader(CommandHeader):
    """Answer to GET_BROKER_CLUSTER_ACL_INFO (52): the file's data version as JSON."""

    version: str
    all_acl_file_version: str | None = None
    broker_name: str
    broker_addr: str
    cluster_name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PlainAccessConfig:
    """One account as 4.9's ``PlainAccessConfig`` carries it (the ACL file's and the ACL bodies' form)."""

    access_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)
    white_remote_address: str | None = None
    admin: bool = False
    default_topic_perm: str | None = None
    default_group_perm: str | None = None
    topic_perms: tuple[str, ...] | None = None
    group_perms: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        """fastjson's form: camel-case keys, ``None`` left out."""
        raw: dict[str, Any] = {
            "accessKey": self.access_key,
            "admin": self.admin,
            "defaultGroupPerm": self.default_group_perm,
            "defaultTopicPerm": self.default_topic_perm,
            "groupPerms": None if self.group_perms is None else list(self.group_perms),
            "secretKey": self.secret_key,
            "topicPerms": None if self.topic_perms is None else list(self.topic_perms),
            "whiteRemoteAddress": self.white_remote_address,
        }
        return {k: v for k, v in raw.items() if v is not None}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> PlainAccessConfig:
        def text(key: str) -> str | None:
            value = raw.get(key)
            return None if value is None else str(value)

        def texts(key: str) -> tuple[str, ...] | None:
            value = raw.get(key)
            if value is None:
                return None
            if not isinstance(value, list | tuple):
                raise RemoteProtocolError(f"PlainAccessConfig.{key} is not a list")
            return tuple(str(v) for v in value)

        return cls(
            access_key=text("accessKey"),
            secret_key=text("secretKey"),
            white_remote_address=text("whiteRemoteAddress"),
            admin=raw.get("admin") is True or str(raw.get("admin")).lower() == "true",
            default_topic_perm=text("defaultTopicPerm"),
            default_group_perm=text("defaultGroupPerm"),
            topic_perms=texts("topicPerms"),
            group_perms=texts("groupPerms"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterAclConfig:
    """``GetBrokerClusterAclConfigResponseBody``: the global white list and every account."""

    global_white_addrs: tuple[str, ...] = ()
    plain_access_configs: tuple[PlainAccessConfig, ...] = ()

    def encode(self) -> bytes:
        return dumps_bytes(
            {
                "globalWhiteAddrs": list(self.global_white_addrs),
                "plainAccessConfigs": [c.to_json() for c in self.plain_access_configs],
            }
        )

    @classmethod
    def decode(cls, body: bytes) -> ClusterAclConfig:
        raw = loads(body)
        if not isinstance(raw, Mapping):
            raise RemoteProtocolError("GetBrokerClusterAclConfigResponseBody is not a JSON object")
        whites = raw.get("globalWhiteAddrs") or []
        configs = raw.get("plainAccessConfigs") or []
        if not isinstance(whites, list | tuple) or not isinstance(configs, list | tuple):
            raise RemoteProtocolError("GetBrokerClusterAclConfigResponseBody has a field that is not a list")
        return cls(
            global_white_addrs=tuple(str(w) for w in whites),
            plain_access_configs=tuple(
                PlainAccessConfig.from_json(c) for c in configs if isinstance(c, Mapping)
            ),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class AclConfigVersion:
    """The answer to GET_BROKER_CLUSTER_ACL_INFO."""

    version: str
    all_acl_file_version: str | None
    broker_name: str
    broker_addr: str
    cluster_name: str


def _request(code: int, header: CommandHeader | None = None) -> RemotingCommand:
    return RemotingCommand.request(code, header.to_ext_fields() if header is not None else {})


def _perms(perms: Sequence[str] | None) -> str | None:
    return None if perms is None else ",".join(perms)


def update_acl_config(config: PlainAccessConfig) -> Call[None]:
    """UPDATE_AND_CREATE_ACL_CONFIG: add ``config``'s account, or replace the one of that key
    (``mqadmin updateAclConfig``)."""
    if not config.access_key:
        raise ValueError("an ACL account needs an access key")
    header = CreateAccessConfigRequestHeader(
        access_key=config.access_key,
        secret_key=config.secret_key,
        white_remote_address=config.white_remote_address,
        admin=config.admin,
        default_topic_perm=config.default_topic_perm,
        default_group_perm=config.default_group_perm,
        topic_perms=_perms(config.topic_perms),
        group_perms=_perms(config.group_perms),
    )
    return Call(
        _request(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, header), _none, f"ACL account {config.access_key}"
    )


def delete_acl_config(access_key: str) -> Call[None]:
    """DELETE_ACL_CONFIG: remove the account ``access_key`` (``mqadmin deleteAccessConfig``)."""
    header = DeleteAccessConfigRequestHeader(access_key=access_key)
    return Call(
        _request(RequestCode.DELETE_ACL_CONFIG, header), _none, f"deletion of ACL account {access_key}"
    )


def update_global_white_addrs(addrs: Sequence[str], acl_file: str = "") -> Call[None]:
    """UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: replace the global white list (``mqadmin
    updateGlobalWhiteAddr``)."""
    header = UpdateGlobalWhiteAddrsConfigRequestHeader(
        global_white_addrs=",".join(addrs), acl_file_full_path=acl_file
    )
    return Call(
        _request(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, header), _none, "ACL global white list"
    )


def _parse_version(response: RemotingCommand) -> AclConfigVersion:
    h = GetBrokerAclConfigResponseHeader.from_ext_fields(check(response).ext_fields)
    return AclConfigVersion(
        version=h.version,
        all_acl_file_version=h.all_acl_file_version,
        broker_name=h.broker_name,
        broker_addr=h.broker_addr,
        cluster_name=h.cluster_name,
    )


def get_broker_acl_info() -> Call[AclConfigVersion]:
    """GET_BROKER_CLUSTER_ACL_INFO: the version of the broker's ACL file
    (``mqadmin clusterAclConfigVersion``)."""
    return Call(_request(RequestCode.GET_BROKER_CLUSTER_ACL_INFO), _parse_version, "ACL config version")


def _parse_cluster_config(response: RemotingCommand) -> ClusterAclConfig:
    return ClusterAclConfig.decode(check(response).body)


def get_broker_cluster_acl_config() -> Call[ClusterAclConfig]:
    """GET_BROKER_CLUSTER_ACL_CONFIG: the white list and accounts (``mqadmin getAccessConfigSubCommand``)."""
    return Call(_request(RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG), _parse_cluster_config, "ACL config")


def _none(response: RemotingCommand) -> None:
    check(response)
