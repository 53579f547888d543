"""The calls a client makes to name servers and brokers, each written once: request and answer.

A :class:`Call` pairs one request with the function that reads its answer into a value (or
raises the :class:`~rocketq.errors.BrokerError` of the response code). The builders below make
one per call of RocketMQ 4.9.4's ``MQClientAPIImpl`` / ``MQAdminImpl`` that rocketq uses, with the
request code, typed header and body a Java client sends. Sans-I/O like the rest of
:mod:`rocketq.protocol`: nothing here sends. The transport's drivers run calls -
:meth:`rocketq.remoting.RemotingClient.call` (asyncio) and
:meth:`rocketq.remoting.BlockingRemotingClient.call` (a plain socket) - so producers, consumers,
the admin tools and the Spark source all speak through the same requests and parsers::

    route = await remoting.call(namesrv, calls.get_route_info("TopicTest"))
    max_offset = blocking.call(calls.get_max_offset(mq))

A refusal raises ``BrokerError.for_code(code, remark)``; the driver adds a note naming the call
(:attr:`Call.what`) and the peer. The hot calls (send, pull) also expose their request builder and
parser on their own, for the producer's and consumer's encode-ahead paths.

>>> from rocketq.models import MessageQueue
>>> c = get_max_offset(MessageQueue("T", "broker-a", 3))
>>> (int(c.request.code), c.request.ext_fields, c.what)
(30, {'queueId': '3', 'topic': 'T'}, 'max offset of broker-a:3')
>>> c.parse(c.request.response(ext_fields={"offset": "42"}))
42
>>> c.parse(c.request.response(17, "no such topic"))
Traceback (most recent call last):
rocketq.errors.TopicNotExistError: CODE: 17 DESC: no such topic
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

from rocketq.errors import BrokerError, RemoteProtocolError
from rocketq.models import DuplicateClientId, MessageQueue, PullResult, PullStatus
from rocketq.protocol.bodies import (
    CheckClientRequestBody,
    ClusterInfo,
    ConsumerConnection,
    ConsumerOffsetSerializeWrapper,
    ConsumerRunningInfo,
    ConsumeStats,
    GetConsumerListByGroupResponseBody,
    GroupList,
    HeartbeatData,
    KVTable,
    LockBatchRequestBody,
    LockBatchResponseBody,
    ProducerConnection,
    ResetOffsetBody,
    SubscriptionData,
    SubscriptionGroupWrapper,
    TopicConfigSerializeWrapper,
    TopicList,
    TopicRouteData,
    TopicStatsTable,
    UnlockBatchRequestBody,
)
from rocketq.protocol.codes import RequestCode, ResponseCode, RocketQRequestCode, RocketQResponseCode
from rocketq.protocol.command import FLAG_ONEWAY, RemotingCommand
from rocketq.protocol.headers import (
    CommandHeader,
    ConsumerSendMsgBackRequestHeader,
    CreateTopicRequestHeader,
    DeleteKVConfigRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    DeleteTopicRequestHeader,
    EndTransactionRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumerListByGroupRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumeStatsRequestHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    GetProducerConnectionListRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicStatsInfoRequestHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    PutKVConfigRequestHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    QueryMessageRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
    ResetOffsetRequestHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
    ViewMessageRequestHeader,
)
from rocketq.protocol.message import MessageExt, decode_messages
from rocketq.protocol.properties import MessageConst, properties_to_string
from rocketq.protocol.topics import (
    AUTO_CREATE_TOPIC_KEY_TOPIC,
    DEFAULT_TOPIC_QUEUE_NUMS,
    FORCE_SYSTEM_TOPIC_FIELD,
    RETRY_GROUP_TOPIC_PREFIX,
)

__all__ = [
    "LEASE_FIELD",
    "PULL_BYTES_FIELD",
    "PULL_STATUS",
    "REPLY_MESSAGE_FLAG",
    "VIEW_FIELD",
    "VIEW_QUEUES_FIELD",
    "VIEW_TOPIC_FIELD",
    "Call",
    "SendOrigin",
    "SendPayload",
    "SendResponse",
    "check",
    "check_client_config",
    "consumer_send_msg_back",
    "create_topic",
    "delete_kv_config",
    "delete_topic_in_broker",
    "delete_topic_in_namesrv",
    "end_transaction",
    "get_all_consumer_offset",
    "get_all_delay_offset",
    "get_all_subscription_group_config",
    "get_all_topic_config",
    "get_all_topic_list",
    "get_broker_cluster_info",
    "get_broker_runtime_info",
    "get_consume_stats",
    "get_consumer_connection_list",
    "get_consumer_list_by_group",
    "get_consumer_running_info",
    "get_consumer_view",
    "get_kv_config",
    "get_max_offset",
    "get_min_offset",
    "get_producer_connection_list",
    "get_route_info",
    "get_topic_stats_info",
    "invoke_broker_to_reset_offset",
    "lock_batch_mq",
    "parse_pull_response",
    "parse_send_response",
    "parse_view_stamp",
    "pull_message",
    "put_kv_config",
    "query_consumer_offset",
    "query_duplicate_client_ids",
    "query_message",
    "query_topic_consume_by_who",
    "search_offset",
    "send_call",
    "send_code",
    "send_header",
    "send_heartbeat",
    "send_message",
    "send_message_request",
    "send_request",
    "unlock_batch_mq",
    "unregister_client",
    "update_consumer_offset",
    "view_message_by_id",
    "view_stamp",
]

T_co = TypeVar("T_co", covariant=True)
T = TypeVar("T")

_SUCCESS: Final = int(ResponseCode.SUCCESS)


@dataclass(frozen=True, slots=True)
class Call(Generic[T_co]):
    """One request and how to read its answer.

    ``request`` is fresh for each call (the driver numbers it); ``parse`` turns the response into
    the call's value or raises; ``what`` names the call in errors (``"max offset of broker-a:3"``).
    A oneway call (``request`` flagged oneway) has no answer: drivers send it and return ``None``.
    """

    request: RemotingCommand
    parse: Callable[[RemotingCommand], T_co]
    what: str

    @property
    def oneway(self) -> bool:
        """Whether the request is sent oneway (the peer sends no response)."""
        return bool(self.request.flag & FLAG_ONEWAY)


def check(response: RemotingCommand, *ok: int) -> RemotingCommand:
    """``response`` if its code is SUCCESS or one of ``ok``; else raise the code's BrokerError."""
    code = response.code
    if code == _SUCCESS or code in ok:
        return response
    raise BrokerError.for_code(code, response.remark)


