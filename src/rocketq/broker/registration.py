"""Registration with the name servers (RocketMQ 4.9.4's ``BrokerOuterAPI.registerBrokerAll``).

The broker sends REGISTER_BROKER to every configured name server: once at start, every
``register_period`` seconds after ``register_initial_delay`` (RocketMQ: 10 s, then every 30 s,
always a full registration since ``forceRegister`` is on by default), and at once - coalesced
into one round - whenever its topic table changes. The body is the whole
``TopicConfigSerializeWrapper`` as JSON, or zlib-compressed in the binary layout when
``compressed_register`` is set (4.9.4 sends JSON by default); the header carries the body's
CRC32. Name servers are called concurrently; one that is down is logged and retried at the next
round. At a clean shutdown the broker sends UNREGISTER_BROKER to each.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import zlib
from collections.abc import Callable

from rocketq.errors import RemotingError
from rocketq.protocol.bodies import RegisterBrokerBody, TopicConfigSerializeWrapper
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import (
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnRegisterBrokerRequestHeader,
)
from rocketq.remoting import RemotingClient, RemotingClientConfig, TlsClientConfig
from rocketq.tasks import cancel_and_wait

__all__ = ["NamesrvRegistrar"]

log = logging.getLogger(__name__)


def _java_crc32(data: bytes) -> int:
    return zlib.crc32(data) & 0x7FFFFFFF


class NamesrvRegistrar:
    """Keeps one broker registered with its name servers (see the module docstring)."""

    def __init__(
        self,
        namesrv_addrs: tuple[str, ...],
        *,
        broker_name: str,
        broker_addr: str,
        cluster_name: str,
        ha_server_addr: str,
        broker_id: int,
        wrapper: Callable[[], TopicConfigSerializeWrapper],
        period: float = 30.0,
        initial_delay: float = 10.0,
        timeout: float = 6.0,
        compressed: bool = False,
        on_answer: Callable[[RegisterBrokerResponseHeader], None] | None = None,
        tls: TlsClientConfig | None = None,
    ) -> None:
        """``on_answer`` gets every accepting name server's answer: a slave learns its master's
        address and HA address from it (RocketMQ's ``RegisterBrokerResult``)."""
        self.namesrv_addrs = namesrv_addrs
        self._broker_name = broker_name
        self._broker_addr = broker_addr
        self._cluster = cluster_name
        self._ha = ha_server_addr
        self._broker_id = broker_id
        self._wrapper = wrapper
        self._period = period
        self._initial_delay = initial_delay
        self._timeout = timeout
        self._compressed = compressed
        self._on_answer = on_answer
        self._client = RemotingClient(
            config=RemotingClientConfig(
                request_timeout=timeout, idle_timeout=None, tls=tls or TlsClientConfig()
            )
        )
        self._task: asyncio.Task[None] | None = None
        self._soon: asyncio.Event = asyncio.Event()
        self.registrations = 0
        """Successful REGISTER_BROKER answers since start (all name servers counted)."""

    async def start(self) -> None:
        """Register once with every name server (failures are logged), then keep registering."""
        if not self.namesrv_addrs:
            return
        await self._client.start()
        await self.register_all()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="namesrv-registration")

    def request_soon(self) -> None:
        """The topic table changed: register again at once (coalesced with other changes)."""
        self._soon.set()

    async def close(self, *, unregister: bool = True) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)
        if unregister and self.namesrv_addrs and not self._client.is_closed:
            await self.unregister_all()
        await self._client.close()

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        next_at = loop.time() + self._initial_delay
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._soon.wait(), max(next_at - loop.time(), 0.0))
            # cleared before registering: a change during the round triggers the next one
            self._soon.clear()
            if loop.time() >= next_at:
                next_at = loop.time() + self._period
            try:
                await self.register_all()
            except Exception:  # the loop must survive a bug in one round
                log.exception("registration round failed")

    def _register_request(self) -> RemotingCommand:
        body_value = RegisterBrokerBody(topic_config_serialize_wrapper=self._wrapper())
        body = body_value.encode(compress=self._compressed)
        header = RegisterBrokerRequestHeader(
            broker_name=self._broker_name,
            broker_addr=self._broker_addr,
            cluster_name=self._cluster,
            ha_server_addr=self._ha,
            broker_id=self._broker_id,
            compressed=self._compressed,
            body_crc32=_java_crc32(body),
        )
        return RemotingCommand.request(RequestCode.REGISTER_BROKER, header.to_ext_fields(), body)

    async def register_all(self) -> int:
        """One REGISTER_BROKER to every name server; returns how many accepted it."""
        results = await asyncio.gather(*(self._register(addr) for addr in self.namesrv_addrs))
        return sum(results)

    async def _register(self, addr: str) -> bool:
        request = self._register_request()
        try:
            response = await self._client.invoke(addr, request, self._timeout)
        except RemotingError as exc:
            log.warning("register to name server %s failed: %s", addr, exc)
            return False
        if response.code != ResponseCode.SUCCESS:
            log.warning(
                "name server %s refused the registration: %d %s", addr, response.code, response.remark
            )
            return False
        self.registrations += 1
        if self._on_answer is not None:
            try:
                self._on_answer(RegisterBrokerResponseHeader.from_ext_fields(response.ext_fields or {}))
            except Exception:
                log.exception("the registration answer of %s was not usable", addr)
        log.debug("registered with name server %s", addr)
        return True

    async def unregister_all(self) -> None:
        header = UnRegisterBrokerRequestHeader(
            broker_name=self._broker_name,
            broker_addr=self._broker_addr,
            cluster_name=self._cluster,
            broker_id=self._broker_id,
        )

        async def one(addr: str) -> None:
            request = RemotingCommand.request(RequestCode.UNREGISTER_BROKER, header.to_ext_fields())
            try:
                await self._client.invoke(addr, request, self._timeout)
                log.info("unregistered from name server %s", addr)
            except RemotingError as exc:
                log.warning("unregister from name server %s failed: %s", addr, exc)

        await asyncio.gather(*(one(addr) for addr in self.namesrv_addrs))
