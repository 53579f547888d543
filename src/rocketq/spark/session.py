"""A local Spark session for rocketq's tools (``rocketq report``, the lab), set up as they need it.

PySpark's Python workers must run this interpreter (they import ``rocketq``), Spark must run on a
JDK it supports, and a tool wants quiet logs. :func:`local_session` sets, when unset:
``JAVA_HOME`` to the JDK 17 at :data:`JDK17` if it exists, ``SPARK_LOCAL_IP=127.0.0.1``,
``PYSPARK_PYTHON``/``PYSPARK_DRIVER_PYTHON`` to ``sys.executable``; then it gets or creates a
session (a running one is reused) with the UI off, UTC session time and few shuffle partitions,
and registers the ``rocketmq`` source.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

__all__ = ["JDK17", "local_session", "prepare_environment"]

JDK17: Final = "/usr/lib/jvm/java-17-openjdk-amd64"
"""Where Debian/Ubuntu install OpenJDK 17, used when ``JAVA_HOME`` is unset."""


def prepare_environment() -> None:
    """Set the environment variables PySpark needs here (only those unset)."""
    if not os.environ.get("JAVA_HOME") and Path(JDK17).is_dir():
        os.environ["JAVA_HOME"] = JDK17
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


_LOG4J2 = """status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = ${sys:rocketq.spark.log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{yyyy-MM-dd HH:mm:ss.SSS} %p %c{1}: %m%n%ex
rootLogger.level = warn
rootLogger.appenderRef.file.ref = file
"""


def local_session(
    master: str = "local[2]",
    app_name: str = "rocketq",
    *,
    log_level: str = "ERROR",
    shuffle_partitions: int = 4,
    jvm_log: Path | None = None,
) -> Any:
    """A ``SparkSession`` on this machine (reused if one runs), with ``rocketmq`` registered;
    ``shuffle_partitions`` is ``spark.sql.shuffle.partitions`` (Spark's 200 is far too many for
    the small tables here). With ``jvm_log`` (a command's session), the JVM's whole log goes to
    that file instead of the terminal (a log4j2 configuration of ours, written next to it) and the
    console progress bars are off, and the JVM's own stderr (its launcher's warnings) goes to the
    same file; it takes effect when this call starts the JVM."""
    prepare_environment()
    from pyspark.sql import SparkSession  # noqa: PLC0415 - pyspark only on demand

    import rocketq.spark  # noqa: PLC0415

    builder = SparkSession.builder.master(master).appName(app_name)
    if jvm_log is not None:
        jvm_log = jvm_log.resolve()
        config = jvm_log.with_name(jvm_log.name + ".log4j2.properties")
        config.write_text(_LOG4J2, encoding="utf-8")
        builder = builder.config(
            "spark.driver.extraJavaOptions",
            f"-Dlog4j2.configurationFile={config.as_uri()} -Drocketq.spark.log={jvm_log}",
        ).config("spark.ui.showConsoleProgress", "false")
    with _stderr_to(jvm_log):  # the JVM inherits this stderr: its launcher's warnings go there too
        session = _get_or_create(builder, shuffle_partitions)
    session.sparkContext.setLogLevel(log_level)
    rocketq.spark.register(session)
    return session


@contextmanager
def _stderr_to(path: Path | None) -> Iterator[None]:
    """File descriptor 2 pointed at ``path`` (appending) meanwhile; nothing done for ``None``."""
    if path is None:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(fd, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)


def _get_or_create(builder: Any, shuffle_partitions: int) -> Any:
    return (
        builder.config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
