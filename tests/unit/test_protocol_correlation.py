"""The correlation state machine: opaques, the in-flight table and deadlines by ``now``."""

from __future__ import annotations

import doctest

from hypothesis import given
from hypothesis import strategies as st

from rocketq.protocol import correlation
from rocketq.protocol.command import OpaqueSequence
from rocketq.protocol.correlation import Correlator
from tests.sourcemodule import source_module


def test_module_doctests() -> None:
    failures, tried = doctest.testmod(source_module(correlation))
    assert tried
    assert not failures


def test_opaques_wrap_like_a_java_int() -> None:
    c: Correlator[str] = Correlator(OpaqueSequence(2**31 - 1))
    assert [c.next_opaque() for _ in range(3)] == [2**31 - 1, -(2**31), -(2**31) + 1]


def test_opaques_skip_those_still_waiting() -> None:
    # after 2**32 requests the sequence comes round to a number a slow request still holds
    c: Correlator[str] = Correlator(iter([7, 7, 8]))
    first = c.next_opaque()
    c.add(first, 10, "long poll")
    assert c.next_opaque() == 8


def test_a_late_answer_after_expiry_matches_nothing() -> None:
    c: Correlator[str] = Correlator()
    op = c.next_opaque()
    c.add(op, 11, "pull", deadline=1.0)
    assert c.expire(now=0.5) == []
    [gone] = c.expire(now=1.0)
    assert (gone.opaque, gone.waiter) == (op, "pull")
    assert c.complete(op) is None
    assert len(c) == 0


def test_discard_forgets_and_drain_returns_everyone() -> None:
    c: Correlator[int] = Correlator()
    ops = [c.next_opaque() for _ in range(3)]
    for i, op in enumerate(ops):
        c.add(op, 10, i, deadline=None if i == 2 else 5.0)
    assert c.discard(ops[0]) is not None
    assert ops[0] not in c
    assert c.next_deadline() == 5.0
    assert sorted(e.waiter for e in c.drain()) == [1, 2]
    assert len(c) == 0
    assert c.next_deadline() is None


def test_a_reused_opaque_keeps_its_own_deadline() -> None:
    c: Correlator[str] = Correlator(OpaqueSequence(0))
    c.add(7, 10, "old", deadline=1.0)
    c.complete(7)
    c.add(7, 10, "new", deadline=9.0)  # the same opaque again, much later
    assert c.expire(now=2.0) == []  # the old heap entry does not expire the new request
    assert c.next_deadline() == 9.0


@given(st.lists(st.tuples(st.sampled_from(["add", "complete", "expire"]), st.integers(0, 20)), max_size=60))
def test_against_a_model(ops: list[tuple[str, int]]) -> None:
    """Whatever order requests are answered and time passes in, the table holds exactly the
    requests neither answered nor past their deadline."""
    c: Correlator[int] = Correlator()
    model: dict[int, float] = {}
    now = 0.0
    for op, n in ops:
        if op == "add":
            opaque = c.next_opaque()
            c.add(opaque, 1, opaque, deadline=now + n)
            model[opaque] = now + n
        elif op == "complete" and model:
            opaque = sorted(model)[n % len(model)]
            assert c.complete(opaque) is not None
            del model[opaque]
        else:
            now += n
            expired = {e.opaque for e in c.expire(now)}
            assert expired == {o for o, d in model.items() if d <= now}
            for o in expired:
                del model[o]
        assert len(c) == len(model)
        assert c.next_deadline() == (min(model.values()) if model else None)
