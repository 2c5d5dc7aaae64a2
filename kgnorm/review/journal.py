"""Reviews on disk before they are in the store: an embedded store has one writer at a time, so a
review submitted while `annotate` writes the store waits here (and is shown as pending) until the
store is free. The journal is append-only JSON lines beside the store (`<store>.reviews.jsonl`),
each line flushed and fsynced before the review is acknowledged: a review is never lost."""
from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from kgnorm.review.records import Review


class ReviewJournal:
    """Reviews by default; ``record_type`` another record kept the same way (kgnorm.review.done's
    marks, in their own file): anything with ``record()`` and ``from_record``."""

    def __init__(self, path: str | Path, record_type: Any = Review) -> None:
        self.path = Path(path)
        self.record_type = record_type
        self._lock = threading.Lock()  # guards what reviews() has read so far
        self._append_lock = threading.Lock()
        self._read = _Read()

    @classmethod
    def beside(cls, store_path: Path, suffix: str = "reviews", record_type: Any = Review) -> "ReviewJournal":
        """The journal of an embedded store: ``<store>.reviews.jsonl`` (``<store>.<suffix>.jsonl``)."""
        return cls(f"{store_path}.{suffix}.jsonl", record_type)

    def append(self, *reviews: Any) -> None:
        """The reviews, one line each, in one write, fsynced before it returns; after a line a crash
        cut short, on a line of their own (not glued to the torn one, which would make both
        unreadable). The fsync is outside the lock: reading the journal and other appends go on
        meanwhile (one fsync covers them)."""
        line = "".join(json.dumps(r.record(), sort_keys=True, ensure_ascii=False) + "\n"
                       for r in reviews).encode("utf-8")
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            with self._append_lock:
                end = os.fstat(fd).st_size
                if end and os.pread(fd, 1, end - 1) != b"\n":
                    line = b"\n" + line
                view = memoryview(line)
                while view:
                    view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)

    def reviews(self) -> list[Any]:
        """Every review journaled, oldest first (a torn last line from a crash is skipped). Pages
        ask on every request and any process may append: only the lines added since the last call
        are read (the whole file again when it was replaced or changed before that point)."""
        with self._lock:
            try:
                fh = open(self.path, "rb")
            except FileNotFoundError:
                self._read = _Read()
                return []
            with fh:
                r = self._read
                ino, size = os.fstat(fh.fileno()).st_ino, os.fstat(fh.fileno()).st_size
                if (ino, r.tail) != (r.ino, _tail(fh, r.offset)) or size < r.offset:
                    r = self._read = _Read(ino)
                fh.seek(r.offset)
                new = fh.read()
                whole = new[:new.rfind(b"\n") + 1]  # complete lines only: a line being written waits
                for line in whole.split(b"\n")[:-1]:
                    try:
                        r.reviews.append(self.record_type.from_record(json.loads(line)))
                    except (ValueError, TypeError, AttributeError):
                        pass
                r.offset += len(whole)
                r.tail = _tail(fh, r.offset)
            return list(r.reviews)

    def scan(self) -> tuple[list[Any], list[int]]:
        """(every review journaled, the numbers of the lines that are no review: a damaged file). A
        last line without its line end (a write a crash cut short, never acknowledged) is not damage."""
        try:
            lines = self.path.read_bytes().split(b"\n")
        except FileNotFoundError:
            return [], []
        reviews: list[Any] = []
        damaged: list[int] = []
        for i, line in enumerate(lines, 1):
            try:
                reviews.append(self.record_type.from_record(json.loads(line)))
            except (ValueError, TypeError, AttributeError):
                if i < len(lines) and line.strip():
                    damaged.append(i)
        return reviews, damaged


@dataclass
class _Read:
    """How far ReviewJournal.reviews has read: the file, the offset of the first unread line, the
    bytes just before it (to notice a file rewritten in place) and the reviews so far."""
    ino: int = -1
    offset: int = 0
    tail: bytes = b""
    reviews: list[Any] = field(default_factory=list)


def _tail(fh: BinaryIO, offset: int) -> bytes:
    fh.seek(max(0, offset - 64))
    return fh.read(min(offset, 64))
