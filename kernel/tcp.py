"""Length-prefixed frames over TCP, between the processes of a run.

A :class:`Connection` sends frames (a 4-byte big-endian length, then the payload) from any
thread, one whole frame at a time, and reads them on a reader thread of its own, which hands
every batch of complete frames to ``on_frames`` and, once, the end of the connection to
``on_closed`` (None for an orderly close, else the error). The reader always reads: a sender
only waits while the peer's kernel buffers are full, never for the peer's runtime. A
:class:`Server` accepts connections on an accept thread.
"""

from __future__ import annotations

import socket
import threading
from typing import Callable

_HEADER = 4
_CHUNK = 1 << 20


def parse_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host, int(port)


class Connection:
    def __init__(self, sock: socket.socket, on_frames: Callable[[Connection, list[bytes]], None],
                 on_closed: Callable[[Connection, BaseException | None], None], name: str = "") -> None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = sock
        self.name = name
        self.on_frames = on_frames
        self.on_closed = on_closed
        self.closed = False
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, name=f"rill-tcp-{name}", daemon=True)

    def start(self) -> Connection:
        self._reader.start()
        return self

    def send(self, payload: bytes) -> bool:
        """Send one frame; False when the connection is closed (or breaks meanwhile)."""
        header = len(payload).to_bytes(_HEADER, "big")
        with self._lock:
            if self.closed:
                return False
            try:
                if len(payload) < 65536:
                    self.sock.sendall(header + payload)
                else:
                    self.sock.sendall(header)
                    self.sock.sendall(payload)
            except OSError:
                self._shutdown()
                return False
        return True

    def close(self) -> None:
        """Close both ways; the reader reports the end."""
        with self._lock:
            self._shutdown()

    def _shutdown(self) -> None:
        if not self.closed:
            self.closed = True
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _read(self) -> None:
        buffer = bytearray()
        error: BaseException | None = None
        sock = self.sock
        while True:
            try:
                chunk = sock.recv(_CHUNK)
            except OSError as exc:
                error = None if self.closed else exc
                break
            if not chunk:
                break
            buffer += chunk
            frames = []
            position, available = 0, len(buffer)
            while available - position >= _HEADER:
                size = int.from_bytes(buffer[position:position + _HEADER], "big")
                end = position + _HEADER + size
                if end > available:
                    break
                frames.append(bytes(buffer[position + _HEADER:end]))
                position = end
            if position:
                del buffer[:position]
            if frames:
                self.on_frames(self, frames)
        with self._lock:
            self.closed = True
        sock.close()
        self.on_closed(self, error)


def connect(address: str, on_frames: Callable[[Connection, list[bytes]], None],
            on_closed: Callable[[Connection, BaseException | None], None], name: str = "",
            timeout: float = 10.0) -> Connection:
    """Connect to ``host:port`` and start reading."""
    sock = socket.create_connection(parse_address(address), timeout=timeout)
    sock.settimeout(None)
    return Connection(sock, on_frames, on_closed, name).start()


class Server:
    """Accepts connections on ``host`` (port 0: any free one) and hands each, started, to
    ``on_connection``; ``address`` is where it listens."""

    def __init__(self, host: str, port: int, on_connection: Callable[[socket.socket], None]) -> None:
        self._sock = socket.create_server((host, port))
        self.address = f"{host}:{self._sock.getsockname()[1]}"
        self.on_connection = on_connection
        self._thread = threading.Thread(target=self._accept, name=f"rill-accept-{self.address}", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self._sock.accept()
            except OSError:
                return
            self.on_connection(sock)

    def close(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
