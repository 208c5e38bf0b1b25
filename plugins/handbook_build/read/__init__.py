"""Reading the docs: walking the docs root, frontmatter with line marks, includes, and the
parsed `Doc` (rank 1)."""