def _none(response: RemotingCommand) -> None:
    check(response)


def _oneway_none(response: RemotingCommand) -> None:  # pragma: no cover - never called for oneway
    return None


def _request(
    code: int, ext: dict[str, str] | None = None, body: bytes = b"", *, oneway: bool = False
) -> RemotingCommand:
    return RemotingCommand.request(code, ext, body, oneway=oneway)


def _header_call(
    code: int, header: CommandHeader, parse: Callable[[RemotingCommand], T], what: str
) -> Call[T]:
    """The call of a request that carries ``header`` as its ext fields (and no body)."""
    return Call(_request(code, header.to_ext_fields()), parse, what)


def _short(mq: MessageQueue) -> str:
    return f"{mq.broker_name}:{mq.queue_id}"


# ------------------------------------------------------------------------------------ name server


def _parse_route(response: RemotingCommand) -> TopicRouteData:
    check(response)
    if not response.body:
        raise RemoteProtocolError("GET_ROUTEINFO_BY_TOPIC answered SUCCESS with no route body")
    return TopicRouteData.decode(response.body)


def get_route_info(topic: str, *, standard_json_only: bool = False) -> Call[TopicRouteData]:
    """GET_ROUTEINFO_BY_TOPIC: the topic's queues and brokers. A name server that knows no such
    topic answers TOPIC_NOT_EXIST, raised as :class:`~rocketq.errors.TopicNotExistError` with its
    remark. ``standard_json_only`` asks for strict JSON (``acceptStandardJsonOnly``, 4.9.3+)."""
    header = GetRouteInfoRequestHeader(topic=topic, accept_standard_json_only=standard_json_only or None)
    return _header_call(RequestCode.GET_ROUTEINFO_BY_TOPIC, header, _parse_route, f"route of topic {topic!r}")


def _parse_cluster_info(response: RemotingCommand) -> ClusterInfo:
    check(response)
    return ClusterInfo.decode(response.body) if response.body else ClusterInfo()


def get_broker_cluster_info() -> Call[ClusterInfo]:
    """GET_BROKER_CLUSTER_INFO: brokers by name and broker names by cluster."""
    return Call(_request(RequestCode.GET_BROKER_CLUSTER_INFO), _parse_cluster_info, "cluster info")


def _parse_topic_list(response: RemotingCommand) -> list[str]:
    check(response)
    return sorted(TopicList.decode(response.body).topic_list) if response.body else []


def get_all_topic_list() -> Call[list[str]]:
    """GET_ALL_TOPIC_LIST_FROM_NAMESERVER: every topic the name server knows, sorted."""
    return Call(_request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER), _parse_topic_list, "topic list")


def delete_topic_in_namesrv(topic: str, *, cluster: str | None = None) -> Call[None]:
    """DELETE_TOPIC_IN_NAMESRV (of one cluster's brokers when ``cluster`` is given)."""
    header = DeleteTopicFromNamesrvRequestHeader(topic=topic, cluster_name=cluster)
    return _header_call(RequestCode.DELETE_TOPIC_IN_NAMESRV, header, _none, f"delete topic {topic}")


def put_kv_config(namespace: str, key: str, value: str) -> Call[None]:
    """PUT_KV_CONFIG (the name servers' ``ORDER_TOPIC_CONFIG`` entries, for instance)."""
    header = PutKVConfigRequestHeader(namespace=namespace, key=key, value=value)
    return _header_call(RequestCode.PUT_KV_CONFIG, header, _none, f"set {namespace}/{key}")


def _parse_kv_value(response: RemotingCommand) -> str | None:
    if response.code == ResponseCode.QUERY_NOT_FOUND:
        return None
    check(response)
    return GetKVConfigResponseHeader.from_ext_fields(response.ext_fields).value


def get_kv_config(namespace: str, key: str) -> Call[str | None]:
    """GET_KV_CONFIG: the value, ``None`` when the name server has none (QUERY_NOT_FOUND)."""
    header = GetKVConfigRequestHeader(namespace=namespace, key=key)
    return _header_call(RequestCode.GET_KV_CONFIG, header, _parse_kv_value, f"read {namespace}/{key}")


def delete_kv_config(namespace: str, key: str) -> Call[None]:
    """DELETE_KV_CONFIG."""
    header = DeleteKVConfigRequestHeader(namespace=namespace, key=key)
    return _header_call(RequestCode.DELETE_KV_CONFIG, header, _none, f"delete {namespace}/{key}")


# ------------------------------------------------------------------------------------ producing


@dataclass(frozen=True, slots=True)
class SendResponse:
    """A broker's answer to a send: response code (SUCCESS or a flush/slave code) and header."""

    code: int
    offset_msg_id: str
    queue_id: int
    queue_offset: int
    transaction_id: str | None
    region_id: str
    trace_on: bool


_SEND_OK_CODES: Final = (
    int(ResponseCode.FLUSH_DISK_TIMEOUT),
    int(ResponseCode.FLUSH_SLAVE_TIMEOUT),
    int(ResponseCode.SLAVE_NOT_AVAILABLE),
)


def send_code(*, batch: bool = False, reply: bool = False) -> RequestCode:
    """The request code of a send: SEND_BATCH_MESSAGE for a batch, SEND_REPLY_MESSAGE_V2 for a
    reply to a request (a message whose ``MSG_TYPE`` is ``reply``, as Java's ``MQClientAPIImpl``
    picks it), else SEND_MESSAGE_V2."""
    if batch:
        return RequestCode.SEND_BATCH_MESSAGE
    return RequestCode.SEND_REPLY_MESSAGE_V2 if reply else RequestCode.SEND_MESSAGE_V2


REPLY_MESSAGE_FLAG: Final = "reply"
"""The ``MSG_TYPE`` of a reply to a request (RocketMQ's ``MixAll.REPLY_MESSAGE_FLAG``): such a
message goes as SEND_REPLY_MESSAGE_V2."""

