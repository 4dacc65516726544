"""The embedded local runtime: an in-process cluster that works the way Flink's does."""
