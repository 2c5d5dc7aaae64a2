"""Cypher files: per-backend schema and the saved queries shared by every backend."""
