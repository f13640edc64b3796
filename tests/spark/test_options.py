"""Every option of the source and sink: bad values fail at the query's start naming the option;
the README's option table lists exactly the options the code takes (no Spark session needed)."""

from __future__ import annotations

import pickle
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.types import LongType, StructField, StructType

from rstreams.spark._options import OPTIONS, OptionError
from rstreams.spark._sink import RStreamsArrowBatchWriter, RStreamsArrowStreamWriter
from rstreams.spark._source import RStreamsDataSource, RStreamsStreamReader

pytestmark = pytest.mark.timeout(30)

SCHEMA = StructType([StructField("seq", LongType())])
README = Path(__file__).parents[2] / "README.md"
SECRET = "tok-RECOGNISABLE-91c3"


def source(**options: Any) -> RStreamsStreamReader:
    base = {"url": "tcp://127.0.0.1:1", "publisher": "nums"}
    return RStreamsStreamReader({**base, **{k: str(v) for k, v in options.items()}}, SCHEMA)


def sink(**options: Any) -> RStreamsArrowStreamWriter:
    """The streaming writer with its options checked, its sink logs not asked (no server)."""
    base = {"url": "tcp://127.0.0.1:1", "publisher": "out"}
    return RStreamsArrowStreamWriter({**base, **{k: str(v) for k, v in options.items()}}, SCHEMA)


def batch_sink(**options: Any) -> RStreamsArrowBatchWriter:
    base = {"url": "tcp://127.0.0.1:1", "publisher": "out"}
    return RStreamsArrowBatchWriter({**base, **{k: str(v) for k, v in options.items()}}, SCHEMA)


@pytest.mark.parametrize(
    ("options", "option", "says"),
    [
        ({"numPartitions": 0}, "numPartitions", "an int from 1 to 1,024, got '0'"),
        ({"numPartitions": 1025}, "numPartitions", "an int from 1 to 1,024, got '1025'"),
        ({"numPartitions": 10**9}, "numPartitions", "an int from 1 to 1,024"),
        ({"numPartitions": "many"}, "numPartitions", "an int from 1 to 1,024"),
        ({"maxRecordsPerBatch": "lots"}, "maxRecordsPerBatch", "an int >= 1"),
        ({"maxElementsPerBatch": -3}, "maxElementsPerBatch", "an int >= 1"),
        ({"maxRecordsPerBatch": 5, "maxElementsPerBatch": 5}, "maxRecordsPerBatch", "not both"),
        ({"timeout": "soon"}, "timeout", "seconds > 0"),
        ({"timeout": "nan"}, "timeout", "seconds > 0"),
        ({"maxBytesPerBatch": "1k"}, "maxBytesPerBatch", "an int >= 1"),
        ({"minRecordsPerBatch": 0}, "minRecordsPerBatch", "an int >= 1"),
        ({"maxTriggerDelay": "-5"}, "maxTriggerDelay", "seconds > 0"),
        ({"failOnDataLoss": "maybe"}, "failOnDataLoss", "true or false"),
        ({"codec": "xml"}, "codec", "json, msgpack, arrow"),
        ({"startingPosition": "first"}, "startingPosition", "'earliest' or 'latest' or a position"),
        ({"endingPosition": "-1"}, "endingPosition", "'latest' or a position"),
        ({"token": SECRET, "tokenEnv": "X"}, "token", "not both"),
        ({"tokenEnv": "RSTREAMS_TEST_UNSET_VARIABLE"}, "tokenEnv", "which is not set"),
        ({"user": "ann"}, "password", "go together"),
        ({"password": SECRET}, "user", "go together"),
        ({"token": SECRET, "user": "ann", "password": SECRET}, "token", "not both"),
        ({"tlsCaFile": "/no/such/ca.pem"}, "tlsCaFile", "is for tls:// and wss://"),
        (
            {"url": "tls://h:1", "tlsCaFile": "/no/such/ca.pem"},
            "tlsCaFile",
            "cannot load option tlsCaFile /no/such/ca.pem (",
        ),
        ({"url": "tls://h:1", "tlsKeyFile": "/no/key.pem"}, "tlsKeyFile", "needs option tlsCertFile"),
        ({"url": ""}, "url", ".option('url', ...)"),
    ],
)
def test_a_bad_source_option_fails_naming_it(options: dict[str, Any], option: str, says: str) -> None:
    """Each bad value: an OptionError with .option set and a message that says what it takes."""
    with pytest.raises(OptionError) as failure:
        source(**options)
    assert failure.value.option == option and says in str(failure.value)
    assert SECRET not in str(failure.value)


