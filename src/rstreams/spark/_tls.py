"""TLS files that the source and sink read on the driver and carry to the executors.

The options ``tlsCaFile``, ``tlsCertFile`` and ``tlsKeyFile`` name files on the driver, where the
user set them; an executor on another machine may have no such file. So the options' files are
read on the driver as the options are checked, and the reader or writer carries their contents
to the executors, pickled with it as the credentials are (:class:`CarriedAccess`). Where a file
is at its path (the driver; an executor where it was deployed, which may rotate it), that file is
used, as before; elsewhere its carried copy, written once per process into a private temporary
directory (mode 0700, the files 0600, removed when the process exits): Python's ``ssl`` loads a
client certificate and key from files only.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import ssl
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from rstreams.replay import Access

__all__ = ["CarriedAccess", "carried"]

_lock = threading.Lock()
_directory: list[str] = []
"""This process's private directory of carried copies, once made."""


@dataclass(frozen=True, repr=False)
class CarriedAccess(Access):
    """An :class:`~rstreams.replay.Access` that carries its TLS files' contents (``pem``: CA,
    certificate, key; None for a file not set), never shown in its ``repr``."""

    pem: tuple[bytes | None, bytes | None, bytes | None] = field(default=(None, None, None), compare=False)

    def ssl_context(self, url: str, *, names: dict[str, str] | None = None) -> ssl.SSLContext | None:
        """The TLS context from the files at their paths where they are, else from the copies."""
        files = (self.cafile, self.certfile, self.keyfile)
        paths = [_here(path, data) for path, data in zip(files, self.pem, strict=True)]
        local = Access(
            auth=self.auth, cafile=paths[0], server_name=self.server_name, certfile=paths[1], keyfile=paths[2]
        )
        return local.ssl_context(url, names=names)


def carried(access: Access) -> Access:
    """``access`` with its TLS files' contents (read now), or ``access`` itself without TLS files.

    Raises:
        OSError: a file cannot be read (the caller has loaded them all just before).
    """
    if not access.uses_tls:
        return access
    ca, cert, key = (
        None if p is None else Path(p).read_bytes() for p in (access.cafile, access.certfile, access.keyfile)
    )
    return CarriedAccess(
        auth=access.auth,
        cafile=access.cafile,
        server_name=access.server_name,
        certfile=access.certfile,
        keyfile=access.keyfile,
        pem=(ca, cert, key),
    )


def _here(path: str | None, data: bytes | None) -> str | None:
    """``path`` where that file is readable here, else a copy of ``data`` (None: no such file)."""
    if path is None or data is None or os.access(path, os.R_OK):
        return path
    with _lock:
        if not _directory:
            made = tempfile.mkdtemp(prefix="rstreams-tls-")  # mode 0700
            atexit.register(shutil.rmtree, made, True)
            _directory.append(made)
        copy = os.path.join(_directory[0], f"{hashlib.sha256(data).hexdigest()[:32]}.pem")
        if not os.path.exists(copy):
            scratch = f"{copy}.{os.getpid()}.tmp"
            handle = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(handle, "wb") as file:
                file.write(data)
            os.replace(scratch, copy)
    return copy
