"""One module per tool, each a pure function over a verified snapshot (rank 3)."""
