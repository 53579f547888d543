"""Request handlers of the name server: RocketMQ 4.9.4's ``DefaultRequestProcessor`` over our route table.

:class:`NamesrvProcessor` turns each request into a call on the :class:`~rocketq.namesrv.routes.RouteTable`
or the :class:`~rocketq.namesrv.kvconfig.KVConfig` and builds the response exactly as the Java name
server does: the same codes and remarks, ``"extFields":{}`` where Java attaches a response header
whose fields are all null and no ext fields where it attaches none, and bodies written as fastjson
writes them. Handlers are plain functions of ``(connection, request)``, with the connection used
only as an identity (the broker's registration is tied to it), so they run without a socket in
unit tests and on :class:`~rocketq.remoting.RemotingServer` unchanged.

Two version-dependent details, as in 4.9.4:

* ``REGISTER_BROKER`` from a broker older than 3.0.11 carries a bare ``TopicConfigSerializeWrapper``;
  newer ones send a ``RegisterBrokerBody`` (topics plus filter servers), deflated in a binary
  layout when the header says ``compressed=true``. A non-zero ``bodyCrc32`` is checked first.
* ``GET_ROUTEINFO_BY_TOPIC`` answers clients of version 4.9.4 or later, and clients that ask with
  ``acceptStandardJsonOnly=true``, in standard JSON (quoted broker ids, sorted maps); older
  clients get fastjson's native form (``{0:"127.0.0.1:10911"}``).

A request code the name server does not serve has no handler here; the remoting server answers it
``REQUEST_CODE_NOT_SUPPORTED``. (RocketMQ's name server sends no answer at all, leaving the client to
time out; answering at once is the one deliberate difference.) A request whose header or body
cannot be decoded raises :class:`~rocketq.errors.RemoteProtocolError`, which the remoting layer
answers ``SYSTEM_ERROR`` with the reason, as Java answers its decoding exceptions.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import zlib
from collections.abc import Awaitable, Callable, Hashable, Mapping

from rocketq.errors import RemoteProtocolError
from rocketq.namesrv.kvconfig import ORDER_TOPIC_CONFIG, KVConfig
from rocketq.namesrv.routes import RegisterBrokerResult, RouteTable
from rocketq.protocol.bodies import (
    MAX_INFLATED_REGISTER_BODY,
    DataVersion,
    KVTable,
    RegisterBrokerBody,
    TopicConfigSerializeWrapper,
    TopicList,
)
from rocketq.protocol.codes import MQVersion, RequestCode, ResponseCode
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import (
    AddWritePermOfBrokerRequestHeader,
    AddWritePermOfBrokerResponseHeader,
    DeleteKVConfigRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    GetKVListByNamespaceRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    PutKVConfigRequestHeader,
    QueryDataVersionRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnRegisterBrokerRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
)
from rocketq.remoting import RemotingConnection

__all__ = ["FAQ_SUFFIX", "NamesrvHandler", "NamesrvProcessor", "topic_not_exist_remark"]

log = logging.getLogger(__name__)

#: ``handler(connection, request) -> response``; the connection is only used as an identity (and,
#: when it is a :class:`~rocketq.remoting.RemotingConnection`, to decode a large body off the
#: event loop: the response is then an awaitable).
NamesrvHandler = Callable[[Hashable, RemotingCommand], RemotingCommand | Awaitable[RemotingCommand] | None]

#: Topics of a large registration written between two looks at the clock (about 10 µs each).
_TOPIC_PART = 256
#: How many times its size a deflated body may inflate to (zlib's best is about 1,030).
_INFLATION = 1024

FAQ_SUFFIX = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."
"""What RocketMQ appends to a ``TOPIC_NOT_EXIST`` remark (``FAQUrl.suggestTodo(APPLY_TOPIC_URL)``)."""


def topic_not_exist_remark(topic: str) -> str:
    """The remark of the name server's ``TOPIC_NOT_EXIST`` answer, word for word RocketMQ's."""
    return f"No topic route info in name server for the topic: {topic}{FAQ_SUFFIX}"


def _crc32(body: bytes) -> int:
    """RocketMQ's ``UtilAll.crc32``: CRC-32 masked to a non-negative Java int."""
    return zlib.crc32(body) & 0x7FFFFFFF


