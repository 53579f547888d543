"""Stored RocketMQ records to Arrow columns, vectorised: the reader's fast path.

:func:`decode_columns` takes a buffer of stored records (pull bodies joined together) and builds
the record batch of :data:`ARROW_SCHEMA` with numpy and Arrow compute kernels instead of a Python
loop per message: Python only walks the record sizes, then every fixed field is gathered at once,
bodies and property strings are cut out of the buffer as Arrow slices, and the property strings
are split by ``pyarrow.compute``.

It handles the records producers write nearly always - V1 magic, IPv4 hosts, an uncompressed
body, well-formed properties (every pair ``name\\x01value`` with both parts non-empty; a name
given twice keeps its first place and its last value, as in the codec's dict) with a unique key -
and answers ``None`` for a buffer holding anything else (or anything malformed), so the caller
decodes that buffer with :mod:`rocketq.protocol.message`, which gives the same values and raises
the codec's errors. The record layout is documented there.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rocketq.protocol.message import MESSAGE_MAGIC_CODE, MessageSysFlag
from rocketq.protocol.message_id import HostPort
from rocketq.protocol.properties import MessageConst

__all__ = ["ARROW_SCHEMA", "PROPERTY_COLUMNS", "TIMESTAMP", "decode_columns"]

TIMESTAMP: Final = pa.timestamp("us", tz="UTC")
ARROW_SCHEMA: Final = pa.schema(
    [
        pa.field("topic", pa.string()),
        pa.field("broker", pa.string()),
        pa.field("queue_id", pa.int32()),
        pa.field("queue_offset", pa.int64()),
        pa.field("msg_id", pa.string()),
        pa.field("tags", pa.string()),
        pa.field("keys", pa.string()),
        pa.field("body", pa.binary()),
        pa.field("born_timestamp", TIMESTAMP),
        pa.field("store_timestamp", TIMESTAMP),
        pa.field("born_host", pa.string()),
        pa.field("reconsume_times", pa.int32()),
        pa.field("properties", pa.map_(pa.string(), pa.string())),
    ]
)
"""The Arrow schema of a record batch: Spark's read schema, type for type."""

_I32: Final = struct.Struct(">i")
_HEAD: Final = 88
"""Bytes of a V1 / IPv4 record before its body."""
_MIN_RECORD: Final = _HEAD + 3
_SLOW_FLAGS: Final = int(MessageSysFlag.COMPRESSED | MessageSysFlag.BORNHOST_V6 | MessageSysFlag.STOREHOST_V6)
_WIDTH_TYPES: Final = {2: ">i2", 4: ">i4", 8: ">i8"}


def _gather(u8: np.ndarray, at: np.ndarray, width: int) -> np.ndarray:
    """The big-endian ints of ``width`` bytes starting at each of ``at``, as int64."""
    idx = at[:, None] + np.arange(width)
    return u8[idx].reshape(-1).view(_WIDTH_TYPES[width]).astype(np.int64)


def _slices(data: pa.Buffer, begins: np.ndarray, ends: np.ndarray, kind: pa.DataType) -> pa.Array:
    """``data[begins[i]:ends[i]]`` for every i, as one binary or string array (copied once).

    The slices are in order and do not overlap, so one array whose even elements are the slices
    and odd elements the gaps between them describes them all; taking the even ones compacts it.
    """
    n = len(begins)
    offsets = np.empty(2 * n, dtype=np.int32)
    offsets[0::2] = begins
    offsets[1::2] = ends
    spread = pa.Array.from_buffers(kind, 2 * n - 1, [None, pa.py_buffer(offsets), data])
    return spread.take(pa.array(np.arange(0, 2 * n, 2, dtype=np.int32)))


def _lookup(names: pa.Array, values: pa.Array, parents: np.ndarray, rows: int, name: str) -> pa.Array:
    """Per row, the value of property ``name`` (null where the row has none)."""
    hits = np.flatnonzero(pc.equal(names, name).to_numpy(zero_copy_only=False))
    index = np.full(rows, -1, dtype=np.int64)
    index[parents[hits]] = hits
    return values.take(pa.array(index, mask=index < 0))


_MAX_NAME_TABLE: Final = 1 << 20
"""Most cells (rows x distinct names) of the table :func:`_first_place_last_value` dedups with;
past it (many distinct property names) Arrow's hash grouping does it."""


