"""The sans-I/O connection core: bytes and ``now`` in, events out; no socket, loop or clock.

Byte streams are cut into chunks at random, responses come back in random orders, deadlines and
clocks are drawn at random, and flow-control changes come in random sequences: the events and
decisions must be those a model of the protocol predicts, whatever the cuts and orders.
"""

from __future__ import annotations

import doctest
import itertools
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.protocol import connection
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.command import FLAG_RESPONSE, OpaqueSequence, RemotingCommand
from rocketq.protocol.connection import (
    PAUSE_READING,
    RESUME_READING,
    Admission,
    Busy,
    CheckBody,
    ConnectionCore,
    Event,
    LateResponse,
    NotSupported,
    ProtocolError,
    Refused,
    RequestArrived,
    ResponseArrived,
    StrayResponse,
)
from rocketq.protocol.frame import FrameDecoder, encode_frame

HANDLERS = {10: "send", 11: "pull", 34: "heartbeat"}


def new_core(**kwargs: object) -> ConnectionCore[str, str]:
    return ConnectionCore(HANDLERS.get, **kwargs)  # type: ignore[arg-type]


def drain(core: ConnectionCore[str, str], now: float = 0.0) -> list[Event[str, str]]:
    events = []
    while (event := core.next_event(now)) is not None:
        events.append(event)
        if isinstance(event, ProtocolError):
            break
    return events


def chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


def response(opaque: int, body: bytes = b"") -> RemotingCommand:
    return RemotingCommand(code=0, opaque=opaque, flag=FLAG_RESPONSE, body=body)


def test_module_doctests() -> None:
    failures, tried = doctest.testmod(connection)
    assert tried
    assert not failures


# ------------------------------------------------------------------------------ bytes to events

frames = st.lists(
    st.tuples(
        st.sampled_from(["request", "oneway", "response", "stray"]),
        st.sampled_from([10, 11, 34, 99, 310]),
        st.binary(max_size=40),
    ),
    max_size=12,
)


@given(frames=frames, cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=30))
def test_any_split_of_a_stream_gives_the_events_of_the_whole_stream(
    frames: list[tuple[str, int, bytes]], cuts: list[int]
) -> None:
    core = new_core(opaques=OpaqueSequence(1))
    waiting: dict[int, str] = {}
    stream = b""
    for i, (kind, code, body) in enumerate(frames):
        if kind == "response":  # an answer to a request sent here
            request = RemotingCommand.request(code)
            core.send_request(request, f"waiter{i}", now=0.0, timeout=10.0)
            waiting[request.opaque] = f"waiter{i}"
            stream += encode_frame(response(request.opaque, body))
        elif kind == "stray":
            stream += encode_frame(response(-1000 - i, body))
        else:
            stream += encode_frame(
                RemotingCommand.request(code, body=body, oneway=kind == "oneway", opaque=i)
            )
    events: list[Event[str, str]] = []
    for chunk in chunks(stream, cuts):
        assert core.receive_data(chunk, now=0.0) is None
        events.extend(drain(core))
    assert core.buffered == 0
    assert len(events) == len(frames)
    for (kind, code, body), event in zip(frames, events, strict=True):
        if kind == "response":
            assert isinstance(event, ResponseArrived)
            assert event.inflight.waiter == waiting.pop(event.response.opaque)
            assert event.response.body == body
        elif kind == "stray":
            assert isinstance(event, StrayResponse)
        elif code in HANDLERS:
            assert isinstance(event, RequestArrived)
            assert (event.request.code, event.request.body, event.handler) == (code, body, HANDLERS[code])
        else:
            assert isinstance(event, NotSupported)
            assert event.remark == f" request type {code} not supported"
            if kind == "oneway":
                assert event.response is None
            else:
                assert event.response is not None
                assert event.response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert not waiting
    assert core.pending == 0


