"""The TLS files of the options travel with the reader and writer (``rstreams.spark._tls``): read
on the driver, used from their paths where they are, from private copies where they are not (an
executor on another machine). A mutual-TLS replay server; the files moved away after the
reader and writer were built and pickled, as Spark ships them; no Spark session."""

from __future__ import annotations

import hashlib
import os
import pickle
import stat
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.types import LongType, StructField, StructType

from rstreams.replay import ReplayLog, fetch_range, request_json
from rstreams.spark import _tls
from rstreams.spark._options import access_from
from rstreams.spark._sink import RStreamsArrowStreamWriter, stream_writer
from rstreams.spark._tls import CarriedAccess
from testkit.tls import TestCA, server_context

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def secured(serve: Any, tmp_path: Path) -> tuple[Any, dict[str, str], Path]:
    """A tls:// server asking for client certificates; the options whose files are in ``files``."""
    files = tmp_path / "driver-only"
    files.mkdir()
    ca = TestCA.make(files, "rstreams test CA")
    server = serve(
        {"nums": ReplayLog("nums", capacity=10)},
        sinks={"out": ReplayLog("out", capacity=100, evict=True)},
        url="tls://127.0.0.1:0",
        ssl=server_context(ca.issue("logs", san=("logs.internal",)), client_ca=ca),
    )
    client = ca.issue("spark", client=True)
    options = {
        "url": server.url,
        "tlsCaFile": str(ca.cert),
        "tlsServerName": "logs.internal",
        "tlsCertFile": str(client.cert),
        "tlsKeyFile": str(client.key),
    }
    return server, options, files


def test_a_writer_and_its_access_work_where_the_tls_files_are_not(
    secured: tuple[Any, dict[str, str], Path], tmp_path: Path
) -> None:
    _, options, files = secured
    access = access_from(options, options["url"])
    assert isinstance(access, CarriedAccess)
    key = Path(options["tlsKeyFile"]).read_bytes()
    assert key in (access.pem[2] or b"") and "PRIVATE KEY" not in repr(access)
    writer = pickle.dumps(
        stream_writer({**options, "publisher": "out"}, StructType([StructField("seq", LongType())]))
    )
    carried = pickle.dumps(access)
    files.rename(tmp_path / "elsewhere")  # the executor has none of the files
    shipped = pickle.loads(writer)
    assert isinstance(shipped, RStreamsArrowStreamWriter)
    staged = shipped.write(iter([pa.RecordBatch.from_pydict({"seq": pa.array([1, 2], pa.int64())})]))
    shipped.commit([staged], 0)
    here = pickle.loads(carried)
    assert request_json(options["url"], "out?latest", 30, access=here)["end"] == 2
    assert fetch_range(options["url"], "out", 0, 2, access=here) == [b'{"seq":1}', b'{"seq":2}']
    context = here.ssl_context(options["url"])
    assert context is not None
    directory = Path(_tls._directory[0])  # one copy of each file in this process, however many connections
    copies = [directory / f"{hashlib.sha256(data).hexdigest()[:32]}.pem" for data in here.pem if data]
    assert len(copies) == 3 and set(copies) <= set(directory.iterdir())
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
    assert all(stat.S_IMODE(os.stat(p).st_mode) == 0o600 for p in copies)


def test_where_the_files_are_they_are_read_from_their_paths(
    secured: tuple[Any, dict[str, str], Path],
) -> None:
    """The driver, or an executor where they were deployed (which may rotate them): the files."""
    _, options, _ = secured
    access = pickle.loads(pickle.dumps(access_from(options, options["url"])))
    assert isinstance(access, CarriedAccess)
    Path(options["tlsCaFile"]).write_bytes(b"not a certificate")  # the file is used, not the copy
    with pytest.raises(Exception, match="cafile"):
        access.ssl_context(options["url"])
