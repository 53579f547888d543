"""The producer's send policy (``sendDefaultImpl``): done, retry on another broker, or raise - pure."""

from __future__ import annotations

import pytest

from rocketq.client.config import ProducerConfig
from rocketq.client.producer.send_policy import RETRY_RESPONSE_CODES, SendPolicy, Verdict
from rocketq.errors import (
    BrokerError,
    MessageIllegalError,
    RemotingClosedError,
    RemotingConnectError,
    RemotingTimeoutError,
    ServiceNotAvailableError,
)
from rocketq.models import MessageQueue, SendResult, SendStatus
from rocketq.protocol.codes import ResponseCode

Q = MessageQueue("T", "broker-a", 0)


def result(status: SendStatus = SendStatus.SEND_OK) -> SendResult:
    return SendResult(status=status, msg_id="M", offset_msg_id="O", message_queue=Q, queue_offset=1)


def policy(*, retries: int = 2, single: bool = False, retry_not_stored: bool = False) -> SendPolicy:
    return SendPolicy.of(
        "T", retries=retries, single=single, timeout=3.0, begin=100.0, retry_not_stored=retry_not_stored
    )


def test_attempts_are_one_plus_the_retries_or_one_for_a_chosen_queue_a_selector_or_oneway() -> None:
    cfg = ProducerConfig()
    assert (cfg.retry_times_when_send_failed, cfg.send_msg_timeout) == (2, 3.0)
    assert policy().attempts == 3
    assert policy(retries=0).attempts == 1
    assert policy(single=True).attempts == 1


def test_an_answer_is_done_whatever_its_status_unless_asked_to_retry_what_was_not_stored() -> None:
    p = policy()
    assert p.after(0, result()).verdict is Verdict.DONE
    assert p.after(0, result(SendStatus.FLUSH_DISK_TIMEOUT)).verdict is Verdict.DONE
    assert p.after(0, None).verdict is Verdict.DONE  # oneway
    r = policy(retry_not_stored=True)
    assert r.after(0, result(SendStatus.SLAVE_NOT_AVAILABLE)).verdict is Verdict.RETRY
    assert r.after(0, result()).verdict is Verdict.DONE
    assert r.after(2, result(SendStatus.SLAVE_NOT_AVAILABLE)).verdict is Verdict.DONE  # the last one


@pytest.mark.parametrize(
    "error", [RemotingConnectError("refused"), RemotingTimeoutError("slow"), RemotingClosedError("x")]
)
def test_a_transport_error_is_retried_while_attempts_are_left_then_raised(error: Exception) -> None:
    p = policy()
    assert p.after(0, error).verdict is Verdict.RETRY  # type: ignore[arg-type]
    assert p.after(1, error).verdict is Verdict.RETRY  # type: ignore[arg-type]
    last = p.after(2, error)  # type: ignore[arg-type]
    assert (last.verdict, last.error) == (Verdict.RAISE, error)
    assert policy(single=True).after(0, error).error is error  # type: ignore[arg-type]


def test_a_refusal_is_retried_only_for_rocketmqs_retry_codes() -> None:
    # 4.9.4's retryResponseCodes, and SYSTEM_BUSY as RocketMQ 5 added it (bounded by the budget)
    assert set(RETRY_RESPONSE_CODES) == {
        ResponseCode.TOPIC_NOT_EXIST,
        ResponseCode.SERVICE_NOT_AVAILABLE,
        ResponseCode.SYSTEM_ERROR,
        ResponseCode.SYSTEM_BUSY,
        ResponseCode.NO_PERMISSION,
        205,
        206,
    }
    p = policy()
    busy = ServiceNotAvailableError(ResponseCode.SERVICE_NOT_AVAILABLE, "busy")
    assert p.after(0, busy).verdict is Verdict.RETRY
    assert p.after(2, busy).error is busy
    illegal = MessageIllegalError(ResponseCode.MESSAGE_ILLEGAL, "too big")
    decision = p.after(0, illegal)
    assert (decision.verdict, decision.error) == (Verdict.RAISE, illegal)
    assert p.after(0, BrokerError(206)).verdict is Verdict.RETRY


def test_each_attempt_may_take_what_is_left_of_the_send_timeout() -> None:
    p = policy()
    first = p.before(0, now=100.0, last_error=None)
    assert (first.verdict, first.budget) == (Verdict.RETRY, 3.0)
    assert p.before(1, now=101.25, last_error=None).budget == pytest.approx(1.75)


def test_a_spent_timeout_fails_the_send_with_the_last_error_as_cause() -> None:
    p = policy()
    cause = RemotingConnectError("refused")
    decision = p.before(2, now=103.0, last_error=cause)
    assert decision.verdict is Verdict.RAISE
    assert isinstance(decision.error, RemotingTimeoutError)
    assert str(decision.error) == "send to T timed out after 2 attempt(s)"
    assert decision.error.__cause__ is cause
    assert p.before(0, now=104.0, last_error=None).verdict is Verdict.RAISE  # the route lookup took it all