def test_num_partitions_takes_up_to_its_bound() -> None:
    """numPartitions' bound (MAX_PARTITIONS) is a value it takes."""
    from rstreams.spark._options import MAX_PARTITIONS

    assert source(numPartitions=MAX_PARTITIONS)._opts.partitions == MAX_PARTITIONS == 1024
    assert source(numPartitions=1)._opts.partitions == 1


@pytest.mark.parametrize(
    ("options", "option"),
    [
        ({"codec": "xml"}, "codec"),
        ({"timeout": 0}, "timeout"),
        ({"user": "ann"}, "password"),
        ({"batchId": 3, "writerId": "q"}, "batchId"),
    ],
)
def test_a_bad_sink_option_fails_naming_it(options: dict[str, Any], option: str) -> None:
    """The sink checks its options on the driver too (batchId is for df.write, not streams)."""
    with pytest.raises(OptionError) as failure:
        sink(**options)
    assert failure.value.option == option


@pytest.mark.parametrize(
    ("options", "says"),
    [({"batchId": 3}, "needs option writerId"), ({"batchId": "-1", "writerId": "q"}, "an int >= 0")],
)
def test_a_bad_batch_id_fails_naming_it(options: dict[str, Any], says: str) -> None:
    with pytest.raises(OptionError) as failure:
        batch_sink(**options)
    assert failure.value.option == "batchId" and says in str(failure.value)


@pytest.mark.parametrize("codec", ["arrow", "json", "msgpack"])
def test_the_sink_takes_record_batches_with_every_codec(codec: str) -> None:
    """Spark's Arrow writers (record batches, no Row objects) for every codec."""
    from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter

    assert isinstance(sink(codec=codec), DataSourceStreamArrowWriter)
    assert isinstance(batch_sink(codec=codec), DataSourceArrowWriter)


def test_the_schema_option_is_required() -> None:
    """No schema: the error shows how to give one."""
    with pytest.raises(OptionError, match=r'option\("schema", DDL\)'):
        RStreamsDataSource({"url": "tcp://h:1", "publisher": "p"}).schema()


def test_credentials_from_the_environment_and_never_in_a_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    """tokenEnv and passwordEnv read the driver's environment; the Access repr hides them."""
    monkeypatch.setenv("RSTREAMS_TEST_TOKEN", SECRET)
    reader = source(tokenEnv="RSTREAMS_TEST_TOKEN")
    assert reader._opts.access.auth == SECRET and SECRET not in repr(reader._opts.access)
    monkeypatch.setenv("RSTREAMS_TEST_PASSWORD", SECRET)
    writer = sink(user="ann", passwordEnv="RSTREAMS_TEST_PASSWORD")
    assert writer._writer.access.auth == ("ann", SECRET) and SECRET not in repr(writer._writer.access)


def readme_table() -> dict[str, tuple[str, str]]:
    """The README's Spark option table: option -> (default, where)."""
    text = README.read_text()
    section = text[text.index("<!-- spark-options -->") :]
    rows = re.findall(r"^\| `(\w+)` \| ([^|]+) \| ([^|]+) \| [^|]+ \|$", section, re.MULTILINE)
    return {name: (default.strip(), where.strip()) for name, default, where in rows}


def test_the_readme_table_lists_every_option_with_its_default() -> None:
    """One row per option, in OPTIONS' order, with the same default and the same source/sink column."""
    table = readme_table()
    assert list(table) == [option.name for option in OPTIONS]
    for option in OPTIONS:
        where = "both" if option.source and option.sink else "source" if option.source else "sink"
        assert table[option.name] == (option.default, where), option.name


