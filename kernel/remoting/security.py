"""Proving that a TCP peer belongs to the run, before anything it sends is decoded.

The cluster's process creates the run's secret (32 bytes from :mod:`secrets`, not from the
run's seeded RNG: it must not be predictable, nor repeat across runs) and hands it to the
processes it starts with their spec — on stdin, in the Spark task — never on a command line or
in the environment. Every TCP connection between the processes of a run (the cluster's
messaging hub, TaskExecutors' partition ports, the Spark driver's task channel) begins with a
mutual challenge–response, as ``multiprocessing.connection``'s authkey does, bound to the
connection both ways::

    server -> client   MAGIC (8 bytes), Ns (32 random bytes)
    client -> server   Nc (32 random bytes), HMAC-SHA256(secret, b"client" Ns Nc)
    server -> client   HMAC-SHA256(secret, b"server" Ns Nc)      -- only once the client proved it

Both proofs cover both nonces, so a handshake recorded on one connection proves nothing on
another, and a server answers no challenge before its peer proved itself. The messages have
fixed sizes: until the handshake is over nothing is length-prefixed, nothing allocated on a
peer's word, nothing decoded; all of it must be over within ``rill.security.handshake-timeout``.
After it, frames are bounded by ``rill.security.max-frame-size`` (checked from their header).

With ``security.ssl.internal.enabled`` every connection is mutual TLS first (both sides
present a certificate their peer's trust store accepts; ``security.ssl.internal.cert.fingerprint``
pins it; host names are not checked, as Flink's internal SSL does not), the handshake above
inside it. TLS runs over memory BIOs (:class:`TlsSession`): a connection's reader and its
senders are different threads, and an OpenSSL connection must not be used by two at once.

A peer that fails any of this is dropped and reported to ``on_rejected(role, address, peer,
reason)`` (:func:`report_rejections`: a ``connection_rejected`` event and one line on stderr);
the run goes on untouched.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import socket
import sys
import time
from typing import TYPE_CHECKING, Any, Callable

from kernel.errors import UsageError
from kernel.events import ConnectionRejected

if TYPE_CHECKING:
    import ssl

    from kernel.options import SecurityOptions

MAGIC = b"RILL\x00\x01\r\n"
NONCE = 32
PROOF = 32  # SHA-256
DEFAULT_MAX_FRAME_SIZE = 256 << 20
_RECV = 1 << 16


def new_secret() -> bytes:
    """A run's secret."""
    return secrets.token_bytes(32)


class Rejected(Exception):
    """A peer did not prove it belongs to the run, or sent what no process of the run sends."""


def _proof(secret: bytes, side: bytes, server_nonce: bytes, client_nonce: bytes) -> bytes:
    return hmac.new(secret, side + server_nonce + client_nonce, hashlib.sha256).digest()


class TlsSession:
    """One connection's TLS, over memory BIOs: the socket's bytes go in and out by the caller,
    who serialises every use of one session (see the module)."""

    def __init__(self, context: ssl.SSLContext, server_side: bool) -> None:
        import ssl

        self._ssl = ssl
        self.incoming = ssl.MemoryBIO()
        self.outgoing = ssl.MemoryBIO()
        self.tls = context.wrap_bio(self.incoming, self.outgoing, server_side=server_side)

    def handshake(self, stream: _HandshakeStream) -> None:
        ssl = self._ssl
        sock = stream.sock
        while True:
            try:
                self.tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                self._flush(sock)
                chunk = stream.recv()
                if not chunk:
                    raise Rejected("closed during the TLS handshake") from None
                self.incoming.write(chunk)
            except ssl.SSLError as exc:
                try:
                    self._flush(sock)  # the alert tells the peer why
                except OSError:
                    pass
                raise Rejected(f"TLS handshake failed: {_tls_reason(exc)}") from None
        self._flush(sock)

    def _flush(self, sock: socket.socket) -> None:
        data = self.outgoing.read()
        if data:
            sock.sendall(data)

    def peer_certificate(self) -> bytes:
        return self.tls.getpeercert(binary_form=True) or b""

    def encrypt(self, data: bytes | memoryview) -> bytes:
        self.tls.write(data)
        return self.outgoing.read()

    def decrypt(self, data: bytes) -> tuple[bytes, bytes, bool]:
        """What ``data`` from the socket holds: (plain bytes, bytes to send back, whether the
        peer closed its TLS). Raises :class:`Rejected` (the reason alone)."""
        ssl = self._ssl
        self.incoming.write(data)
        plain = bytearray()
        ended = False
        try:
            while True:
                chunk = self.tls.read(_RECV)
                if not chunk:
                    ended = True
                    break
                plain += chunk
        except ssl.SSLWantReadError:
            pass
        except ssl.SSLZeroReturnError:
            ended = True
        except ssl.SSLError as exc:  # the peer's alert, or what it sent is no TLS of this session
            raise Rejected(_tls_reason(exc)) from None
        return bytes(plain), self.outgoing.read(), ended


