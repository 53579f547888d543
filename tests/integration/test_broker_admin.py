"""Admin requests, offset resets and store failures on a live broker over loopback."""

from __future__ import annotations

import asyncio
import errno
import time
from pathlib import Path

import pytest

from rocketq.broker import Broker, BrokerConfig
from rocketq.errors import RemotingError, StoreError
from rocketq.models import MessageQueue
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketq.protocol.bodies import (
    ConsumerOffsetSerializeWrapper,
    GroupList,
    ProducerConnection,
    ResetOffsetBody,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
    TopicConfigSerializeWrapper,
)
from rocketq.protocol.headers import (
    DeleteSubscriptionGroupRequestHeader,
    GetProducerConnectionListRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
    ResetOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketq.remoting import RemotingClient, RemotingConnection, run
from rocketq.store import FileIO, StoreConfig

from .brokerkit import heartbeat_request, send_request
from .test_broker import GROUP, create_topic

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


def test_groups_offsets_and_who_consumes(tmp_path: Path) -> None:
    async def main() -> None:
        async with Broker(BrokerConfig(port=0, data_dir=tmp_path)) as broker, RemotingClient() as client:
            addr = broker.address
            await create_topic(client, addr, "AdminT", 2)
            config = SubscriptionGroupConfig(
                group_name="G2", retry_max_times=3, consume_broadcast_enable=False
            )
            r = await client.invoke(
                addr,
                RemotingCommand.request(
                    RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, config.encode()
                ),
            )
            assert r.code == ResponseCode.SUCCESS
            r = await client.invoke(
                addr, RemotingCommand.request(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, None)
            )
            groups = SubscriptionGroupWrapper.decode(r.body).subscription_group_table
            assert groups["G2"].retry_max_times == 3
            r = await client.invoke(addr, RemotingCommand.request(RequestCode.GET_ALL_TOPIC_CONFIG, None))
            topics = TopicConfigSerializeWrapper.decode(r.body).topic_config_table
            assert topics["AdminT"].write_queue_nums == 2
            assert "TBW102" in topics

            u = UpdateConsumerOffsetRequestHeader(
                consumer_group="G2", topic="AdminT", queue_id=1, commit_offset=7
            )
            await client.invoke(
                addr, RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, u.to_ext_fields())
            )
            r = await client.invoke(addr, RemotingCommand.request(RequestCode.GET_ALL_CONSUMER_OFFSET, None))
            assert ConsumerOffsetSerializeWrapper.decode(r.body).offset_table["AdminT@G2"] == {1: 7}
            await client.invoke(addr, heartbeat_request("c-1", GROUP, {"AdminT": "*"}, producer_group="P1"))
            who = QueryTopicConsumeByWhoRequestHeader(topic="AdminT")
            r = await client.invoke(
                addr, RemotingCommand.request(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, who.to_ext_fields())
            )
            assert set(GroupList.decode(r.body).group_list) == {GROUP, "G2"}
            p = GetProducerConnectionListRequestHeader(producer_group="P1")
            r = await client.invoke(
                addr, RemotingCommand.request(RequestCode.GET_PRODUCER_CONNECTION_LIST, p.to_ext_fields())
            )
            assert [c.client_id for c in ProducerConnection.decode(r.body).connection_set] == ["c-1"]
            p = GetProducerConnectionListRequestHeader(producer_group="NoSuch")
            r = await client.invoke(
                addr, RemotingCommand.request(RequestCode.GET_PRODUCER_CONNECTION_LIST, p.to_ext_fields())
            )
            assert r.code == ResponseCode.SYSTEM_ERROR
            assert r.remark == "the producer group[NoSuch] not exist"

            d = DeleteSubscriptionGroupRequestHeader(group_name="G2", remove_offset=True)
            r = await client.invoke(
                addr, RemotingCommand.request(RequestCode.DELETE_SUBSCRIPTIONGROUP, d.to_ext_fields())
            )
            assert r.code == ResponseCode.SUCCESS
            assert broker.groups.get("G2") is None
            assert broker.store.consumer_offsets.query_offset("G2", "AdminT", 1) == -1

    run(main())


