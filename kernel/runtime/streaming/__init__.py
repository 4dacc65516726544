"""Executing programs, independent of any cluster: elements, operators, operator chains,
partitioning, key groups, state, timers. Both execution backends run chains with this code."""
