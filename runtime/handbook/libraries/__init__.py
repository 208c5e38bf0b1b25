"""What is served: Library, Shelf, RemoteLibrary's client, the audience router, the
knowledge-provider adapter and the reloader; each tool implemented once over snapshots
(rank 4)."""
