"""Model-based test: random appends, clean restarts and crashes against a list-of-lists model."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from rocketq.protocol.message import decode_messages, encode_message
from rocketq.protocol.properties import tags_code
from rocketq.store import GetMessageStatus, MessageStore, StoreConfig

CFG = StoreConfig(commit_log_segment_size=4096, consume_queue_entries_per_file=4, max_transfer_count=3)
QUEUES = 3
TAGS = ("a", "b")


class StoreMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="rocketq-model-"))
        self.store: MessageStore | None = MessageStore(self.dir, CFG, start_services=False)
        self.model: list[list[tuple[bytes, str]]] = [[] for _ in range(QUEUES)]
        self.counter = 0
        self.last: tuple[int, int, int] | None = None  # queue, commit-log offset, size of the newest record

    def _body(self, size: int) -> bytes:
        self.counter += 1
        return b"%06d" % self.counter + b"." * size

    @precondition(lambda self: self.store is not None)
    @rule(queue=st.integers(0, QUEUES - 1), size=st.integers(0, 900), tag=st.sampled_from(TAGS))
    def put_one(self, queue: int, size: int, tag: str) -> None:
        assert self.store is not None
        body = self._body(size)
        rec = encode_message(topic="T", body=body, properties={"TAGS": tag}, queue_id=queue)
        result = self.store.put_message("T", queue, rec, tags_code(tag))
        assert result.queue_offset == len(self.model[queue])
        self.model[queue].append((body, tag))
        self.last = (queue, result.commit_log_offset, result.wrote_bytes)

    @precondition(lambda self: self.store is not None)
    @rule(queue=st.integers(0, QUEUES - 1), sizes=st.lists(st.integers(0, 300), min_size=1, max_size=6))
    def put_batch(self, queue: int, sizes: list[int]) -> None:
        assert self.store is not None
        bodies = [self._body(s) for s in sizes]
        recs = [encode_message(topic="T", body=b, properties={"TAGS": "a"}, queue_id=queue) for b in bodies]
        result = self.store.put_messages("T", queue, recs, [tags_code("a")] * len(recs))
        assert result.queue_offset == len(self.model[queue])
        self.model[queue].extend((b, "a") for b in bodies)
        self.last = (queue, result.commit_log_offsets[-1], len(recs[-1]))

    @precondition(lambda self: self.store is not None)
    @rule(crash=st.booleans())
    def restart(self, crash: bool) -> None:
        assert self.store is not None
        self.store.close()
        if crash:
            (self.dir / "abort").touch()
        self.store = MessageStore(self.dir, CFG, start_services=False)

    @precondition(lambda self: self.store is not None and self.last is not None)
    @rule()
    def crash_with_a_torn_last_record(self) -> None:
        assert self.store is not None
        assert self.last is not None
        self.store.close()
        queue, offset, size = self.last
        seg = CFG.commit_log_segment_size
        path = self.dir / "commitlog" / f"{offset - offset % seg:020d}"
        with path.open("r+b") as f:
            f.seek(offset % seg + size // 2)
            f.write(bytes(size - size // 2))  # the second half never reached the disk
        (self.dir / "abort").touch()
        self.model[queue].pop()
        self.last = None
        self.store = MessageStore(self.dir, CFG, start_services=False)

    @invariant()
    def queues_match_the_model(self) -> None:
        if self.store is None:
            return
        for queue in range(QUEUES):
            expected = self.model[queue]
            assert self.store.max_offset("T", queue) == len(expected)
            got: list[tuple[bytes, str]] = []
            offset = 0
            while True:
                res = self.store.get_messages("T", queue, offset, 32)
                if res.status is not GetMessageStatus.FOUND:
                    break
                got += [(m.body, m.tags or "") for m in decode_messages(res.data)]
                offset = res.next_begin_offset
            assert got == expected
            tagged = self.store.get_messages("T", queue, 0, 32, {tags_code("b")})
            want_b = [b for b, t in expected[: tagged.next_begin_offset] if t == "b"]
            assert [m.body for m in decode_messages(tagged.data)] == want_b

    def teardown(self) -> None:
        if self.store is not None:
            self.store.close()
        shutil.rmtree(self.dir, ignore_errors=True)


StoreMachine.TestCase.settings = settings(
    max_examples=20, stateful_step_count=20, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestStoreModel = StoreMachine.TestCase
