"""The chaos proxy's policy, frame by frame: route rewriting (against real RocketMQ 4.9.4 answers),
faults by code, direction, consumer and target, and what it records. No sockets: the relay's
calls are made by hand with ``now`` given."""

from __future__ import annotations

import pytest

from rocketq.chaos.proxy import NAMESRV, ChaosProxy, Fault
from rocketq.protocol import RequestCode, decode_frame
from rocketq.protocol.bodies import ClusterInfo, HeartbeatData, TopicRouteData
from rocketq.protocol.bodies.client import GetConsumerListByGroupResponseBody
from rocketq.protocol.bodies.route import BrokerData
from rocketq.protocol.command import RemotingCommand
from rocketq.remoting.relay import Direction, Link
from tests.wirecaps import frame_bytes, load

REAL = "127.0.0.1:10911"  # broker-a's address in the captures
PROXIED = "127.0.0.1:40001"
TO_SERVER = Direction.TO_SERVER
TO_CLIENT = Direction.TO_CLIENT


def link(consumer: str, target: str, n: int = 1) -> Link:
    return Link(n, (consumer, target), "127.0.0.1:1")


def captured(seq: int) -> RemotingCommand:
    (line,) = [x for x in load("errors.jsonl") if x["seq"] == seq]
    return decode_frame(frame_bytes(line))


def relay(
    proxy: ChaosProxy, lk: Link, direction: Direction, cmd: RemotingCommand, now: float = 1.0
) -> list[tuple[float, RemotingCommand]]:
    return list(proxy.on_frame(lk, direction, cmd, now))


@pytest.mark.parametrize(
    ("request_seq", "response_seq", "flavour"),
    [(5, 6, b"{0:"), (7, 8, b'{"0":'), (9, 10, b'{"0":')],
    ids=["fastjson-native", "standard-json", "rocketmq-binary-header"],
)
def test_route_answers_point_each_consumer_at_its_own_listener(
    request_seq: int, response_seq: int, flavour: bytes
) -> None:
    proxy = ChaosProxy()
    proxy.set_addresses("c1", {REAL: PROXIED})
    ns = link("c1", NAMESRV)
    request, response = captured(request_seq), captured(response_seq)
    assert flavour in response.body
    assert relay(proxy, ns, TO_SERVER, request) == [(0.0, request)]
    ((delay, out),) = relay(proxy, ns, TO_CLIENT, response)
    assert delay == 0.0
    # byte for byte the name server's answer, but for the address (same JSON flavour)
    assert out.body == response.body.replace(REAL.encode(), PROXIED.encode())
    assert flavour in out.body
    assert TopicRouteData.decode(out.body).broker_datas[0].broker_addrs == {0: PROXIED}
    assert (out.opaque, out.code, out.ext_fields, out.serialize_type) == (
        response.opaque,
        response.code,
        response.ext_fields,
        response.serialize_type,
    )
    # another consumer without a mapping gets the answer unchanged
    other = link("c2", NAMESRV, 2)
    relay(proxy, other, TO_SERVER, request)
    assert relay(proxy, other, TO_CLIENT, response)[0][1].body == response.body


def test_cluster_info_is_rewritten_too() -> None:
    proxy = ChaosProxy()
    proxy.set_addresses("c1", {REAL: PROXIED})
    info = ClusterInfo(
        broker_addr_table={"broker-a": BrokerData("DefaultCluster", "broker-a", {0: REAL})},
        cluster_addr_table={"DefaultCluster": ("broker-a",)},
    )
    ns = link("c1", NAMESRV)
    request = RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO, opaque=3)
    relay(proxy, ns, TO_SERVER, request)
    ((_, out),) = relay(proxy, ns, TO_CLIENT, request.response(body=info.encode()))
    assert ClusterInfo.decode(out.body).broker_addr_table["broker-a"].broker_addrs == {0: PROXIED}


def notify(opaque: int) -> RemotingCommand:
    return RemotingCommand.request(
        RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": "g"}, oneway=True, opaque=opaque
    )