def _tls_reason(exc: Exception) -> str:
    verify = getattr(exc, "verify_message", None)
    if verify:
        return f"certificate verify failed ({verify})"
    return getattr(exc, "reason", None) or str(exc)


class _HandshakeStream:
    """The bytes of a handshake, through TLS once there is a session, all of it by ``deadline``
    (``time.monotonic``): a peer trickling bytes gets no more time than a silent one."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock = sock
        self.deadline = deadline
        self.tls: TlsSession | None = None
        self.buffer = bytearray()

    def recv(self) -> bytes:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout
        self.sock.settimeout(left)
        return self.sock.recv(_RECV)

    def send(self, data: bytes) -> None:
        self.sock.sendall(self.tls.encrypt(data) if self.tls is not None else data)

    def receive(self, size: int) -> bytes:
        while len(self.buffer) < size:
            chunk = self.recv()
            if not chunk:
                raise Rejected("closed during the handshake")
            if self.tls is not None:
                try:
                    chunk, reply, ended = self.tls.decrypt(chunk)  # maybe no data: a session ticket
                except Rejected as exc:  # the peer's TLS refused ours after all (TLS 1.3: a client hears it now)
                    raise Rejected(f"TLS handshake failed: {exc}") from None
                if reply:
                    self.sock.sendall(reply)
                if ended and len(self.buffer) + len(chunk) < size:
                    raise Rejected("closed during the handshake")
            self.buffer += chunk
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        return data


class TransportSecurity:
    """What guards the TCP connections of one process of a run: the run's ``secret``, the
    frame bound, the handshake timeout (seconds), the TLS contexts when TLS is on, and where
    rejections are reported."""

    def __init__(self, secret: bytes, *, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
                 handshake_timeout: float = 10.0, server_tls: ssl.SSLContext | None = None,
                 client_tls: ssl.SSLContext | None = None, fingerprints: frozenset[str] = frozenset(),
                 on_rejected: Callable[[str, str, str, str], None] | None = None) -> None:
        if len(secret) < 16:
            raise ValueError("a run's secret has at least 16 bytes")
        self.secret = secret
        self.max_frame_size = max_frame_size
        self.handshake_timeout = handshake_timeout
        self.server_tls = server_tls
        self.client_tls = client_tls
        self.fingerprints = fingerprints
        self.on_rejected = on_rejected or (lambda role, address, peer, reason: None)

    @classmethod
    def of(cls, options: SecurityOptions, secret: bytes,
           on_rejected: Callable[[str, str, str, str], None] | None = None) -> TransportSecurity:
        """From the run's :class:`~kernel.options.SecurityOptions` (loading the TLS files:
        a file that cannot be loaded is a UsageError naming its key)."""
        server_tls = client_tls = None
        if options.ssl_enabled:
            server_tls, client_tls = tls_contexts(options)
        return cls(secret, max_frame_size=options.max_frame_size, handshake_timeout=options.handshake_timeout / 1000,
                   server_tls=server_tls, client_tls=client_tls, fingerprints=parse_fingerprints(options.cert_fingerprint),
                   on_rejected=on_rejected)

    def rejected(self, role: str, address: str, peer: str, reason: str) -> None:
        self.on_rejected(role, address, peer, reason)

    def accept(self, sock: socket.socket) -> tuple[TlsSession | None, bytes]:
        """The server's side of the handshake on a new connection: (its TLS session, plain
        bytes that came after the handshake). Raises :class:`Rejected`."""
        return self._handshake(sock, server=True)

    def connect(self, sock: socket.socket) -> tuple[TlsSession | None, bytes]:
        """The client's side of the handshake. Raises :class:`Rejected`."""
        return self._handshake(sock, server=False)

    def _handshake(self, sock: socket.socket, server: bool) -> tuple[TlsSession | None, bytes]:
        sock.settimeout(self.handshake_timeout)  # sending, too
        stream = _HandshakeStream(sock, time.monotonic() + self.handshake_timeout)
        try:
            context = self.server_tls if server else self.client_tls
            if context is not None:
                tls = TlsSession(context, server_side=server)
                tls.handshake(stream)
                self._check_fingerprint(tls)
                stream.tls = tls
            if server:
                self._prove_server(stream)
            else:
                self._prove_client(stream)
        except socket.timeout:
            raise Rejected(f"no handshake within {self.handshake_timeout:g} s") from None
        except (ConnectionError, OSError) as exc:
            raise Rejected(f"closed during the handshake ({exc.strerror or type(exc).__name__})") from None
        sock.settimeout(None)
        return stream.tls, bytes(stream.buffer)

    def _check_fingerprint(self, tls: TlsSession) -> None:
        if not self.fingerprints:
            return
        certificate = tls.peer_certificate()
        if (hashlib.sha1(certificate).hexdigest() not in self.fingerprints
                and hashlib.sha256(certificate).hexdigest() not in self.fingerprints):
            raise Rejected("its certificate's fingerprint is not in security.ssl.internal.cert.fingerprint")

    def _prove_server(self, stream: _HandshakeStream) -> None:
        server_nonce = secrets.token_bytes(NONCE)
        stream.send(MAGIC + server_nonce)
        answer = stream.receive(NONCE + PROOF)
        client_nonce, proof = answer[:NONCE], answer[NONCE:]
        if client_nonce == server_nonce or not hmac.compare_digest(
                proof, _proof(self.secret, b"client", server_nonce, client_nonce)):
            raise Rejected("it did not prove it knows the run's secret")
        stream.send(_proof(self.secret, b"server", server_nonce, client_nonce))

    def _prove_client(self, stream: _HandshakeStream) -> None:
        challenge = stream.receive(len(MAGIC) + NONCE)
        if challenge[:len(MAGIC)] != MAGIC:
            raise Rejected("it is not a process of a rill run (no rill handshake)")
        server_nonce = challenge[len(MAGIC):]
        client_nonce = secrets.token_bytes(NONCE)
        stream.send(client_nonce + _proof(self.secret, b"client", server_nonce, client_nonce))
        if not hmac.compare_digest(stream.receive(PROOF), _proof(self.secret, b"server", server_nonce, client_nonce)):
            raise Rejected("it did not prove it knows the run's secret")


