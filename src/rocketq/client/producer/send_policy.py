"""When a send is done, tried again on another broker, or failed (``sendDefaultImpl``'s rules), pure.

Every send driver of :class:`~rocketq.client.producer.core.ProducerCore` - on the client's loop,
from a thread, from another event loop - asks one :class:`SendPolicy`, made when the send began,
and only carries its decisions out. The rules are RocketMQ 4.9.4's ``DefaultMQProducerImpl``:

* a send has ``1 + retry_times_when_send_failed`` attempts (2 retries;
  ``retry_times_when_send_async_failed`` for asynchronous sends), or exactly one when it goes to a
  queue the caller chose, through a selector, or oneway;
* before each attempt, the time spent since the send began must be under ``send_msg_timeout``
  (3 s): otherwise the send fails with :class:`~rocketq.errors.RemotingTimeoutError` (its cause the
  last attempt's error); the attempt may take what is left;
* after an attempt (:meth:`SendPolicy.after`): an answer with ``SEND_OK`` is done; an answer with
  another status (``FLUSH_DISK_TIMEOUT``, ``FLUSH_SLAVE_TIMEOUT``, ``SLAVE_NOT_AVAILABLE``: stored,
  but not as asked) is done too, unless ``retry_another_broker_when_not_store_ok`` and an attempt
  is left; a transport error (:class:`~rocketq.errors.RemotingError`) is retried while an attempt
  is left; a broker refusal (:class:`~rocketq.errors.BrokerError`) is retried while an attempt is
  left if its code is one of :data:`RETRY_RESPONSE_CODES`, and raised at once otherwise; what
  cannot be retried is raised.

Where a retry goes (another broker than the last attempt's) is :mod:`.selection`'s business.

>>> from rocketq.errors import RemotingConnectError
>>> policy = SendPolicy(topic="T", attempts=3, timeout=3.0, begin=100.0, retry_not_stored=False)
>>> policy.before(0, now=100.0, last_error=None)
Decision(verdict=<Verdict.RETRY: 'retry'>, budget=3.0, error=None)
>>> policy.after(0, RemotingConnectError("connection refused")).verdict
<Verdict.RETRY: 'retry'>
>>> policy.before(1, now=103.5, last_error=None).error
RemotingTimeoutError('send to T timed out after 1 attempt(s)')
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final

from rocketq.errors import AccessDeniedError, BrokerError, RemotingError, RemotingTimeoutError
from rocketq.models import SendResult, SendStatus
from rocketq.protocol.codes import ResponseCode

__all__ = ["RETRY_RESPONSE_CODES", "Decision", "SendPolicy", "Verdict"]

RETRY_RESPONSE_CODES: Final = frozenset(
    {
        ResponseCode.TOPIC_NOT_EXIST,
        ResponseCode.SERVICE_NOT_AVAILABLE,
        ResponseCode.SYSTEM_ERROR,
        ResponseCode.SYSTEM_BUSY,  # RocketMQ 5 retries it; 4.9 raises it at once
        ResponseCode.NO_PERMISSION,
        205,  # NO_BUYER_ID
        206,  # NOT_IN_CURRENT_UNIT
    }
)
"""Broker answers after which a send is tried on another broker (``retryResponseCodes``; 4.9.4's
list and RocketMQ 5's ``SYSTEM_BUSY``; the producer's retry budget and broker back-off keep
these retries from adding load to a busy broker: :mod:`.overload`). A refusal by the broker's ACL
(SYSTEM_ERROR with an ``AclException`` remark, :class:`~rocketq.errors.AccessDeniedError`) is
raised at once."""


class Verdict(enum.Enum):
    """What a send does next."""

    #: make an attempt (a first one, or another on another broker)
    RETRY = "retry"
    #: return the attempt's result
    DONE = "done"
    #: raise :attr:`Decision.error`
    RAISE = "raise"


@dataclass(slots=True)
class Decision:
    """A verdict, with the seconds the next attempt may take (``RETRY`` from :meth:`SendPolicy.before`)
    or the error to raise (``RAISE``). Never changed once made (not frozen: one is made before
    every attempt, and a frozen dataclass costs twice as much to make)."""

    verdict: Verdict
    budget: float = 0.0
    error: BaseException | None = None


_DONE: Final = Decision(Verdict.DONE)
_RETRY: Final = Decision(Verdict.RETRY)

Outcome = SendResult | None | RemotingError | BrokerError
"""What an attempt came to: the broker's answer (``None`` for oneway), or its error."""


@dataclass(slots=True, kw_only=True)
class SendPolicy:
    """The rules of one send (see the module doc); made when the send begins (``begin``, by
    ``time.monotonic``), consulted before and after each attempt. Never changed once made (not
    frozen only because one is made per send, and a frozen dataclass costs twice as much to make).
    """

    topic: str
    attempts: int
    timeout: float
    begin: float
    retry_not_stored: bool

    @classmethod
    def of(
        cls,
        topic: str,
        *,
        retries: int,
        single: bool,
        timeout: float,
        begin: float,
        retry_not_stored: bool,
    ) -> SendPolicy:
        """The policy of a send to ``topic`` with ``retries`` retries, or none when ``single`` (a
        chosen queue, a selector, oneway)."""
        attempts = 1 if single else 1 + retries
        return cls(
            topic=topic, attempts=attempts, timeout=timeout, begin=begin, retry_not_stored=retry_not_stored
        )

    def remaining(self, now: float) -> float:
        """The seconds the send may still take at ``now``: :meth:`before` says ``RETRY`` with this
        budget exactly when it is positive (the hot path asks this, and :meth:`before` only then)."""
        return self.timeout - (now - self.begin)

    def before(self, attempt: int, *, now: float, last_error: BaseException | None) -> Decision:
        """Attempt ``attempt`` (0-based) is about to go: ``RETRY`` with the seconds it may take, or
        ``RAISE`` a timeout when the send's time is spent."""
        remaining = self.timeout - (now - self.begin)
        if remaining > 0:
            return Decision(Verdict.RETRY, budget=remaining)
        error = RemotingTimeoutError(f"send to {self.topic} timed out after {attempt} attempt(s)")
        error.__cause__ = last_error
        error.__suppress_context__ = True
        return Decision(Verdict.RAISE, error=error)

    def after(self, attempt: int, outcome: Outcome) -> Decision:
        """Attempt ``attempt`` (0-based) came to ``outcome``: ``DONE`` (return it), ``RETRY`` (on
        another broker) or ``RAISE`` (the outcome's error)."""
        more = attempt + 1 < self.attempts
        if isinstance(outcome, RemotingError):
            return _RETRY if more else Decision(Verdict.RAISE, error=outcome)
        if isinstance(outcome, BrokerError):
            # an ACL refusal (SYSTEM_ERROR to 4.9) is not retried: the account is refused
            # cluster-wide (4.9 retries it, and meets the same ACL on the next broker)
            if more and outcome.code in RETRY_RESPONSE_CODES and not isinstance(outcome, AccessDeniedError):
                return _RETRY
            return Decision(Verdict.RAISE, error=outcome)
        if (
            more
            and self.retry_not_stored
            and outcome is not None
            and outcome.status is not SendStatus.SEND_OK
        ):
            return _RETRY
        return _DONE
