"""Short-lived certificates made for one test: a CA, server certificates for 127.0.0.1, and
client certificates with a URI SAN (a SPIFFE-style identity). Nothing here is kept."""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

LIFETIME = dt.timedelta(hours=1)


@dataclass(frozen=True)
class Issued:
    cert: Path
    key: Path

    def pem(self) -> tuple[bytes, bytes]:
        return self.key.read_bytes(), self.cert.read_bytes()


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


class ScratchCA:
    """A CA in ``directory`` that issues what a test needs."""

    def __init__(self, directory: Path, name: str = "statewright test CA") -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self._key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        self._subject = _name(name)
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(self._subject)
            .issuer_name(self._subject)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + LIFETIME)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(self._key, hashes.SHA256())
        )
        self.cert = directory / f"{name.replace(' ', '-')}.pem"
        self.cert.write_bytes(self._cert.public_bytes(serialization.Encoding.PEM))

    def pem(self) -> bytes:
        return self.cert.read_bytes()

    def issue(
        self, stem: str, *, server: bool = False, uri: str | None = None, common: str = ""
    ) -> Issued:
        key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        names: list[x509.GeneralName] = []
        if server:
            names += [
                x509.DNSName("localhost"),
                x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
            ]
        if uri is not None:
            names.append(x509.UniformResourceIdentifier(uri))
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(common or stem))
            .issuer_name(self._subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + LIFETIME)
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .sign(self._key, hashes.SHA256())
        )
        issued = Issued(self.directory / f"{stem}.pem", self.directory / f"{stem}.key")
        issued.key.write_bytes(_key_pem(key))
        issued.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        return issued