class NamesrvProcessor:
    """The name server's request handlers, bound to one route table and one KV config.

    ``clock`` gives the ``now`` the route table works with (float seconds, monotonic);
    ``order_message_enable`` is RocketMQ's ``NamesrvConfig.orderMessageEnable`` (default off):
    when on, a route carries the topic's ``ORDER_TOPIC_CONFIG`` KV value as ``orderTopicConf``.
    ``max_nonstandard_json``, ``max_register_topics`` and ``max_register_inflated`` bound what a
    request body may cost to decode (see :class:`~rocketq.namesrv.server.NamesrvConfig`; ``None``:
    unbounded).
    """

    def __init__(
        self,
        routes: RouteTable,
        kv_config: KVConfig,
        *,
        clock: Callable[[], float] = time.monotonic,
        order_message_enable: bool = False,
        max_nonstandard_json: int | None = None,
        max_register_topics: int | None = None,
        max_register_inflated: int = MAX_INFLATED_REGISTER_BODY,
    ) -> None:
        self.routes = routes
        self._max_nonstandard = max_nonstandard_json
        self._max_topics = max_register_topics
        self._max_inflated = max_register_inflated
        self.kv_config = kv_config
        self._clock = clock
        self._order_message_enable = order_message_enable
        self._handlers: dict[int, NamesrvHandler] = {
            RequestCode.PUT_KV_CONFIG: self.put_kv_config,
            RequestCode.GET_KV_CONFIG: self.get_kv_config,
            RequestCode.DELETE_KV_CONFIG: self.delete_kv_config,
            RequestCode.QUERY_DATA_VERSION: self.query_data_version,
            RequestCode.REGISTER_BROKER: self.register_broker,
            RequestCode.UNREGISTER_BROKER: self.unregister_broker,
            RequestCode.GET_ROUTEINFO_BY_TOPIC: self.get_route_info,
            RequestCode.GET_BROKER_CLUSTER_INFO: self.get_broker_cluster_info,
            RequestCode.WIPE_WRITE_PERM_OF_BROKER: self.wipe_write_perm_of_broker,
            RequestCode.ADD_WRITE_PERM_OF_BROKER: self.add_write_perm_of_broker,
            RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: self.get_all_topic_list,
            RequestCode.DELETE_TOPIC_IN_NAMESRV: self.delete_topic,
            RequestCode.GET_KVLIST_BY_NAMESPACE: self.get_kv_list_by_namespace,
            RequestCode.GET_TOPICS_BY_CLUSTER: self.get_topics_by_cluster,
            RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS: self.get_system_topic_list,
            RequestCode.GET_UNIT_TOPIC_LIST: self.get_unit_topic_list,
            RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST: self.get_has_unit_sub_topic_list,
            RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: self.get_has_unit_sub_ununit_topic_list,
        }

    @property
    def handlers(self) -> Mapping[int, NamesrvHandler]:
        """Request code -> handler, for every code the name server serves."""
        return self._handlers

    def process(self, conn: Hashable, request: RemotingCommand) -> RemotingCommand | None:
        """Handle one request (``None`` for a code the name server does not serve) from ``conn``,
        an identity that is not a :class:`~rocketq.remoting.RemotingConnection`: it is answered
        at once, whatever the size of its body."""
        if isinstance(conn, RemotingConnection):
            raise TypeError(
                "process() answers plain identities; a RemotingConnection's handler may answer later"
            )
        handler = self._handlers.get(request.code)
        if handler is None:
            return None
        answer = handler(conn, request)
        assert answer is None or isinstance(answer, RemotingCommand)  # only a connection offloads
        return answer

    # ------------------------------------------------------------------ KV config

    def put_kv_config(self, conn: Hashable, request: RemotingCommand) -> RemotingCommand:
        header = PutKVConfigRequestHeader.from_ext_fields(request.ext_fields)
        self.kv_config.put(header.namespace, header.key, header.value)
        return request.response()

    def get_kv_config(self, conn: Hashable, request: RemotingCommand) -> RemotingCommand:
        header = GetKVConfigRequestHeader.from_ext_fields(request.ext_fields)
        value = self.kv_config.get(header.namespace, header.key)
        if value is not None:
            return request.response(ext_fields=GetKVConfigResponseHeader(value=value).to_ext_fields())
        return request.response(
            code=ResponseCode.QUERY_NOT_FOUND,
            remark=f"No config item, Namespace: {header.namespace} Key: {header.key}",
            ext_fields={},
        )

    def delete_kv_config(self, conn: Hashable, request: RemotingCommand) -> RemotingCommand:
        header = DeleteKVConfigRequestHeader.from_ext_fields(request.ext_fields)
        self.kv_config.delete(header.namespace, header.key)
        return request.response()

    def get_kv_list_by_namespace(self, conn: Hashable, request: RemotingCommand) -> RemotingCommand:
        header = GetKVListByNamespaceRequestHeader.from_ext_fields(request.ext_fields)
        table = self.kv_config.namespace(header.namespace)
        if table is None:
            return request.response(
                code=ResponseCode.QUERY_NOT_FOUND, remark=f"No config item, Namespace: {header.namespace}"
            )
        return request.response(body=KVTable(table=table).encode())

    # ------------------------------------------------------------------ brokers

    def register_broker(
        self, conn: Hashable, request: RemotingCommand
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        header = RegisterBrokerRequestHeader.from_ext_fields(request.ext_fields)
        body = request.body
        if header.body_crc32 != 0 and _crc32(body) != header.body_crc32:
            log.warning("REGISTER_BROKER from %s (%s): body CRC32 does not match", header.broker_addr, conn)
            return request.response(code=ResponseCode.SYSTEM_ERROR, remark="crc32 not match", ext_fields={})
        # a compressed body's cost is its inflated size, up to ~1,000 times its own
        cost = len(body) * (_INFLATION if header.compressed else 1)
        if isinstance(conn, RemotingConnection) and conn.offloads(cost):
            return conn.large_request(request, lambda: self._large_registration(conn, request, header))
        wrapper, filter_servers = self._registration(request, header)
        result = self.routes.register_broker(
            cluster_name=header.cluster_name,
            broker_addr=header.broker_addr,
            broker_name=header.broker_name,
            broker_id=header.broker_id,
            ha_server_addr=header.ha_server_addr,
            data_version=wrapper.data_version,
            topic_configs=wrapper.topic_config_table.values(),
            filter_servers=filter_servers,
            conn=conn,
            now=self._clock(),
        )
        return self._registered(request, result)

    async def _large_registration(
        self, conn: RemotingConnection, request: RemotingCommand, header: RegisterBrokerRequestHeader
    ) -> RemotingCommand:
        """A registration over the offload threshold (a broker of thousands of topics): decoded on
        the worker thread, then registered without its topics, which enter the route table a
        slice at a time (a route asked for meanwhile may lack some of them, as with RocketMQ 5's
        split registrations)."""
        wrapper, filter_servers = await conn.off_loop(self._registration, request, header, chunked=True)
        publish = self.routes.publishes_topics(
            broker_addr=header.broker_addr,
            broker_name=header.broker_name,
            broker_id=header.broker_id,
            data_version=wrapper.data_version,
        )
        result = self.routes.register_broker(
            cluster_name=header.cluster_name,
            broker_addr=header.broker_addr,
            broker_name=header.broker_name,
            broker_id=header.broker_id,
            ha_server_addr=header.ha_server_addr,
            data_version=wrapper.data_version,
            topic_configs=None,
            filter_servers=filter_servers,
            conn=conn,
            now=self._clock(),
        )
        if publish:
            configs = tuple(wrapper.topic_config_table.values())
            ticks = conn.time_slice()
            for start in range(0, len(configs), _TOPIC_PART):
                part = configs[start : start + _TOPIC_PART]
                if not self.routes.put_topic_configs(header.broker_name, part):
                    break
                await ticks.tick()
        return self._registered(request, result)

    def _registration(
        self, request: RemotingCommand, header: RegisterBrokerRequestHeader, *, chunked: bool = False
    ) -> tuple[TopicConfigSerializeWrapper, tuple[str, ...] | None]:
        """The topics and filter servers a REGISTER_BROKER body carries (pure: thread-safe);
        ``chunked`` as for :func:`~rocketq.protocol.fastjson.loads`."""
        body = request.body
        # Without a body Java registers an empty table at version 0 (time 0): our defaults.
        filter_servers: tuple[str, ...] | None
        if request.version >= MQVersion.V3_0_11:
            registration = (
                RegisterBrokerBody.decode(
                    body,
                    compressed=header.compressed,
                    max_fallback=self._max_nonstandard,
                    max_inflated=self._max_inflated,
                    max_topics=self._max_topics,
                    chunked=chunked,
                )
                if body
                else RegisterBrokerBody()
            )
            wrapper = registration.topic_config_serialize_wrapper
            filter_servers = registration.filter_server_list
        else:
            wrapper = (
                TopicConfigSerializeWrapper.decode(body, max_fallback=self._max_nonstandard, chunked=chunked)
                if body
                else TopicConfigSerializeWrapper()
            )
            filter_servers = None
        topics = len(wrapper.topic_config_table)
        if self._max_topics is not None and topics > self._max_topics:
            raise RemoteProtocolError(
                f"REGISTER_BROKER: {topics} topics, over this name server's limit of {self._max_topics}"
            )
        return wrapper, filter_servers

    def _registered(self, request: RemotingCommand, result: RegisterBrokerResult) -> RemotingCommand:
        response_header = RegisterBrokerResponseHeader(
            ha_server_addr=result.ha_server_addr, master_addr=result.master_addr
        )
        order_topics = self.kv_config.namespace(ORDER_TOPIC_CONFIG)
        return request.response(
            ext_fields=response_header.to_ext_fields(),
            body=KVTable(table=order_topics).encode() if order_topics is not None else b"",
        )

    def unregister_broker(self, conn: Hashable, request: RemotingCommand) -> RemotingCommand:
        header = UnRegisterBrokerRequestHeader.from_ext_fields(request.ext_fields)
        self.routes.unregister_broker(
            cluster_name=header.cluster_name,
            broker_addr=header.broker_addr,
            broker_name=header.broker_name,
            broker_id=header.broker_id,
        )
        return request.response()

    def query_data_version(
        self, conn: Hashable, request: RemotingCommand
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        header = QueryDataVersionRequestHeader.from_ext_fields(request.ext_fields)

        def answer(version: DataVersion) -> RemotingCommand:
            changed, ours = self.routes.query_data_version(header.broker_addr, version, self._clock())
            return request.response(
                ext_fields=QueryDataVersionResponseHeader(changed=changed).to_ext_fields(),
                body=ours.encode() if ours is not None else b"",
            )

        decode = DataVersion.decode
        if not (isinstance(conn, RemotingConnection) and conn.offloads(len(request.body))):
            return answer(decode(request.body, max_fallback=self._max_nonstandard))

        async def large() -> RemotingCommand:  # a DataVersion is tiny: only a hostile peer gets here
            version = await conn.off_loop(
                decode, request.body, max_fallback=self._max_nonstandard, chunked=True
            )
            return answer(version)

        return conn.large_request(request, large)

    def wipe_write_perm_of_broker(self, conn: Hashable, request: RemotingCommand) -> RemotingCommand:
        header = WipeWritePermOfBrokerRequestHeader.from_ext_fields(request.ext_fields)
        count = self.routes.wipe_write_perm(header.broker_name)
        log.info(
            "write permission of broker %s wiped on %d topic(s), asked by %s", header.broker_name, count, conn
        )
        return request.response(
            ext_fields=WipeWritePermOfBrokerResponseHeader(wipe_topic_count=count).to_ext_fields()
        )

    def add_write_perm_of_broker(self, conn: Hashable, request: RemotingCommand) -> RemotingCommand:
        header = AddWritePermOfBrokerRequestHeader.from_ext_fields(request.ext_fields)
        count = self.routes.add_write_perm(header.broker_name)
        log.info(
            "write permission of broker %s added on %d topic(s), asked by %s", header.broker_name, count, conn
        )
        return request.response(
            ext_fields=AddWritePermOfBrokerResponseHeader(add_topic_count=count).to_ext_fields()
        )

    # ------------------------------------------------------------------ routes and topics

    def get_route_info(self, conn: Hashable, request: RemotingCommand) -> RemotingCommand:
        header = GetRouteInfoRequestHeader.from_ext_fields(request.ext_fields)
        route = self.routes.topic_route(header.topic)
        if route is None:
            return request.response(
                code=ResponseCode.TOPIC_NOT_EXIST, remark=topic_not_exist_remark(header.topic)
            )
        if self._order_message_enable:
            conf = self.kv_config.get(ORDER_TOPIC_CONFIG, header.topic)
            if conf is not None:
                route = dataclasses.replace(route, order_topic_conf=conf)
        standard = request.version >= MQVersion.V4_9_4 or bool(header.accept_standard_json_only)
        return request.response(body=route.encode(browser_compatible=standard))

    def get_broker_cluster_info(self, conn: Hashable, request: RemotingCommand) -> RemotingCommand:
        return request.response(body=self.routes.cluster_info().encode())

    def delete_topic(self, conn: Hashable, request: RemotingCommand) -> RemotingCommand:
        header = DeleteTopicFromNamesrvRequestHeader.from_ext_fields(request.ext_fields)
        self.routes.delete_topic(header.topic, header.cluster_name)
        return request.response()

    def get_all_topic_list(self, conn: Hashable, request: RemotingCommand) -> RemotingCommand:
        return self._topic_list(request, self.routes.all_topics())

    def get_topics_by_cluster(self, conn: Hashable, request: RemotingCommand) -> RemotingCommand:
        header = GetTopicsByClusterRequestHeader.from_ext_fields(request.ext_fields)
        return self._topic_list(request, self.routes.topics_by_cluster(header.cluster))

    def get_system_topic_list(self, conn: Hashable, request: RemotingCommand) -> RemotingCommand:
        return self._topic_list(request, self.routes.system_topics())

    def get_unit_topic_list(self, conn: Hashable, request: RemotingCommand) -> RemotingCommand:
        return self._topic_list(request, self.routes.unit_topics())

    def get_has_unit_sub_topic_list(self, conn: Hashable, request: RemotingCommand) -> RemotingCommand:
        return self._topic_list(request, self.routes.has_unit_sub_topics())

    def get_has_unit_sub_ununit_topic_list(self, conn: Hashable, request: RemotingCommand) -> RemotingCommand:
        return self._topic_list(request, self.routes.has_unit_sub_ununit_topics())

    @staticmethod
    def _topic_list(request: RemotingCommand, topics: TopicList) -> RemotingCommand:
        return request.response(body=topics.encode())
