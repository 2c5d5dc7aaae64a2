"""Mention detection: find the spans of a raw text that name concepts (a trained token
classifier, or a dictionary of an ontology's names)."""
