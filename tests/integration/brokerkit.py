"""Small request builders for driving a broker over loopback with the protocol layer's client.

There is no rocketq client yet; these build SEND_MESSAGE_V2, PULL_MESSAGE, HEART_BEAT ... from the
typed headers and bodies exactly as a Java client fills them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from rocketq.protocol import RemotingCommand, RequestCode
from rocketq.protocol.bodies import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    HeartbeatData,
    MessageModel,
    ProducerData,
    SubscriptionData,
)
from rocketq.protocol.headers import PullMessageRequestHeader, SendMessageRequestHeaderV2
from rocketq.protocol.message import Message, encode_batch
from rocketq.protocol.properties import java_string_hash, properties_to_string
from rocketq.remoting import RemotingClient

PRODUCER_GROUP = "test_producer_group"


def send_request(
    topic: str,
    body: bytes,
    *,
    queue_id: int = 0,
    tags: str | None = None,
    properties: Mapping[str, str] | None = None,
    reconsume_times: int = 0,
    code: int = RequestCode.SEND_MESSAGE_V2,
) -> RemotingCommand:
    props: dict[str, str] = dict(properties or {})
    if tags is not None:
        props["TAGS"] = tags
    props.setdefault("WAIT", "true")
    header = SendMessageRequestHeaderV2(
        producer_group=PRODUCER_GROUP,
        topic=topic,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=queue_id,
        sys_flag=0,
        born_timestamp=int(time.time() * 1000),
        flag=0,
        properties=properties_to_string(props),
        reconsume_times=reconsume_times,
        unit_mode=False,
        batch=code == RequestCode.SEND_BATCH_MESSAGE,
    )
    if code == RequestCode.SEND_MESSAGE:
        return RemotingCommand.request(code, header.to_v1().to_ext_fields(), body)
    return RemotingCommand.request(code, header.to_ext_fields(), body)


def batch_request(
    topic: str, bodies: list[bytes], *, queue_id: int = 0, tags: str = "TagB"
) -> RemotingCommand:
    messages = [Message(topic, b, 0, {"TAGS": tags, "UNIQ_KEY": f"K{i}"}) for i, b in enumerate(bodies)]
    return send_request(topic, encode_batch(messages), queue_id=queue_id, code=RequestCode.SEND_BATCH_MESSAGE)


def pull_request(
    group: str,
    topic: str,
    queue_id: int,
    offset: int,
    *,
    max_nums: int = 32,
    suspend_ms: int = 0,
    subscription: str | None = "*",
    commit_offset: int | None = None,
    sub_version: int = 0,
    expression_type: str = "TAG",
) -> RemotingCommand:
    flag = 0
    if commit_offset is not None:
        flag |= 1
    if suspend_ms:
        flag |= 2
    if subscription is not None:
        flag |= 4
    header = PullMessageRequestHeader(
        consumer_group=group,
        topic=topic,
        queue_id=queue_id,
        queue_offset=offset,
        max_msg_nums=max_nums,
        sys_flag=flag,
        commit_offset=commit_offset or 0,
        suspend_timeout_millis=suspend_ms,
        subscription=subscription,
        sub_version=sub_version,
        expression_type=expression_type,
    )
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, header.to_ext_fields())


def subscription(
    topic: str, expression: str = "*", version: int = 1, expression_type: str = "TAG"
) -> SubscriptionData:
    """A subscription as a Java consumer's heartbeat carries it (an SQL92 one has no tags)."""
    if expression_type != "TAG":
        return SubscriptionData(
            topic=topic, sub_string=expression, sub_version=version, expression_type=expression_type
        )
    tags = () if expression == "*" else tuple(t.strip() for t in expression.split("||"))
    return SubscriptionData(
        topic=topic,
        sub_string=expression,
        tags_set=tags,
        code_set=tuple(java_string_hash(t) for t in tags),
        sub_version=version,
    )


def heartbeat_request(
    client_id: str,
    group: str | None,
    topics: Mapping[str, str] | None = None,
    *,
    producer_group: str | None = None,
    expression_type: str = "TAG",
) -> RemotingCommand:
    consumers: tuple[ConsumerData, ...] = ()
    if group is not None:
        subs = tuple(subscription(t, e, expression_type=expression_type) for t, e in (topics or {}).items())
        consumers = (
            ConsumerData(
                group_name=group,
                consume_type=ConsumeType.CONSUME_PASSIVELY,
                message_model=MessageModel.CLUSTERING,
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                subscription_data_set=subs,
            ),
        )
    producers = (ProducerData(group_name=producer_group),) if producer_group else ()
    body = HeartbeatData(
        client_id=client_id, producer_data_set=producers, consumer_data_set=consumers
    ).encode()
    return RemotingCommand.request(RequestCode.HEART_BEAT, None, body)


async def invoke(
    client: RemotingClient, addr: str, request: RemotingCommand, timeout: float = 5.0
) -> RemotingCommand:
    return await client.invoke(addr, request, timeout)
