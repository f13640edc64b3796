"""rstreams for Apache Spark: the ``rstreams`` data source and sink, reading and writing replay logs.

::

    from rstreams.spark import ReplayLog, ReplayServer, register

    log = ReplayLog("sensors", capacity=100_000).feed(sensor_flow)   # any Publisher
    server = ReplayServer({"sensors": log}, sinks={"results": ReplayLog("results", evict=True)}).start()
    register(spark)
    df = (spark.readStream.format("rstreams").option("url", server.url)
          .option("publisher", "sensors").option("schema", "sensor string, value double").load())
    df.writeStream.format("rstreams").option("url", server.url).option("publisher", "results")...

Offsets are positions in the server's :class:`ReplayLog`, so a query restarted from its
checkpoint re-reads exactly the batch it had not finished (nothing lost, nothing
duplicated), and the log asks its producer for more only as Spark commits (Spark's pace
sets the demand). Each query commits as its own named reader (kept in its checkpoint), so
several queries may read one log: it trims only what all of them have committed. With
``codec="arrow"`` (an element is a record batch) serve the log as
``ReplayLog(..., rows=arrow_rows)`` so that ``maxRecordsPerBatch`` counts rows. A live
publisher read *without* a replay log in front of it cannot be replayed: a restart then
loses what was in flight (at-most-once), like Spark's socket source.

Replay logs themselves live in :mod:`rstreams.replay` (no PySpark needed); ``ReplayLog``,
``ReplayServer``, ``TrimmedError``, ``RemoteLogError`` and ``replay_offer`` are re-exported here
for compatibility.

Needs the ``spark`` extra: ``pip install 'rstreams[spark]'`` (pyspark 4.2 or newer, pyarrow,
pandas<3, msgpack) and Java 17+. PySpark 4.0 and 4.1 lack the streaming admission-control API
(``pyspark.sql.streaming.datasource``) that bounds micro-batches: importing this package there
fails with what to install.
"""

from __future__ import annotations

from typing import Any

from rstreams._exports import claim as _claim
from rstreams.replay import RemoteLogError as RemoteLogError
from rstreams.replay import ReplayLog as ReplayLog
from rstreams.replay import ReplayServer as ReplayServer
from rstreams.replay import TrimmedError as TrimmedError
from rstreams.replay import replay_offer as replay_offer
from rstreams.spark import _requires  # noqa: F401 - first: fails with what to install
from rstreams.spark._codecs import ElementError as ElementError
from rstreams.spark._codecs import arrow_ipc as arrow_ipc
from rstreams.spark._codecs import arrow_rows as arrow_rows
from rstreams.spark._demo import DemoQueryError as DemoQueryError
from rstreams.spark._hadoop import share_gateway
from rstreams.spark._java import JavaMissingError as JavaMissingError
from rstreams.spark._java import check_java as check_java
from rstreams.spark._options import CONF_PREFIX
from rstreams.spark._progress import SparkProgress as SparkProgress
from rstreams.spark._progress import watch_progress as watch_progress
from rstreams.spark._sink import SinkLogRestartedError as SinkLogRestartedError
from rstreams.spark._source import RStreamsDataSource as RStreamsDataSource

__all__ = [
    "DemoQueryError",
    "ElementError",
    "JavaMissingError",
    "RStreamsDataSource",
    "RemoteLogError",
    "ReplayLog",
    "ReplayServer",
    "SinkLogRestartedError",
    "SparkProgress",
    "TrimmedError",
    "arrow_ipc",
    "arrow_rows",
    "check_java",
    "register",
    "replay_offer",
    "watch_progress",
]


def register(spark: Any) -> None:
    """Register the ``rstreams`` format on ``spark`` (a SparkSession); registration is per session.

    Credentials in the session's conf (``spark.rstreams.token``, or ``spark.rstreams.user``
    and ``spark.rstreams.password``), as they are now, serve every query that sets no
    credential option of its own: they travel inside the registered class (Spark pickles it
    by value), never in an option, a plan or a log.

    The sink keeps the record of its logs' epochs beside the query's checkpoint through the
    driver JVM's Hadoop file system, as Spark keeps the checkpoint: the class carries the path of
    a file (readable by this user only) holding this process's py4j gateway, which Spark's Python
    workers on the driver open (:mod:`rstreams.spark._hadoop`).
    """
    conf = {key: spark.conf.get(f"{CONF_PREFIX}{key}", None) for key in ("token", "user", "password")}
    credentials = {key: str(value) for key, value in conf.items() if value}
    gateway = share_gateway(spark)
    source: type[RStreamsDataSource] = RStreamsDataSource
    if credentials or gateway:
        made = {"session_credentials": credentials, "session_gateway": gateway}
        source = type("RStreamsDataSource", (RStreamsDataSource,), made)
    spark.dataSource.register(source)


_claim(__name__, __all__, globals())
