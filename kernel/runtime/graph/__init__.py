"""The compiled forms of a program: StreamGraph, JobGraph and ExecutionGraph (data only;
the translators are graph plugins)."""
