"""A process appending under sync flush is killed with SIGKILL; every acknowledged message survives."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rocketq.protocol.message import decode_messages, encode_message
from rocketq.store import GetMessageStatus, MessageStore, StoreConfig

pytestmark = pytest.mark.integration

SEGMENT = 64 * 1024

CHILD = textwrap.dedent(
    """
    import sys, threading
    from rocketq.protocol.message import encode_message
    from rocketq.store import MessageStore, StoreConfig

    root, segment = sys.argv[1], int(sys.argv[2])
    # small index files (so the kill finds several, one half flushed) flushed every 50 ms
    config = StoreConfig(
        flush="sync",
        commit_log_segment_size=segment,
        max_hash_slot_num=1021,
        max_index_num=1500,
        flush_consume_queue_interval=0.05,
    )
    store = MessageStore(root, config)
    out = threading.Lock()

    def keyed(body: bytes, t: int, i: int, k: int = 0) -> bytes:
        props = f"KEYS\x01t{t}-i{i} thread-{t}\x02UNIQ_KEY\x01U{t}-{i}-{k}"
        return encode_message(topic="T", body=body, queue_id=t, properties=props)

    def run(t: int) -> None:
        for i in range(20_000):  # bounded: the parent kills us long before
            body = b"t%d-i%d-" % (t, i) + bytes(200)
            if i % 5 == 0:  # some batches too
                recs = [keyed(body + bytes([k]), t, i, k) for k in range(3)]
                result = store.put_messages("T", t, recs)
            else:
                result = store.put_message("T", t, keyed(body, t, i))
            result.durable.result()
            with out:
                for k in range(result.message_count):
                    sys.stdout.write(f"{t} {result.queue_offset + k} {result.commit_log_offsets[k]} {i}\\n")
                sys.stdout.flush()

    threads = [threading.Thread(target=run, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    """
)


@pytest.mark.timeout(120)
def test_sigkill_during_sync_flush_appends_loses_no_acknowledged_message(tmp_path: Path) -> None:
    root = tmp_path / "store"
    acked: list[tuple[int, int, int, int]] = []
    with subprocess.Popen(
        [sys.executable, "-c", CHILD, str(root), str(SEGMENT)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as child:
        try:
            assert child.stdout is not None
            for line in child.stdout:
                queue, queue_offset, commit_offset, i = map(int, line.split())
                acked.append((queue, queue_offset, commit_offset, i))
                if len(acked) >= 1500:
                    break
            else:
                pytest.fail(f"the child stopped early: {child.stderr.read() if child.stderr else ''}")
            os.kill(child.pid, signal.SIGKILL)  # in the middle of its appends
        finally:
            child.kill()
            child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    assert (root / "abort").exists()  # it really died without closing
    assert len(os.listdir(root / "commitlog")) > 2  # and crossed segment boundaries

    config = StoreConfig(commit_log_segment_size=SEGMENT, max_hash_slot_num=1021, max_index_num=1500)
    with MessageStore(root, config, start_services=False) as store:
        for queue, queue_offset, commit_offset, i in acked:
            got = store.get_messages("T", queue, queue_offset, 1)
            assert got.status is GetMessageStatus.FOUND, (queue, queue_offset, got.status)
            (msg,) = decode_messages(got.data)
            assert msg.commit_log_offset == commit_offset
            assert msg.body.startswith(b"t%d-i%d-" % (queue, i))
        # the message index was repaired and completed: every acknowledged message is found by
        # its key (with the others of its batch, some maybe stored but not yet read as acked)
        # and by its unique id, exactly once
        assert store.index is not None
        assert len(store.index.files) > 3
        by_key: dict[tuple[int, int], list[int]] = {}
        for queue, _, commit_offset, i in acked:
            by_key.setdefault((queue, i), []).append(commit_offset)
        for (queue, i), offsets in by_key.items():
            found = [
                m.commit_log_offset
                for m in decode_messages(
                    b"".join(store.query_message("T", f"t{queue}-i{i}", 64, 0, 2**62).messages)
                )
            ]
            assert set(offsets) <= set(found), (queue, i)
            assert len(found) == len(set(found))
            uniq = [f"U{queue}-{i}-{k}" for k in range(len(offsets))]
            hits = [store.query_message("T", u, 32, 0, 2**62).messages for u in uniq]
            assert [len(h) for h in hits] == [1] * len(offsets)
        # the queues are dense and consistent after recovery: every offset up to the max reads back
        for queue in range(4):
            offset = 0
            while offset < store.max_offset("T", queue):
                got = store.get_messages("T", queue, offset, 32)
                assert got.status is GetMessageStatus.FOUND
                assert [m.queue_offset for m in decode_messages(got.data)] == list(
                    range(offset, got.next_begin_offset)
                )
                offset = got.next_begin_offset
        # and the store takes new appends where the recovered log ends
        end = store.commit_log_max_offset
        assert end > max(c for _, _, c, _ in acked)
        result = store.put_message("T", 0, encode_message(topic="T", body=b"after", queue_id=0))
        assert result.queue_offset == store.max_offset("T", 0) - 1
        assert result.commit_log_offset >= end


FSIZE_CHILD = textwrap.dedent(
    """
    import resource, signal, sys
    from rocketq.errors import StoreFullError
    from rocketq.protocol.message import encode_message
    from rocketq.store import MessageStore, StoreConfig

    root = sys.argv[1]
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # get EFBIG instead of being killed
    store = MessageStore(root, StoreConfig(commit_log_segment_size=64 * 1024), start_services=False)
    rec = encode_message(topic="T", body=bytes(1000), queue_id=0)
    acked = 0
    for _ in range(40):  # fits the first segment
        store.put_message("T", 0, rec)
        acked += 1
    # the kernel now refuses writes past 48 KiB of any file: the segment's tail (one write
    # straddles the limit and is cut short) and any new segment
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (48 * 1024, hard))
    failures = 0
    for _ in range(40):
        try:
            store.put_message("T", 0, rec)
            acked += 1
        except StoreFullError:
            failures += 1
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    for _ in range(40):  # room again
        store.put_message("T", 0, rec)
        acked += 1
    store.close()
    print(acked, failures)
    """
)


def test_a_real_kernel_write_refusal_fails_appends_cleanly(tmp_path: Path) -> None:
    """RLIMIT_FSIZE makes the kernel refuse to grow files (EFBIG), as a full disk refuses blocks."""
    root = tmp_path / "store"
    done = subprocess.run(
        [sys.executable, "-c", FSIZE_CHILD, str(root)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    acked, failures = map(int, done.stdout.split())
    assert failures > 0
    assert acked == 120 - failures
    with MessageStore(root, StoreConfig(commit_log_segment_size=64 * 1024), start_services=False) as store:
        assert store.max_offset("T", 0) == acked
        offset = 0
        while offset < acked:
            got = store.get_messages("T", 0, offset, 32)
            assert got.status is GetMessageStatus.FOUND
            offset = got.next_begin_offset
