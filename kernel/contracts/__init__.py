"""The typed contract of each concern: what a plugin's factory hook returns and what the
runtime may call on it (``typing.Protocol`` classes, checked structurally by the tests).

One module per concern: :mod:`.backend` (execution backends), :mod:`.scheduling`
(scheduling strategies), :mod:`.failover` (restart back-off and failover strategies),
:mod:`.mailbox` (mailbox processors), :mod:`.watermarks` (watermark generators, valves,
alignment coordinators), :mod:`.checkpointing` (checkpoint coordinators, storage, barrier
handlers), :mod:`.heartbeats` (heartbeat managers), :mod:`.workers` (the ResourceManager's driver
starting and stopping TaskExecutors), :mod:`.backpressure`
(back-pressure monitors and what the JobMaster offers them), :mod:`.eventstore` (the
store recorded runs are read from), :mod:`.sql` (``rill sql`` engines).
"""
