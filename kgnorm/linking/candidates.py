"""The types a linker ranks and returns, in one place: a retrieved dictionary row
(:class:`Candidate`), a concept at a rank (:class:`RankedConcept`), one concept of one part of a
mention (:class:`Hit`), a mention with its ranked parts (:class:`LinkedMention`), and what every
linker adapter does (:class:`PartLinker`). Models, the linker, nil detection and evaluation share
them; none of them belongs to one method."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Protocol

from kgnorm.graph.refs import ConceptRef
from kgnorm.mentions.types import Mention


@dataclass(frozen=True, slots=True)
class Candidate:
    """One ranked dictionary row for a query."""

    name_idx: int
    uids: tuple[str, ...]
    name: str
    score: float
    sparse_score: float = 0.0
    dense_score: float = 0.0


@dataclass(frozen=True, slots=True)
class RankedConcept:
    """One concept at one rank: its uid, the row of its best name and that name's score."""

    uid: str
    row: int
    score: float


@dataclass(frozen=True)
class Hit:
    """One concept at one rank of one part: what the TSV row and the edge show. `ontology`: the
    ontology of the linker that ranked it (every linker adapter stamps its own), so a run that
    links into several ontologies still says which concept each hit is."""

    uid: str
    name: str
    score: float
    ontology: str = ""

    @property
    def ref(self) -> ConceptRef:
        return ConceptRef(self.ontology, self.uid)


@dataclass
class LinkedMention:
    mention: Mention
    queries: list[str]
    parts: list[list[Hit]] = field(default_factory=list)  # per part, best first
    nil: bool = False
    confidence: float | None = None  # annotate's mention confidence (kgnorm.nil.confidence), when fitted
    features: tuple[float, ...] = ()  # what that confidence reads (annotate sets them)

    def ranks(self, top_k: int) -> Iterator[tuple[int, list[Hit]]]:
        """Rank r combines the rank-r hit of every part (a composite is linked part-wise)."""
        depth = min((len(p) for p in self.parts), default=0)
        for r in range(min(top_k, depth)):
            yield r + 1, [p[r] for p in self.parts]


class PartLinker(Protocol):
    method: str

    def link_parts(self, queries: list[str], mentions: list[Mention], whole: list[bool],
                   top_k: int) -> list[list[Hit]]: ...
