"""The concerns of the runtime: what a plugin can serve.

A plugin's entry point in group ``rill`` is named ``<concern>.<name>``. For a *single*
concern the config picks one plugin (``[plugins] scheduling = "eager"``); a *required*
concern needs one to run a job. Plugins of concerns the kernel does not know are
extensions: all of them load unless disabled.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Concern:
    name: str
    description: str
    default: str | None
    required: bool = False
    single: bool = True


KERNEL_CONCERNS: dict[str, Concern] = {
    concern.name: concern
    for concern in (
        Concern("graph", "compiles programs: StreamGraph, JobGraph, ExecutionGraph", "flink", True),
        Concern("chaining", "policy that vetoes operator chaining (none by default)", None),
        Concern("scheduling", "scheduling strategy of the JobMaster", "pipelined-region", True),
        Concern("failover", "restart back-off and failover strategies", "flink", True),
        Concern("mailbox", "MailboxProcessor driving each StreamTask", "default", True),
        Concern("watermarking", "watermark generators, valve and alignment", "default", True),
        Concern("heartbeats", "heartbeat managers between cluster components", "default", True),
        Concern("checkpointing", "checkpoint coordinator, storage and barrier handling", "default"),
        Concern("barrier-handling", "other ways of handling checkpoint barriers (unaligned), chosen by config keys",
                None, single=False),
        Concern("backpressure", "how back pressure is measured and judged", "mailbox-timing"),
        Concern("backend", "executes compiled jobs", "local", True),
        Concern("workers", "starts and stops TaskExecutors for the ResourceManager", "embedded", True),
        Concern("eventlog", "stores every runtime event for replay and SQL", "duckdb"),
        Concern("replay", "reads recorded runs back", None, single=False),
    )
}


def concern_of(name: str) -> Concern:
    """The kernel's concern of that name, or an extension concern (all plugins load)."""
    return KERNEL_CONCERNS.get(name) or Concern(name, "extension", None, single=False)
