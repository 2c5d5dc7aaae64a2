"""A cross-encoder that reranks a linker's top-k concepts (issue 28): ``kgnorm train rerank``."""
