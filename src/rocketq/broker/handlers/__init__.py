"""The broker's request handlers, split by concern: each processor's methods answer request codes,
and the broker's one table (:meth:`rocketq.broker.server.Broker._request_handlers`) says which
method answers which code.

A processor sees the broker through its narrow context (:mod:`rocketq.broker.context`: a
``Protocol`` listing what it uses, which the :class:`~rocketq.broker.server.Broker` satisfies),
so nothing here imports the server.

* :mod:`.send` — SEND_MESSAGE, SEND_MESSAGE_V2, SEND_BATCH_MESSAGE, CONSUMER_SEND_MSG_BACK;
* :mod:`.pull` — PULL_MESSAGE and long polling;
* :mod:`.client` — HEART_BEAT, UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP, CHECK_CLIENT_CONFIG,
  LOCK_BATCH_MQ, UNLOCK_BATCH_MQ;
* :mod:`.offsets` — consumer offsets, queue bounds, QUERY_MESSAGE (the message index), VIEW_MESSAGE_BY_ID;
* :mod:`.admin` — topics, groups, connections, stats, offset reset, runtime info;
* :mod:`.transaction` — END_TRANSACTION;
* :mod:`.reply` — SEND_REPLY_MESSAGE, SEND_REPLY_MESSAGE_V2 (pushed to the requester).
"""

from __future__ import annotations

from rocketq.broker.handlers.admin import AdminProcessor
from rocketq.broker.handlers.client import ClientProcessor
from rocketq.broker.handlers.offsets import OffsetProcessor
from rocketq.broker.handlers.pull import PullProcessor, tag_codes_of_expression
from rocketq.broker.handlers.reply import ReplyProcessor
from rocketq.broker.handlers.send import SendProcessor, java_properties_string
from rocketq.broker.handlers.transaction import TransactionProcessor

__all__ = [
    "AdminProcessor",
    "ClientProcessor",
    "OffsetProcessor",
    "PullProcessor",
    "ReplyProcessor",
    "SendProcessor",
    "TransactionProcessor",
    "java_properties_string",
    "tag_codes_of_expression",
]