def _first_place_last_value(
    names: pa.Array, parents: np.ndarray, rows: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """``None`` when no row names a property twice, else per kept (row, name): the position of
    its first pair (in order) and of its last one (the dict semantics of the codec)."""
    n = len(names)
    position = np.arange(n, dtype=np.int64)
    encoded = pc.dictionary_encode(names)
    width = len(encoded.dictionary)
    if rows * width <= _MAX_NAME_TABLE:
        # names are few (TAGS, KEYS, WAIT, UNIQ_KEY...): one cell per (row, name), min/max at once
        cell = parents.astype(np.int64) * width + encoded.indices.to_numpy()
        first_at = np.full(rows * width, n, dtype=np.int64)
        np.minimum.at(first_at, cell, position)
        kept = first_at[cell] == position
        if kept.all():
            return None
        last_at = np.full(rows * width, -1, dtype=np.int64)
        np.maximum.at(last_at, cell, position)
        return position[kept], last_at[cell[kept]]
    row_names = pc.binary_join_element_wise(pc.cast(pa.array(parents), pa.string()), names, "\x00")
    if pc.count_distinct(row_names).as_py() == n:
        return None
    groups = (
        pa.table({"k": row_names, "i": pa.array(position)})
        .group_by("k", use_threads=False)
        .aggregate([("i", "min"), ("i", "max")])
    )
    first = groups["i_min"].to_numpy()
    order = np.argsort(first, kind="stable")
    return first[order], groups["i_max"].to_numpy()[order]


PROPERTY_COLUMNS: Final = frozenset({"msg_id", "tags", "keys", "properties"})
"""The columns cut out of a record's properties (splitting them is most of the decoding)."""


def decode_columns(
    buf: bytes,
    *,
    topic: str,
    broker: str,
    end: int,
    tag_set: frozenset[str] | None,
    columns: Sequence[str] | None = None,
) -> pa.RecordBatch | None:
    """The messages of ``buf`` below queue offset ``end`` whose tag is in ``tag_set`` (all when
    ``None``), as a record batch of ``columns`` in that order (``None``: every column of
    :data:`ARROW_SCHEMA`); ``None`` when ``buf`` holds a record this path does not handle.

    Only what ``columns`` (and ``tag_set``) need is decoded: without ``body`` no body is copied,
    without the property columns and a tag filter the properties are not split (nor checked
    beyond their length)."""
    names = ARROW_SCHEMA.names if columns is None else list(columns)
    need = set(names)
    size_all = len(buf)
    if size_all >= 1 << 31:
        return None  # Arrow's 32-bit offsets index the buffer
    starts: list[int] = []
    append = starts.append
    unpack = _I32.unpack_from
    pos = 0
    while pos < size_all:
        if size_all - pos < _MIN_RECORD:
            return None
        size = unpack(buf, pos)[0]
        if size < _MIN_RECORD or pos + size > size_all:
            return None
        append(pos)
        pos += size
    rows = len(starts)
    if rows == 0:
        return pa.RecordBatch.from_pylist([], schema=ARROW_SCHEMA)
    u8 = np.frombuffer(buf, dtype=np.uint8)
    at = np.array(starts, dtype=np.int64)
    rec_end = np.append(at[1:], size_all)
    magic = _gather(u8, at + 4, 4)
    sys_flag = _gather(u8, at + 36, 4)
    if (magic != MESSAGE_MAGIC_CODE).any() or (sys_flag & _SLOW_FLAGS).any():
        return None
    body_len = _gather(u8, at + 84, 4)
    body_begin = at + _HEAD
    body_end = body_begin + body_len
    if (body_len < 0).any() or (body_end + 3 > rec_end).any():
        return None
    topic_end = body_end + 1 + u8[body_end].astype(np.int64)
    if (topic_end + 2 > rec_end).any():
        return None
    props_len = _gather(u8, topic_end, 2)
    if (props_len <= 0).any() or (topic_end + 2 + props_len != rec_end).any():
        return None
    data = pa.py_buffer(buf)
    made: dict[str, pa.Array] = {}
    tags: pa.Array | None = None
    if need & PROPERTY_COLUMNS or tag_set is not None:
        props = _properties(data, topic_end + 2, rec_end, rows, need)
        if props is None:
            return None
        made.update(props)
        tags = props["tags"]
    queue_offset = _gather(u8, at + 20, 8)
    for name in names:
        if name in made:
            continue
        if name == "topic":
            made[name] = pa.repeat(pa.scalar(topic, pa.string()), rows)
        elif name == "broker":
            made[name] = pa.repeat(pa.scalar(broker, pa.string()), rows)
        elif name == "queue_id":
            made[name] = pa.array(_gather(u8, at + 12, 4).astype(np.int32))
        elif name == "queue_offset":
            made[name] = pa.array(queue_offset)
        elif name == "body":
            made[name] = _slices(data, body_begin, body_end, pa.binary())
        elif name == "born_timestamp":
            made[name] = pa.array(_gather(u8, at + 40, 8) * 1000).cast(TIMESTAMP)
        elif name == "store_timestamp":
            made[name] = pa.array(_gather(u8, at + 56, 8) * 1000).cast(TIMESTAMP)
        elif name == "born_host":
            hosts = u8[(at + 48)[:, None] + np.arange(8)].reshape(-1).view(">u8")
            unique, inverse = np.unique(hosts, return_inverse=True)
            host_text = pa.array(
                [str(HostPort.from_packed(int(h).to_bytes(8, "big"))) for h in unique], pa.string()
            )
            made[name] = host_text.take(pa.array(inverse.reshape(-1).astype(np.int64)))
        elif name == "reconsume_times":
            made[name] = pa.array(_gather(u8, at + 72, 4).astype(np.int32))
        else:  # pragma: no cover - the reader checks user schemas against ARROW_SCHEMA
            raise KeyError(name)
    schema = ARROW_SCHEMA if columns is None else pa.schema([ARROW_SCHEMA.field(n) for n in names])
    batch = pa.RecordBatch.from_arrays([made[n] for n in names], schema=schema)
    keep = queue_offset < end
    if tag_set is not None:
        assert tags is not None
        in_set = pc.fill_null(pc.is_in(tags, value_set=pa.array(sorted(tag_set), pa.string())), False)
        keep &= in_set.to_numpy(zero_copy_only=False)
    if keep.all():
        return batch
    return batch.filter(pa.array(keep))


def _properties(
    data: pa.Buffer, begins: np.ndarray, ends: np.ndarray, rows: int, need: set[str]
) -> dict[str, pa.Array] | None:
    """The ``msg_id``, ``tags``, ``keys`` and ``properties`` columns from the property strings at
    ``data[begins[i]:ends[i]]`` (``msg_id`` only when in ``need``); ``None`` when one of them is
    malformed, or a message needed for ``msg_id`` has no unique key (the codec's cases)."""
    props_text = _slices(data, begins, ends, pa.string())
    try:
        props_text.validate(full=True)  # UTF-8
    except pa.ArrowInvalid:
        return None
    items = pc.split_pattern(props_text, "\x02")
    flat = pc.list_flatten(items)
    if len(flat) == 0:
        return None
    # each pair is cut at its first \x01 (an ASCII byte no UTF-8 sequence holds): names and
    # values are slices of the pairs' buffer
    sep = pc.find_substring(flat, "\x01").to_numpy().astype(np.int64)
    pair_at = np.frombuffer(flat.buffers()[1], dtype=np.int32)[flat.offset : flat.offset + len(flat) + 1]
    pair_begin, pair_end = pair_at[:-1].astype(np.int64), pair_at[1:].astype(np.int64)
    if sep.min() <= 0 or (pair_begin + sep + 1 >= pair_end).any():
        return None  # no separator, an empty name or an empty value: RocketMQ skips the pair
    text = flat.buffers()[2]
    names = _slices(text, pair_begin, pair_begin + sep, pa.string())
    values = _slices(text, pair_begin + sep + 1, pair_end, pa.string())
    parents = pc.list_parent_indices(items).to_numpy()
    deduped = _first_place_last_value(names, parents, rows)
    if deduped is None:
        map_offsets: pa.Array = items.offsets
    else:
        # a name twice in one message (a broker appends WAIT and CLUSTER to batched messages):
        # as a map, the name keeps its first place and takes its last value
        first, last = deduped
        names, values, parents = names.take(pa.array(first)), values.take(pa.array(last)), parents[first]
        counts = np.bincount(parents, minlength=rows)
        map_offsets = pa.array(np.concatenate(([0], np.cumsum(counts))).astype(np.int32))
    out: dict[str, pa.Array] = {}
    if "msg_id" in need:
        msg_id = _lookup(names, values, parents, rows, MessageConst.UNIQ_KEY)
        if msg_id.null_count:
            return None  # the offset message id is the codec's job
        out["msg_id"] = msg_id
    out["tags"] = _lookup(names, values, parents, rows, MessageConst.TAGS)
    if "keys" in need:
        out["keys"] = _lookup(names, values, parents, rows, MessageConst.KEYS)
    if "properties" in need:
        out["properties"] = pa.MapArray.from_arrays(map_offsets, names, values)
    return out
