"""Injected faults on the local cluster (:mod:`kernel.faults` describes them).

Times count from the run's start. Kill: the TaskExecutor's process dies (its messages
vanish) or, with ``refuse``, its endpoint stops (requests to it fail at once). Partition,
drop and delay: rules on the messaging transport for their time window. Slow: the
TaskExecutor's tasks take ``factor`` times as long. Raise: the named operator raises
:class:`kernel.faults.InjectedFault` when its Nth record arrives (counted per attempt), at
most ``times`` times in the run. Each fault taking effect (and ending) is an event.

TaskExecutors in processes of their own have an injector of their own for ``raise`` faults.
The run's counts stay with the cluster's: when a task reaches a fault's record, the process
asks the cluster whether the fault may fire once more (``grant``, answered by :meth:`claim`),
so ``times`` holds for the whole run however many processes reach the record at once; and it
tells the cluster's injector (``raise_counted``) when one fires.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable, Protocol

from kernel import faults as f
from kernel.clock import MAX_LONG, NS_PER_MS
from kernel.runtime.cluster_events import FaultInjected
from kernel.messaging import DeliveryRule

if TYPE_CHECKING:
    from kernel.lifecycle.run import Run
    from plugins.local.recovery import RecoveryTracker
    from plugins.local.tasks.streamtask import StreamTask


class FaultTargets(Protocol):
    """The TaskExecutors that ``kill`` and ``slow`` faults act on (the MiniCluster's)."""

    def worker_running(self, address: str) -> bool:
        """Whether the TaskExecutor of that address runs."""

    def kill_worker(self, address: str, refuse: bool, reason: str) -> None:
        """The TaskExecutor's process dies (``refuse``: only its endpoint)."""

    def set_slowdown(self, address: str, factor: float) -> bool:
        """The TaskExecutor's tasks take ``factor`` times as long; whether it runs now."""


class FaultInjector:
    """The faults of a run as they take effect here: ``targets`` are the TaskExecutors the
    cluster's injector (the only one :meth:`start` is called on) kills and slows down; an
    injector of a TaskExecutor process only instruments its tasks (``raise``)."""

    def __init__(self, run: Run, tracker: RecoveryTracker, faults: list[f.Fault],
                 targets: FaultTargets | None = None) -> None:
        self.run = run
        self.tracker = tracker
        self.targets = targets
        self.faults = faults
        self.raised: dict[int, int] = {}
        self._lock = threading.Lock()
        self.slowdowns: dict[str, float] = {}  # TaskExecutor -> factor of the slow faults in force
        #: told of every raise fault that fires here: (index, description, time)
        self.raise_counted: Callable[[int, str, int], None] = lambda index, description, time: None
        #: in a TaskExecutor process: asks the cluster's injector to :meth:`claim` a raise fault
        self.grant: Callable[[int], bool] | None = None

    def _emit(self, fault: f.Fault, target: str, phase: str = "start", note: str = "") -> None:
        description = fault.describe() + (f" ({note})" if note else "")
        self.run.bus.emit(FaultInjected(time=self.run.clock.now(), index=fault.index, fault_kind=type(fault).__name__.lower(),
                                        target=target, phase=phase, description=description))
        if phase == "start":  # a raise fault takes effect in its task's thread: the tracker is the cluster's
            self.run.loop.call_in_thread(self.tracker.fault, fault.index, description, self.run.clock.now())

    def start(self, start_ns: int) -> None:
        loop = self.run.loop
        for fault in self.faults:
            if isinstance(fault, f.Kill):
                loop.call_at(start_ns + fault.at * NS_PER_MS, self._kill, fault)
            elif isinstance(fault, (f.Partition, f.Drop, f.Delay)):
                self._add_rule(fault, start_ns)
            elif isinstance(fault, f.Slow):
                loop.call_at(start_ns + fault.start * NS_PER_MS, self._slow, fault, fault.factor, "start")
                if fault.end < f.FOREVER:
                    loop.call_at(start_ns + fault.end * NS_PER_MS, self._slow, fault, 1.0, "end")

    def _kill(self, fault: f.Kill) -> None:
        if not self.targets.worker_running(fault.target):
            self._emit(fault, fault.target, note="no such TaskExecutor running: nothing happens")
            return
        self._emit(fault, fault.target)
        self.targets.kill_worker(fault.target, refuse=fault.refuse, reason=f"killed by fault #{fault.index + 1}")

    def _add_rule(self, fault: Any, start_ns: int) -> None:
        start = start_ns + fault.start * NS_PER_MS
        end = start_ns + fault.end * NS_PER_MS if fault.end < f.FOREVER else MAX_LONG
        if isinstance(fault, f.Delay):
            rule = DeliveryRule(fault.from_, fault.to, start, end, delay=fault.delay * NS_PER_MS,
                                jitter=fault.jitter * NS_PER_MS, both_ways=fault.both_ways)
        else:
            rule = DeliveryRule(fault.from_, fault.to, start, end, drop=True, both_ways=isinstance(fault, f.Partition))
        self.run.messaging.conditions.add(rule)
        target = f"{fault.from_} {'<->' if rule.both_ways else '->'} {fault.to}"
        loop = self.run.loop
        loop.call_at(start, self._emit, fault, target)
        if end < MAX_LONG:
            loop.call_at(end, self._emit, fault, target, "end")

    def _slow(self, fault: f.Slow, factor: float, phase: str) -> None:
        if phase == "start":
            self.slowdowns[fault.target] = factor
        else:
            self.slowdowns.pop(fault.target, None)
        running = self.targets.set_slowdown(fault.target, factor)
        self._emit(fault, fault.target, phase, "" if running else "from when it starts")

    def slowdown_of(self, address: str) -> float:
        """The factor a TaskExecutor starting now runs slower by."""
        return self.slowdowns.get(address, 1.0)

    # -- raise ---------------------------------------------------------------------------------

    def instrument(self, task: StreamTask) -> None:
        """Wrap the operators of ``task`` that a raise fault names."""
        subtask = task.deployment.subtask
        for fault in self.faults:
            if not isinstance(fault, f.Raise) or (fault.subtask is not None and fault.subtask != subtask):
                continue
            for operator in task.chain.operators:
                if operator.name == fault.operator:
                    self._wrap(operator, fault, task)

    def claim(self, index: int) -> bool:
        """Whether raise fault ``index`` may fire once more in the run, counting it if so (subtasks
        may run in threads of their own). An index that names no raise fault (from a process
        that is not one of the run's TaskExecutors as they are) is a ValueError."""
        if type(index) is not int or not 0 <= index < len(self.faults) or not isinstance(self.faults[index], f.Raise):
            raise ValueError(f"no raise fault #{index!r:.20}")
        with self._lock:
            raised = self.raised.get(index, 0)
            if raised >= self.faults[index].times:
                return False
            self.raised[index] = raised + 1
            return True

    def _take(self, fault: f.Raise) -> bool:
        """Whether the fault may raise once more: claimed here, or from the cluster's injector."""
        return self.claim(fault.index) if self.grant is None else self.grant(fault.index)

    def _wrap(self, operator: Any, fault: f.Raise, task: StreamTask) -> None:
        seen = [0]
        for method in ("process_batch", "process_batch1", "process_batch2"):
            original = getattr(operator, method, None)
            if original is None:
                continue

            def counting(values, timestamps, original=original):
                before = seen[0]
                seen[0] += len(values)
                if before < fault.record <= seen[0] and self._take(fault):
                    n = fault.record - before - 1  # records before the Nth go through
                    if n:
                        original(values[:n], timestamps[:n] if timestamps is not None else None)
                    self.raise_counted(fault.index, fault.describe(), self.run.clock.now())
                    self._emit(fault, task.name)
                    raise f.InjectedFault(f"injected fault #{fault.index + 1}: {fault.operator} raised on record "
                                          f"{fault.record} of {task.name} (attempt {task.deployment.attempt})")
                original(values, timestamps)

            setattr(operator, method, counting)
