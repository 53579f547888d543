"""Transactional messages (``TransactionMQProducer``): a half message, a local transaction, its end.

:meth:`TransactionProducer.send_in_transaction` does what RocketMQ 4.9's
``DefaultMQProducerImpl.sendMessageInTransaction`` does:

1. the message goes to the broker as a *half message* (properties ``TRAN_MSG=true`` and
   ``PGROUP=<group>``, the prepared bit in its sys flag; a delay level is dropped), with the
   producer's usual retries; consumers do not see it yet;
2. ``execute(msg, arg)`` runs the local transaction in the calling thread and returns a
   :class:`~rocketq.models.LocalTransactionState`: ``COMMIT_MESSAGE``, ``ROLLBACK_MESSAGE`` or
   ``UNKNOW``. ``None`` is ``UNKNOW``, as is an exception (whose text goes to the broker in the
   request's remark); a broker that stored the half message but reported a flush or slave
   problem gets ``ROLLBACK_MESSAGE`` without ``execute`` being called;
3. END_TRANSACTION goes to the broker *oneway*: commit makes the message visible in its topic,
   rollback drops it, unknown leaves it to the broker's check. It is handed to the client's
   event loop, which writes it while ``send_in_transaction`` returns; its failure is logged, not
   raised: the broker will ask.

**Checks.** The broker asks about a half message left unknown (or whose END_TRANSACTION was
lost) after ``transactionTimeOut`` (6 s), every ``transactionCheckInterval`` (60 s), up to
``transactionCheckMax`` (15) times: CHECK_TRANSACTION_STATE to a live producer of the group,
any of them (so a restarted or another process of the group answers for one that is gone).
:meth:`TransactionProducerCore.check_transaction_state` queues the question on the producer's
check threads (``check_thread_pool_size`` 1, at most ``check_request_hold_max`` 2,000 waiting,
as Java's ``checkExecutor``); ``checker(msg)`` gets the half message as stored
(:class:`~rocketq.protocol.MessageExt`, its ``msg_id`` the transaction id) and its answer goes
back as END_TRANSACTION oneway with ``fromTransactionCheck=true``. An exception in ``checker``
answers ``UNKNOW`` (the broker asks again).

With ``trace=True`` each end of a transaction is also an EndTransaction trace record
(:mod:`rocketq.client.trace`).

>>> from rocketq import LocalTransactionState, Message, TransactionProducer   # doctest: +SKIP
>>> def execute(msg, arg):                                                   # doctest: +SKIP
...     db.insert(order=arg, tx=msg.msg_id)   # your local transaction
...     return LocalTransactionState.COMMIT_MESSAGE
>>> def checker(msg):                                                        # doctest: +SKIP
...     return LocalTransactionState.COMMIT_MESSAGE if db.has(tx=msg.msg_id) else LocalTransactionState.UNKNOW
>>> with TransactionProducer("tx-group", "127.0.0.1:9876", checker=checker) as p:  # doctest: +SKIP
...     p.send_in_transaction(Message("Orders", b"order-1"), execute=execute, arg="order-1")
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable
from typing import Any, Unpack

from rocketq.client.config import ProducerConfig
from rocketq.client.ids import next_uniq_id
from rocketq.client.instance import ClientInstance
from rocketq.client.message import EndedTransaction, SendResult, SendStatus
from rocketq.client.producer.core import ProducerContext, ProducerCore
from rocketq.client.producer.facade import Producer, ProducerOptions, start_tracing
from rocketq.errors import ClientStateError, ConfigError, RemoteProtocolError, RocketQError
from rocketq.models import LocalTransactionState, TransactionSendResult, from_fields
from rocketq.protocol import calls
from rocketq.protocol.headers import CheckTransactionStateRequestHeader, EndTransactionRequestHeader
from rocketq.protocol.message import Message as ProtocolMessage
from rocketq.protocol.message import MessageExt, MessageSysFlag
from rocketq.protocol.message_id import parse_offset_msg_id
from rocketq.protocol.properties import MessageConst

__all__ = [
    "LocalTransactionExecutor",
    "TransactionChecker",
    "TransactionProducer",
    "TransactionProducerCore",
    "check_answer_header",
    "commit_log_offset_of",
    "end_header",
    "local_state",
    "transaction_code",
]

logger = logging.getLogger(__name__)

TransactionChecker = Callable[[MessageExt], object]
"""``checker(msg)``: the state of the local transaction of a half message the broker asks about
(``TransactionListener.checkLocalTransaction``); returns a :class:`LocalTransactionState`."""

LocalTransactionExecutor = Callable[[ProtocolMessage, Any], object]
"""``execute(msg, arg)``: runs the local transaction of a sent half message
(``TransactionListener.executeLocalTransaction``); returns a :class:`LocalTransactionState`."""

_CODES: dict[LocalTransactionState, int] = {
    LocalTransactionState.COMMIT_MESSAGE: int(MessageSysFlag.TRANSACTION_COMMIT_TYPE),
    LocalTransactionState.ROLLBACK_MESSAGE: int(MessageSysFlag.TRANSACTION_ROLLBACK_TYPE),
    LocalTransactionState.UNKNOW: int(MessageSysFlag.TRANSACTION_NOT_TYPE),
}


def transaction_code(state: LocalTransactionState) -> int:
    """END_TRANSACTION's ``commitOrRollback`` for ``state``: 8 commit, 12 rollback, 0 unknown.

    >>> transaction_code(LocalTransactionState.COMMIT_MESSAGE), transaction_code(LocalTransactionState.UNKNOW)
    (8, 0)
    """
    return _CODES[state]


def local_state(value: object, what: str) -> LocalTransactionState:
    """What ``execute`` or ``checker`` (``what``) returned, as a state: a
    :class:`LocalTransactionState` or its name; ``None`` is ``UNKNOW`` (as Java reads a null),
    and so is anything else, logged as an error (the broker will ask again).

    >>> local_state("COMMIT_MESSAGE", "execute"), local_state(None, "execute")
    (<LocalTransactionState.COMMIT_MESSAGE: 'COMMIT_MESSAGE'>, <LocalTransactionState.UNKNOW: 'UNKNOW'>)
    """
    if value is None:
        return LocalTransactionState.UNKNOW
    if isinstance(value, str):
        try:
            return LocalTransactionState(value)
        except ValueError:
            pass
    logger.error(
        "%s returned %r, not a LocalTransactionState (COMMIT_MESSAGE, ROLLBACK_MESSAGE, UNKNOW); "
        "taking it as UNKNOW",
        what,
        value,
    )
    return LocalTransactionState.UNKNOW


def commit_log_offset_of(result: SendResult) -> int:
    """Where the broker stored a sent message: the commit-log offset its offset message id holds
    (Java decodes ``offsetMsgId``, else ``msgId``)."""
    try:
        return parse_offset_msg_id(result.offset_msg_id or result.msg_id)[1]
    except RocketQError as exc:
        raise RemoteProtocolError(
            f"the broker answered an offset message id that does not parse: {result.offset_msg_id!r}"
        ) from exc


def end_header(group: str, result: SendResult, state: LocalTransactionState) -> EndTransactionRequestHeader:
    """END_TRANSACTION's header after a local transaction (``endTransaction``): the half
    message's place (commit-log offset from its offset id, queue offset as the transaction
    state table offset), its unique id, and ``state``."""
    return EndTransactionRequestHeader(
        producer_group=group,
        tran_state_table_offset=result.queue_offset,
        commit_log_offset=commit_log_offset_of(result),
        commit_or_rollback=transaction_code(state),
        from_transaction_check=False,
        msg_id=result.msg_id,
        transaction_id=result.transaction_id,
    )


def check_answer_header(
    group: str, msg: MessageExt, check: CheckTransactionStateRequestHeader, state: LocalTransactionState
) -> EndTransactionRequestHeader:
    """END_TRANSACTION's header answering the broker's check of ``msg`` (``processTransactionState``):
    the check's offsets and transaction id, the message's unique id, ``fromTransactionCheck``."""
    return EndTransactionRequestHeader(
        producer_group=group,
        tran_state_table_offset=check.tran_state_table_offset,
        commit_log_offset=check.commit_log_offset,
        commit_or_rollback=transaction_code(state),
        from_transaction_check=True,
        msg_id=msg.properties.get(MessageConst.UNIQ_KEY) or msg.msg_id,
        transaction_id=check.transaction_id,
    )


def _log_end_failure(
    future: concurrent.futures.Future[None], msg_id: str, state: LocalTransactionState
) -> None:
    exc = None if future.cancelled() else future.exception()
    if exc is not None:
        logger.warning(
            "local transaction %s ended %s, but END_TRANSACTION was not sent (the broker will check): %s",
            msg_id,
            state,
            exc,
        )


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class TransactionProducerCore(ProducerCore):
    """A transactional producer's engine: :class:`ProducerCore` plus the end of a transaction and
    the answers to the broker's checks (see the module docstring)."""

    def __init__(
        self, instance: ProducerContext, group: str, config: ProducerConfig, checker: TransactionChecker
    ) -> None:
        super().__init__(instance, group, config)
        self.checker = checker
        self._checks = concurrent.futures.ThreadPoolExecutor(
            max_workers=config.check_thread_pool_size, thread_name_prefix=f"rocketq-tx-check-{group}"
        )
        self._waiting = 0  # checks queued or running (bounded by check_request_hold_max)
        self._waiting_lock = threading.Lock()
        self.checks_answered = 0

    def close_checks(self) -> None:
        """Stop the check threads (queued checks are dropped: the broker asks again)."""
        self._checks.shutdown(wait=True, cancel_futures=True)

    # ---------------------------------------------------------------- ending a transaction

    async def end_transaction(
        self,
        msg: ProtocolMessage,
        result: SendResult,
        state: LocalTransactionState,
        *,
        remark: str | None = None,
    ) -> None:
        """END_TRANSACTION (oneway) of the half message ``msg`` that ``result`` describes, with
        the local transaction's ``state``; ``remark`` says why it failed, when it did."""
        header = end_header(self.group, result, state)
        addr = await self.instance.locate_master(result.message_queue)
        if addr is None:
            raise ClientStateError(f"The broker[{result.message_queue.broker_name}] not exist")
        if self.trace is not None:
            self.trace.on_end_transaction(
                EndedTransaction(
                    group=self.group, msg=msg, msg_id=result.msg_id, broker_addr=addr, state=state,
                    from_check=False,
                )
            )  # fmt: skip
        api = self.instance.api
        assert api is not None
        await api.call(addr, calls.end_transaction(header, remark=remark))

    # ---------------------------------------------------------------- the broker's checks

    def check_transaction_state(
        self, addr: str, msg: MessageExt, header: CheckTransactionStateRequestHeader
    ) -> None:
        """Queue the broker's question about ``msg`` for the check threads (on the loop; the
        broker at ``addr`` sent it)."""
        with self._waiting_lock:
            if self._waiting >= self.config.check_request_hold_max:
                logger.warning(
                    "%d transaction checks already wait in producer group %s; dropping the check of %s "
                    "(the broker asks again)",
                    self._waiting,
                    self.group,
                    msg.msg_id,
                )
                return
            self._waiting += 1
        try:
            self._checks.submit(self._check, addr, msg, header)
        except RuntimeError:  # shut down
            with self._waiting_lock:
                self._waiting -= 1
            logger.debug("producer group %s is shutting down; check of %s dropped", self.group, msg.msg_id)

    def _check(self, addr: str, msg: MessageExt, header: CheckTransactionStateRequestHeader) -> None:
        """On a check thread: ask the checker, send its answer."""
        try:
            failure: BaseException | None = None
            try:
                state = local_state(self.checker(msg), "the transaction checker")
            except Exception as exc:
                logger.error("the transaction checker failed on %s: %s", msg.msg_id, exc, exc_info=exc)
                state, failure = LocalTransactionState.UNKNOW, exc
            if state is not LocalTransactionState.COMMIT_MESSAGE:
                logger.info("the broker's check of transaction %s answered %s", msg.msg_id, state)
            answer = check_answer_header(self.group, msg, header, state)
            remark = (
                None if failure is None else f"checkLocalTransactionState Exception: {_describe(failure)}"
            )
            if self.trace is not None:
                self.trace.on_end_transaction(
                    EndedTransaction(
                        group=self.group, msg=msg, msg_id=answer.msg_id, broker_addr=addr,
                        state=state, from_check=True,
                    )
                )  # fmt: skip
            try:
                self.instance.loop_thread.call(self._answer(addr, answer, remark), timeout=10.0)
            except Exception as exc:
                logger.warning("answer to the check of %s not sent: %s", msg.msg_id, exc)
        finally:
            with self._waiting_lock:
                self._waiting -= 1

    async def _answer(self, addr: str, header: EndTransactionRequestHeader, remark: str | None) -> None:
        api = self.instance.api
        assert api is not None
        await api.call(addr, calls.end_transaction(header, remark=remark))
        self.checks_answered += 1


