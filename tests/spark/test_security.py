"""The source and sink against a server that requires mutual TLS and a token (real local Spark).

A recognisable secret is used throughout, and looked for where it must never be: the query
plan, the progress JSON, the ``rstreams`` log records and every error message.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from rstreams.net import Token
from rstreams.replay import Access, ReplayLog, fetch_range
from rstreams.spark import register
from testkit.spark import TEST_TIMEOUT, await_query, records
from testkit.tls import TestCA, server_context

pytestmark = pytest.mark.spark

SECRET = "s3cret-RECOGNISABLE-5b7e"
WRONG = "wrong-RECOGNISABLE-0d2c"
PATIENT = 120.0
"""The server's handshake (and authentication) timeout: a bound only a hang reaches."""


@pytest.fixture
def secured(serve: Any, tmp_path: Path) -> dict[str, Any]:
    """A tls:// replay server (client certificates required) whose certificate names only
    logs.internal, accepting the token SECRET and authorizing the logs nums and out only."""
    ca = TestCA.make(tmp_path, "rstreams test CA")
    server_cert = ca.issue("logs", san=("logs.internal",))
    client = ca.issue("spark-driver", client=True)
    nums = ReplayLog("nums", capacity=500)
    nums.append(records(120))
    logs = {"nums": nums, "private": ReplayLog("private", capacity=10)}
    sinks = {"out": ReplayLog("out", capacity=1_000), "private-out": ReplayLog("private-out", capacity=10)}

    def authenticate(credentials: object) -> str | None:
        return "spark" if isinstance(credentials, Token) and credentials.token == SECRET else None

    server = serve(
        logs,
        sinks=sinks,
        url="tls://127.0.0.1:0",
        ssl=server_context(server_cert, client_ca=ca),
        authenticate=authenticate,
        authorize=lambda who, log: who == "spark" and not log.startswith("private"),
        # a Spark worker on a loaded machine can take more than the default 10 s between its
        # hello and its credentials; every refusal these tests expect comes at once, not then
        handshake_timeout=PATIENT,
    )
    options = {
        "url": server.url,
        "tlsCaFile": str(ca.cert),
        "tlsServerName": "logs.internal",
        "tlsCertFile": str(client.cert),
        "tlsKeyFile": str(client.key),
    }
    return {"server": server, "options": options, "out": sinks["out"], "nums": nums}


def stream(spark: Any, options: dict[str, str], log: str = "nums") -> Any:
    reader = spark.readStream.format("rstreams").option("publisher", log)
    reader = reader.option("schema", "sensor string, seq bigint, value double")
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


@pytest.mark.timeout(TEST_TIMEOUT)
def test_a_query_reads_and_writes_over_mutual_tls_with_a_token(
    spark: Any, secured: dict[str, Any], tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: Any
) -> None:
    """tls:// + client certificate + token, both ways; the secret is nowhere to be seen."""
    caplog.set_level(logging.DEBUG, logger="rstreams")
    options = {**secured["options"], "token": SECRET, "maxRecordsPerBatch": "50"}
    df = stream(spark, options)
    writer = df.writeStream.format("rstreams").option("publisher", "out")
    for key, value in {**secured["options"], "token": SECRET}.items():
        writer = writer.option(key, value)
    writer = writer.option("checkpointLocation", str(tmp_path / "checkpoint"))
    query = writer.trigger(availableNow=True).start()
    await_query(query, "the query over mutual TLS to end", signs=lambda: secured["out"].end)
    assert query.exception() is None
    out = secured["out"]
    rows = [json.loads(row) for row in _published(secured, out)]
    assert sorted(row["seq"] for row in rows) == list(range(120))
    query.explain(extended=True)
    plan = capsys.readouterr().out + df._jdf.queryExecution().toString()
    assert "rstreams" in plan.lower() or "PythonDataSource" in plan or "StreamingRelation" in plan
    progress = json.dumps([json.loads(p.json) for p in query.recentProgress])
    for where, text in {"plan": plan, "progress": progress, "logs": caplog.text}.items():
        assert SECRET not in text, where


def _published(secured: dict[str, Any], out: ReplayLog) -> list[bytes]:
    options = secured["options"]
    access = Access(
        auth=SECRET,
        cafile=options["tlsCaFile"],
        server_name=options["tlsServerName"],
        certfile=options["tlsCertFile"],
        keyfile=options["tlsKeyFile"],
    )
    return fetch_range(options["url"], "out", 0, out.end, access=access)


