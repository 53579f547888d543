"""RocketMQ 4.9's ACL 1.0 in the broker: ``plain_acl.yml``, white lists, permissions, the check.

Pure state plus the file: :class:`AclManager` holds the parsed file, answers :meth:`AclManager.check`
for each request (``now`` passed in: the file is looked at again, by its ``stat``, at most every
``check_interval`` seconds, and re-read when it changed), and applies the ACL admin requests by
rewriting the file. The broker registers :meth:`AclManager.check` as its remoting server's request
guard (:meth:`~rocketq.remoting.RemotingServer.set_request_guard`); nothing here touches sockets.

The rules are 4.9.4's ``PlainAccessValidator`` and ``PlainPermissionManager``, in this order:

0. the resources the request touches are read first (:func:`needed_resources`); one that cannot
   be read (a heartbeat without a body, an offset commit without its group) is refused;
1. a request from an address on the **global white list** passes, whatever it is;
2. with no ``AccessKey`` it is refused (``No accessKey is configured``), an unknown one too
   (``No acl config for KEY``);
3. from an address on the **account's** ``whiteRemoteAddress`` it passes, unsigned;
4. else its ``Signature`` must be the account's (``Check signature failed for accessKey=KEY``);
5. the **admin codes** (4.9's five, plus - ours - the five ACL admin codes) need ``admin: true``;
6. every resource the request touches (``needed_resources``) needs its permission, from the
   account's ``topicPerms`` / ``groupPerms`` or else its ``defaultTopicPerm`` /
   ``defaultGroupPerm`` (``DENY`` when unset); ``DENY`` beats everything; an admin account without
   any resource permission passes. A PUB of ``RMQ_SYS_TRACE_TOPIC`` passes unchecked.

A refusal is :class:`AclRefused`; the broker answers it as 4.9's remoting server answers the
``AclException`` its hook throws: ``SYSTEM_ERROR`` with ``exceptionSimpleDesc`` as the remark
(the exception and the Java frame that threw it, with 4.9.4's line numbers).
"""

from __future__ import annotations

import ipaddress
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import yaml