class TransactionProducer(Producer):
    """A transactional producer (``TransactionMQProducer``): everything :class:`Producer` does,
    plus :meth:`send_in_transaction` and the answers to the broker's checks (see the module
    docstring).

    ``TransactionProducer(group, namesrv=None, *, checker, ...)``: ``checker(msg)`` returns the
    :class:`LocalTransactionState` of a half message the broker asks about; the other keywords
    are :class:`Producer`'s. The check threads and their queue are ``ProducerConfig``'s
    ``check_thread_pool_size`` (1) and ``check_request_hold_max`` (2,000).
    """

    def __init__(
        self,
        group: str,
        namesrv: str | None = None,
        *,
        checker: TransactionChecker,
        **options: Unpack[ProducerOptions],
    ) -> None:
        if not callable(checker):
            raise ConfigError(f"checker must be a function of the half message, got {checker!r}")
        super().__init__(group, namesrv, **options)
        self.checker = checker

    def _start_core(self, instance: ClientInstance) -> TransactionProducerCore:
        core = TransactionProducerCore(instance, self.group, self.config, self.checker)
        try:
            instance.loop_thread.call(core.start())
        except BaseException:
            core.close_checks()
            raise
        if self.config.trace:
            core.trace = start_tracing(
                self.group, instance.client_id, self.client_config, self.config.trace_topic
            )
        return core

    def _stopped(self, core: ProducerCore) -> None:
        if isinstance(core, TransactionProducerCore):
            core.close_checks()
        super()._stopped(core)

    @property
    def tx_core(self) -> TransactionProducerCore:
        core = self.core
        assert isinstance(core, TransactionProducerCore)
        return core

    def send_in_transaction(
        self,
        msg: ProtocolMessage,
        execute: LocalTransactionExecutor,
        arg: Any = None,
        *,
        timeout: float | None = None,
    ) -> TransactionSendResult:
        """Send ``msg`` as a half message, run ``execute(msg, arg)``, end the transaction with
        its answer (see the module docstring); the half message's send result and the state sent.

        ``execute`` gets the message as sent: its ``UNIQ_KEY`` property (the result's
        ``msg_id``) is the transaction id the checker will see. A failed send raises (nothing
        was stored, ``execute`` is not called); ``msg`` itself is not changed."""
        core = self.tx_core
        if not callable(execute):
            raise ConfigError(f"execute must be a function (msg, arg), got {execute!r}")
        half = ProtocolMessage(msg.topic, msg.body, msg.flag, dict(msg.properties))
        half.properties.pop(MessageConst.DELAY, None)  # Java ignores a delay level here
        half.properties[MessageConst.TRAN_MSG] = "true"
        half.properties[MessageConst.PGROUP] = self.group
        if MessageConst.UNIQ_KEY not in half.properties:
            half.properties[MessageConst.UNIQ_KEY] = next_uniq_id(self.client_id.partition("@")[0])
        result = self.send(half, timeout)
        state = LocalTransactionState.UNKNOW
        failure: BaseException | None = None
        if result.status is SendStatus.SEND_OK:
            if result.transaction_id:
                half.properties["__transactionId__"] = result.transaction_id
            try:
                state = local_state(execute(half, arg), "execute")
            except Exception as exc:
                logger.info("local transaction of %s failed: %s", result.msg_id, exc)
                state, failure = LocalTransactionState.UNKNOW, exc
        else:  # stored, but not flushed or replicated in time: roll back
            state = LocalTransactionState.ROLLBACK_MESSAGE
        remark = None if failure is None else f"executeLocalTransactionBranch exception: {_describe(failure)}"
        # oneway: handed to the client's loop, which writes it; this thread does not wait for that
        ending = core.instance.loop_thread.submit(core.end_transaction(half, result, state, remark=remark))
        ending.add_done_callback(lambda f: _log_end_failure(f, result.msg_id, state))
        return from_fields(TransactionSendResult, result, local_transaction_state=state)
