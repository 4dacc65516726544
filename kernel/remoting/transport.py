"""The messaging layer across processes: a :class:`TcpTransport` and its frames.

The cluster's process is the hub: every other process of the run (a TaskExecutor's) has one
connection to it, introduces itself with the addresses it hosts, and sends it whatever is not
for its own components; the hub delivers to its components or forwards to the process hosting
the receiver. The hub applies the :class:`~kernel.messaging.NetworkConditions` to every
envelope it sends or receives, so injected drops, delays and partitions act on messages
between processes exactly as on messages inside one. Components never see the transport: an
``ask`` to a component whose process is gone fails at once (RecipientUnreachable, as a refused
connection), what is told to it vanishes.

Frames are msgspec MessagePack arrays ``[channel, ...]``. Channel ``"msg"`` carries an
envelope: its header and the message, encoded with msgspec as its Struct type (named in the
frame). What fills a field typed ``Any`` (or is an answer that is no Struct) is kept as it is
when it is plain data (None, numbers, strings, bytes; lists and tuples of those arrive as
lists) and else travels as a cloudpickle extension: a deployment with its job graph and user
functions, an exception, a set. Channel ``"hello"`` introduces a
process; other channels go to the handlers registered for them (events, task summaries, ...).
Frames are decoded on the reader thread and handled on the event loop; a connection's peer
proved it belongs to the run before (:mod:`kernel.remoting.security`): pickles are only ever read from
processes of the run. A frame that does not decode, or that its channel's handler cannot take,
drops the connection (``reject``) and is reported; nothing of it reaches a component.
"""

from __future__ import annotations

import importlib
import threading
from typing import TYPE_CHECKING, Any, Callable

import msgspec

from kernel.messaging import Envelope, LocalTransport
from kernel.remoting.tcp import Connection, Server, connect, malformed

if TYPE_CHECKING:
    from kernel.loop import EventLoop
    from kernel.messaging import MessagingService
    from kernel.remoting.security import TransportSecurity

PICKLED = 1  # msgpack extension code of cloudpickled objects


def _pickled(obj: Any) -> msgspec.msgpack.Ext:
    import cloudpickle

    return msgspec.msgpack.Ext(PICKLED, cloudpickle.dumps(obj))


def _unpickled(code: int, data: memoryview) -> Any:
    import pickle

    if code != PICKLED:
        raise ValueError(f"unknown MessagePack extension {code}")
    return pickle.loads(data)


ENCODER = msgspec.msgpack.Encoder(enc_hook=_pickled)
_FRAME = msgspec.msgpack.Decoder(list, ext_hook=_unpickled)
_DECODERS: dict[str, Any] = {"": msgspec.msgpack.Decoder(ext_hook=_unpickled)}


_PLAIN = (bool, int, float, str, bytes)
_LOOSE: dict[type, tuple[str, ...]] = {}


def _wire(value: Any) -> Any:
    """A value as it crosses: plain data as it is, anything else pickled."""
    kind = type(value)
    if value is None or kind in _PLAIN:
        return value
    if kind is list or kind is tuple:
        return [_wire(item) for item in value]
    return _pickled(value)


def _loose_fields(kind: type) -> tuple[str, ...]:
    """The fields of a Struct type that are typed ``Any`` (or ``object``)."""
    names = _LOOSE.get(kind)
    if names is None:
        names = _LOOSE[kind] = tuple(f.name for f in msgspec.structs.fields(kind) if f.type in (Any, object))
    return names


def _prepare(message: Any) -> Any:
    if not isinstance(message, msgspec.Struct):
        return _wire(message)
    changes = {name: _wire(getattr(message, name)) for name in _loose_fields(type(message))}
    return msgspec.structs.replace(message, **changes) if changes else message


def _type_name(message: Any) -> str:
    kind = type(message)
    return f"{kind.__module__}:{kind.__qualname__}" if isinstance(message, msgspec.Struct) else ""


def _decoder(type_name: str) -> Any:
    decoder = _DECODERS.get(type_name)
    if decoder is None:
        module, _, qualname = type_name.partition(":")
        kind: Any = importlib.import_module(module)
        for part in qualname.split("."):
            kind = getattr(kind, part)
        decoder = _DECODERS[type_name] = msgspec.msgpack.Decoder(kind, ext_hook=_unpickled)
    return decoder


def encode_envelope(envelope: Envelope) -> bytes:
    body = ENCODER.encode(_prepare(envelope.message))
    return ENCODER.encode(["msg", envelope.sender, envelope.receiver, envelope.ask_id, envelope.reply_to,
                           envelope.failed, _type_name(envelope.message), body])


def decode_envelope(frame: list) -> Envelope:
    _, sender, receiver, ask_id, reply_to, failed, type_name, body = frame
    return Envelope(sender, receiver, _decoder(type_name).decode(body), ask_id, reply_to, failed)


