"""The one exception tree of rocketq.

Every error rocketq raises on purpose derives from :class:`RocketQError`. Foreign exceptions
(``OSError``, ``asyncio.TimeoutError``, ``json.JSONDecodeError`` ...) are translated at the layer
that meets them, so callers catch rocketq's classes only. ``retriable`` says whether trying the
same call again (perhaps elsewhere) can succeed.

::

    RocketQError
    ├── ConfigError                 bad configuration or argument (also a ValueError)
    │   ├── TopicExistsError            a create would change an existing topic (nothing changed)
    │   └── SystemTopicError            a change to a system topic without its named override
    ├── RemoteProtocolError         bytes that are not RocketMQ remoting frames / headers / bodies
    ├── RemotingError               the transport failed
    │   ├── RemotingConnectError        could not connect               (retriable)
    │   ├── RemotingTimeoutError        no response in time              (retriable)
    │   │   └── RequestTimeoutError         a request got no reply in time (request-reply)
    │   ├── RemotingClosedError         connection or client closed      (retriable)
    │   └── RemotingTooMuchRequestError too many requests out at once     (retriable)
    ├── BrokerError                 a peer answered with a non-success response code
    │   ├── BrokerSystemError                SYSTEM_ERROR (1)
    │   ├── SystemBusyError             SYSTEM_BUSY (2)                  (retriable)
    │   ├── RequestCodeNotSupportedError REQUEST_CODE_NOT_SUPPORTED (3)
    │   ├── FlushDiskTimeoutError       FLUSH_DISK_TIMEOUT (10)          (retriable)
    │   ├── MessageIllegalError         MESSAGE_ILLEGAL (13)
    │   ├── ServiceNotAvailableError    SERVICE_NOT_AVAILABLE (14)       (retriable)
    │   ├── NoPermissionError           NO_PERMISSION (16)
    │   │   └── AccessDeniedError           refused by the broker's ACL (SYSTEM_ERROR + AclException)
    │   ├── TopicNotExistError          TOPIC_NOT_EXIST (17)
    │   ├── TopicExistAlreadyError      TOPIC_EXIST_ALREADY (18)
    │   ├── SubscriptionError           SUBSCRIPTION_* (23, 24, 25, 26)
    │   ├── ConsumerNotOnlineError      CONSUMER_NOT_ONLINE (206)
    │   └── ConsumeTimeoutError         CONSUME_MSG_TIMEOUT (207)        (retriable)
    ├── ClientStateError            a client used in the wrong state (not started, shut down)
    ├── UnknownTopicError           an admin call named a topic no name server knows (also a LookupError)
    ├── UnknownGroupError           an admin call named a consumer group no broker knows (also a LookupError)
    ├── DataLossError               asked-for messages are gone from the broker (retention)
    └── StoreError                  the message store cannot do what was asked
        ├── StoreCorruptError           data on disk failed its checks
        └── StoreFullError              the disk or a segment has no room (retriable)

``BrokerError.for_code(code, remark)`` picks the class for a response code, as aiokafka's
``for_code`` does for Kafka error codes (and, for RocketMQ 4.9's ACL refusals, which come as
SYSTEM_ERROR, by the remark: :class:`AccessDeniedError`).
"""

from __future__ import annotations

import re
from typing import ClassVar

__all__ = [
    "ACL_EXCEPTION",
    "AccessDeniedError",
    "BrokerError",
    "BrokerSystemError",
    "ClientStateError",
    "ConfigError",
    "ConsumeTimeoutError",
    "ConsumerNotOnlineError",
    "DataLossError",
    "FlushDiskTimeoutError",
    "MessageIllegalError",
    "NoPermissionError",
    "RemoteProtocolError",
    "RemotingClosedError",
    "RemotingConnectError",
    "RemotingError",
    "RemotingTimeoutError",
    "RemotingTooMuchRequestError",
    "RequestCodeNotSupportedError",
    "RequestTimeoutError",
    "RocketQError",
    "ServiceNotAvailableError",
    "StoreCorruptError",
    "StoreError",
    "StoreFullError",
    "SubscriptionError",
    "SystemBusyError",
    "SystemTopicError",
    "TopicExistAlreadyError",
    "TopicExistsError",
    "TopicNotExistError",
    "UnknownGroupError",
    "UnknownTopicError",
]


