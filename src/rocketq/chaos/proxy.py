"""The chaos proxy's brain: rewrites routes, injects faults, and writes down what crosses it.

:class:`ChaosProxy` is a :class:`~rocketq.remoting.relay.RelayPolicy` (no I/O; ``now`` is passed
in), run by a :class:`~rocketq.remoting.relay.RelayThread`. Every consumer process gets its own
listeners - one for the name server and one per broker - tagged ``(consumer, target)`` where
target is ``"namesrv"`` or a broker name, so a fault can hit one consumer, one broker, or both:

* **routes**: a ``GET_ROUTEINFO_BY_TOPIC`` answer (and ``GET_BROKER_CLUSTER_INFO``'s) going to a
  consumer has each real broker address replaced by that consumer's listener for the broker, so
  the consumer reaches brokers only through the proxy (bodies keep their JSON flavour: quoted
  broker ids for 4.9.4+ clients, fastjson's bare ones for older);
* **faults** (:class:`Fault`), switched on and off by the harness: ``drop`` or ``delay`` the frames
  of one request code (requests *and* their responses) in one direction; ``cut`` a consumer off
  from a target (its new connections are refused; the harness closes the open ones);
  ``stale-route`` answers a consumer's route requests with the route it had when the fault began;
* **observations**: pulls, notifications, member-list queries and fault events, as the values of
  :mod:`rocketq.chaos.timeline`.

All state is guarded by one lock: the relay's thread calls in, the harness reads and switches.

>>> proxy = ChaosProxy()
>>> f = Fault(kind="drop", code=40, consumer="c1", direction="to-client")
>>> f.describe()
'drop NOTIFY_CONSUMER_IDS_CHANGED(40) to-client, consumer c1'
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeVar

from rocketq.chaos.timeline import MemberQuery, Notify, Pull, Release, WireEvent
from rocketq.errors import RemoteProtocolError
from rocketq.protocol.bodies import BrokerData, ClusterInfo, HeartbeatData, JsonBody, TopicRouteData
from rocketq.protocol.bodies.client import GetConsumerListByGroupResponseBody, UnlockBatchRequestBody
from rocketq.protocol.codes import RequestCode, code_name
from rocketq.protocol.command import RemotingCommand
from rocketq.remoting.relay import Direction, Link, Outgoing

__all__ = ["NAMESRV", "ChaosProxy", "Fault", "FaultKind"]

NAMESRV = "namesrv"
"""The target name of a consumer's name-server listener (brokers are named by broker name)."""

FaultKind = Literal["drop", "delay", "cut", "stale-route"]

_NATIVE_IDS = re.compile(rb'"brokerAddrs":\{\d')
_B = TypeVar("_B", bound=JsonBody)


@dataclass(frozen=True, slots=True, kw_only=True)
class Fault:
    """One fault of the proxy (see the module docstring); ``None`` matches anything."""

    kind: FaultKind
    #: the consumer it hits (``None``: every consumer)
    consumer: str | None = None
    #: ``"namesrv"`` or a broker name (``None``: any)
    target: str | None = None
    #: the request code whose frames it hits (drop, delay); responses count as their request's
    code: int | None = None
    #: ``"to-server"`` or ``"to-client"`` (``None``: both)
    direction: str | None = None
    #: how long ``delay`` holds a frame
    seconds: float = 0.0

    def matches(self, consumer: str, target: str) -> bool:
        return (self.consumer is None or self.consumer == consumer) and (
            self.target is None or self.target == target
        )

    def describe(self) -> str:
        what = {
            "drop": "drop",
            "delay": f"delay by {self.seconds:g} s",
            "cut": "cut",
            "stale-route": "stale route",
        }
        words = [what[self.kind]]
        if self.code is not None:
            words.append(code_name(self.code, response=False))
        if self.direction:
            words.append(self.direction)
        where = []
        if self.consumer:
            where.append(f"consumer {self.consumer}")
        if self.target:
            where.append(f"{'from' if self.kind == 'cut' else 'at'} {self.target}")
        return " ".join(words) + (", " + " ".join(where) if where else "")

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "consumer": self.consumer,
            "target": self.target,
            "code": self.code,
            "direction": self.direction,
            "seconds": self.seconds,
            "text": self.describe(),
        }


@dataclass(slots=True)
class _Pending:
    code: int
    sent: float
    fields: Mapping[str, str]


