"""The contract between a mention detector and what uses it (annotate, eval annotate).

A detector turns raw texts into character spans; ``text[span.start:span.end] == span.text``
always holds, so offsets written from a span round-trip into every output format."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, Sequence


@dataclass(frozen=True)
class Span:
    """One detected mention: [start, end) character offsets into the text it was found in."""

    start: int
    end: int
    text: str
    type: str
    score: float = 1.0


class MentionDetector(Protocol):
    """What ``annotate`` reads from a detector: the label set it emits, spans
    per text, and the settings below, which a job reads with these defaults when a detector does
    not set them. A detector that subclasses this class explicitly inherits the defaults and needs
    only ``types`` and ``detect``; a structural one (no subclassing) is read the same way.

    - ``consistency_by_default``: annotate tags a found string's other occurrences in the document
      and links them alike unless ``--no-consistency`` (the dictionary tagger: on; a trained one: off).
    - ``overlap_by_default``: annotate may detect the next batch on a second core while it links
      this one (off for a pure-Python detector that holds the GIL: it gains nothing).
    - ``levers``: the inference-time levers (a :class:`kgnorm.ner.refine.Levers`) a trained detector
      applies; None: none (annotate then builds no dictionary tagger for the ``dictionary`` lever).
    - ``union``: the dictionary tagger that lever unions with; annotate sets it when ``levers``
      asks for one (None until then).
    """

    types: tuple[str, ...]
    consistency_by_default: bool = False
    overlap_by_default: bool = True
    levers: Any = None
    union: Any = None

    def detect(self, texts: Sequence[str]) -> list[list[Span]]:
        """Spans of each text, sorted by start, non-overlapping."""
        ...


# the settings a job reads from a detector, with their defaults (the class attributes above)
DETECTOR_DEFAULTS = {k: getattr(MentionDetector, k) for k in ("consistency_by_default", "overlap_by_default",
                                                              "levers", "union")}


def detector_setting(detector: Any, name: str) -> Any:
    """``detector.<name>``, or the default :class:`MentionDetector` declares for it (what a job reads
    from a detector that does not subclass it)."""
    return getattr(detector, name, DETECTOR_DEFAULTS[name])
