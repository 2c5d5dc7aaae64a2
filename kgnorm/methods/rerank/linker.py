"""A reranker model directory as a linker: the wrapped linker's top-k, reordered by the cross-encoder.

The directory holds the cross-encoder and a ``kgnorm-model.json`` that names the linker's
directory (referenced, not copied); :func:`kgnorm.jobs.models.open_linker` opens both. One
concept per rank is kept: the linker already ranks concepts, the reranker only reorders them.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from kgnorm.methods.rerank.model import CrossScorer, mention_input

__all__ = ["RerankLinker", "part_inputs"]


def part_inputs(queries: list[str], mentions: list[Any], whole: list[bool]) -> list[str]:
    """The cross-encoder's first segment per query: a mention linked whole is read in its sentence;
    a composite part is read alone (the sentence names the other parts too)."""
    return [mention_input(q, m.context if w else "") for q, m, w in zip(queries, mentions, whole)]


class RerankLinker:
    """PartLinker over another PartLinker (:class:`kgnorm.linking.linker.DictionaryLinker`)."""

    method = "rerank"

    def __init__(self, inner: Any, scorer: CrossScorer, depth: int) -> None:
        self.inner, self.scorer, self.depth = inner, scorer, int(depth)

    @property
    def model(self) -> Any:
        """The wrapped linker's model (its dictionary decides which gold ids are known)."""
        return self.inner.model

    def link_parts(self, queries: list[str], mentions: list[Any], whole: list[bool], top_k: int) -> list[list[Any]]:
        """Ranks 1..depth are the linker's top ``depth`` reordered by the linker's score plus the
        cross-encoder's (the score shown); deeper ranks, when ``top_k`` asks for them, keep the
        linker's order and scores."""
        ranked = self.inner.link_parts(queries, mentions, whole, max(top_k, self.depth))
        firsts = part_inputs(queries, mentions, whole)
        pairs = [(f, h) for f, hits in zip(firsts, ranked) for h in hits[:self.depth]]
        scores = iter(self.scorer.score([f for f, _ in pairs], [h.name for _, h in pairs]))
        out = []
        for hits in ranked:
            head = [replace(h, score=h.score + next(scores)) for h in hits[:self.depth]]
            head.sort(key=lambda h: -h.score)  # stable: ties keep the linker's order
            out.append((head + hits[self.depth:])[:top_k])
        return out
