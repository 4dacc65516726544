"""Where TaskExecutors run: the ResourceManager's drivers (concern ``workers``) — ``embedded``
(in the cluster's process) and ``processes`` (an OS process each, on this machine)."""
