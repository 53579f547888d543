"""Transactional messages: half messages, their commit or rollback, and the checks of the forgotten
ones (RocketMQ 4.9's ``TransactionalMessageServiceImpl``, ``TransactionalMessageBridge``,
``EndTransactionProcessor`` and ``TransactionalMessageCheckService``).

A producer sends a *half message* (property ``TRAN_MSG=true``); the broker stores it in
``RMQ_SYS_TRANS_HALF_TOPIC`` queue 0 with its real place in ``REAL_TOPIC`` / ``REAL_QID`` and the
transaction bits of its sys flag cleared, where no consumer looks. The producer then runs its
local transaction and sends ``END_TRANSACTION`` (oneway): *commit* stores the message again under
its real topic and queue - its properties (``TRAN_MSG``, ``REAL_TOPIC``... included, as Java
leaves them) and unique id kept, the commit type in its sys flag, the half message's commit-log
offset as its prepared-transaction offset - and *rollback* stores nothing. Either way an *op
record* goes to ``RMQ_SYS_TRANS_OP_HALF_TOPIC`` (tag ``d``, body the half message's queue
offset): the half message is done.

**Checks.** Every ``transaction_check_interval`` the check service walks the half queue from
where it stopped (consumer offsets of group ``CID_RMQ_SYS_TRANS``, kept in the store like any
group's): half messages with an op record are done; one younger than ``transaction_timeout``
stops the walk (the rest are younger); any other is stored again at the end of the half queue
with ``TRANSACTION_CHECK_TIMES`` one higher and a ``CHECK_TRANSACTION_STATE`` request (oneway,
the message in store format as body) goes to a connected producer of its group, which answers
with ``END_TRANSACTION`` (``fromTransactionCheck=true``) about the new copy. A half message
already checked ``transaction_check_max`` times (or older than the store's retention) is moved
to ``TRANS_CHECK_MAX_TIME_TOPIC`` instead. The half and op queues and their offsets are stored
like everything else, so all of it carries on after a restart or a crash.

**Exactly once.** RocketMQ commits whatever ``END_TRANSACTION`` names: a commit repeated (a late
answer to an earlier check, a retried request, a check after a crash lost the op record) is
delivered twice. Here the first resolution of a transaction (its unique id) wins: a commit
whose message is already stored - found through the message index, so this holds across
restarts and crashes - only writes the op record, and a commit after a rollback is refused.
Resolutions are remembered (bounded) and rebuilt at start from the op records not yet passed.

**Wire.** Byte for byte what a 4.9.4 broker stores (the capture ``transaction.jsonl`` replays
with the same commit-log offsets): the half message's properties are the send's with
``CLUSTER``, ``REAL_TOPIC`` and ``REAL_QID`` (``WAIT`` kept), the re-stored copy adds
``TRANSACTION_CHECK_TIMES``, the op record's properties are ``TAGS=d`` and ``WAIT=true``, each
string in Java ``HashMap`` order. One difference: a re-stored half message keeps the producer's
``flag`` (RocketMQ drops it to 0).

This module holds the logic on the store; the broker supplies how to append (so appends go
through its send path: statistics, held-pull wake-ups) and how to reach a producer.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

from rocketq.clock import ms
from rocketq.errors import BrokerError, RemoteProtocolError
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.headers import CheckTransactionStateRequestHeader, EndTransactionRequestHeader
from rocketq.protocol.message import (
    MessageExt,
    MessageSysFlag,
    decode_message,
    decode_messages,
    encode_message,
)
from rocketq.protocol.message_id import HostPort, make_offset_msg_id
from rocketq.protocol.properties import MessageConst, tags_code
from rocketq.protocol.topics import (
    RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC,
    RMQ_SYS_TRANS_HALF_TOPIC,
    RMQ_SYS_TRANS_OP_HALF_TOPIC,
)
from rocketq.store import GetMessageStatus, MessageStore, PutResult

__all__ = [
    "CID_RMQ_SYS_TRANS",
    "STEP",
    "TRANSACTION_COMMIT_TYPE",
    "TRANSACTION_NOT_TYPE",
    "TRANSACTION_PREPARED_TYPE",
    "TRANSACTION_ROLLBACK_TYPE",
    "TRANSACTION_TYPE_MASK",
    "CheckResult",
    "TransactionalMessageService",
    "half_message_properties",
    "is_half_message",
]

log = logging.getLogger(__name__)

CID_RMQ_SYS_TRANS = "CID_RMQ_SYS_TRANS"
"""``MixAll.CID_SYS_RMQ_TRANS``: the group whose offsets record how far checks got."""
# MessageSysFlag's transaction types as plain ints (IntFlag arithmetic costs a call per operation)
TRANSACTION_NOT_TYPE: Final = int(MessageSysFlag.TRANSACTION_NOT_TYPE)
TRANSACTION_PREPARED_TYPE: Final = int(MessageSysFlag.TRANSACTION_PREPARED_TYPE)
TRANSACTION_COMMIT_TYPE: Final = int(MessageSysFlag.TRANSACTION_COMMIT_TYPE)
TRANSACTION_ROLLBACK_TYPE: Final = int(MessageSysFlag.TRANSACTION_ROLLBACK_TYPE)
TRANSACTION_TYPE_MASK: Final = TRANSACTION_ROLLBACK_TYPE
"""The two bits of a sys flag that hold the transaction type."""
_REMOVE_TAG = "d"
_HALF = RMQ_SYS_TRANS_HALF_TOPIC
_OP = RMQ_SYS_TRANS_OP_HALF_TOPIC
STEP = 128
"""Records a check round handles between two yields of ``check_steps`` (the loop serves requests)."""
_MAX_PROCESS_TIME = 60.0  # MAX_PROCESS_TIME_LIMIT: most seconds one check spends on a queue
_REMEMBERED = 100_000  # resolutions kept in memory (older ones are found through the index)
_PREPARED_QUEUE_OFFSET = MessageConst.TRAN_PREPARED_QUEUE_OFFSET
_IMMUNITY = MessageConst.CHECK_IMMUNITY_TIME_IN_SECONDS

#: Appends a record through the broker's send path: (topic, queue id, record, tag code,
#: properties) -> where it went. Raises :class:`~rocketq.errors.BrokerError` on failure.
PutRecord = Callable[[str, int, bytes, int, Mapping[str, str]], PutResult]
#: Sends CHECK_TRANSACTION_STATE (oneway) to a producer of the group; False if none is connected.
SendCheck = Callable[[str, CheckTransactionStateRequestHeader, bytes], bool]
#: A message's properties in Java ``HashMap`` order with the map's largest size -> the string.
PropertiesString = Callable[[dict[str, str], int], str]


def is_half_message(properties: Mapping[str, str], sys_flag: int) -> bool:
    """A send is a half message when ``TRAN_MSG`` is true (``Boolean.parseBoolean``, any case), as
    RocketMQ decides, or - ours - when its sys flag says prepared (RocketMQ would store that one
    where no one can ever read or resolve it)."""
    return (properties.get(MessageConst.TRAN_MSG) or "").lower() == "true" or (
        sys_flag & TRANSACTION_TYPE_MASK == TRANSACTION_PREPARED_TYPE
    )


def half_message_properties(props: dict[str, str], topic: str, queue_id: int) -> None:
    """``parseHalfMessageInner``: remember the real place in the properties (in place)."""
    props[MessageConst.REAL_TOPIC] = topic
    props[MessageConst.REAL_QID] = str(queue_id)


@dataclass(frozen=True, slots=True)
class CheckResult:
    """What one check round did."""

    checked: int = 0
    """Half messages asked about (a CHECK_TRANSACTION_STATE was sent, or no producer was there)."""
    done: int = 0
    """Half messages found committed or rolled back."""
    discarded: int = 0
    """Half messages moved to ``TRANS_CHECK_MAX_TIME_TOPIC``."""
    no_producer: int = 0
    """Checks that found no connected producer of the group (asked again next round)."""


@dataclass(slots=True)
class _Round:
    """One check round: when it began, the op records it read, and what it did so far."""

    start_ms: int
    timeout_ms: int
    removed: dict[int, list[int]] = field(default_factory=dict)
    """Half offset -> the op records marking that half message done."""
    done_ops: list[int] = field(default_factory=list)
    """Op records that are done (their half message dealt with)."""
    checked: int = 0
    done: int = 0
    discarded: int = 0
    no_producer: int = 0


class TransactionalMessageService:
    """Half messages, END_TRANSACTION and the check rounds of one broker's store."""

    def __init__(
        self,
        store: MessageStore,
        *,
        store_host: HostPort,
        put: PutRecord,
        send_check: SendCheck,
        properties_string: PropertiesString,
        ensure_topic: Callable[[str], None],
        timeout: float,
        check_max: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._store_host = store_host
        self._put = put
        self._send_check = send_check
        self._props_string = properties_string
        self._ensure_topic = ensure_topic
        self.timeout = timeout
        self.check_max = check_max
        self._clock = clock
        #: ``<real topic>#<unique id>`` -> True (committed) / False (rolled back), most recent last
        self._outcomes: OrderedDict[str, bool] = OrderedDict()
        #: half-queue offsets that have an op record (from the check position on)
        self._opped: set[int] = set()
        self.commits = 0
        self.rollbacks = 0

    # ------------------------------------------------------------------ start-up

    def load(self) -> None:
        """Remember the resolutions whose op records the checks have not passed yet (after a
        restart a repeated commit must still find its transaction resolved)."""
        op_offset = self._consume_offset(_OP)
        for op in self._iter(_OP, op_offset):
            half_offset = _op_half_offset(op)
            if half_offset is None:
                continue
            self._opped.add(half_offset)
            half = self._read_one(_HALF, half_offset)
            uniq = half.properties.get(MessageConst.UNIQ_KEY) if half is not None else None
            if half is not None and uniq:
                self._remember(_transaction_key(half, uniq), self._committed_copy(half, uniq))
        if self._opped:
            log.info("transactions: %d resolved half messages not yet passed by the checks", len(self._opped))

    # ------------------------------------------------------------------ END_TRANSACTION

    def end_transaction(self, h: EndTransactionRequestHeader) -> tuple[int, str | None] | None:
        """Commit or roll back the half message ``h`` names; the answer's (code, remark), or
        ``None`` for "no answer" (an unknown state: RocketMQ waits for the check)."""
        kind = h.commit_or_rollback
        if kind not in (TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE):
            log.debug("end transaction of %s with state %d: left to the check", h.msg_id, kind)
            return None
        half = self._look_half(h.commit_log_offset)
        if half is None:
            return ResponseCode.SYSTEM_ERROR, "Find prepared transaction message failed"
        if half.properties.get(MessageConst.PGROUP) != h.producer_group:
            return ResponseCode.SYSTEM_ERROR, "The producer group wrong"
        if half.queue_offset != h.tran_state_table_offset:
            return ResponseCode.SYSTEM_ERROR, "The transaction state table offset wrong"
        uniq = half.properties.get(MessageConst.UNIQ_KEY) or f"@{half.commit_log_offset}"
        key = _transaction_key(half, uniq)
        prior = self._outcomes.get(key)
        if prior is None and kind == TRANSACTION_COMMIT_TYPE:
            prior = True if self._committed_copy(half, uniq) else None
        if kind == TRANSACTION_COMMIT_TYPE:
            if prior is False:
                log.warning("transaction %s: commit refused, it was rolled back before", uniq)
                self._write_op(half)
                return ResponseCode.SYSTEM_ERROR, f"the transaction {uniq} was rolled back already"
            if prior is None:
                self._put_committed(half, h.commit_log_offset)
                self.commits += 1
            else:
                log.info("transaction %s: committed already, not delivered again", uniq)
            self._remember(key, True)
        elif prior is True:
            log.warning("transaction %s: rollback after its commit, the message stays delivered", uniq)
        else:
            self._remember(key, False)
            self.rollbacks += 1
        self._write_op(half)
        return ResponseCode.SUCCESS, None

    def _look_half(self, commit_log_offset: int) -> MessageExt | None:
        data = self._store.read_message_bytes(commit_log_offset)
        if data is None:
            return None
        try:
            msg = decode_message(data, decompress=False)[0]
        except RemoteProtocolError:
            return None
        return msg if msg.topic == _HALF else None

    def _put_committed(self, half: MessageExt, half_offset: int) -> PutResult:
        """``endMessageTransaction`` + ``sendFinalMessage``: the message under its real topic."""
        props = half.properties
        # Java serialises the half message's whole map (REAL_TOPIC, REAL_QID and TRAN_MSG
        # included) before it clears anything
        return self._store_copy(
            half,
            props.get(MessageConst.REAL_TOPIC) or "",
            _int(props.get(MessageConst.REAL_QID)),
            dict(props),
            sys_flag=(half.sys_flag & ~TRANSACTION_TYPE_MASK) | TRANSACTION_COMMIT_TYPE,
            prepared_transaction_offset=half_offset,
        )

    def _store_copy(
        self,
        half: MessageExt,
        topic: str,
        queue_id: int,
        props: dict[str, str],
        *,
        sys_flag: int | None = None,
        prepared_transaction_offset: int = 0,
    ) -> PutResult:
        """Store ``half`` again, under ``topic`` and ``queue_id`` with ``props``: its body, flag,
        hosts, born time and reconsume count kept, its sys flag unless another is given."""
        record = encode_message(
            topic=topic,
            body=half.body,
            properties=self._props_string(props, len(props)),
            queue_id=queue_id,
            flag=half.flag,
            sys_flag=half.sys_flag if sys_flag is None else sys_flag,
            born_timestamp=half.born_timestamp,
            born_host=half.born_host,
            store_host=half.store_host,
            reconsume_times=half.reconsume_times,
            prepared_transaction_offset=prepared_transaction_offset,
        )
        return self._put(topic, queue_id, record, tags_code(props.get(MessageConst.TAGS)), props)

    def _write_op(self, half: MessageExt) -> None:
        """``addRemoveTagInTransactionOp``: the half message at this queue offset is done."""
        if half.queue_offset in self._opped:
            return  # one op record per half message: a second would hold back the op offset
        now = ms(self._clock())
        body = str(half.queue_offset).encode()
        # new Message(topic, "d", body): TAGS then WAIT=true, serialised before the unique id
        props = {MessageConst.TAGS: _REMOVE_TAG, MessageConst.WAIT: "true"}
        record = encode_message(
            topic=_OP,
            body=body,
            properties=self._props_string(props, len(props)),
            queue_id=half.queue_id,
            born_timestamp=now,
            born_host=self._store_host,
            store_host=self._store_host,
        )
        self._put(_OP, half.queue_id, record, tags_code(_REMOVE_TAG), props)
        self._opped.add(half.queue_offset)

    def _committed_copy(self, half: MessageExt, uniq: str) -> bool:
        """Whether the message of ``half`` was committed already: its unique id under its real
        topic with the commit type, through the message index (survives restarts)."""
        topic = half.properties.get(MessageConst.REAL_TOPIC)
        if not topic:
            return False
        found = self._store.query_message(topic, uniq, 32, 0, 2**63 - 1)
        for data in found.messages:
            try:
                msg = decode_messages(data, read_body=False)[0]
            except RemoteProtocolError:
                continue
            if (
                msg.sys_flag & TRANSACTION_TYPE_MASK == TRANSACTION_COMMIT_TYPE
                and msg.properties.get(MessageConst.UNIQ_KEY) == uniq
            ):
                return True
        return False

    def _remember(self, uniq: str, committed: bool) -> None:
        outcomes = self._outcomes
        outcomes[uniq] = committed
        outcomes.move_to_end(uniq)
        while len(outcomes) > _REMEMBERED:
            outcomes.popitem(last=False)

    # ------------------------------------------------------------------ checks

    def check(self, now: float | None = None) -> CheckResult:
        """One check round (``TransactionalMessageServiceImpl.check``) at ``now`` (the service's
        clock by default), run to its end; see the module docstring."""
        steps = self.check_steps(now)
        while True:
            try:
                next(steps)
            except StopIteration as stop:
                result: CheckResult = stop.value
                return result

    def check_steps(self, now: float | None = None) -> Generator[None, None, CheckResult]:
        """:meth:`check` in steps: it yields every :data:`STEP` records, so that an event loop
        driving it can serve requests in between (RocketMQ runs checks on a thread of their own);
        the round's result is the generator's return value."""
        start = self._clock() if now is None else now
        store = self._store
        if not store.queue_ids(_HALF):
            return CheckResult()
        self._ensure_topic(_HALF)  # as RocketMQ's fetchMessageQueues (the op topic has no config)
        half_offset = self._consume_offset(_HALF)
        op_offset = self._consume_offset(_OP)
        rnd = _Round(ms(start), int(self.timeout * 1000))
        yield from self._read_ops(rnd, op_offset, half_offset)
        i = half_offset
        end = store.max_offset(_HALF, 0)
        while i < end:
            if (i - half_offset) % STEP == STEP - 1:
                yield
            if self._clock() - start > _MAX_PROCESS_TIME:
                log.info("transaction check: stopped at half offset %d after %ds", i, _MAX_PROCESS_TIME)
                break
            if not self._check_half(rnd, i):
                break
            i += 1
        self._commit_progress(rnd, half_offset, i, op_offset)
        result = CheckResult(rnd.checked, rnd.done, rnd.discarded, rnd.no_producer)
        if rnd.checked or rnd.discarded:
            log.info("transaction check: %s", result)
        return result

    def _read_ops(self, rnd: _Round, op_offset: int, half_offset: int) -> Generator[None, None, None]:
        """Read the op records from ``op_offset``: each marks a half message done (``removed``,
        by half offset) or, when its half message is behind ``half_offset``, is done itself."""
        for n, op in enumerate(self._iter(_OP, op_offset), 1):
            target = _op_half_offset(op)
            if target is None or target < half_offset:
                rnd.done_ops.append(op.queue_offset)
            else:
                rnd.removed.setdefault(target, []).append(op.queue_offset)
            if n % STEP == 0:
                yield

    def _check_half(self, rnd: _Round, i: int) -> bool:
        """Deal with the half message at offset ``i``: done, discarded, skipped or asked about
        (True: the round moves past it), or left for the next round (False: the round stops)."""
        if i in rnd.removed:
            rnd.done_ops.extend(rnd.removed.pop(i))
            rnd.done += 1
            return True
        half = self._read_one(_HALF, i)
        if half is None:  # gone (retention) or unreadable: move on
            return True
        times = half.properties.get(MessageConst.TRANSACTION_CHECK_TIMES)
        check_times = 1 if times is None else _int(times, -1)
        if (times is not None and check_times >= self.check_max) or self._too_old(half, rnd.start_ms):
            self._discard(half)
            rnd.discarded += 1
            return True
        if times is not None:
            check_times += 1
        if half.store_timestamp >= rnd.start_ms:
            return False  # stored after this round began: the next round looks at it
        uniq = half.properties.get(MessageConst.UNIQ_KEY)
        if uniq and _transaction_key(half, uniq) in self._outcomes:
            # resolved through another copy (the producer answered after this one was
            # stored again): mark this copy done instead of asking again (RocketMQ asks)
            self._write_op(half)
            rnd.done += 1
            return True
        wait = self._immunity(rnd, half)
        if wait is not None:
            return wait == "skip"
        try:
            asked = self._check_one(half, check_times)
        except BrokerError as exc:
            log.error("transaction check: cannot store half offset %d again (%s); next round", i, exc.remark)
            return False
        rnd.checked += 1
        rnd.no_producer += 0 if asked else 1
        return True

    def _immunity(self, rnd: _Round, half: MessageExt) -> Literal["skip", "stop"] | None:
        """Whether ``half`` is too young to ask about: ``"skip"`` it (its own immunity time, and an
        op record or a newer copy speaks for it), ``"stop"`` the round (younger than the
        transaction timeout, and so is everything after it), or ``None``: ask now."""
        age = rnd.start_ms - half.born_timestamp
        immunity = rnd.timeout_ms
        immunity_text = half.properties.get(_IMMUNITY)
        if immunity_text is not None:
            seconds = _int(immunity_text, -1)
            immunity = rnd.timeout_ms if seconds == -1 else seconds * 1000
            if age < immunity and self._immune(half, rnd.removed, rnd.done_ops):
                return "skip"
        elif 0 <= age < immunity:
            return "stop"
        return None

    def _commit_progress(self, rnd: _Round, half_offset: int, new_offset: int, op_offset: int) -> None:
        """Store how far the round got in the half queue, and in the op queue up to the first op
        record not done."""
        store = self._store
        if new_offset != half_offset:
            store.consumer_offsets.commit_offset(CID_RMQ_SYS_TRANS, _HALF, 0, new_offset)
            self._opped = {o for o in self._opped if o >= new_offset}
        new_op_offset = op_offset
        for op_done in sorted(rnd.done_ops):
            if op_done == new_op_offset:
                new_op_offset += 1
            elif op_done > new_op_offset:
                break
        if new_op_offset != op_offset:
            store.consumer_offsets.commit_offset(CID_RMQ_SYS_TRANS, _OP, 0, new_op_offset)

    def _check_one(self, half: MessageExt, check_times: int) -> bool:
        """``putBackHalfMsgQueue`` + ``resolveHalfMsg``: store the half message again with one
        more check, and ask a producer of its group about the new copy."""
        props = dict(half.properties)
        props[MessageConst.TRANSACTION_CHECK_TIMES] = str(check_times)
        put = self._store_copy(half, _HALF, half.queue_id, props)
        # The request describes the new copy; its body is the message as the producer sent it
        # (real topic and queue) with the map as Java leaves it: WAIT set to false.
        uniq = props.get(MessageConst.UNIQ_KEY)
        offset_msg_id = make_offset_msg_id(half.store_host, put.commit_log_offset)
        header = CheckTransactionStateRequestHeader(
            tran_state_table_offset=put.queue_offset,
            commit_log_offset=put.commit_log_offset,
            msg_id=uniq,
            transaction_id=uniq,
            offset_msg_id=offset_msg_id,
        )
        body_props = dict(props)
        body_props[MessageConst.WAIT] = "false"
        body = encode_message(
            topic=props.get(MessageConst.REAL_TOPIC) or "",
            body=half.body,
            properties=self._props_string(body_props, len(body_props)),
            queue_id=_int(props.get(MessageConst.REAL_QID)),
            flag=half.flag,
            sys_flag=half.sys_flag,
            born_timestamp=half.born_timestamp,
            born_host=half.born_host,
            store_timestamp=half.store_timestamp,
            store_host=half.store_host,
            reconsume_times=half.reconsume_times,
            prepared_transaction_offset=half.prepared_transaction_offset,
            queue_offset=put.queue_offset,
            commit_log_offset=put.commit_log_offset,
        )
        group = props.get(MessageConst.PGROUP) or ""
        if self._send_check(group, header, body):
            return True
        log.warning("transaction %s: no producer of group %s is connected to check it", uniq, group)
        return False

    def _immune(self, half: MessageExt, removed: dict[int, list[int]], done_ops: list[int]) -> bool:
        """``checkPrepareQueueOffset``: a half message within its own immunity time; True when
        it needs nothing more this round (resolved, or stored again to be looked at later)."""
        prepared = half.properties.get(_PREPARED_QUEUE_OFFSET)
        if prepared is not None:
            offset = _int(prepared, -1)
            if offset == -1:
                return False
            ops = removed.pop(offset, None)
            if ops is not None:
                done_ops.extend(ops)
                return True
        props = dict(half.properties)
        props[_PREPARED_QUEUE_OFFSET] = prepared if prepared is not None else str(half.queue_offset)
        self._store_copy(half, _HALF, half.queue_id, props)
        return True

    def _too_old(self, half: MessageExt, now_ms: int) -> bool:
        """``needSkip``: born longer ago than the store keeps files."""
        return now_ms - half.born_timestamp > self._store.config.file_reserved_time * 1000

    def _discard(self, half: MessageExt) -> None:
        """``resolveDiscardMsg``: checked too often; kept in ``TRANS_CHECK_MAX_TIME_TOPIC``."""
        self._ensure_topic(RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC)
        props = dict(half.properties)
        self._store_copy(half, RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC, 0, props)
        log.error(
            "transaction %s of group %s was checked %s times without an answer: moved to %s",
            props.get(MessageConst.UNIQ_KEY),
            props.get(MessageConst.PGROUP),
            props.get(MessageConst.TRANSACTION_CHECK_TIMES),
            RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC,
        )

    # ------------------------------------------------------------------ store access

    def _consume_offset(self, topic: str) -> int:
        """Where the checks got to in ``topic`` queue 0 (its first offset when never)."""
        offset = self._store.consumer_offsets.query_offset(CID_RMQ_SYS_TRANS, topic, 0)
        low = self._store.min_offset(topic, 0)
        return max(offset, low) if offset >= 0 else low

    def _iter(self, topic: str, offset: int) -> Iterator[MessageExt]:
        """Every message of ``topic`` queue 0 from ``offset`` on, 32 read at a time."""
        store = self._store
        moved = (GetMessageStatus.OFFSET_TOO_SMALL, GetMessageStatus.OFFSET_FOUND_NULL)
        while True:
            result = store.get_messages(topic, 0, offset, 32)
            if result.status is not GetMessageStatus.FOUND:
                if result.status in moved and result.next_begin_offset > offset:
                    offset = result.next_begin_offset
                    continue
                return
            try:
                messages = decode_messages(result.data, decompress=False)
            except RemoteProtocolError as exc:
                log.error("unreadable %s records at offset %d: %s", topic, offset, exc)
                return
            yield from messages
            offset = result.next_begin_offset

    def _read_one(self, topic: str, offset: int) -> MessageExt | None:
        result = self._store.get_messages(topic, 0, offset, 1)
        if result.status is not GetMessageStatus.FOUND:
            return None
        try:
            return decode_messages(result.data, decompress=False)[0]
        except RemoteProtocolError:
            return None


def _transaction_key(half: MessageExt, uniq: str) -> str:
    """What identifies a transaction: its real topic and its message's unique id."""
    return f"{half.properties.get(MessageConst.REAL_TOPIC)}#{uniq}"


def _op_half_offset(op: MessageExt) -> int | None:
    if op.properties.get(MessageConst.TAGS) != _REMOVE_TAG:
        log.error("an op record at %d has no remove tag: ignored", op.queue_offset)
        return None
    try:
        return int(op.body.decode())
    except (UnicodeDecodeError, ValueError):
        log.error("an op record at %d names no half offset: ignored", op.queue_offset)
        return None


def _int(text: str | None, default: int = 0) -> int:
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default
