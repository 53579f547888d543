"""Admin requests (RocketMQ 4.9.4's ``AdminBrokerProcessor`` and ``Broker2Client``).

Topics: UPDATE_AND_CREATE_TOPIC, DELETE_TOPIC_IN_BROKER, GET_ALL_TOPIC_CONFIG,
GET_TOPIC_STATS_INFO. Groups: UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, DELETE_SUBSCRIPTIONGROUP,
GET_ALL_SUBSCRIPTIONGROUP_CONFIG, GET_CONSUME_STATS, GET_ALL_CONSUMER_OFFSET, GET_ALL_DELAY_OFFSET,
QUERY_TOPIC_CONSUME_BY_WHO. Connections: GET_CONSUMER_CONNECTION_LIST,
GET_PRODUCER_CONNECTION_LIST, GET_CONSUMER_RUNNING_INFO (relayed to the client over its own
connection, its answer returned as is). Offsets: INVOKE_BROKER_TO_RESET_OFFSET. Broker:
GET_BROKER_RUNTIME_INFO, GET_BROKER_CONFIG (read-only: UPDATE_BROKER_CONFIG is not supported).

System topics: UPDATE_AND_CREATE_TOPIC and DELETE_TOPIC_IN_BROKER of one of the broker's system
topics (``TopicValidator``'s, ``rmq_sys_*``, and those it made at start: ``TBW102``, the cluster's and
its own name, the reply topic) answer SYSTEM_ERROR ``The topic[...] is conflict with system topic.``,
as RocketMQ 4.9.4's ``AdminBrokerProcessor`` does.

Deviations, on purpose:

* rocketq's admin tools may override that refusal with the ext field ``rocketqForceSystemTopic``
  naming the topic (:data:`~rocketq.protocol.topics.FORCE_SYSTEM_TOPIC_FIELD`; a Java tool never
  sends it). A forced create of a built-in topic that carries ``PERM_INHERIT`` (``TBW102``, the
  cluster's and the broker's topic) keeps that bit, so ``TBW102`` deleted and made again is the
  auto-creation template again without a restart. (RocketMQ 4.6/4.7 refused a create of the
  cluster's topic only, "conflict with system reserved words"; 4.9 refuses every system topic.)

* INVOKE_BROKER_TO_RESET_OFFSET for a group with no online consumer: RocketMQ answers
  CONSUMER_NOT_ONLINE and changes nothing; rocketq commits the new offsets itself (so an offline
  group resumes from them) and answers SUCCESS with them. Online groups are handled as RocketMQ
  does: the broker sends RESET_CONSUMER_CLIENT_OFFSET (oneway) to each member, which resets and
  commits.
* ``QUERY_DUPLICATE_CLIENT_IDS`` (10901, a :class:`~rocketq.protocol.codes.RocketQRequestCode`,
  not a RocketMQ code) answers which client ids are registered by more than one live connection
  in a group - something RocketMQ lets happen silently (both clients then take the same queues).
  Header ``consumerGroup`` (optional: all groups); body
  ``{"duplicates":[{"group":...,"clientId":...,"addresses":[...]}]}``. The same facts show in
  GET_CONSUMER_CONNECTION_LIST, whose connection set lists one entry per connection, so a
  duplicated id appears twice there with two addresses.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Awaitable
from typing import TypeVar

from rocketq.broker.context import AdminContext
from rocketq.broker.schedule import encode_delay_offsets
from rocketq.errors import BrokerError, RemotingError, RemotingTimeoutError
from rocketq.models import MessageQueue
from rocketq.protocol.bodies import (
    Connection,
    ConsumerConnection,
    ConsumerOffsetSerializeWrapper,
    ConsumeStats,
    GroupList,
    KVTable,
    OffsetWrapper,
    ProducerConnection,
    ResetOffsetBody,
    SubscriptionGroupConfig,
    TopicConfig,
    TopicFilterType,
    TopicOffset,
    TopicStatsTable,
    java_hash_order,
)
from rocketq.protocol.codes import MQVersion, RequestCode, ResponseCode
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import (
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    DeleteTopicRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumeStatsRequestHeader,
    GetProducerConnectionListRequestHeader,
    GetTopicStatsInfoRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
    ResetOffsetRequestHeader,
)
from rocketq.protocol.topics import FORCE_SYSTEM_TOPIC_FIELD, Perm, is_inherited, validate_topic
from rocketq.remoting import RemotingConnection

from .common import parse_header, system_error, with_body

__all__ = ["AdminProcessor"]

log = logging.getLogger(__name__)

_NOT_SET = "not set any response code"
V = TypeVar("V")  # Java's default remark, kept where RocketMQ leaves it


class AdminProcessor:
    """Topic, group, connection and offset administration."""

    def __init__(self, broker: AdminContext) -> None:
        self._b = broker

    # ------------------------------------------------------------------ topics

    def create_topic(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        b = self._b
        h = parse_header(CreateTopicRequestHeader, request)
        self._check_system_topic(request, h.topic)
        try:
            filter_type = TopicFilterType[h.topic_filter_type]
        except KeyError:
            raise system_error(f"unknown topicFilterType {h.topic_filter_type!r}") from None
        if h.read_queue_nums < 0 or h.write_queue_nums < 0:
            raise system_error("queue numbers must not be negative")
        builtin = b.topics.builtin(h.topic)
        perm = h.perm
        if builtin is not None and is_inherited(builtin.perm):
            perm |= int(Perm.INHERIT)  # TBW102 made again (forced) is a template again
        config = TopicConfig(
            topic_name=h.topic,
            read_queue_nums=h.read_queue_nums,
            write_queue_nums=h.write_queue_nums,
            perm=perm,
            topic_filter_type=filter_type,
            topic_sys_flag=h.topic_sys_flag or 0,
            order=h.order,
        )
        b.topics.update(config, b.wall())
        return request.response(remark=_NOT_SET)

    def delete_topic(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        b = self._b
        h = parse_header(DeleteTopicRequestHeader, request)
        self._check_system_topic(request, h.topic)
        b.topics.delete(h.topic, b.wall())
        b.store.delete_topics([h.topic])
        b.store.consumer_offsets.remove_topic(h.topic)
        return request.response()

    def _check_system_topic(self, request: RemotingCommand, topic: str) -> None:
        """RocketMQ 4.9's checks of an admin create or delete: a valid name, and not one of this
        broker's system topics (``TopicValidator.isSystemTopic`` with the topics it made at start:
        ``TBW102``, ``SCHEDULE_TOPIC_XXXX``, its cluster's and its own name ...) - unless the request
        carries rocketq's override naming the topic (:data:`FORCE_SYSTEM_TOPIC_FIELD`)."""
        problem = validate_topic(topic)
        if problem is not None:
            raise system_error(problem)
        if self._b.topics.is_system_topic(topic):
            if request.ext_fields.get(FORCE_SYSTEM_TOPIC_FIELD) != topic:
                raise system_error(f"The topic[{topic}] is conflict with system topic.")
            log.warning("system topic %s changed or deleted on request (override given)", topic)

    def all_topic_config(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        return request.response(body=self._b.topics.wrapper().encode())

    def topic_stats(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        b = self._b
        h = parse_header(GetTopicStatsInfoRequestHeader, request)
        config = b.topics.select(h.topic)
        if config is None:
            raise BrokerError(ResponseCode.TOPIC_NOT_EXIST, f"topic[{h.topic}] not exist")
        store = b.store
        table: dict[MessageQueue, TopicOffset] = {}
        for qid in range(config.write_queue_nums):
            mq = MessageQueue(h.topic, b.config.broker_name, qid)
            lo, hi = store.min_offset(h.topic, qid), store.max_offset(h.topic, qid)
            last = store.store_time_at(h.topic, qid, hi - 1) if hi > 0 else 0
            table[mq] = TopicOffset(min_offset=lo, max_offset=hi, last_update_timestamp=max(last, 0))
        return request.response(body=TopicStatsTable(offset_table=_java_order(table)).encode())

    # ------------------------------------------------------------------ groups

    def update_group(
        self, conn: RemotingConnection, request: RemotingCommand
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        b = self._b

        def update(config: SubscriptionGroupConfig) -> RemotingCommand:
            if not config.group_name:
                raise system_error("UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: the config has no groupName")
            b.groups.update(config, b.wall())
            return request.response()

        return with_body(
            conn,
            request,
            SubscriptionGroupConfig,
            "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP",
            b.config.remoting.max_nonstandard_json,
            update,
        )

    def delete_group(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        b = self._b
        h = parse_header(DeleteSubscriptionGroupRequestHeader, request)
        b.groups.delete(h.group_name, b.wall())
        if h.remove_offset:
            b.store.consumer_offsets.remove_group(h.group_name)
        return request.response()

    def all_groups(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        return request.response(body=self._b.groups.wrapper().encode())

    def all_delay_offsets(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        """GET_ALL_DELAY_OFFSET: the schedule service's progress per delay level."""
        return request.response(body=encode_delay_offsets(self._b.schedule.offsets))

    def all_consumer_offsets(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        table = self._b.store.consumer_offsets.table()
        return request.response(body=ConsumerOffsetSerializeWrapper(offset_table=table).encode())

    def consume_stats(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        """Per queue: the broker's max offset, the group's committed offset and the store time of
        the last consumed message (``lastTimestamp``)."""
        b = self._b
        h = parse_header(GetConsumeStatsRequestHeader, request)
        offsets = b.store.consumer_offsets
        topics = [h.topic] if h.topic else sorted(offsets.topics_of_group(h.consumer_group))
        table: dict[MessageQueue, OffsetWrapper] = {}
        for topic in topics:
            config = b.topics.select(topic)
            if config is None:
                continue
            for qid in range(config.write_queue_nums):
                broker_offset = b.store.max_offset(topic, qid)
                consumer_offset = max(offsets.query_offset(h.consumer_group, topic, qid), 0)
                last = b.store.store_time_at(topic, qid, consumer_offset - 1) if consumer_offset > 0 else 0
                table[MessageQueue(topic, b.config.broker_name, qid)] = OffsetWrapper(
                    broker_offset=broker_offset, consumer_offset=consumer_offset, last_timestamp=max(last, 0)
                )
        tps = b.stats.group_tps(h.consumer_group)
        body = ConsumeStats(offset_table=_java_order(table), consume_tps=tps).encode()
        return request.response(body=body)

    def consumed_by_who(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        b = self._b
        h = parse_header(QueryTopicConsumeByWhoRequestHeader, request)
        groups = dict.fromkeys(b.consumers.groups_consuming(h.topic))
        groups.update(dict.fromkeys(sorted(b.store.consumer_offsets.groups_of_topic(h.topic))))
        return request.response(body=GroupList(group_list=tuple(groups)).encode())

    # ------------------------------------------------------------------ connections

    def consumer_connections(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        b = self._b
        h = parse_header(GetConsumerConnectionListRequestHeader, request)
        view = b.consumers.view(h.consumer_group)
        if view is None:
            raise BrokerError(
                ResponseCode.CONSUMER_NOT_ONLINE, f"the consumer group[{h.consumer_group}] not online"
            )
        body = ConsumerConnection(
            connection_set=tuple(
                Connection(
                    client_id=m.client_id, client_addr=m.remote_addr, language=m.language, version=m.version
                )
                for m in view.members
            ),
            subscription_table=view.subscriptions,
            consume_type=view.consume_type,
            message_model=view.message_model,
            consume_from_where=view.consume_from_where,
        )
        return request.response(body=body.encode())

    def producer_connections(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        h = parse_header(GetProducerConnectionListRequestHeader, request)
        members = self._b.producers.connections(h.producer_group)
        if not members:
            raise system_error(f"the producer group[{h.producer_group}] not exist")
        body = ProducerConnection(
            connection_set=tuple(
                Connection(
                    client_id=m.client_id, client_addr=m.remote_addr, language=m.language, version=m.version
                )
                for m in members
            )
        )
        return request.response(body=body.encode())

    def duplicate_client_ids(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        group = request.ext_fields.get("consumerGroup") or None
        dups = self._b.consumers.duplicates(group)
        body = {
            "duplicates": [
                {"group": d.group, "clientId": d.client_id, "addresses": list(d.addresses)} for d in dups
            ]
        }
        return request.response(body=json.dumps(body, separators=(",", ":")).encode())

    async def consumer_running_info(
        self, conn: RemotingConnection, request: RemotingCommand
    ) -> RemotingCommand:
        """Relay GET_CONSUMER_RUNNING_INFO to the client's own connection; its answer comes back as is."""
        b = self._b
        h = parse_header(GetConsumerRunningInfoRequestHeader, request)
        channel = b.consumers.find_channel(h.consumer_group, h.client_id)
        if channel is None:
            raise system_error(f"The Consumer <{h.consumer_group}> <{h.client_id}> not online")
        if channel.version < MQVersion.V3_1_8_SNAPSHOT:
            raise system_error(
                f"The Consumer <{h.consumer_group}> <{h.client_id}> Version <{channel.version}> too low "
                "to finish, please upgrade it to V3_1_8_SNAPSHOT"
            )
        relay = RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, h.to_ext_fields())
        try:
            answer = await channel.conn.invoke(relay, b.config.client_call_timeout)
        except RemotingError as exc:
            log.info("GET_CONSUMER_RUNNING_INFO relay to %s failed: %s", h.client_id, exc)
            why = (
                "no answer in time"
                if isinstance(exc, RemotingTimeoutError)
                else "the consumer's connection failed"
            )
            raise system_error(
                f"invoke consumer <{h.consumer_group}> <{h.client_id}> Exception: {why}"
            ) from None
        return request.response(
            code=answer.code, remark=answer.remark, ext_fields=dict(answer.ext_fields), body=answer.body
        )

    # ------------------------------------------------------------------ offsets

    def reset_offset(
        self, conn: RemotingConnection, request: RemotingCommand
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        """``Broker2Client.resetOffset``: new offsets by time stamp (-1: the max offsets)."""
        b = self._b
        h = parse_header(ResetOffsetRequestHeader, request)
        config = b.topics.select(h.topic)
        if config is None:
            raise system_error(
                f"[reset-offset] reset offset failed, no topic in this broker. topic={h.topic}"
            )
        offsets = b.store.consumer_offsets
        table: dict[MessageQueue, int] = {}
        for qid in range(config.write_queue_nums):
            current = offsets.query_offset(h.group, h.topic, qid)
            if current == -1:
                raise system_error(f"THe consumer group <{h.group}> not exist")
            if h.timestamp == -1:
                target = b.store.max_offset(h.topic, qid)
            else:
                target = b.store.offset_by_time(h.topic, qid, h.timestamp)
            new = target if h.is_force or target < current else current
            table[MessageQueue(h.topic, b.config.broker_name, qid)] = new
        body = ResetOffsetBody(offset_table=_java_order(table)).encode()
        members = b.consumers.connections(h.group)
        if not members:
            for mq, offset in table.items():
                offsets.commit_offset(h.group, h.topic, mq.queue_id, offset)
            return request.response(remark=_NOT_SET, body=body)
        header = ResetOffsetRequestHeader(topic=h.topic, group=h.group, timestamp=h.timestamp, is_force=False)

        async def tell_members() -> RemotingCommand:
            for member in members:
                if member.version < MQVersion.V3_0_7:
                    continue
                push = RemotingCommand.request(
                    RequestCode.RESET_CONSUMER_CLIENT_OFFSET, header.to_ext_fields(), body, oneway=True
                )
                try:
                    await member.conn.invoke_oneway(push)
                except RemotingError as exc:
                    b.log_client_failure(member.client_id, exc)
            return request.response(remark=_NOT_SET, body=body)

        return tell_members()

    # ------------------------------------------------------------------ broker

    def broker_config(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        """GET_BROKER_CONFIG: the settings as ``name=value`` lines under RocketMQ's names (what
        ``mqadmin getBrokerConfig`` prints), header ``version`` the topic table's data version."""
        b = self._b
        cfg = b.config
        store = cfg.store_config()
        values = {
            "brokerName": cfg.broker_name,
            "brokerClusterName": cfg.broker_cluster_name,
            "brokerId": cfg.broker_id,
            "brokerIP1": cfg.advertised_ip,
            "listenPort": b.port,
            "namesrvAddr": ";".join(cfg.namesrv_addrs),
            "storePathRootDir": b.store.root,
            "flushDiskType": "SYNC_FLUSH" if cfg.flush == "sync" else "ASYNC_FLUSH",
            "brokerRole": _ROLE_NAMES[cfg.role],
            "maxMessageSize": cfg.max_message_size,
            "messageDelayLevel": cfg.message_delay_level,
            "autoCreateTopicEnable": cfg.auto_create_topic_enable,
            "autoCreateSubscriptionGroup": cfg.auto_create_subscription_group,
            "defaultTopicQueueNums": cfg.default_topic_queue_nums,
            "clusterTopicEnable": cfg.cluster_topic_enable,
            "brokerTopicEnable": cfg.broker_topic_enable,
            "longPollingEnable": cfg.long_polling_enable,
            "shortPollingTimeMills": int(cfg.short_polling_time * 1000),
            "notifyConsumerIdsChangedEnable": cfg.notify_consumer_ids_changed_enable,
            "registerNameServerPeriod": int(cfg.register_period * 1000),
            "compressedRegister": cfg.compressed_register,
            "regionId": cfg.region_id,
            "traceOn": cfg.trace_on,
            "traceTopicEnable": cfg.trace_topic_enable,
            "msgTraceTopicName": cfg.msg_trace_topic_name,
            "mappedFileSizeCommitLog": store.commit_log_segment_size,
            "flushIntervalCommitLog": int(store.flush_interval * 1000),
            "syncFlushTimeout": int(store.sync_flush_timeout * 1000),
            "fileReservedTime": int(store.file_reserved_time // 3600),
            "deleteWhen": store.delete_when,
            "diskMaxUsedSpaceRatio": store.disk_max_used_space_ratio,
            "maxTransferCountOnMessageInMemory": store.max_transfer_count,
            "maxTransferBytesOnMessageInMemory": store.max_transfer_bytes,
        }
        text = "".join(f"{k}={_java_text(v)}\n" for k, v in values.items())
        version = b.topics.data_version.encode().decode()
        return request.response(ext_fields={"version": version}, body=text.encode())

    def runtime_info(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        """A subset of RocketMQ's runtime table with true values (its keys where it has one)."""
        b = self._b
        store = b.store
        stats = b.stats
        now_ms = b.wall_ms()
        table = {
            "brokerVersionDesc": "V4_9_4",
            "brokerVersion": str(int(MQVersion.V4_9_4)),
            "rocketqBroker": "true",
            "bootTimestamp": str(stats.boot_ms),
            "runtime": _uptime(now_ms - stats.boot_ms),
            "msgPutTotalTodayNow": str(stats.put_total),
            "msgGetTotalTodayNow": str(stats.get_total),
            "putTps": f"{stats.put_tps():.1f}",
            "getTransferedTps": f"{stats.get_tps():.1f}",
            "commitLogMinOffset": str(store.commit_log_min_offset),
            "commitLogMaxOffset": str(store.commit_log_max_offset),
            "earliestMessageTimeStamp": str(store.earliest_store_time()),
            "commitLogDiskRatio": f"{store.disk_used_ratio():.4f}",
            "storePath": str(store.root),
            "flushDiskType": "SYNC_FLUSH" if b.config.flush == "sync" else "ASYNC_FLUSH",
            # rocketq's: fsyncs of the sync-flush group commit since start (0 under async flush)
            "commitLogGroupCommitFsyncs": str(store.group_commit_fsyncs),
            # rocketq's: the role (and below, the bytes the slave is behind, once linked)
            "brokerRole": _ROLE_NAMES[b.config.role],
            "brokerName": b.config.broker_name,
            "brokerCluster": b.config.broker_cluster_name,
            "brokerAddr": b.address,
            "consumerGroups": str(len(b.consumers.groups())),
            "consumerConnections": str(len(b.consumers)),
            "producerConnections": str(len(b.producers)),
            "heldPulls": str(b.held_pulls),
            "scheduleDelivered": str(b.schedule_delivered),
            "pid": str(os.getpid()),
        }
        lag = b.ha_lag_bytes()
        if lag is not None:
            table["haSlaveLagBytes"] = str(lag)
        return request.response(body=KVTable(table=table).encode())


_ROLE_NAMES = {"async-master": "ASYNC_MASTER", "sync-master": "SYNC_MASTER", "slave": "SLAVE"}


def _java_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _java_order(table: dict[MessageQueue, V]) -> dict[MessageQueue, V]:
    """The table in the order Java's ``HashMap<MessageQueue, ...>`` writes it (the bodies' maps)."""
    return {mq: table[mq] for mq in java_hash_order(table)}


def _uptime(ms: int) -> str:
    seconds = max(ms, 0) // 1000
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    return f"[ {days} days, {hours} hours, {minutes} minutes, {secs} seconds ]"
