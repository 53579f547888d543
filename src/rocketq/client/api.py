"""The client API: the calls of :mod:`rocketq.protocol.calls` run over one shared transport.

:class:`ClientAPI` is what a client instance (and :class:`~rocketq.admin.AsyncAdmin`) talks
through, on its event loop: :meth:`ClientAPI.call` runs any call against a broker;
:meth:`ClientAPI.call_namesrv` and :meth:`ClientAPI.get_topic_route` ask the name servers, trying
them in turn and sticking to the one that last answered, as Java's client does (an address that
turns out not to be a name server - a broker, say - is an error that says so). Requests, header
fields and bodies are RocketMQ 4.9.4's (``MQClientAPIImpl``); a refusal raises the
:class:`~rocketq.errors.BrokerError` of its response code (noted with the call and the peer),
transport failures the :class:`~rocketq.errors.RemotingError` subclasses unchanged.
:class:`rocketq.client.blocking.BlockingClient` runs the same calls with no event loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TypeVar

from rocketq.errors import ConfigError, RemotingError, RequestCodeNotSupportedError, TopicNotExistError
from rocketq.protocol import calls
from rocketq.protocol.bodies import TopicRouteData
from rocketq.protocol.calls import Call
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.command import RemotingCommand
from rocketq.remoting.client import RemotingClient

__all__ = ["ClientAPI"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


class ClientAPI:
    """The calls of one client instance (or admin), over one :class:`RemotingClient`.

    ``namesrv_addrs`` are tried in turn for name-server calls: the one that last answered is asked
    first. ``timeout`` is the default wait of every call.
    """

    def __init__(
        self, remoting: RemotingClient, namesrv_addrs: Sequence[str], *, timeout: float = 3.0
    ) -> None:
        self.remoting = remoting
        self.namesrv_addrs = tuple(namesrv_addrs)
        self.timeout = timeout
        self._namesrv_index = 0

    async def call(self, addr: str, call: Call[T], timeout: float | None = None) -> T:
        """Run ``call`` at ``addr`` (a oneway call returns ``None`` once sent)."""
        return await self.remoting.call(addr, call, timeout or self.timeout)

    async def call_namesrv(self, make: Callable[[], Call[T]], timeout: float | None = None) -> T:
        """Run a name-server call (made afresh by ``make`` for each try) on the first name server
        that answers; the last transport error is raised when none does."""
        last_error: RemotingError | None = None
        n = len(self.namesrv_addrs)
        for i in range(n):
            index = (self._namesrv_index + i) % n
            addr = self.namesrv_addrs[index]
            try:
                result = await self.remoting.call(addr, make(), timeout or self.timeout)
            except RequestCodeNotSupportedError:
                raise await self._not_a_name_server(addr, timeout or self.timeout) from None
            except RemotingError as exc:
                last_error = exc
                logger.debug("name server %s failed: %s", addr, exc)
                continue
            self._namesrv_index = index
            return result
        assert last_error is not None
        raise last_error

    async def _not_a_name_server(self, addr: str, timeout: float) -> ConfigError:
        """The error for a "name server" at ``addr`` that refused a name-server request as unknown:
        a broker (it answers GET_BROKER_CONFIG, which only brokers do) or some other server."""
        request = RemotingCommand.request(RequestCode.GET_BROKER_CONFIG)
        try:
            broker = (await self.remoting.invoke(addr, request, timeout)).code == ResponseCode.SUCCESS
        except RemotingError:
            broker = False
        if broker:
            return ConfigError(f"{addr} is a broker, not a name server (give the name server's address)")
        return ConfigError(f"{addr} is not a name server: it does not know name-server requests")

    async def get_topic_route(self, topic: str, timeout: float | None = None) -> TopicRouteData | None:
        """The topic's route, or ``None`` when the name server says TOPIC_NOT_EXIST."""
        try:
            return await self.call_namesrv(lambda: calls.get_route_info(topic), timeout)
        except TopicNotExistError:
            return None
