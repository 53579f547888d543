"""fastjson's JSON dialect: golden texts both ways, agreement with the standard library, captures."""

from __future__ import annotations

import doctest
import enum
import json
import random
import struct
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rocketq.errors import RemoteProtocolError
from rocketq.protocol import fastjson as fastjson_module
from rocketq.protocol.fastjson import (
    MAX_DEPTH,
    Bean,
    FrozenObject,
    _loads_fallback,
    dumps,
    dumps_bytes,
    freeze,
    java_double_str,
    loads,
)
from tests.wirecaps import all_frames, frame_bytes


def _json_bodies() -> list[tuple[str, bytes]]:
    """Every captured body that is fastjson text (starts with '{'), with a readable id."""
    found = []
    for name, line in all_frames():
        raw = frame_bytes(line)
        header_len = struct.unpack_from(">i", raw, 4)[0] & 0xFFFFFF
        body = raw[8 + header_len :]
        if body[:1] == b"{":
            found.append((f"{name}#{line['seq']}", body))
    return found


JSON_BODIES = _json_bodies()


# ---------------------------------------------------------------- reading: golden texts


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"brokerAddrs":{0:"127.0.0.1:10911"}}', {"brokerAddrs": {0: "127.0.0.1:10911"}}),
        ("{0:12,1:3,-1:7}", {0: 12, 1: 3, -1: 7}),
        ('{"offsetTable":{"T@G":{0:12,1:3}}}', {"offsetTable": {"T@G": {0: 12, 1: 3}}}),
        ("{'a':'b'}", {"a": "b"}),
        ("{name:1,$x_2:true}", {"name": 1, "$x_2": True}),
        ('{"a":1,}', {"a": 1}),
        ("[1,2,]", [1, 2]),
        ('{"a":[{},[]],"b":null}', {"a": [{}, []], "b": None}),
        (' \t\n\r\f\b{ "a" : 1 } \n', {"a": 1}),
        ("{'it''s':1}".replace("''", "\\'"), {"it's": 1}),
        ('{"x":"\\x41\\v\\u0041"}', {"x": "A\x0bA"}),
        ('{"x":1L,"y":2.5F,"z":3D}', {"x": 1, "y": 2.5, "z": 3.0}),
        ('{"ctl":"a\x01b"}', {"ctl": "a\x01b"}),  # raw control characters, which json rejects
        ('{"n":-0.5e-3,"m":1E+2}', {"n": -0.0005, "m": 100.0}),
        ("{true:1,null:2}", {True: 1, None: 2}),
    ],
)
def test_reads_fastjson_extensions(text: str, expected: Any) -> None:
    assert loads(text) == expected
    assert loads(text.encode("utf-8")) == expected


def test_object_keys_become_frozen_objects() -> None:
    text = (
        '{"consumeTps":0.2,"offsetTable":{{"brokerName":"broker-b","queueId":1,"topic":"T"}:'
        '{"brokerOffset":1,"consumerOffset":1,"lastTimestamp":17},'
        '{"brokerName":"broker-b","queueId":0,"topic":"T"}:{"brokerOffset":0}}}'
    )
    value = loads(text)
    keys = list(value["offsetTable"])
    assert keys == [
        FrozenObject((("brokerName", "broker-b"), ("queueId", 1), ("topic", "T"))),
        FrozenObject((("brokerName", "broker-b"), ("queueId", 0), ("topic", "T"))),
    ]
    assert keys[0]["queueId"] == 1
    assert keys[0].get("nope", "d") == "d"
    assert keys[0].to_dict() == {"brokerName": "broker-b", "queueId": 1, "topic": "T"}
    assert value["offsetTable"][keys[0]] == {"brokerOffset": 1, "consumerOffset": 1, "lastTimestamp": 17}
    assert dumps(value) == text


