"""Hand-over points: what an operator has emitted leaves its task within the buffer timeout,
whatever the task does next (the operator's half of Flink's OutputFlusher).

Flink's chained operators hand each record on as it is produced, so a record a chain emitted
is in a network buffer at once, and the OutputFlusher thread sends it within
``execution.buffer-timeout.interval`` even while the task thread is blocked in a user
function further on. rill's operators work a batch at a time and hand their output on when the
batch is done; a :class:`HandOver` is where an operator's output for the batch in progress
waits meanwhile, readable from another thread: the operator fills plain lists at C speed
(``out.extend(map(f, values))``, ``append`` in its loop) and tells the hand-over what they are
(``mapped``, ``selected``, ``grown``, ``results``) when the batch starts; ``end()`` hands on
what is left when it is done. A keyed operator's timer service does the same with what the
timers firing at once emit: each drain opens the operator's hand-over on its
:class:`~kernel.runtime.streaming.timers.TimerOutput` (``results``). Nothing per record is added: under
the GIL another thread sees a list's items as they are appended.

Between the two, the part already produced can be handed on early (:meth:`relay`,
:meth:`claim` + :meth:`pass_on`): the downstream chained operators run on it, while the
operator's user function is still busy, and their output reaches the network's buffers.

* In the task's own thread, when a user function sleeps through ``kernel.clock.sleep``
  (realtime: before the thread blocks; simulated: when the sleep is charged, so what follows
  is emitted later in virtual time): every open hand-over of the chain, head first, hands on
  what is ready, depth first.
* In a relay thread, when the task has been busy in one mailbox step for longer than a
  time slice at a flusher tick (``time.sleep``, blocking I/O, a busy loop, a slow function):
  the output flusher claims an open hand-over with something ready and passes it on in a
  thread of its own, holding the hand-over's lock.

Each hand-over has a lock: whoever hands on (a relay, or ``end()`` taking what is left) holds
it, so a relay in progress finishes before the task thread hands on the rest, in order. An
operator is reached only through the hand-over of the operator before it in the chain, so the
downstream operators of a relay are never run by two threads at once, while the task thread
itself is provably upstream, inside the user function that produces the hand-over's lists (or
waiting for the lock). A user function blocking inside a relay is handled the same way one
level down: its operator's hand-over is claimed by the next relay. What a relay raises is kept
and raised by ``end()`` in the task's thread (as Flink's flusher error is rethrown by the next
emit); relays stop at the first error.
"""

from __future__ import annotations

import threading
from itertools import compress
from typing import Any, Callable


