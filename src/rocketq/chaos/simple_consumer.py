"""A second consumer program for ``rocketq chaos --consumer-cmd``: the line contract, independently.

``python -m rocketq.chaos.simple_consumer --namesrv HOST:PORT --topic T --group G --instance NAME``

It shares no consumer code with :mod:`rocketq.client` - no push consumer, no rebalance service,
no process queues: one thread, the raw call layer (:mod:`rocketq.protocol.calls` over a
:class:`~rocketq.remoting.blocking.BlockingRemotingClient` per server) and RocketMQ's allocation
strategy (:mod:`rocketq.allocate`, AVG). So the chaos harness can be seen judging a client other
than the one it was built beside, and the line contract is tested against a program that only
knows the contract. Its loop:

* every ``--heartbeat-interval`` seconds, HEART_BEAT to every broker of the topic (client id
  ``<client ip>@<instance>``, a CONSUME_ACTIVELY clustering consumer of the topic);
* every ``--poll-interval`` seconds the topic's route from the name server;
* a rebalance every ``--rebalance-interval`` seconds, and at once when a broker sends
  NOTIFY_CONSUMER_IDS_CHANGED: the member list from the first broker of the route (by name),
  AVG over the route's readable queues; a queue given up has its offset committed (and awaited)
  first; a queue taken starts at the group's committed offset (its first offset if none);
  a ``REBALANCE`` line when the owned queues changed (and after the first rebalance);
* a pull round: each owned queue pulled once without long polling (up to 32 messages), a
  ``RECV`` line per message, then the next offset; 50 ms of rest after a round that found nothing;
* every second, the consumed offsets committed (one-way);
* on SIGTERM or SIGINT: offsets committed (awaited), UNREGISTER_CLIENT to every broker, exit 0.

Errors with one broker (a restart, a cut) are logged to stderr and retried on the next round.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import time
from collections.abc import Sequence
from types import FrameType
from typing import TextIO

from rocketq.allocate import get_strategy
from rocketq.errors import RocketQError
from rocketq.models import MessageQueue, PullStatus
from rocketq.protocol import calls
from rocketq.protocol.bodies import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    HeartbeatData,
    MessageModel,
    SubscriptionData,
    TopicRouteData,
)
from rocketq.protocol.codes import PullSysFlag, RequestCode
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import PullMessageRequestHeader
from rocketq.protocol.message import decode_messages
from rocketq.remoting.blocking import BlockingRemotingClient

__all__ = ["SimpleConsumer", "main"]

logger = logging.getLogger(__name__)

_BATCH = 32
_REST = 0.05
_COMMIT_EVERY = 1.0
_TIMEOUT = 3.0


def _text(body: bytes) -> str:
    return body.decode("utf-8", "replace").replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


def _queues(qs: Sequence[MessageQueue]) -> str:
    return "[" + ",".join(f"{q.broker_name}:{q.queue_id}" for q in qs) + "]"


class SimpleConsumer:
    """The program's state and loop (see the module docstring)."""

    def __init__(
        self,
        *,
        namesrv: str,
        topic: str,
        group: str,
        client_id: str,
        heartbeat_interval: float,
        rebalance_interval: float,
        poll_interval: float,
        out: TextIO | None = None,
    ) -> None:
        self.topic = topic
        self.group = group
        self.client_id = client_id
        self.heartbeat_interval = heartbeat_interval
        self.rebalance_interval = rebalance_interval
        self.poll_interval = poll_interval
        self.out = out if out is not None else sys.stdout
        self.namesrv = BlockingRemotingClient(namesrv, request_timeout=_TIMEOUT)
        self.brokers: dict[str, BlockingRemotingClient] = {}
        self.queues: list[MessageQueue] = []
        self.owned: dict[MessageQueue, int] = {}
        self.committed: dict[MessageQueue, int] = {}
        self.strategy = get_strategy("AVG")
        self.notified = True  # the first rebalance comes at once
        self.stopping = False
        self.printed_first = False

    # ------------------------------------------------------------------ servers

    def _broker(self, name: str) -> BlockingRemotingClient | None:
        return self.brokers.get(name)

    def _route(self) -> None:
        route: TopicRouteData = self.namesrv.call(calls.get_route_info(self.topic))
        queues: list[MessageQueue] = []
        for qd in route.queue_datas:
            queues.extend(
                MessageQueue(self.topic, qd.broker_name or "", i) for i in range(qd.read_queue_nums)
            )
        self.queues = sorted(queues)
        for bd in route.broker_datas:
            addr = bd.master_addr
            name = bd.broker_name or ""
            current = self.brokers.get(name)
            if addr is None or (current is not None and current.addr == addr):
                continue
            if current is not None:
                current.close()
            client = BlockingRemotingClient(addr, request_timeout=_TIMEOUT)
            client.register_handler(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, self._on_notify)
            self.brokers[name] = client

    def _on_notify(self, client: BlockingRemotingClient, request: RemotingCommand) -> RemotingCommand | None:
        self.notified = True
        return None

    def _heartbeat(self) -> None:
        sub = SubscriptionData.build(self.topic, "*", sub_version=int(time.time() * 1000))
        data = HeartbeatData(
            client_id=self.client_id,
            consumer_data_set=(
                ConsumerData(
                    group_name=self.group,
                    consume_type=ConsumeType.CONSUME_ACTIVELY,
                    message_model=MessageModel.CLUSTERING,
                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                    subscription_data_set=(sub,),
                ),
            ),
        )
        for name, client in sorted(self.brokers.items()):
            try:
                client.call(calls.send_heartbeat(data))
            except RocketQError as exc:
                logger.warning("heartbeat to %s failed: %s", name, exc)

    # ------------------------------------------------------------------ rebalance

    def _rebalance(self) -> None:
        if not self.queues or not self.brokers:
            return
        first = sorted(self.brokers)[0]
        try:
            members = self.brokers[first].call(calls.get_consumer_list_by_group(self.group))
        except RocketQError as exc:
            logger.warning("member list from %s failed: %s", first, exc)
            return
        if self.client_id not in members:
            return  # the broker does not know us yet: keep what we have until it does
        mine = self.strategy.allocate(self.group, self.client_id, self.queues, sorted(members))
        wanted = sorted(mine)
        removed = [q for q in self.owned if q not in wanted]
        added = [q for q in wanted if q not in self.owned]
        for q in removed:
            self._commit(q, oneway=False)
            del self.owned[q]
        for q in added:
            start = self._committed_offset(q)
            if start is None:
                continue
            self.owned[q] = start
        if removed or added or not self.printed_first:
            self.printed_first = True
            owned = sorted(self.owned)
            self._write(
                f"REBALANCE {self.client_id} {self.topic} owned={_queues(owned)} "
                f"added={_queues([q for q in added if q in self.owned])} removed={_queues(removed)}"
            )

    def _committed_offset(self, q: MessageQueue) -> int | None:
        client = self._broker(q.broker_name)
        if client is None:
            return None
        try:
            offset = client.call(calls.query_consumer_offset(self.group, q))
            if offset is None or offset < 0:
                offset = client.call(calls.get_min_offset(q))
        except RocketQError as exc:
            logger.warning("offset of %s failed: %s", q, exc)
            return None
        self.committed[q] = offset
        return offset

    def _commit(self, q: MessageQueue, *, oneway: bool) -> None:
        offset = self.owned.get(q)
        client = self._broker(q.broker_name)
        if offset is None or client is None or self.committed.get(q) == offset:
            return
        try:
            client.call(calls.update_consumer_offset(self.group, q, offset, oneway=oneway))
            self.committed[q] = offset
        except RocketQError as exc:
            logger.warning("commit of %s failed: %s", q, exc)

    # ------------------------------------------------------------------ pulling

    def _pull_round(self) -> int:
        found = 0
        for q in sorted(self.owned):
            client = self._broker(q.broker_name)
            if client is None or q not in self.owned:
                continue
            header = PullMessageRequestHeader(
                consumer_group=self.group,
                topic=self.topic,
                queue_id=q.queue_id,
                queue_offset=self.owned[q],
                max_msg_nums=_BATCH,
                sys_flag=int(PullSysFlag.SUBSCRIPTION),
                commit_offset=0,
                suspend_timeout_millis=0,
                subscription="*",
                sub_version=0,
            )
            try:
                result = client.call(calls.pull_message(header))
            except RocketQError as exc:
                logger.warning("pull of %s failed: %s", q, exc)
                continue
            if result.status is PullStatus.FOUND:
                for msg in decode_messages(result.body):
                    self._write(
                        f"RECV {self.client_id} {q.broker_name} {msg.queue_id} {msg.queue_offset} "
                        f"{msg.msg_id} {_text(msg.body)}"
                    )
                    found += 1
            if q in self.owned:
                self.owned[q] = result.next_begin_offset
        return found

    def _write(self, line: str) -> None:
        self.out.write(line + "\n")
        self.out.flush()

    # ------------------------------------------------------------------ the loop

    def run(self) -> None:
        now = time.monotonic()
        next_route = next_heartbeat = next_rebalance = next_commit = now
        while not self.stopping:
            now = time.monotonic()
            if now >= next_route:
                try:
                    self._route()
                except RocketQError as exc:
                    logger.warning("route of %s failed: %s", self.topic, exc)
                next_route = now + self.poll_interval
            if now >= next_heartbeat:
                self._heartbeat()
                next_heartbeat = now + self.heartbeat_interval
            if self.notified or now >= next_rebalance:
                self.notified = False
                self._rebalance()
                next_rebalance = now + self.rebalance_interval
            if self._pull_round() == 0 and not self.stopping:
                time.sleep(_REST)
            if time.monotonic() >= next_commit:
                for q in list(self.owned):
                    self._commit(q, oneway=True)
                next_commit = time.monotonic() + _COMMIT_EVERY
        self.shutdown()

    def shutdown(self) -> None:
        for q in list(self.owned):
            self._commit(q, oneway=False)
        for name, client in sorted(self.brokers.items()):
            try:
                client.call(calls.unregister_client(self.client_id, consumer_group=self.group))
            except RocketQError as exc:
                logger.warning("unregister at %s failed: %s", name, exc)
            client.close()
        self.namesrv.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rocketq.chaos.simple_consumer",
        description="A one-thread consumer on the raw call layer that prints the chaos line contract.",
    )
    parser.add_argument("--namesrv", required=True, metavar="HOST:PORT")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--instance", required=True, help="the client id becomes <client ip>@INSTANCE")
    parser.add_argument("--client-ip", default="127.0.0.1")
    parser.add_argument("--heartbeat-interval", type=float, default=30.0, metavar="S")
    parser.add_argument("--rebalance-interval", type=float, default=20.0, metavar="S")
    parser.add_argument("--poll-interval", type=float, default=30.0, metavar="S")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )
    consumer = SimpleConsumer(
        namesrv=args.namesrv,
        topic=args.topic,
        group=args.group,
        client_id=f"{args.client_ip}@{args.instance}",
        heartbeat_interval=args.heartbeat_interval,
        rebalance_interval=args.rebalance_interval,
        poll_interval=args.poll_interval,
    )

    def stop(signum: int, frame: FrameType | None) -> None:
        consumer.stopping = True

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, stop)
    consumer.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
