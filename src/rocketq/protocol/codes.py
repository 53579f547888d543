"""The numbers of RocketMQ's remoting protocol: request and response codes, languages, versions.

Every value here is a wire constant of RocketMQ 4.9.4 (``RequestCode``, ``ResponseCode`` with the
remoting layer's system codes, ``LanguageCode``, ``SerializeType`` and ``MQVersion.Version``), kept
under RocketMQ's own names so that logs and captures read the same on both sides.

A command's ``code`` stays a plain ``int`` on the wire and in :class:`RemotingCommand`: peers may send
codes this table does not know (the captures include ``9999``), and a server answers those with
``REQUEST_CODE_NOT_SUPPORTED`` rather than failing to decode them. :func:`code_name` names a code for
logs without raising.
"""

from __future__ import annotations

from enum import IntEnum, IntFlag
from typing import Final

__all__ = [
    "CURRENT_VERSION",
    "MASTER_ID",
    "LanguageCode",
    "MQVersion",
    "PullSysFlag",
    "RequestCode",
    "ResponseCode",
    "RocketQRequestCode",
    "RocketQResponseCode",
    "SerializeType",
    "code_name",
    "version_name",
]

MASTER_ID: Final = 0
"""The broker id of a master (``MixAll.MASTER_ID``); slaves have ids above it."""