def test_array_and_nested_object_keys_are_hashable() -> None:
    value = loads('{[1,{"a":[2]}]:"x",{"k":{"n":[3]}}:"y"}')
    assert list(value) == [
        (1, FrozenObject((("a", (2,)),))),
        FrozenObject((("k", FrozenObject((("n", (3,)),))),)),
    ]


def test_frozen_object_is_not_a_plain_tuple() -> None:
    frozen = FrozenObject((("a", 1),))
    assert frozen != (("a", 1),)
    assert frozen == FrozenObject.of({"a": 1})
    assert hash(frozen) == hash(FrozenObject.of({"a": 1}))
    assert frozen[0] == ("a", 1)
    assert repr(frozen) == "FrozenObject({'a': 1})"
    with pytest.raises(KeyError):
        frozen["b"]
    assert freeze([{"a": [1]}]) == (FrozenObject((("a", (1,)),)),)


def test_back_references_are_resolved() -> None:
    text = (
        '{"brokerDatas":[{"brokerName":"a"},{"$ref":"$.brokerDatas[0]"}],'
        '"x":{"y":{"z":1}},"w":{"$ref":"$.x.y"},"root":[{"$ref":"$.x"}]}'
    )
    value = loads(text)
    assert value["brokerDatas"] == [{"brokerName": "a"}, {"brokerName": "a"}]
    assert value["w"] == {"z": 1}
    assert value["root"] == [{"y": {"z": 1}}]
    assert loads('{0:{"a":1},1:{"$ref":"$.0"}}') == {0: {"a": 1}, 1: {"a": 1}}  # key steps match by text
    assert loads('{"$ref":1}') == {"$ref": 1}  # not a reference


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('{"a":{"$ref":"@"}}', "unsupported or circular"),
        ('{"a":{"$ref":".."}}', "unsupported or circular"),
        ('{"a":{"b":{"$ref":"$.a"}}}', "circular fastjson reference '$.a'"),
        ('{"a":[{"$ref":"$"}]}', "circular"),
        ('{"a":{"$ref":"$.zz"}}', "names nothing"),
        ('{"a":{"$ref":"$.a["}}', "cannot follow"),
        ('{"a":{"$ref":"$.b"},"b":{"$ref":"$.a"}}', "names another reference"),
        ('{"a":{0:{"$ref":"$.a.0"}}}', "circular"),
    ],
)
def test_bad_back_references(text: str, fragment: str) -> None:
    with pytest.raises(RemoteProtocolError, match="reference") as info:
        loads(text)
    assert fragment in str(info.value)


# ---------------------------------------------------------------- reading: errors


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "expected a value"),
        ("   ", "expected a value"),
        ("{", "expected an object key"),
        ('{"a"', "expected ':'"),
        ('{"a":1', "expected ',' or '}'"),
        ('{"a":1 "b":2}', "expected ',' or '}'"),
        ("[1 2]", "expected ',' or ']'"),
        ('{"a":}', "expected a value"),
        ("{:1}", "expected an object key"),
        ('"abc', "unterminated string"),
        ("'abc", "unterminated string"),
        ('"a\\qb"', "bad escape"),
        ('"\\u12"', "bad \\u escape"),
        ('"\\xZZ"', "bad \\x escape"),
        ("nope", "expected a value"),
        ("{} {}", "expected end of text"),
        ("[", "expected a value"),
    ],
)
def test_bad_text_raises_remote_protocol_error(text: str, fragment: str) -> None:
    with pytest.raises(RemoteProtocolError, match="invalid JSON body at offset") as info:
        loads(text)
    assert fragment in str(info.value)


def test_bad_utf8_is_a_protocol_error() -> None:
    with pytest.raises(RemoteProtocolError, match="not valid UTF-8 at byte 6"):
        loads(b'{"a":"\xff"}')


def test_nesting_is_bounded() -> None:
    deep = "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5)
    with pytest.raises(RemoteProtocolError, match="nesting deeper"):
        loads(deep.replace("[]", "[{0:1}]"))
    very_deep = "[" * 100_000
    with pytest.raises(RemoteProtocolError):
        loads(very_deep)