def encode_frame(channel: str, *values: Any) -> bytes:
    return ENCODER.encode([channel, *map(_wire, values)])


class TcpTransport(LocalTransport):
    """Delivers to this process's components through the loop and to other processes' over
    their connections (see the module). ``handlers`` receive the frames of other channels as
    ``handler(connection, *values)`` on the loop; ``on_hello(connection, addresses, *info)``
    and ``on_disconnected(connection, addresses, error)`` tell of processes coming and going.
    Every connection is guarded by ``security``."""

    def __init__(self, loop: EventLoop, service: MessagingService, hub: bool, security: TransportSecurity) -> None:
        super().__init__(loop, service)
        self.hub = hub
        self.security = security
        self.routes: dict[str, Connection] = {}
        #: a process that is not the hub sends everything for other processes to the hub
        self.default_route: Connection | None = None
        self.handlers: dict[str, Callable[..., None]] = {}
        self.on_hello: Callable[..., None] = lambda connection, addresses, *info: None
        self.on_disconnected: Callable[[Connection, list[str], BaseException | None], None] = (
            lambda connection, addresses, error: None)
        self.server: Server | None = None
        #: the connections of processes that introduced themselves, with the addresses they host
        self.connections: dict[Connection, list[str]] = {}
        self._lock = threading.Lock()

    # -- connections --------------------------------------------------------------------------

    def listen(self, host: str, port: int = 0, advertised: str = "") -> str:
        """Accept processes' connections (the hub) on ``host``; returns where they reach it,
        ``advertised:port`` (``host:port`` when not given)."""
        self.server = Server(host, port, self._frames, self._closed, "rpc", self.security, advertised)
        return self.server.address

    def connect(self, address: str, addresses: list[str], *info: Any) -> Connection:
        """Connect to the hub at ``address`` as the process hosting ``addresses``."""
        connection = connect(address, self._frames, self._closed, "rpc", self.security)
        self.default_route = connection
        self.loop.io_started()  # the loop waits for what the hub sends
        connection.send(encode_frame("hello", addresses, *info))
        return connection

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
        for connection in list(self.connections) + ([self.default_route] if self.default_route else []):
            connection.close()

    def _frames(self, connection: Connection, frames: list[bytes]) -> None:
        """Reader thread: decode the frames, handle them on the loop."""
        try:
            decoded = [_FRAME.decode(frame) for frame in frames]
        except Exception as exc:  # noqa: BLE001 -- whatever a frame makes the decoder raise
            connection.reject(malformed(exc))
            return
        self.loop.call_soon_threadsafe(self._handle, connection, decoded)

    def _closed(self, connection: Connection, error: BaseException | None) -> None:
        self.loop.call_soon_threadsafe(self._disconnected, connection, error)

    # -- on the loop --------------------------------------------------------------------------

    def _handle(self, connection: Connection, frames: list[list]) -> None:
        for frame in frames:
            if connection.rejection is not None:
                return
            try:
                channel = frame[0]
                if channel == "msg":
                    envelope = decode_envelope(frame)
                    if self.hub:
                        self.deliver(envelope)  # the network conditions apply here
                    else:
                        self.forward(envelope)
                elif channel == "hello":
                    self._hello(connection, frame[1], frame[2:])
                else:
                    self.handlers[channel](connection, *frame[1:])
            except Exception as exc:  # noqa: BLE001 -- a frame no process of the run sends
                connection.reject(malformed(exc))

    def _hello(self, connection: Connection, addresses: list[str], info: list) -> None:
        if connection in self.connections or type(addresses) is not list or not all(type(a) is str for a in addresses):
            raise ValueError(f"a second or malformed hello: {addresses!r:.100}")
        self.connections[connection] = addresses
        for address in addresses:
            self.routes[address] = connection
        self.loop.io_started()  # the hub's loop waits for the process's messages
        self.on_hello(connection, addresses, *info)

    def _disconnected(self, connection: Connection, error: BaseException | None) -> None:
        addresses = self.connections.pop(connection, None)
        if addresses is not None:
            for address in addresses:
                if self.routes.get(address) is connection:
                    del self.routes[address]
            self.loop.io_finished()
            self.on_disconnected(connection, addresses, error)
        elif connection is self.default_route:
            self.loop.io_finished()
            self.on_disconnected(connection, [], error)

    def forward(self, envelope: Envelope) -> None:
        """To a component of this process, or over the connection to the process hosting it."""
        receiver = envelope.receiver
        service = self.service
        if receiver not in service.components and receiver not in service.crashed:
            connection = self.routes.get(receiver) or self.default_route
            if connection is not None and connection.send(encode_envelope(envelope)):
                return
        service.arrive(envelope)
