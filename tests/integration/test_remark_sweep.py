"""Every request code a live broker and a live name server serve, sent malformed: missing fields,
wrong types, huge numbers, lone surrogates, bad JSON and random bodies, in both header
serializations. Each gets an answer with a RocketMQ response code (or a closed connection), no
remark carries Python's exception text, class, function or file names, the servers keep serving,
and nothing is logged at ERROR."""

from __future__ import annotations

import asyncio
import logging
import random
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketq.embedded import EmbeddedCluster
from rocketq.errors import RemotingError, RemotingTimeoutError
from rocketq.protocol import RemotingCommand, ResponseCode, SerializeType
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.headers import REQUEST_HEADERS
from rocketq.remoting import RemotingClient, run

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(600)]

#: What Python puts in the text of its exceptions and tracebacks, never to be seen by a peer.
PYTHON_TEXT = re.compile(
    r"Error:|Exception:|Traceback|\.py\b|object has no attribute|\bline \d|__|"
    r"\bNoneType\b|\bkeyword argument\b|\bpositional argument\b|unsupported operand|"
    r"not subscriptable|is not callable|invalid literal for int|<module>|\bself\b"
)

VALUES = (
    None,  # the field left out
    "",
    "x",
    "-1",
    "9" * 30,
    "0" * 5000 + "1",
    "1.5",
    "true",
    "\ud800",
    "a\x00b",
    "%RETRY%",
    "T" * 300,
)

RNG = random.Random(12)

BODIES = (
    b"",
    b"{",
    b"[]",
    b"null",
    b'{"a":1}',
    b"\xff\xfe\xfd",
    b'{"clientID":"\\ud800","consumerDataSet":[{}],"producerDataSet":[{}]}',
    b'{"x":' + b"9" * 5000 + b"}",
    b"[" * 300 + b"]" * 300,
    b"{a:1,'b':[1,2,],}",
    bytes(RNG.randrange(256) for _ in range(300)),
    b"[" + b",".join([b"{}"] * 3000) + b"]",
)


def _base(code: int) -> dict[str, str]:
    header = REQUEST_HEADERS.get(code)
    return {} if header is None else dict.fromkeys(header.wire_names(), "0")


def _requests(code: int) -> Iterator[RemotingCommand]:
    base = _base(code)
    for serialize_type in (SerializeType.JSON, SerializeType.ROCKETMQ):
        yield RemotingCommand.request(code, {}, serialize_type=serialize_type)
        for name in base:
            for value in VALUES:
                ext = dict(base)
                if value is None:
                    del ext[name]
                else:
                    ext[name] = value
                yield RemotingCommand.request(code, ext, serialize_type=serialize_type)
        for body in BODIES:
            yield RemotingCommand.request(code, dict(base), body=body, serialize_type=serialize_type)
    # a header from another code, and unknown fields
    yield RemotingCommand.request(code, {"topic": "\ud800", "queueId": "x", "zzz": "1"})


def test_malformed_requests_to_every_code_get_clean_answers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def sweep() -> dict[str, int]:
        counts = {"requests": 0, "answered": 0, "silent": 0}
        closed: list[tuple[str, int, str]] = []
        async with EmbeddedCluster(data_dir=tmp_path / "data", namesrv_port=0, broker_port=0) as cluster:
            assert cluster.broker is not None
            servers = {
                "broker": (cluster.broker_addr, cluster.broker.remoting.handlers.codes()),
                "namesrv": (cluster.namesrv_addr, cluster.namesrv.remoting.handlers.codes()),
            }
            assert len(servers["broker"][1]) >= 30
            assert len(servers["namesrv"][1]) >= 15
            for server, (addr, codes) in servers.items():
                for code in codes:
                    async with RemotingClient() as client:
                        requests = list(_requests(code))
                        if code in SILENT_CODES:  # sent side by side: most get no answer at all
                            answers = await asyncio.gather(
                                *(client.invoke(addr, r, 3.0) for r in requests), return_exceptions=True
                            )
                        for i, request in enumerate(requests):
                            counts["requests"] += 1
                            try:
                                if code in SILENT_CODES:
                                    got = answers[i]
                                    if isinstance(got, RemotingTimeoutError):
                                        counts["silent"] += 1
                                        continue
                                    if isinstance(got, BaseException):
                                        raise got
                                    answer = got
                                else:
                                    answer = await client.invoke(addr, request, 10.0)
                            except RemotingError as exc:  # a closed connection is a clean answer too
                                closed.append((server, code, str(exc)))
                                continue
                            counts["answered"] += 1
                            where = f"{server} code {code} ({_name(code)}) ext {_brief(request)}"
                            assert answer.code in _RESPONSE_CODES, f"{where}: code {answer.code}"
                            remark = answer.remark or ""
                            assert PYTHON_TEXT.search(remark) is None, f"{where}: remark {remark!r}"
                # still serving: a well-formed request to each
                async with RemotingClient() as client:
                    ping = await client.invoke(
                        addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), 5.0
                    )
                    assert ping.code in (ResponseCode.SUCCESS, ResponseCode.REQUEST_CODE_NOT_SUPPORTED)
        for server, code, text in closed:
            assert "closed" in text or "not a frame" in text, (server, code, text)
        counts["closed"] = len(closed)
        return counts

    with caplog.at_level(logging.WARNING):
        counts = run(sweep())
    print(counts)
    assert counts["requests"] > 4_000
    assert counts["answered"] > 0.95 * (counts["requests"] - counts["silent"])
    assert counts["silent"] < counts["requests"] / 20
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not errors, [f"{r.name}: {r.getMessage()}" for r in errors[:5]]


_RESPONSE_CODES = frozenset(int(c) for c in ResponseCode)

#: Codes RocketMQ's broker may leave unanswered by design: END_TRANSACTION (oneway from RocketMQ's
#: clients) gets no answer when it names neither a commit nor a rollback (the check decides).
SILENT_CODES = frozenset({int(RequestCode.END_TRANSACTION)})


def _name(code: int) -> str:
    try:
        return RequestCode(code).name
    except ValueError:
        return "?"


def _brief(request: RemotingCommand) -> str:
    text = repr({k: v[:20] for k, v in request.ext_fields.items()})
    return f"{text[:200]} body {request.body[:20]!r}"


_ = asyncio  # the sweep runs on rocketq's loop (run)