_BORN_KEY: Final = SendMessageRequestHeaderV2.wire_name_of("born_timestamp")
_PROPERTIES_KEY: Final = SendMessageRequestHeaderV2.wire_name_of("properties")
_MAX_SEND_TEMPLATES: Final = 4096


class SendOrigin:
    """Who sends: the fields of a send header that one producer writes the same on every send
    (its group, and the default topic a broker creates a missing topic from: ``TBW102`` and 4
    queues unless the producer's config says otherwise), and the header templates of its sends
    so far (see :func:`send_request`). One per producer; safe from several threads (a template
    written twice by two threads at once is written the same)."""

    __slots__ = ("_templates", "default_topic", "default_topic_queue_nums", "producer_group")

    def __init__(
        self,
        producer_group: str,
        *,
        default_topic: str = AUTO_CREATE_TOPIC_KEY_TOPIC,
        default_topic_queue_nums: int = DEFAULT_TOPIC_QUEUE_NUMS,
    ) -> None:
        self.producer_group = producer_group
        self.default_topic = default_topic
        self.default_topic_queue_nums = default_topic_queue_nums
        # (topic, queue id, sys flag, flag, batch) -> the header's ext fields, born 0, no properties
        self._templates: dict[tuple[str, int, int, int, bool], dict[str, str]] = {}

    def __repr__(self) -> str:
        return f"SendOrigin({self.producer_group!r}, default_topic={self.default_topic!r})"


@dataclass(slots=True)
class SendPayload:
    """What a send carries, as it goes on the wire: the topic, the body as sent (compressed, or a
    batch's encoded records), the properties of the header (a message's own with ``UNIQ_KEY``;
    a batch's are only ``WAIT``), the message's flag, the sys flag (compression, transaction
    type) and whether it is a batch."""

    topic: str
    body: bytes
    properties: dict[str, str]
    flag: int = 0
    sys_flag: int = 0
    batch: bool = False


def send_header(
    origin: SendOrigin, payload: SendPayload, queue_id: int, born_ms: int
) -> SendMessageRequestHeaderV2:
    """The header of every send rocketq's clients make: ``payload`` from ``origin`` to queue
    ``queue_id``, born at ``born_ms``.

    Always :class:`~rocketq.protocol.headers.SendMessageRequestHeaderV2` (single-letter keys), as a
    Java producer sends with ``sendSmartMsg`` on, its default; a batch's flag is 0. A message to a
    retry topic (``%RETRY%<group>``, a consumer's send-back) carries its ``RECONSUME_TIME`` and
    ``MAX_RECONSUME_TIMES`` properties as the header's reconsume fields instead, as Java's
    ``sendKernelImpl`` moves them."""
    properties = payload.properties
    reconsume_times = 0
    max_reconsume: int | None = None
    if payload.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        properties = dict(properties)
        reconsume = properties.pop(MessageConst.RECONSUME_TIME, None)
        if reconsume is not None and reconsume.isdigit():
            reconsume_times = int(reconsume)
        most = properties.pop(MessageConst.MAX_RECONSUME_TIMES, None)
        if most is not None and most.lstrip("-").isdigit():
            max_reconsume = int(most)
    return SendMessageRequestHeaderV2(
        producer_group=origin.producer_group,
        topic=payload.topic,
        default_topic=origin.default_topic,
        default_topic_queue_nums=origin.default_topic_queue_nums,
        queue_id=queue_id,
        sys_flag=payload.sys_flag,
        born_timestamp=born_ms,
        flag=0 if payload.batch else payload.flag,
        properties=properties_to_string(properties),
        reconsume_times=reconsume_times,
        unit_mode=False,
        max_reconsume_times=max_reconsume,
        batch=payload.batch,
    )


def send_request(
    origin: SendOrigin, payload: SendPayload, queue_id: int, born_ms: int, *, oneway: bool = False
) -> RemotingCommand:
    """The request of one send attempt - the one place a client's send request is built: every
    send of :class:`~rocketq.client.Producer` (one message, a batch, a transactional half
    message, a reply, a retry on another broker, from any thread or loop) and of
    :class:`~rocketq.client.blocking.BlockingClient` goes through here. The header is
    :func:`send_header`'s; the code :func:`send_code`'s (a batch, a reply - ``MSG_TYPE`` is
    :data:`REPLY_MESSAGE_FLAG` - or a message).

    Apart from the born timestamp and the properties, a send's header is the same for every
    message from one origin to one queue with the same flags: it is written once (in its wire
    order) into ``origin``'s templates, and each send copies it and sets its two fields (a retry
    topic's header, whose reconsume fields come from the properties, is written whole each time).
    """
    topic = payload.topic
    properties = payload.properties
    if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        fields = send_header(origin, payload, queue_id, born_ms).to_ext_fields()
    else:
        key = (topic, queue_id, payload.sys_flag, payload.flag, payload.batch)
        templates = origin._templates
        template = templates.get(key)
        if template is None:
            if len(templates) >= _MAX_SEND_TEMPLATES:
                templates.clear()
            blank = SendPayload(topic, b"", {}, payload.flag, payload.sys_flag, payload.batch)
            template = templates[key] = send_header(origin, blank, queue_id, 0).to_ext_fields()
        fields = template.copy()
        fields[_BORN_KEY] = str(born_ms)
        fields[_PROPERTIES_KEY] = properties_to_string(properties)
    if payload.batch:
        code = RequestCode.SEND_BATCH_MESSAGE
    elif properties.get(MessageConst.MSG_TYPE) == REPLY_MESSAGE_FLAG:
        code = RequestCode.SEND_REPLY_MESSAGE_V2
    else:
        code = RequestCode.SEND_MESSAGE_V2
    return RemotingCommand.request(code, fields, payload.body, oneway=oneway)


def send_call(origin: SendOrigin, payload: SendPayload, queue_id: int, born_ms: int) -> Call[SendResponse]:
    """:func:`send_request` with its parser (:func:`parse_send_response`), for the drivers that
    run calls (:meth:`rocketq.remoting.BlockingRemotingClient.call`)."""
    what = f"send of {'a batch' if payload.batch else 'a message'} to {payload.topic} queue {queue_id}"
    return Call(send_request(origin, payload, queue_id, born_ms), parse_send_response, what)


