"""Message filters the broker evaluates at pull time beyond tag hash codes.

* :mod:`~rocketq.broker.filter.sql92`: SQL92 property selectors (RocketMQ's ``SqlFilter`` and
  ``ExpressionMessageFilter``), :func:`compile_sql92`.
"""

from rocketq.broker.filter.sql92 import (
    EXPRESSION_TYPE_SQL92,
    EXPRESSION_TYPE_TAG,
    Sql92Error,
    Sql92Filter,
    compile_sql92,
    is_tag_type,
)

__all__ = [
    "EXPRESSION_TYPE_SQL92",
    "EXPRESSION_TYPE_TAG",
    "Sql92Error",
    "Sql92Filter",
    "compile_sql92",
    "is_tag_type",
]
