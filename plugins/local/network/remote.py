"""Channels between TaskExecutors in different processes: Flink's credit-based flow control over
TCP (reference §5.4, §23), with the frames of :mod:`.wire`.

Consumer side: a :class:`RemoteInputChannel` requests its subpartition from the producer's
TaskExecutor through the :class:`PartitionRequestClient` (one connection per producer
TaskExecutor, shared by all channels), announcing as initial credit its exclusive buffers
(``buffers-per-channel``). Every buffer that arrives uses one credit and carries the sender's
backlog (buffers still queued); the channel takes floating buffers of its gate for the backlog
and announces them as credit. A processed buffer gives its credit back: an exclusive one is
announced again at once, a floating one returns to the gate (a buffer restored from an
unaligned checkpoint took no credit and gives none back). Events need no credit.

Producer side: the :class:`PartitionRequestServer` answers a request with a
:class:`SubpartitionView`, the remote end the subpartition sends to as it would to a local
channel: one buffer per credit, events whenever, priority events (unaligned barriers, barrier
announcements) ahead of everything queued; without credit buffers stay queued, the producer's
pool runs dry and its task is back pressured. An aligned barrier blocks the subpartition until
the consumer, aligned, sends ``resume``. When the consumer's alignment times out it asks
(``convert``) for an announced barrier still queued at the producer to overtake the data before
it: the producer sends the persisted forms of that data (``overtaken``, which the consumer adds
to the channel state it is persisting), then the barrier as a priority event — in that order on
the one connection.

A connection that breaks (or cannot be made) fails, at once, every task with a channel on it
that had not ended — Flink's RemoteTransportException. Both ends prove they belong to the run
before a frame crosses (:mod:`kernel.remoting.security`); a frame either end cannot take drops the
connection (``reject``: reported, and it breaks as above), never the TaskExecutor.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable

import msgspec

from kernel.runtime.streaming.elements import EndOfPartition, RecordBatch
from kernel.remoting.tcp import Connection, Server, connect, malformed
from plugins.local.network.input_channel import InputChannel
from plugins.local.network.wire import RecordCodec, decode_event, encode_event

if TYPE_CHECKING:
    from kernel.loop import EventLoop
    from kernel.remoting.security import TransportSecurity
    from plugins.local.network.input_gate import InputGate
    from plugins.local.network.partition import Subpartition
    from plugins.local.network.shuffle import ShuffleEnvironment

_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(list).decode


class RemoteTransportException(Exception):
    """A connection to another TaskExecutor failed."""


# -- the producer's side ------------------------------------------------------------------------


class SubpartitionView:
    """The remote consumer of one subpartition, as the subpartition sees it (a channel)."""

    __slots__ = ("connection", "receiver_id", "credit", "subpartition", "codec")

    def __init__(self, connection: Connection, receiver_id: int, credit: int) -> None:
        self.connection = connection
        self.receiver_id = receiver_id
        self.credit = credit
        self.subpartition: Subpartition | None = None
        self.codec: RecordCodec | None = None

    def reserve(self) -> bool:
        if self.credit > 0:
            self.credit -= 1
            return True
        return False

    def deliver(self, item: RecordBatch) -> None:
        codec = self.codec
        if codec is None:
            codec = self.codec = RecordCodec(self.subpartition.partition.type_info)
        self.connection.send(_encode(["buf", self.receiver_id, self.subpartition.queued_buffers,
                                      codec.encode(item.values), item.timestamps]))

    def deliver_event(self, item: Any) -> None:
        self.connection.send(_encode(["evt", self.receiver_id, *encode_event(item)]))

    def deliver_priority(self, item: Any) -> None:
        self.connection.send(_encode(["pri", self.receiver_id, *encode_event(item)]))

    def convert_to_priority(self, checkpoint_id: int) -> None:
        """The consumer asks the barrier of ``checkpoint_id``, if still queued here, to overtake."""
        subpartition = self.subpartition
        if subpartition is None:
            return
        overtaken = subpartition.convert_to_priority(checkpoint_id)
        if overtaken is not None:
            self.connection.send(_encode(["ovt", self.receiver_id, overtaken]))
            subpartition.try_send()

    def detach(self) -> None:
        subpartition = self.subpartition
        if subpartition is not None and subpartition.channel is self:
            subpartition.channel = None


_LOCKED = frozenset({"credit", "resume", "convert", "processed"})


class _FrameEndpoint:
    """An end of partition connections: the frames a connection's reader thread receives are
    decoded there (a malformed one rejects the peer) and handled in the TaskExecutor's loop."""

    loop: EventLoop

    def _frames(self, connection: Connection, frames: list[bytes]) -> None:
        try:
            decoded = [_decode(frame) for frame in frames]
        except msgspec.DecodeError as exc:
            connection.reject(malformed(exc))
            return
        self.loop.call_soon_threadsafe(self._handle, connection, decoded)

    def _handle(self, connection: Connection, frames: list[list]) -> None:
        raise NotImplementedError


