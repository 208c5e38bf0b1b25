"""Agent Skills: SKILL.md in and out, and the well-known skills index (rank 2)."""
