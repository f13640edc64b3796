"""Where the sink keeps its logs' epochs across restarts of a query (``rstreams.spark._epochs``):
the checkpoint as Spark finds it, from the option or the session conf, local or through
``pyarrow.fs``, and why none is kept where none can be (no Spark session)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs
import pytest

from rstreams.spark import _epochs
from rstreams.spark._epochs import EPOCHS_FILE, NO_CHECKPOINT, ArrowFile, checkpoint_of, record_at

pytestmark = pytest.mark.timeout(60)


def spark_checkpoint(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "metadata").write_text('{"id": "q"}')
    return path


def test_the_checkpoint_is_the_option_else_the_session_conf_with_the_query_name() -> None:
    assert checkpoint_of({"checkpointLocation": "/c/q", "queryName": "n"}, "/root") == "/c/q"
    assert checkpoint_of({"CHECKPOINTLOCATION": "rel"}, None) == "rel"  # Spark's options ignore case
    assert checkpoint_of({"queryname": "n"}, "hdfs://nn/root/") == "hdfs://nn/root/n"
    assert checkpoint_of({}, "/root") is None  # Spark makes /root/<random id>: no restart comes back
    assert checkpoint_of({"queryName": "n"}, None) is None


@pytest.mark.parametrize("form", ["absolute", "relative", "file:/", "file:///", "file://localhost/"])
def test_a_local_checkpoint_is_found_in_every_form_spark_takes(
    form: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Relative: from the driver's working directory, as Spark's local file system takes it."""
    checkpoint = spark_checkpoint(tmp_path / "check point")
    monkeypatch.chdir(tmp_path)
    location = {
        "absolute": str(checkpoint),
        "relative": "check point",
        "file:/": f"file:{checkpoint}",
        "file:///": f"file://{str(checkpoint).replace(' ', '%20')}",
        "file://localhost/": f"file://localhost{checkpoint}",
    }[form]
    record, why = record_at(location)
    assert record is not None and why == ""
    assert isinstance(record.file, ArrowFile)
    assert record.shown == record.file.path == str(checkpoint / EPOCHS_FILE)
    assert record.read() == {}
    record.write({"tcp://h:1": {"out": "0123456789abcdef"}})
    assert json.loads((checkpoint / EPOCHS_FILE).read_text()) == {
        "epochs": {"tcp://h:1": {"out": "0123456789abcdef"}}
    }
    assert record.read() == {"tcp://h:1": {"out": "0123456789abcdef"}}
    assert sorted(p.name for p in checkpoint.iterdir()) == ["metadata", EPOCHS_FILE]  # no scratch left


def test_a_directory_without_spark_metadata_is_not_the_checkpoint(tmp_path: Path) -> None:
    """A path without a scheme on a cluster whose default file system is another (HDFS) is not on
    the driver's disk: nothing is written there, and the reason says so."""
    record, why = record_at(str(tmp_path / "nothing"))
    assert (
        record is None
        and why == f"{tmp_path / 'nothing'} holds no Spark checkpoint seen from the driver (no metadata file)"
    )
    assert not (tmp_path / "nothing").exists()
    record, why = record_at(None)
    assert record is None and why == NO_CHECKPOINT


def test_another_file_system_goes_through_pyarrow_fs_s3a_as_s3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``s3a://bucket/q`` is opened as pyarrow's ``s3://bucket/q`` (here a local directory stands
    for the bucket); the record is written there, and named as the user named the checkpoint."""
    spark_checkpoint(tmp_path / "bucket" / "q")
    opened: list[str] = []

    def from_uri(uri: str) -> tuple[Any, str]:
        opened.append(uri)
        return pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem()), "bucket/q"

    monkeypatch.setattr(_epochs, "_open_uri", from_uri)
    record, why = record_at("s3a://bucket/q/")
    assert opened == ["s3://bucket/q/"] and record is not None and why == ""
    assert record.shown == f"s3a://bucket/q/{EPOCHS_FILE}"
    record.write({"tcp://h:1": {"out": "e"}})
    assert json.loads((tmp_path / "bucket" / "q" / EPOCHS_FILE).read_text()) == {
        "epochs": {"tcp://h:1": {"out": "e"}}
    }


def test_a_file_system_pyarrow_cannot_open_keeps_no_record_and_says_why() -> None:
    record, why = record_at("nosuchfs://host/q")
    assert record is None and why.startswith("pyarrow.fs cannot open nosuchfs://host/q from the driver: ")
    assert "\n" not in why and len(why) < 400
