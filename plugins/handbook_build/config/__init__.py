"""The configuration: the options table, the library's settings from mkdocs.yml,
zensical.yml or handbook.yml, and signing keys (rank 2)."""
