"""Every option of the ``rstreams`` source and sink: one table, checked once where the user set them.

:data:`OPTIONS` is the single list (name, default, meaning, who takes it) that the README's
option table is checked against (``tests/spark/test_options.py``). Each bad value fails the
query when it starts, with a :class:`OptionError` that names the option and what it takes.

Credentials come from an option (``token``; ``user`` and ``password``), from an
environment variable of the driver named by ``tokenEnv`` / ``passwordEnv``, or, when no
credential option is set, from the Spark conf keys ``spark.rstreams.token``,
``spark.rstreams.user`` and ``spark.rstreams.password`` as they were when
:func:`rstreams.spark.register` registered the format (:func:`with_conf`). They are read
on the driver and travel to executors inside the pickled reader or writer, never in a
partition's ``repr``, a message, or a log line. Spark itself redacts option values whose
keys match ``spark.redaction.regex`` (by default: names containing ``token``, ``password``,
``secret``) in the plans and UIs it prints. The files of the TLS options are read on the driver
too, and their contents travel the same way, for executors without them (:mod:`rstreams.spark._tls`).
"""

from __future__ import annotations

import difflib
import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from rstreams.errors import ReactiveStreamsError
from rstreams.net import parse_url
from rstreams.replay import (
    Access,
    AccessDeniedError,
    AccessError,
    CertificateRefusedError,
    RemoteLogError,
    ServerUnavailableError,
    TLSHandshakeError,
)
from rstreams.spark._tls import carried

__all__ = [
    "CONF_PREFIX",
    "CREDENTIALS",
    "MAX_PARTITIONS",
    "OPTIONS",
    "Option",
    "OptionError",
    "access_from",
    "check_names",
    "explain",
    "flag",
    "missing_log",
    "number",
    "positive",
    "required",
    "with_conf",
]

CONF_PREFIX = "spark.rstreams."
"""Spark conf keys ``spark.rstreams.token``, ``.user``, ``.password``: credentials for every query."""
CREDENTIALS = ("token", "tokenEnv", "user", "password", "passwordEnv")
MAX_PARTITIONS = 1024
"""The most ``numPartitions`` takes. Each partition is a Spark task of every micro-batch, its range
read from one server (a process with one event loop): past about a thousand, more partitions
only add tasks, and a value meant as something else (a row count) would plan a task per element."""


@dataclass(frozen=True)
class Option:
    """One option: its name (as Spark's case-insensitive options spell it), default and meaning."""

    name: str
    default: str
    meaning: str
    source: bool = True
    sink: bool = True


