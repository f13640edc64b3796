"""Test certificates made on the spot with ``cryptography``: a CA, servers and clients it signs.

Keys are P-256, the
certificates are valid for a day from an hour ago, and everything is written as PEM into a
directory the test owns, so nothing outside the test ever trusts them::

    ca = TestCA.make(tmp_path, "test CA")
    server = ca.issue("server", san=("127.0.0.1", "localhost"))
    client = ca.issue("client-7", client=True)
    context = ssl.create_default_context(cafile=ca.cert)
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509  # in the "test" dependency group
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = [
    "Issued",
    "MutualPki",
    "TestCA",
    "client_context",
    "client_hello",
    "refusal_alert",
    "server_context",
]

_DAY = datetime.timedelta(days=1)


@dataclass(frozen=True)
class Issued:
    """A certificate and its key, as PEM files."""

    cert: Path
    key: Path
    subject: str
    """The certificate's common name."""


@dataclass(frozen=True)
class TestCA:
    """A certificate authority that lives in ``directory``."""

    __test__ = False  # not a pytest test class

    directory: Path
    name: str
    cert: Path
    _key: ec.EllipticCurvePrivateKey
    _certificate: x509.Certificate

    @classmethod
    def make(cls, directory: Path, name: str) -> TestCA:
        """A new self-signed CA called ``name``; its certificate is written to ``directory``."""
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.datetime.now(datetime.UTC)
        certificate = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + _DAY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=False,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256())
        )
        path = directory / f"{_slug(name)}-ca.pem"
        path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        return cls(directory, name, path, key, certificate)

    def issue(self, common_name: str, *, san: tuple[str, ...] = (), client: bool = False) -> Issued:
        """A certificate for ``common_name`` signed by this CA (a server's unless ``client``).

        ``san`` entries that parse as IP addresses become IP names, the rest DNS names.
        """
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        usage = ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
            .issuer_name(self._certificate.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + _DAY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()), critical=False
            )
        )
        if san:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([_general_name(n) for n in san]), False
            )
        certificate = builder.sign(self._key, hashes.SHA256())
        stem = self.directory / f"{_slug(self.name)}-{_slug(common_name)}"
        cert, key_path = stem.with_suffix(".crt.pem"), stem.with_suffix(".key.pem")
        cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        key_path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        return Issued(cert, key_path, common_name)


def server_context(server: Issued, *, client_ca: TestCA | None = None) -> ssl.SSLContext:
    """A server context presenting ``server``; ``client_ca``: client certificates must be signed by it."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(server.cert, server.key)
    if client_ca is not None:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(cafile=client_ca.cert)
    return context


def client_context(ca: TestCA, client: Issued | None = None) -> ssl.SSLContext:
    """A client context trusting ``ca``; with ``client``, presenting that certificate."""
    context = ssl.create_default_context(cafile=str(ca.cert))
    if client is not None:
        context.load_cert_chain(client.cert, client.key)
    return context


def client_hello(ca: TestCA) -> bytes:
    """The first record of a TLS client's handshake (a handshake record, 0x16 0x03 ...), as
    OpenSSL writes it through memory BIOs."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    client = client_context(ca).wrap_bio(incoming, outgoing, server_hostname="127.0.0.1")
    try:
        client.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


def refusal_alert(ca: TestCA, server: Issued) -> bytes:
    """The alert record (0x15 0x03 ...) that a TLS 1.3 server presenting ``server`` sends a client
    offering at most TLS 1.2, as OpenSSL writes it through memory BIOs: what a TLS server answers
    a handshake it refuses with."""
    hello = client_context(ca)
    hello.maximum_version = ssl.TLSVersion.TLSv1_2
    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    client = hello.wrap_bio(c_in, c_out, server_hostname="127.0.0.1")
    context = server_context(server)
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    refusing = context.wrap_bio(s_in, s_out, server_side=True)
    try:
        client.do_handshake()
    except ssl.SSLWantReadError:
        pass
    s_in.write(c_out.read())
    try:
        refusing.do_handshake()
    except ssl.SSLError:
        pass
    return s_out.read()


def _general_name(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in text)


@dataclass(frozen=True)
class MutualPki:
    """What a mutual-TLS test needs: a CA with its server and two clients, and a client signed
    by another CA (``mallory``), which the server does not trust."""

    ca: TestCA
    other_ca: TestCA
    server: Issued
    alice: Issued
    bob: Issued
    mallory: Issued

    @classmethod
    def make(cls, directory: Path) -> MutualPki:
        ca, other = TestCA.make(directory, "rstreams test CA"), TestCA.make(directory, "another CA")
        return cls(
            ca,
            other,
            ca.issue("rstreams server", san=("127.0.0.1", "localhost")),
            ca.issue("alice", client=True),
            ca.issue("bob", client=True),
            other.issue("mallory", client=True),
        )
