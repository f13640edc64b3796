"""Where the ``rstreams`` sink keeps its logs' epochs across restarts of a streaming query.

The record is ``CHECKPOINT/rstreams-sink.json`` (``{"epochs": {url: {name: epoch}}}``) beside
Spark's own files in the query's checkpoint, found as Spark finds the checkpoint
(docs/replay.md, *Epochs*):

* the writer's option ``checkpointLocation``; else the session conf
  ``spark.sql.streaming.checkpointLocation`` (which Spark's driver-side Python workers are not
  given: the tasks read it from their local properties and carry it to the commit) joined
  with option ``queryName``; without a query name Spark makes a new checkpoint each start
  (``CONF/<random id>``), which no restart comes back to, so nothing is kept;
* where :func:`rstreams.spark.register` shared the driver's py4j gateway
  (:mod:`rstreams.spark._hadoop`), through the driver JVM's Hadoop file system, as Spark opens
  its checkpoint: any scheme the cluster configures, a path without a scheme on its default
  file system, a relative one from the JVM's working directory;
* else (the data source registered otherwise, or that JVM not reachable) a path without a
  scheme, or a ``file:`` URL, is on this machine: a relative one is taken from the driver's
  working directory (its Python workers share the JVM's); another scheme (``hdfs:``, ``s3a:``,
  ``gs:``, ``abfs:``...) through ``pyarrow.fs`` (``s3a:`` and ``s3n:`` as ``s3:``), with the
  credentials and libraries pyarrow finds in the driver's environment.

A directory is taken as the query's checkpoint only when Spark's ``metadata`` file is in it:
Spark writes it before it builds the writer, so a path that has none is not where Spark keeps
the checkpoint (through ``pyarrow.fs``, a path without a scheme on a cluster whose default file
system is not the local one). Where no record can be kept, :func:`record_at` says why and what
to set, and the epochs are checked within each run of the query only.
"""

from __future__ import annotations

import json
import os
import posixpath
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import unquote, urlsplit

import pyarrow as pa
import pyarrow.fs as pafs

from rstreams.spark._hadoop import JvmUnreachable, hadoop_file

__all__ = ["CONF_KEY", "EPOCHS_FILE", "ArrowFile", "EpochRecord", "RecordFile", "checkpoint_of", "record_at"]

EPOCHS_FILE = "rstreams-sink.json"
"""The file in a streaming query's checkpoint directory where the sink keeps its logs' epochs."""
CONF_KEY = "spark.sql.streaming.checkpointLocation"
"""The session conf that sets a query's checkpoint root when option checkpointLocation does not."""
_AS = {"s3a": "s3", "s3n": "s3"}
"""Hadoop's names of file systems pyarrow knows by another."""

Epochs = dict[str, dict[str, str]]


class RecordFile(Protocol):
    """Where the record's bytes are: :class:`ArrowFile` or :class:`~rstreams.spark._hadoop.HadoopFile`."""

    def load(self) -> bytes | None:
        """The file's bytes, None when there is none (raises OSError)."""
        ...

    def save(self, data: bytes) -> None:
        """Replace the file with ``data``, written aside and moved over it (raises OSError)."""
        ...


@dataclass(frozen=True)
class ArrowFile:
    """A file at ``path`` on pyarrow's file system ``fs``."""

    fs: pafs.FileSystem
    path: str

    def load(self) -> bytes | None:
        try:
            with self.fs.open_input_stream(self.path) as stream:
                return bytes(stream.read())
        except FileNotFoundError:
            return None
        except pa.ArrowException as error:
            raise OSError(_first_line(error)) from None

    def save(self, data: bytes) -> None:
        scratch = f"{self.path}.{uuid.uuid4().hex}.tmp"
        try:
            with self.fs.open_output_stream(scratch) as stream:
                stream.write(data)
            self.fs.move(scratch, self.path)
        except pa.ArrowException as error:
            raise OSError(_first_line(error)) from None


