"""Certificates for TLS tests, made with the ``openssl`` command (tests needing them are skipped
without it): PEM files as ``security.ssl.internal.*`` takes them."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

needs_openssl = pytest.mark.skipif(shutil.which("openssl") is None,
                                   reason="making test certificates needs the openssl command")

_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@dataclass(frozen=True)
class Identity:
    """A key and its certificate: ``keystore`` holds both, ``certificate`` the certificate,
    ``key`` the key."""

    keystore: Path
    certificate: Path
    key: Path

    def fingerprint(self, digest: str = "sha1") -> str:
        """As ``openssl x509 -fingerprint`` prints it (``AB:CD:...``)."""
        out = subprocess.run(["openssl", "x509", "-in", str(self.certificate), "-noout", "-fingerprint", f"-{digest}"],
                             check=True, capture_output=True, text=True).stdout
        return out.strip().split("=", 1)[1]


def self_signed(directory: Path, name: str) -> Identity:
    """A self-signed certificate: keystore and truststore of a run, as Flink recommends (or
    a CA's)."""
    directory.mkdir(parents=True, exist_ok=True)
    _openssl("req", "-x509", *_KEY, "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "2",
             "-subj", f"/CN={name}", cwd=directory)
    return _identity(directory, name)


def signed_by(ca: Identity, directory: Path, name: str) -> Identity:
    """A certificate ``ca`` signed (a firm-wide CA's)."""
    directory.mkdir(parents=True, exist_ok=True)
    _openssl("req", *_KEY, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}", cwd=directory)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", str(ca.certificate), "-CAkey",
             str(ca.key), "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", cwd=directory)
    return _identity(directory, name)


def encrypted(identity: Identity, password: str) -> Identity:
    """The same key, encrypted with ``password``, in a keystore of its own."""
    directory = identity.keystore.parent
    name = identity.key.stem + "-encrypted"
    _openssl("pkey", "-in", str(identity.key), "-aes256", "-passout", f"pass:{password}",
             "-out", f"{name}.key", cwd=directory)
    keystore = directory / f"{name}.keystore.pem"
    keystore.write_text((directory / f"{name}.key").read_text() + identity.certificate.read_text())
    return Identity(keystore, identity.certificate, directory / f"{name}.key")


def _identity(directory: Path, name: str) -> Identity:
    keystore = directory / f"{name}.keystore.pem"
    keystore.write_text((directory / f"{name}.key").read_text() + (directory / f"{name}.pem").read_text())
    return Identity(keystore, directory / f"{name}.pem", directory / f"{name}.key")
