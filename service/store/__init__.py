"""Redis: the client, retries through outages, the snapshot schema and an embedded server."""
