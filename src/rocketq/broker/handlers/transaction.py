"""END_TRANSACTION: a producer commits or rolls back a half message (RocketMQ 4.9.4's
``EndTransactionProcessor``), on :class:`~rocketq.broker.transactions.TransactionalMessageService`.

Java producers send it oneway, so the answer is usually dropped; when asked synchronously the
broker answers as Java's does: SUCCESS, or SYSTEM_ERROR with ``Find prepared transaction message
failed`` / ``The producer group wrong`` / ``The transaction state table offset wrong``. A state
other than commit (8) or rollback (12) - "unknown" (0) - gets no answer at all: the check will ask.
"""

from __future__ import annotations

import logging

from rocketq.broker.context import TransactionContext
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import EndTransactionRequestHeader
from rocketq.remoting import RemotingConnection

from .common import parse_header

__all__ = ["TransactionProcessor"]

log = logging.getLogger(__name__)

_STATES = {0: "unknown", 8: "commit", 12: "rollback"}


class TransactionProcessor:
    """The END_TRANSACTION handler, over a :class:`~rocketq.broker.context.TransactionContext`."""

    def __init__(self, broker: TransactionContext) -> None:
        self._b = broker

    def end_transaction(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand | None:
        h = parse_header(EndTransactionRequestHeader, request)
        if h.from_transaction_check or h.commit_or_rollback != 8:
            log.info(
                "producer %s (group %s) ends transaction %s: %s%s",
                conn.remote_address,
                h.producer_group,
                h.msg_id,
                _STATES.get(h.commit_or_rollback, h.commit_or_rollback),
                " (answering a check)" if h.from_transaction_check else "",
            )
        answer = self._b.transactions.end_transaction(h)
        if answer is None:
            return None
        code, remark = answer
        return request.response(code=code, remark=remark)