def _tag(link: Link) -> tuple[str, str]:
    tag = link.tag
    if isinstance(tag, tuple) and len(tag) == 2:
        return str(tag[0]), str(tag[1])
    return str(tag), ""


class ChaosProxy:
    """The fault-injecting, route-rewriting, observing policy (see the module docstring).

    ``topic`` and ``group`` say whose pulls and member queries to record (others are relayed
    unrecorded); ``broker_names`` maps real broker addresses to names.
    """

    def __init__(
        self,
        *,
        topic: str | None = None,
        group: str | None = None,
        broker_names: Mapping[str, str] | None = None,
    ) -> None:
        self.topic = topic
        self.group = group
        self._lock = threading.Lock()
        self._broker_names: dict[str, str] = dict(broker_names or {})
        self._addr_maps: dict[str, dict[str, str]] = {}
        self._faults: dict[str, Fault] = {}
        self._pending: dict[tuple[int, int], _Pending] = {}
        self._open_pulls: dict[tuple[int, int], Pull] = {}
        self._routes: dict[tuple[str, str], bytes] = {}
        self._frozen: dict[tuple[str, str], bytes] = {}
        self.pulls: list[Pull] = []
        self.releases: list[Release] = []
        self.notifies: list[Notify] = []
        self.queries: list[MemberQuery] = []
        self.events: list[WireEvent] = []
        #: client ids seen in each consumer's heartbeats
        self.client_ids: dict[str, str] = {}
        #: HEART_BEAT requests per (consumer, broker): (relayed, dropped)
        self.heartbeats: dict[tuple[str, str], list[int]] = {}

    # ------------------------------------------------------------------ set-up and switching

    def set_addresses(self, consumer: str, mapping: Mapping[str, str]) -> None:
        """Route rewriting for ``consumer``: real broker address → its listener's address."""
        with self._lock:
            self._addr_maps[consumer] = dict(mapping)

    def set_broker_name(self, addr: str, name: str) -> None:
        with self._lock:
            self._broker_names[addr] = name

    def activate(self, fault_id: str, fault: Fault, now: float) -> None:
        """Switch ``fault`` on under ``fault_id``. A ``stale-route`` fault freezes the consumer's
        routes as last answered."""
        with self._lock:
            self._faults[fault_id] = fault
            if fault.kind == "stale-route":
                for (consumer, topic), body in self._routes.items():
                    if fault.consumer is None or fault.consumer == consumer:
                        self._frozen.setdefault((consumer, topic), body)

    def heal(self, fault_id: str, now: float) -> Fault | None:
        """Switch a fault off; the fault, if it was on."""
        with self._lock:
            fault = self._faults.pop(fault_id, None)
            if fault is not None and fault.kind == "stale-route":
                still = [f for f in self._faults.values() if f.kind == "stale-route"]
                for key in list(self._frozen):
                    if not any(f.consumer is None or f.consumer == key[0] for f in still):
                        del self._frozen[key]
            return fault

    def record(self, event: WireEvent) -> None:
        """Add an event the harness caused (closing links for a cut, for instance)."""
        with self._lock:
            self.events.append(event)

    def hits(self, fault: Fault) -> Callable[[Link], bool]:
        """A predicate picking the links ``fault`` hits (by consumer and target)."""

        def pick(link: Link) -> bool:
            return fault.matches(*_tag(link))

        return pick

    def active(self) -> dict[str, Fault]:
        with self._lock:
            return dict(self._faults)

    def is_cut(self, consumer: str, target: str) -> bool:
        with self._lock:
            return self._cut(consumer, target)

    def _cut(self, consumer: str, target: str) -> bool:
        return any(f.kind == "cut" and f.matches(consumer, target) for f in self._faults.values())

    # ------------------------------------------------------------------ the relay's calls

    def accept(self, link: Link, now: float) -> bool:
        consumer, target = _tag(link)
        with self._lock:
            if self._cut(consumer, target):
                self.events.append(WireEvent(now, "refused", consumer, target, "connection"))
                return False
            return True

    def on_close(self, link: Link, now: float) -> None:
        with self._lock:
            for key in [k for k in self._pending if k[0] == link.id]:
                del self._pending[key]
            for key in [k for k in self._open_pulls if k[0] == link.id]:
                pull = self._open_pulls.pop(key)
                self.pulls.append(replace(pull, answered=now))

    def on_frame(self, link: Link, direction: Direction, cmd: RemotingCommand, now: float) -> Outgoing:
        consumer, target = _tag(link)
        with self._lock:
            if cmd.is_response:
                key = (link.id, cmd.opaque)
                pending = self._pending.pop(key, None) if direction is Direction.TO_CLIENT else None
                code = pending.code if pending is not None else None
                verdict = self._fault_verdict(consumer, target, direction, code, cmd, now)
                if pending is not None and verdict is not None:
                    cmd = self._observe_response(link, consumer, target, pending, cmd, now)
                return verdict_frames(verdict, cmd)
            code = cmd.code
            verdict = self._fault_verdict(consumer, target, direction, code, cmd, now)
            if direction is Direction.TO_SERVER:
                if not cmd.is_oneway:
                    self._pending[(link.id, cmd.opaque)] = _Pending(code, now, cmd.ext_fields)
                self._observe_request(link, consumer, target, cmd, now, dropped=verdict is None)
            elif code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED:
                group = cmd.ext_fields.get("consumerGroup")
                if self.group is None or group == self.group:
                    delay = verdict if isinstance(verdict, float) else 0.0
                    self.notifies.append(Notify(consumer, target, now, dropped=verdict is None, delay=delay))
            return verdict_frames(verdict, cmd)

    # ------------------------------------------------------------------ internals (lock held)

    def _fault_verdict(
        self,
        consumer: str,
        target: str,
        direction: Direction,
        code: int | None,
        cmd: RemotingCommand,
        now: float,
    ) -> float | None:
        """Seconds to hold the frame (0: forward now), or ``None`` to drop it."""
        delay = 0.0
        for fault in self._faults.values():
            if fault.kind not in ("drop", "delay") or not fault.matches(consumer, target):
                continue
            if fault.direction is not None and fault.direction != direction.value:
                continue
            if fault.code is not None and fault.code != code:
                continue
            name = code_name(code, response=False) if code is not None else f"response {cmd.opaque}"
            kind = "response to " if cmd.is_response else ""
            if fault.kind == "drop":
                self.events.append(
                    WireEvent(now, "dropped", consumer, target, f"{kind}{name} {direction.value}")
                )
                return None
            delay = max(delay, fault.seconds)
        if delay > 0:
            name = code_name(code, response=False) if code is not None else f"response {cmd.opaque}"
            self.events.append(WireEvent(now, "delayed", consumer, target, f"{name} by {delay:g} s"))
        return delay

    def _observe_request(
        self, link: Link, consumer: str, target: str, cmd: RemotingCommand, now: float, *, dropped: bool
    ) -> None:
        code = cmd.code
        ext = cmd.ext_fields
        if code == RequestCode.PULL_MESSAGE and not dropped:
            if (self.topic is None or ext.get("topic") == self.topic) and (
                self.group is None or ext.get("consumerGroup") == self.group
            ):
                try:
                    qid, offset = int(ext["queueId"]), int(ext["queueOffset"])
                except (KeyError, ValueError):
                    return
                self._open_pulls[(link.id, cmd.opaque)] = Pull(consumer, target, qid, offset, now, now)
        elif code == RequestCode.UNLOCK_BATCH_MQ and not dropped:
            self._observe_unlock(consumer, target, cmd, now)
        elif code == RequestCode.HEART_BEAT:
            counts = self.heartbeats.setdefault((consumer, target), [0, 0])
            counts[1 if dropped else 0] += 1
            if consumer not in self.client_ids:
                try:
                    client_id = HeartbeatData.decode(cmd.body).client_id
                except RemoteProtocolError:
                    client_id = None
                if client_id:
                    self.client_ids[consumer] = client_id

    def _observe_unlock(self, consumer: str, target: str, cmd: RemotingCommand, now: float) -> None:
        try:
            body = UnlockBatchRequestBody.decode(cmd.body)
        except RemoteProtocolError:
            return
        if self.group is not None and body.consumer_group != self.group:
            return
        for mq in body.mq_set:
            if self.topic is None or mq.topic == self.topic:
                self.releases.append(Release(consumer, target, mq.queue_id, now))

    def _observe_response(
        self, link: Link, consumer: str, target: str, pending: _Pending, cmd: RemotingCommand, now: float
    ) -> RemotingCommand:
        code = pending.code
        if code == RequestCode.PULL_MESSAGE:
            pull = self._open_pulls.pop((link.id, cmd.opaque), None)
            if pull is not None:
                try:
                    nxt: int | None = int(cmd.ext_fields["nextBeginOffset"])
                except (KeyError, ValueError):
                    nxt = None
                self.pulls.append(replace(pull, answered=now, code=cmd.code, next_offset=nxt))
        elif code == RequestCode.GET_CONSUMER_LIST_BY_GROUP:
            if self.group is None or pending.fields.get("consumerGroup") == self.group:
                members: tuple[str, ...] | None = None
                if cmd.code == 0 and cmd.body:
                    try:
                        members = tuple(GetConsumerListByGroupResponseBody.decode(cmd.body).consumer_id_list)
                    except RemoteProtocolError:
                        members = None
                elif cmd.code == 0:
                    members = ()
                self.queries.append(MemberQuery(consumer, target, pending.sent, now, members))
        elif code == RequestCode.GET_ROUTEINFO_BY_TOPIC and cmd.code == 0 and cmd.body:
            topic = pending.fields.get("topic", "")
            frozen = self._frozen.get((consumer, topic))
            if frozen is not None:
                self.events.append(WireEvent(now, "stale-route", consumer, target, topic))
                return replace(cmd, body=frozen)
            body = self._rewrite_route(consumer, cmd.body)
            self._routes[(consumer, topic)] = body
            if any(f.kind == "stale-route" and f.consumer in (None, consumer) for f in self._faults.values()):
                self._frozen.setdefault((consumer, topic), body)  # first answer under the fault
            return replace(cmd, body=body)
        elif code == RequestCode.GET_BROKER_CLUSTER_INFO and cmd.code == 0 and cmd.body:
            return replace(cmd, body=self._rewrite_cluster(consumer, cmd.body))
        return cmd

    def _rewrite_route(self, consumer: str, body: bytes) -> bytes:
        return self._rewrite_addrs(consumer, body, TopicRouteData, _route_through)

    def _rewrite_cluster(self, consumer: str, body: bytes) -> bytes:
        return self._rewrite_addrs(consumer, body, ClusterInfo, _cluster_through)

    def _rewrite_addrs(
        self, consumer: str, body: bytes, cls: type[_B], through: Callable[[_B, Mapping[str, str]], _B]
    ) -> bytes:
        """``body`` (a ``cls``) with its broker addresses put ``through`` the consumer's address
        map; as it is when the consumer has none or the body does not decode."""
        mapping = self._addr_maps.get(consumer)
        if not mapping:
            return body
        try:
            decoded = cls.decode(body)
        except RemoteProtocolError:
            return body
        return through(decoded, mapping).encode(browser_compatible=not _NATIVE_IDS.search(body))

    # ------------------------------------------------------------------ reading

    def snapshot(self, now: float) -> dict[str, list[Any]]:
        """Copies of what was observed, with pulls still open closed at ``now``."""
        with self._lock:
            pulls = list(self.pulls) + [replace(p, answered=now) for p in self._open_pulls.values()]
            return {
                "pulls": sorted(pulls, key=lambda p: p.sent),
                "releases": list(self.releases),
                "notifies": list(self.notifies),
                "queries": list(self.queries),
                "events": list(self.events),
            }


def verdict_frames(verdict: float | None, cmd: RemotingCommand) -> Outgoing:
    """The relay's answer for a fault verdict: nothing (dropped) or the frame after its delay."""
    if verdict is None:
        return ()
    return ((verdict, cmd),)


def tag_of(consumer: str, target: str) -> Hashable:
    """The listener tag of ``consumer``'s listener for ``target``."""
    return (consumer, target)


def _broker_through(bd: BrokerData, mapping: Mapping[str, str]) -> BrokerData:
    addrs = {bid: mapping.get(addr, addr) for bid, addr in bd.broker_addrs.items()}
    return replace(bd, broker_addrs=addrs)


def _route_through(route: TopicRouteData, mapping: Mapping[str, str]) -> TopicRouteData:
    return replace(route, broker_datas=tuple(_broker_through(bd, mapping) for bd in route.broker_datas))


def _cluster_through(info: ClusterInfo, mapping: Mapping[str, str]) -> ClusterInfo:
    table = {name: _broker_through(bd, mapping) for name, bd in info.broker_addr_table.items()}
    return replace(info, broker_addr_table=table)