def send_message_request(
    header: SendMessageRequestHeaderV2,
    body: bytes,
    *,
    batch: bool = False,
    oneway: bool = False,
    reply: bool = False,
) -> RemotingCommand:
    """The SEND_MESSAGE_V2 (SEND_BATCH_MESSAGE, SEND_REPLY_MESSAGE_V2) request of a header made
    elsewhere (a captured Java header replayed, a test's own): rocketq's clients build theirs with
    :func:`send_request`."""
    code = send_code(batch=batch, reply=reply)
    return RemotingCommand.request(code, header.to_ext_fields(), body, oneway=oneway)


def parse_send_response(response: RemotingCommand) -> SendResponse:
    """A send's answer: SUCCESS or a flush/slave code as a :class:`SendResponse`, any other code
    raised as its :class:`~rocketq.errors.BrokerError`."""
    check(response, *_SEND_OK_CODES)
    ext = response.ext_fields
    rh = SendMessageResponseHeader.from_ext_fields(ext)
    return SendResponse(
        code=response.code,
        offset_msg_id=rh.msg_id,
        queue_id=rh.queue_id,
        queue_offset=rh.queue_offset,
        transaction_id=rh.transaction_id,
        region_id=ext.get("MSG_REGION") or "DefaultRegion",
        trace_on=ext.get("TRACE_ON") != "false",
    )


def send_message(
    header: SendMessageRequestHeaderV2,
    body: bytes,
    *,
    batch: bool = False,
    oneway: bool = False,
    reply: bool = False,
) -> Call[SendResponse]:
    """SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE / SEND_REPLY_MESSAGE_V2 of a header made elsewhere
    (see :func:`send_message_request`; rocketq's clients use :func:`send_call`)."""
    kind = "a batch" if batch else "a reply" if reply else "a message"
    what = f"send of {kind} to {header.topic} queue {header.queue_id}"
    if header.default_topic != AUTO_CREATE_TOPIC_KEY_TOPIC:  # pragma: no cover - rocketq always sends TBW102
        what += f" (default topic {header.default_topic})"
    return Call(
        send_message_request(header, body, batch=batch, oneway=oneway, reply=reply),
        parse_send_response,
        what,
    )


def end_transaction(header: EndTransactionRequestHeader, *, remark: str | None = None) -> Call[None]:
    """END_TRANSACTION, oneway as Java's producer sends it (``endTransactionOneway``): commit (8),
    roll back (12) or "unknown" (0) the half message the header names; ``remark`` says why a
    local transaction failed (Java writes the exception there)."""
    state = {8: "commit", 12: "rollback"}.get(header.commit_or_rollback, "unknown state")
    request = RemotingCommand.request(
        RequestCode.END_TRANSACTION, header.to_ext_fields(), remark=remark, oneway=True
    )
    return Call(request, _oneway_none, f"{state} of transaction {header.msg_id}")


# ------------------------------------------------------------------------------------ consuming

PULL_STATUS: Final[dict[int, PullStatus]] = {
    int(ResponseCode.SUCCESS): PullStatus.FOUND,
    int(ResponseCode.PULL_NOT_FOUND): PullStatus.NO_NEW_MSG,
    int(ResponseCode.PULL_RETRY_IMMEDIATELY): PullStatus.NO_MATCHED_MSG,
    int(ResponseCode.PULL_OFFSET_MOVED): PullStatus.OFFSET_ILLEGAL,
}
"""The pull status each pull response code means (any other code is an error)."""


VIEW_FIELD: Final = "rqEpoch"
"""The ext field of rocketq's view fence: a :func:`view_stamp` (``"<epoch>/<read queues>"``). A
rocketq consumer sends the stamp it allocated a broker's queues under with each pull and offset
commit; rocketq's broker sends its own in a member-list answer asked with :data:`VIEW_TOPIC_FIELD`
and in a PULL_VIEW_CHANGED answer. A RocketMQ broker ignores it (see ``docs/rebalance.md``)."""
VIEW_QUEUES_FIELD: Final = "rqViewQueues"
"""The ext field of a PULL_VIEW_CHANGED answer: the broker's read queue count of the topic."""
PULL_BYTES_FIELD: Final = "rqPullBytes"
"""The ext field of a PULL_MESSAGE asking for a bulk answer of about this many bytes (a decimal
int): rocketq's broker then returns up to the request's ``maxMsgNums`` messages past its usual
cap of 32 (within its own bulk limits). A RocketMQ broker ignores it and caps as always."""


def view_stamp(epoch: int, queue_nums: int) -> str:
    """The stamp of what a consumer allocated one broker's queues of a topic under: the group's
    epoch on that broker (a number the broker raises on every change of the group's members or of
    the topic's queues, and never repeats) and the broker's read queue count of the topic. Equal
    stamps mean nothing changed in between: a list that changed and changed back has a new epoch.

    >>> view_stamp(7, 4)
    '7/4'
    >>> parse_view_stamp(view_stamp(2**33 + 1, 16))
    (8589934593, 16)
    """
    return f"{epoch}/{queue_nums}"


def parse_view_stamp(stamp: str) -> tuple[int, int]:
    """A :func:`view_stamp`'s epoch and queue count; :class:`RemoteProtocolError` if malformed."""
    epoch, sep, nums = stamp.partition("/")
    try:
        if not sep:
            raise ValueError(stamp)
        return int(epoch), int(nums)
    except ValueError:
        raise RemoteProtocolError(f"a malformed view stamp {stamp[:40]!r}") from None


def parse_pull_response(response: RemotingCommand) -> PullResult:
    """A pull's answer as a :class:`~rocketq.models.PullResult` (body kept only when FOUND);
    other codes raise their BrokerError."""
    status = PULL_STATUS.get(response.code)
    if status is None:
        if response.code == RocketQResponseCode.PULL_VIEW_CHANGED:
            return _view_changed(response)
        raise BrokerError.for_code(response.code, response.remark)
    rh = PullMessageResponseHeader.from_ext_fields(response.ext_fields)
    return PullResult(
        status,
        rh.next_begin_offset,
        rh.min_offset,
        rh.max_offset,
        rh.suggest_which_broker_id,
        response.body if status is PullStatus.FOUND else b"",
        response.remark or "",
    )


