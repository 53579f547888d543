"""PULL_MESSAGE, with long polling: RocketMQ 4.9.4's ``PullMessageProcessor`` and
``PullRequestHoldService`` on the store and :class:`~rocketq.broker.longpoll.PullHoldTable`.

A pull is checked as Java checks it (subscription group exists and may consume, topic exists and
is readable, queue id within the read queues), then its filter is chosen: the expression in the
request when the subscription flag (4) is set, else the group's registered subscription, which
must exist and be at least as new as the request's ``subVersion``. The store returns the stored
records as one ``bytes`` - the response body as is: nothing is decoded on this path.

**SQL92.** A subscription of expression type ``SQL92`` (:mod:`rocketq.broker.filter.sql92`) is
compiled once (cached) and evaluated against each candidate message's properties as the store
reads the queue, and against an arriving message's properties before a held pull wakes (as
RocketMQ's ``ExpressionMessageFilter`` and its arriving listener). Refusals are RocketMQ's: the
broker without ``enablePropertyFilter`` answers SYSTEM_ERROR (its remark says what to turn on);
a registered subscription whose expression does not compile FILTER_DATA_NOT_EXIST (the heartbeat
that brought it was answered SUCCESS, as Java's is); an expression in the request that does not
compile SUBSCRIPTION_PARSE_FAILED (RocketMQ 4.9 would deliver every message). Each remark ends
with where the expression went wrong. A queue with no matching message answers
PULL_RETRY_IMMEDIATELY with ``NO_MATCHED_MESSAGE``, its next offset past what was examined.

A PULL_OFFSET_MOVED answer also stores an event in ``OFFSET_MOVED_EVENT`` (group, queue, the
offset asked for and the new one), as RocketMQ's ``generateOffsetMovedEvent`` does.

Status mapping (the remark is the store's status name, as Java sends it):

===========================  ============================================================
store                        response
===========================  ============================================================
FOUND                        SUCCESS, body = the records
NO_MATCHED_MESSAGE           PULL_RETRY_IMMEDIATELY (next offset skips the non-matching)
MESSAGE_WAS_REMOVING         PULL_RETRY_IMMEDIATELY
OFFSET_OVERFLOW_ONE          PULL_NOT_FOUND (held when the suspend flag allows)
OFFSET_FOUND_NULL            PULL_NOT_FOUND
NO_MESSAGE_IN_QUEUE / none   PULL_NOT_FOUND at offset 0, else PULL_OFFSET_MOVED
OFFSET_OVERFLOW_BADLY        PULL_OFFSET_MOVED
OFFSET_TOO_SMALL             PULL_OFFSET_MOVED
===========================  ============================================================

**Long polling.** A PULL_NOT_FOUND whose request has the suspend flag (2) is not answered: the
request is parked in the hold table until a message arrives on its queue (the store's arrival
listener calls :meth:`PullProcessor.on_arrival` right after the append, on the event loop) or
its ``suspendTimeoutMillis`` (capped by ``broker_suspend_max_time``) runs out; then the pull is
run again without permission to suspend and its answer written on the request's connection. One
loop timer follows the earliest deadline, so a timed-out pull is answered on time, not up to 5 s
late as in RocketMQ. The piggy-backed commit offset (flag 1) is stored on the first run only.

**View fence (rocketq only).** A pull carrying ``rqEpoch`` - rocketq's push consumers send the
:func:`~rocketq.protocol.calls.view_stamp` their last rebalance allocated this broker's queues
under: the group's epoch on this broker and its queue count of the topic - is checked against the
group's epoch and the topic's read queues here now, on the first run and again when a held pull
wakes. When they differ the answer is ``PULL_VIEW_CHANGED`` with no messages and the broker's stamp
and queue count, so a consumer acting on a stale view (a lost notification, a pause, a stale route)
cannot fetch from a queue another member may own now; its piggy-backed commit is still stored if
it does not move the group's offset back (:mod:`rocketq.broker.view_fence`). A pull without the
field (RocketMQ's clients) is served as RocketMQ serves it.

**Bulk pulls (rocketq only).** A pull carrying ``rqPullBytes`` (:data:`~rocketq.protocol.calls.
PULL_BYTES_FIELD`; rocketq's Spark reader sends it) is answered with up to its ``maxMsgNums``
messages, at most :data:`BULK_PULL_MAX_COUNT`, and about that many bytes, at most
:data:`BULK_PULL_MAX_BYTES`, instead of the store's usual 32 messages / 256 KiB: a range read
takes a hundred times fewer round trips. A value that is not a positive integer is ignored (the
pull is served as without it), as is the field by a RocketMQ broker.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Mapping
from typing import Final

from rocketq.broker.consumers import tag_filter
from rocketq.broker.context import PullContext
from rocketq.broker.filter import EXPRESSION_TYPE_SQL92, Sql92Error, Sql92Filter, compile_sql92, is_tag_type
from rocketq.broker.longpoll import PullHoldTable
from rocketq.broker.view_fence import commit_allowed
from rocketq.errors import BrokerError, RocketQError
from rocketq.protocol import fastjson
from rocketq.protocol.bodies import SubscriptionGroupConfig
from rocketq.protocol.calls import PULL_BYTES_FIELD, VIEW_FIELD, VIEW_QUEUES_FIELD, view_stamp
from rocketq.protocol.codes import PullSysFlag, ResponseCode, RocketQResponseCode, SerializeType
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import PullMessageRequestHeader
from rocketq.protocol.message import encode_message
from rocketq.protocol.properties import MessageConst, java_string_hash, tags_code
from rocketq.protocol.topics import RMQ_SYS_OFFSET_MOVED_EVENT, Perm
from rocketq.remoting import RemotingConnection, describe_exception
from rocketq.store import GetMessageStatus

from .common import parse_header, system_error
from .send import java_properties_string, topic_not_exist_remark

__all__ = ["PullProcessor", "property_filter_disabled_remark", "selector_of", "tag_codes_of_expression"]

log = logging.getLogger(__name__)

# plain ints: IntFlag arithmetic costs a call per operation on this path
_READ = int(Perm.READ)
_COMMIT_OFFSET = int(PullSysFlag.COMMIT_OFFSET)
_SUSPEND = int(PullSysFlag.SUSPEND)
_SUBSCRIPTION = int(PullSysFlag.SUBSCRIPTION)

_PARSE_FAILED = "parse the consumer's subscription failed"
_FILTER_DATA_NOT_EXIST = "The broker's consumer filter data is not exist!Your expression may be wrong!"


def property_filter_disabled_remark(expression_type: str | None) -> str:
    """RocketMQ's remark for an SQL92 subscription on a broker without ``enablePropertyFilter``,
    and what to turn on."""
    return (
        f"The broker does not support consumer to filter message by {expression_type} "
        "(enablePropertyFilter is off: start the broker with --enable-property-filter, "
        "or BrokerConfig(enable_property_filter=True))"
    )


def selector_of(expression_type: str | None, expression: str | None) -> Sql92Filter:
    """The compiled (cached) filter of a non-tag subscription; raises :class:`Sql92Error`."""
    if expression_type != EXPRESSION_TYPE_SQL92:
        raise Sql92Error(
            expression or "", f"expression type {expression_type!r} is not supported (only SQL92)"
        )
    return compile_sql92(expression or "")


# Codes and statuses as module constants: looking an enum member up (``ResponseCode.SUCCESS``),
# hashing one or reading its ``.value`` are Python-level calls, a few of which every pull made.
_SUCCESS: Final = int(ResponseCode.SUCCESS)
_PULL_NOT_FOUND: Final = int(ResponseCode.PULL_NOT_FOUND)
_PULL_OFFSET_MOVED: Final = int(ResponseCode.PULL_OFFSET_MOVED)
_ROCKETMQ: Final = SerializeType.ROCKETMQ
_VIEW_CHANGED: Final = int(RocketQResponseCode.PULL_VIEW_CHANGED)
_FOUND: Final = GetMessageStatus.FOUND
_S = GetMessageStatus
#: What a pull answers for a store status: the response code and the remark (the status's name,
#: as Java sends it). An empty or unknown queue (NO_MESSAGE_IN_QUEUE, NO_MATCHED_LOGIC_QUEUE)
#: answers by the offset asked for instead.
_ANSWERS: Final = {
    status: (int(code), status.value)
    for status, code in (
        (_S.FOUND, ResponseCode.SUCCESS),
        (_S.MESSAGE_WAS_REMOVING, ResponseCode.PULL_RETRY_IMMEDIATELY),
        (_S.NO_MATCHED_MESSAGE, ResponseCode.PULL_RETRY_IMMEDIATELY),
        (_S.OFFSET_FOUND_NULL, ResponseCode.PULL_NOT_FOUND),
        (_S.OFFSET_OVERFLOW_BADLY, ResponseCode.PULL_OFFSET_MOVED),
        (_S.OFFSET_OVERFLOW_ONE, ResponseCode.PULL_NOT_FOUND),
        (_S.OFFSET_TOO_SMALL, ResponseCode.PULL_OFFSET_MOVED),
    )
}
_FOUND_ANSWER: Final = _ANSWERS[_FOUND]

BULK_PULL_MAX_COUNT: Final = 4096
"""Most messages a bulk pull (``rqPullBytes``) returns."""
BULK_PULL_MAX_BYTES: Final = 4 * 1024 * 1024
"""Most bytes a bulk pull asks for are capped here (RocketMQ's default ``maxMessageSize``)."""


def bulk_bytes(request: RemotingCommand) -> int | None:
    """The byte budget a bulk pull asks for (capped), ``None`` for a usual pull or a bad value.

    >>> bulk_bytes(RemotingCommand(code=11, ext_fields={"rqPullBytes": "9999999999"}))
    4194304
    >>> bulk_bytes(RemotingCommand(code=11, ext_fields={"rqPullBytes": "lots"})) is None
    True
    """
    raw = request.ext_fields.get(PULL_BYTES_FIELD)
    if raw is None or not (raw.isascii() and raw.isdigit()):
        return None
    asked = int(raw)
    return min(asked, BULK_PULL_MAX_BYTES) if asked > 0 else None


Held = tuple[RemotingConnection, RemotingCommand]


@functools.lru_cache(maxsize=1024)
def compiled_or_refused(
    expression_type: str | None, expression: str | None, code: int, remark: str
) -> Sql92Filter:
    """:func:`selector_of`, or the :class:`BrokerError` ``code`` whose remark is ``remark`` with the
    compiler's complaint in its ``{}``."""
    try:
        return selector_of(expression_type, expression)
    except Sql92Error as exc:
        raise BrokerError(code, remark.format(exc)) from None


def tag_codes_of_expression(expression: str | None) -> frozenset[int] | None:
    """``FilterAPI.buildSubscriptionData`` for a tag expression: ``None`` for ``*`` (or empty),
    else the Java hash codes of the ``||``-separated tags.

    >>> sorted(tag_codes_of_expression("TagA || TagB"))
    [2598919, 2598920]
    >>> tag_codes_of_expression("*") is None
    True
    """
    if expression is None or not expression.strip() or expression.strip() == "*":
        return None
    tags = [t.strip() for t in expression.split("||")]
    return frozenset(java_string_hash(t) for t in tags if t)


class PullProcessor:
    """The pull handler and the held pulls, over a :class:`~rocketq.broker.context.PullContext`."""

    def __init__(self, broker: PullContext) -> None:
        self._b = broker
        self.holds: PullHoldTable[Held] = PullHoldTable()
        self._loop = asyncio.get_running_loop()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0
        cfg = broker.config
        self._long_polling = cfg.long_polling_enable
        self._short = cfg.short_polling_time
        self._max_hold = cfg.broker_suspend_max_time
        self._property_filter = cfg.enable_property_filter

    # ------------------------------------------------------------------ the pull

    def pull(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand | None:
        """Answer now, or hold the request (``None``: answered later on ``conn``)."""
        return self._process(conn, request, True)

    def _process(
        self, conn: RemotingConnection, request: RemotingCommand, allow_suspend: bool
    ) -> RemotingCommand | None:
        b = self._b
        p = parse_header(PullMessageRequestHeader, request)
        group = p.consumer_group
        topic = p.topic
        queue_id = p.queue_id
        group_config, read_queue_nums = self._readable(p, conn)
        sys_flag = p.sys_flag
        selector: Sql92Filter | None = None
        if not sys_flag & _SUBSCRIPTION:
            codes, selector = self._registered_filter(p, group_config)
        elif is_tag_type(p.expression_type):  # the subscription in the request (flag 4)
            codes = tag_codes_of_expression(p.subscription)
        else:
            codes = None
            selector = self._request_sql92(p)
        matches = selector.matches if selector is not None else None
        offset = p.queue_offset
        # the piggy-backed commit offset (flag 1): on the first run only, and as 4.9 not on a slave
        commit = allow_suspend and sys_flag & _COMMIT_OFFSET and b.config.role != "slave"
        fields = request.ext_fields
        their_view = fields.get(VIEW_FIELD)
        if their_view is not None:  # a rocketq consumer's view of this broker: refuse a stale one
            current = view_stamp(b.consumers.epoch(group), read_queue_nums)
            if their_view != current:
                return self._view_changed(request, p, current, read_queue_nums, commit=bool(commit))
        bulk = bulk_bytes(request) if PULL_BYTES_FIELD in fields else None
        result = b.store.get_messages(
            topic,
            queue_id,
            offset,
            p.max_msg_nums,
            codes,
            bulk,
            group=group,
            property_filter=matches,
            max_transfer=None if bulk is None else BULK_PULL_MAX_COUNT,
        )
        status = result.status
        answer = _FOUND_ANSWER if status is _FOUND else _ANSWERS.get(status)
        if answer is None:  # an empty or unknown queue
            answer = (_PULL_OFFSET_MOVED if offset != 0 else _PULL_NOT_FOUND), status.value
        code, remark = answer
        if commit:
            b.store.consumer_offsets.commit_offset(group, topic, queue_id, p.commit_offset)
        if code == _PULL_NOT_FOUND and allow_suspend and sys_flag & _SUSPEND:
            self._hold(conn, request, p, codes, matches)
            return None
        if code == _SUCCESS:
            b.stats.on_get(group, result.message_count, len(result.data))
        elif code == _PULL_OFFSET_MOVED:
            self._offset_moved_event(group, topic, queue_id, offset, result.next_begin_offset)
        if request.serialize_type == _ROCKETMQ:
            ext = {
                "suggestWhichBrokerId": "0",
                "nextBeginOffset": str(result.next_begin_offset),
                "minOffset": str(result.min_offset),
                "maxOffset": str(result.max_offset),
            }
        else:
            ext = {
                "suggestWhichBrokerId": "0",
                "nextBeginOffset": str(result.next_begin_offset),
                "maxOffset": str(result.max_offset),
                "minOffset": str(result.min_offset),
            }
        return request.response(code=code, remark=remark, ext_fields=ext, body=result.data)

    def _readable(
        self, p: PullMessageRequestHeader, conn: RemotingConnection
    ) -> tuple[SubscriptionGroupConfig, int]:
        """The pull's group config and its topic's read queue count, or the :class:`BrokerError`
        RocketMQ answers: no such group, a group that may not consume, no such topic, a topic not
        readable, a queue id out of its read queues."""
        b = self._b
        group = p.consumer_group
        topic = p.topic
        group_config = b.groups.find(group, b.wall())
        if group_config is None:
            raise BrokerError(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group [{group}] does not exist"
            )
        if not group_config.consume_enable:
            raise BrokerError(ResponseCode.NO_PERMISSION, f"subscription group no permission, {group}")
        config = b.topics.select(topic)
        if config is None:
            raise BrokerError(ResponseCode.TOPIC_NOT_EXIST, topic_not_exist_remark(topic, pull=True))
        if not config.perm & _READ:
            raise BrokerError(ResponseCode.NO_PERMISSION, f"the topic[{topic}] pulling message is forbidden")
        queue_id = p.queue_id
        read_queue_nums = config.read_queue_nums
        if queue_id < 0 or queue_id >= read_queue_nums:
            raise system_error(
                f"queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:"
                f"[{read_queue_nums}] consumer:[{conn.remote_address}]"
            )
        return group_config, read_queue_nums

    def _request_sql92(self, p: PullMessageRequestHeader) -> Sql92Filter:
        """The compiled SQL92 expression the request carries (flag 4)."""
        expression_type = p.expression_type
        # RocketMQ 4.9 builds the filter here and, its assertion disabled, serves an
        # expression that does not compile as "everything"; refuse it, with its code.
        selector = compiled_or_refused(
            expression_type,
            p.subscription,
            ResponseCode.SUBSCRIPTION_PARSE_FAILED,
            _PARSE_FAILED + ": {}",
        )
        return self._property_filtering(selector, expression_type)

    def _registered_filter(
        self, p: PullMessageRequestHeader, group_config: SubscriptionGroupConfig
    ) -> tuple[frozenset[int] | None, Sql92Filter | None]:
        """The filter of the subscription the group's heartbeat registered, which must exist, be
        at least as new as the request's, and not be a broadcast one the group may not use."""
        b = self._b
        group = p.consumer_group
        sub = b.consumers.find_subscription(group, p.topic)
        if sub is None:
            if group not in b.consumers:
                raise BrokerError(ResponseCode.SUBSCRIPTION_NOT_EXIST, "the consumer's group info not exist")
            raise BrokerError(ResponseCode.SUBSCRIPTION_NOT_EXIST, "the consumer's subscription not exist")
        if not group_config.consume_broadcast_enable:
            view = b.consumers.view(group)
            if (
                view is not None
                and view.message_model is not None
                and view.message_model.value == "BROADCASTING"
            ):
                raise BrokerError(
                    ResponseCode.NO_PERMISSION,
                    f"the consumer group[{group}] can not consume by broadcast way",
                )
        if sub.sub_version < p.sub_version:
            raise BrokerError(ResponseCode.SUBSCRIPTION_NOT_LATEST, "the consumer's subscription not latest")
        expression_type = sub.expression_type
        if is_tag_type(expression_type):
            return tag_filter(sub), None
        # the filter the heartbeat registered (ConsumerFilterManager), compiled once
        selector = compiled_or_refused(
            expression_type,
            sub.sub_string,
            ResponseCode.FILTER_DATA_NOT_EXIST,
            _FILTER_DATA_NOT_EXIST + " ({})",
        )
        return None, self._property_filtering(selector, expression_type)

    def _property_filtering(self, selector: Sql92Filter, expression_type: str | None) -> Sql92Filter:
        """``selector``, or SYSTEM_ERROR when the broker's ``enablePropertyFilter`` is off."""
        if not self._property_filter:
            raise system_error(property_filter_disabled_remark(expression_type))
        return selector

    def _view_changed(
        self,
        request: RemotingCommand,
        p: PullMessageRequestHeader,
        current: str,
        read_queue_nums: int,
        *,
        commit: bool,
    ) -> RemotingCommand:
        """PULL_VIEW_CHANGED: the consumer's view is stale. Its piggy-backed commit is still
        stored unless it would move the group's offset back."""
        offsets = self._b.store.consumer_offsets
        group, topic, queue_id = p.consumer_group, p.topic, p.queue_id
        if commit and commit_allowed(offsets, group, topic, queue_id, p.commit_offset, stale=True):
            offsets.commit_offset(group, topic, queue_id, p.commit_offset)
        ext = {
            "nextBeginOffset": str(p.queue_offset),
            VIEW_FIELD: current,
            VIEW_QUEUES_FIELD: str(read_queue_nums),
        }
        remark = "the group's members or the topic's queues changed since this consumer's rebalance"
        return request.response(code=_VIEW_CHANGED, remark=remark, ext_fields=ext)

    def _hold(
        self,
        conn: RemotingConnection,
        request: RemotingCommand,
        p: PullMessageRequestHeader,
        codes: frozenset[int] | None,
        matches: Callable[[Mapping[str, str]], bool] | None,
    ) -> None:
        """Park the pull until a message arrives on its queue or its suspend time runs out."""
        hold = p.suspend_timeout_millis / 1000 if self._long_polling else self._short
        hold = min(max(hold, 0.0), self._max_hold)
        deadline = self._loop.time() + hold
        self.holds.hold(
            (p.topic, p.queue_id),
            (conn, request),
            deadline,
            offset=p.queue_offset,
            tag_codes=codes,
            property_filter=matches,
        )
        self._arm(deadline)

    def _offset_moved_event(self, group: str, topic: str, queue_id: int, requested: int, new: int) -> None:
        """RocketMQ's ``generateOffsetMovedEvent``: a pull told its offset moved leaves a record
        in ``OFFSET_MOVED_EVENT`` (tag and key: the group; body: the event as JSON), for tools."""
        b = self._b
        event = {
            "consumerGroup": group,
            "messageQueue": {"brokerName": b.config.broker_name, "queueId": queue_id, "topic": topic},
            "offsetNew": new,
            "offsetRequest": requested,
        }
        # setTags, setDelayTimeLevel(0), setKeys: the map's string in Java HashMap order
        props = {MessageConst.TAGS: group, MessageConst.DELAY: "0", MessageConst.KEYS: group}
        host = b.store_host
        try:
            record = encode_message(
                topic=RMQ_SYS_OFFSET_MOVED_EVENT,
                body=fastjson.dumps_bytes(event),
                properties=java_properties_string(props, len(props)),
                born_timestamp=b.wall_ms(),
                born_host=host,
                store_host=host,
            )
            b.store.put_message(RMQ_SYS_OFFSET_MOVED_EVENT, 0, record, tags_code(group))
        except (RocketQError, OSError) as exc:  # RocketMQ only logs it too
            log.warning(
                "could not store the offset-moved event of %s on %s-%d: %s", group, topic, queue_id, exc
            )

    # ------------------------------------------------------------------ held pulls

    def on_arrival(
        self,
        topic: str,
        queue_id: int,
        max_offset: int,
        tag_code: int | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> None:
        """The store appended to (topic, queue_id): answer the pulls this wakes (event loop only).

        ``tag_code`` and ``properties`` are the arrived message's, when known: pulls whose
        filter refuses it stay held."""
        holds = self.holds
        if not len(holds):
            return
        ready = holds.on_arrival(topic, queue_id, max_offset, self._loop.time(), tag_code, properties)
        if ready:
            self._answer(ready)

    def check(self) -> None:
        """RocketMQ's periodic check of every held pull against the store's max offsets."""
        if len(self.holds):
            self._answer(self.holds.check(self._loop.time(), self._b.store.max_offset))

    def connection_closed(self, conn: RemotingConnection) -> None:
        if len(self.holds):
            dropped = self.holds.drop(lambda held: held[0] is conn)
            if dropped:
                log.debug("dropped %d held pulls of closed %r", len(dropped), conn)

    def close(self) -> None:
        """Forget every held pull (the broker is closing; their connections close too)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.holds.drop(lambda _: True)

    def _arm(self, deadline: float) -> None:
        timer = self._timer
        if timer is not None and self._timer_at <= deadline:
            return
        if timer is not None:
            timer.cancel()
        self._timer_at = deadline
        self._timer = self._loop.call_at(deadline, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._answer(self.holds.expired(self._loop.time()))
        nxt = self.holds.next_deadline()
        if nxt is not None:
            self._arm(nxt)

    def _answer(self, ready: list[Held]) -> None:
        for conn, request in ready:
            if conn.is_closed:
                continue
            try:
                response = self._process(conn, request, False)
            except BrokerError as exc:
                response = request.response(code=exc.code, remark=exc.remark)
            except Exception as exc:
                log.exception("re-running a held pull failed")
                response = request.response(code=ResponseCode.SYSTEM_ERROR, remark=describe_exception(exc))
            if response is not None:
                conn.send_response(request, response)
