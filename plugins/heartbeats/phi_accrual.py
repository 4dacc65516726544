"""The monitor of plugin ``heartbeats.phi-accrual`` (:mod:`.phi_accrual_plugin`): a phi-accrual
failure detector (Hayashibara et al.; Akka's PhiAccrualFailureDetector) instead of a fixed timeout.

Each monitor keeps the intervals between the heartbeats it heard (the last
``max-sample-size``); with their mean μ and standard deviation σ (at least
``min-std-deviation``), the suspicion level after Δ ms of silence is
``phi(Δ) = -log10(1 - F(Δ))``, F the normal distribution N(μ + acceptable pause, σ). The
target is declared lost (the listener's ``notify_heartbeat_timeout``) when phi reaches
``threshold``: the monitor computes that instant, ``μ + pause + σ·Φ⁻¹(1 - 10^-threshold)``
after the last heartbeat, and re-computes it on every heartbeat. Before the first interval
is known the history holds ``first-heartbeat-estimate`` (default: ``heartbeat.interval``)
with σ = estimate / 4. Jittery heartbeats widen σ and so the tolerance; a dead target is
detected once the silence is improbable for the observed history. RPC-failure detection is
as in the default plugin.
"""

from __future__ import annotations

import math
from collections import deque
from statistics import NormalDist
from typing import Any

from kernel.clock import NS_PER_MS
from plugins.heartbeats.manager import DefaultHeartbeatMonitor, HeartbeatManagerImpl
from plugins.heartbeats.options import PhiAccrualOptions


class PhiAccrualHeartbeatMonitor(DefaultHeartbeatMonitor):
    def __init__(self, manager: HeartbeatManagerImpl, resource_id: str, target: Any, options: PhiAccrualOptions,
                 interval_ms: int) -> None:
        self.options = options
        estimate = options.first_estimate or interval_ms
        self.intervals: deque[float] = deque(maxlen=options.max_sample_size)
        self.intervals.extend((estimate - estimate / 4, estimate + estimate / 4))  # mean estimate, σ estimate / 4
        self.z = NormalDist().inv_cdf(1 - 10 ** -options.threshold)
        self.heard = False
        super().__init__(manager, resource_id, target)

    def report_heartbeat(self) -> None:
        if self.heard:  # intervals are between heartbeats, not from when monitoring started
            self.intervals.append((self.manager.now() - self.last_heartbeat) / NS_PER_MS)
        self.heard = True
        super().report_heartbeat()

    def arm(self) -> None:
        self.schedule_suspicion(int(self.suspicion_after_ms() * NS_PER_MS))

    def statistics(self) -> tuple[float, float]:
        """(mean, standard deviation) of the remembered intervals, σ at least the minimum."""
        n = len(self.intervals)
        mean = sum(self.intervals) / n
        variance = sum((x - mean) ** 2 for x in self.intervals) / n
        return mean, max(math.sqrt(variance), float(self.options.min_std_deviation))

    def suspicion_after_ms(self) -> float:
        """Silence (ms after the last heartbeat) at which phi reaches the threshold."""
        mean, deviation = self.statistics()
        return mean + self.options.acceptable_pause + deviation * self.z

    def phi(self, silence_ms: float) -> float:
        mean, deviation = self.statistics()
        tail = 1 - NormalDist(mean + self.options.acceptable_pause, deviation).cdf(silence_ms)
        return math.inf if tail <= 0 else -math.log10(tail)