def _view_changed(response: RemotingCommand) -> PullResult:
    ext = response.ext_fields
    try:
        queue_nums = int(ext.get(VIEW_QUEUES_FIELD, "-1"))
        next_offset = int(ext.get("nextBeginOffset", "-1"))
    except ValueError:
        raise RemoteProtocolError(f"a PULL_VIEW_CHANGED answer with bad fields: {ext!r}") from None
    return PullResult(
        PullStatus.VIEW_CHANGED, next_offset, -1, -1, remark=response.remark or "", view_queue_nums=queue_nums
    )


def pull_message(
    header: PullMessageRequestHeader, *, view: str | None = None, bulk_bytes: int | None = None
) -> Call[PullResult]:
    """PULL_MESSAGE: up to ``max_msg_nums`` messages from ``queue_offset`` (FOUND, NO_NEW_MSG,
    NO_MATCHED_MSG or OFFSET_ILLEGAL). ``view``: the consumer's :func:`view_stamp` of the broker,
    sent as ``rqEpoch``; rocketq's broker answers VIEW_CHANGED when its own differs. ``bulk_bytes``:
    sent as ``rqPullBytes`` (see :data:`PULL_BYTES_FIELD`)."""
    extra: dict[str, str] = {}
    if view is not None:
        extra[VIEW_FIELD] = view
    if bulk_bytes is not None:
        extra[PULL_BYTES_FIELD] = str(bulk_bytes)
    fields = header.to_ext_fields(extra=extra) if extra else header.to_ext_fields()
    return Call(
        _request(RequestCode.PULL_MESSAGE, fields),
        parse_pull_response,
        f"pull of {header.topic} queue {header.queue_id} at {header.queue_offset}",
    )


def _parse_version(response: RemotingCommand) -> int:
    return check(response).version


def send_heartbeat(heartbeat: HeartbeatData) -> Call[int]:
    """HEART_BEAT with the client's producer and consumer data; the answer is the broker's version."""
    return Call(
        _request(RequestCode.HEART_BEAT, body=heartbeat.encode()),
        _parse_version,
        f"heartbeat of {heartbeat.client_id}",
    )


def check_client_config(group: str, client_id: str, subscription: SubscriptionData) -> Call[None]:
    """CHECK_CLIENT_CONFIG: may the broker serve this subscription? Java consumers ask it at start
    for every subscription that is not a tag expression (``checkClientInBroker``); a broker
    without ``enablePropertyFilter`` refuses an SQL92 one (SYSTEM_ERROR), a bad expression gets
    SUBSCRIPTION_PARSE_FAILED with the problem in the remark."""
    body = CheckClientRequestBody(client_id=client_id, group=group, subscription_data=subscription)
    return Call(
        _request(RequestCode.CHECK_CLIENT_CONFIG, body=body.encode()),
        _none,
        f"check of the {subscription.expression_type} subscription of group {group} to {subscription.topic}",
    )


def unregister_client(
    client_id: str, *, producer_group: str | None = None, consumer_group: str | None = None
) -> Call[None]:
    """UNREGISTER_CLIENT: the client leaves a producer group, a consumer group, or both."""
    header = UnregisterClientRequestHeader(
        client_id=client_id, producer_group=producer_group, consumer_group=consumer_group
    )
    group = producer_group or consumer_group
    return _header_call(RequestCode.UNREGISTER_CLIENT, header, _none, f"unregister {client_id} from {group}")


def _parse_consumer_ids(response: RemotingCommand) -> list[str]:
    check(response)
    if not response.body:
        return []
    return list(GetConsumerListByGroupResponseBody.decode(response.body).consumer_id_list)


def get_consumer_list_by_group(group: str) -> Call[list[str]]:
    """GET_CONSUMER_LIST_BY_GROUP: the client ids of the group's live members (unsorted)."""
    header = GetConsumerListByGroupRequestHeader(consumer_group=group)
    return _header_call(
        RequestCode.GET_CONSUMER_LIST_BY_GROUP, header, _parse_consumer_ids, f"members of group {group}"
    )


VIEW_TOPIC_FIELD: Final = "rqTopic"
"""The ext field a rocketq consumer adds to GET_CONSUMER_LIST_BY_GROUP: the topic it rebalances;
rocketq's broker answers with ``rqViewQueues``, its read queue count of that topic, and
``rqEpoch``, its :func:`view_stamp` of the group and topic."""


def _parse_consumer_view(response: RemotingCommand) -> tuple[list[str], int, str | None]:
    ids = _parse_consumer_ids(response)
    try:
        queue_nums = int(response.ext_fields.get(VIEW_QUEUES_FIELD, "-1"))
    except ValueError:
        raise RemoteProtocolError(f"a member list answer with a bad {VIEW_QUEUES_FIELD}") from None
    stamp = response.ext_fields.get(VIEW_FIELD)
    if stamp is not None:
        parse_view_stamp(stamp)
    return ids, queue_nums, stamp


def get_consumer_view(group: str, topic: str) -> Call[tuple[list[str], int, str | None]]:
    """GET_CONSUMER_LIST_BY_GROUP asked for ``topic`` (``rqTopic``): the group's members, the
    broker's read queue count of the topic - what the consumer allocates that broker's queues
    with - and the :func:`view_stamp` of both (the group's epoch). A RocketMQ broker answers the
    members only: the count is then -1 and the stamp ``None``."""
    header = GetConsumerListByGroupRequestHeader(consumer_group=group)
    fields = header.to_ext_fields(extra={VIEW_TOPIC_FIELD: topic})
    return Call(
        _request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, fields),
        _parse_consumer_view,
        f"members of group {group} and queues of {topic}",
    )


def _parse_consumer_offset(response: RemotingCommand) -> int | None:
    if response.code == ResponseCode.QUERY_NOT_FOUND:
        return None
    check(response)
    return QueryConsumerOffsetResponseHeader.from_ext_fields(response.ext_fields).offset


def query_consumer_offset(group: str, mq: MessageQueue) -> Call[int | None]:
    """QUERY_CONSUMER_OFFSET: the group's committed offset, ``None`` when the broker has none
    (QUERY_NOT_FOUND; a RocketMQ broker answers 0 instead while the queue's first message is
    still stored)."""
    header = QueryConsumerOffsetRequestHeader(consumer_group=group, topic=mq.topic, queue_id=mq.queue_id)
    return _header_call(
        RequestCode.QUERY_CONSUMER_OFFSET,
        header,
        _parse_consumer_offset,
        f"committed offset of group {group} on {_short(mq)}",
    )


