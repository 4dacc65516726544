"""rill's built-in plugins: one sub-package per concern, discovered through entry points."""