# ---------------------------------------------------------------- writing: golden texts


class _Color(enum.Enum):
    RED = 1


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"b": 1, "a": [True, False, None]}, '{"b":1,"a":[true,false,null]}'),
        ({"skip": None, "keep": 0}, '{"keep":0}'),
        ({0: "127.0.0.1:10911"}, '{0:"127.0.0.1:10911"}'),
        ({-5: 1, 1 << 40: 2}, "{-5:1,1099511627776:2}"),
        (
            {"consumeTps": 0.0, "rt": 12.75, "big": 1e7, "tiny": 1e-4},
            '{"consumeTps":0.0,"rt":12.75,"big":1.0E7,"tiny":1.0E-4}',
        ),
        ({"nan": float("nan")}, '{"nan":null}'),
        ((1, {2}, frozenset()), "[1,[2],[]]"),
        (_Color.RED, '"RED"'),
        ("héllo ✓ 你好 😀", '"héllo ✓ 你好 😀"'),
        ("a/b", '"a/b"'),
        ('q"b\\s', '"q\\"b\\\\s"'),
        (
            "\x00\x01\x07\x08\t\n\x0b\x0c\r\x0e\x1f",
            '"\\u0000\\u0001\\u0007\\b\\t\\n\\u000B\\f\\r\\u000E\\u001F"',
        ),
        ("\x7f\x9f\xa0\u2028\u2029", '"\\u007F\\u009F\xa0\\u2028\\u2029"'),
        ({"k\x01": "v"}, '{"k\\u0001":"v"}'),
    ],
)
def test_writes_what_fastjson_writes(value: Any, expected: str) -> None:
    assert dumps(value) == expected
    assert dumps_bytes(value) == expected.encode("utf-8")


def test_lone_surrogates_become_question_marks_as_in_java() -> None:
    assert dumps_bytes({"k": "a\ud800b"}) == b'{"k":"a?b"}'


def test_writes_object_keys_inline() -> None:
    key = FrozenObject.of({"brokerName": "b", "queueId": 0, "topic": "T"})
    assert dumps({key: 5}) == '{{"brokerName":"b","queueId":0,"topic":"T"}:5}'
    assert dumps({(1, 2): 3}) == "{[1,2]:3}"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({0: "127.0.0.1:10911"}, '{"0":"127.0.0.1:10911"}'),
        ({10: "b", 2: "a"}, '{"2":"a","10":"b"}'),
        ({"b": 1, "a": 2}, '{"a":2,"b":1}'),
        ({"\uffff": 4, "😀": 3, "é": 1, "z": 2}, '{"z":2,"\\u00E9":1,"\\uD83D\\uDE00":3,"\\uFFFF":4}'),
        ({"x": "a/b é\x7f😀\n\x01"}, '{"x":"a\\/b \\u00E9\\u007F\\uD83D\\uDE00\\n\\u0001"}'),
        ({FrozenObject.of({"q": 1}): 2}, '{"{\\"q\\":1}":2}'),
        ({"m": 1, 3: 2}, '{"m":1,"3":2}'),  # keys that do not compare keep their order
        (  # MessageQueue keys sort as MessageQueue.compareTo: topic, broker, queue id
            {
                FrozenObject.of({"brokerName": "a", "queueId": 1, "topic": "U"}): 1,
                FrozenObject.of({"brokerName": "b", "queueId": 10, "topic": "T"}): 2,
                FrozenObject.of({"brokerName": "b", "queueId": 9, "topic": "T"}): 3,
            },
            '{"{\\"brokerName\\":\\"b\\",\\"queueId\\":9,\\"topic\\":\\"T\\"}":3,'
            '"{\\"brokerName\\":\\"b\\",\\"queueId\\":10,\\"topic\\":\\"T\\"}":2,'
            '"{\\"brokerName\\":\\"a\\",\\"queueId\\":1,\\"topic\\":\\"U\\"}":1}',
        ),
        ({FrozenObject.of({"z": 1}): 1, FrozenObject.of({"a": 1}): 2}, '{"{\\"z\\":1}":1,"{\\"a\\":1}":2}'),
        # the key's text is JSON.toJSONString(key) with default features, then escaped as a string
        ({FrozenObject.of({"t": "é/"}): 1}, '{"{\\"t\\":\\"\\u00E9\\/\\"}":1}'),
    ],
)
def test_browser_compatible_output(value: Any, expected: str) -> None:
    assert dumps(value, browser_compatible=True) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (0.2, "0.2"),
        (1.0, "1.0"),
        (0.001, "0.001"),
        (9999999.0, "9999999.0"),
        (10000000.0, "1.0E7"),
        (12345678.9, "1.23456789E7"),
        (0.000999, "9.99E-4"),
        (1.7976931348623157e308, "1.7976931348623157E308"),
        (-2.5e-7, "-2.5E-7"),
        (float("inf"), "null"),
    ],
)
def test_java_double_format(value: float, expected: str) -> None:
    assert java_double_str(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (Bean(b=1, a=[1, 2]), '{\n\t"b":1,\n\t"a":[\n\t\t1,\n\t\t2\n\t]\n}'),
        ({}, "{}"),
        ([], "[]"),
        ((1, 2), "[1,2]"),  # a Set stays on one line
        ({"a": None}, "{\n}"),  # fastjson breaks the line when the map is not empty, even if all is null
        ({1: {"k": "v"}}, '{1:{\n\t\t"k":"v"\n\t}\n}'),
    ],
)
def test_pretty_format(value: Any, expected: str) -> None:
    assert dumps(value, pretty=True) == expected
    assert loads(expected) == _without_null_members(value if not isinstance(value, tuple) else list(value))


