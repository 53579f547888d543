"""The admin calls themselves: :class:`AsyncAdmin`, on the caller's event loop over the client
layer's :class:`~rocketq.client.api.ClientAPI`.

:class:`AsyncAdmin` is put together from one part per responsibility, each in its own module:

* ``admin/transport.py`` - :class:`~rocketq.admin.transport.AdminTransport`: the connections,
  how a failed call reads (one line naming the server), the cluster table and topic routes;
* ``admin/brokers.py`` - :class:`~rocketq.admin.brokers.BrokerAdmin`: each broker's tables
  (runtime, topic and group configs, producer connections, duplicate client ids);
* ``admin/topics.py`` - :class:`~rocketq.admin.topics.TopicAdmin`: list, stats, create / update
  / delete, order configs, who consumes a topic;
* ``admin/groups.py`` - :class:`~rocketq.admin.groups.GroupAdmin`: members, progress, committed
  offsets, seeding and resetting offsets;
* ``admin/messages.py`` - :class:`~rocketq.admin.messages.MessageAdmin`: look-ups by key, id,
  trace and queue offset, and subscription checks.

The parts log under this module's name, ``rocketq.admin.core``.
"""

from __future__ import annotations

from rocketq.admin.groups import GroupAdmin
from rocketq.admin.messages import MessageAdmin
from rocketq.admin.topics import TopicAdmin

__all__ = ["AsyncAdmin"]


class AsyncAdmin(TopicAdmin, GroupAdmin, MessageAdmin):
    """Admin calls on the caller's event loop (see the module docstring).

    ``namesrv`` is RocketMQ's ``;``-separated list (else ``$NAMESRV_ADDR``, else
    ``127.0.0.1:9876``); ``timeout`` bounds each request (``timeoutMillis`` 5000 in ``mqadmin``).
    Use as ``async with AsyncAdmin(...) as admin`` or call :meth:`close`.

    Its calls come from one part per responsibility, each in its own module:
    :class:`~rocketq.admin.transport.AdminTransport` (connections, failures, the name server's
    cluster table and routes), :class:`~rocketq.admin.brokers.BrokerAdmin` (each broker's
    tables), :class:`~rocketq.admin.topics.TopicAdmin`, :class:`~rocketq.admin.groups.GroupAdmin`
    and :class:`~rocketq.admin.messages.MessageAdmin`.
    """
