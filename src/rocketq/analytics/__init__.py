"""The rebalance analytics in plain Python: each figure defined and computed once.

``rocketq demo``, ``rocketq lab rebalance-cost`` and ``rocketq report`` all compute pauses, queue
moves, duplicates and backlog with :func:`analyze` (see :mod:`rocketq.analytics.rebalance` for
the definitions, and :data:`DEFINITIONS` for the sentence printed beside each figure). Needs no
Spark: it takes plain records, whoever collected them.
"""

from rocketq.analytics import rebalance
from rocketq.analytics.ranges import counted, id_ranges, queue_ranges
from rocketq.analytics.rebalance import *  # noqa: F403 - the package offers rebalance's public names

__all__ = ["counted", "id_ranges", "queue_ranges"]
__all__ += rebalance.__all__