OPTIONS = (
    Option(
        "url",
        "(required)",
        "the replay server: `tcp://host:port`, `tls://`, `ws://`, `wss://`, `unix://`; several, "
        "comma-separated: the logs of `publisher` on each",
    ),
    Option(
        "publisher",
        "(required)",
        "the log's name on the server (the sink: a sink log); several, comma-separated; the source "
        "also takes patterns (`sensors/*`: `*`, `?`, `[...]`) matched against each server's "
        "`rstreams/logs` before every micro-batch",
    ),
    Option("schema", "(required)", "the rows' schema as DDL, e.g. `sensor string, value double`", sink=False),
    Option(
        "codec",
        "`json`",
        "what an element is: `json` or `msgpack` (one row each) or `arrow` (an Arrow IPC stream; "
        "the sink writes up to 64 Ki rows per element with Spark's Arrow writer)",
    ),
    Option(
        "maxRecordsPerBatch",
        "none",
        "at most this many rows per micro-batch (with `arrow`: the log must count rows)",
        sink=False,
    ),
    Option("maxElementsPerBatch", "none", "at most this many elements per micro-batch", sink=False),
    Option(
        "maxBytesPerBatch",
        "none",
        "at most this many bytes of elements per micro-batch (beside a row or element bound)",
        sink=False,
    ),
    Option(
        "minRecordsPerBatch",
        "none",
        "wait for at least this many rows (elements with `arrow` unless the log counts rows) "
        "before a micro-batch, up to `maxTriggerDelay`",
        sink=False,
    ),
    Option(
        "maxTriggerDelay",
        "`15`",
        "seconds a micro-batch may wait for `minRecordsPerBatch` rows; then it takes what there is",
        sink=False,
    ),
    Option(
        "failOnDataLoss",
        "`true`",
        "`false`: positions trimmed before the query read them are skipped and counted "
        "(`lost` in the progress) instead of failing the query",
        sink=False,
    ),
    Option(
        "numPartitions",
        "`2`",
        "Spark partitions per micro-batch (ranges of the logs), at most 1024: over several logs, "
        "`ceil(numPartitions / logs)` per log with rows to read",
        sink=False,
    ),
    Option(
        "readerName",
        "a new name per fresh query",
        "the reader the query commits as on each log (kept in its checkpoint)",
        sink=False,
    ),
    Option(
        "startingPosition",
        "`earliest`",
        "where a fresh query starts: `earliest`, `latest` or a position",
        sink=False,
    ),
    Option(
        "startingTimestamp",
        "none",
        "where a fresh query starts by time: the first element that arrived on the log at this "
        "time (ms since the epoch) or later; instead of `startingPosition`",
        sink=False,
    ),
    Option(
        "newLogStartingPosition",
        "`earliest`",
        "where a log the query finds after its start (a pattern's new match, a name added to the "
        "options) is read from: `earliest` (all it holds) or `latest` (what arrives from then on)",
        sink=False,
    ),
    Option("endingPosition", "`latest`", "batch reads: where to stop (`latest` or a position)", sink=False),
    Option(
        "timeout",
        "`60` (sink: `300`)",
        "seconds each remote call may take, retries included: a server restarting within it is "
        "waited for (with backoff)",
    ),
    Option(
        "writerId",
        "the query's id",
        "who publishes on the sink log (once per writer and batch)",
        source=False,
    ),
    Option(
        "batchId",
        "none",
        "`df.write` (e.g. in `foreachBatch`): publish as this batch of `writerId`, once: a re-run "
        "batch is not published twice",
        source=False,
    ),
    Option(
        "keyColumn",
        "none (required for several logs)",
        "the column whose value picks each row's sink log when `url` and `publisher` name several: "
        "the hash of its text modulo the number of logs",
        source=False,
    ),
    Option("token", "none", "a token to present to the server"),
    Option("tokenEnv", "none", "the environment variable (on the driver) that holds the token"),
    Option("user", "none", "a user name to present (with `password` or `passwordEnv`)"),
    Option("password", "none", "the user's password"),
    Option("passwordEnv", "none", "the environment variable (on the driver) that holds the password"),
    Option("tlsCaFile", "the system's CAs", "trust these CA certificates (PEM) for `tls://` and `wss://`"),
    Option("tlsServerName", "the URL's host", "the name the server's certificate must carry"),
    Option("tlsCertFile", "none", "a client certificate chain (PEM) for mutual TLS"),
    Option("tlsKeyFile", "none", "its private key, when not in `tlsCertFile`"),
)
"""Every option of the source and the sink, in the order the README's table shows them."""

SPARK_OWN = ("path", "checkpointLocation", "queryName")
"""Options Spark itself passes on to a data source (``load(path)``, ``save(path)``, a streaming
query's checkpoint and name): taken and ignored by both sides."""


