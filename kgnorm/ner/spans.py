"""The contract between a mention detector and what uses it (annotate, eval annotate).

A detector turns raw texts into character spans; ``text[span.start:span.end] == span.text``
always holds, so offsets written from a span round-trip into every output format."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence


@dataclass(frozen=True)
class Span:
    """One detected mention: [start, end) character offsets into the text it was found in."""

    start: int
    end: int
    text: str
    type: str
    score: float = 1.0


class MentionDetector(Protocol):
    """What ``annotate`` needs from a detector: the one label set it emits, and spans per text."""

    types: tuple[str, ...]

    def detect(self, texts: Sequence[str]) -> list[list[Span]]:
        """Spans of each text, sorted by start, non-overlapping."""
        ...
