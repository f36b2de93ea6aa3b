"""Server TLS whose certificate, key and client CA are re-read when their files change.

grpcio's dynamic server credentials ask for the certificate configuration at every new
handshake; the fetcher answers "unchanged" (None) unless a file's modification time or
size moved since it last read them. cert-manager and kubelet rotate a Secret's files in
place (through a symlink swap), so new connections get the new certificate with no
restart, and connections already open keep theirs.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import grpc
from cryptography import x509
from cryptography.hazmat.primitives import serialization

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TlsFiles:
    cert: Path
    key: Path
    client_ca: Path | None = None  # set: clients must present a certificate it signed


def _stamp(path: Path) -> tuple[float, int]:
    stat = os.stat(path)  # follows symlinks: a swapped ..data link changes the target
    return stat.st_mtime, stat.st_size


class ReloadingCredentials:
    """Builds the server credentials and serves their reloads."""

    def __init__(self, files: TlsFiles) -> None:
        self._files = files
        self._lock = threading.Lock()
        self._stamps = self._read_stamps()
        self._initial = self._configuration()
        self.reloads = 0

    def _paths(self) -> list[Path]:
        f = self._files
        return [f.cert, f.key] + ([f.client_ca] if f.client_ca is not None else [])

    def _read_stamps(self) -> list[tuple[float, int]]:
        return [_stamp(p) for p in self._paths()]

    def _configuration(self) -> grpc.ServerCertificateConfiguration:
        f = self._files
        pair = (f.key.read_bytes(), f.cert.read_bytes())
        _check_pair(*pair, f.cert)
        roots = f.client_ca.read_bytes() if f.client_ca is not None else None
        return grpc.ssl_server_certificate_configuration([pair], root_certificates=roots)

    def credentials(self) -> grpc.ServerCredentials:
        return grpc.dynamic_ssl_server_credentials(
            self._initial,
            self._fetch,  # type: ignore[arg-type]  # None means "unchanged" (grpc's docs)
            require_client_authentication=self._files.client_ca is not None,
        )

    def _fetch(self) -> grpc.ServerCertificateConfiguration | None:
        # Called by grpc core for each handshake: a few stat calls when nothing changed.
        with self._lock:
            try:
                stamps = self._read_stamps()
                if stamps == self._stamps:
                    return None
                configuration = self._configuration()
            except (OSError, ValueError) as exc:
                # Mid-rotation (one file written, the other not yet): keep serving the
                # certificate that works, and look again at the next handshake.
                _log.warning("TLS files could not be re-read (%s); keeping the current ones", exc)
                return None
            self._stamps = stamps
            self.reloads += 1
            _log.info("TLS certificate reloaded from %s", self._files.cert)
            return configuration


def _check_pair(key_pem: bytes, cert_pem: bytes, where: Path) -> None:
    """ValueError unless the certificate (the first of its chain) is the key's: a rotation
    caught between writing the two files must not be served."""
    key = serialization.load_pem_private_key(key_pem, password=None)
    cert = x509.load_pem_x509_certificate(cert_pem)
    public = serialization.PublicFormat.SubjectPublicKeyInfo
    encoding = serialization.Encoding.DER
    if key.public_key().public_bytes(encoding, public) != cert.public_key().public_bytes(
        encoding, public
    ):
        raise ValueError(f"the certificate in {where} is not for the private key beside it")
