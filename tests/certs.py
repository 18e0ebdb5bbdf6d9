"""A certificate authority made in a test, with the `cryptography` package: the CA file a client
trusts, and leaf certificates (server or client) for 127.0.0.1 and localhost that it signed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from ipaddress import IPv4Address
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Authority:
    """A CA made for one test; `issue` writes a certificate it signed and its key."""

    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate
    path: Path  # the CA certificate, PEM: what a client trusts

    @classmethod
    def make(cls, where: Path, name: str) -> Authority:
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        cert = (
            _builder(subject, subject, key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True, content_commitment=False, key_encipherment=False,
                    data_encipherment=False, key_agreement=False, key_cert_sign=True,
                    crl_sign=True, encipher_only=False, decipher_only=False,
                ),
                critical=True,
            )
            .sign(key, hashes.SHA256())
        )  # fmt: skip
        path = where / f"{name}.pem"
        path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        return cls(key, cert, path)

    def issue(
        self, cert_path: Path, key_path: Path, name: str, client: bool = False, node: bool = False
    ) -> int:
        """A leaf for 127.0.0.1 and localhost: a server's, a client's with `client`, or with
        `node` one for both (a node that serves and, under mutual TLS, forwards); its serial."""
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        usages = [ExtendedKeyUsageOID.CLIENT_AUTH] if client else [ExtendedKeyUsageOID.SERVER_AUTH]
        if node:
            usages = [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
        cert = (
            _builder(subject, self.cert.subject, key.public_key())
            .add_extension(
                x509.SubjectAlternativeName(
                    [x509.DNSName("localhost"), x509.IPAddress(IPv4Address("127.0.0.1"))]
                ),
                critical=False,
            )
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
            .sign(self.key, hashes.SHA256())
        )
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        return int(cert.serial_number)


def _builder(subject: x509.Name, issuer: x509.Name, public: Any) -> x509.CertificateBuilder:
    now = datetime.now(UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=1))
    )


def server_files(where: Path, ca: Authority) -> dict[str, str]:
    """A server certificate and key signed by `ca`, as the settings that name them."""
    cert, key = where / "server.pem", where / "server-key.pem"
    ca.issue(cert, key, "okuri-server-1")
    return {"OKURI_TLS_CERT": str(cert), "OKURI_TLS_KEY": str(key)}
