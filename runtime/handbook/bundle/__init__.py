"""The bundle: its file layout, canonical JSON and signatures, the manifest and catalog,
and the readers that verify every byte before anything is parsed, local, remote and
archived (rank 1)."""
