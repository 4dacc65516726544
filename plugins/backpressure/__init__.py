"""Measures of back pressure (concern ``backpressure``): ``mailbox-timing`` (the default: the
task metrics' back-pressured time, Flink's since 1.13) and ``sampling`` (Flink's before 1.13:
the JobMaster has TaskExecutors sample whether their tasks are back pressured)."""
