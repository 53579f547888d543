"""The property string codec, Java's String.hashCode and HashMap order, tag codes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.protocol.properties import (
    SYSTEM_PROPERTY_NAMES,
    MessageConst,
    java_hashmap_order,
    java_string_hash,
    properties_to_string,
    string_to_properties,
    tags_code,
)
from tests import wirecaps


def test_separators_are_rocketmqs() -> None:
    assert properties_to_string({"a": "1", "b": "2"}) == "a\x011\x02b\x012"
    assert properties_to_string({}) == ""
    assert properties_to_string(None) == ""
    assert properties_to_string({"a": None, "b": "2", "c": None}) == "b\x012"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", {}),
        ("a\x011", {"a": "1"}),
        ("a\x011\x02", {"a": "1"}),  # trailing separator
        ("\x02a\x011", {"a": "1"}),  # empty leading pair
        ("a\x01", {}),  # empty value: skipped
        ("\x01v", {}),  # empty name: skipped
        ("ab", {}),  # no name/value separator
        ("a\x01x\x01y", {"a": "x\x01y"}),  # value runs from the first \x01
        ("a\x011\x02a\x012", {"a": "2"}),  # the last repeat wins
        ("k\x01\x02m\x01v", {"m": "v"}),
        ("\x01\x01\x02x\x01\x01", {"x": "\x01"}),
        ("uni\x01héllo ✓ 你好", {"uni": "héllo ✓ 你好"}),
    ],
)
def test_string_to_properties_skips_what_java_skips(text: str, expected: dict[str, str]) -> None:
    assert string_to_properties(text) == expected


names = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x01\x02"), min_size=1)
values = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x02"), min_size=1)


@given(st.dictionaries(names, values))
def test_properties_round_trip_in_order(props: dict[str, str]) -> None:
    back = string_to_properties(properties_to_string(props))
    assert list(back.items()) == list(props.items())


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("", 0),
        ("a", 97),
        ("hello", 99162322),
        ("TagA", 2598919),
        ("polygenelubricants", -(2**31)),  # wraps to Integer.MIN_VALUE
        ("héllo", 103094734),
        ("\U0001f600", 0xD83D * 31 + 0xDE00),  # two UTF-16 code units
        ("你好", 652829),
    ],
)
def test_java_string_hash(text: str, code: int) -> None:
    assert java_string_hash(text) == code


@given(st.text())
def test_java_string_hash_is_the_java_polynomial(text: str) -> None:
    units = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(units), 2):
        h = (h * 31 + int.from_bytes(units[i : i + 2], "big")) % 2**32
    assert java_string_hash(text) == (h - 2**32 if h >= 2**31 else h)


def test_tags_code() -> None:
    assert tags_code(None) == 0
    assert tags_code("") == 0
    assert tags_code("TagA") == 2598919
    assert tags_code("polygenelubricants") == -(2**31)


def _send_property_strings() -> list[tuple[str, int, str]]:
    found = []
    for name, line in wirecaps.all_frames():
        header: dict[str, Any] = line["header"]
        ext = header.get("extFields") or {}
        if header.get("code") in (310, 325) and "i" in ext:
            found.append((name, line["seq"], ext["i"]))
        elif header.get("code") == 10 and "properties" in ext:
            found.append((name, line["seq"], ext["properties"]))
    return found


def test_java_producers_write_properties_in_hashmap_order() -> None:
    strings = _send_property_strings()
    assert len(strings) >= 30
    for _name, _seq, text in strings:
        props = string_to_properties(text)
        keys = list(props)
        assert java_hashmap_order(keys) == keys
        assert properties_to_string({k: props[k] for k in java_hashmap_order(keys)}) == text


def test_hashmap_order_grows_the_table() -> None:
    keys = [f"key{i}" for i in range(40)]
    order = java_hashmap_order(keys)
    assert sorted(order) == sorted(keys)
    # 40 entries need a 64-slot table; the same keys in a 16-slot table order differently
    assert order != java_hashmap_order(keys[:12]) + keys[12:]
    assert java_hashmap_order(["a", "a", "b"]) == ["a", "b"]
    # a removal does not shrink the table: pass the largest size it had
    assert java_hashmap_order(keys[:5], max_entries=40) == [k for k in order if k in keys[:5]]


def test_message_const_names_are_the_wire_strings() -> None:
    for attr, value in vars(MessageConst).items():
        if attr.isupper():
            assert attr == value
    assert MessageConst.UNIQ_KEY in SYSTEM_PROPERTY_NAMES
    assert "batchIndex" not in SYSTEM_PROPERTY_NAMES