@given(
    good=st.integers(min_value=0, max_value=5),
    bad_length=st.one_of(
        st.integers(min_value=-(2**31), max_value=3),
        st.integers(min_value=(1 << 20) - 3, max_value=2**31 - 1),
    ),
    cuts=st.lists(st.integers(min_value=0, max_value=2_000), max_size=10),
)
def test_bytes_that_are_not_a_frame_come_out_after_every_whole_command_before_them(
    good: int, bad_length: int, cuts: list[int]
) -> None:
    core: ConnectionCore[str, str] = ConnectionCore(HANDLERS.get, decoder=FrameDecoder(1 << 20))
    stream = b"".join(encode_frame(RemotingCommand.request(34, opaque=i)) for i in range(good))
    stream += bad_length.to_bytes(4, "big", signed=True) + b"\x00" * 8
    events: list[Event[str, str]] = []
    for chunk in chunks(stream, cuts):
        error = core.receive_data(chunk, now=0.0)
        if error is not None:
            events.append(error)
            break
        events.extend(drain(core))
        if events and isinstance(events[-1], ProtocolError):
            break
    else:
        events.extend(drain(core))
    requests = [e for e in events if isinstance(e, RequestArrived)]
    assert [e.request.opaque for e in requests] == list(range(len(requests)))
    assert isinstance(events[-1], ProtocolError)
    # the core never takes another command from a broken stream
    assert isinstance(core.next_event(0.0), ProtocolError)


# ------------------------------------------------------------------------------ responses in any order


@given(data=st.data(), n=st.integers(min_value=1, max_value=20))
def test_responses_in_any_order_wake_exactly_their_own_waiters(data: st.DataObject, n: int) -> None:
    core = new_core()
    sent = []
    for i in range(n):
        request = RemotingCommand.request(10, body=b"%d" % i)
        head, body = core.send_request(request, f"w{i}", now=0.0, timeout=5.0)
        # the bytes to write are the frame the codec makes of the numbered request
        assert head + body == encode_frame(request)
        assert request.flag == 0
        sent.append(request.opaque)
    abandoned = set(data.draw(st.sets(st.sampled_from(sent)), label="abandoned"))
    for opaque in abandoned:
        assert core.discard(opaque) is not None
    order = data.draw(st.permutations(sent), label="order")
    again = data.draw(st.lists(st.sampled_from(sent), max_size=5), label="answered twice")
    stream = b"".join(encode_frame(response(op, b"%d" % op)) for op in [*order, *again])
    cuts = data.draw(st.lists(st.integers(min_value=0, max_value=len(stream)), max_size=20), label="cuts")
    woken: dict[str, int] = {}
    late = stray = 0
    for chunk in chunks(stream, cuts):
        core.receive_data(chunk, now=1.0)
        for event in drain(core, now=1.0):
            if isinstance(event, ResponseArrived):
                assert event.inflight.waiter not in woken
                woken[event.inflight.waiter] = event.response.opaque
            elif isinstance(event, LateResponse):
                late += 1
            else:
                assert isinstance(event, StrayResponse)
                stray += 1
    assert woken == {f"w{i}": op for i, op in enumerate(sent) if op not in abandoned}
    # an abandoned request's first answer is late; any other answer again matches nothing
    assert late == len(abandoned)
    assert stray == len(again)
    assert core.pending == 0


# ------------------------------------------------------------------------------ deadlines


@given(
    requests=st.lists(
        st.tuples(st.floats(0, 100), st.one_of(st.none(), st.floats(0.001, 50))), min_size=1, max_size=25
    ),
    clock=st.lists(st.floats(0, 200), min_size=1, max_size=10),
)
def test_each_request_expires_once_at_the_first_look_past_its_deadline(
    requests: list[tuple[float, float | None]], clock: list[float]
) -> None:
    core = new_core()
    deadlines: dict[int, float | None] = {}
    for i, (sent_at, timeout) in enumerate(requests):
        request = RemotingCommand.request(11)
        if timeout is None:  # a handed-over request: its caller times it out
            opaque, _head, _body = core.prepare_request(request)
            core.track(opaque, 11, f"w{i}")
            deadlines[opaque] = None
        else:
            core.send_request(request, f"w{i}", now=sent_at, timeout=timeout, stated=timeout)
            deadlines[request.opaque] = sent_at + timeout
    expired: set[int] = set()
    for now in sorted(clock):
        live = [d for op, d in deadlines.items() if d is not None and op not in expired]
        assert core.next_deadline() == (min(live) if live else None)
        due = {op for op, d in deadlines.items() if d is not None and d <= now and op not in expired}
        got = core.expire(now)
        assert {e.opaque for e in got} == due
        times = [e.deadline or 0.0 for e in got]
        assert times == sorted(times)  # earliest first
        assert all(e.timeout is not None and e.deadline is not None for e in got)
        expired |= due
    assert core.pending == len(deadlines) - len(expired)
    # their answers, when they come, are late, not stray
    for opaque in expired:
        core.receive_data(encode_frame(response(opaque)), now=300.0)
        assert isinstance(core.next_event(300.0), LateResponse)
    assert {e.waiter for e in core.close()} == {
        f"w{i}" for i, op in enumerate(deadlines) if op not in expired
    }
    assert core.closed
    assert core.pending == 0


