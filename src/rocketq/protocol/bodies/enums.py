"""Java enums that RocketMQ's JSON bodies carry by name."""

from __future__ import annotations

import enum

__all__ = ["CMResult", "ConsumeFromWhere", "ConsumeType", "MessageModel", "TopicFilterType"]


class ConsumeType(enum.StrEnum):
    """How a consumer gets messages (``ConsumeType``): pull consumers are ACTIVELY, push PASSIVELY."""

    CONSUME_ACTIVELY = "CONSUME_ACTIVELY"
    CONSUME_PASSIVELY = "CONSUME_PASSIVELY"


class MessageModel(enum.StrEnum):
    """Whether a group shares its queues (CLUSTERING) or every member reads all (BROADCASTING)."""

    BROADCASTING = "BROADCASTING"
    CLUSTERING = "CLUSTERING"


class ConsumeFromWhere(enum.StrEnum):
    """Where a new consumer group starts (``ConsumeFromWhere``; the middle three are deprecated)."""

    CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST = (
        "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST"
    )
    CONSUME_FROM_MIN_OFFSET = "CONSUME_FROM_MIN_OFFSET"
    CONSUME_FROM_MAX_OFFSET = "CONSUME_FROM_MAX_OFFSET"
    CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    CONSUME_FROM_TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


class CMResult(enum.StrEnum):
    """How a listener handled a message pushed by ``CONSUME_MESSAGE_DIRECTLY`` (``CMResult``)."""

    CR_SUCCESS = "CR_SUCCESS"
    CR_LATER = "CR_LATER"
    CR_ROLLBACK = "CR_ROLLBACK"
    CR_COMMIT = "CR_COMMIT"
    CR_THROW_EXCEPTION = "CR_THROW_EXCEPTION"
    CR_RETURN_NULL = "CR_RETURN_NULL"


class TopicFilterType(enum.StrEnum):
    """``TopicFilterType``: every topic RocketMQ creates is SINGLE_TAG."""

    SINGLE_TAG = "SINGLE_TAG"
    MULTI_TAG = "MULTI_TAG"
