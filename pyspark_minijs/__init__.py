"""Makes ``format("jetstream")`` available in every SparkSession without ``register(spark)``.

PySpark (4.0+) looks for Python data sources once per Spark driver: a Python worker scans the
top-level modules on its path, imports each one whose name starts with ``pyspark_`` and
registers its ``DefaultSource`` (a ``DataSource`` subclass) under ``DefaultSource.name()``.
This module is that hook for minijs. It must never fail to import: an exception here would be
logged by Spark and end the scan for every other data source too, so a missing dependency only
leaves ``DefaultSource`` undefined (and ``minijs.spark`` explains what is missing on import).
"""

from __future__ import annotations

try:
    from minijs.spark.source import JetStreamDataSource as DefaultSource
except Exception:  # pragma: no cover - an install without the 'spark' extra
    pass
