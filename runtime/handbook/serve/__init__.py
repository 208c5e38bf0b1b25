"""The transports, each generated from the tool table: HTTP and OpenAPI, the site, MCP,
RPC, and the gate that checks who is asking on every route (rank 5)."""
