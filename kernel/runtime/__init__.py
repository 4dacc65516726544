"""The runtime every execution backend shares, independent of any cluster: the graphs a
program compiles to (:mod:`.graph`), operators, operator chains, partitioning, key groups,
state and timers (:mod:`.streaming`), checkpoint snapshots and their format
(:mod:`.checkpointing`), the events of Flink's runtime model (:mod:`.cluster_events`),
back-pressure levels (:mod:`.backpressure`) and an asyncio loop in simulated time for user
coroutines (:mod:`.simulated_asyncio`)."""