class RocketQError(Exception):
    """Root of every error rocketq raises on purpose."""

    retriable: ClassVar[bool] = False


class ConfigError(RocketQError, ValueError):
    """A configuration value or argument is not acceptable."""


class TopicExistsError(ConfigError):
    """An admin create named a topic that exists with other settings: nothing was changed.

    ``changes`` says, one line per broker, what the create would have changed (fewer queues name
    the queues whose messages would stop being read); an update (``update=True``,
    ``update_topic``, ``rocketq topic update``) applies them.
    """

    def __init__(self, message: str, changes: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.changes = changes


class SystemTopicError(ConfigError):
    """An admin call would create, change or delete a system topic (``TBW102``, the delay topic, a
    cluster's or broker's own topic, a group's retry or dead-letter topic ...) and was not given
    the override naming that topic: nothing was changed. ``topic`` is the topic, ``refusal`` the
    message without the how-to-override sentence (each interface says how in its own terms)."""

    def __init__(self, message: str, *, topic: str = "", refusal: str = "") -> None:
        super().__init__(message)
        self.topic = topic
        self.refusal = refusal or message


class RemoteProtocolError(RocketQError):
    """Bytes received are not a valid RocketMQ remoting frame, header or body."""


class RemotingError(RocketQError):
    """The transport failed: connect, send, receive, or close."""


class RemotingConnectError(RemotingError):
    """A connection to the peer could not be made."""

    retriable = True


class RemotingTimeoutError(RemotingError):
    """The peer did not answer in time."""

    retriable = True


class RequestTimeoutError(RemotingTimeoutError):
    """A request (``Producer.request``) was sent but its reply did not come in time (Java's
    ``RequestTimeoutException``); the reply may still come later and is then dropped."""


class RemotingClosedError(RemotingError):
    """The connection (or the whole client) was closed while a request was pending."""

    retriable = True


class RemotingTooMuchRequestError(RemotingError):
    """This side has as many requests out as it allows and none finished in time (Java's
    ``RemotingTooMuchRequestException``): back-pressure, nothing was sent."""

    retriable = True


class BrokerError(RocketQError):
    """A name server or broker answered with a response code other than SUCCESS."""

    codes: ClassVar[tuple[int, ...]] = ()
    _by_code: ClassVar[dict[int, type[BrokerError]]] = {}

    def __init__(self, code: int, remark: str | None = None) -> None:
        self.code = code
        self.remark = remark or ""
        super().__init__(f"CODE: {code} DESC: {self.remark}" if remark else f"CODE: {code}")

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        # the codes a class names itself: a subclass does not take its parent's (AccessDeniedError)
        for code in cls.__dict__.get("codes", ()):
            BrokerError._by_code[code] = cls

    @staticmethod
    def for_code(code: int, remark: str | None = None) -> BrokerError:
        """The exception for a response ``code`` (a plain :class:`BrokerError` when unmapped)."""
        if code == _SYSTEM_ERROR and remark and ACL_EXCEPTION in remark:
            return AccessDeniedError(code, remark)
        cls = BrokerError._by_code.get(code, BrokerError)
        return cls(code, remark)


class BrokerSystemError(BrokerError):
    """SYSTEM_ERROR: the peer failed while handling the request."""

    codes = (1,)


class SystemBusyError(BrokerError):
    """SYSTEM_BUSY: the peer is overloaded; try again shortly."""

    codes = (2,)
    retriable = True


class RequestCodeNotSupportedError(BrokerError):
    """REQUEST_CODE_NOT_SUPPORTED: the peer does not implement this request."""

    codes = (3,)


class FlushDiskTimeoutError(BrokerError):
    """FLUSH_DISK_TIMEOUT: stored but not flushed in time under sync flush."""

    codes = (10,)
    retriable = True


class MessageIllegalError(BrokerError):
    """MESSAGE_ILLEGAL: too large, bad topic name, bad properties."""

    codes = (13,)


class ServiceNotAvailableError(BrokerError):
    """SERVICE_NOT_AVAILABLE: the broker is starting, stopping or not writable."""

    codes = (14,)
    retriable = True


class NoPermissionError(BrokerError):
    """NO_PERMISSION: the topic or broker forbids this read or write."""

    codes = (16,)


ACL_EXCEPTION = "org.apache.rocketmq.acl.common.AclException"
"""The exception a RocketMQ 4.9 broker's ACL throws; its remark starts with it."""
_SYSTEM_ERROR = 1
# the 4.9 frame that threw, appended to the remark: ", org.apache...Class.method(File.java:123)"
_JAVA_FRAME = re.compile(r",\s*[\w.$]+\([\w.]+:\d+\)\s*$")


class AccessDeniedError(NoPermissionError):
    """The broker's ACL refused the request: no or an unknown access key, a signature that is not
    the account's, an account without the admin role or without the permission the request needs.

    RocketMQ 4.9 answers these with SYSTEM_ERROR and its ``AclException`` as the remark
    (``code`` is that 1), not NO_PERMISSION; :meth:`BrokerError.for_code` picks this class by the
    remark. ``reason`` is the ACL's own words without the exception's class and Java frame
    (``"No default permission for topic:Orders"``); ``str()`` is one line naming what was refused
    (when the caller said, as the clients do: ``"create topic T on ADDR: ..."``) and why.

    >>> e = BrokerError.for_code(1, f"{ACL_EXCEPTION}: No accessKey is configured, "
    ...     "org.apache.rocketmq.acl.plain.PlainPermissionManager.validate(PlainPermissionManager.java:663)")
    >>> type(e).__name__, e.reason
    ('AccessDeniedError', 'No accessKey is configured')
    >>> str(e)
    "refused by the broker's ACL: No accessKey is configured"
    """

    def __init__(self, code: int, remark: str | None = None) -> None:
        super().__init__(code, remark)
        text = remark or ""
        what, found, rest = text.partition(ACL_EXCEPTION)
        reason = _JAVA_FRAME.sub("", rest).lstrip(":").strip() if found else text
        self.reason = reason or "no reason given"
        self.what = what.strip().rstrip(":").strip()
        self._name()

    def _name(self) -> None:
        where = f"{self.what}: " if self.what else ""
        self.args = (f"{where}refused by the broker's ACL: {self.reason}",)

    def add_note(self, note: str, /) -> None:
        """The first note naming the call and the peer (``"creation of topic T at ADDR"``, as the
        clients add it) becomes part of the one-line message; later ones are notes."""
        if self.what:
            super().add_note(note)
        else:
            self.what = note
            self._name()


class TopicNotExistError(BrokerError):
    """TOPIC_NOT_EXIST: no such topic (and auto-creation is off)."""

    codes = (17,)


class TopicExistAlreadyError(BrokerError):
    """TOPIC_EXIST_ALREADY."""

    codes = (18,)


class SubscriptionError(BrokerError):
    """A subscription could not be parsed, does not exist, or is stale."""

    codes = (23, 24, 25, 26)


class ConsumerNotOnlineError(BrokerError):
    """CONSUMER_NOT_ONLINE: the consumer asked about is not connected."""

    codes = (206,)


class ConsumeTimeoutError(BrokerError):
    """CONSUME_MSG_TIMEOUT."""

    codes = (207,)
    retriable = True


class ClientStateError(RocketQError):
    """A client was used in a state that does not allow the call (not started, shut down)."""


class UnknownTopicError(RocketQError, LookupError):
    """An admin call named a topic that no name server has a route for."""


class UnknownGroupError(RocketQError, LookupError):
    """An admin call named a consumer group that no broker knows (no members, offsets or retry topic)."""


class DataLossError(RocketQError):
    """Messages a reader asked for are no longer stored: retention removed them (or the queue was reset)."""


class StoreError(RocketQError):
    """The message store could not do what was asked."""


class StoreCorruptError(StoreError):
    """Data on disk failed its checks (magic code, CRC, size)."""


class StoreFullError(StoreError):
    """The disk or the current segment has no room for the write."""

    retriable = True
