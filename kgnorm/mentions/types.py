"""Mentions: the unit every linker, trainer and evaluator works on."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field


@dataclass
class Mention:
    """A span of text to link. `gold` holds one CURIE per composite part ([] = unlinkable / -1);
    a conjunction (`A+B`) is kept as one part "A+B". `parts` holds the part surface texts
    when the source gives them (BC5CDR 7th column)."""

    text: str
    doc_id: str = ""
    start: int = -1
    end: int = -1
    type: str = ""
    gold: list[str] = field(default_factory=list)
    parts: list[str] = field(default_factory=list)
    context: str = ""
    id: str = ""

    @property
    def mention_id(self) -> str:
        """doc_id:start-end, or the given id, or a hash of the text."""
        if self.id:
            return self.id
        if self.doc_id and self.start >= 0:
            return f"{self.doc_id}:{self.start}-{self.end}"
        return "h" + hashlib.sha1(self.text.encode("utf-8")).hexdigest()[:16]

    @property
    def is_nil(self) -> bool:
        return not self.gold


@dataclass
class Document:
    """A PubTator-like document: text = title + ' ' + abstract, plus its mentions."""

    doc_id: str
    title: str = ""
    abstract: str = ""
    mentions: list[Mention] = field(default_factory=list)

    @property
    def text(self) -> str:
        return f"{self.title} {self.abstract}" if self.abstract or self.title else ""
