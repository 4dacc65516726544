"""The runtime every execution backend shares: the graphs a program compiles to, operators,
state, timers and checkpoint snapshots, and the events of Flink's runtime model."""