def check_names(options: Mapping[str, str], side: str) -> None:
    """Every option name in ``options`` is one ``side`` (``"source"`` or ``"sink"``) takes, or
    one of :data:`SPARK_OWN`; Spark's option names are case-insensitive (it passes them in lower
    case), so is this check.

    Raises:
        OptionError: naming the first unknown option, the known name it looks like, if any, or
        the side that takes it.
    """
    takes = {o.name.lower(): o.name for o in OPTIONS if (o.source if side == "source" else o.sink)}
    known = {**takes, **{name.lower(): name for name in SPARK_OWN}}
    every = {o.name.lower(): o for o in OPTIONS}
    for given in options:
        if given.lower() in known:
            continue
        other = every.get(given.lower())
        if other is not None:
            where = "source" if other.source else "sink"
            raise OptionError(given, f"option {other.name} is for the rstreams {where}, not the {side}")
        near = difflib.get_close_matches(given.lower(), list(takes), n=1, cutoff=0.6)
        if near:
            hint = f"did you mean {takes[near[0]]}?"
        else:
            hint = f"its options: {', '.join(takes.values())} (names are case-insensitive)"
        raise OptionError(given, f"the rstreams {side} has no option {given!r}: {hint}")


_ACCESS_NAMES = {
    "cafile": "option tlsCaFile",
    "server_name": "option tlsServerName",
    "certfile": "option tlsCertFile",
    "keyfile": "option tlsKeyFile",
}


