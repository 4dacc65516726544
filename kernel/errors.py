"""Errors the CLI turns into one clear line on stderr.

``exit_code`` 2 marks bad input (usage, config, plugins, job files); 1 marks a run or
operation that failed.
"""


class RillError(Exception):
    """Base of every error rill reports to users without a traceback."""

    exit_code = 1


class UsageError(RillError):
    """The command line, a file or a value given by the user is wrong."""

    exit_code = 2


class ConfigError(UsageError):
    """A configuration key or value is invalid."""


class PluginError(UsageError):
    """A plugin or concern name is unknown, or plugins cannot be loaded together."""


class JobDefinitionError(UsageError):
    """A job file cannot be loaded or builds an invalid program."""


class JobFailed(RillError):
    """A job ran and ended FAILED."""


class JobCancelled(RillError):
    """A job was cancelled by its JobClient (or could not be: it had ended otherwise)."""


class EventLogError(RillError):
    """The event log cannot be opened, written or read."""


class JobNotRunning(RillError):
    """A request (a savepoint) reached a job that has ended or not started."""


class BoundExceeded(RillError):
    """A ``rill sql`` query hit one of its bounds (time, memory, rows) and was stopped."""
