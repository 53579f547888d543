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


# ------------------------------------------------------------------------- the vectorised path

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from rocketq.spark import columns  # noqa: E402
from rocketq.spark.columns import decode_columns  # noqa: E402


def codec_batch(body: bytes, end: int = 10**9, tags: frozenset[str] | None = None) -> pa.RecordBatch:
    builder = ColumnBuilder()
    builder._add_decoded(body, end, tags)
    return builder.record_batch("T", "b", 1)


@pytest.fixture(params=["name table", "hash grouping"])
def dedup(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways duplicate property names are folded: the (row, name) table, and Arrow's hash
    grouping that takes over when names are too many for a table."""
    if request.param == "hash grouping":
        monkeypatch.setattr(columns, "_MAX_NAME_TABLE", 0)
    return str(request.param)


def test_vectorised_columns_equal_the_codecs(dedup: str) -> None:
    body = b"".join(record(i, born_host=HostPort("10.0.0.7", 5000 + i % 3)) for i in range(50))
    body += record(50, props={"UNIQ_KEY": "U50", "A": "1\x01x"})  # a value holding the separator
    # a name twice, as a broker stores batched messages (WAIT again after CLUSTER): first place, last value
    body += record(
        51, properties="TAGS\x01A\x02WAIT\x01true\x02UNIQ_KEY\x01U51\x02CLUSTER\x01c\x02WAIT\x01no"
    )
    for end, tags in ((10**9, None), (30, None), (10**9, frozenset({"A"})), (10**9, frozenset({"Z"}))):
        batch = decode_columns(body, topic="T", broker="b", end=end, tag_set=tags)
        assert batch is not None
        assert batch.equals(codec_batch(body, end, tags))
    batch = decode_columns(body, topic="T", broker="b", end=10**9, tag_set=None)
    assert batch is not None
    assert batch.column("properties")[51].as_py() == [
        ("TAGS", "A"),
        ("WAIT", "no"),
        ("UNIQ_KEY", "U51"),
        ("CLUSTER", "c"),
    ]
    empty = decode_columns(b"", topic="T", broker="b", end=10, tag_set=None)
    assert empty is not None
    assert (empty.num_rows, empty.schema) == (0, ARROW_SCHEMA)


@pytest.mark.parametrize(
    "odd",
    [
        record(1, props={"TAGS": "B"}),  # no unique key
        record(1, born_host=V6),
        record(1, topic="L" * 200),
        record(1, props={"UNIQ_KEY": "U1", "A": ""}),  # an empty value: RocketMQ skips the pair
    ],
)
def test_vectorised_path_leaves_other_records_to_the_codec(odd: bytes) -> None:
    body = record(0) + odd + record(2)
    assert decode_columns(body, topic="T", broker="b", end=10**9, tag_set=None) is None


def test_vectorised_path_refuses_malformed_buffers() -> None:
    good = record(0)
    assert decode_columns(good[:-1], topic="T", broker="b", end=10**9, tag_set=None) is None
    assert decode_columns(good + good[:40], topic="T", broker="b", end=10**9, tag_set=None) is None


_names = st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "WAIT", "a", "b", "", "ü"])
_values = st.text(alphabet=st.sampled_from(["x", "1", " ", "é", "\x01"]), max_size=4)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.tuples(_names, _values), max_size=5), min_size=1, max_size=6))
def test_vectorised_path_agrees_with_the_codec_or_declines(pairs: list[list[tuple[str, str]]]) -> None:
    for limit in (columns._MAX_NAME_TABLE, 0):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(columns, "_MAX_NAME_TABLE", limit)
            _agrees_or_declines(pairs)


def _agrees_or_declines(pairs: list[list[tuple[str, str]]]) -> None:
    records = []
    for i, row in enumerate(pairs):
        text = "\x02".join(f"{k}\x01{v}" for k, v in row)
        records.append(record(i, props={}, **({"properties": text} if text else {})))
    body = b"".join(records)
    batch = decode_columns(body, topic="T", broker="b", end=10**9, tag_set=None)
    if batch is not None:
        assert batch.equals(codec_batch(body))


@settings(max_examples=100, deadline=None)
@given(
    st.permutations(ARROW_SCHEMA.names).flatmap(
        lambda names: st.integers(1, len(names)).map(lambda k: names[:k])
    ),
    st.lists(st.sampled_from(["plain", "no unique key", "other tag"]), min_size=1, max_size=8),
    st.integers(0, 9),
    st.sampled_from([None, frozenset({"A"}), frozenset({"B", "Z"})]),
)
def test_a_projection_decodes_only_its_columns_and_agrees_with_the_codec(
    names: list[str], kinds: list[str], end: int, tags: frozenset[str] | None
) -> None:
    props = {
        "plain": lambda i: None,
        "no unique key": lambda i: {"TAGS": "A", "KEYS": f"k{i}"},
        "other tag": lambda i: {"TAGS": "B", "UNIQ_KEY": f"U{i}"},
    }
    body = b"".join(record(i, props=props[kind](i)) for i, kind in enumerate(kinds))
    full = decode_columns(body, topic="T", broker="b", end=end, tag_set=tags)
    part = decode_columns(body, topic="T", broker="b", end=end, tag_set=tags, columns=names)
    if full is not None:
        assert part is not None
    if part is not None:
        assert part.schema.names == names
        assert part.equals(codec_batch(body, end, tags).select(names))
    if "msg_id" not in names:
        assert part is not None  # only the offset message id needs the codec here