class _Overlay(Mapping[str, str]):
    """Options first, then the credentials from the Spark conf."""

    def __init__(self, options: Mapping[str, str], conf: Mapping[str, str]) -> None:
        self._options = options
        self._conf = conf

    def __getitem__(self, key: str) -> str:
        value = self._options.get(key)
        if value is None:
            return self._conf[key]
        return value

    def __iter__(self) -> Iterator[str]:
        yield from self._options
        yield from (key for key in self._conf if self._options.get(key) is None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def with_conf(options: Mapping[str, str], conf: Mapping[str, str]) -> Mapping[str, str]:
    """``options``, plus the credentials ``conf`` holds (``token``, ``user``, ``password``, from
    the Spark conf) when the options name none themselves."""
    if not conf or any(options.get(name) for name in CREDENTIALS):
        return options
    return _Overlay(options, conf)


class OptionError(ReactiveStreamsError, ValueError):
    """A missing or bad option of the ``rstreams`` source or sink; ``.option`` names it."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(message)
        self.option = option

    def __reduce__(self) -> tuple[type[OptionError], tuple[str, str]]:
        """Pickled with its option (a writer that holds one as its refusal goes to the tasks)."""
        return type(self), (self.option, str(self))


def required(options: Mapping[str, str], name: str, who: str) -> str:
    value = options.get(name)
    if not value:
        raise OptionError(
            name,
            f"the rstreams {who} needs .option({name!r}, ...): "
            'e.g. .option("url", "tcp://host:port").option("publisher", "sensors")',
        )
    return str(value)


def positive(options: Mapping[str, str], name: str, default: int, *, most: int | None = None) -> int:
    """An int option >= 1, and <= ``most`` if given (``default`` when unset)."""
    text = options.get(name)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        value = -1
    if most is not None and not 1 <= value <= most:
        raise OptionError(name, f"option {name} must be an int from 1 to {most:,}, got {text!r}")
    if value < 1:
        raise OptionError(name, f"option {name} must be an int >= 1, got {text!r}")
    return value


def number(options: Mapping[str, str], name: str, default: float) -> float:
    """A number option > 0 (seconds)."""
    text = options.get(name)
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not math.isfinite(value) or value <= 0:
        raise OptionError(name, f"option {name} must be a number of seconds > 0, got {text!r}")
    return value


def flag(options: Mapping[str, str], name: str, default: bool) -> bool:
    """A ``true``/``false`` option."""
    text = options.get(name)
    if text is None:
        return default
    value = str(text).strip().lower()
    if value not in ("true", "false"):
        raise OptionError(name, f"option {name} takes true or false, got {text!r}")
    return value == "true"


def _secret(options: Mapping[str, str], name: str) -> str | None:
    """Option ``name``, or the environment variable option ``{name}Env`` names; never both."""
    direct, env = options.get(name), options.get(f"{name}Env")
    if direct and env:
        raise OptionError(name, f"set one of the options {name} and {name}Env, not both")
    if env:
        value = os.environ.get(str(env))
        if not value:
            raise OptionError(
                f"{name}Env", f"option {name}Env names the environment variable {env!r}, which is not set"
            )
        return value
    return str(direct) if direct else None


def access_from(options: Mapping[str, str], url: str) -> Access:
    """The :class:`Access` the options describe, checked against ``url``.

    Raises:
        OptionError: naming the option (never showing a credential).
    """
    try:
        parse_url(url)
    except ValueError as bad:
        raise OptionError("url", f"option url: {bad}") from None
    token = _secret(options, "token")
    user = options.get("user")
    password = _secret(options, "password")
    if token is not None and (user or password is not None):
        raise OptionError("token", "set either option token (or tokenEnv) or user and password, not both")
    if (password is not None) != bool(user):
        missing = "user" if password is not None else "password"
        raise OptionError(
            missing, f"options user and password (or passwordEnv) go together: {missing} is missing"
        )
    auth: str | tuple[str, str] | None = token
    if user and password is not None:
        auth = (str(user), password)
    access = Access(
        auth=auth,
        cafile=_text(options, "tlsCaFile"),
        server_name=_text(options, "tlsServerName"),
        certfile=_text(options, "tlsCertFile"),
        keyfile=_text(options, "tlsKeyFile"),
    )
    try:
        access.ssl_context(url, names=_ACCESS_NAMES)  # loads the files now, on the driver
    except AccessError as bad:
        text = str(bad)
        named = [name for name in _ACCESS_NAMES.values() if name in text]
        option = min(named, key=text.index) if named else "option tlsCaFile"  # the one it is about
        raise OptionError(option.removeprefix("option "), text) from None
    try:
        return carried(access)  # their contents go to the executors, which may not have the files
    except OSError as error:  # changed since loaded a moment ago
        raise OptionError("tlsCaFile", f"cannot read the TLS files of the options again: {error}") from None


def _text(options: Mapping[str, str], name: str) -> str | None:
    value = options.get(name)
    return str(value) if value else None


def missing_log(error: RemoteLogError, url: str, name: str, side: str) -> BaseException:
    """A server's refusal of the log ``name`` restated as the :class:`OptionError` of option
    ``publisher`` when the server has no such log (or, for the sink, no such sink log);
    ``error`` itself otherwise."""
    said = str(error)
    if said.startswith("no publisher named ") or "is not a sink log" in said:
        kind = "sink log" if side == "sink" else "log"
        return OptionError(
            "publisher", f"option publisher: {url} serves no {kind} {name!r} (it said: {said})"
        )
    return error


def explain(error: BaseException, url: str, access: Access) -> BaseException:
    """A remote failure restated with the options the user can change (or ``error`` itself), of
    the same type: a refused client certificate stays a
    :class:`~rstreams.replay.CertificateRefusedError`, and another failed TLS handshake a
    :class:`~rstreams.replay.TLSHandshakeError`, by which a caller tells them."""
    if isinstance(error, CertificateRefusedError):
        if access.certfile is None:
            hint = "the server requires a client certificate: set the options tlsCertFile and tlsKeyFile"
        else:
            hint = "the server does not trust the certificate of option tlsCertFile (or requires another)"
        return CertificateRefusedError(f"rstreams: {error}; {hint}")
    if isinstance(error, TLSHandshakeError):
        hint = "check the options tlsCaFile, tlsServerName, tlsCertFile and tlsKeyFile"
        return TLSHandshakeError(f"rstreams: {error}; {hint}")
    if isinstance(error, AccessDeniedError):
        if access.auth is None:
            hint = "the server asks for credentials: set the option token (or tokenEnv), or user and password"
        else:
            hint = "check the option token (or tokenEnv), or user and password"
        return AccessDeniedError(f"rstreams: {error}; {hint}")
    if isinstance(error, ServerUnavailableError):
        said = f"rstreams: {error}; the option timeout says how long to wait for it"
        return ServerUnavailableError(said, last=error.last)
    return error