# ------------------------------------------------------------------------------ flow control


@dataclass
class Model:
    running: int = 0
    holds: int = 0
    yielded: bool = False
    writes_paused: bool = False
    stopped: bool = False

    def reads(self, max_in_flight: int, pause_on_write: bool) -> bool:
        return not (
            self.stopped
            or self.yielded
            or self.holds
            or self.running >= max_in_flight
            or (self.writes_paused and pause_on_write)
        )


operations = st.lists(
    st.sampled_from(["start", "finish", "hold", "release", "yield", "end", "pause_w", "resume_w", "stop"]),
    max_size=60,
)


@given(ops=operations, max_in_flight=st.integers(1, 4), pause_on_write=st.booleans())
def test_reading_pauses_and_resumes_exactly_when_the_model_says(
    ops: list[str], max_in_flight: int, pause_on_write: bool
) -> None:
    core = new_core(max_in_flight=max_in_flight, pause_reads_on_write_pressure=pause_on_write)
    model = Model()
    reading = True  # what the transport does, applying only the changes the core returns
    for op in ops:
        if op == "start":
            model.running += 1
            change = core.handler_started()
        elif op == "finish":
            if not model.running:
                continue
            model.running -= 1
            change = core.handler_finished()
        elif op == "hold":
            model.holds += 1
            change = core.hold()
        elif op == "release":
            if not model.holds:
                continue
            model.holds -= 1
            change = core.release(now=1.0)
        elif op == "yield":
            model.yielded = True
            change = core.yield_turn()
        elif op == "end":
            model.yielded = False
            change = core.end_turn()
        elif op == "pause_w":
            model.writes_paused = True
            change = core.pause_writing()
        elif op == "resume_w":
            model.writes_paused = False
            change = core.resume_writing()
        else:
            model.stopped = True
            change = core.stop_reading()
        # a change is only ever a real one: never pause what is paused, nor resume what reads
        if change is PAUSE_READING:
            assert reading
            reading = False
        elif change is RESUME_READING:
            assert not reading
            reading = True
        else:
            assert change is None
        assert reading == model.reads(max_in_flight, pause_on_write) == (not core.reading_paused)
    core.close()
    assert core.hold() is None  # a closed connection changes nothing


# ------------------------------------------------------------------------------ admission


class Limit:
    def __init__(self, most: int) -> None:
        self.most = most

    def refusal(self, code: int, body: bytes) -> str | None:
        return f"code {code}: {len(body)} > {self.most}" if len(body) > self.most else None


@dataclass
class Budget:
    used: int = 0
    limit: int = 1 << 30


@given(
    n=st.integers(1, 8),
    wait=st.floats(0.0, 1.0),
    limit=st.floats(0.001, 0.5),
)
def test_requests_that_waited_over_their_limit_are_busy_with_the_queue_behind_them(
    n: int, wait: float, limit: float
) -> None:
    core = new_core(admission=Admission(wait_limits={10: limit}))
    core.receive_data(
        b"".join(encode_frame(RemotingCommand.request(10, opaque=i)) for i in range(n)), now=5.0
    )
    now = 5.0 + wait
    waited = now - 5.0  # as the clock gives it
    events = drain(core, now=now)
    assert len(events) == n
    if waited >= limit:
        assert all(isinstance(e, Busy) for e in events)
        assert [e.queued for e in events] == list(range(n - 1, -1, -1))  # type: ignore[union-attr]
        assert all(e.waited == waited and e.limit == limit for e in events)  # type: ignore[union-attr]
    else:
        assert all(isinstance(e, RequestArrived) for e in events)
    # the clock starts again with the next read once every whole frame was taken
    core.receive_data(encode_frame(RemotingCommand.request(10)), now=100.0)
    assert isinstance(core.next_event(100.0), RequestArrived)


