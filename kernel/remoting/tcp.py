"""Length-prefixed frames over TCP, between the processes of a run.

A :class:`Connection` sends frames (a 4-byte big-endian length, then the payload) from any
thread, in order, and reads them on a reader thread of its own, which hands every batch of
complete frames to ``on_frames`` and, once, the end of the connection to ``on_closed`` (None
for an orderly close, else the error). A sender never waits: what the socket does not take at
once is queued for a writer thread (started the first time). The reader always reads, so the
peer's runtime never holds up a sender. A :class:`Server` accepts connections on an accept
thread. A :class:`LineWriter` is a process's ``sys.stdout`` handing whole lines to a connection.

No byte of a peer is decoded before it proved it belongs to the run (:mod:`kernel.remoting.security`:
the run's secret, TLS when configured) — on the accepted connection's reader thread, so a
silent peer holds up no other; a frame larger than ``rill.security.max-frame-size`` drops the
connection before it is read. A frame its owner cannot decode, the owner rejects (``reject``):
the peer is dropped, the rejection reported, and ``on_closed`` told.
"""

from __future__ import annotations

import io
import socket
import threading
from collections import deque
from typing import TYPE_CHECKING, Any, Callable

from kernel.remoting.security import Rejected
from kernel.lifecycle.tracebacks import describe

if TYPE_CHECKING:
    from kernel.remoting.security import TlsSession, TransportSecurity

_HEADER = 4
_CHUNK = 1 << 20


def parse_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host, int(port)


def malformed(exc: BaseException) -> str:
    """Why a connection's owner rejects a frame: what decoding or handling it raised, in one line."""
    return f"malformed frame: {describe(exc)}"[:300].replace("\n", " ")


def _name(address: Any) -> str:
    return f"{address[0]}:{address[1]}" if isinstance(address, tuple) else str(address)


class Connection:
    """One connection of the run (see the module). An accepted one proves on its reader thread
    that its peer belongs to the run before it reads a frame (and then releases its server's
    ``accepted`` semaphore); one made by :func:`connect` has done so before it starts. ``reject(reason)`` drops the peer (reported
    to the security's ``on_rejected``); ``on_closed`` then gets :class:`Rejected`."""

    def __init__(self, sock: socket.socket, on_frames: Callable[[Connection, list[bytes]], None],
                 on_closed: Callable[[Connection, BaseException | None], None], name: str,
                 security: TransportSecurity, accepted: threading.Semaphore | None = None,
                 tls: TlsSession | None = None, received: bytes = b"") -> None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = sock
        self.name = name
        self.security = security
        self.address = _name(sock.getsockname())
        try:
            self.peer = _name(sock.getpeername())
        except OSError:  # it is gone already
            self.peer = "?"
        self.on_frames = on_frames
        self.on_closed = on_closed
        self.closed = False
        self.rejection: Rejected | None = None
        self._accepted = accepted
        self._tls = tls
        self._received = received
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, name=f"rill-tcp-{name}", daemon=True)
        self._queued: deque[bytes | memoryview] = deque()  # what the socket did not take yet, in order
        self._wake = threading.Condition(self._lock)
        self._writer: threading.Thread | None = None

    def start(self) -> Connection:
        self._reader.start()
        return self

    def send(self, payload: bytes) -> bool:
        """Send one frame; False when the connection is closed (or broke)."""
        frame = len(payload).to_bytes(_HEADER, "big") + payload
        with self._lock:
            if self.closed:
                return False
            return self._push(self._tls.encrypt(frame) if self._tls is not None else frame)

    def _push(self, data: bytes) -> bool:
        """Send ``data`` now or queue it for the writer thread (the lock is held)."""
        if self._queued:
            self._queued.append(data)
            return True
        try:
            sent = self.sock.send(data, socket.MSG_DONTWAIT)
        except BlockingIOError:
            sent = 0
        except OSError:
            self._shutdown()
            return False
        if sent < len(data):
            self._queued.append(memoryview(data)[sent:])
            if self._writer is None:
                self._writer = threading.Thread(target=self._write, name=f"rill-tcp-{self.name}-w", daemon=True)
                self._writer.start()
            self._wake.notify()
        return True

    def _write(self) -> None:
        """The writer thread: send what is queued, blocking as long as the socket needs."""
        while True:
            with self._lock:
                while not self._queued and not self.closed:
                    self._wake.wait()
                if self.closed:
                    return
                data = self._queued[0]
            try:
                self.sock.sendall(data)
            except OSError:
                with self._lock:
                    self._shutdown()
                return
            with self._lock:
                self._queued.popleft()
                if not self._queued:
                    self._wake.notify_all()  # a close waiting for the queue to drain

    def close(self, timeout: float = 10.0) -> None:
        """Close both ways once what is queued is sent (or ``timeout`` passed); the reader
        reports the end."""
        with self._lock:
            self._wake.wait_for(lambda: not self._queued or self.closed, timeout)
            self._shutdown()

    def reject(self, reason: str) -> None:
        """Drop the peer: it sent what no process of the run sends (reported once)."""
        with self._lock:
            if self.rejection is not None:
                return
            self.rejection = Rejected(reason)
        self.security.rejected(self.name, self.address, self.peer, reason)  # reported before the peer sees it
        with self._lock:
            self._shutdown()

    def _shutdown(self) -> None:
        if not self.closed:
            self.closed = True
            self._queued.clear()
            self._wake.notify()
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _read(self) -> None:
        sock = self.sock
        if self._accepted is not None:
            try:
                self._tls, self._received = self.security.accept(sock)
            except Rejected as exc:
                self.security.rejected(self.name, self.address, self.peer, str(exc))
                sock.close()
                self.closed = True
                return
            finally:
                self._accepted.release()
        error: BaseException | None = None
        try:
            self._frames(sock)
        except Rejected as exc:
            self.reject(str(exc))
        except OSError as exc:
            error = None if self.closed else exc
        with self._lock:
            self.closed = True
            self._queued.clear()
            self._wake.notify()
        sock.close()
        self.on_closed(self, self.rejection or error)

    def _frames(self, sock: socket.socket) -> None:
        """Read frames until the end of the connection (or its rejection), handing each batch of
        complete ones to ``on_frames``."""
        buffer = bytearray(self._received)
        limit = self.security.max_frame_size
        tls = self._tls
        ended = False
        while True:
            frames = []
            position, available = 0, len(buffer)
            while available - position >= _HEADER:
                size = int.from_bytes(buffer[position:position + _HEADER], "big")
                if size > limit:
                    if frames:
                        self.on_frames(self, frames)
                    raise Rejected(f"a frame of {size} bytes is larger than rill.security.max-frame-size "
                                   f"({limit} bytes)")
                end = position + _HEADER + size
                if end > available:
                    break
                frames.append(bytes(buffer[position + _HEADER:end]))
                position = end
            if position:
                del buffer[:position]
            if frames:
                self.on_frames(self, frames)
            if ended or self.rejection is not None:
                return
            chunk = sock.recv(_CHUNK)
            if not chunk:
                return
            if tls is not None:
                with self._lock:
                    try:
                        chunk, reply, ended = tls.decrypt(chunk)
                    except Rejected as exc:
                        raise Rejected(f"TLS failed: {exc}") from None
                    if reply and not self.closed:
                        self._push(reply)
            buffer += chunk