def update_consumer_offset(
    group: str, mq: MessageQueue, offset: int, *, oneway: bool = False, view: str | None = None
) -> Call[None]:
    """UPDATE_CONSUMER_OFFSET (clients send it oneway every 5 s, and waited-for at shutdown).
    ``view``: the :func:`view_stamp` the consumer pulled the queue with (``rqEpoch``); rocketq's
    broker does not let a commit on a stale view move the offset back."""
    header = UpdateConsumerOffsetRequestHeader(
        consumer_group=group, topic=mq.topic, queue_id=mq.queue_id, commit_offset=offset
    )
    fields = header.to_ext_fields(extra={VIEW_FIELD: view}) if view is not None else header.to_ext_fields()
    return Call(
        _request(RequestCode.UPDATE_CONSUMER_OFFSET, fields, oneway=oneway),
        _oneway_none if oneway else _none,
        f"commit offset {offset} of group {group} on {_short(mq)}",
    )


def _offset_call(
    code: RequestCode,
    header: CommandHeader,
    answer: type[GetMaxOffsetResponseHeader | GetMinOffsetResponseHeader | SearchOffsetResponseHeader],
    what: str,
) -> Call[int]:
    """A call whose answer is the ``offset`` of its response header."""

    def parse(response: RemotingCommand) -> int:
        return answer.from_ext_fields(check(response).ext_fields).offset

    return _header_call(code, header, parse, what)


def get_max_offset(mq: MessageQueue) -> Call[int]:
    """GET_MAX_OFFSET: the offset the queue's next message will get."""
    header = GetMaxOffsetRequestHeader(topic=mq.topic, queue_id=mq.queue_id)
    return _offset_call(
        RequestCode.GET_MAX_OFFSET, header, GetMaxOffsetResponseHeader, f"max offset of {_short(mq)}"
    )


def get_min_offset(mq: MessageQueue) -> Call[int]:
    """GET_MIN_OFFSET: the queue's smallest offset still stored."""
    header = GetMinOffsetRequestHeader(topic=mq.topic, queue_id=mq.queue_id)
    return _offset_call(
        RequestCode.GET_MIN_OFFSET, header, GetMinOffsetResponseHeader, f"min offset of {_short(mq)}"
    )


def search_offset(mq: MessageQueue, timestamp_ms: int) -> Call[int]:
    """SEARCH_OFFSET_BY_TIMESTAMP: the offset of the message stored nearest ``timestamp_ms``."""
    header = SearchOffsetRequestHeader(topic=mq.topic, queue_id=mq.queue_id, timestamp=timestamp_ms)
    return _offset_call(
        RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
        header,
        SearchOffsetResponseHeader,
        f"offset of {_short(mq)} at {timestamp_ms}",
    )


def consumer_send_msg_back(header: ConsumerSendMsgBackRequestHeader) -> Call[None]:
    """CONSUMER_SEND_MSG_BACK: the broker re-queues a failed message on the group's retry topic."""
    return _header_call(
        RequestCode.CONSUMER_SEND_MSG_BACK,
        header,
        _none,
        f"send back of message at {header.offset} for group {header.group}",
    )


def _parse_locked(response: RemotingCommand) -> set[MessageQueue]:
    check(response)
    if not response.body:
        return set()
    return set(LockBatchResponseBody.decode(response.body).lock_ok_mq_set)


LEASE_FIELD: Final = "rqLease"
"""The ext field of a LOCK_BATCH_MQ of rocketq's clean handoff (concurrent consumption): the locks
are leases, which rocketq's broker frees as soon as their holder leaves the group. Orderly
consumers' locks go without it: the broker keeps them their full life, as RocketMQ's does, since a
consumer cut off or frozen may still be processing what it holds. A RocketMQ broker ignores it."""


def lock_batch_mq(
    group: str, client_id: str, mqs: Iterable[MessageQueue], *, lease: bool = False
) -> Call[set[MessageQueue]]:
    """LOCK_BATCH_MQ: the queues the broker locked (or renewed) for ``client_id``; ``lease``: the
    clean handoff's (:data:`LEASE_FIELD`)."""
    body = LockBatchRequestBody(consumer_group=group, client_id=client_id, mq_set=tuple(mqs))
    return Call(
        _request(RequestCode.LOCK_BATCH_MQ, {LEASE_FIELD: "1"} if lease else None, body=body.encode()),
        _parse_locked,
        f"lock of queues for {client_id}",
    )


def unlock_batch_mq(
    group: str, client_id: str, mqs: Iterable[MessageQueue], *, oneway: bool = False
) -> Call[None]:
    """UNLOCK_BATCH_MQ: release ``client_id``'s locks on ``mqs``."""
    body = UnlockBatchRequestBody(consumer_group=group, client_id=client_id, mq_set=tuple(mqs))
    return Call(
        _request(RequestCode.UNLOCK_BATCH_MQ, body=body.encode(), oneway=oneway),
        _oneway_none if oneway else _none,
        f"unlock of queues for {client_id}",
    )


# ------------------------------------------------------------------------------------ admin


def create_topic(
    topic: str,
    read_queues: int,
    write_queues: int,
    *,
    perm: int = 6,
    order: bool = False,
    force_system_topic: bool = False,
) -> Call[None]:
    """UPDATE_AND_CREATE_TOPIC for one broker, as ``mqadmin updateTopic`` sends it (default topic
    ``TBW102``, single-tag filter, no system flag); ``perm`` 6 is read and write.
    ``force_system_topic`` adds rocketq's override of a system topic (:data:`FORCE_SYSTEM_TOPIC_FIELD`)."""
    header = CreateTopicRequestHeader(
        topic=topic,
        default_topic=AUTO_CREATE_TOPIC_KEY_TOPIC,
        read_queue_nums=read_queues,
        write_queue_nums=write_queues,
        perm=perm,
        topic_filter_type="SINGLE_TAG",
        topic_sys_flag=0,
        order=order,
    )
    ext = _forced(header.to_ext_fields(), topic, force_system_topic)
    return Call(_request(RequestCode.UPDATE_AND_CREATE_TOPIC, ext), _none, f"create topic {topic}")


