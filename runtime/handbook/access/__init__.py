"""Who is asking and for whom: principals from a tokens file, and the actor context
carried as transport metadata (rank 1: imports only the base modules)."""
