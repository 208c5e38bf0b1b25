"""The build side's click commands, attached lazily to `handbook` (rank 7)."""
