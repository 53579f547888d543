"""Typed asynchronous calls a client makes to name servers and brokers (``MQClientAPIImpl``).

Every method builds the request a RocketMQ 4.9.4 Java client builds for the same call (same
request code, header class and ext-field names, body shape), sends it over one shared
:class:`~rocketq.remoting.RemotingClient`, and turns the answer into values or a
:class:`~rocketq.errors.BrokerError` (by response code). Transport failures raise
:class:`~rocketq.errors.RemotingError` subclasses unchanged.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rocketq.errors import BrokerError, ConfigError, RemotingError
from rocketq.models import MessageQueue
from rocketq.protocol.bodies import (
    GetConsumerListByGroupResponseBody,
    HeartbeatData,
    LockBatchRequestBody,
    LockBatchResponseBody,
    TopicRouteData,
    UnlockBatchRequestBody,
)
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.command import FLAG_ONEWAY, RemotingCommand
from rocketq.protocol.headers import (
    ConsumerSendMsgBackRequestHeader,
    GetConsumerListByGroupRequestHeader,
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    GetRouteInfoRequestHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketq.remoting.client import RemotingClient

__all__ = ["ClientAPI", "PullResponse", "SendResponse", "parse_send_response", "send_message_request"]

logger = logging.getLogger(__name__)


async def not_a_name_server(remoting: RemotingClient, addr: str, timeout: float) -> ConfigError:
    """The error for a "name server" at ``addr`` that refused a name-server request as unknown:
    a broker (it answers GET_BROKER_CONFIG, which only brokers do) or some other server."""
    request = RemotingCommand.request(RequestCode.GET_BROKER_CONFIG)
    try:
        probe = await remoting.invoke(addr, request, timeout)
        broker = probe.code == ResponseCode.SUCCESS
    except RemotingError:
        broker = False
    if broker:
        return ConfigError(f"{addr} is a broker, not a name server (give the name server's address)")
    return ConfigError(f"{addr} is not a name server: it does not know name-server requests")


def _check(response: RemotingCommand, *ok: int) -> RemotingCommand:
    if response.code == ResponseCode.SUCCESS or response.code in ok:
        return response
    raise BrokerError.for_code(response.code, response.remark)


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


def send_message_request(
    header: SendMessageRequestHeaderV2, body: bytes, *, batch: bool = False, oneway: bool = False
) -> RemotingCommand:
    """The SEND_MESSAGE_V2 (or SEND_BATCH_MESSAGE) request for ``header`` and ``body``."""
    code = RequestCode.SEND_BATCH_MESSAGE if batch else RequestCode.SEND_MESSAGE_V2
    return RemotingCommand.request(code, header.to_ext_fields(), body, oneway=oneway)


def parse_send_response(response: RemotingCommand) -> SendResponse:
    """A send's answer: SUCCESS or a flush/slave code as a :class:`SendResponse`, any other code
    raised as its :class:`~rocketq.errors.BrokerError`."""
    _check(
        response,
        ResponseCode.FLUSH_DISK_TIMEOUT,
        ResponseCode.FLUSH_SLAVE_TIMEOUT,
        ResponseCode.SLAVE_NOT_AVAILABLE,
    )
    rh = SendMessageResponseHeader.from_ext_fields(response.ext_fields)
    ext = response.ext_fields
    return SendResponse(
        code=response.code,
        offset_msg_id=rh.msg_id,
        queue_id=rh.queue_id,
        queue_offset=rh.queue_offset,
        transaction_id=rh.transaction_id,
        region_id=ext.get("MSG_REGION") or "DefaultRegion",
        trace_on=ext.get("TRACE_ON") != "false",
    )


@dataclass(frozen=True, slots=True)
class PullResponse:
    """A broker's answer to a pull, not yet decoded: response code, offsets and the raw body."""

    code: int
    next_begin_offset: int
    min_offset: int
    max_offset: int
    suggest_which_broker_id: int
    body: bytes


