"""kgnorm: a knowledge-graph workbench for biomedical concept normalization."""
__version__ = "0.1.0"