def delete_topic_in_broker(topic: str, *, force_system_topic: bool = False) -> Call[None]:
    """DELETE_TOPIC_IN_BROKER (with rocketq's override of a system topic when ``force_system_topic``)."""
    ext = _forced(DeleteTopicRequestHeader(topic=topic).to_ext_fields(), topic, force_system_topic)
    return Call(_request(RequestCode.DELETE_TOPIC_IN_BROKER, ext), _none, f"delete topic {topic}")


def _forced(ext: dict[str, str], topic: str, force: bool) -> dict[str, str]:
    return {**ext, FORCE_SYSTEM_TOPIC_FIELD: topic} if force else ext


def _parse_topic_stats(response: RemotingCommand) -> TopicStatsTable | None:
    if response.code == ResponseCode.TOPIC_NOT_EXIST:
        return None
    return TopicStatsTable.decode(check(response).body)


def get_topic_stats_info(topic: str) -> Call[TopicStatsTable | None]:
    """GET_TOPIC_STATS_INFO: per queue min/max offset and last store time; ``None`` when this
    broker does not hold the topic."""
    header = GetTopicStatsInfoRequestHeader(topic=topic)
    return _header_call(
        RequestCode.GET_TOPIC_STATS_INFO, header, _parse_topic_stats, f"topic stats of {topic}"
    )


def _parse_consumer_connection(response: RemotingCommand) -> ConsumerConnection | None:
    if response.code == ResponseCode.CONSUMER_NOT_ONLINE:
        return None
    return ConsumerConnection.decode(check(response).body)


def get_consumer_connection_list(group: str) -> Call[ConsumerConnection | None]:
    """GET_CONSUMER_CONNECTION_LIST: the group's connections and subscriptions; ``None`` when the
    group has no live member on this broker (CONSUMER_NOT_ONLINE)."""
    header = GetConsumerConnectionListRequestHeader(consumer_group=group)
    return _header_call(
        RequestCode.GET_CONSUMER_CONNECTION_LIST,
        header,
        _parse_consumer_connection,
        f"connections of group {group}",
    )


def _parse_running_info(response: RemotingCommand) -> ConsumerRunningInfo:
    return ConsumerRunningInfo.decode(check(response).body)


def get_consumer_running_info(
    group: str, client_id: str, *, jstack: bool = False
) -> Call[ConsumerRunningInfo]:
    """GET_CONSUMER_RUNNING_INFO, relayed by the broker to the client: its queues, offsets and
    properties (strategy, consume type, ...)."""
    header = GetConsumerRunningInfoRequestHeader(
        consumer_group=group, client_id=client_id, jstack_enable=jstack
    )
    return _header_call(
        RequestCode.GET_CONSUMER_RUNNING_INFO, header, _parse_running_info, f"running info of {client_id}"
    )


def _parse_consume_stats(response: RemotingCommand) -> ConsumeStats:
    return ConsumeStats.decode(check(response).body)


def get_consume_stats(group: str, topic: str | None = None) -> Call[ConsumeStats]:
    """GET_CONSUME_STATS: per queue the broker offset and the group's consumer offset."""
    header = GetConsumeStatsRequestHeader(consumer_group=group, topic=topic)
    return _header_call(
        RequestCode.GET_CONSUME_STATS, header, _parse_consume_stats, f"consume stats of {group}"
    )


def _parse_all_offsets(response: RemotingCommand) -> ConsumerOffsetSerializeWrapper:
    body = check(response).body
    return ConsumerOffsetSerializeWrapper.decode(body) if body else ConsumerOffsetSerializeWrapper()


def get_all_consumer_offset() -> Call[ConsumerOffsetSerializeWrapper]:
    """GET_ALL_CONSUMER_OFFSET: every group's committed offsets on the broker (``topic@group`` keys)."""
    return Call(_request(RequestCode.GET_ALL_CONSUMER_OFFSET), _parse_all_offsets, "committed offsets")


def _parse_body(response: RemotingCommand) -> bytes:
    return check(response).body or b""


def get_all_delay_offset() -> Call[bytes]:
    """GET_ALL_DELAY_OFFSET: the schedule service's progress per delay level, as the bytes of
    ``delayOffset.json`` (a slave writes them to its own file, as RocketMQ's does)."""
    return Call(_request(RequestCode.GET_ALL_DELAY_OFFSET), _parse_body, "delay offsets")


def _parse_reset(response: RemotingCommand) -> dict[MessageQueue, int]:
    body = check(response).body
    return dict(ResetOffsetBody.decode(body).offset_table) if body else {}


def invoke_broker_to_reset_offset(
    topic: str, group: str, timestamp_ms: int, *, force: bool = True
) -> Call[dict[MessageQueue, int]]:
    """INVOKE_BROKER_TO_RESET_OFFSET (``resetOffsetByTime``): the offsets the broker reset to.
    A RocketMQ broker answers CONSUMER_NOT_ONLINE for a group with no live member."""
    header = ResetOffsetRequestHeader(topic=topic, group=group, timestamp=timestamp_ms, is_force=force)
    return _header_call(
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, header, _parse_reset, f"reset offsets of {group}"
    )


def _duplicates_parser(addr: str) -> Callable[[RemotingCommand], list[DuplicateClientId] | None]:
    def parse(response: RemotingCommand) -> list[DuplicateClientId] | None:
        if response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
            return None
        body = check(response).body
        try:
            entries = json.loads(body or b"{}").get("duplicates", [])
            return [
                DuplicateClientId(str(e["group"]), str(e["clientId"]), addr, tuple(map(str, e["addresses"])))
                for e in entries
            ]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise RemoteProtocolError(
                f"duplicate client id answer from {addr} is not readable: {exc}"
            ) from None

    return parse


def query_duplicate_client_ids(addr: str, group: str | None = None) -> Call[list[DuplicateClientId] | None]:
    """rocketq's QUERY_DUPLICATE_CLIENT_IDS (10901) to the broker at ``addr``: client ids several
    live connections registered (of one group, or all); ``None`` from a broker without it."""
    return Call(
        _request(
            RocketQRequestCode.QUERY_DUPLICATE_CLIENT_IDS,
            {"consumerGroup": group} if group is not None else {},
        ),
        _duplicates_parser(addr),
        "duplicate client ids",
    )