@pytest.mark.parametrize("version", ["TLSv1_3", "TLSv1_2"])
@pytest.mark.parametrize("presented", ["none", "untrusted"])
def test_a_refused_client_certificate_names_the_options_at_once(
    serve: Any, tmp_path: Path, presented: str, version: str
) -> None:
    """A server requiring client certificates: without tlsCertFile, or with one its CA did not sign,
    the source's first call fails at once, a CertificateRefusedError naming the options (timeout
    600 s: the test's 30 s would end first), whether the server refuses after the handshake
    (TLS 1.3) or in it (TLS 1.2)."""
    import ssl

    from rstreams.replay import CertificateRefusedError, ReplayLog
    from testkit.tls import TestCA, server_context

    ca = TestCA.make(tmp_path, "mtls CA")
    context = server_context(ca.issue("logs", san=("127.0.0.1",)), client_ca=ca)
    context.maximum_version = ssl.TLSVersion[version]
    server = serve({"nums": ReplayLog("nums", capacity=10)}, url="tls://127.0.0.1:0", ssl=context)
    options: dict[str, Any] = {"url": server.url, "tlsCaFile": ca.cert, "timeout": 600}
    says = "the server requires a client certificate: set the options tlsCertFile and tlsKeyFile"
    if presented == "untrusted":
        stranger = TestCA.make(tmp_path, "other CA").issue("mallory", client=True)
        options.update(tlsCertFile=stranger.cert, tlsKeyFile=stranger.key)
        says = "the server does not trust the certificate of option tlsCertFile"
    with pytest.raises(CertificateRefusedError, match="ended the TLS session twice in a row") as refused:
        source(**options).initialOffset()
    assert says in str(refused.value)


def _explained(error: BaseException, **access: Any) -> BaseException:
    from rstreams.replay import Access
    from rstreams.spark._options import explain

    return explain(error, "tls://h:1", Access(**access))


def test_explain_names_the_options_by_the_errors_type() -> None:
    """A failed TLS handshake names the TLS options, a refused access the credential options,
    each by its type (words of the message do not decide), and keeps that type."""
    from rstreams.errors import TLSRefusedError
    from rstreams.replay import AccessDeniedError, ServerUnavailableError, TLSHandshakeError

    tls = _explained(TLSHandshakeError("the TLS handshake with tls://h:1 failed: [SSL: ...]"))
    assert type(tls) is TLSHandshakeError
    assert str(tls).endswith("; check the options tlsCaFile, tlsServerName, tlsCertFile and tlsKeyFile")
    denied = _explained(AccessDeniedError("tls://h:1 refused the credentials: ... TLS ..."), auth="t0k")
    assert type(denied) is AccessDeniedError
    assert str(denied).endswith("; check the option token (or tokenEnv), or user and password")
    last = TLSRefusedError("ended before its hello")
    unavailable = _explained(ServerUnavailableError("tls://h:1 could not be reached", last=last))
    assert type(unavailable) is ServerUnavailableError and unavailable.last is last
    assert str(unavailable).endswith("; the option timeout says how long to wait for it")


@pytest.mark.parametrize(
    ("make", "options", "option", "says"),
    [
        (
            source,
            {"maxRowsPerBatch": 5},
            "maxRowsPerBatch",
            "has no option 'maxRowsPerBatch': did you mean maxRecordsPerBatch?",
        ),
        (source, {"maxrowsperbatch": 5}, "maxrowsperbatch", "did you mean maxRecordsPerBatch?"),
        (source, {"startingOffsets": "earliest"}, "startingOffsets", "did you mean startingPosition?"),
        (source, {"colour": "red"}, "colour", "its options: url, publisher, schema, codec,"),
        (source, {"writerId": "w"}, "writerId", "option writerId is for the rstreams sink, not the source"),
        (sink, {"maxRecordsPerBatch": 5}, "maxRecordsPerBatch", "is for the rstreams source, not the sink"),
        (
            sink,
            {"keyColum": "sensor"},
            "keyColum",
            "the rstreams sink has no option 'keyColum': did you mean keyColumn?",
        ),
        (
            batch_sink,
            {"writerID": "w", "batchid": 1, "tokenEnvironment": "T"},
            "tokenEnvironment",
            "tokenEnv?",
        ),
    ],
)
def test_an_unknown_option_name_fails_naming_it_and_the_name_it_resembles(
    make: Any, options: dict[str, Any], option: str, says: str
) -> None:
    """A misspelt or misplaced option is not silently ignored; names are case-insensitive, as
    in Spark (which passes them in lower case)."""
    with pytest.raises(OptionError) as failure:
        make(**options)
    assert failure.value.option == option and says in str(failure.value)


