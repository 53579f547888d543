"""RocketMQ's remoting wire protocol, sans I/O: frames, commands, codes, headers, messages, bodies.

Nothing here touches a socket, an event loop or a clock: feed bytes to a
:class:`FrameDecoder` and take :class:`RemotingCommand` objects out; give a command to
:func:`encode_frame` and send the bytes. :mod:`rocketq.remoting` drives this over asyncio, and a
plain blocking socket can drive it with :func:`read_commands`.
"""

from __future__ import annotations

from rocketq.protocol.codes import (
    CURRENT_VERSION,
    LanguageCode,
    MQVersion,
    RequestCode,
    ResponseCode,
    SerializeType,
    code_name,
    version_name,
)
from rocketq.protocol.command import (
    DEFAULT_LANGUAGE,
    FLAG_ONEWAY,
    FLAG_RESPONSE,
    OpaqueSequence,
    RemotingCommand,
)
from rocketq.protocol.frame import (
    DEFAULT_MAX_FRAME_SIZE,
    FrameDecoder,
    decode_frame,
    encode_frame,
    encode_frame_parts,
    encode_header,
    read_commands,
)

__all__ = [
    "CURRENT_VERSION",
    "DEFAULT_LANGUAGE",
    "DEFAULT_MAX_FRAME_SIZE",
    "FLAG_ONEWAY",
    "FLAG_RESPONSE",
    "FrameDecoder",
    "LanguageCode",
    "MQVersion",
    "OpaqueSequence",
    "RemotingCommand",
    "RequestCode",
    "ResponseCode",
    "SerializeType",
    "code_name",
    "decode_frame",
    "encode_frame",
    "encode_frame_parts",
    "encode_header",
    "read_commands",
    "version_name",
]