# ------------------------------------------------------------------------------------ monitoring
# What the dashboard and the exporter read (RocketMQ Dashboard's and rocketmq-exporter's calls).


def _parse_kv_table(response: RemotingCommand) -> dict[str, str]:
    body = check(response).body
    return dict(KVTable.decode(body).table) if body else {}


def get_broker_runtime_info() -> Call[dict[str, str]]:
    """GET_BROKER_RUNTIME_INFO (``mqadmin brokerStatus``): the broker's runtime table, name to
    text (``putTps``, ``getTransferedTps``, ``commitLogDiskRatio``, ``brokerVersionDesc``, ...).
    RocketMQ writes rates as three numbers, over 10 s, 60 s and 600 s (``"12.0 11.5 9.8"``)."""
    return Call(_request(RequestCode.GET_BROKER_RUNTIME_INFO), _parse_kv_table, "broker runtime info")


def _parse_topic_configs(response: RemotingCommand) -> TopicConfigSerializeWrapper:
    body = check(response).body
    return TopicConfigSerializeWrapper.decode(body) if body else TopicConfigSerializeWrapper()


def get_all_topic_config() -> Call[TopicConfigSerializeWrapper]:
    """GET_ALL_TOPIC_CONFIG: every topic the broker holds with its queue counts and permissions
    (one request for all topics, where routes would take one per topic)."""
    return Call(_request(RequestCode.GET_ALL_TOPIC_CONFIG), _parse_topic_configs, "topic configs")


def _parse_group_configs(response: RemotingCommand) -> SubscriptionGroupWrapper:
    body = check(response).body
    return SubscriptionGroupWrapper.decode(body) if body else SubscriptionGroupWrapper()


def get_all_subscription_group_config() -> Call[SubscriptionGroupWrapper]:
    """GET_ALL_SUBSCRIPTIONGROUP_CONFIG: every consumer group the broker has a config for (a
    broker creates one when a group first connects)."""
    return Call(
        _request(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG), _parse_group_configs, "consumer group configs"
    )


def _parse_group_list(response: RemotingCommand) -> list[str]:
    body = check(response).body
    return sorted(GroupList.decode(body).group_list) if body else []


def query_topic_consume_by_who(topic: str) -> Call[list[str]]:
    """QUERY_TOPIC_CONSUME_BY_WHO: the consumer groups the broker sees consuming ``topic`` (online,
    or with committed offsets), sorted."""
    header = QueryTopicConsumeByWhoRequestHeader(topic=topic)
    return _header_call(
        RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, header, _parse_group_list, f"groups consuming {topic}"
    )


def _parse_producer_connection(response: RemotingCommand) -> ProducerConnection | None:
    if response.code == ResponseCode.SYSTEM_ERROR and "not exist" in (response.remark or ""):
        return None  # RocketMQ's answer for a group with no live producer on this broker
    return ProducerConnection.decode(check(response).body)


def get_producer_connection_list(group: str) -> Call[ProducerConnection | None]:
    """GET_PRODUCER_CONNECTION_LIST: the producer group's live connections; ``None`` when the
    broker has none (RocketMQ answers SYSTEM_ERROR "the producer group[...] not exist")."""
    header = GetProducerConnectionListRequestHeader(producer_group=group)
    return _header_call(
        RequestCode.GET_PRODUCER_CONNECTION_LIST,
        header,
        _parse_producer_connection,
        f"connections of producer group {group}",
    )


def _parse_one_message(response: RemotingCommand) -> MessageExt:
    found = decode_messages(check(response).body)
    if len(found) != 1:
        raise RemoteProtocolError(f"VIEW_MESSAGE_BY_ID answered {len(found)} messages, expected 1")
    return found[0]


def view_message_by_id(commit_log_offset: int) -> Call[MessageExt]:
    """VIEW_MESSAGE_BY_ID: the stored message at ``commit_log_offset`` of the broker asked (the
    offset an offset message id carries, with the broker's address)."""
    header = ViewMessageRequestHeader(offset=commit_log_offset)
    return _header_call(
        RequestCode.VIEW_MESSAGE_BY_ID,
        header,
        _parse_one_message,
        f"message at commit-log offset {commit_log_offset}",
    )


_UNIQUE_KEY_QUERY: Final = "_UNIQUE_KEY_QUERY"  # MixAll.UNIQUE_MSG_QUERY_FLAG
_JAVA_LONG_MAX: Final = (1 << 63) - 1


def _query_parser(topic: str, key: str, unique: bool) -> Callable[[RemotingCommand], list[MessageExt]]:
    def parse(response: RemotingCommand) -> list[MessageExt]:
        if response.code == ResponseCode.QUERY_NOT_FOUND:
            return []
        found = decode_messages(check(response).body)
        # a RocketMQ broker answers every entry of the key's hash slot: keep the real matches,
        # as Java's MQAdminImpl.queryMessage does (rocketq's broker sends only those)
        if unique:
            return [m for m in found if m.msg_id == key]
        return [m for m in found if m.topic == topic and key in m.key_list]

    return parse


def query_message(
    topic: str,
    key: str,
    *,
    unique: bool = False,
    max_num: int = 32,
    begin_ms: int = 0,
    end_ms: int = _JAVA_LONG_MAX,
) -> Call[list[MessageExt]]:
    """QUERY_MESSAGE: ``topic``'s messages stored between ``begin_ms`` and ``end_ms`` whose key
    is ``key`` (``unique``: whose unique id, the ``UNIQ_KEY`` a producer returns as msg id, is
    ``key``), at most ``max_num``; none is an empty list (QUERY_NOT_FOUND). Entries that only
    share the key's hash slot, which a RocketMQ broker returns too, are dropped."""
    header = QueryMessageRequestHeader(
        topic=topic, key=key, max_num=max_num, begin_timestamp=begin_ms, end_timestamp=end_ms
    )
    flag = {_UNIQUE_KEY_QUERY: "true" if unique else "false"}
    return Call(
        _request(RequestCode.QUERY_MESSAGE, header.to_ext_fields(extra=flag)),
        _query_parser(topic, key, unique),
        f"messages of {topic} with {'id' if unique else 'key'} {key}",
    )
