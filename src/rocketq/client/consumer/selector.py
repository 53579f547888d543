"""What a consumer subscribes with: a tag expression or an SQL92 filter (``MessageSelector``).

A subscription names a topic and which of its messages to receive. RocketMQ has two kinds of
expression (its ``ExpressionType``):

* **TAG** (the default): ``"*"`` for every message, or tags joined by ``||`` (``"TagA || TagB"``).
  The broker filters by the tags' hash codes and the client drops the collisions;
* **SQL92**: a condition over the message's properties, evaluated by the broker
  (``"region = 'eu' AND amount > 100"``; RocketMQ 4.9's grammar: comparisons, ``BETWEEN``, ``IN``,
  ``IS [NOT] NULL``, ``AND``/``OR``/``NOT``). A broker serves it only with ``enablePropertyFilter``
  (``rocketq server --enable-property-filter``): consumers ask each broker at start
  (CHECK_CLIENT_CONFIG) and fail with the broker's reason when it cannot.

``consumer.subscribe(topic, selector)`` takes a :class:`MessageSelector` or, as before, a string,
which is a tag expression.

>>> MessageSelector.by_sql("a > 5 AND b = 'x'")
MessageSelector(expression_type='SQL92', expression="a > 5 AND b = 'x'")
>>> sub = subscription_of("T", MessageSelector.by_tag("TagA || TagB"), sub_version=1)
>>> (sub.expression_type, sub.tags_set)
('TAG', ('TagA', 'TagB'))
>>> subscription_of("T", None, sub_version=1).sub_string
'*'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from rocketq.errors import ConfigError
from rocketq.protocol.bodies import SubscriptionData

__all__ = ["SQL92", "TAG", "ExpressionType", "MessageSelector", "subscription_of"]

TAG: Final = "TAG"
"""A tag expression (RocketMQ's ``ExpressionType.TAG``)."""
SQL92: Final = "SQL92"
"""An SQL92 property filter (RocketMQ's ``ExpressionType.SQL92``)."""

ExpressionType = Literal["TAG", "SQL92"]


@dataclass(frozen=True, slots=True)
class MessageSelector:
    """Which messages of a topic a subscription receives (RocketMQ's ``MessageSelector``).

    Make one with :meth:`by_sql` or :meth:`by_tag`.
    """

    expression_type: ExpressionType
    expression: str

    def __post_init__(self) -> None:
        if self.expression_type not in (TAG, SQL92):
            raise ConfigError(f"expression type must be TAG or SQL92, got {self.expression_type!r}")
        if not isinstance(self.expression, str):
            raise ConfigError(f"a selector's expression must be a string, got {self.expression!r}")
        if self.expression_type == SQL92 and not self.expression.strip():
            raise ConfigError("an SQL92 selector needs an expression (use by_tag('*') for every message)")

    @classmethod
    def by_sql(cls, sql: str) -> MessageSelector:
        """Messages whose properties satisfy ``sql`` (evaluated by the broker)."""
        return cls(SQL92, sql)

    @classmethod
    def by_tag(cls, tag: str | None = "*") -> MessageSelector:
        """Messages with one of the tags of ``tag`` (``"TagA || TagB"``; ``None``, ``""`` and
        ``"*"`` mean every message)."""
        return cls(TAG, tag or "*")

    @property
    def is_tag(self) -> bool:
        return self.expression_type == TAG


def subscription_of(
    topic: str, selector: MessageSelector | str | None, *, sub_version: int
) -> SubscriptionData:
    """The subscription a Java consumer builds for ``selector`` (a string is a tag expression),
    as ``FilterAPI.build`` does; ``sub_version`` is the client's clock in ms."""
    if selector is None or isinstance(selector, str):
        return SubscriptionData.build(topic, selector, sub_version=sub_version)
    if not isinstance(selector, MessageSelector):
        raise ConfigError(f"subscribe takes a tag expression or a MessageSelector, got {selector!r}")
    return SubscriptionData.build(
        topic, selector.expression, sub_version=sub_version, expression_type=selector.expression_type
    )