def test_reset_offset_online_asks_the_clients_offline_sets_offsets(tmp_path: Path) -> None:
    async def main() -> None:
        async with Broker(BrokerConfig(port=0, data_dir=tmp_path)) as broker:
            pushed: list[RemotingCommand] = []
            got = asyncio.Event()

            def on_reset(conn: RemotingConnection, request: RemotingCommand) -> None:
                pushed.append(request)
                got.set()

            consumer = RemotingClient()
            consumer.register_handler(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, on_reset)
            async with consumer, RemotingClient() as admin:
                addr = broker.address
                await create_topic(admin, addr, "Reset", 1)
                for i in range(4):
                    await admin.invoke(addr, send_request("Reset", b"r%d" % i))
                u = UpdateConsumerOffsetRequestHeader(
                    consumer_group=GROUP, topic="Reset", queue_id=0, commit_offset=4
                )
                await admin.invoke(
                    addr, RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, u.to_ext_fields())
                )
                await consumer.invoke(addr, heartbeat_request("online-1", GROUP, {"Reset": "*"}))
                h = ResetOffsetRequestHeader(topic="Reset", group=GROUP, timestamp=0, is_force=True)
                r = await admin.invoke(
                    addr,
                    RemotingCommand.request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, h.to_ext_fields()),
                )
                assert r.code == ResponseCode.SUCCESS
                mq = MessageQueue("Reset", "broker-a", 0)
                assert ResetOffsetBody.decode(r.body).offset_table == {mq: 0}
                await asyncio.wait_for(got.wait(), 3)
                assert pushed[0].ext_fields["isForce"] == "false"
                assert ResetOffsetBody.decode(pushed[0].body).offset_table == {mq: 0}
                # online: the broker leaves the commit to the client
                assert broker.store.consumer_offsets.query_offset(GROUP, "Reset", 0) == 4
                await consumer.close()
                for _ in range(100):
                    if GROUP not in broker.consumers:
                        break
                    await asyncio.sleep(0.01)
                r = await admin.invoke(
                    addr,
                    RemotingCommand.request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, h.to_ext_fields()),
                )
                assert r.code == ResponseCode.SUCCESS
                # offline: rocketq sets the offsets itself
                assert broker.store.consumer_offsets.query_offset(GROUP, "Reset", 0) == 0

    run(main())


class FullDisk(FileIO):
    def __init__(self) -> None:
        self.full = False

    def pwrite(self, fd: int, data: bytes | bytearray | memoryview, offset: int) -> int:
        if self.full:
            raise OSError(errno.ENOSPC, "No space left on device")
        return super().pwrite(fd, data, offset)


def test_a_full_disk_answers_service_not_available_and_recovers(tmp_path: Path) -> None:
    async def main() -> None:
        io = FullDisk()
        async with (
            Broker(BrokerConfig(port=0, data_dir=tmp_path), store_io=io) as broker,
            RemotingClient() as client,
        ):
            addr = broker.address
            await create_topic(client, addr, "Disk", 1)
            assert (await client.invoke(addr, send_request("Disk", b"before"))).code == ResponseCode.SUCCESS
            io.full = True
            r = await client.invoke(addr, send_request("Disk", b"lost"))
            assert r.code == ResponseCode.SERVICE_NOT_AVAILABLE
            assert "disk is full" in (r.remark or "")
            io.full = False
            r = await client.invoke(addr, send_request("Disk", b"after"))
            assert r.code == ResponseCode.SUCCESS
            assert r.ext_fields["queueOffset"] == "1"

    run(main())


class SlowSync(FileIO):
    def __init__(self) -> None:
        self.delay = 0.0

    def fdatasync(self, fd: int) -> None:
        if self.delay:
            time.sleep(self.delay)
        super().fdatasync(fd)


def test_sync_flush_shares_fsyncs_and_answers_flush_disk_timeout(tmp_path: Path) -> None:
    async def main() -> None:
        io = SlowSync()
        config = BrokerConfig(
            port=0, data_dir=tmp_path, flush="sync", store=StoreConfig(sync_flush_timeout=0.2)
        )
        async with Broker(config, store_io=io) as broker, RemotingClient() as client:
            addr = broker.address
            await create_topic(client, addr, "Sync", 4)
            before = broker.store.group_commit_fsyncs
            answers = await asyncio.gather(
                *(client.invoke(addr, send_request("Sync", b"s%d" % i, queue_id=i % 4)) for i in range(64))
            )
            assert all(a.code == ResponseCode.SUCCESS for a in answers)
            fsyncs = broker.store.group_commit_fsyncs - before
            assert 1 <= fsyncs < 64  # concurrent sends share fsyncs (group commit)
            io.delay = 0.5
            slow = await client.invoke(addr, send_request("Sync", b"slow"))
            assert slow.code == ResponseCode.FLUSH_DISK_TIMEOUT
            assert slow.ext_fields["queueOffset"]  # stored, as Java reports it
            io.delay = 0.0
            while broker.store.group_commit_fsyncs < before + fsyncs + 1:  # the slow fsync ends
                await asyncio.sleep(0.05)
            # the message was stored all the same and the broker goes on
            ok = await client.invoke(addr, send_request("Sync", b"fast"))
            assert ok.code == ResponseCode.SUCCESS

    run(main())


