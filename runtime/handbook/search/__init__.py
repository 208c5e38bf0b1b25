"""Searching: the query language, the search file read in place with lunr's scores, the
retrievers behind one seam, and the optional semantic encoder (rank 2)."""
