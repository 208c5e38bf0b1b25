"""Writing the bundle: catalog, content, sections, the lunr index and search file,
vectors, llms.txt, site pages, and the signed manifest (rank 4)."""
