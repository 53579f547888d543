"""Client ids, name server resolution, config validation, messages, message ids and selectors."""

from __future__ import annotations

import re
import threading

import pytest

from rocketq import ConfigError, Message, MessageModel, PushConsumer
from rocketq.client.config import ClientConfig, ProducerConfig, PushConsumerConfig, local_ip, resolve_namesrv
from rocketq.client.ids import next_uniq_id
from rocketq.client.producer.selection import select_by_hash
from rocketq.client.validators import check_message
from rocketq.models import MessageQueue
from rocketq.protocol.message_id import parse_uniq_id


def test_client_id_is_ip_at_instance_name() -> None:
    assert ClientConfig(client_ip="127.0.0.1", instance_name="c1").client_id() == "127.0.0.1@c1"
    assert (
        ClientConfig(client_ip="10.1.2.3", instance_name="c1", unit_name="u1").client_id() == "10.1.2.3@c1@u1"
    )


def test_default_instance_name_becomes_pid_and_nanotime_unique_per_client() -> None:
    a = ClientConfig(client_ip="127.0.0.1").with_pid_instance_name()
    b = ClientConfig(client_ip="127.0.0.1").with_pid_instance_name()
    assert re.fullmatch(r"\d+#\d+", a.instance_name)
    assert a.client_id() != b.client_id()
    # explicit names are kept (the lab forces duplicates on purpose)
    assert ClientConfig(instance_name="dup").with_pid_instance_name().instance_name == "dup"


def test_broadcasting_keeps_default_instance_clustering_replaces_it() -> None:
    cfg = ClientConfig(client_ip="127.0.0.1")
    b = PushConsumer("g", client_config=cfg, message_model=MessageModel.BROADCASTING)
    c = PushConsumer("g", client_config=cfg)
    assert b.client_id == "127.0.0.1@DEFAULT"
    assert c.client_id != "127.0.0.1@DEFAULT"
    assert c.client_id.startswith("127.0.0.1@")


def test_local_ip_is_not_loopback_unless_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROCKETQ_CLIENT_IP", "192.0.2.9")
    assert local_ip() == "192.0.2.9"
    monkeypatch.delenv("ROCKETQ_CLIENT_IP")
    assert local_ip()  # some address; loopback only when the machine has nothing else


def test_namesrv_from_argument_else_env_else_localhost(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    assert resolve_namesrv(None) == ("127.0.0.1:9876",)
    monkeypatch.setenv("NAMESRV_ADDR", "10.0.0.1:9876;10.0.0.2:9876")
    assert resolve_namesrv(None) == ("10.0.0.1:9876", "10.0.0.2:9876")
    assert resolve_namesrv("h:1") == ("h:1",)
    with pytest.raises(ConfigError):
        resolve_namesrv("nohostport")


def test_configs_reject_bad_values_and_keep_rocketmq_defaults() -> None:
    p = ProducerConfig()
    assert (p.send_msg_timeout, p.retry_times_when_send_failed, p.compress_msg_body_over_howmuch) == (
        3.0,
        2,
        4096,
    )
    c = PushConsumerConfig()
    assert (c.pull_batch_size, c.consume_thread_max, c.pull_threshold_for_queue) == (32, 20, 1000)
    assert (c.consume_concurrently_max_span, c.pull_threshold_size_for_queue) == (2000, 100)
    assert (c.broker_suspend_max_time, c.consumer_timeout_when_suspend, c.pull_time_delay_when_exception) == (
        15.0,
        30.0,
        3.0,
    )
    assert c.effective_max_reconsume_times == 16
    k = ClientConfig()
    assert (k.poll_name_server_interval, k.heartbeat_broker_interval, k.persist_consumer_offset_interval) == (
        30.0,
        30.0,
        5.0,
    )
    assert k.rebalance_interval == 20.0
    with pytest.raises(ConfigError):
        PushConsumerConfig(pull_batch_size=0)
    with pytest.raises(ConfigError):
        PushConsumerConfig(allocate_strategy="NOPE")
    with pytest.raises(ConfigError):
        ClientConfig(instance_name="a@b")
    with pytest.raises(ConfigError):
        PushConsumer("g", client_config=k, no_such_option=1)


def test_message_constructor_and_validation() -> None:
    m = Message("T", "héllo", tags="A", keys=["k1", "k2"], properties={"p": "v"}, delay_level=3)
    assert m.body == "héllo".encode()
    assert (m.tags, m.keys, m.delay_time_level, m.properties["p"]) == ("A", "k1 k2", 3, "v")
    with pytest.raises(ConfigError):
        check_message(Message("T"), 1024)  # empty body
    with pytest.raises(ConfigError):
        check_message(Message("bad topic!", b"x"), 1024)
    with pytest.raises(ConfigError):
        check_message(Message("TBW102", b"x"), 1024)
    with pytest.raises(ConfigError):
        check_message(Message("T", b"x" * 2000), 1024)


def test_message_ids_are_unique_across_threads_and_carry_the_ip() -> None:
    ids: list[str] = []
    lock = threading.Lock()

    def make() -> None:
        mine = [next_uniq_id("127.0.0.1") for _ in range(2000)]
        with lock:
            ids.extend(mine)

    threads = [threading.Thread(target=make) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(ids)) == len(ids) == 8000
    assert parse_uniq_id(ids[0]).ip in ("127.0.0.1",) or len(ids[0]) in (32, 56)


def test_select_by_hash_matches_java_string_hash_code() -> None:
    queues = [MessageQueue("T", "b", i) for i in range(8)]
    # Java: Math.abs("order-1".hashCode()) % 8, with "order-1".hashCode() == -1207111310
    assert select_by_hash(queues, Message("T", b"x"), "order-1").queue_id == 1207111310 % 8
    assert select_by_hash(queues, Message("T", b"x"), 13).queue_id == 5
    same = {select_by_hash(queues, Message("T", b"x"), "user-42").queue_id for _ in range(10)}
    assert len(same) == 1


@pytest.mark.parametrize(
    "module",
    [
        "rocketq.client.config",
        "rocketq.client.message",
        "rocketq.client.consumer.process_queue",
        "rocketq.client.producer.selection",
        "rocketq.client.consumer.pull",
        "rocketq.client.rebalance.impl",
        "rocketq.client.rebalance.leases",
        "rocketq.client.consumer.clean_handoff",
        "rocketq.client.validators",
        "rocketq.client.rebalance.log",
        "rocketq.client.rebalance.service",
        "rocketq.client.producer.send_policy",
        "rocketq.client.routes",
    ],
)
def test_docstring_examples(module: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0


def test_enum_fields_take_the_enum_its_name_or_its_value() -> None:
    from rocketq.client.config import PushConsumerConfig as Push
    from rocketq.client.consumer.lite_pull import LitePullConsumerConfig as Lite
    from rocketq.errors import ConfigError
    from rocketq.protocol.bodies import ConsumeFromWhere, MessageModel

    for cls in (Push, Lite):
        for given in (
            ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            "CONSUME_FROM_FIRST_OFFSET",
            " CONSUME_FROM_FIRST_OFFSET",
        ):
            cfg = cls(consume_from_where=given)  # type: ignore[arg-type]
            assert cfg.consume_from_where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
        assert cls(message_model="BROADCASTING").message_model is MessageModel.BROADCASTING  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="consume_from_where must be one of CONSUME_FROM_LAST_OFFSET"):
            cls(consume_from_where="FROM_THE_START")  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="message_model"):
            cls(message_model=3)  # type: ignore[arg-type]