def connect(address: str, on_frames: Callable[[Connection, list[bytes]], None],
            on_closed: Callable[[Connection, BaseException | None], None], name: str,
            security: TransportSecurity, timeout: float = 10.0) -> Connection:
    """Connect to ``host:port``, prove both ways that the peer belongs to the run, and start
    reading. Raises OSError (:class:`Refused` when the peer did not prove it)."""
    sock = socket.create_connection(parse_address(address), timeout=timeout)
    try:
        tls, received = security.connect(sock)
    except Rejected as exc:
        local = _name(sock.getsockname())
        sock.close()
        security.rejected(name, local, address, str(exc))
        raise Refused(f"{address} is not a process of this run: {exc}") from None
    return Connection(sock, on_frames, on_closed, name, security, tls=tls, received=received).start()


class Refused(ConnectionError):
    """The peer a process connected to did not prove it belongs to the run."""


class Server:
    """Accepts connections on ``host`` (port 0: any free one), each a :class:`Connection`
    named ``name`` handing its frames to ``on_frames``; ``address`` is where peers reach it
    (``advertised`` host, else ``host``). At most ``MAX_HANDSHAKES`` peers prove themselves at
    once: one more is dropped at once (a flood of connections costs no more threads)."""

    MAX_HANDSHAKES = 64

    def __init__(self, host: str, port: int, on_frames: Callable[[Connection, list[bytes]], None],
                 on_closed: Callable[[Connection, BaseException | None], None], name: str,
                 security: TransportSecurity, advertised: str = "") -> None:
        self._sock = socket.create_server((host, port))
        self.address = f"{advertised or host}:{self._sock.getsockname()[1]}"
        self.on_frames = on_frames
        self.on_closed = on_closed
        self.name = name
        self.security = security
        self._bound = _name(self._sock.getsockname())
        self._handshakes = threading.Semaphore(self.MAX_HANDSHAKES)
        self._thread = threading.Thread(target=self._accept, name=f"rill-accept-{self.address}", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self._sock.accept()
            except OSError:
                return
            if not self._handshakes.acquire(blocking=False):
                self._refuse(sock, f"more than {self.MAX_HANDSHAKES} peers proving themselves at once")
                continue
            try:
                Connection(sock, self.on_frames, self.on_closed, self.name, self.security,
                           accepted=self._handshakes).start()
            except (OSError, RuntimeError) as exc:  # it went away at once; no thread to be had
                self._handshakes.release()
                self._refuse(sock, f"cannot take it: {describe(exc)}")

    def _refuse(self, sock: socket.socket, reason: str) -> None:
        try:
            peer = _name(sock.getpeername())
        except OSError:
            peer = "?"
        self.security.rejected(self.name, self._bound, peer, reason)
        sock.close()

    def close(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()


class LineWriter(io.TextIOBase):
    """A text stream (a worker's ``sys.stdout``) that hands on whole lines: each write's complete
    lines go to ``send`` at once (so the lines of two writers never mix); the rest of a line
    waits for its end, or for :meth:`close`."""

    def __init__(self, send: Callable[[str], None]) -> None:
        super().__init__()
        self.send = send
        self.pending = ""
        self.lock = threading.Lock()

    @property
    def encoding(self) -> str:
        return "utf-8"

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        with self.lock:
            self.pending += text
            end = self.pending.rfind("\n") + 1
            if end:
                self.send(self.pending[:end])
                self.pending = self.pending[end:]
        return len(text)

    def close(self) -> None:
        with self.lock:
            if self.pending:
                self.send(self.pending)
                self.pending = ""
        super().close()