class RequestCode(IntEnum):
    """What a request asks for (the ``code`` of a command whose response bit is clear).

    The complete table of RocketMQ 4.9.4, in numeric order. Name server requests are the 100s
    (``REGISTER_BROKER`` ... ``GET_BROKER_CLUSTER_INFO``); the 200s and 300s are mostly admin calls;
    ``SEND_MESSAGE_V2`` (310) is what current producers send instead of ``SEND_MESSAGE`` (10).
    """

    SEND_MESSAGE = 10
    PULL_MESSAGE = 11
    QUERY_MESSAGE = 12
    QUERY_BROKER_OFFSET = 13
    QUERY_CONSUMER_OFFSET = 14
    UPDATE_CONSUMER_OFFSET = 15
    UPDATE_AND_CREATE_TOPIC = 17
    GET_ALL_TOPIC_CONFIG = 21
    GET_TOPIC_CONFIG_LIST = 22
    GET_TOPIC_NAME_LIST = 23
    UPDATE_BROKER_CONFIG = 25
    GET_BROKER_CONFIG = 26
    TRIGGER_DELETE_FILES = 27
    GET_BROKER_RUNTIME_INFO = 28
    SEARCH_OFFSET_BY_TIMESTAMP = 29
    GET_MAX_OFFSET = 30
    GET_MIN_OFFSET = 31
    GET_EARLIEST_MSG_STORETIME = 32
    VIEW_MESSAGE_BY_ID = 33
    HEART_BEAT = 34
    UNREGISTER_CLIENT = 35
    CONSUMER_SEND_MSG_BACK = 36
    END_TRANSACTION = 37
    GET_CONSUMER_LIST_BY_GROUP = 38
    CHECK_TRANSACTION_STATE = 39
    NOTIFY_CONSUMER_IDS_CHANGED = 40
    LOCK_BATCH_MQ = 41
    UNLOCK_BATCH_MQ = 42
    GET_ALL_CONSUMER_OFFSET = 43
    GET_ALL_DELAY_OFFSET = 45
    CHECK_CLIENT_CONFIG = 46
    UPDATE_AND_CREATE_ACL_CONFIG = 50
    DELETE_ACL_CONFIG = 51
    GET_BROKER_CLUSTER_ACL_INFO = 52
    UPDATE_GLOBAL_WHITE_ADDRS_CONFIG = 53
    GET_BROKER_CLUSTER_ACL_CONFIG = 54
    PUT_KV_CONFIG = 100
    GET_KV_CONFIG = 101
    DELETE_KV_CONFIG = 102
    REGISTER_BROKER = 103
    UNREGISTER_BROKER = 104
    GET_ROUTEINFO_BY_TOPIC = 105
    GET_BROKER_CLUSTER_INFO = 106
    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP = 200
    GET_ALL_SUBSCRIPTIONGROUP_CONFIG = 201
    GET_TOPIC_STATS_INFO = 202
    GET_CONSUMER_CONNECTION_LIST = 203
    GET_PRODUCER_CONNECTION_LIST = 204
    WIPE_WRITE_PERM_OF_BROKER = 205
    GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206
    DELETE_SUBSCRIPTIONGROUP = 207
    GET_CONSUME_STATS = 208
    SUSPEND_CONSUMER = 209
    RESUME_CONSUMER = 210
    RESET_CONSUMER_OFFSET_IN_CONSUMER = 211
    RESET_CONSUMER_OFFSET_IN_BROKER = 212
    ADJUST_CONSUMER_THREAD_POOL = 213
    WHO_CONSUME_THE_MESSAGE = 214
    DELETE_TOPIC_IN_BROKER = 215
    DELETE_TOPIC_IN_NAMESRV = 216
    GET_KVLIST_BY_NAMESPACE = 219
    RESET_CONSUMER_CLIENT_OFFSET = 220
    GET_CONSUMER_STATUS_FROM_CLIENT = 221
    INVOKE_BROKER_TO_RESET_OFFSET = 222
    INVOKE_BROKER_TO_GET_CONSUMER_STATUS = 223
    GET_TOPICS_BY_CLUSTER = 224
    QUERY_TOPIC_CONSUME_BY_WHO = 300
    REGISTER_FILTER_SERVER = 301
    REGISTER_MESSAGE_FILTER_CLASS = 302
    QUERY_CONSUME_TIME_SPAN = 303
    GET_SYSTEM_TOPIC_LIST_FROM_NS = 304
    GET_SYSTEM_TOPIC_LIST_FROM_BROKER = 305
    CLEAN_EXPIRED_CONSUMEQUEUE = 306
    GET_CONSUMER_RUNNING_INFO = 307
    QUERY_CORRECTION_OFFSET = 308
    CONSUME_MESSAGE_DIRECTLY = 309
    SEND_MESSAGE_V2 = 310
    GET_UNIT_TOPIC_LIST = 311
    GET_HAS_UNIT_SUB_TOPIC_LIST = 312
    GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST = 313
    CLONE_GROUP_OFFSET = 314
    VIEW_BROKER_STATS_DATA = 315
    CLEAN_UNUSED_TOPIC = 316
    GET_BROKER_CONSUME_STATS = 317
    UPDATE_NAMESRV_CONFIG = 318
    GET_NAMESRV_CONFIG = 319
    SEND_BATCH_MESSAGE = 320
    QUERY_CONSUME_QUEUE = 321
    QUERY_DATA_VERSION = 322
    RESUME_CHECK_HALF_MESSAGE = 323
    SEND_REPLY_MESSAGE = 324
    SEND_REPLY_MESSAGE_V2 = 325
    PUSH_REPLY_MESSAGE_TO_CLIENT = 326
    ADD_WRITE_PERM_OF_BROKER = 327
    GET_ALL_PRODUCER_INFO = 328
    DELETE_EXPIRED_COMMITLOG = 329


