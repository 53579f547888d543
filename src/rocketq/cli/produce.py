"""``rocketq produce TOPIC``: send numbered messages, paced or as fast as the broker takes them.

Every body is unique, across runs too: ``--body TEXT`` sends ``TEXT-<run>-000000``,
``TEXT-<run>-000001`` ... (``<run>``: six hex digits new for each run, or ``--run ID``);
``--size BYTES`` sends bodies of exactly that size starting with the sequence number
(``000042-<run>-xxxx...``). Sends are pipelined (up to :data:`WINDOW` in flight,
each retried on another broker as the producer does) or, with ``--batch N``, grouped into batch
sends of N messages. ``--rate`` paces them with a :class:`TokenBucket` on the monotonic clock.
The first send is made alone so that a wrong name server or topic fails at once, as one line.
A progress bar shows on a terminal for 1,000 messages or more; a summary (sent, failed, rate)
ends the run. Exit code 0 when everything was sent, 1 when some sends failed, 130 when
interrupted by SIGINT (Ctrl-C) and 143 by SIGTERM, as shells report them (128 + the signal
number), after the summary of what was sent.

``--property NAME=VALUE`` (repeatable) sets user properties, which SQL92 subscriptions filter on
(``rocketq consume --sql``); RocketMQ's own property names are refused.

``--transaction commit|rollback|unknown`` sends each message in a transaction
(:class:`~rocketq.client.TransactionProducer`): a half message, then the local transaction's
answer - the state given - and one ``TX <msg id> <state>`` line per message. ``unknown`` leaves
the broker to ask: the command then keeps running and answers the broker's checks with
``--check-answer`` (default ``commit``), printing ``CHECK <msg id> <answer>`` per check, until
every transaction it left unknown has been answered with commit or rollback (with
``--check-answer unknown``: until Ctrl-C). The broker checks a half message after
``transactionTimeOut`` (6 s) every ``transactionCheckInterval`` (60 s by default; ``rocketq
server --transaction-check-interval``). A check of a transaction that was committed or rolled
back (its END_TRANSACTION lost) is answered with that state. Transactions go one at a time, in
producer group ``TX_PRODUCER`` unless ``--group`` says otherwise (the broker asks any producer
of the group, so transactional producers keep a group of their own); ``--batch`` does not apply.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import logging
import secrets
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from types import FrameType
from typing import Any

from rocketq.admin import Admin
from rocketq.analytics import counted
from rocketq.cli._output import (
    add_acl_options,
    add_namesrv_option,
    client_security,
    group_name,
    number_type,
    positive_float,
    positive_int,
    print_json,
    topic_name,
    unreachable_hint,
)
from rocketq.cli.main import CliError, interrupted
from rocketq.client import LocalTransactionState, Message, Producer, SendResult, TransactionProducer
from rocketq.client.config import ClientConfig, ProducerConfig
from rocketq.errors import ConfigError, RemotingConnectError, RemotingTimeoutError, RocketQError
from rocketq.protocol.message import MessageExt
from rocketq.protocol.properties import NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR, SYSTEM_PROPERTY_NAMES

__all__ = ["TX_GROUP", "WINDOW", "TokenBucket", "body_maker", "new_run_id", "parse_property", "register"]

logger = logging.getLogger(__name__)

WINDOW = 64
#: Seconds a stopped run waits for the answers of the sends still out (Ctrl-C ends it within 1 s).
STOP_WAIT = 0.3
"""Sends in flight at once (single-message mode). Measured with 128 B bodies against a ``rocketq
server`` process on a 2-core machine: 1 in flight 3.0k msg/s, 16 6.9k, 64 10.7k, 256 9.7k;
``--batch 32`` 48k msg/s."""
_PROGRESS_MIN = 1000
_ERRORS_SHOWN = 5
TX_GROUP = "TX_PRODUCER"
"""The producer group of ``--transaction`` sends unless ``--group`` names one."""
_STATES = {
    "commit": LocalTransactionState.COMMIT_MESSAGE,
    "rollback": LocalTransactionState.ROLLBACK_MESSAGE,
    "unknown": LocalTransactionState.UNKNOW,
}


def parse_property(text: str) -> tuple[str, str]:
    """An argparse ``type=`` for ``--property NAME=VALUE``: a user property RocketMQ accepts
    (``Message.putUserProperty``: a name and a value, neither blank, the name not one of
    RocketMQ's own, neither holding the property string's separators).

    >>> parse_property("region=eu"), parse_property("note=a=b")
    (('region', 'eu'), ('note', 'a=b'))
    """
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"a property is NAME=VALUE, got {text!r}")
    if not value.strip():
        raise argparse.ArgumentTypeError(f"property {name} has no value")
    if name in SYSTEM_PROPERTY_NAMES:
        raise argparse.ArgumentTypeError(
            f"property name {name} is RocketMQ's own (use --tag for TAGS, --keys for KEYS); name another"
        )
    if any(c in text for c in (NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR)):
        raise argparse.ArgumentTypeError(f"property {name} holds a control character (\\x01 or \\x02)")
    return name, value


class TokenBucket:
    """Pace events at ``rate`` per second with bursts of at most ``burst`` (default: 20 ms worth).

    Tokens accrue from the elapsed time on ``clock`` (monotonic), so sleeping longer than asked
    never slows the long-run rate and sleeping less never speeds it up: there is no drift. A call
    may take more tokens than are there; the debt is what the caller waits.

    >>> now = [0.0]
    >>> bucket = TokenBucket(100.0, burst=1.0, clock=lambda: now[0])
    >>> bucket.take(), bucket.take(), bucket.take()   # 1 token at start, then 10 ms each
    (0.0, 0.01, 0.02)
    >>> now[0] = 1.0; bucket.take()                   # idle time refills up to the burst only
    0.0
    """

    __slots__ = ("_clock", "_stamp", "_tokens", "burst", "rate")

    def __init__(
        self, rate: float, *, burst: float | None = None, clock: Callable[[], float] = time.monotonic
    ):
        if rate <= 0:
            raise ConfigError(f"rate must be positive, got {rate}")
        self.rate = rate
        self.burst = burst if burst is not None else max(1.0, rate * 0.02)
        self._clock = clock
        self._stamp = clock()
        self._tokens = self.burst

    def take(self, n: float = 1.0) -> float:
        """Take ``n`` tokens; the seconds to wait before acting on them (0.0 when there now)."""
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.rate)
        self._stamp = now
        self._tokens -= n
        return 0.0 if self._tokens >= 0 else round(-self._tokens / self.rate, 9)


def body_maker(count: int, *, text: str | None, size: int | None, run: str = "") -> Callable[[int], bytes]:
    """A function from sequence number to a unique body; ``run`` (this run's id) keeps bodies of
    different runs apart.

    >>> body_maker(100, text="hi", size=None)(42), body_maker(100, text="hi", size=None, run="3f9a1c")(42)
    (b'hi-000042', b'hi-3f9a1c-000042')
    >>> body_maker(100, text=None, size=12)(42), body_maker(100, text=None, size=16, run="ab")(42)
    (b'000042-xxxxx', b'000042-ab-xxxxxx')
    """
    width = max(6, len(str(max(count - 1, 0))))
    tag = f"{run}-" if run else ""
    if size is not None:
        prefix_len = width + 1 + len(tag)
        if size < prefix_len:
            raise ConfigError(
                f"--size must be at least {prefix_len} bytes to hold the run id and sequence number"
            )
        filler = b"x" * (size - prefix_len)
        return lambda seq: f"{seq:0{width}d}-{tag}".encode() + filler
    base = (text if text is not None else "message").encode() + b"-" + tag.encode()
    return lambda seq: base + f"{seq:0{width}d}".encode()


def new_run_id() -> str:
    """Six hex digits, new for every run of ``rocketq produce``."""
    return secrets.token_hex(3)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "produce",
        help="send numbered messages to a topic (unique bodies, optional pacing and batches)",
        description=(
            "Send messages with unique bodies: TEXT-RUN-000000, TEXT-RUN-000001 ... (--body; RUN is "
            "this run's id), or bodies of exactly BYTES bytes starting with the sequence number "
            "(--size). Prints a summary (sent, failed, rate); exit code 1 if any send failed, 130 on "
            "Ctrl-C, 143 on SIGTERM. With --transaction each message is sent in a transaction (a TX "
            "<msg id> <state> line each); with unknown the command then answers the broker's checks "
            "(CHECK <msg id> <answer> lines) until they are resolved."
        ),
    )
    parser.add_argument("topic", metavar="TOPIC", type=topic_name)
    parser.add_argument(
        "--count", type=positive_int, default=1, metavar="COUNT", help="messages to send (default 1)"
    )
    body = parser.add_mutually_exclusive_group()
    body.add_argument(
        "--body", metavar="TEXT", help="body text; '-<sequence number>' is appended (default 'message')"
    )
    body.add_argument(
        "--size",
        type=_body_size,
        metavar="BYTES",
        help=f"fixed body size, sequence number first (at most {MAX_BODY:,}: RocketMQ's maxMessageSize)",
    )
    parser.add_argument("--tag", metavar="TAG", help="tag of every message")
    parser.add_argument("--keys", metavar="KEYS", help="key(s) of every message, space-separated")
    parser.add_argument(
        "--batch", type=positive_int, metavar="COUNT", help="send COUNT messages per batch request"
    )
    parser.add_argument(
        "--rate",
        type=positive_float,
        metavar="MSGS_PER_S",
        help="pace sends to this many messages per second",
    )
    parser.add_argument(
        "--property",
        dest="properties",
        action="append",
        type=parse_property,
        default=[],
        metavar="NAME=VALUE",
        help="a user property of every message (repeatable); SQL92 subscriptions filter on them",
    )
    parser.add_argument(
        "--transaction",
        choices=tuple(_STATES),
        help="send each message in a transaction whose local transaction answers this state "
        "(unknown: the broker asks later; see --check-answer)",
    )
    parser.add_argument(
        "--check-answer",
        choices=tuple(_STATES),
        help="how to answer the broker's checks of transactions left unknown (default commit); the "
        "command waits for them",
    )
    parser.add_argument(
        "--group",
        default=None,
        type=group_name,
        help=f"producer group (default DEFAULT_PRODUCER; {TX_GROUP} with --transaction)",
    )
    parser.add_argument(
        "--run",
        metavar="ID",
        type=_run_id,
        default=None,
        help="this run's id in every body, so that runs never repeat a body (default: 6 random hex "
        "digits; '' for none)",
    )
    parser.add_argument(
        "--trace",
        action="store_true",
        help="publish a RocketMQ message-trace record (Pub) per sent message to RMQ_SYS_TRACE_TOPIC, "
        "which `rocketq report` reads",
    )
    add_namesrv_option(parser)
    add_acl_options(parser)
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    parser.set_defaults(handler=_run)


def _run_id(text: str) -> str:
    if text and not all(c.isalnum() or c in "_." for c in text):
        raise argparse.ArgumentTypeError(f"a run id takes letters, digits, '_' and '.', got {text!r}")
    if len(text) > 32:
        raise argparse.ArgumentTypeError(f"a run id has at most 32 characters, got {len(text)}")
    return text


class _Stop:
    """Set by SIGINT/SIGTERM while producing; ``signum`` says which came."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signum: int | None = None

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if self.event.is_set():  # the second one: stop at once (main exits 130)
            raise KeyboardInterrupt
        self.signum = signum
        self.event.set()
        interrupted.set()


def _batches(first: int, count: int, size: int) -> Iterator[range]:
    """Ranges of at most ``size`` sequence numbers from ``first`` up to ``count``, made lazily."""
    for start in range(first, count, size):
        yield range(start, min(start + size, count))


MAX_BODY = ProducerConfig().max_message_size
"""The largest body (and batch) a producer sends: RocketMQ's ``maxMessageSize``, 4 MiB."""
_BATCH_ENTRY = 20  # bytes a batch adds per message besides body and properties (sizes, magic, CRC, flag)

_body_size = number_type(
    int,
    "not a number of bytes",
    lambda v: v > 0,
    "must be positive, got {value}",
    most=MAX_BODY,
    too_big="must be at most {most} bytes (RocketMQ's maxMessageSize, 4 MiB), got {value}",
)


def _check_batch(args: argparse.Namespace) -> None:
    """Refuse, before anything is built, a batch larger than a producer may send."""
    body = args.size if args.size is not None else len(args.body or "") + 32
    per = min(args.batch, args.count)
    least = per * (body + _BATCH_ENTRY)
    if least > MAX_BODY:
        raise CliError(
            f"--batch {args.batch} of {body}-byte bodies makes batches of at least {least:,} bytes, over "
            f"RocketMQ's maxMessageSize ({MAX_BODY:,} bytes); send fewer per batch"
        )


def _run(args: argparse.Namespace) -> int:
    _check_args(args)
    checks = _Checks(args.transaction, args.check_answer) if args.transaction else None
    run, make_body, producer = _producer(args, checks)
    send = _Produce(args, producer, checks, make_body)
    with ExitStack() as stack:
        send.start(stack)
        began = time.monotonic()
        first = send.first()
        if checks is not None:
            send.transactions(first, checks)
        elif args.batch:
            send.batches(first)
        else:
            send.pipelined(first)
        elapsed = max(time.monotonic() - began, 1e-9)
    return send.finish(elapsed, run)


def _check_args(args: argparse.Namespace) -> None:
    """Refuse the combinations of options that do not go together, before anything is built."""
    if args.transaction is None and args.check_answer is not None:
        raise CliError("--check-answer answers the checks of --transaction sends; add --transaction")
    if args.transaction is not None and args.batch:
        raise CliError("--transaction sends one message per transaction; --batch does not apply")
    if args.batch:
        _check_batch(args)


def _producer(
    args: argparse.Namespace, checks: _Checks | None
) -> tuple[str, Callable[[int], bytes], Producer]:
    """The run id, the bodies and the (not yet started) producer; the name server asked once, so
    that an unreachable one is one clear line rather than a route error."""
    group = args.group or (TX_GROUP if args.transaction else "DEFAULT_PRODUCER")
    try:
        run = new_run_id() if args.run is None else args.run
        make_body = body_maker(args.count, text=args.body, size=args.size, run=run)
        security = client_security(args)
        client = ClientConfig(namesrv=args.namesrv, **security)
        producer: Producer = (
            Producer(group, client_config=client, trace=args.trace)
            if checks is None
            else TransactionProducer(group, client_config=client, trace=args.trace, checker=checks.answer)
        )
        with Admin(args.namesrv, **security) as admin:
            admin.topic_list()
    except (RemotingConnectError, RemotingTimeoutError) as exc:
        raise unreachable_hint(exc, args.namesrv) from None
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    return run, make_body, producer


class _Produce:
    """One ``rocketq produce`` run: the messages, their pace, the count of what was sent, and the
    three ways of sending them (in transactions, in batches, pipelined), each stopping at a signal."""

    def __init__(
        self,
        args: argparse.Namespace,
        producer: Producer,
        checks: _Checks | None,
        make_body: Callable[[int], bytes],
    ) -> None:
        self.args = args
        self.producer = producer
        self.checks = checks
        self.make_body = make_body
        self.properties = dict(args.properties)
        self.stop = _Stop()
        self.sent = self.failed = self.sent_bytes = self.unconfirmed = 0
        self.errors: list[str] = []
        self.bucket = TokenBucket(args.rate) if args.rate else None
        self.progress: Callable[[int], None] = lambda n: None

    def message(self, seq: int) -> Message:
        args = self.args
        return Message(
            args.topic, self.make_body(seq), tags=args.tag, keys=args.keys, properties=self.properties
        )

    def start(self, stack: ExitStack) -> None:
        """Catch SIGINT/SIGTERM and start the producer and the progress bar, each undone by ``stack``."""
        previous = {sig: signal.signal(sig, self.stop) for sig in (signal.SIGINT, signal.SIGTERM)}
        stack.callback(lambda: [signal.signal(s, h) for s, h in previous.items()])
        try:
            self.producer.start()
        except (RemotingConnectError, RemotingTimeoutError) as exc:
            raise unreachable_hint(exc, self.args.namesrv) from None
        stack.callback(self.producer.shutdown)
        self.progress = _progress(self.args.count, stack)

    def pace(self, n: int) -> None:
        if self.bucket is not None:
            wait = self.bucket.take(n)
            if wait > 0:
                self.stop.event.wait(wait)

    def record(self, n: int, nbytes: int, exc: BaseException | None) -> None:
        if exc is None:
            self.sent += n
            self.sent_bytes += nbytes
        else:
            self.failed += n
            if len(self.errors) < _ERRORS_SHOWN:
                self.errors.append(f"{type(exc).__name__}: {exc}")
        self.progress(n)

    def first(self) -> int:
        """The first send (one message, or one batch) alone: a wrong address or topic fails here,
        as one line. Returns how many messages it sent."""
        first = range(min(self.args.batch or 1, self.args.count))
        self.pace(len(first))
        try:
            if self.checks is not None:
                self.checks.send(self.producer, self.message(0))
            else:
                _send_unit(self.producer, [self.message(s) for s in first])
        except (RemotingConnectError, RemotingTimeoutError) as exc:
            raise unreachable_hint(exc, self.args.namesrv) from None
        self.record(len(first), sum(len(self.make_body(s)) for s in first), None)
        return len(first)

    def transactions(self, first: int, checks: _Checks) -> None:
        """One transaction per message, then (unless stopped) the broker's checks answered."""
        for seq in range(first, self.args.count):
            if self.stop.event.is_set():
                break
            self.pace(1)
            msg = self.message(seq)
            try:
                checks.send(self.producer, msg)
                self.record(1, len(msg.body), None)
            except RocketQError as exc:
                self.record(1, 0, exc)
        if not self.stop.event.is_set():
            checks.wait_for_checks(self.stop.event)

    def batches(self, first: int) -> None:
        """Batch sends of ``--batch`` messages, one at a time."""
        for unit in _batches(first, self.args.count, self.args.batch):
            if self.stop.event.is_set():
                break
            self.pace(len(unit))
            msgs = [self.message(s) for s in unit]
            try:
                _send_unit(self.producer, msgs)
                self.record(len(msgs), sum(len(m.body) for m in msgs), None)
            except RocketQError as exc:
                self.record(len(msgs), 0, exc)

    def pipelined(self, first: int) -> None:
        """Single sends, up to :data:`WINDOW` in flight."""
        inflight: dict[concurrent.futures.Future[SendResult], int] = {}

        def settle(done: set[concurrent.futures.Future[SendResult]]) -> None:
            for f in done:
                nbytes = inflight.pop(f)
                self.record(1, nbytes, f.exception())

        for seq in range(first, self.args.count):
            if self.stop.event.is_set():
                break
            self.pace(1)
            if len(inflight) >= WINDOW:
                done, _ = concurrent.futures.wait(inflight, return_when=concurrent.futures.FIRST_COMPLETED)
                settle(done)
            msg = self.message(seq)
            inflight[self.producer.send_future(msg)] = len(msg.body)
        if inflight:
            # stopped by a signal: the answers that come within STOP_WAIT, not all of them
            # (under overload they may take the whole send timeout): Ctrl-C ends it at once
            timeout = STOP_WAIT if self.stop.event.is_set() else None
            done, _ = concurrent.futures.wait(inflight, timeout=timeout)
            settle(done)
            self.unconfirmed = len(inflight)

    def finish(self, elapsed: float, run: str) -> int:
        """Print the summary (JSON or a line, failures on stderr) and return the exit code."""
        interrupted = self.stop.event.is_set()
        summary = {
            "topic": self.args.topic,
            "sent": self.sent,
            "failed": self.failed,
            "not_sent": self.args.count - self.sent - self.failed,
            "unconfirmed": self.unconfirmed,
            "seconds": round(elapsed, 3),
            "rate": round(self.sent / elapsed, 1),
            "bytes": self.sent_bytes,
            "interrupted": interrupted,
            "run": run,
            "errors": self.errors,
        }
        if self.checks is not None:
            summary["transactions"] = self.checks.summary()
        if self.args.json:
            print_json(summary)
        else:
            self._print_summary(summary, elapsed)
        if interrupted:
            return 128 + (self.stop.signum or signal.SIGINT)  # 130 for SIGINT, 143 for SIGTERM
        return 1 if self.failed else 0

    def _print_summary(self, summary: dict[str, Any], elapsed: float) -> None:
        sent, failed, errors = self.sent, self.failed, self.errors
        why = {int(signal.SIGTERM): "SIGTERM", int(signal.SIGINT): "Ctrl-C"}.get(
            self.stop.signum or 0, "a signal"
        )
        extra = f", {summary['not_sent']} not sent (stopped by {why})" if summary["interrupted"] else ""
        if self.unconfirmed:
            extra += f", {self.unconfirmed} of them out unanswered when it stopped (they may be stored)"
        tx = f" in transactions ({self.checks.line()})" if self.checks is not None else ""
        print(
            f"sent {counted(sent, 'message')} to {self.args.topic}{tx}, {failed} failed{extra}, "
            f"in {elapsed:.2f} s: "
            f"{sent / elapsed:.0f} msg/s ({self.sent_bytes / elapsed / 1e6:.2f} MB/s)",
            flush=True,
        )
        for line in errors:
            print(f"send failed: {line}", file=sys.stderr)
        if failed > len(errors):
            print(f"... and {failed - len(errors)} more failed sends", file=sys.stderr)


class _Checks:
    """The transactions of a ``--transaction`` run: sends them, answers the broker's checks (on
    the producer's check thread) and knows when every transaction left unknown is resolved."""

    def __init__(self, transaction: str, check_answer: str | None) -> None:
        self.state = _STATES[transaction]
        if check_answer is not None:
            self.answer_state = _STATES[check_answer]
        elif self.state is LocalTransactionState.UNKNOW:
            self.answer_state = LocalTransactionState.COMMIT_MESSAGE
        else:
            self.answer_state = self.state
        self.lock = threading.Lock()
        self.sent: dict[LocalTransactionState, int] = dict.fromkeys(LocalTransactionState, 0)
        self.decided: dict[str, LocalTransactionState] = {}  # committed or rolled back by this run
        self.pending: set[str] = set()  # left unknown, not yet resolved by a check
        self.answered: dict[LocalTransactionState, int] = dict.fromkeys(LocalTransactionState, 0)
        self.resolved = threading.Event()

    def send(self, producer: Producer, msg: Message) -> None:
        assert isinstance(producer, TransactionProducer)
        result = producer.send_in_transaction(msg, execute=lambda m, arg: self.state)
        state = result.local_transaction_state
        with self.lock:
            self.sent[state] += 1
            if state is LocalTransactionState.UNKNOW:
                self.pending.add(result.msg_id)
            else:
                self.decided[result.msg_id] = state
        print(f"TX {result.msg_id} {state}", flush=True)

    def answer(self, msg: MessageExt) -> LocalTransactionState:
        """The checker: a transaction of this run that was decided keeps its state; the others get
        ``--check-answer``."""
        with self.lock:
            state = self.decided.get(msg.msg_id, self.answer_state)
            self.answered[state] += 1
            if state is not LocalTransactionState.UNKNOW:
                self.pending.discard(msg.msg_id)
                if not self.pending:
                    self.resolved.set()
        print(f"CHECK {msg.msg_id} {state}", flush=True)
        return state

    def wait_for_checks(self, stop: threading.Event) -> None:
        """Until every transaction left unknown was resolved by a check, or ``stop``."""
        with self.lock:
            waiting = len(self.pending)
            if not waiting:
                return
        how = (
            "answering UNKNOW until Ctrl-C"
            if self.answer_state is LocalTransactionState.UNKNOW
            else f"answering {self.answer_state}"
        )
        print(
            f"rocketq produce: waiting for the broker to check {counted(waiting, 'transaction')} "
            f"left UNKNOW ({how}); "
            "a broker checks after transactionTimeOut (6 s), every transactionCheckInterval (60 s by "
            "default); Ctrl-C stops",
            file=sys.stderr,
            flush=True,
        )
        while not stop.is_set() and not self.resolved.wait(0.2):
            pass

    def summary(self) -> dict[str, Any]:
        with self.lock:
            return {
                "sent": {str(k): v for k, v in self.sent.items()},
                "checks_answered": {str(k): v for k, v in self.answered.items()},
                "unresolved": len(self.pending),
            }

    def line(self) -> str:
        with self.lock:
            parts = [f"{n} {s}" for s, n in self.sent.items() if n]
            checks = sum(self.answered.values())
            if checks:
                parts.append(
                    f"{counted(checks, 'check')} answered "
                    + ", ".join(f"{n} {s}" for s, n in self.answered.items() if n)
                )
            if self.pending:
                parts.append(f"{len(self.pending)} still UNKNOW")
        return "; ".join(parts) or "none"


def _send_unit(producer: Producer, msgs: list[Message]) -> None:
    if len(msgs) == 1:
        producer.send(msgs[0])
    else:
        producer.send_batch(msgs)


def _progress(total: int, stack: ExitStack) -> Callable[[int], None]:
    """A rich progress bar on stderr when it is a terminal and ``total`` is large; else a no-op."""
    if total < _PROGRESS_MIN or not sys.stderr.isatty():
        return lambda n: None
    from rich.console import Console  # noqa: PLC0415 (only on a terminal)
    from rich.progress import (  # noqa: PLC0415
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TimeRemainingColumn,
    )

    bar = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    stack.enter_context(bar)
    task = bar.add_task("sending", total=total)
    return lambda n: bar.advance(task, n)
