"""Reviews on disk before they are in the store: an embedded store has one writer at a time, so a
review submitted while `annotate` writes the store waits here (and is shown as pending) until the
store is free. The journal is append-only JSON lines beside the store (`<store>.reviews.jsonl`),
each line flushed and fsynced before the review is acknowledged: a review is never lost."""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from kgnorm.review.records import Review


class ReviewJournal:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def append(self, review: Review) -> None:
        line = json.dumps(review.record(), sort_keys=True, ensure_ascii=False) + "\n"
        with self._lock, open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())

    def reviews(self) -> list[Review]:
        """Every review journaled, oldest first (a torn last line from a crash is skipped)."""
        if not self.path.exists():
            return []
        out: list[Review] = []
        with self._lock, open(self.path, encoding="utf-8") as fh:
            for line in fh:
                try:
                    out.append(Review.from_record(json.loads(line)))
                except (ValueError, TypeError):
                    continue
        return out
