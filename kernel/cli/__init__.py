"""The ``rill`` command line: one module per command group."""
