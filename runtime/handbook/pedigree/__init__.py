"""Reviews and what is derived from them at call time: confidence, staleness, suspect and
contested (rank 2)."""
