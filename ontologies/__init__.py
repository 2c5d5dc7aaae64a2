"""Source-format loaders: each turns one file format into an OntologyGraph."""