def parse_fingerprints(text: str | None) -> frozenset[str]:
    """Flink's ``security.ssl.internal.cert.fingerprint``: hex digests, colons optional, comma-separated."""
    if not text:
        return frozenset()
    return frozenset(part.strip().replace(":", "").lower() for part in text.split(",") if part.strip())


def tls_contexts(options: SecurityOptions) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """The server's and the client's TLS contexts of mutual TLS, from PEM files."""
    import ssl

    contexts = []
    for purpose in (ssl.PROTOCOL_TLS_SERVER, ssl.PROTOCOL_TLS_CLIENT):
        context = ssl.SSLContext(purpose)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.check_hostname = False  # certificates are shared by the run's processes (Flink's internal SSL)
        context.verify_mode = ssl.CERT_REQUIRED
        password = options.key_password or options.keystore_password
        try:
            context.load_cert_chain(options.keystore, password=password)
        except (OSError, ssl.SSLError, ValueError) as exc:
            raise UsageError(f"security.ssl.internal.keystore {options.keystore!r}: cannot load a PEM certificate "
                             f"and private key from it ({_load_reason(exc)})") from None
        try:
            context.load_verify_locations(cafile=options.truststore)
        except (OSError, ssl.SSLError, ValueError) as exc:
            raise UsageError(f"security.ssl.internal.truststore {options.truststore!r}: cannot load PEM "
                             f"certificates from it ({_load_reason(exc)})") from None
        contexts.append(context)
    return contexts[0], contexts[1]


def _load_reason(exc: Exception) -> str:
    return getattr(exc, "strerror", None) or getattr(exc, "reason", None) or str(exc) or type(exc).__name__


def report_rejections(run: Any) -> Callable[[str, str, str, str], None]:
    """Rejections of ``run``'s process: a ``connection_rejected`` event and one line on stderr."""

    def rejected(role: str, address: str, peer: str, reason: str) -> None:
        run.bus.emit(ConnectionRejected(time=run.clock.now(), role=role, address=address, peer=peer, reason=reason))
        print(f"rill: warning: rejected a connection from {peer} to {address} ({role}): {reason}",
              file=sys.stderr, flush=True)

    return rejected
