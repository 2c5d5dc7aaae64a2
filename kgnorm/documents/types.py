"""The unit `annotate` reads and writes: a document's text, and the mentions found in it."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Annotation:
    """One mention of a document: [start, end) into the document's text; `ids` holds one CURIE
    per composite part (empty: not linked / nil), of `ontology` (the linker's: a run routed by type
    links each type into its own)."""

    start: int
    end: int
    text: str
    type: str = ""
    ids: tuple[str, ...] = ()
    score: float | None = None
    confidence: float | None = None  # annotate's mention confidence, where one was fitted
    ontology: str = ""


@dataclass
class TextDocument:
    """`text` is what offsets index. `title_end`: the title is ``text[:title_end]`` and the abstract
    starts after one space (PubTator's layout), None when the document has no title.
    `line`: where the document starts in its file (for messages); `annotations`: those the
    file gave (read for eval, ignored by annotate)."""

    doc_id: str
    text: str
    title_end: int | None = None
    line: int | None = None
    annotations: list[Annotation] = field(default_factory=list)

    @property
    def title(self) -> str:
        return self.text[:self.title_end] if self.title_end is not None else ""

    @property
    def abstract(self) -> str:
        return self.text[self.title_end + 1:] if self.title_end is not None else self.text