class FailingSync(FileIO):
    def __init__(self) -> None:
        self.fail = False

    def fdatasync(self, fd: int) -> None:
        if self.fail:
            raise OSError(errno.EIO, "injected fsync failure")
        super().fdatasync(fd)


def test_sync_flush_answers_every_send_of_a_failed_fsync_round_and_then_refuses_writes(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        io = FailingSync()
        config = BrokerConfig(port=0, data_dir=tmp_path, flush="sync")
        async with Broker(config, store_io=io) as broker, RemotingClient() as client:
            addr = broker.address
            await create_topic(client, addr, "Fail", 4)
            io.fail = True
            answers = await asyncio.gather(
                *(client.invoke(addr, send_request("Fail", b"f%d" % i, queue_id=i % 4)) for i in range(16))
            )
            # every send is answered: those of the failed round as stored but not durable, those
            # arriving after it as refused (the store stops accepting writes after a failed fsync)
            failed = [a for a in answers if a.code == ResponseCode.FLUSH_DISK_TIMEOUT]
            assert failed
            assert all("flushing it to disk failed" in (a.remark or "") for a in failed)
            assert len({a.ext_fields["msgId"] for a in failed}) == len(failed)
            refused = [a for a in answers if a.code != ResponseCode.FLUSH_DISK_TIMEOUT]
            assert all(a.code == ResponseCode.SERVICE_NOT_AVAILABLE for a in refused)
            io.fail = False
            after = await client.invoke(addr, send_request("Fail", b"after"))
            assert after.code == ResponseCode.SERVICE_NOT_AVAILABLE  # a failed fsync stops the store

    run(main())


def test_broker_config_lists_settings_under_rocketmq_names(tmp_path: Path) -> None:
    async def main() -> None:
        config = BrokerConfig(port=0, data_dir=tmp_path, flush="sync", broker_name="broker-z")
        async with Broker(config) as broker, RemotingClient() as client:
            r = await client.invoke(
                broker.address, RemotingCommand.request(RequestCode.GET_BROKER_CONFIG, None)
            )
            assert r.code == ResponseCode.SUCCESS
            lines = dict(line.split("=", 1) for line in r.body.decode().splitlines())
            assert lines["brokerName"] == "broker-z"
            assert lines["flushDiskType"] == "SYNC_FLUSH"
            assert lines["listenPort"] == str(broker.port)
            assert lines["autoCreateTopicEnable"] == "true"
            assert lines["traceTopicEnable"] == "false"  # RocketMQ's default
            assert lines["msgTraceTopicName"] == "RMQ_SYS_TRACE_TOPIC"
            assert '"counter"' in r.ext_fields["version"]

    run(main())


def test_failed_starts_release_the_data_dir_and_the_port(tmp_path: Path) -> None:
    async def main() -> None:
        async with Broker(BrokerConfig(port=0, data_dir=tmp_path / "one")) as first:
            taken = Broker(BrokerConfig(port=first.port, data_dir=tmp_path / "two"))
            with pytest.raises(RemotingError):
                await taken.start()
            await taken.close()
            same_dir = Broker(BrokerConfig(port=0, data_dir=tmp_path / "one"))
            with pytest.raises(StoreError):
                await same_dir.start()
            await same_dir.close()
        # the failed start let go of its data dir: it opens again
        async with Broker(BrokerConfig(port=0, data_dir=tmp_path / "two")) as again:
            assert again.topics.select("TBW102") is not None

    run(main())


def test_all_delay_offsets_show_the_schedule_progress(tmp_path: Path) -> None:
    async def main() -> None:
        config = BrokerConfig(port=0, data_dir=tmp_path, message_delay_level="50ms 1h")
        async with Broker(config) as broker, RemotingClient() as client:
            addr = broker.address
            await create_topic(client, addr, "Later", 1)
            await client.invoke(addr, send_request("Later", b"x", properties={"DELAY": "1"}))
            while broker.store.max_offset("Later", 0) == 0:
                await asyncio.sleep(0.02)
            r = await client.invoke(addr, RemotingCommand.request(RequestCode.GET_ALL_DELAY_OFFSET, None))
            assert r.body == b'{"offsetTable":{1:1}}'

    run(main())
