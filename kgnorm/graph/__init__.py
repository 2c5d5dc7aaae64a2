"""The graph in memory: the concept graph loaders build, views read from a store, the IS-A
hierarchy and its levels."""
