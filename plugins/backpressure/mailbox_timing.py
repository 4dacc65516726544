"""Plugin ``backpressure.mailbox-timing`` (the default): back pressure is the task metrics'
back-pressured time, Flink's ``backPressuredTimeMsPerSecond`` since 1.13.

Every task measures it with its mailbox's TimerGauges whatever plugin is chosen (busy and idle
time need the same timers, :mod:`plugins.local.tasks.io_metrics` in the local runtime), so this
measure needs no monitor: the JobMaster samples nothing, and readers judge by the
``backpressure`` view.
"""

from kernel import hookimpl


@hookimpl
def create_back_pressure_monitor(job, run):
    return None
