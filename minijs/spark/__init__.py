"""PySpark data source ``jetstream``: read and write NATS JetStream streams from Spark.

Install with the ``spark`` extra (``pip install 'minijs[spark]'``); PySpark then finds the
source by itself (through the top-level module ``pyspark_minijs``), or call ``register``::

    from minijs.spark import register
    register(spark)
    df = spark.read.format("jetstream").option("servers", url).option("stream", "ORDERS").load()

The same code runs against minijs in tests and against a real nats-server in production.
"""

from __future__ import annotations

from typing import Any

try:
    import pyarrow  # noqa: F401
    import pyspark  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError(
        "minijs.spark needs PySpark and PyArrow: pip install 'minijs[spark]' "
        f"(missing: {exc.name})"
    ) from exc

from ._nats import DataLossError, JetStreamSourceError
from ._options import OptionError
from .source import SCHEMA, JetStreamDataSource

__all__ = [
    "SCHEMA",
    "DataLossError",
    "JetStreamDataSource",
    "JetStreamSourceError",
    "OptionError",
    "register",
]


def register(spark: Any) -> None:
    """Make ``format("jetstream")`` available in this SparkSession (registered sources are per
    session). Harmless when PySpark already found it by itself: then nothing is done."""
    if _statically_registered(spark):
        return
    spark.dataSource.register(JetStreamDataSource)


def _statically_registered(spark: Any) -> bool:
    """Whether the driver already knows ``jetstream`` (PySpark's scan of ``pyspark_*``
    modules). Only a classic session can tell; registering again would only log a warning."""
    try:
        manager = spark._jsparkSession.sessionState().dataSourceManager()
        return bool(manager.dataSourceExists(JetStreamDataSource.name()))
    except Exception:  # Spark Connect, or another Spark version: just register
        return False
