"""Checking docs: adoption's derived fields, the schema, snippets, unsafe HTML, personal
data, Agent Skills, reviews and audiences (rank 3)."""