def test_a_dropped_notification_reaches_only_the_consumers_it_should() -> None:
    proxy = ChaosProxy(group="g")
    fault = Fault(
        kind="drop", code=RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, consumer="c1", direction="to-client"
    )
    proxy.activate("n", fault, 1.0)
    assert relay(proxy, link("c1", "broker-a"), TO_CLIENT, notify(1), 1.5) == []
    assert relay(proxy, link("c1", "broker-b", 2), TO_CLIENT, notify(2), 1.6) == []
    assert len(relay(proxy, link("c2", "broker-a", 3), TO_CLIENT, notify(3), 1.7)) == 1
    # the fault is on the broker-to-client direction only
    req = RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": "g"}, opaque=9)
    assert len(relay(proxy, link("c1", "broker-a"), TO_SERVER, req, 1.8)) == 1
    assert proxy.heal("n", 2.0) == fault
    assert len(relay(proxy, link("c1", "broker-a"), TO_CLIENT, notify(4), 2.5)) == 1
    seen = proxy.snapshot(3.0)
    assert [(n.consumer, n.broker, n.dropped) for n in seen["notifies"]] == [
        ("c1", "broker-a", True),
        ("c1", "broker-b", True),
        ("c2", "broker-a", False),
        ("c1", "broker-a", False),
    ]
    assert [e.what for e in seen["events"]] == ["dropped", "dropped"]
    assert "NOTIFY_CONSUMER_IDS_CHANGED(40) to-client" in seen["events"][0].detail
    assert fault.describe() == "drop NOTIFY_CONSUMER_IDS_CHANGED(40) to-client, consumer c1"


def test_a_delay_holds_a_requests_answer_too_and_heartbeats_are_counted() -> None:
    proxy = ChaosProxy()
    fault = Fault(kind="delay", code=RequestCode.HEART_BEAT, target="broker-b", seconds=4.0)
    proxy.activate("hb", fault, 0.0)
    body = HeartbeatData(client_id="10.0.0.1@c1").encode()
    beat = RemotingCommand.request(RequestCode.HEART_BEAT, None, body, opaque=7)
    b = link("c1", "broker-b")
    assert relay(proxy, b, TO_SERVER, beat) == [(4.0, beat)]
    answer = beat.response()
    assert relay(proxy, b, TO_CLIENT, answer) == [(4.0, answer)]  # matched to its request by opaque
    # the same request code to the other broker is untouched
    a = link("c1", "broker-a", 2)
    assert relay(proxy, a, TO_SERVER, beat) == [(0.0, beat)]
    assert proxy.client_ids == {"c1": "10.0.0.1@c1"}
    assert proxy.heartbeats == {("c1", "broker-b"): [1, 0], ("c1", "broker-a"): [1, 0]}
    proxy.activate(
        "drop", Fault(kind="drop", code=RequestCode.HEART_BEAT, consumer="c1", target="broker-a"), 1.0
    )
    assert relay(proxy, a, TO_SERVER, beat) == []
    assert proxy.heartbeats[("c1", "broker-a")] == [1, 1]


def test_a_cut_refuses_new_connections_of_one_consumer_to_one_target() -> None:
    proxy = ChaosProxy()
    fault = Fault(kind="cut", consumer="c2", target="broker-a")
    assert proxy.accept(link("c2", "broker-a"), 0.0)
    proxy.activate("cut", fault, 1.0)
    assert not proxy.accept(link("c2", "broker-a", 2), 1.5)
    assert proxy.accept(link("c2", "broker-b", 3), 1.5)
    assert proxy.accept(link("c1", "broker-a", 4), 1.5)
    pick = proxy.hits(fault)
    assert pick(link("c2", "broker-a", 9))
    assert not pick(link("c1", "broker-a", 9))
    assert proxy.is_cut("c2", "broker-a")
    proxy.heal("cut", 2.0)
    assert proxy.accept(link("c2", "broker-a", 5), 2.5)
    assert [(e.what, e.consumer, e.target) for e in proxy.snapshot(3.0)["events"]] == [
        ("refused", "c2", "broker-a")
    ]


