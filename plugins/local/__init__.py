"""The ``local`` backend: Flink's runtime as an embedded cluster in one process.

Cluster components (:mod:`.dispatcher`, :mod:`.resourcemanager`, :mod:`.jobmaster`,
:mod:`.taskexecutor`) talk only through messages (:mod:`.messages`); TaskExecutors run
StreamTasks (:mod:`.tasks`) connected by the network (:mod:`.network`).
"""
