"""Message filters the broker evaluates at pull time beyond tag hash codes.

* :mod:`~rocketq.broker.filter.sql92`: SQL92 property selectors (RocketMQ's ``SqlFilter`` and
  ``ExpressionMessageFilter``), :func:`compile_sql92`.
"""

from rocketq.broker.filter import sql92
from rocketq.broker.filter.sql92 import *  # noqa: F403 - this package's names are sql92's public ones

__all__: list[str] = []
__all__ += sql92.__all__
