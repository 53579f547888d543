"""Topic routes and cluster views, as the name server answers them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from rocketq.protocol.bodies._codec import (
    _F,
    _INT,
    _LONG_KEY,
    _STR,
    JsonBody,
    _Bean,
    _beans,
    _list,
    _Map,
    _p,
    _props,
    _set,
)

__all__ = ["BrokerData", "ClusterInfo", "QueueData", "TopicList", "TopicRouteData"]


@dataclass(frozen=True, slots=True)
class QueueData(JsonBody):
    """One broker's queues of a topic in a route (``QueueData``)."""

    broker_name: str | None = None
    read_queue_nums: int = 0
    write_queue_nums: int = 0
    perm: int = 0
    topic_sys_flag: int = 0

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("brokerName", "broker_name", _STR),
        _p("perm", "perm", _INT),
        _p("readQueueNums", "read_queue_nums", _INT),
        _p("topicSysFlag", "topic_sys_flag", _INT),
        _p("writeQueueNums", "write_queue_nums", _INT),
    )


@dataclass(frozen=True, slots=True)
class BrokerData(JsonBody):
    """A broker group in a route or cluster view: ``broker_addrs`` maps broker id (0 = master) to address."""

    cluster: str | None = None
    broker_name: str | None = None
    broker_addrs: Mapping[int, str] = field(default_factory=dict)

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("brokerAddrs", "broker_addrs", _Map(_LONG_KEY, _STR)),
        _p("brokerName", "broker_name", _STR),
        _p("cluster", "cluster", _STR),
    )

    @property
    def master_addr(self) -> str | None:
        """The address of broker id 0, if the master is registered."""
        return self.broker_addrs.get(0)


@dataclass(frozen=True, slots=True)
class TopicRouteData(JsonBody):
    """The route of a topic (``GET_ROUTEINFO_BY_TOPIC`` response).

    The 4.9.4 name server answers clients of version >= 4.9.4 (or those asking with
    ``acceptStandardJsonOnly``) with ``encode(browser_compatible=True)``: broker ids quoted
    (``{"0":…}``) and maps sorted; older clients get fastjson's native ``{0:…}``.
    """

    order_topic_conf: str | None = None
    queue_datas: tuple[QueueData, ...] = ()
    broker_datas: tuple[BrokerData, ...] = ()
    filter_server_table: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("brokerDatas", "broker_datas", _beans(BrokerData)),
        _p("filterServerTable", "filter_server_table", _Map(_STR, _list(_STR))),
        _p("orderTopicConf", "order_topic_conf", _STR),
        _p("queueDatas", "queue_datas", _beans(QueueData)),
    )


@dataclass(frozen=True, slots=True)
class ClusterInfo(JsonBody):
    """``GET_BROKER_CLUSTER_INFO``: broker groups by name and broker names by cluster."""

    broker_addr_table: Mapping[str, BrokerData] = field(default_factory=dict)
    cluster_addr_table: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("brokerAddrTable", "broker_addr_table", _Map(_STR, _Bean(BrokerData))),
        _p("clusterAddrTable", "cluster_addr_table", _Map(_STR, _set(_STR))),
    )


@dataclass(frozen=True, slots=True)
class TopicList(JsonBody):
    """A list of topic names (``GET_ALL_TOPIC_LIST_FROM_NAMESERVER`` and friends)."""

    topic_list: tuple[str, ...] = ()
    broker_addr: str | None = None

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("brokerAddr", "broker_addr", _STR), _p("topicList", "topic_list", _set(_STR))
    )
