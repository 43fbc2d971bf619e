"""PySpark data source ``jetstream``: read and write NATS JetStream streams from Spark.

Install with the ``spark`` extra (``pip install 'minijs[spark]'``), then::

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
    """Make ``format("jetstream")`` available in this SparkSession (sources are per session)."""
    spark.dataSource.register(JetStreamDataSource)
