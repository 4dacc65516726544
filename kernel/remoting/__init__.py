"""The messaging layer across processes."""