class PartitionRequestServer(_FrameEndpoint):
    """Serves this TaskExecutor's subpartitions to remote consumers, listening on ``host``;
    they reach it at ``address`` (on the ``advertised`` host when given)."""

    def __init__(self, shuffle: ShuffleEnvironment, loop: EventLoop, host: str, security: TransportSecurity,
                 advertised: str = "") -> None:
        self.shuffle = shuffle
        self.loop = loop
        self.views: dict[tuple[Connection, int], SubpartitionView] = {}
        self.requests: dict[tuple[Connection, int], tuple[str, int]] = {}
        self.server = Server(host, 0, self._frames, self._closed, "partition", security, advertised)
        self.address = self.server.address

    def _closed(self, connection: Connection, error: BaseException | None) -> None:
        self.loop.call_soon_threadsafe(self._disconnected, connection)

    def _handle(self, connection: Connection, frames: list[list]) -> None:
        """The consumers' requests, in this TaskExecutor's loop; what reaches a subpartition
        under the network's lock (its producer may run in a thread of its own)."""
        for frame in frames:
            if connection.rejection is not None:
                return
            try:
                self._handle_frame(connection, frame)
            except Exception as exc:  # noqa: BLE001 -- a frame no TaskExecutor sends
                connection.reject(malformed(exc))

    def _handle_frame(self, connection: Connection, frame: list) -> None:
        kind, receiver_id = frame[0], frame[1]
        if type(receiver_id) is not int:
            raise ValueError(f"receiver id {receiver_id!r:.40}")
        key = (connection, receiver_id)
        if kind == "req":
            _, _, partition_id, index, credit = frame
            if type(partition_id) is not str or type(index) is not int or type(credit) is not int or key in self.views:
                raise ValueError(f"request {frame!r:.100}")
            view = self.views[key] = SubpartitionView(connection, receiver_id, credit)
            self.requests[key] = (partition_id, index)
            self.shuffle.register_channel(partition_id, index, view)
        elif kind == "cancel":
            self._release(key)
        elif kind in _LOCKED:
            with self.shuffle.lock:
                self._handle_locked(key, kind, frame)
        else:
            raise ValueError(f"unknown frame kind {kind!r:.40}")

    def _handle_locked(self, key: tuple[Connection, int], kind: str, frame: list) -> None:
        view = self.views.get(key)
        if view is None:
            return
        if kind == "credit":
            view.credit += frame[2]
            if view.subpartition is not None:
                view.subpartition.try_send()
        elif kind == "resume":
            if view.subpartition is not None:
                view.subpartition.resume()
        elif kind == "convert":
            view.convert_to_priority(frame[2])
        elif kind == "processed":
            if view.subpartition is not None:
                view.subpartition.all_data_processed()

    def _release(self, key: tuple[Connection, int]) -> None:
        view = self.views.pop(key, None)
        request = self.requests.pop(key, None)
        if view is not None:
            with self.shuffle.lock:
                view.detach()
            self.shuffle.unregister_channel(*request, view)

    def _disconnected(self, connection: Connection) -> None:
        for key in [k for k in self.views if k[0] is connection]:
            self._release(key)

    def close(self) -> None:
        self.server.close()


# -- the consumer's side ------------------------------------------------------------------------


class RemoteInputChannel(InputChannel):
    """An input channel reading a subpartition of another TaskExecutor (see the module)."""

    __slots__ = ("address", "codec", "client", "receiver_id", "available", "backlog", "on_failure")
    remote = True

    def __init__(self, gate: InputGate, index: int, address: str, type_info: Any) -> None:
        super().__init__(gate, index)
        self.address = address
        self.codec = RecordCodec(type_info)
        self.client: PartitionRequestClient | None = None
        self.receiver_id = 0
        self.available = 0  # announced credit not used yet
        self.backlog = 0
        self.on_failure: Callable[[BaseException], None] = lambda error: None

    def initial_credit(self) -> int:
        credit, self.exclusive_free = self.exclusive_free, 0
        self.credits.extend([True] * credit)
        self.available = credit
        return credit

    def reserve(self) -> bool:
        raise RuntimeError("a remote channel's credit is announced, not reserved")

    def on_buffer(self, backlog: int, values: bytes, timestamps: list | None) -> None:
        batch = RecordBatch(self.codec.decode(values), timestamps)
        with self.gate.lock:
            self.available -= 1
            self.deliver(batch)
            self.backlog = backlog
            self.buffer_available()

    def buffer_available(self) -> None:
        """Take floating buffers of the gate for the sender's backlog; announce them (the lock
        is held)."""
        gate = self.gate
        added = 0
        while self.available < self.backlog and gate.floating_free > 0:
            gate.floating_free -= 1
            self.credits.append(False)
            self.available += 1
            added += 1
        if self.available < self.backlog and not self.waiting:
            self.waiting = True
            gate.waiting_for_credit.append(self)
        if added:
            self.client.send(self, "credit", added)

    def _exclusive_returned(self) -> None:
        """The exclusive buffer goes back to the sender as one credit."""
        self.credits.append(True)
        self.available += 1
        self.client.send(self, "credit", 1)

    def _resume(self) -> None:
        self.client.send(self, "resume")

    def acknowledge_data_processed(self) -> None:
        self.client.send(self, "processed")

    def convert_to_priority(self, checkpoint_id: int) -> None:
        """The barrier queued here overtakes at once; one still at the producer is asked to."""
        with self.gate.lock:
            if self._convert_queued(checkpoint_id):
                return
        self.client.send(self, "convert", checkpoint_id)

    def add_overtaken(self, elements: list[bytes]) -> None:
        """What the barrier overtook at the producer, persisted (when still persisting; the
        lock is held)."""
        if self.persisted is not None:
            self.persisted.extend(elements)

    def release(self) -> None:
        """The consuming task ended: the producer stops sending."""
        if self.client is not None:
            self.client.cancel(self)

    def fail(self, error: BaseException) -> None:
        if not self.finished:
            self.on_failure(error)