def test_writer_rejects_unknown_types() -> None:
    with pytest.raises(TypeError, match="cannot write object"):
        dumps(object())


# ---------------------------------------------------------------- agreement with json


_strict_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(1 << 70), max_value=1 << 70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(value=_strict_json, indent=st.sampled_from([None, 0, 2]), ascii_only=st.booleans())
def test_fallback_parser_agrees_with_json_on_strict_json(
    value: Any, indent: int | None, ascii_only: bool
) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    assert _loads_fallback(text) == json.loads(text)


@settings(max_examples=200, deadline=None)
@given(value=_strict_json)
def test_writer_output_is_json_and_round_trips(value: Any) -> None:
    text = dumps(value)
    assume('"$ref"' not in text)  # loads resolves fastjson back-references
    assert loads(text) == _without_null_members(value)
    assert json.loads(text) == _without_null_members(value)
    assert json.loads(dumps(value, browser_compatible=True)) == _without_null_members(value)


def _without_null_members(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_null_members(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_null_members(v) for v in value]
    return value


_keys = st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1) | st.text(max_size=6)
_frozen_keys = st.dictionaries(
    st.text(max_size=4), st.integers() | st.text(max_size=4), min_size=1, max_size=3
).map(FrozenObject.of)
_fastjson_values = st.recursive(
    st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(_keys | _frozen_keys, children, max_size=4)
    ),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(value=_fastjson_values)
def test_non_standard_values_round_trip(value: Any) -> None:
    assert loads(dumps_bytes(value)) == value


# ---------------------------------------------------------------- chunked parsing


@settings(max_examples=300, deadline=None)
@given(value=_fastjson_values, window=st.integers(min_value=1, max_value=80), pretty=st.booleans())
def test_chunked_parse_gives_what_the_whole_parse_gives(value: Any, window: int, pretty: bool) -> None:
    text = dumps_bytes(value, pretty=pretty)
    assume(b'"$ref"' not in text)
    assert loads(text, chunked=True, chunk_window=window) == loads(text) == value