def _route(addr: str, queues: int) -> bytes:
    from rocketq.protocol.bodies.route import QueueData

    return TopicRouteData(
        queue_datas=(QueueData("broker-a", queues, queues, 6, 0),),
        broker_datas=(BrokerData("DefaultCluster", "broker-a", {0: addr}),),
    ).encode(browser_compatible=True)


def test_a_stale_route_fault_replays_the_route_the_consumer_had() -> None:
    proxy = ChaosProxy()
    proxy.set_addresses("c1", {REAL: PROXIED})
    ns = link("c1", NAMESRV)

    def ask(opaque: int, queues: int, now: float) -> TopicRouteData:
        request = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}, opaque=opaque)
        relay(proxy, ns, TO_SERVER, request, now)
        ((_, out),) = relay(proxy, ns, TO_CLIENT, request.response(body=_route(REAL, queues)), now)
        return TopicRouteData.decode(out.body)

    assert ask(1, 4, 1.0).queue_datas[0].read_queue_nums == 4
    proxy.activate("stale", Fault(kind="stale-route", consumer="c1", target=NAMESRV), 2.0)
    stale = ask(2, 6, 3.0)  # the topic grew, but c1 is told the route it had
    assert stale.queue_datas[0].read_queue_nums == 4
    assert stale.broker_datas[0].broker_addrs == {0: PROXIED}
    proxy.heal("stale", 4.0)
    assert ask(3, 6, 5.0).queue_datas[0].read_queue_nums == 6
    assert [e.what for e in proxy.snapshot(6.0)["events"]] == ["stale-route"]


def pull_request(opaque: int, queue: int, offset: int, topic: str = "T") -> RemotingCommand:
    fields = {"consumerGroup": "g", "topic": topic, "queueId": str(queue), "queueOffset": str(offset)}
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, fields, opaque=opaque)


def test_pulls_member_lists_and_closed_links_are_recorded() -> None:
    proxy = ChaosProxy(topic="T", group="g")
    b = link("c1", "broker-b")
    relay(proxy, b, TO_SERVER, pull_request(1, 3, 40), 1.0)
    relay(proxy, b, TO_SERVER, pull_request(2, 0, 7, topic="%RETRY%g"), 1.0)  # not the run's topic
    relay(proxy, b, TO_CLIENT, pull_request(1, 3, 40).response(ext_fields={"nextBeginOffset": "44"}), 1.2)
    relay(proxy, b, TO_SERVER, pull_request(3, 3, 44), 1.3)  # held at the broker ...
    members = GetConsumerListByGroupResponseBody(consumer_id_list=("ip@c1", "ip@c2")).encode()
    ask = RemotingCommand.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "g"}, opaque=4)
    relay(proxy, b, TO_SERVER, ask, 1.4)
    relay(proxy, b, TO_CLIENT, ask.response(body=members), 1.5)
    proxy.on_close(b, 2.0)  # ... when the connection closed
    relay(proxy, link("c2", "broker-a", 2), TO_SERVER, pull_request(5, 1, 0), 2.5)  # still open at the end
    seen = proxy.snapshot(9.0)
    pulls = [
        (p.consumer, p.broker, p.queue_id, p.offset, p.sent, p.answered, p.code, p.next_offset)
        for p in seen["pulls"]
    ]
    assert pulls == [
        ("c1", "broker-b", 3, 40, 1.0, 1.2, 0, 44),
        ("c1", "broker-b", 3, 44, 1.3, 2.0, None, None),
        ("c2", "broker-a", 1, 0, 2.5, 9.0, None, None),
    ]
    assert seen["pulls"][0].found
    assert not seen["pulls"][1].ok
    ((query),) = seen["queries"]
    assert (query.consumer, query.broker, query.sent, query.answered, query.members) == (
        "c1", "broker-b", 1.4, 1.5, ("ip@c1", "ip@c2"),
    )  # fmt: skip
