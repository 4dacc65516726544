"""Failover plugins: restart back-off strategies and failover strategies."""
