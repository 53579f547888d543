"""The client side of RocketMQ 4.9's ACL: an RPC hook that signs every request sent.

As 4.9's ``AclClientRPCHook``, registered on a remoting client, it adds ``AccessKey``,
``Signature`` (and ``SecurityToken`` when the credentials have one) to each request just before
it is encoded (:func:`rocketq.protocol.acl.sign`). A :class:`~rocketq.remoting.RemotingClient`
whose config has ``credentials`` adds it itself, and keeps it the last hook, so fields other
hooks add are signed too; a :class:`~rocketq.remoting.BlockingRemotingClient` signs with its
``credentials`` the same way.

Like Java's hook, it also runs on the requests a broker sends the client (they pass through the
same hooks); signing them changes nothing the handlers read.
"""

from __future__ import annotations

from rocketq.protocol.acl import Credentials, sign
from rocketq.protocol.command import RemotingCommand
from rocketq.remoting.handlers import RPCHook

__all__ = ["AclSigningHook"]


class AclSigningHook(RPCHook):
    """Sign each request with ``credentials`` (4.9's ``AclClientRPCHook``).

    >>> hook = AclSigningHook(Credentials(access_key="rocketmq2", secret_key="12345678"))
    >>> hook
    AclSigningHook(access_key='rocketmq2')
    >>> req = RemotingCommand.request(14, {"topic": "T", "queueId": "0"})
    >>> hook.before_request("127.0.0.1:10911", req)
    >>> sorted(req.ext_fields)
    ['AccessKey', 'Signature', 'queueId', 'topic']
    """

    __slots__ = ("credentials",)

    def __init__(self, credentials: Credentials) -> None:
        self.credentials = credentials

    def __repr__(self) -> str:
        return f"AclSigningHook(access_key={self.credentials.access_key!r})"

    def before_request(self, addr: str, request: RemotingCommand) -> None:
        sign(request, self.credentials)