@pytest.mark.timeout(TEST_TIMEOUT)
@pytest.mark.parametrize(
    ("credentials", "says"),
    [
        ({}, "the server asks for credentials: set the option token"),
        ({"token": WRONG}, "check the option token"),
    ],
)
def test_a_missing_or_wrong_token_fails_the_query_at_start_naming_the_option(
    spark: Any, secured: dict[str, Any], credentials: dict[str, str], says: str
) -> None:
    """No token, or a wrong one: the query fails before its first batch, saying which option to fix."""
    query = (
        stream(spark, {**secured["options"], **credentials})
        .writeStream.format("memory")
        .queryName(f"refused_{len(credentials)}")
        .trigger(availableNow=True)
        .start()
    )
    with pytest.raises(Exception, match=r"refused the credentials|authentication") as failure:
        await_query(query, "the query to fail on its credentials")
    message = str(failure.value)
    assert says in message
    assert WRONG not in message and SECRET not in message
    assert not query.recentProgress or all(p["numInputRows"] == 0 for p in query.recentProgress)


@pytest.mark.timeout(TEST_TIMEOUT)
def test_a_log_the_principal_may_not_read_or_write_is_refused_by_name(
    spark: Any, secured: dict[str, Any], tmp_path: Path
) -> None:
    """authorize() says no to `private` (read) and `private-out` (write): each error names the log."""
    options = {**secured["options"], "token": SECRET}
    query = stream(spark, options, "private").writeStream.format("memory").queryName("private_read")
    started = query.trigger(availableNow=True).start()
    with pytest.raises(Exception, match=r"unauthorized.*'private") as failure:
        await_query(started, "the query of a forbidden log to fail")
    assert SECRET not in str(failure.value)
    df = spark.createDataFrame([(1, "a")], "id int, name string")
    write = df.write.format("rstreams").option("publisher", "private-out")
    for key, value in options.items():
        write = write.option(key, value)
    with pytest.raises(Exception, match=r"unauthorized.*'private-out") as refused:
        write.mode("append").save()
    assert SECRET not in str(refused.value)


@pytest.mark.timeout(TEST_TIMEOUT)
def test_a_token_from_the_spark_conf_serves_queries_that_set_none(
    spark: Any, secured: dict[str, Any]
) -> None:
    """spark.rstreams.token, as it was when register() ran, authenticates a query without a token
    option; it is in no option, so not in the plan either."""
    spark.conf.set("spark.rstreams.token", SECRET)
    try:
        register(spark)
        df = spark.read.format("rstreams").option("publisher", "nums")
        df = df.option("schema", "sensor string, seq bigint, value double")
        for key, value in secured["options"].items():
            df = df.option(key, value)
        loaded = df.load()
        assert loaded.count() == 120
        assert SECRET not in loaded._jdf.queryExecution().toString()
    finally:
        spark.conf.unset("spark.rstreams.token")
        register(spark)


@pytest.mark.timeout(TEST_TIMEOUT)
def test_no_client_certificate_fails_reads_and_writes_at_once_naming_the_options(
    spark: Any, secured: dict[str, Any]
) -> None:
    """Without tlsCertFile and tlsKeyFile the server ends each TLS session: a read and a write fail
    at once saying which options to set, not after the option timeout (3600 s: the test's hang
    guard would end first)."""
    options = {**secured["options"], "token": SECRET, "timeout": "3600"}
    del options["tlsCertFile"], options["tlsKeyFile"]
    says = "the server requires a client certificate: set the options tlsCertFile and tlsKeyFile"
    read = spark.read.format("rstreams").option("publisher", "nums")
    read = read.option("schema", "sensor string, seq bigint, value double")
    for key, value in options.items():
        read = read.option(key, value)
    with pytest.raises(Exception, match="ended the TLS session twice in a row") as refused:
        read.load().count()
    assert says in str(refused.value)
    write = spark.createDataFrame([(1, "a")], "id int, name string").write.format("rstreams")
    for key, value in {**options, "publisher": "out"}.items():
        write = write.option(key, value)
    with pytest.raises(Exception, match="ended the TLS session twice in a row") as refused:
        write.mode("append").save()
    assert says in str(refused.value) and SECRET not in str(refused.value)
