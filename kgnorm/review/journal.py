"""Reviews on disk before they are in the store: an embedded store has one writer at a time, so a
review submitted while `annotate` writes the store waits here (and is shown as pending) until the
store is free. The journal is append-only JSON lines beside the store (`<store>.reviews.jsonl`),
each line flushed and fsynced before the review is acknowledged: a review is never lost."""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from kgnorm.review.records import Review


class ReviewJournal:
    """Reviews by default; ``record_type`` another record kept the same way (kgnorm.review.done's
    marks, in their own file): anything with ``record()`` and ``from_record``."""

    def __init__(self, path: str | Path, record_type: Any = Review) -> None:
        self.path = Path(path)
        self.record_type = record_type
        self._lock = threading.Lock()
        self._read: tuple[tuple[int, int] | None, list[Any]] = (None, [])  # (file stamp, its records)

    @classmethod
    def beside(cls, store_path: Path, suffix: str = "reviews", record_type: Any = Review) -> "ReviewJournal":
        """The journal of an embedded store: ``<store>.reviews.jsonl`` (``<store>.<suffix>.jsonl``)."""
        return cls(f"{store_path}.{suffix}.jsonl", record_type)

    def append(self, review: Any) -> None:
        line = json.dumps(review.record(), sort_keys=True, ensure_ascii=False) + "\n"
        with self._lock, open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())

    def reviews(self) -> list[Review]:
        """Every review journaled, oldest first (a torn last line from a crash is skipped). Read
        again only when the file changed (any process may append): pages ask on every request."""
        with self._lock:
            try:
                st = self.path.stat()
            except FileNotFoundError:
                return []
            stamp = (st.st_mtime_ns, st.st_size)
            if stamp != self._read[0]:
                self._read = (stamp, self.scan()[0])
            return list(self._read[1])

    def scan(self) -> tuple[list[Review], list[int]]:
        """(every review journaled, the numbers of the lines that are no review: a damaged file). A
        last line without its line end (a write a crash cut short, never acknowledged) is not damage."""
        try:
            lines = self.path.read_bytes().split(b"\n")
        except FileNotFoundError:
            return [], []
        reviews: list[Review] = []
        damaged: list[int] = []
        for i, line in enumerate(lines, 1):
            try:
                reviews.append(self.record_type.from_record(json.loads(line)))
            except (ValueError, TypeError, AttributeError):
                if i < len(lines) and line.strip():
                    damaged.append(i)
        return reviews, damaged