from rocketq.errors import BrokerError, ConfigError, RemoteProtocolError
from rocketq.protocol.acl import (
    ACCESS_KEY,
    SIGNATURE,
    PlainAccessConfig,
    verify,
)
from rocketq.protocol.bodies import HeartbeatData
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import (
    GetConsumerListByGroupRequestHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketq.protocol.javahash import java_bucket_order
from rocketq.protocol.topics import RMQ_SYS_TRACE_TOPIC, retry_topic

if TYPE_CHECKING:
    from rocketq.remoting import RemotingConnection
    from rocketq.remoting.guard import PeerLog

__all__ = [
    "ACL_ADMIN_CODES",
    "ADMIN_CODES",
    "ANY",
    "DENY",
    "PUB",
    "SUB",
    "Account",
    "AclAdminError",
    "AclManager",
    "AclRefused",
    "AclRules",
    "AddressPattern",
    "check_permission",
    "needed_resources",
    "parse_acl",
    "parse_address_pattern",
    "parse_perm",
    "request_guard",
]

log = logging.getLogger(__name__)

DENY: Final = 1
ANY: Final = 1 << 1
PUB: Final = 1 << 2
SUB: Final = 1 << 3

ADMIN_CODES: Final = frozenset(
    {
        RequestCode.UPDATE_AND_CREATE_TOPIC,
        RequestCode.UPDATE_BROKER_CONFIG,
        RequestCode.DELETE_TOPIC_IN_BROKER,
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
        RequestCode.DELETE_SUBSCRIPTIONGROUP,
    }
)
"""4.9.4's ``Permission.ADMIN_CODE``."""

ACL_ADMIN_CODES: Final = frozenset(
    {
        RequestCode.UPDATE_AND_CREATE_ACL_CONFIG,
        RequestCode.DELETE_ACL_CONFIG,
        RequestCode.GET_BROKER_CLUSTER_ACL_INFO,
        RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
        RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG,
    }
)
"""Ours: the ACL admin codes need an admin account too. 4.9.4 lets any signed account rewrite the
ACL file and read every secret key with them."""

_RETRY_PREFIX: Final = "%RETRY%"
_MIN_KEY_LENGTH: Final = 6  # AclConstants.ACCESS_KEY_MIN_LENGTH / SECRET_KEY_MIN_LENGTH: longer than 6

# exceptionSimpleDesc's parts: the exception class and the 4.9.4 frames that throw each refusal
_EXC: Final = "org.apache.rocketmq.acl.common.AclException"
_MANAGER: Final = "org.apache.rocketmq.acl.plain.PlainPermissionManager"
_VALIDATOR: Final = "org.apache.rocketmq.acl.plain.PlainAccessValidator"
_AT_PARSE: Final = f"{_VALIDATOR}.parse(PlainAccessValidator.java:134)"
_AT_NO_KEY: Final = f"{_MANAGER}.validate(PlainPermissionManager.java:663)"
_AT_UNKNOWN: Final = f"{_MANAGER}.validate(PlainPermissionManager.java:667)"
_AT_SIGNATURE: Final = f"{_MANAGER}.validate(PlainPermissionManager.java:683)"
_AT_ADMIN: Final = f"{_MANAGER}.checkPerm(PlainPermissionManager.java:580)"
_AT_DEFAULT_PERM: Final = f"{_MANAGER}.checkPerm(PlainPermissionManager.java:605)"
_AT_PERM: Final = f"{_MANAGER}.checkPerm(PlainPermissionManager.java:610)"


class AclRefused(Exception):
    """A request the ACL refuses. ``message`` is 4.9's ``AclException`` message, ``remark`` the
    remark 4.9's broker answers with (``SYSTEM_ERROR``). Neither holds a secret."""

    def __init__(self, message: str | None, where: str) -> None:
        self.message = message
        text = _EXC if message is None else f"{_EXC}: {message}"
        self.remark = f"{text}, {where}"
        super().__init__(self.remark)


class AclAdminError(Exception):
    """An ACL admin request that cannot be applied (its text is the answer's remark)."""


# --------------------------------------------------------------------------------------- permissions


def parse_perm(text: object) -> int:
    """``Permission.parsePermFromString``: ``PUB``, ``SUB``, ``PUB|SUB``/``SUB|PUB``; anything
    else (``DENY``, unset, unknown) is DENY."""
    if text is None:
        return DENY
    return {"PUB": PUB, "SUB": SUB, "PUB|SUB": PUB | SUB, "SUB|PUB": PUB | SUB}.get(str(text).strip(), DENY)


def check_permission(needed: int, owned: int) -> bool:
    """``Permission.checkPermission``: DENY owns nothing; ANY needs PUB or SUB; else a shared bit."""
    if owned & DENY:
        return False
    if needed & ANY:
        return bool(owned & (PUB | SUB))
    return bool(needed & owned)


def _check_resource_perms(resources: Iterable[str] | None) -> None:
    """``Permission.checkResourcePerms``: each ``resource=PERM`` with a known permission."""
    for resource in resources or ():
        items = [p for p in resource.split("=") if p]
        if len(items) != 2:
            raise AclAdminError(
                f"Parse Resource format error for {resource}.\n"
                "The expected resource format is 'Res=Perm'. For example: topicA=SUB"
            )
        if items[1].strip() != "DENY" and parse_perm(items[1].strip()) == DENY:
            raise AclAdminError(
                f"Parse resource permission error for {resource}.\n"
                "The expected permissions are 'SUB' or 'PUB' or 'SUB|PUB' or 'PUB|SUB'."
            )


# ----------------------------------------------------------------------------------- remote addresses


def _split(text: str, sep: str) -> list[str]:
    # commons-lang StringUtils.split: empty tokens dropped
    return [t for t in text.split(sep) if t]


def _host_of(remote: str) -> str:
    """The host part of ``host:port`` / ``[v6]:port``, as 4.9 cuts the channel's address."""
    host = remote.rsplit(":", 1)[0] if ":" in remote else remote
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class AddressPattern:
    """One white-list entry as 4.9's ``RemoteAddressStrategyFactory`` reads it: ``*`` (everyone),
    a plain address, ``{a,b}`` or ``a,b`` lists, and IPv4 ranges (``192.168.0.*``,
    ``192.168.1-10.*``, ``10.0.0.1-100``). A blank entry matches nobody.

    >>> p = parse_address_pattern("192.168.1-3.*")
    >>> p.matches("192.168.2.40"), p.matches("192.168.4.1"), p.matches("10.0.0.1")
    (True, False, False)
    >>> parse_address_pattern("10.1.1.{1,2}").matches("10.1.1.2")
    True
    """

    text: str
    kind: str  # "blank", "any", "set", "range"
    addresses: frozenset[str] = frozenset()
    head: str = ""
    index: int = 0
    start: int = 0
    end: int = 0

    def matches(self, host: str) -> bool:
        if self.kind == "any":
            return True
        if self.kind == "set":
            ip = _ip(host)
            return ip is not None and ip.compressed in self.addresses
        if self.kind == "range":
            ip = _ip(host)
            if not isinstance(ip, ipaddress.IPv4Address):
                return False
            text = str(ip)
            if not text.startswith(self.head):
                return False
            value = int(text.split(".")[self.index])
            return self.start <= value <= self.end
        return False


def _addresses(texts: Iterable[str], source: str) -> frozenset[str]:
    out = set()
    for text in texts:
        ip = _ip(text)
        if ip is None:
            raise ConfigError(f"white address {source!r}: {text.strip()!r} is not an IP address")
        out.add(ip.compressed)
    return frozenset(out)


def parse_address_pattern(text: str | None) -> AddressPattern:
    """Parse one white-list entry (raises :class:`ConfigError` as 4.9 throws ``AclException``)."""
    if text is None or not str(text).strip():
        return AddressPattern("", "blank")
    text = str(text).strip()
    if text in ("*", "*.*.*.*", "*:*:*:*:*:*:*:*"):
        return AddressPattern(text, "any")
    if text.endswith("}"):
        sep = ":" if ":" in text else "."
        parts = _split(text, sep)
        if (sep == "." and len(parts) < 4) or not parts[-1].startswith("{"):
            raise ConfigError(f"white address {text!r}: a {{a,b}} list must be the last part of the address")
        prefix = text[: text.index("{")]
        return AddressPattern(
            text, "set", _addresses((prefix + p for p in _split(parts[-1][1:-1], ",")), text)
        )
    if "," in text:
        return AddressPattern(text, "set", _addresses(_split(text, ","), text))
    if "*" in text or "-" in text:
        return _range(text)
    return AddressPattern(text, "set", _addresses([text], text))


def _range(text: str) -> AddressPattern:
    if ":" in text:
        raise ConfigError(
            f"white address {text!r}: IPv6 ranges are not supported by rocketq (list the addresses)"
        )
    parts = [p.strip() for p in _split(text, ".")]
    if len(parts) != 4:
        raise ConfigError(f"white address {text!r}: an IPv4 range has four parts")
    for index in (1, 2, 3):
        value = parts[index]
        if value == "*":
            start, end = 0, 255
        elif "-" in value:
            bounds = _split(value, "-")
            if value.startswith("-") or len(bounds) != 2 or not all(b.isdigit() for b in bounds):
                raise ConfigError(f"white address {text!r}: bad range {value!r}")
            start, end = int(bounds[0]), int(bounds[1])
            if not (0 <= start <= end <= 255):
                raise ConfigError(f"white address {text!r}: range {value!r} is not within 0-255")
        else:
            continue
        for fixed in parts[:index]:
            if not fixed.isdigit() or not 0 <= int(fixed) <= 255:
                raise ConfigError(f"white address {text!r}: {fixed!r} is not a number 0-255")
        return AddressPattern(
            text, "range", head="".join(p + "." for p in parts[:index]), index=index, start=start, end=end
        )
    raise ConfigError(f"white address {text!r}: no '*' or 'a-b' range in its last three parts")


# ---------------------------------------------------------------------------------------- the file


@dataclass(frozen=True, slots=True)
class Account:
    """One account of the file, parsed (``PlainAccessResource`` as ``buildPlainAccessResource``
    makes it). ``perms`` holds topics by name and groups by their retry topic, as 4.9 does."""

    access_key: str
    secret_key: str = field(repr=False)
    white: AddressPattern
    admin: bool
    default_topic_perm: int
    default_group_perm: int
    perms: Mapping[str, int] | None


@dataclass(frozen=True, slots=True)
class AclRules:
    """A parsed ``plain_acl.yml``: what :meth:`AclManager.check` decides by."""

    global_white: tuple[AddressPattern, ...] = ()
    accounts: Mapping[str, Account] = field(default_factory=dict)
    counter: int = 0
    timestamp: int = 0


def _text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _texts(value: object, what: str) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise ConfigError(f"{what} must be a list")
    return [str(v) for v in value]


def _check_keys(access_key: str | None, secret_key: str | None) -> None:
    if (
        access_key is None
        or secret_key is None
        or len(access_key) <= _MIN_KEY_LENGTH
        or len(secret_key) <= _MIN_KEY_LENGTH
    ):
        # 4.9 puts the secret key into this message; rocketq never does
        raise ConfigError(
            f"The accessKey={access_key} and secretKey cannot be null and length should longer than 6"
        )


def _account(raw: Mapping[str, Any]) -> Account:
    access_key, secret_key = _text(raw.get("accessKey")), _text(raw.get("secretKey"))
    _check_keys(access_key, secret_key)
    assert access_key is not None
    assert secret_key is not None
    perms: dict[str, int] = {}
    for key, is_topic in (("groupPerms", False), ("topicPerms", True)):
        for resource in _texts(raw.get(key), f"{key} of account {access_key}") or ():
            items = [p for p in resource.split("=") if p]
            if len(items) != 2:
                raise ConfigError(
                    f"Parse resource permission failed for {'topic' if is_topic else 'group'}:{resource}"
                )
            name = items[0].strip()
            perms[name if is_topic else _RETRY_PREFIX + name] = parse_perm(items[1])
    admin = raw.get("admin")
    return Account(
        access_key=access_key,
        secret_key=secret_key,
        white=parse_address_pattern(_text(raw.get("whiteRemoteAddress"))),
        admin=admin is True or str(admin).lower() == "true",
        default_topic_perm=parse_perm(raw.get("defaultTopicPerm")),
        default_group_perm=parse_perm(raw.get("defaultGroupPerm")),
        perms=perms or None,
    )


def _load_yaml(text: str, source: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ConfigError(f"{source} is not valid YAML{where}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping")
    return data


def parse_acl(data: Mapping[str, Any], source: str = "plain_acl.yml") -> AclRules:
    """The rules of an ACL file's parsed YAML (raises :class:`ConfigError` naming what is wrong;
    no secret is ever in the message). An access key listed twice: the first wins, as in 4.9."""
    whites = _texts(data.get("globalWhiteRemoteAddresses"), f"{source}: globalWhiteRemoteAddresses") or []
    accounts: dict[str, Account] = {}
    raw_accounts = data.get("accounts") or []
    if not isinstance(raw_accounts, list):
        raise ConfigError(f"{source}: accounts must be a list")
    for raw in raw_accounts:
        if not isinstance(raw, dict):
            raise ConfigError(f"{source}: each account must be a mapping")
        try:
            account = _account(raw)
        except ConfigError as exc:
            raise ConfigError(f"{source}: {exc}") from None
        accounts.setdefault(account.access_key, account)
    counter = timestamp = 0
    versions = data.get("dataVersion")
    if isinstance(versions, list) and versions and isinstance(versions[0], dict):
        try:
            counter = int(versions[0].get("counter", 0))
            timestamp = int(versions[0].get("timestamp", 0))
        except (TypeError, ValueError):
            raise ConfigError(f"{source}: dataVersion is not numbers") from None
    return AclRules(
        global_white=tuple(parse_address_pattern(w) for w in whites),
        accounts=accounts,
        counter=counter,
        timestamp=timestamp,
    )


# ------------------------------------------------------------------------------- what a request needs


def _retry(group: str | None) -> str | None:
    return None if group is None else retry_topic(group)


def needed_resources(request: RemotingCommand) -> dict[str, int]:
    """The resources ``request`` touches and the permission each needs (``PlainAccessValidator.parse``),
    in the order 4.9's ``HashMap`` checks them. Groups appear as their retry topics. Raises
    :class:`AclRefused` when the request cannot be read, as 4.9 does."""
    needs = _NEEDS.get(request.code)
    if needs is None:
        return {}
    try:
        pairs = needs(request)
    except RemoteProtocolError as exc:
        raise AclRefused(str(exc), _AT_PARSE) from None
    found = {resource: perm for resource, perm in pairs if resource is not None}
    if len(found) < 2:
        return found
    return {
        k: found[k] for k in java_bucket_order(list(found), 16 if len(found) <= 12 else _capacity(len(found)))
    }


_Needs = list[tuple[str | None, int]]
"""(resource, permission) pairs in the order the request names them (a later one of the same
resource wins, as a ``put`` in 4.9's map); ``None`` where the request names none."""


def _send_needs(request: RemotingCommand) -> _Needs:
    """A send needs PUB on its topic; a send to a retry topic (a consumer's) SUB on its group."""
    ext = request.ext_fields
    v1 = request.code == RequestCode.SEND_MESSAGE
    topic = ext.get("topic" if v1 else "b")
    if topic is not None and topic.startswith(_RETRY_PREFIX):
        return [(_retry(ext.get("group" if v1 else "a")), SUB)]
    return [(topic, PUB)]


def _heartbeat_needs(request: RemotingCommand) -> _Needs:
    """A heartbeat needs SUB on each consumer's group and on each topic it subscribes to."""
    if not request.body:
        raise AclRefused(None, _AT_PARSE)  # 4.9: decoding a null body throws a bare NPE
    found: _Needs = []
    for consumer in HeartbeatData.decode(request.body).consumer_data_set:
        found.append((_retry(consumer.group_name), SUB))
        found += [(sub.topic, SUB) for sub in consumer.subscription_data_set]
    return found


def _offset_update_needs(request: RemotingCommand) -> _Needs:
    header = UpdateConsumerOffsetRequestHeader.from_ext_fields(request.ext_fields)
    return [(_retry(header.consumer_group), SUB), (header.topic, SUB)]


_NEEDS: Final[dict[int, Callable[[RemotingCommand], _Needs]]] = {
    RequestCode.SEND_MESSAGE: _send_needs,
    RequestCode.SEND_MESSAGE_V2: _send_needs,
    RequestCode.CONSUMER_SEND_MSG_BACK: lambda r: [(_retry(r.ext_fields.get("group")), SUB)],
    RequestCode.PULL_MESSAGE: lambda r: [
        (r.ext_fields.get("topic"), SUB),
        (_retry(r.ext_fields.get("consumerGroup")), SUB),
    ],
    RequestCode.QUERY_MESSAGE: lambda r: [(r.ext_fields.get("topic"), SUB)],
    RequestCode.HEART_BEAT: _heartbeat_needs,
    RequestCode.UNREGISTER_CLIENT: lambda r: [
        (_retry(UnregisterClientRequestHeader.from_ext_fields(r.ext_fields).consumer_group), SUB)
    ],
    RequestCode.GET_CONSUMER_LIST_BY_GROUP: lambda r: [
        (_retry(GetConsumerListByGroupRequestHeader.from_ext_fields(r.ext_fields).consumer_group), SUB)
    ],
    RequestCode.UPDATE_CONSUMER_OFFSET: _offset_update_needs,
}
"""What each request code that needs a permission touches (other codes need none here)."""


def _capacity(size: int) -> int:
    capacity = 16
    while size > capacity * 3 // 4:
        capacity *= 2
    return capacity


def _print(resource: str) -> str:
    if resource.startswith(_RETRY_PREFIX):
        return f"group:{resource[len(_RETRY_PREFIX) :]}"
    return f"topic:{resource}"


def decide(rules: AclRules, request: RemotingCommand, host: str) -> Account | None:
    """Pass ``request`` from ``host`` under ``rules`` (returning the account, ``None`` for a
    globally white-listed address) or raise :class:`AclRefused`; see the module docstring."""
    ext = request.ext_fields
    # 4.9 reads the request's resources first (a request it cannot read is refused even from a
    # white-listed address), unless the request has no ext fields at all
    needed = needed_resources(request) if ext or request.write_empty_ext_fields else {}
    for pattern in rules.global_white:
        if pattern.matches(host):
            return None
    access_key = ext.get(ACCESS_KEY)
    if access_key is None:
        raise AclRefused("No accessKey is configured", _AT_NO_KEY)
    account = rules.accounts.get(access_key)
    if account is None:
        raise AclRefused(f"No acl config for {access_key}", _AT_UNKNOWN)
    if account.white.matches(host):
        return account
    if SIGNATURE not in ext or not verify(request, account.secret_key):
        raise AclRefused(f"Check signature failed for accessKey={access_key}", _AT_SIGNATURE)
    if needed.get(RMQ_SYS_TRACE_TOPIC) == PUB:
        return account
    code = request.code
    if (code in ADMIN_CODES or code in ACL_ADMIN_CODES) and not account.admin:
        raise AclRefused(
            f"Need admin permission for request code={code}, but accessKey={access_key} is not", _AT_ADMIN
        )
    owned = account.perms
    if not needed or (owned is None and account.admin):
        return account
    for resource, perm in needed.items():
        if owned is None or resource not in owned:
            is_group = resource.startswith(_RETRY_PREFIX)
            default = account.default_group_perm if is_group else account.default_topic_perm
            if not check_permission(perm, default):
                raise AclRefused(f"No default permission for {_print(resource)}", _AT_DEFAULT_PERM)
        elif not check_permission(perm, owned[resource]):
            raise AclRefused(f"No default permission for {_print(resource)}", _AT_PERM)
    return account


# ------------------------------------------------------------------------------------- the manager


_Stamp = tuple[int, int, int]


def _stamp(path: Path) -> _Stamp | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class AclManager:
    """The ACL of one broker: its file, the rules parsed from it, the check and the admin changes.

    ``check_interval``: the file's ``stat`` is looked at again at most this often (RocketMQ's
    ``AclFileWatchService`` looks every 5 s); a file that changed and parses replaces the rules,
    one that does not parse is logged and the rules stay. ``wall_ms`` stamps the file's
    ``dataVersion`` when the broker rewrites it.
    """

    def __init__(
        self, path: Path, *, check_interval: float = 5.0, wall_ms: Callable[[], int] | None = None
    ) -> None:
        self.path = Path(path)
        self.check_interval = check_interval
        self._wall_ms = wall_ms
        self._checked_at: float | None = None
        self._stamp: _Stamp | None = None
        self._raw: dict[str, Any] = {}
        self.rules = AclRules()
        self.reloads = 0
        self.load()

    def load(self) -> None:
        """Read and parse the file now (raises :class:`ConfigError` when it is missing or bad)."""
        stamp = _stamp(self.path)
        try:
            text = self.path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read the ACL file {self.path}: {exc.strerror or exc}") from None
        raw = _load_yaml(text, str(self.path))
        rules = parse_acl(raw, str(self.path))
        self._raw, self.rules, self._stamp = raw, rules, stamp

    def refresh(self, now: float) -> bool:
        """Re-read the file if ``check_interval`` has passed since the last look and it changed;
        returns whether new rules were taken."""
        if self._checked_at is not None and now - self._checked_at < self.check_interval:
            return False
        self._checked_at = now
        stamp = _stamp(self.path)
        if stamp is None or stamp == self._stamp:
            return False
        try:
            self.load()
        except ConfigError as exc:
            self._stamp = stamp  # warn once per change, not on every look
            log.warning("ACL file changed but is not usable, keeping the rules in force: %s", exc)
            return False
        self.reloads += 1
        log.info("ACL file %s reloaded: %d accounts", self.path, len(self.rules.accounts))
        return True

    def check(self, request: RemotingCommand, remote_address: str, now: float) -> Account | None:
        """:func:`decide` under the current rules (refreshed first when due)."""
        self.refresh(now)
        return decide(self.rules, request, _host_of(remote_address))

    # ---------------------------------------------------------------- the ACL admin requests

    @property
    def version_json(self) -> str:
        """The file's ``DataVersion`` as fastjson writes it (GET_BROKER_CLUSTER_ACL_INFO's ``version``)."""
        return json.dumps(
            {"counter": self.rules.counter, "timestamp": self.rules.timestamp}, separators=(",", ":")
        )

    @property
    def all_versions_json(self) -> str:
        """``allAclFileVersion``: the version by file path."""
        return json.dumps(
            {str(self.path): {"counter": self.rules.counter, "timestamp": self.rules.timestamp}},
            separators=(",", ":"),
        )

    def cluster_config(self) -> tuple[list[str], list[PlainAccessConfig]]:
        """GET_BROKER_CLUSTER_ACL_CONFIG: the global white list and the accounts as in the file."""
        whites = [str(w) for w in self._raw.get("globalWhiteRemoteAddresses") or []]
        seen: set[str] = set()
        configs: list[PlainAccessConfig] = []
        for raw in self._raw.get("accounts") or []:
            if not isinstance(raw, dict):
                continue
            config = PlainAccessConfig.from_json({k: v for k, v in raw.items() if v is not None})
            if config.access_key in seen:
                continue
            seen.add(config.access_key or "")
            configs.append(config)
        return whites, configs

    def update_account(self, config: PlainAccessConfig) -> None:
        """UPDATE_AND_CREATE_ACL_CONFIG: replace the account of ``config.access_key`` (the fields
        ``config`` sets) or append a new one; raises :class:`AclAdminError`."""
        try:
            _check_keys(config.access_key, config.secret_key)
        except ConfigError as exc:
            raise AclAdminError(str(exc)) from None
        _check_resource_perms(config.topic_perms)
        _check_resource_perms(config.group_perms)
        raw = self._fresh_raw()
        accounts = raw.get("accounts")
        if not isinstance(accounts, list):
            accounts = raw["accounts"] = []
        entry = next(
            (a for a in accounts if isinstance(a, dict) and _text(a.get("accessKey")) == config.access_key),
            None,
        )
        if entry is None:
            entry = {}
            accounts.append(entry)
        entry["accessKey"] = config.access_key
        entry["secretKey"] = config.secret_key
        if config.white_remote_address is not None:
            entry["whiteRemoteAddress"] = config.white_remote_address
        entry["admin"] = config.admin
        if config.default_topic_perm:
            entry["defaultTopicPerm"] = config.default_topic_perm
        if config.default_group_perm:
            entry["defaultGroupPerm"] = config.default_group_perm
        if config.topic_perms is not None:
            entry["topicPerms"] = list(config.topic_perms)
        if config.group_perms is not None:
            entry["groupPerms"] = list(config.group_perms)
        self._write(raw)

    def delete_account(self, access_key: str) -> bool:
        """DELETE_ACL_CONFIG: remove the account; False when there is none."""
        if not access_key or access_key not in self.rules.accounts:
            return False
        raw = self._fresh_raw()
        accounts = raw.get("accounts")
        if not isinstance(accounts, list):
            return False
        kept = [a for a in accounts if not (isinstance(a, dict) and _text(a.get("accessKey")) == access_key)]
        if len(kept) == len(accounts):
            return False
        raw["accounts"] = kept
        self._write(raw)
        return True

    def update_global_white(self, addresses: list[str]) -> None:
        """UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: replace the global white list (each entry must parse)."""
        for address in addresses:
            try:
                parse_address_pattern(address)
            except ConfigError as exc:
                raise AclAdminError(str(exc)) from None
        raw = self._fresh_raw()
        raw["globalWhiteRemoteAddresses"] = list(addresses)
        self._write(raw)

    def _fresh_raw(self) -> dict[str, Any]:
        # as 4.9, an admin change applies to the file as it is now
        try:
            return _load_yaml(self.path.read_text(encoding="utf-8"), str(self.path))
        except (OSError, ConfigError):
            return dict(self._raw)

    def _write(self, raw: dict[str, Any]) -> None:
        now_ms = int(self._wall_ms()) if self._wall_ms is not None else 0
        raw["dataVersion"] = [{"counter": self.rules.counter + 1, "timestamp": now_ms}]
        try:
            rules = parse_acl(raw, str(self.path))
        except ConfigError as exc:
            raise AclAdminError(str(exc)) from None
        text = yaml.safe_dump(raw, sort_keys=False, default_flow_style=False, allow_unicode=True)
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except OSError as exc:
            raise AclAdminError(f"cannot write the ACL file: {exc.strerror or exc}") from None
        self._raw, self.rules, self._stamp = raw, rules, _stamp(self.path)


def request_guard(
    acl: AclManager, peer_log: PeerLog, loop_thread: int
) -> Callable[[RemotingConnection, RemotingCommand], None]:
    """The remoting server's request guard for ``acl``: a refused request is answered
    ``SYSTEM_ERROR`` with 4.9's remark, as 4.9's remoting server answers its ACL hook's exception.

    It runs on the event loop, or on the remoting worker thread for a large request; refusals
    go to ``peer_log`` (the loop's) only from the loop thread, ``loop_thread``."""

    def guard(conn: RemotingConnection, request: RemotingCommand) -> None:
        now = time.monotonic()
        try:
            acl.check(request, conn.remote_address, now)
        except AclRefused as refused:
            if threading.get_ident() == loop_thread:
                peer_log.report(
                    conn.remote_address,
                    "acl-refused",
                    now,
                    "%r: ACL refused request code %d: %s",
                    conn,
                    request.code,
                    refused.message,
                )
            raise BrokerError.for_code(ResponseCode.SYSTEM_ERROR, refused.remark) from None

    return guard
