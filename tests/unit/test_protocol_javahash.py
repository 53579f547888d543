"""rocketq.protocol.javahash: the one Java HashMap-order rule, and the modules that re-export it."""

from __future__ import annotations

import doctest

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.models import MessageQueue
from rocketq.namesrv import javamap
from rocketq.protocol import bodies, headers, javahash, properties
from rocketq.protocol.javahash import (
    hashmap_capacity,
    java_bucket,
    java_hash,
    java_hash_order,
    java_long_hash,
)


@pytest.mark.parametrize("module", [javahash, properties, headers, bodies.hashorder, javamap])
def test_docstring_examples_hold(module: object) -> None:
    failed, _tried = doctest.testmod(module)  # type: ignore[arg-type]
    assert failed == 0


def test_hash_codes_of_every_key_kind() -> None:
    # Integer.hashCode is the value, Long.hashCode folds the halves, Boolean is 1231/1237.
    assert [java_hash(v) for v in (7, -7, True, False)] == [7, -7, 1231, 1237]
    assert java_hash(1 << 40) == java_long_hash(1 << 40) == 256
    assert java_hash(-7, long_keys=True) == 6
    mq = MessageQueue("T", "broker-a", 3)
    expected = (31 * ((31 * (31 + java_hash("broker-a")) + 3) & 0xFFFFFFFF) + java_hash("T")) & 0xFFFFFFFF
    assert java_hash(mq) & 0xFFFFFFFF == expected
    with pytest.raises(TypeError, match="float"):
        java_hash(1.5)


def test_capacity_grows_past_three_quarters_and_never_below_the_start() -> None:
    assert [hashmap_capacity(n) for n in (0, 12, 13, 24, 25)] == [16, 16, 32, 32, 64]
    assert hashmap_capacity(0, 2048) == 2048
    assert hashmap_capacity(2, 1) == 4


@given(st.lists(st.text(max_size=6), max_size=40), st.integers(min_value=0, max_value=80))
def test_every_entry_point_gives_the_same_string_order(names: list[str], max_entries: int) -> None:
    distinct = list(dict.fromkeys(names))
    order = java_hash_order(distinct)
    assert headers.java_hashmap_order(distinct) == order
    assert properties.java_hashmap_order(names) == order
    assert bodies.java_hash_order(distinct) == order
    grown = java_hash_order(names, max_entries=max_entries)
    assert properties.java_hashmap_order(names, max_entries=max_entries) == grown
    m = javamap.JavaHashMap[str, int]()
    for name in names:
        m[name] = 0
    assert m.java_keys() == order


@given(st.lists(st.integers(min_value=-(2**63), max_value=2**63 - 1), unique=True, max_size=40))
def test_long_keys_match_the_name_servers_map(values: list[int]) -> None:
    m = javamap.JavaHashMap[int, int]()
    for v in values:
        m[v] = 0
    assert m.java_keys() == java_hash_order(values, long_keys=True)
    for v in values:
        h = java_long_hash(v) & 0xFFFFFFFF
        assert java_bucket(v, 64, long_keys=True) == (h ^ (h >> 16)) & 63