class ClientAPI:
    """The requests of one client instance, over one :class:`RemotingClient`.

    ``namesrv_addrs`` are tried in turn for route lookups: the one that last answered is asked
    first, as Java's client sticks to one name server until it fails.
    """

    def __init__(
        self, remoting: RemotingClient, namesrv_addrs: Sequence[str], *, timeout: float = 3.0
    ) -> None:
        self.remoting = remoting
        self.namesrv_addrs = tuple(namesrv_addrs)
        self.timeout = timeout
        self._namesrv_index = 0

    # ---------------------------------------------------------------- name server

    async def get_topic_route(self, topic: str, timeout: float | None = None) -> TopicRouteData | None:
        """The topic's route, or ``None`` when the name server says TOPIC_NOT_EXIST."""
        header = GetRouteInfoRequestHeader(topic=topic)
        last_error: Exception | None = None
        n = len(self.namesrv_addrs)
        for i in range(n):
            index = (self._namesrv_index + i) % n
            addr = self.namesrv_addrs[index]
            request = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, header.to_ext_fields())
            try:
                response = await self.remoting.invoke(addr, request, timeout or self.timeout)
            except RemotingError as exc:
                last_error = exc
                logger.debug("name server %s failed: %s", addr, exc)
                continue
            self._namesrv_index = index
            if response.code == ResponseCode.TOPIC_NOT_EXIST:
                return None
            if response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
                raise await not_a_name_server(self.remoting, addr, timeout or self.timeout)
            _check(response)
            if not response.body:
                return None
            return TopicRouteData.decode(response.body)
        assert last_error is not None
        raise last_error

    # ---------------------------------------------------------------- producing

    async def send_message(
        self, addr: str, request: RemotingCommand, *, timeout: float | None = None
    ) -> SendResponse | None:
        """Send a SEND_MESSAGE_V2 or SEND_BATCH_MESSAGE ``request`` (see
        :func:`send_message_request`); ``None`` when it is oneway."""
        if request.flag & FLAG_ONEWAY:
            await self.remoting.invoke_oneway(addr, request)
            return None
        return parse_send_response(await self.remoting.invoke(addr, request, timeout or self.timeout))

    # ---------------------------------------------------------------- consuming

    async def pull_message(self, addr: str, header: PullMessageRequestHeader, timeout: float) -> PullResponse:
        """PULL_MESSAGE: FOUND, PULL_NOT_FOUND, PULL_RETRY_IMMEDIATELY or PULL_OFFSET_MOVED."""
        request = RemotingCommand.request(RequestCode.PULL_MESSAGE, header.to_ext_fields())
        response = await self.remoting.invoke(addr, request, timeout)
        _check(
            response,
            ResponseCode.PULL_NOT_FOUND,
            ResponseCode.PULL_RETRY_IMMEDIATELY,
            ResponseCode.PULL_OFFSET_MOVED,
        )
        rh = PullMessageResponseHeader.from_ext_fields(response.ext_fields)
        return PullResponse(
            code=response.code,
            next_begin_offset=rh.next_begin_offset,
            min_offset=rh.min_offset,
            max_offset=rh.max_offset,
            suggest_which_broker_id=rh.suggest_which_broker_id,
            body=response.body,
        )

    async def send_heartbeat(self, addr: str, heartbeat: HeartbeatData, timeout: float | None = None) -> int:
        """HEART_BEAT; returns the broker's version."""
        request = RemotingCommand.request(RequestCode.HEART_BEAT, body=heartbeat.encode())
        response = _check(await self.remoting.invoke(addr, request, timeout or self.timeout))
        return response.version

    async def unregister_client(
        self,
        addr: str,
        client_id: str,
        *,
        producer_group: str | None = None,
        consumer_group: str | None = None,
        timeout: float | None = None,
    ) -> None:
        header = UnregisterClientRequestHeader(
            client_id=client_id, producer_group=producer_group, consumer_group=consumer_group
        )
        request = RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, header.to_ext_fields())
        _check(await self.remoting.invoke(addr, request, timeout or self.timeout))

    async def get_consumer_id_list(self, addr: str, group: str, timeout: float | None = None) -> list[str]:
        header = GetConsumerListByGroupRequestHeader(consumer_group=group)
        request = RemotingCommand.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, header.to_ext_fields())
        response = _check(await self.remoting.invoke(addr, request, timeout or self.timeout))
        if not response.body:
            return []
        return list(GetConsumerListByGroupResponseBody.decode(response.body).consumer_id_list)

    async def query_consumer_offset(
        self, addr: str, group: str, mq: MessageQueue, timeout: float | None = None
    ) -> int:
        """QUERY_CONSUMER_OFFSET; raises the BrokerError of QUERY_NOT_FOUND (22) when the group has none."""
        header = QueryConsumerOffsetRequestHeader(consumer_group=group, topic=mq.topic, queue_id=mq.queue_id)
        request = RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, header.to_ext_fields())
        response = _check(await self.remoting.invoke(addr, request, timeout or self.timeout))
        return QueryConsumerOffsetResponseHeader.from_ext_fields(response.ext_fields).offset

    async def update_consumer_offset(
        self,
        addr: str,
        group: str,
        mq: MessageQueue,
        offset: int,
        *,
        oneway: bool,
        timeout: float | None = None,
    ) -> None:
        header = UpdateConsumerOffsetRequestHeader(
            consumer_group=group, topic=mq.topic, queue_id=mq.queue_id, commit_offset=offset
        )
        request = RemotingCommand.request(
            RequestCode.UPDATE_CONSUMER_OFFSET, header.to_ext_fields(), oneway=oneway
        )
        if oneway:
            await self.remoting.invoke_oneway(addr, request)
            return
        _check(await self.remoting.invoke(addr, request, timeout or self.timeout))

    async def get_max_offset(self, addr: str, mq: MessageQueue, timeout: float | None = None) -> int:
        header = GetMaxOffsetRequestHeader(topic=mq.topic, queue_id=mq.queue_id)
        request = RemotingCommand.request(RequestCode.GET_MAX_OFFSET, header.to_ext_fields())
        response = _check(await self.remoting.invoke(addr, request, timeout or self.timeout))
        return GetMaxOffsetResponseHeader.from_ext_fields(response.ext_fields).offset

    async def get_min_offset(self, addr: str, mq: MessageQueue, timeout: float | None = None) -> int:
        header = GetMinOffsetRequestHeader(topic=mq.topic, queue_id=mq.queue_id)
        request = RemotingCommand.request(RequestCode.GET_MIN_OFFSET, header.to_ext_fields())
        response = _check(await self.remoting.invoke(addr, request, timeout or self.timeout))
        return GetMinOffsetResponseHeader.from_ext_fields(response.ext_fields).offset

    async def search_offset(
        self, addr: str, mq: MessageQueue, timestamp_ms: int, timeout: float | None = None
    ) -> int:
        header = SearchOffsetRequestHeader(topic=mq.topic, queue_id=mq.queue_id, timestamp=timestamp_ms)
        request = RemotingCommand.request(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, header.to_ext_fields())
        response = _check(await self.remoting.invoke(addr, request, timeout or self.timeout))
        return SearchOffsetResponseHeader.from_ext_fields(response.ext_fields).offset

    async def consumer_send_msg_back(
        self, addr: str, header: ConsumerSendMsgBackRequestHeader, timeout: float | None = None
    ) -> None:
        request = RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, header.to_ext_fields())
        _check(await self.remoting.invoke(addr, request, timeout or self.timeout))

    async def lock_batch_mq(
        self, addr: str, group: str, client_id: str, mqs: Iterable[MessageQueue], timeout: float | None = None
    ) -> set[MessageQueue]:
        """LOCK_BATCH_MQ; the queues the broker locked for ``client_id``."""
        body = LockBatchRequestBody(consumer_group=group, client_id=client_id, mq_set=tuple(mqs))
        request = RemotingCommand.request(RequestCode.LOCK_BATCH_MQ, body=body.encode())
        response = _check(await self.remoting.invoke(addr, request, timeout or self.timeout))
        if not response.body:
            return set()
        return set(LockBatchResponseBody.decode(response.body).lock_ok_mq_set)

    async def unlock_batch_mq(
        self,
        addr: str,
        group: str,
        client_id: str,
        mqs: Iterable[MessageQueue],
        *,
        oneway: bool,
        timeout: float | None = None,
    ) -> None:
        body = UnlockBatchRequestBody(consumer_group=group, client_id=client_id, mq_set=tuple(mqs))
        request = RemotingCommand.request(RequestCode.UNLOCK_BATCH_MQ, body=body.encode(), oneway=oneway)
        if oneway:
            await self.remoting.invoke_oneway(addr, request)
            return
        _check(await self.remoting.invoke(addr, request, timeout or self.timeout))
