"""The name server's KV config and the Java HashMap order its tables are written in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.errors import ConfigError
from rocketq.namesrv.javamap import (
    JavaHashMap,
    JavaHashSet,
    java_long_hash,
    java_string_hash,
    table_size_for,
)
from rocketq.namesrv.kvconfig import ORDER_TOPIC_CONFIG, KVConfig
from rocketq.protocol.bodies import java_hash_order

# ---------------------------------------------------------------------------- Java hashing


def test_string_hash_matches_java() -> None:
    # Values of String.hashCode() printed by OpenJDK 17.
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("TBW102") == -1826525782
    assert java_string_hash("") == 0
    assert java_string_hash("你好") == 652829
    assert java_string_hash("\U0001f600") == 1772899  # a surrogate pair: hashed as two UTF-16 units


def test_long_hash_matches_java() -> None:
    assert [java_long_hash(v) for v in (0, 1, 15, -1, 1 << 32, (1 << 32) + 1)] == [0, 1, 15, 0, 1, 0]


def test_table_size_for() -> None:
    assert [table_size_for(n) for n in (0, 1, 2, 3, 16, 17, 1024)] == [1, 1, 2, 4, 16, 32, 1024]


def test_map_grows_past_three_quarters_and_never_shrinks() -> None:
    m: JavaHashMap[str, int] = JavaHashMap()
    for i in range(12):
        m[f"k{i}"] = i
    assert m.capacity == 16
    m["k12"] = 12
    assert m.capacity == 32
    for i in range(13):
        del m[f"k{i}"]
    assert m.capacity == 32
    assert len(m) == 0


def test_reinserted_key_goes_to_the_end_of_its_bucket() -> None:
    # "Aa" and "BB" have the same String.hashCode (2112): one bucket, insertion order.
    m: JavaHashMap[str, int] = JavaHashMap()
    m["Aa"] = 1
    m["BB"] = 2
    assert m.java_keys() == ["Aa", "BB"]
    m["Aa"] = 3  # an update keeps the place
    assert m.java_keys() == ["Aa", "BB"]
    del m["Aa"]
    m["Aa"] = 4
    assert m.java_keys() == ["BB", "Aa"]
    assert m.java_items() == [("BB", 2), ("Aa", 4)]


def test_set_order_and_membership() -> None:
    s: JavaHashSet[str] = JavaHashSet(["broker-a", "broker-b"])
    s.add("broker-a")
    assert list(s) == ["broker-b", "broker-a"]
    assert "broker-a" in s
    assert s.discard("broker-a")
    assert not s.discard("broker-a")
    assert len(s) == 1


@given(st.lists(st.text(max_size=8), unique=True, max_size=60))
def test_fresh_map_order_agrees_with_the_codec_helper(keys: list[str]) -> None:
    m: JavaHashMap[str, None] = JavaHashMap()
    for k in keys:
        m[k] = None
    assert m.java_keys() == java_hash_order(keys)


@given(st.lists(st.integers(min_value=-(2**63), max_value=2**63 - 1), unique=True, max_size=40))
def test_long_keys_agree_with_the_codec_helper(keys: list[int]) -> None:
    m: JavaHashMap[int, None] = JavaHashMap()
    for k in keys:
        m[k] = None
    assert m.java_keys() == java_hash_order(keys, long_keys=True)


# ---------------------------------------------------------------------------- KV config


def test_put_get_delete() -> None:
    kv = KVConfig()
    assert kv.get(ORDER_TOPIC_CONFIG, "T") is None
    assert kv.namespace(ORDER_TOPIC_CONFIG) is None
    kv.put(ORDER_TOPIC_CONFIG, "T", "broker-a:4")
    kv.put(ORDER_TOPIC_CONFIG, "T", "broker-a:8")
    kv.put("other", "k", "v")
    assert kv.get(ORDER_TOPIC_CONFIG, "T") == "broker-a:8"
    assert kv.get("other", "T") is None
    assert kv.delete(ORDER_TOPIC_CONFIG, "T") == "broker-a:8"
    assert kv.delete(ORDER_TOPIC_CONFIG, "T") is None
    assert kv.delete("never", "k") is None
    # The namespace outlives its last key, as in RocketMQ: listing it gives an empty table.
    assert kv.namespace(ORDER_TOPIC_CONFIG) == {}
    assert kv.namespace("never") is None


def test_namespace_lists_in_java_order() -> None:
    kv = KVConfig()
    for topic in ("broker-a", "broker-b"):
        kv.put(ORDER_TOPIC_CONFIG, topic, f"{topic}:4")
    assert list(kv.namespace(ORDER_TOPIC_CONFIG) or {}) == ["broker-b", "broker-a"]


def test_persists_in_rocketmq_format_and_reloads(tmp_path: Path) -> None:
    path = tmp_path / "namesrv" / "kvConfig.json"
    kv = KVConfig(path)
    assert kv.path == path
    assert not path.exists()
    kv.put(ORDER_TOPIC_CONFIG, "T", "broker-a:4")
    kv.put("ns", "k", "v ✓")
    assert json.loads(path.read_text("utf-8")) == {
        "configTable": {"ns": {"k": "v ✓"}, ORDER_TOPIC_CONFIG: {"T": "broker-a:4"}}
    }
    assert not list(tmp_path.glob("namesrv/*.tmp"))
    again = KVConfig(path)
    assert again.get(ORDER_TOPIC_CONFIG, "T") == "broker-a:4"
    assert again.get("ns", "k") == "v ✓"
    again.delete("ns", "k")
    assert KVConfig(path).get("ns", "k") is None


def test_empty_file_is_an_empty_table(tmp_path: Path) -> None:
    path = tmp_path / "kv.json"
    path.write_text("")
    assert KVConfig(path).namespaces() == []


@pytest.mark.parametrize(
    "content",
    ["{not json", '{"configTable":{"ns":{"k":1}}}', '{"configTable":[1]}'],
)
def test_bad_file_is_a_clear_error(tmp_path: Path, content: str) -> None:
    path = tmp_path / "kv.json"
    path.write_text(content)
    with pytest.raises(ConfigError, match=r"kv\.json"):
        KVConfig(path)
