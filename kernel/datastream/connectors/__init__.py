"""Connectors: files, number sequences and a seeded data generator."""
