"""The admin's transport: its connections, how a call to a name server or a broker fails (one line
naming the server and what was refused), and the name server's cluster table and routes, which
every other part of :class:`~rocketq.admin.core.AsyncAdmin` starts from."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Self

from rocketq.admin.values import T
from rocketq.client.api import ClientAPI
from rocketq.client.config import credentials_of, resolve_namesrv
from rocketq.errors import (
    BrokerError,
    ConfigError,
    RemotingConnectError,
    RemotingTimeoutError,
    UnknownTopicError,
)
from rocketq.protocol import calls
from rocketq.protocol.bodies import (
    ClusterInfo,
    TopicRouteData,
)
from rocketq.protocol.calls import Call
from rocketq.protocol.codes import MASTER_ID
from rocketq.remoting.client import RemotingClient
from rocketq.remoting.config import RemotingClientConfig
from rocketq.remoting.tls import TlsClientConfig

__all__ = ["AdminTransport"]


def refusal(exc: BrokerError, what: str) -> BrokerError:
    """The same refusal, its message saying what was refused where (the CLI prints that line)."""
    return BrokerError.for_code(exc.code, f"{what}: {exc.remark or 'no reason given'}")


class AdminTransport:
    """Connections and name-server look-ups of :class:`~rocketq.admin.core.AsyncAdmin`.

    ``namesrv`` is RocketMQ's ``;``-separated list (else ``$NAMESRV_ADDR``, else
    ``127.0.0.1:9876``); ``timeout`` bounds each request (``timeoutMillis`` 5000 in ``mqadmin``).
    ``access_key`` and ``secret_key`` sign every request for a broker's ACL (``mqadmin`` reads
    them from ``conf/tools.yml``); a request the ACL refuses raises
    :class:`~rocketq.errors.AccessDeniedError` naming what was refused where. ``tls``: TLS to
    the name servers and brokers (``tls.enable``), default plaintext.
    """

    def __init__(
        self,
        namesrv: str | None = None,
        *,
        timeout: float = 5.0,
        access_key: str | None = None,
        secret_key: str | None = None,
        tls: TlsClientConfig | None = None,
    ) -> None:
        self.namesrv_addrs = resolve_namesrv(namesrv)
        self.timeout = timeout
        self.credentials = credentials_of(access_key, secret_key)
        self.tls = tls if tls is not None else TlsClientConfig()
        self._remoting: RemotingClient | None = None
        self._api: ClientAPI | None = None

    @property
    def api(self) -> ClientAPI:
        """The client layer's API over this admin's connections (made on first use)."""
        if self._api is None:
            config = RemotingClientConfig(
                request_timeout=self.timeout, credentials=self.credentials, tls=self.tls
            )
            self._remoting = RemotingClient(config=config)
            self._api = ClientAPI(self._remoting, self.namesrv_addrs, timeout=self.timeout)
        return self._api

    async def close(self) -> None:
        if self._remoting is not None:
            await self._remoting.close()
        self._remoting = self._api = None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    @contextmanager
    def _namesrv_failures(self) -> Iterator[None]:
        """A name server that cannot be reached or did not answer: the error names them all."""
        try:
            yield
        except RemotingConnectError as exc:
            if "TLS handshake" in str(exc):  # it was reached, and said what is wrong: keep that
                raise
            raise RemotingConnectError(f"cannot reach name server {';'.join(self.namesrv_addrs)}") from exc
        except RemotingTimeoutError as exc:
            raise RemotingTimeoutError(
                f"name server {';'.join(self.namesrv_addrs)} did not answer: {reason_of(exc)}"
            ) from exc

    async def _namesrv(self, make: Callable[[], Call[T]]) -> T:
        """Ask the name servers in turn until one answers."""
        try:
            with self._namesrv_failures():
                return await self.api.call_namesrv(make, self.timeout)
        except BrokerError as exc:
            raise refusal(exc, make().what) from None

    async def _all_namesrv(self, make: Callable[[], Call[None]]) -> None:
        """Send to every name server; each must answer SUCCESS."""
        for addr in self.namesrv_addrs:
            await self._call(addr, make(), "name server")

    async def _call(self, addr: str, call: Call[T], kind: str = "broker") -> T:
        """Run ``call`` at ``addr``: a connection failure names the ``kind`` of server, a refusal
        says what was refused where."""
        try:
            return await self.api.call(addr, call, self.timeout)
        except RemotingConnectError as exc:
            raise RemotingConnectError(f"cannot reach {kind} {addr}: {reason_of(exc)}") from exc
        except BrokerError as exc:
            raise refusal(exc, f"{call.what} on {addr}") from None
        except RemotingTimeoutError as exc:
            raise RemotingTimeoutError(f"{kind} {addr} did not answer: {reason_of(exc)}") from exc

    async def _get_route(self, topic: str) -> TopicRouteData | None:
        with self._namesrv_failures():
            return await self.api.get_topic_route(topic, self.timeout)

    async def topic_route(self, topic: str) -> TopicRouteData:
        """The topic's route; :class:`UnknownTopicError` when the name server has none."""
        route = await self._get_route(topic)
        if route is None:
            raise UnknownTopicError(f"topic {topic} does not exist (the name server has no route for it)")
        return route

    async def cluster_info(self) -> ClusterInfo:
        """Brokers by name and broker names by cluster (GET_BROKER_CLUSTER_INFO)."""
        return await self._namesrv(calls.get_broker_cluster_info)

    async def master_addrs(self, cluster: str | None = None) -> dict[str, str]:
        """``{broker name: master address}`` of one cluster (all clusters when ``None``), sorted."""
        info = await self.cluster_info()
        if cluster is not None:
            if cluster not in info.cluster_addr_table:
                known = ", ".join(sorted(info.cluster_addr_table)) or "none"
                raise ConfigError(f"no cluster named {cluster!r} in the name server (known: {known})")
            names: Iterable[str] = info.cluster_addr_table[cluster]
        else:
            names = info.broker_addr_table
        out: dict[str, str] = {}
        for name in sorted(names):
            bd = info.broker_addr_table.get(name)
            if bd is not None and MASTER_ID in bd.broker_addrs:
                out[name] = bd.broker_addrs[MASTER_ID]
        return out


def reason_of(exc: BaseException) -> str:
    """The part of an error's message after its first ``": "`` (what went wrong, without where)."""
    text = str(exc)
    _, sep, rest = text.partition(": ")
    return rest if sep else text
