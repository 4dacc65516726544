"""The DuckDB event log: stores every event of every run for replay and SQL."""