def test_option_names_in_any_case_and_sparks_own_options_are_taken() -> None:
    """Spark hands a data source its options in a case-insensitive dict, with ``path``
    (``load(path)``), ``checkpointLocation`` and ``queryName`` among them: all taken."""
    from pyspark.sql.datasource import CaseInsensitiveDict

    given = {"url": "tcp://h:1", "publisher": "p", "path": "p", "checkpointlocation": "/c", "queryname": "q"}
    found = RStreamsDataSource(CaseInsensitiveDict({**given, "MAXRECORDSPERBATCH": "7"}))
    assert found.streamReader(SCHEMA)._opts.max_rows == 7
    written = RStreamsDataSource(CaseInsensitiveDict({**given, "writerid": "w", "TIMEOUT": "5"}))
    assert RStreamsArrowStreamWriter(written.options, SCHEMA)._writer.timeout == 5.0


@pytest.mark.parametrize("make", [source, sink])
@pytest.mark.parametrize("url", ["http://h:1", "h:7000", "tcp://h", "tcp://h:1,udp://h:2"])
def test_a_url_of_no_rs_io_scheme_fails_naming_option_url(make: Any, url: str) -> None:
    """The source and the sink check each URL when the query starts (the sink too, not first on
    an executor)."""
    with pytest.raises(OptionError, match=r"^option url: ") as failure:
        make(url=url)
    assert failure.value.option == "url"


def test_a_log_the_server_does_not_serve_fails_naming_option_publisher(serve: Any) -> None:
    """The source: a name no server log has; the sink: that, or a log that is no sink log, on the
    driver as Spark builds the streaming writer at the query's start (from a source made afresh)
    and the batch writer, as a writer built otherwise is pickled for the tasks, and again in an
    executor's write.
    OptionError naming ``publisher`` and the server's URL, not the server's bare refusal."""
    from rstreams.replay import ReplayLog

    server = serve({"nums": ReplayLog("nums", capacity=10)}, sinks={"out": ReplayLog("out", capacity=10)})
    with pytest.raises(OptionError, match=r"option publisher: .* serves no log 'nope'") as failure:
        source(url=server.url, publisher="nope").initialOffset()
    assert failure.value.option == "publisher"
    for log, says in (("nope", "serves no sink log 'nope'"), ("nums", "'nums' is not a sink log")):
        options = {"url": server.url, "publisher": log, "timeout": "30"}
        named = f"^option publisher: {re.escape(server.url)} .*{says}"
        with pytest.raises(OptionError, match=named) as early:
            RStreamsDataSource(options).streamWriter(SCHEMA, False)
        assert early.value.option == "publisher"
        shipped = pickle.loads(pickle.dumps(RStreamsDataSource(options)))  # as a commit's worker has it
        streaming = shipped.streamWriter(SCHEMA, False)  # builds, asking nothing
        with pytest.raises(OptionError, match=named) as early:
            pickle.dumps(streaming)
        assert early.value.option == "publisher"
        with pytest.raises(OptionError, match=named) as early:
            RStreamsDataSource(options).writer(SCHEMA, False)
        assert early.value.option == "publisher"
        writer = sink(**options)._writer
        with pytest.raises(OptionError, match=says) as refused:
            writer.write_arrow(iter([pa.record_batch([pa.array([1])], names=["seq"])]))
        assert refused.value.option == "publisher"
    good = {"url": server.url, "publisher": "out", "timeout": "30"}
    assert isinstance(RStreamsDataSource(good).streamWriter(SCHEMA, False), RStreamsArrowStreamWriter)
    assert isinstance(RStreamsDataSource(good).writer(SCHEMA, False), RStreamsArrowBatchWriter)