@pytest.mark.parametrize("window", [1, 7, 64, 512])
def test_chunked_parse_of_captured_bodies_and_errors(window: int) -> None:
    for _, body in JSON_BODIES:
        assert loads(body, chunked=True, chunk_window=window) == loads(body)
    for bad in (b'{"a":[1,2', b'{"a":', b'[{"x":1}', b'{"a":[1]}}', b'{"a" 1}', b"[1 2]"):
        with pytest.raises(RemoteProtocolError):
            loads(bad)
        with pytest.raises(RemoteProtocolError):
            loads(bad, chunked=True, chunk_window=window)


def test_chunked_parse_bounds_nesting_as_the_fallback_parser_does() -> None:
    # the C parser takes 200 levels whole; parsed in steps, the pure-Python parser's bound holds
    # (RocketMQ's bodies nest at most six deep)
    deep = b"[" * 200 + b"]" * 200
    assert loads(deep) is not None
    with pytest.raises(RemoteProtocolError, match=f"nesting deeper than {MAX_DEPTH}"):
        loads(deep, chunked=True, chunk_window=16)


def test_chunked_parse_hands_the_c_scanner_only_short_containers(monkeypatch: pytest.MonkeyPatch) -> None:
    scanned: list[int] = []
    real = fastjson_module._scan_once

    def spy(text: str, pos: int) -> Any:
        scanned.append(len(text) - pos)
        return real(text, pos)

    monkeypatch.setattr(fastjson_module, "_scan_once", spy)
    items = [{"groupName": f"g{i}", "codes": list(range(i % 7))} for i in range(5000)]
    text = json.dumps({"clientID": "c", "producerDataSet": items})
    assert len(text) > 200_000
    assert loads(text, chunked=True, chunk_window=4096) == json.loads(text)
    assert scanned
    assert max(scanned) <= 4096
    # within max_fallback only: a longer text is the C parser's alone, whole
    scanned.clear()
    assert loads(text, chunked=True, chunk_window=4096, max_fallback=1000) == json.loads(text)
    assert scanned == []


# ---------------------------------------------------------------- the captures


@pytest.mark.parametrize(("ident", "body"), JSON_BODIES, ids=[i for i, _ in JSON_BODIES])
def test_captured_bodies_parse_and_rewrite_byte_for_byte(ident: str, body: bytes) -> None:
    value = loads(body)
    text = body.decode("utf-8")
    assert _loads_fallback(text) == value
    standard_route = b'"brokerAddrs":{"0"' in body  # the name server's BrowserCompatible routes
    assert dumps_bytes(value, browser_compatible=standard_route) == body, ident


def test_captures_hold_fastjson_native_bodies() -> None:
    native = [i for i, body in JSON_BODIES if _is_not_strict_json(body)]
    assert len(native) >= 10, (
        native
    )  # cluster info, consume stats, topic stats, reset offsets, legacy routes...


def _is_not_strict_json(body: bytes) -> bool:
    try:
        json.loads(body)
    except ValueError:
        return True
    return False


def test_mutated_bodies_only_raise_protocol_errors() -> None:
    rng = random.Random(20261121)
    samples = [body for _, body in JSON_BODIES if _is_not_strict_json(body)][:8]
    samples.append(JSON_BODIES[0][1])
    alphabet = b"{}[]:,\"'0\\ x-.eL"
    for body in samples:
        for _ in range(150):
            data = bytearray(body)
            for _ in range(rng.randint(1, 4)):
                roll = rng.random()
                pos = rng.randrange(len(data))
                if roll < 0.4:
                    data[pos] = rng.choice(alphabet)
                elif roll < 0.7:
                    del data[pos : pos + rng.randint(1, 8)]
                else:
                    data[pos:pos] = bytes([rng.choice(alphabet)])
            try:
                loads(bytes(data))
            except RemoteProtocolError:
                pass


def test_module_doctests() -> None:
    failures, tried = doctest.testmod(fastjson_module)
    assert failures == 0
    assert tried > 0
