"""Length-prefixed frames over TCP, between the processes of a run.

A :class:`Connection` sends frames (a 4-byte big-endian length, then the payload) from any
thread, in order, and reads them on a reader thread of its own, which hands every batch of
complete frames to ``on_frames`` and, once, the end of the connection to ``on_closed`` (None
for an orderly close, else the error). A sender never waits: what the socket does not take at
once is queued for a writer thread (started the first time). The reader always reads, so the
peer's runtime never holds up a sender. A :class:`Server` accepts connections on an accept
thread. A :class:`LineWriter` is a process's ``sys.stdout`` handing whole lines to a connection.
"""

from __future__ import annotations

import io
import socket
import threading
from collections import deque
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
            if self._queued:
                self._queued.append(frame)
                return True
            try:
                sent = self.sock.send(frame, socket.MSG_DONTWAIT)
            except BlockingIOError:
                sent = 0
            except OSError:
                self._shutdown()
                return False
            if sent < len(frame):
                self._queued.append(memoryview(frame)[sent:])
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
            self._queued.clear()
            self._wake.notify()
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