class PartitionRequestClient(_FrameEndpoint):
    """This TaskExecutor's connections to other TaskExecutors' partition request servers."""

    def __init__(self, loop: EventLoop, security: TransportSecurity) -> None:
        self.loop = loop
        self.security = security
        self.connections: dict[str, Connection] = {}
        self.channels: dict[int, RemoteInputChannel] = {}
        self._next_id = 0
        self._lock = threading.Lock()  # tasks in threads of their own request at once

    def request(self, channel: RemoteInputChannel, partition_id: str, index: int) -> None:
        with self._lock:
            self._next_id += 1
            channel.client, channel.receiver_id = self, self._next_id
            connection = self.connections.get(channel.address)
            if connection is None or connection.closed:
                try:
                    connection = self.connections[channel.address] = connect(
                        channel.address, self._frames, self._closed, "partition", self.security)
                except OSError as exc:
                    self.loop.call_soon_threadsafe(channel.fail, RemoteTransportException(
                        f"Connecting to remote task manager '{channel.address}' has failed. This might indicate "
                        f"that the remote task manager has been lost. ({exc})"))
                    return
            self.channels[channel.receiver_id] = channel
        connection.send(_encode(["req", channel.receiver_id, partition_id, index, channel.initial_credit()]))

    def send(self, channel: RemoteInputChannel, kind: str, *values: Any) -> None:
        connection = self.connections.get(channel.address)
        if connection is not None:
            connection.send(_encode([kind, channel.receiver_id, *values]))

    def cancel(self, channel: RemoteInputChannel) -> None:
        if self.channels.pop(channel.receiver_id, None) is not None:
            self.send(channel, "cancel")

    def _handle(self, connection: Connection, frames: list[list]) -> None:
        channels = self.channels
        for frame in frames:
            if connection.rejection is not None:
                return
            try:
                channel = channels.get(frame[1])
                if channel is None:
                    continue
                kind = frame[0]
                if kind == "buf":
                    channel.on_buffer(frame[2], frame[3], frame[4])
                    continue
                with channel.gate.lock:  # the consumer may run in a thread of its own
                    if kind == "evt":
                        event = decode_event(frame[2:])
                        if type(event) is EndOfPartition:
                            del channels[frame[1]]
                        channel.deliver_event(event)
                    elif kind == "pri":
                        channel.deliver_priority(decode_event(frame[2:]))
                    elif kind == "ovt":
                        channel.add_overtaken(frame[2])
                    else:
                        raise ValueError(f"unknown frame kind {kind!r:.40}")
            except Exception as exc:  # noqa: BLE001 -- a frame no TaskExecutor sends
                connection.reject(malformed(exc))

    def _closed(self, connection: Connection, error: BaseException | None) -> None:
        self.loop.call_soon_threadsafe(self._disconnected, connection, error)

    def _disconnected(self, connection: Connection, error: BaseException | None) -> None:
        address = next((a for a, c in self.connections.items() if c is connection), None)
        if address is None:
            return
        del self.connections[address]
        what = "Lost connection to" if error is not None else "Connection unexpectedly closed by"
        for receiver_id, channel in list(self.channels.items()):
            # a failing task cancels its other channels: those are gone from ``channels`` already
            if channel.address == address and self.channels.pop(receiver_id, None) is not None:
                channel.fail(RemoteTransportException(
                    f"{what} remote task manager '{address}'. This might indicate that the remote task manager "
                    f"was lost."))

    def close(self) -> None:
        for connection in list(self.connections.values()):
            connection.close()
