"""kgnorm: a knowledge-graph workbench for biomedical concept normalization.

``kgnorm.Workbench`` (kgnorm/api.py) is the Python API; it loads on first use, so that
``import kgnorm`` stays light (no torch)."""
from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["Workbench", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "Workbench":
        from kgnorm.api import Workbench

        return Workbench
    raise AttributeError(f"module 'kgnorm' has no attribute {name!r}")
