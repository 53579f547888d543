"""RocketMQ 4.9's HA link between a master and its slave, sans I/O.

The HA link is not remoting: it is a plain TCP stream to the master's ``haListenPort`` (the
broker's listen port + 1) carrying two kinds of unframed records, all big-endian
(``store/ha/HAConnection.java`` and ``HAService.HAClient`` in RocketMQ 4.9.4):

* **master -> slave, a transfer**: ``int64 phyOffset, int32 bodySize`` (12 bytes) then
  ``bodySize`` bytes of the master's commit log starting at ``phyOffset``. ``bodySize`` is at
  most ``haTransferBatchSize`` (32 KiB) and never crosses a commit-log file; a transfer may end
  in the middle of a message (the slave appends the bytes as they are and dispatches whole
  messages only). A transfer with ``bodySize`` 0 is the master's heartbeat, written when it has
  sent nothing for ``haSendHeartbeatInterval`` (5 s); its ``phyOffset`` is where the next
  transfer will start.
* **slave -> master, a report**: ``int64`` - the slave's commit-log max offset. The first one
  tells the master where to start streaming (0 on an empty slave: the master then starts at the
  beginning of its last commit-log file); every later one acknowledges bytes, which is what a
  sync master's sends wait for. The slave reports after every append and at least every
  heartbeat interval. The master reads only the last whole report in its buffer (older ones it
  skips, as RocketMQ does).

:class:`TransferDecoder` and :class:`ReportDecoder` are incremental in the manner of
:class:`~rocketq.protocol.frame.FrameDecoder`: feed bytes, take whole records out, ``None`` means
"need more bytes". What no peer would send (a negative offset or size, a body over the decoder's
limit) raises :class:`~rocketq.errors.RemoteProtocolError` and the decoder keeps raising it: the
stream cannot be resynchronised, so the connection is closed.

>>> frame = encode_transfer(1024, b"abc")
>>> frame.hex()
'000000000000040000000003616263'
>>> dec = TransferDecoder()
>>> dec.receive_data(frame[:5]); dec.next_transfer() is None
True
>>> dec.receive_data(frame[5:]); dec.next_transfer()
Transfer(offset=1024, body=b'abc')
>>> rep = ReportDecoder()
>>> rep.receive_data(encode_report(7) + encode_report(9) + b"\\x00"); rep.latest()
9
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final, NoReturn

from rocketq.errors import ConfigError, RemoteProtocolError

__all__ = [
    "HA_HEADER_SIZE",
    "HA_REPORT_SIZE",
    "HA_TRANSFER_BATCH_SIZE",
    "ReportDecoder",
    "Transfer",
    "TransferDecoder",
    "encode_report",
    "encode_transfer",
    "encode_transfer_header",
]

HA_HEADER_SIZE: Final = 12
"""A transfer's header: ``phyOffset`` (8) + ``bodySize`` (4)."""
HA_REPORT_SIZE: Final = 8
"""A slave's report: its max commit-log offset (8)."""
HA_TRANSFER_BATCH_SIZE: Final = 32 * 1024
"""``MessageStoreConfig.haTransferBatchSize``: the most commit-log bytes in one transfer."""

_HEADER = struct.Struct(">qi")
_REPORT = struct.Struct(">q")
_MAX_BODY_DEFAULT: Final = 4 * 1024 * 1024
"""A decoder's default bound on one body: RocketMQ's slave reads into a 4 MiB buffer."""


@dataclass(frozen=True, slots=True)
class Transfer:
    """One master -> slave record: ``body`` is the commit log from ``offset`` (empty: heartbeat)."""

    offset: int
    body: bytes

    @property
    def end(self) -> int:
        """The commit-log offset just past this transfer's bytes."""
        return self.offset + len(self.body)

    @property
    def is_heartbeat(self) -> bool:
        return not self.body


def encode_transfer_header(offset: int, size: int) -> bytes:
    """The 12-byte header of a transfer of ``size`` bytes from ``offset``."""
    if offset < 0 or not 0 <= size <= 0x7FFFFFFF:
        raise ConfigError(f"bad HA transfer: offset {offset}, size {size}")
    return _HEADER.pack(offset, size)


def encode_transfer(offset: int, body: bytes = b"") -> bytes:
    """A whole transfer (header and body); ``body`` empty is a heartbeat."""
    return encode_transfer_header(offset, len(body)) + body


def encode_report(offset: int) -> bytes:
    """A slave's report of its max commit-log offset."""
    if offset < 0:
        raise ConfigError(f"a reported offset cannot be negative: {offset}")
    return _REPORT.pack(offset)


class TransferDecoder:
    """The slave's side: transfers out of the master's stream (see the module docstring)."""

    __slots__ = ("_buf", "_error", "_max_body")

    def __init__(self, *, max_body: int = _MAX_BODY_DEFAULT) -> None:
        if max_body < 1:
            raise ConfigError(f"max_body must be positive, got {max_body}")
        self._buf = bytearray()
        self._max_body = max_body
        self._error: RemoteProtocolError | None = None

    @property
    def buffered(self) -> int:
        """Bytes received and not yet returned as a transfer."""
        return len(self._buf)

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        self._buf += data

    def _fail(self, message: str) -> NoReturn:
        self._error = RemoteProtocolError(message)
        raise self._error

    def next_transfer(self) -> Transfer | None:
        """The next whole transfer, or ``None`` until more bytes arrive."""
        if self._error is not None:
            raise self._error
        buf = self._buf
        if len(buf) < HA_HEADER_SIZE:
            return None
        offset, size = _HEADER.unpack_from(buf, 0)
        if offset < 0:
            self._fail(f"HA transfer at a negative commit-log offset {offset}")
        if size < 0 or size > self._max_body:
            self._fail(f"HA transfer of {size} bytes (at most {self._max_body} accepted)")
        end = HA_HEADER_SIZE + size
        if len(buf) < end:
            return None
        body = bytes(buf[HA_HEADER_SIZE:end])
        del buf[:end]
        return Transfer(offset, body)


class ReportDecoder:
    """The master's side: the slave's reported offsets (see the module docstring)."""

    __slots__ = ("_buf", "_error")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._error: RemoteProtocolError | None = None

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        self._buf += data

    def latest(self) -> int | None:
        """The last whole report received since the previous call (earlier ones are skipped, as
        RocketMQ's master skips them), or ``None`` if no whole report arrived."""
        if self._error is not None:
            raise self._error
        whole = len(self._buf) - len(self._buf) % HA_REPORT_SIZE
        if whole == 0:
            return None
        (offset,) = _REPORT.unpack_from(self._buf, whole - HA_REPORT_SIZE)
        del self._buf[:whole]
        if offset < 0:
            self._error = RemoteProtocolError(f"the slave reported a negative offset {offset}")
            raise self._error
        return int(offset)
