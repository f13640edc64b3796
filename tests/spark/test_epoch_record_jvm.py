"""The sink's record of its logs' epochs kept through the driver JVM's Hadoop file system
(``rstreams.spark._hadoop``), as Spark keeps the query's checkpoint: every local form Spark
takes, a Hadoop scheme ``pyarrow.fs`` cannot open (``viewfs:``, mounted on a local directory),
and ``pyarrow.fs`` again where no JVM answers. Real Spark, local mode: the JVM is the test
session's, reached through the gateway file :func:`~rstreams.spark.register` shares."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from rstreams.spark._epochs import EPOCHS_FILE, ArrowFile, record_at
from rstreams.spark._hadoop import HadoopFile, share_gateway

pytestmark = [pytest.mark.spark, pytest.mark.timeout(120)]


def spark_checkpoint(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "metadata").write_text('{"id": "q"}')
    return path


@pytest.fixture
def gateway(spark: Any) -> str:
    shared = share_gateway(spark)
    assert shared is not None and share_gateway(spark) == shared  # one file per gateway
    assert os.stat(shared).st_mode & 0o777 == 0o600
    return shared


def mounted(spark: Any, directory: Path) -> str:
    """A ``viewfs:`` URL of ``directory`` (a mount table of its own, in the session's conf)."""
    cluster = f"rstreams-{uuid.uuid4().hex[:8]}"
    spark.conf.set(f"fs.viewfs.mounttable.{cluster}.link./ckpt", directory.as_uri())
    return f"viewfs://{cluster}/ckpt"


@pytest.mark.parametrize("form", ["absolute", "relative", "file:/", "file:///"])
def test_a_local_checkpoint_is_found_through_the_jvm_in_every_form_spark_takes(
    form: str, spark: Any, gateway: str, tmp_path: Path
) -> None:
    """Relative: from the JVM's working directory; a URL as Hadoop's ``Path`` reads it (not
    percent-decoded), as Spark resolves them (``file://localhost/...`` Hadoop refuses, Spark too)."""
    checkpoint = spark_checkpoint(tmp_path / "check point")
    jvm_cwd = spark._jvm.java.lang.System.getProperty("user.dir")
    location = {
        "absolute": str(checkpoint),
        "relative": os.path.relpath(checkpoint, jvm_cwd),
        "file:/": f"file:{checkpoint}",
        "file:///": f"file://{checkpoint}",
    }[form]
    record, why = record_at(location, gateway)
    assert record is not None and why == ""
    assert isinstance(record.file, HadoopFile)
    assert record.shown == str(checkpoint / EPOCHS_FILE)
    assert record.read() == {}
    record.write({"tcp://h:1": {"out": "0123456789abcdef"}})
    record.write({"tcp://h:1": {"out": "0123456789abcdef", "more": "fedcba9876543210"}})  # replaced
    assert json.loads((checkpoint / EPOCHS_FILE).read_text()) == {
        "epochs": {"tcp://h:1": {"more": "fedcba9876543210", "out": "0123456789abcdef"}}
    }
    assert record.read() == {"tcp://h:1": {"more": "fedcba9876543210", "out": "0123456789abcdef"}}
    left = sorted(p.name for p in checkpoint.iterdir() if not p.name.endswith(".crc"))
    assert left == ["metadata", EPOCHS_FILE]  # no temporary file left


def test_a_hadoop_scheme_pyarrow_cannot_open_is_kept_through_the_jvm(
    spark: Any, gateway: str, tmp_path: Path
) -> None:
    checkpoint = spark_checkpoint(tmp_path / "checkpoint")
    location = mounted(spark, checkpoint)
    record, why = record_at(location)  # without the JVM
    assert record is None and why.startswith(f"pyarrow.fs cannot open {location} from the driver: ")
    record, why = record_at(location, gateway)
    assert record is not None and why == ""
    assert record.shown == f"{location}/{EPOCHS_FILE}"
    record.write({"tcp://h:1": {"out": "e"}})
    assert json.loads((checkpoint / EPOCHS_FILE).read_text()) == {"epochs": {"tcp://h:1": {"out": "e"}}}
    assert record.read() == {"tcp://h:1": {"out": "e"}}


def test_where_the_jvm_finds_no_checkpoint_or_no_file_system_it_says_so(
    spark: Any, gateway: str, tmp_path: Path
) -> None:
    record, why = record_at(str(tmp_path / "nothing"), gateway)
    assert record is None
    assert why == (
        f"{tmp_path / 'nothing'} holds no Spark checkpoint seen from the driver JVM (no metadata file)"
    )
    assert not (tmp_path / "nothing").exists()
    record, why = record_at("nosuchfs://host/q", gateway)
    assert record is None
    assert why.startswith("the driver JVM's Hadoop file system cannot open nosuchfs://host/q: ")
    assert "UnsupportedFileSystemException" in why and "\n" not in why and len(why) < 500


def test_without_a_jvm_to_ask_the_record_goes_through_pyarrow_and_says_why(
    spark: Any, gateway: str, tmp_path: Path
) -> None:
    """On an executor there is no gateway file; a gateway that refuses is no JVM either."""
    checkpoint = spark_checkpoint(tmp_path / "checkpoint")
    record, why = record_at(str(checkpoint), str(tmp_path / "absent.json"))
    assert record is not None and isinstance(record.file, ArrowFile) and why == ""
    shared = json.loads(Path(gateway).read_text())
    refusing = tmp_path / "refusing.json"
    refusing.write_text(json.dumps({**shared, "secret": "not-the-secret"}))
    record, why = record_at(str(checkpoint), str(refusing))
    assert record is not None and isinstance(record.file, ArrowFile)
    record, why = record_at(mounted(spark, checkpoint), str(tmp_path / "absent.json"))
    assert record is None and why.startswith("pyarrow.fs cannot open viewfs://")
    assert f"; no driver JVM's gateway here ({tmp_path / 'absent.json'}: " in why