class ResponseCode(IntEnum):
    """How a peer answered (the ``code`` of a command whose response bit is set).

    0 to 4 are the remoting layer's own codes (``RemotingSysResponseCode``); the rest are RocketMQ's
    ``ResponseCode``. Some codes are outcomes rather than failures: ``PULL_NOT_FOUND`` (19),
    ``PULL_RETRY_IMMEDIATELY`` (20), ``PULL_OFFSET_MOVED`` (21), ``QUERY_NOT_FOUND`` (22) and the
    transaction states (200 to 202). :meth:`rocketq.errors.BrokerError.for_code` maps failures to
    exception classes.
    """

    SUCCESS = 0
    SYSTEM_ERROR = 1
    SYSTEM_BUSY = 2
    REQUEST_CODE_NOT_SUPPORTED = 3
    TRANSACTION_FAILED = 4
    FLUSH_DISK_TIMEOUT = 10
    SLAVE_NOT_AVAILABLE = 11
    FLUSH_SLAVE_TIMEOUT = 12
    MESSAGE_ILLEGAL = 13
    SERVICE_NOT_AVAILABLE = 14
    VERSION_NOT_SUPPORTED = 15
    NO_PERMISSION = 16
    TOPIC_NOT_EXIST = 17
    TOPIC_EXIST_ALREADY = 18
    PULL_NOT_FOUND = 19
    PULL_RETRY_IMMEDIATELY = 20
    PULL_OFFSET_MOVED = 21
    QUERY_NOT_FOUND = 22
    SUBSCRIPTION_PARSE_FAILED = 23
    SUBSCRIPTION_NOT_EXIST = 24
    SUBSCRIPTION_NOT_LATEST = 25
    SUBSCRIPTION_GROUP_NOT_EXIST = 26
    FILTER_DATA_NOT_EXIST = 27
    FILTER_DATA_NOT_LATEST = 28
    TRANSACTION_SHOULD_COMMIT = 200
    TRANSACTION_SHOULD_ROLLBACK = 201
    TRANSACTION_STATE_UNKNOW = 202
    TRANSACTION_STATE_GROUP_WRONG = 203
    NO_BUYER_ID = 204
    NOT_IN_CURRENT_UNIT = 205
    CONSUMER_NOT_ONLINE = 206
    CONSUME_MSG_TIMEOUT = 207
    NO_MESSAGE = 208
    UPDATE_AND_CREATE_ACL_CONFIG_FAILED = 209
    DELETE_ACL_CONFIG_FAILED = 210
    UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED = 211


class LanguageCode(IntEnum):
    """The implementation language a peer declares in every command it sends.

    Written as its name (``"JAVA"``) in JSON headers and as one byte in ROCKETMQ headers. Brokers
    only record it (the admin tools show it next to each connection), with one exception: an
    ``INVOKE_BROKER_TO_RESET_OFFSET`` request marked ``CPP`` makes the broker reset offsets itself
    instead of asking the clients to. ``NODE_JS`` is RocketMQ 5's addition. rocketq identifies
    itself as ``PYTHON`` (see :data:`rocketq.protocol.command.DEFAULT_LANGUAGE`).
    """

    JAVA = 0
    CPP = 1
    DOTNET = 2
    PYTHON = 3
    DELPHI = 4
    ERLANG = 5
    RUBY = 6
    OTHER = 7
    HTTP = 8
    GO = 9
    PHP = 10
    OMS = 11
    RUST = 12
    NODE_JS = 13


class SerializeType(IntEnum):
    """How a frame's header is encoded: the high byte of the frame's header-length word."""

    JSON = 0
    ROCKETMQ = 1


def _version_names() -> tuple[str, ...]:
    """The names of ``MQVersion.Version`` in ordinal order (613 of them in RocketMQ 4.9.4).

    The table follows a regular pattern: the 3.0.0 pre-releases, then for every version a
    ``_SNAPSHOT`` entry followed by the release (3.0.1 to 3.0.15, 3.1.0 to 3.2.9, 3.3.1 to 3.9.9,
    4.0.0 to 4.9.9, 5.0.0 to 5.9.9), then ``HIGHER_VERSION``.
    """
    names = ["V3_0_0_SNAPSHOT", "V3_0_0_ALPHA1"]
    names += [f"V3_0_0_BETA{i}" for i in range(1, 6)]
    for i in range(6, 10):
        names += [f"V3_0_0_BETA{i}_SNAPSHOT", f"V3_0_0_BETA{i}"]
    names.append("V3_0_0_FINAL")
    triples = [(3, 0, p) for p in range(1, 16)]
    triples += [(3, minor, p) for minor in (1, 2) for p in range(10)]
    triples += [(3, minor, p) for minor in range(3, 10) for p in range(1, 10)]
    triples += [(major, minor, p) for major in (4, 5) for minor in range(10) for p in range(10)]
    for major, minor, patch in triples:
        names += [f"V{major}_{minor}_{patch}_SNAPSHOT", f"V{major}_{minor}_{patch}"]
    names.append("HIGHER_VERSION")
    return tuple(names)


_VERSION_NAMES = _version_names()


