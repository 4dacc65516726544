"""Scheduling strategies of the JobMaster: pipelined regions (default) and eager."""
