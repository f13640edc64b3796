"""A file beside a query's checkpoint, read and written through the driver JVM's Hadoop file system.

Spark opens a query's checkpoint through its JVM's Hadoop ``FileSystem``: every scheme the
cluster configures (``dbfs:``, ``hdfs:``, ``s3a:`` with Spark's ``fs.s3a.*`` settings, ``viewfs:``,
...), a path without a scheme on the default file system (``fs.defaultFS``), a relative one from
the JVM's working directory. The sink's writer and its commit run in Python workers that Spark
starts on the driver, which have no py4j gateway of their own; so :func:`share_gateway`, called
by :func:`rstreams.spark.register` in the driver's Python process, writes that process's gateway
(address, port, secret) to a file only its user can read, deleted when the process exits. The
registered data source carries the file's *path*, never the secret (the data source also
travels to executors, where no such file is).

A worker on the driver opens the gateway for each step and closes it after. The Hadoop
configuration is the active session's (``sessionState.newHadoopConf()``: the context's, with the
session's settings, as Spark's checkpoint sees them). A file is read with ``FileSystem.open`` and
written as Spark writes its own checkpoint files: Spark's ``CheckpointFileManager.createAtomic``,
a temporary file renamed over the file when it is closed.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from py4j.java_gateway import GatewayParameters, JavaClass, JavaGateway  # type: ignore[import-untyped]
from py4j.protocol import (  # type: ignore[import-untyped]
    Py4JAuthenticationError,
    Py4JError,
    Py4JJavaError,
    Py4JNetworkError,
)
from pyspark.errors.exceptions.captured import CapturedException

from rstreams.errors import ReactiveStreamsError

__all__ = ["HadoopFile", "JvmUnreachable", "hadoop_file", "share_gateway"]

_MANAGERS = (
    "org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager",  # Spark 4.1 on
    "org.apache.spark.sql.execution.streaming.CheckpointFileManager",
)
"""Where Spark keeps its checkpoint file manager (the package moved in Spark 4.1)."""
_shared: dict[tuple[str, int], str] = {}
"""The gateway files this process wrote, by gateway address and port."""


class JvmUnreachable(ReactiveStreamsError, OSError):
    """No driver JVM to ask: no gateway file here (an executor), or the gateway does not answer
    (:func:`~rstreams.spark._epochs.record_at` then goes on through ``pyarrow.fs``)."""


def share_gateway(spark: Any) -> str | None:
    """The path of a file (mode 0600) holding ``spark``'s py4j gateway, written once per gateway;
    None for a session without one (Spark Connect)."""
    gateway = getattr(getattr(spark, "_sc", None), "_gateway", None)
    params = getattr(gateway, "gateway_parameters", None)
    if params is None:
        return None
    key = (str(params.address), int(params.port))
    if key not in _shared:
        handle, path = tempfile.mkstemp(prefix="rstreams-gateway-", suffix=".json")
        with os.fdopen(handle, "w") as file:
            json.dump({"address": key[0], "port": key[1], "secret": params.auth_token}, file)
        atexit.register(_remove, path)
        _shared[key] = path
    return _shared[key]


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


@dataclass(frozen=True)
class HadoopFile:
    """A file at ``uri`` (qualified: scheme and authority) through the JVM behind ``gateway``."""

    gateway: str
    uri: str

    def load(self) -> bytes | None:
        """The file's bytes; None when there is no such file.

        Raises:
            OSError: the JVM cannot be reached, or its file system failed (its error's text).
        """
        with _jvm(self.gateway) as (jvm, conf):
            path = jvm.org.apache.hadoop.fs.Path(self.uri)
            files = path.getFileSystem(conf)
            if not files.exists(path):
                return None
            stream = files.open(path)
            try:
                return bytes(stream.readAllBytes())
            finally:
                stream.close()

    def save(self, data: bytes) -> None:
        """Replace the file with ``data`` as Spark writes its checkpoint files (written aside,
        renamed over it on close; a failed write is cancelled, leaving the old file).

        Raises:
            OSError: the JVM cannot be reached, or its file system failed (its error's text).
        """
        with _jvm(self.gateway) as (jvm, conf):
            path = jvm.org.apache.hadoop.fs.Path(self.uri)
            stream = _manager(jvm).create(path.getParent(), conf).createAtomic(path, True)
            try:
                stream.write(bytearray(data))
            except BaseException:
                stream.cancel()
                raise
            stream.close()


def hadoop_file(location: str, name: str, gateway: str) -> tuple[HadoopFile, str] | str:
    """File ``name`` in the checkpoint at ``location`` as Spark resolves it, and where it is as a
    user names it (a local path, or the qualified URI); or why there is none (the directory holds
    no Spark ``metadata`` file, or its file system cannot be opened).

    Raises:
        JvmUnreachable: no JVM to ask from here.
    """
    try:
        with _jvm(gateway) as (jvm, conf):
            given = jvm.org.apache.hadoop.fs.Path(location)
            files = given.getFileSystem(conf)
            directory = files.makeQualified(given)
            if not files.exists(jvm.org.apache.hadoop.fs.Path(directory, "metadata")):
                return f"{location} holds no Spark checkpoint seen from the driver JVM (no metadata file)"
            path = jvm.org.apache.hadoop.fs.Path(directory, name)
            uri = str(path.toString())
            shown = str(path.toUri().getPath()) if str(path.toUri().getScheme()) == "file" else uri
            return HadoopFile(gateway, uri), shown
    except JvmUnreachable:
        raise
    except OSError as error:
        return f"the driver JVM's Hadoop file system cannot open {location}: {error}"


@contextlib.contextmanager
def _jvm(gateway: str) -> Iterator[tuple[Any, Any]]:
    """The JVM behind the gateway file ``gateway`` and the active session's Hadoop configuration;
    the JVM's errors become :class:`OSError` with the Java error's class and first line."""
    try:
        with open(gateway, encoding="utf-8") as file:
            shared = json.load(file)
    except (OSError, ValueError) as error:
        raise JvmUnreachable(f"no driver JVM's gateway here ({gateway}: {error})") from None

    client = JavaGateway(
        gateway_parameters=GatewayParameters(
            address=shared["address"], port=shared["port"], auth_token=shared["secret"], auto_convert=True
        )
    )
    try:
        try:
            jvm = client.jvm
            conf = jvm.org.apache.spark.sql.SparkSession.active().sessionState().newHadoopConf()
        except (Py4JNetworkError, Py4JAuthenticationError) as error:
            raise JvmUnreachable(f"the driver JVM's gateway does not answer: {_first_line(error)}") from None
        yield jvm, conf
    except Py4JJavaError as error:
        raise OSError(_java_said(error)) from None
    except CapturedException as error:  # py4j's errors as PySpark turns them in its driver process
        raise OSError(f"{error.getClassName()}: {_first_line(error)}") from None
    except Py4JError as error:
        raise OSError(_first_line(error)) from None
    finally:
        client.close()


def _manager(jvm: Any) -> Any:
    """Spark's ``CheckpointFileManager`` (its companion's ``create``)."""
    for name in _MANAGERS:
        found = jvm
        for part in name.split("."):
            found = getattr(found, part)
        if isinstance(found, JavaClass):
            return found
    raise OSError(f"this Spark has no CheckpointFileManager (looked for {', '.join(_MANAGERS)})")


def _java_said(error: Any) -> str:
    """The Java exception's own text (its class and message), at most 300 characters."""
    try:
        return str(error.java_exception.toString())[:300]
    except Py4JError:  # the gateway is gone: py4j's own text
        return _first_line(error)


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return (text.splitlines() or [""])[0][:300]
