"""Agents write back: records, the stores that keep them (SQLite, PostgreSQL) and the
wrapper that serves a library with its inbox (rank 3)."""