@dataclass(frozen=True)
class EpochRecord:
    """The record file: its bytes in ``file``; ``shown``, where it is as a user names it."""

    file: RecordFile
    shown: str

    def read(self) -> Epochs:
        """The epochs kept (``{url: {name: epoch}}``); empty when there is no record yet.

        Raises:
            ValueError: the file is not such a record (the caller names its option).
            OSError: it cannot be read.
        """
        text = self.file.load()
        if text is None:
            return {}
        kept = json.loads(text)["epochs"]
        return {str(url): {str(name): str(e) for name, e in logs.items()} for url, logs in kept.items()}

    def write(self, kept: Epochs) -> None:
        """Replace the record with ``kept``: written aside, then moved over it (raises OSError)."""
        self.file.save(json.dumps({"epochs": kept}, sort_keys=True).encode())


def checkpoint_of(options: Mapping[str, str], conf: str | None) -> str | None:
    """The query's checkpoint location as Spark chooses it: option ``checkpointLocation``, else
    the session conf's root ``conf`` with option ``queryName``; None when neither gives one."""
    given = _option(options, "checkpointLocation")
    if given:
        return given
    name = _option(options, "queryName")
    if conf and name:
        return f"{conf.rstrip('/')}/{name}"
    return None


NO_CHECKPOINT = (
    "the query has no checkpoint to keep them in: set option checkpointLocation "
    '(.option("checkpointLocation", DIR)), or give the query a name (.queryName(NAME)) with the '
    f"session conf {CONF_KEY} set, as Spark then keeps the checkpoint in ROOT/NAME"
)
"""Why no record is kept for a query that names no checkpoint, and what to set."""


def record_at(location: str | None, gateway: str | None = None) -> tuple[EpochRecord | None, str]:
    """The record beside the checkpoint at ``location``, or None and why there is none: through
    the driver JVM behind the shared ``gateway`` file where there is one, else ``pyarrow.fs``."""
    if not location:
        return None, NO_CHECKPOINT
    unreachable = ""
    if gateway:
        try:
            found = hadoop_file(location, EPOCHS_FILE, gateway)
        except JvmUnreachable as error:
            unreachable = f"; {error}"
        else:
            if isinstance(found, str):
                return None, found
            return EpochRecord(*found), ""
    record, why = _arrow_record(location)
    return (record, "") if record is not None else (None, why + unreachable)


def _arrow_record(location: str) -> tuple[EpochRecord | None, str]:
    """The record through ``pyarrow.fs``, or None and why."""
    parts = urlsplit(location)
    local = not parts.scheme or len(parts.scheme) == 1  # (a Windows drive letter is no scheme)
    if parts.scheme == "file" and parts.netloc in ("", "localhost"):
        local, location = True, unquote(parts.path)
    if local:
        fs: pafs.FileSystem = pafs.LocalFileSystem()
        directory = os.path.abspath(location)
    else:
        scheme = _AS.get(parts.scheme.lower(), parts.scheme.lower())
        try:
            fs, directory = _open_uri(f"{scheme}{location[len(parts.scheme) :]}")
        except (pa.ArrowException, OSError, ValueError) as error:
            return None, f"pyarrow.fs cannot open {location} from the driver: {_first_line(error)}"
    try:
        found = fs.get_file_info(posixpath.join(directory, "metadata")).type
    except (pa.ArrowException, OSError) as error:
        return None, f"pyarrow.fs cannot look into {location} from the driver: {_first_line(error)}"
    if found != pafs.FileType.File:
        return None, f"{location} holds no Spark checkpoint seen from the driver (no metadata file)"
    path = posixpath.join(directory, EPOCHS_FILE)
    shown = path if local else f"{location.rstrip('/')}/{EPOCHS_FILE}"
    return EpochRecord(ArrowFile(fs, path), shown), ""


def _open_uri(uri: str) -> tuple[pafs.FileSystem, str]:
    """pyarrow's file system for ``uri`` and the path in it (a seam for tests)."""
    fs, path = pafs.FileSystem.from_uri(uri)
    return fs, str(path)


def _option(options: Mapping[str, str], name: str) -> str | None:
    """Option ``name`` whatever its case (Spark's options are case-insensitive)."""
    wanted = name.lower()
    return next((str(v) for k, v in options.items() if k.lower() == wanted and v), None)


def _first_line(error: BaseException) -> str:
    """The first line of ``error``'s text, at most 300 characters (pyarrow's can run to pages)."""
    text = str(error).strip()
    return (text.splitlines() or [""])[0][:300]
