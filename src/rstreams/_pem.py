"""Which PEM file a certificate chain or a CA bundle failed to load from, and why, in words.

``ssl.SSLContext.load_cert_chain`` says ``[SSL] PEM lib`` whether the certificate file holds
no certificate, holds no key (and no key file was named), or the key file holds no key. The
servers' and clients' option checks (``rstreams serve --tls-cert``, ``--certfile``, the Spark
options ``tlsCertFile``) add :func:`pem_problem`'s words to that error, naming their own option.
``load_verify_locations`` says ``no certificate or crl found`` of a CA file that holds a private
key, a certificate request or no PEM at all; the options that load CA files (``--cafile``,
``rstreams serve --tls-client-ca``, the Spark option ``tlsCaFile``) add :func:`ca_problem`'s.
"""

from __future__ import annotations

__all__ = ["ca_problem", "pem_problem"]

_CERTIFICATE = "-----BEGIN CERTIFICATE-----"


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
    if _CERTIFICATE not in _text(cert):
        if key is None and "PRIVATE KEY-----" in _text(cert):  # the key given for the certificate
            return (
                f"{cert_option} {cert} holds a private key, not a certificate: give the key with "
                f"{key_option} and its certificate ('{_CERTIFICATE}') with {cert_option}"
            )
        return f"{cert_option} {cert} holds no PEM certificate ('{_CERTIFICATE}')"
    if key is None:
        if "PRIVATE KEY-----" not in _text(cert):
            return f"{cert_option} {cert} holds no private key: give the key's file with {key_option}"
        return None
    if "PRIVATE KEY-----" not in _text(key):
        return f"{key_option} {key} holds no PEM private key ('-----BEGIN ... PRIVATE KEY-----')"
    return None


def ca_problem(path: str, option: str) -> str | None:
    """What the CA file of ``option`` holds instead of a certificate, when loading it found none;
    ``None`` when it holds one (the load's own error says the rest: a damaged certificate)."""
    text = _text(path)
    if _CERTIFICATE in text:
        return None
    takes = f"{option} takes the PEM certificates of the CAs to trust ('{_CERTIFICATE}')"
    if "PRIVATE KEY-----" in text:
        return f"{option} {path} holds a private key, not a CA certificate; {takes}"
    if "-----BEGIN CERTIFICATE REQUEST-----" in text:
        return f"{option} {path} holds a certificate request, not a CA certificate; {takes}"
    return f"{option} {path} holds no PEM certificate; {takes}"
