"""The reader's column building: the fast path for plain records gives what the general codec gives."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from rocketq.errors import RemoteProtocolError
from rocketq.protocol.message import encode_message
from rocketq.protocol.message_id import HostPort
from rocketq.spark.reader import ARROW_SCHEMA, ColumnBuilder

V4 = HostPort("10.0.0.7", 5555)
V6 = HostPort("fd00::2", 6666)
STORE = HostPort("127.0.0.1", 10911)


def record(offset: int, *, props: dict[str, str] | None = None, **kw: Any) -> bytes:
    base: dict[str, Any] = {
        "topic": "T",
        "body": f"body-{offset}".encode(),
        "properties": {"TAGS": "A", "KEYS": f"k{offset}", "UNIQ_KEY": f"U{offset:030d}"}
        if props is None
        else props,
        "queue_id": 1,
        "born_timestamp": 1_700_000_000_000 + offset,
        "born_host": V4,
        "store_timestamp": 1_700_000_000_500 + offset,
        "store_host": STORE,
        "reconsume_times": offset % 3,
        "queue_offset": offset,
        "commit_log_offset": 1000 * offset,
    }
    base.update(kw)
    return encode_message(**base)


def both(
    body: bytes, end: int = 10**9, tags: frozenset[str] | None = None
) -> tuple[pa.RecordBatch, pa.RecordBatch]:
    fast, slow = ColumnBuilder(), ColumnBuilder()
    assert fast.add_body(body, end, tags) == slow._add_decoded(body, end, tags)
    return fast.record_batch("T", "b", 1), slow.record_batch("T", "b", 1)


def test_plain_records_match_the_codec_and_the_schema() -> None:
    body = b"".join(record(i) for i in range(20))
    fast, slow = both(body)
    assert fast.schema == ARROW_SCHEMA
    assert fast.equals(slow)
    row = fast.slice(3, 1).to_pylist()[0]
    assert row["msg_id"] == "U" + "3".zfill(30)
    assert row["born_host"] == "10.0.0.7:5555"
    assert row["body"] == b"body-3"
    assert row["reconsume_times"] == 0
    assert dict(row["properties"]) == {"TAGS": "A", "KEYS": "k3", "UNIQ_KEY": "U" + "3".zfill(30)}
    assert row["store_timestamp"].timestamp() == pytest.approx(1_700_000_000.503)


def test_other_record_kinds_fall_back_and_agree() -> None:
    import zlib

    body = b"".join(
        [
            record(0),
            record(1, props={"TAGS": "B"}),  # no UNIQ_KEY: the offset msg id
            record(2, born_host=V6),
            record(3, body=zlib.compress(b"squeezed" * 100), sys_flag=0x1),
            record(4, topic="L" * 200),  # V2 magic
            record(5),
        ]
    )
    fast, slow = both(body)
    assert fast.equals(slow)
    rows = fast.to_pylist()
    assert rows[1]["msg_id"] == "7F00000100002A9F00000000000003E8"
    assert rows[2]["born_host"] == "[fd00::2]:6666"
    assert rows[3]["body"] == b"squeezed" * 100


def test_end_and_tags_are_honoured() -> None:
    body = b"".join(record(i, props={"TAGS": "AB"[i % 2], "UNIQ_KEY": f"U{i}"}) for i in range(10))
    fast, slow = both(body, end=6, tags=frozenset({"B"}))
    assert fast.equals(slow)
    assert fast.column("queue_offset").to_pylist() == [1, 3, 5]


def test_malformed_bodies_raise_the_codecs_error() -> None:
    good = record(0)
    bad = good[:-3] + b"\xff\xfe\xfd"
    with pytest.raises(RemoteProtocolError):
        ColumnBuilder().add_body(good + bad[:-1], 10**9, None)
    with pytest.raises(RemoteProtocolError):
        ColumnBuilder().add_body(good[:50], 10**9, None)
