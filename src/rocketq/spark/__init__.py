"""rocketq's Spark pipeline: the ``rocketmq`` data source (install with ``rocketq[spark]``).

>>> import rocketq.spark                                  # doctest: +SKIP
>>> rocketq.spark.register(spark)                         # doctest: +SKIP
>>> df = (spark.read.format("rocketmq")                   # doctest: +SKIP
...       .option("namesrv", "127.0.0.1:9876").option("topic", "TopicTest").load())

``import rocketq`` never imports pyspark, and neither does :mod:`rocketq.spark.offsets` (usable by
any tool); pyspark is imported when the data source is first needed. Every call to a name server or
broker goes through the client layer's blocking facade (:class:`rocketq.client.blocking.BlockingClient`):
this package opens no socket of its own. The modules:

* :mod:`rocketq.spark.source` — the data source, its schema and options;
* :mod:`rocketq.spark.reader` — batch and streaming readers (Arrow record batches);
* :mod:`rocketq.spark.columns` — stored records to Arrow columns, vectorised;
* :mod:`rocketq.spark.writer` — batch and streaming writers;
* :mod:`rocketq.spark.offsets` — per-queue offsets JSON, starting positions, read limits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rocketq.spark.source import RocketMQDataSource

__all__ = ["FILTER_PUSHDOWN_CONF", "RocketMQDataSource", "register"]


def __getattr__(name: str) -> Any:
    if name == "RocketMQDataSource":
        from rocketq.spark.source import RocketMQDataSource  # noqa: PLC0415 - pyspark only on demand

        return RocketMQDataSource
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


FILTER_PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
"""The Spark SQL setting that lets Python data sources take filters (off by default in PySpark)."""


def register(spark: Any, *, pushdown: bool = True) -> None:
    """Make ``format("rocketmq")`` available in ``spark`` (a ``SparkSession``); with ``pushdown``
    also turn on Spark's filter pushdown into Python data sources (:data:`FILTER_PUSHDOWN_CONF`),
    so filters on topic, broker, queue, offsets, store time and tags choose what is pulled."""
    from rocketq.spark.source import RocketMQDataSource  # noqa: PLC0415 - pyspark only on demand

    spark.dataSource.register(RocketMQDataSource)
    if pushdown:
        spark.conf.set(FILTER_PUSHDOWN_CONF, "true")
