"""Admin calls that the command line, the lab and the dashboard share (``DefaultMQAdminExt``'s job).

:class:`AsyncAdmin` (``admin/core.py``, made of one part per responsibility: ``transport.py``,
``brokers.py``, ``topics.py``, ``groups.py``, ``messages.py``) does the work on the caller's
event loop over the client layer's :class:`~rocketq.client.api.ClientAPI` (plus the admin
requests that API does not need);
:class:`Admin` (``admin/facade.py``) is its synchronous facade, running it on a background loop
thread as the clients do. The value types are in ``admin/values.py``, what the dashboard and the
exporter read in ``admin/monitoring.py``::

    with Admin("127.0.0.1:9876") as admin:
        admin.create_topic("TopicTest", queues=8)
        for q in admin.group_progress("my-group").queues:
            print(q.queue.short, q.broker_offset, q.consumer_offset, q.lag, q.owner)

What each call does, as RocketMQ 4.9.4's ``mqadmin`` does it:

* **topics**: create/update send UPDATE_AND_CREATE_TOPIC to the master of every broker of a cluster
  (or one broker); ordered topics also get their ``ORDER_TOPIC_CONFIG`` entry in the name servers.
  The brokers re-register at once, and :meth:`AsyncAdmin.create_topic` waits (bounded) until the
  name server's route shows the new queue counts, so a producer started next finds them. Delete
  goes to every broker first, then to every name server (else a broker's next registration would
  bring the topic back). List and route come from the name server, stats (per queue min/max offset
  and last store time) from each broker of the route.
* **groups**: members are the consumer connection list (client id, address, language, version);
  the queues each owns come from the client itself (GET_CONSUMER_RUNNING_INFO relayed by the
  broker), or — when a client does not answer — from re-running the group's strategy over the
  broker's member list and the topic's queues, exactly as the client computes it
  (:attr:`GroupMember.queues_source` says which). Client ids registered by two live connections
  are flagged from the broker's duplicate view (rocketq's request 10901; against a broker that
  lacks it, from the connection list, which then lists the id twice). Progress is GET_CONSUME_STATS
  of every broker with the owner of each queue from the members' running info. Reset is
  ``resetOffsetByTime``: INVOKE_BROKER_TO_RESET_OFFSET with force on, which a broker applies
  through the online members (RESET_CONSUMER_CLIENT_OFFSET) or, for an offline group, by committing
  the offsets itself (a RocketMQ broker answers CONSUMER_NOT_ONLINE instead, and the offsets are then
  committed from here queue by queue, as ``mqadmin`` does); ``"first"`` resets to each queue's min
  offset, ``"last"`` to its max. :meth:`AsyncAdmin.seed_new_group` commits a new group's start
  offsets, because a broker starts a new group at 0 on any queue that still holds its first message.

* **monitoring** (what the dashboard and the exporter read, a section of its own): each broker's
  runtime table (GET_BROKER_RUNTIME_INFO: version, put/get TPS, disk use), its topic and group
  configs in one request each, the groups consuming a topic (QUERY_TOPIC_CONSUME_BY_WHO), producer
  connections, and message look-ups: by message id (:meth:`AsyncAdmin.view_message`: an offset
  message id with VIEW_MESSAGE_BY_ID at the broker it names, a producer's unique id with
  QUERY_MESSAGE on the unique key), by key in a time range (:meth:`AsyncAdmin.query_message`),
  by queue and offset (a pull of one message as ``TOOLS_CONSUMER``), and a message's trace from
  the trace topic (:meth:`AsyncAdmin.message_trace`).

Creating a topic that exists changes nothing (:class:`~rocketq.errors.TopicExistsError` says what
would change; ``update=True`` applies it), and system topics are not created, changed or deleted
without an override naming them (:class:`~rocketq.errors.SystemTopicError`): ``admin/guard.py``,
the one place the CLI, the dashboard and these calls share.

Errors are one-line :class:`~rocketq.errors.RocketQError`\\ s: :class:`~rocketq.errors.UnknownTopicError`,
:class:`~rocketq.errors.UnknownGroupError`, :class:`~rocketq.errors.RemotingConnectError` naming the
name server or broker that could not be reached, :class:`~rocketq.errors.BrokerError` for refusals.
"""

from __future__ import annotations

from rocketq.models import DuplicateClientId

from . import values
from .core import AsyncAdmin
from .facade import Admin
from .guard import is_protected_topic, system_topic_role, topic_changes
from .monitoring import (
    TOOLS_CONSUMER_GROUP,
    BrokerRuntime,
    MessageTrace,
    QueueRead,
    SlaveLag,
    TraceEvent,
    message_dict,
    trace_events,
)
from .values import *  # noqa: F403 - the value types and time parsers, as values.__all__ lists them

__all__ = [
    "TOOLS_CONSUMER_GROUP",
    "Admin",
    "AsyncAdmin",
    "BrokerRuntime",
    "DuplicateClientId",
    "MessageTrace",
    "QueueRead",
    "SlaveLag",
    "TraceEvent",
    "is_protected_topic",
    "message_dict",
    "system_topic_role",
    "topic_changes",
    "trace_events",
]
__all__ += values.__all__
