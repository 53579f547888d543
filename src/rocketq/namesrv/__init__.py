"""The name server: which brokers are alive and where each topic's queues are.

* :mod:`rocketq.namesrv.routes` — the route table, a pure state machine (``now`` passed in);
* :mod:`rocketq.namesrv.kvconfig` — the KV configuration (``ORDER_TOPIC_CONFIG`` and friends);
* :mod:`rocketq.namesrv.handlers` — the request handlers, answering as RocketMQ 4.9.4 does;
* :mod:`rocketq.namesrv.server` — :class:`NameServer`, all of it on a remoting server, with
  housekeeping (connection close, expiry scan); :func:`serve_namesrv` runs one until told to stop.
"""

from __future__ import annotations

from rocketq.namesrv.handlers import NamesrvProcessor, topic_not_exist_remark
from rocketq.namesrv.kvconfig import ORDER_TOPIC_CONFIG, KVConfig
from rocketq.namesrv.routes import (
    BROKER_CHANNEL_EXPIRED_TIME,
    BrokerLiveInfo,
    ExpiredBroker,
    RegisterBrokerResult,
    RouteTable,
)
from rocketq.namesrv.server import DEFAULT_PORT, NameServer, NamesrvConfig, serve_namesrv

__all__ = [
    "BROKER_CHANNEL_EXPIRED_TIME",
    "DEFAULT_PORT",
    "ORDER_TOPIC_CONFIG",
    "BrokerLiveInfo",
    "ExpiredBroker",
    "KVConfig",
    "NameServer",
    "NamesrvConfig",
    "NamesrvProcessor",
    "RegisterBrokerResult",
    "RouteTable",
    "serve_namesrv",
    "topic_not_exist_remark",
]
