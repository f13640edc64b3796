"""Which PEM file a certificate chain failed to load from, and why, in words.

``ssl.SSLContext.load_cert_chain`` says ``[SSL] PEM lib`` whether the certificate file holds
no certificate, holds no key (and no key file was named), or the key file holds no key. The
servers' and clients' option checks (``rstreams serve --tls-cert``, ``--certfile``, the Spark
options ``tlsCertFile``) add :func:`pem_problem`'s words to that error, naming their own option.
"""

from __future__ import annotations

__all__ = ["pem_problem"]


def _text(path: str) -> str:
    try:
        with open(path, "rb") as file:
            return file.read(1 << 20).decode("ascii", errors="replace")
    except OSError:
        return ""  # the load's own error names it (no such file, a directory, ...)


def pem_problem(cert: str, key: str | None, cert_option: str, key_option: str) -> str | None:
    """What is missing from the files of ``cert_option`` (and ``key_option``) when a chain did
    not load; ``None`` when both hold what they should (the load's own error says the rest:
    a key that does not match the certificate, an encrypted key)."""
    if "-----BEGIN CERTIFICATE-----" not in _text(cert):
        return f"{cert_option} {cert} holds no PEM certificate ('-----BEGIN CERTIFICATE-----')"
    if key is None:
        if "PRIVATE KEY-----" not in _text(cert):
            return f"{cert_option} {cert} holds no private key: give the key's file with {key_option}"
        return None
    if "PRIVATE KEY-----" not in _text(key):
        return f"{key_option} {key} holds no PEM private key ('-----BEGIN ... PRIVATE KEY-----')"
    return None
