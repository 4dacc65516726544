"""Chaining policies: plugins that veto operator chaining on top of Flink's conditions."""
