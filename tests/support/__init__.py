"""Shared test helpers: a real Redis server, a stand-in MediaWiki API, the shared corpora."""
