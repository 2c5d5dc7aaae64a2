"""`kgnorm serve`: a local web app where curators review what kgnorm linked (kgnorm.serve.app);
the data it shows comes from kgnorm.review.views, the writes go through kgnorm.review.desk."""
from __future__ import annotations

from kgnorm.serve.app import create_app

__all__ = ["create_app"]