class MQVersion(IntEnum):
    """Release ordinals of ``MQVersion.Version``: what a command's ``version`` field holds.

    Only the ordinals rocketq or RocketMQ's servers compare against are named here; every ordinal
    has a name through :func:`version_name`. Servers gate behaviour on them, e.g. a 4.9.4 name
    server answers a ``GET_ROUTEINFO_BY_TOPIC`` from a client at ``V4_9_4`` or later with
    standard JSON, and a broker honours ``maxReconsumeTimes`` in send-back requests only from
    ``V3_4_9`` on.
    """

    V3_0_7 = 29
    V3_0_11 = 37
    V3_1_8_SNAPSHOT = 62
    V3_4_9 = 121
    V4_0_0 = 213
    V4_5_0 = 313
    V4_7_0 = 353
    V4_8_0 = 373
    V4_9_0 = 393
    V4_9_3 = 399
    V4_9_4 = 401
    V4_9_5 = 403
    V5_0_0 = 413
    V5_1_0 = 433
    HIGHER_VERSION = 612


CURRENT_VERSION: int = MQVersion.V4_9_4
"""The ``version`` rocketq puts in the commands it sends: it speaks RocketMQ 4.9.4's protocol."""


def version_name(ordinal: int) -> str:
    """The ``MQVersion.Version`` name of ``ordinal`` (``401`` -> ``"V4_9_4"``).

    Like RocketMQ's ``getVersionDesc``, ordinals past the table's end name its last entry; negative
    ordinals (never sent by RocketMQ) give ``"UNKNOWN(<n>)"``.
    """
    if ordinal < 0:
        return f"UNKNOWN({ordinal})"
    if ordinal >= len(_VERSION_NAMES):
        return _VERSION_NAMES[-1]
    return _VERSION_NAMES[ordinal]


class RocketQRequestCode(IntEnum):
    """Requests only rocketq's broker serves (numbered far from RocketMQ's own); a RocketMQ broker
    answers them ``REQUEST_CODE_NOT_SUPPORTED``, which callers treat as "not available here"."""

    QUERY_DUPLICATE_CLIENT_IDS = 10901
    """Client ids registered by more than one live connection in a consumer group (ext field
    ``consumerGroup`` optional); the body is ``{"duplicates": [{"group", "clientId", "addresses"}]}``."""


class RocketQResponseCode(IntEnum):
    """Answers only rocketq's broker gives, and only to requests that asked for them (a field only
    rocketq's clients send), so a RocketMQ client never sees one."""

    PULL_VIEW_CHANGED = 10951
    """A pull carried ``rqEpoch`` (the stamp - group epoch and queue count - the consumer allocated
    this broker's queues under) and the broker's own differs now: no messages; the answer's
    ``rqEpoch``/``rqViewQueues`` fields say the broker's. See :func:`rocketq.protocol.calls.view_stamp`."""


class PullSysFlag(IntFlag):
    """The ``sysFlag`` bits of a ``PULL_MESSAGE`` request (RocketMQ's ``PullSysFlag``)."""

    COMMIT_OFFSET = 0x1
    """The request carries the consumer's offset to commit (``commitOffset``)."""
    SUSPEND = 0x2
    """The broker may hold the pull until a message arrives (long polling)."""
    SUBSCRIPTION = 0x4
    """The subscription expression travels in the request."""
    CLASS_FILTER = 0x8
    LITE_PULL = 0x10


def code_name(code: int, *, response: bool) -> str:
    """A printable name for a request or response ``code``: ``"PULL_MESSAGE(11)"``, ``"UNKNOWN(9999)"``."""
    enum: type[IntEnum] = ResponseCode if response else RequestCode
    try:
        return f"{enum(code).name}({code})"
    except ValueError:
        if not response and code in _ROCKETQ_CODES:
            return f"{RocketQRequestCode(code).name}({code})"
        if response and code in _ROCKETQ_RESPONSES:
            return f"{RocketQResponseCode(code).name}({code})"
        return f"UNKNOWN({code})"


_ROCKETQ_CODES: Final = frozenset(int(c) for c in RocketQRequestCode)
_ROCKETQ_RESPONSES: Final = frozenset(int(c) for c in RocketQResponseCode)