class HandOver:
    """One operator's output for the batch it is processing, handed on to ``target`` (its
    main output's ``collect``) and ``side_target`` (``collect_side``) as it becomes ready.

    Per batch one of ``mapped`` / ``selected`` / ``grown`` / ``results`` opens it on the
    operator's lists and ``end()`` hands on the rest and closes it. A batch that raises
    leaves it open: the task fails, and relays start only while its mailbox runs."""

    __slots__ = ("target", "side_target", "lock", "values", "timestamps", "inputs", "positions", "side",
                 "handed", "side_handed", "error", "_take")

    def __init__(self, target: Callable[[list, list | None], None],
                 side_target: Callable[[str, list, list | None], None] | None = None) -> None:
        self.target = target
        self.side_target = side_target
        self.lock = threading.Lock()
        #: the list being filled (None: closed, nothing to hand on)
        self.values: list | None = None
        self.timestamps: list | None = None
        self.inputs: list | None = None
        self.positions: Any = None
        self.side: dict | None = None
        self.handed = 0
        self.side_handed: dict[str, int] = {}
        #: what a relay raised, raised by ``end()``
        self.error: BaseException | None = None
        self._take: Callable[[list, bool], Any] = _nothing

    # -- opening (the operator's thread) ------------------------------------------------------

    def mapped(self, out: list, timestamps: list | None) -> None:
        """``out`` is filled one to one from the input, whose ``timestamps`` it keeps."""
        self.handed = 0
        self.timestamps = timestamps
        self._take = self._take_mapped
        self.values = out

    def selected(self, keep: list, values: list, timestamps: list | None) -> None:
        """``keep`` is filled with a bool per input value: the kept ``values`` go on."""
        self.handed = 0
        self.inputs = values
        self.timestamps = timestamps
        self._take = self._take_selected
        self.values = keep

    def grown(self, out: list, out_ts: list | None, timestamps: list | None = None, positions: Any = None) -> None:
        """``out`` grows by any number of values per input value; ``out_ts`` (None: no
        timestamps) is extended with the input's timestamp once its values are all in.
        ``positions`` is the iterator over ``timestamps`` the loop draws from: the values of
        the input in progress carry its timestamp."""
        self.handed = 0
        self.timestamps = out_ts
        self.inputs = timestamps
        self.positions = positions
        self._take = self._take_grown
        self.values = out

    def results(self, values: list, timestamps: list | None, side: dict[str, tuple[list, list | None]]) -> None:
        """``values`` and ``timestamps`` (None: no timestamps) are appended together, value
        first (``StreamOperator.emit_results``); ``side`` maps a side output's tag id to its
        own two lists."""
        self.handed = 0
        self.timestamps = timestamps
        self.side = side
        self.side_handed = {}
        self._take = self._take_results
        self.values = values

    def new_results(self, timestamps: list | None) -> tuple[list, list | None, dict[str, tuple[list, list | None]]]:
        """Fresh lists of a batch's results, appended together as :meth:`results` says: values,
        their timestamps (None when the input has none) and the side outputs'."""
        values: list = []
        out_ts: list | None = None if timestamps is None else []
        side: dict[str, tuple[list, list | None]] = {}
        self.results(values, out_ts, side)
        return values, out_ts, side

    # -- closing (the operator's thread) ------------------------------------------------------

    def end(self) -> None:
        """Hand on what is left and close; first wait for a relay in progress, and raise
        what a relay raised."""
        values = self._close()
        chunk = self._take(values, True) if values is not None else None
        self._take = _nothing
        self.inputs = self.positions = self.side = None
        if chunk is not None:
            self._hand_on(chunk)

    def rest(self) -> list:
        """Close and return what was not handed on yet, for the caller to hand on itself (a
        source emitting the rest of its batch); raise what a relay raised."""
        values = self._close()
        h = self.handed
        self._take = _nothing
        if values is None:
            return []
        return values[h:] if h else values

    def _close(self) -> list | None:
        lock = self.lock
        lock.acquire()  # a relay in progress finishes first
        values = self.values
        self.values = None  # closed: no relay starts any more
        lock.release()
        error = self.error
        if error is not None:
            self.error = None
            raise error
        return values

    # -- relaying (any thread) ----------------------------------------------------------------

    def relay(self) -> None:
        """Hand on what is ready, in the calling thread (a user function is about to sleep);
        nothing when the hand-over is closed or already being handed on."""
        if self.values is None or self.error is not None or not self.lock.acquire(False):
            return
        try:
            values = self.values
            if values is not None:
                chunk = self._take(values, False)
                if chunk is not None:
                    self.pass_on(chunk)
        finally:
            self.lock.release()

    def claim(self) -> Any:
        """What is ready, with the lock held for the caller to :meth:`pass_on` it and then
        release ``lock`` (in another thread); None, not locked, when nothing is."""
        if self.values is None or self.error is not None or not self.lock.acquire(False):
            return None
        values = self.values
        chunk = self._take(values, False) if values is not None else None
        if chunk is None:
            self.lock.release()
        return chunk

    def pass_on(self, chunk: Any) -> None:
        """Hand ``chunk`` on (the lock is held); what it raises is kept for ``end()``."""
        try:
            self._hand_on(chunk)
        except BaseException as exc:  # raised in the task's thread by end(), as Flink's flusher error
            if self.error is None:
                self.error = exc

    def _hand_on(self, chunk: tuple) -> None:
        values, timestamps, side = chunk
        if values:
            self.target(values, timestamps)
        if side:
            side_target = self.side_target
            for tag_id, side_values, side_ts in side:
                side_target(tag_id, side_values, side_ts)

    # -- what is ready, by kind: (values, timestamps, side) or None ----------------------------
    # ``final``: the batch is done (everything left); else the lock is held and the lists may
    # still grow in another thread (read each length once, hand on only complete entries)

    def _take_mapped(self, out: list, final: bool) -> Any:
        h, k = self.handed, len(out)
        if k == h and not final:
            return None
        self.handed = k
        timestamps = self.timestamps
        if h == 0 and final:
            return out, timestamps, None
        return out[h:k], None if timestamps is None else timestamps[h:k], None

    def _take_selected(self, keep: list, final: bool) -> Any:
        h, k = self.handed, len(keep)
        if k == h and not final:
            return None
        self.handed = k
        inputs, timestamps = self.inputs, self.timestamps
        if h or k != len(inputs):
            keep, inputs = keep[h:k], inputs[h:k]
            timestamps = None if timestamps is None else timestamps[h:k]
        values = list(compress(inputs, keep))
        if not values and not final:
            return None
        return values, None if timestamps is None else list(compress(timestamps, keep)), None

    def _take_grown(self, out: list, final: bool) -> Any:
        out_ts, h = self.timestamps, self.handed
        if out_ts is None or final:
            k = len(out)
            timestamps = None if out_ts is None else out_ts[h:k] if h else out_ts
        else:
            # the input in progress, read around the lengths: values past ``out_ts`` are its
            positions, inputs = self.positions, self.inputs
            left = positions.__length_hint__()
            ready = len(out_ts)
            k = len(out)
            if positions.__length_hint__() != left or left >= len(inputs):
                k = max(ready, h)  # the loop moved on meanwhile: the completed inputs' values only
            current = inputs[len(inputs) - left - 1] if left < len(inputs) else None
            timestamps = out_ts[h:ready] + [current] * (k - max(ready, h))
        if k == h and not final:
            return None
        self.handed = k
        if h == 0 and final:
            return out, timestamps, None
        return out[h:k], timestamps, None

    def _take_results(self, values: list, final: bool) -> Any:
        timestamps, h = self.timestamps, self.handed
        k = len(values) if timestamps is None or final else len(timestamps)
        main: Any = None
        if k > h:
            self.handed = k
            if h == 0 and final:
                main = values
            else:
                main = values[h:k]
                timestamps = None if timestamps is None else timestamps[h:k]
        side = []
        handed = self.side_handed
        for tag_id, (side_values, side_ts) in list(self.side.items()):
            sh = handed.get(tag_id, 0)
            sk = len(side_values) if side_ts is None or final else len(side_ts)
            if sk > sh:
                handed[tag_id] = sk
                if sh or not final:
                    side_values = side_values[sh:sk]
                    side_ts = None if side_ts is None else side_ts[sh:sk]
                side.append((tag_id, side_values, side_ts))
        if main is None and not side:
            return None
        return main, timestamps, side


def _nothing(values: list, final: bool) -> None:
    return None
