"""Graph compilation: Transformations -> StreamGraph -> JobGraph -> ExecutionGraph."""
