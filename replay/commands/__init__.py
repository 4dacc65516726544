"""CLI commands of the replay package, one module per command group."""
