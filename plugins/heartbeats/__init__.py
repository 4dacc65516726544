"""Heartbeat plugins: heartbeat managers and failure detectors between cluster components."""
