"""What a remoting client and a remoting server share: :class:`Endpoint`."""

from __future__ import annotations

from rocketq.protocol.command import OpaqueSequence
from rocketq.remoting.connection import RemotingConnection
from rocketq.remoting.guard import PeerLog
from rocketq.remoting.handlers import ConnectionListener, Handler, HandlerTable, RequestGuard, RPCHook
from rocketq.remoting.settings import ConnectionEvents, ConnectionSettings, ServerParts

__all__ = ["Endpoint"]


class Endpoint:
    """What a remoting client and server share: the handlers of the requests their peers send,
    the RPC hooks, the listeners of their connections' events, the opaque numbering, and how a
    connection is made from the settings both configs have."""

    #: warnings about the peers' behaviour, once per peer (each endpoint makes its own)
    peer_log: PeerLog

    def __init__(self, listener: ConnectionListener | None) -> None:
        self.handlers = HandlerTable()
        self._listeners: list[ConnectionListener] = [] if listener is None else [listener]
        self._opaques = OpaqueSequence()

    def _connection(
        self,
        settings: ConnectionSettings,
        *,
        server: ServerParts | None = None,
        remote_address: str | None = None,
    ) -> RemotingConnection:
        """A connection of this endpoint: its handlers, opaques, peer log and event callbacks,
        with ``settings`` (:meth:`ConnectionSettings.of` a config) and a server's ``server`` parts."""
        return RemotingConnection(
            handlers=self.handlers,
            opaques=self._opaques,
            settings=settings,
            server=server,
            events=ConnectionEvents(
                on_open=self._connection_opened,
                on_close=self._connection_closed,
                on_idle=self._connection_idle,
            ),
            remote_address=remote_address,
            peer_log=self.peer_log,
        )

    def _connection_opened(self, conn: RemotingConnection) -> None:
        raise NotImplementedError

    def _connection_closed(self, conn: RemotingConnection) -> None:
        raise NotImplementedError

    def register_handler(self, code: int, handler: Handler) -> None:
        """Handle the requests with ``code`` that peers send by ``handler(conn, request)`` (sync or async)."""
        self.handlers.register(code, handler)

    def set_default_handler(self, handler: Handler | None) -> None:
        """Handle requests whose code has no handler of its own (``None``: answer NOT_SUPPORTED)."""
        self.handlers.default = handler

    def set_request_guard(self, guard: RequestGuard | None) -> None:
        """Check every request peers send with ``guard(conn, request)`` before its handler (and the
        RPC hooks) run; an exception it raises answers the request as a handler's would (a
        :class:`~rocketq.errors.BrokerError` with its code and remark). Unlike an :class:`RPCHook`
        it never sees the requests this endpoint sends. A request whose large body is counted on
        the worker thread (``offload_threshold``) is guarded there too, off the event loop: the
        guard must be safe to call from that thread. The broker's ACL is one."""
        self.handlers.guard = guard

    def add_hook(self, hook: RPCHook) -> None:
        """Run ``hook`` around every request this endpoint sends and handles (see :class:`RPCHook`)."""
        self.handlers.hooks.append(hook)

    def add_listener(self, listener: ConnectionListener) -> None:
        self._listeners.append(listener)

    def remove_listener(self, listener: ConnectionListener) -> None:
        self._listeners.remove(listener)

    def _connection_idle(self, conn: RemotingConnection) -> None:
        for listener in tuple(self._listeners):
            conn._call_event(listener.on_idle, "on_idle")
