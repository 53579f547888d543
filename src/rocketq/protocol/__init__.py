"""RocketMQ's remoting wire protocol, sans I/O: frames, commands, codes, headers, messages, bodies.

Nothing here touches a socket, an event loop or a clock: feed bytes to a
:class:`FrameDecoder` and take :class:`RemotingCommand` objects out; give a command to
:func:`encode_frame` and send the bytes. A whole connection's state and decisions (correlation,
dispatch, flow control) are :class:`rocketq.protocol.connection.ConnectionCore`'s, fed bytes and
``now``, giving events; :mod:`rocketq.remoting` drives it over asyncio and over a blocking socket,
and a plain reader can drive the codec alone with :func:`read_commands`.
"""

from __future__ import annotations

from rocketq.protocol import bodies, headers
from rocketq.protocol.bodies import *  # noqa: F403 - re-exported below, from bodies.__all__
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
from rocketq.protocol.fastjson import FrozenObject
from rocketq.protocol.frame import (
    DEFAULT_MAX_FRAME_SIZE,
    FrameDecoder,
    decode_frame,
    encode_frame,
    encode_frame_parts,
    encode_header,
    read_commands,
)
from rocketq.protocol.headers import *  # noqa: F403 - re-exported below, from headers.__all__
from rocketq.protocol.message import (
    CompressionType,
    Message,
    MessageExt,
    MessageSysFlag,
    ScanResult,
    ScanStop,
    decode_batch,
    decode_message,
    decode_messages,
    encode_batch,
    encode_message,
    encode_message_ext,
    encode_stored_batch,
    scan_stored,
)
from rocketq.protocol.message_id import (
    HostPort,
    UniqIdGenerator,
    UniqIdInfo,
    make_offset_msg_id,
    parse_offset_msg_id,
    parse_uniq_id,
)
from rocketq.protocol.properties import (
    MessageConst,
    java_string_hash,
    properties_to_string,
    string_to_properties,
    tags_code,
)

__all__ = [
    "CURRENT_VERSION",
    "DEFAULT_LANGUAGE",
    "DEFAULT_MAX_FRAME_SIZE",
    "FLAG_ONEWAY",
    "FLAG_RESPONSE",
    "CompressionType",
    "FrameDecoder",
    "FrozenObject",
    "HostPort",
    "LanguageCode",
    "MQVersion",
    "Message",
    "MessageConst",
    "MessageExt",
    "MessageSysFlag",
    "OpaqueSequence",
    "RemotingCommand",
    "RequestCode",
    "ResponseCode",
    "ScanResult",
    "ScanStop",
    "SerializeType",
    "UniqIdGenerator",
    "UniqIdInfo",
    "code_name",
    "decode_batch",
    "decode_frame",
    "decode_message",
    "decode_messages",
    "encode_batch",
    "encode_frame",
    "encode_frame_parts",
    "encode_header",
    "encode_message",
    "encode_message_ext",
    "encode_stored_batch",
    "java_string_hash",
    "make_offset_msg_id",
    "parse_offset_msg_id",
    "parse_uniq_id",
    "properties_to_string",
    "read_commands",
    "scan_stored",
    "string_to_properties",
    "tags_code",
    "version_name",
]
# the names of the headers and bodies, as their modules list them, less the helpers that stay there
__all__ += headers.__all__
__all__ += bodies.__all__
__all__.remove("header_class")
__all__.remove("wire_name")
__all__.remove("MAX_INFLATED_REGISTER_BODY")
__all__.remove("SQL92")
__all__.remove("SUB_ALL")
__all__.remove("TAG")