def test_a_hold_restarts_the_queue_time_of_the_requests_behind_it() -> None:
    core = new_core(admission=Admission(wait_limits={10: 0.2}))
    core.receive_data(encode_frame(RemotingCommand.request(10)) * 2, now=0.0)
    assert isinstance(core.next_event(0.0), RequestArrived)
    core.hold()
    assert core.release(now=3.0) is RESUME_READING
    assert isinstance(core.next_event(3.1), RequestArrived)  # waited 0.1 s since the release


@given(
    size=st.integers(0, 300), most=st.integers(0, 300), threshold=st.one_of(st.none(), st.integers(0, 300))
)
def test_bodies_over_their_codes_limit_are_refused_or_checked_off_the_loop(
    size: int, most: int, threshold: int | None
) -> None:
    admission = Admission(body_limits={10: Limit(most)}, check_from=0, offload_threshold=threshold)
    core = new_core(admission=admission)
    request = RemotingCommand.request(10, body=b"x" * size)
    core.receive_data(encode_frame(request), now=0.0)
    event = core.next_event(0.0)
    if threshold is not None and size > threshold:
        assert isinstance(event, CheckBody)
        assert isinstance(event.limit, Limit)
        # once checked, only the handler lookup remains
        assert isinstance(core.dispatch(event.request, 0.0, checked=True), RequestArrived)
    elif size > most:
        assert isinstance(event, Refused)
        assert event.remark == f"code 10: {size} > {most}"
    else:
        assert isinstance(event, RequestArrived)
    # a code without a limit is never checked
    core.receive_data(encode_frame(RemotingCommand.request(11, body=b"x" * size)), now=0.0)
    assert isinstance(core.next_event(0.0), RequestArrived)


@given(cuts=st.lists(st.integers(0, 400), max_size=12), limit=st.integers(1, 400))
def test_undecoded_bytes_are_charged_to_the_budget_and_given_back(cuts: list[int], limit: int) -> None:
    budget = Budget(limit=limit)
    core = new_core(admission=Admission(budget=budget))
    stream = b"".join(encode_frame(RemotingCommand.request(34, body=b"y" * 50)) for _ in range(4))
    for chunk in chunks(stream, cuts):
        core.receive_data(chunk, now=1.0)
        over = core.settle(now=1.0)  # the driver takes nothing: what arrived stays undecoded
        assert budget.used == core.buffered
        assert over == (core.buffered > limit)
        if core.buffered:
            assert core.frame_started == 1.0
    drain(core)
    core.settle(now=2.0)
    assert budget.used == 0
    assert core.frame_started is None
    core.receive_data(stream[:7], now=3.0)
    core.settle(now=3.0)
    core.release_budget()
    assert budget.used == 0


def test_a_response_that_cannot_be_encoded_becomes_a_bare_system_error() -> None:
    request = RemotingCommand.request(10, opaque=42)
    bad = request.response(code=0, ext_fields={"k": "v"})
    bad.ext_fields["k"] = 7  # type: ignore[assignment]  # not a string: cannot be encoded
    head, body, error = ConnectionCore.send_response(request, bad)
    assert error is not None
    decoder = FrameDecoder()
    decoder.receive_data(head + body)
    answer = decoder.next_command()
    assert answer is not None
    assert (answer.code, answer.opaque, answer.is_response) == (ResponseCode.SYSTEM_ERROR, 42, True)


@settings(max_examples=50)
@given(code=st.integers(0, 400), body=st.binary(max_size=20))
def test_oneway_requests_are_numbered_and_marked(code: int, body: bytes) -> None:
    core = new_core()
    request = RemotingCommand.request(code, body=body)
    head, tail = core.send_oneway(request)
    assert request.is_oneway
    assert not request.is_response
    assert head + tail == encode_frame(request)
    assert core.pending == 0
