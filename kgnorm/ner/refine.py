"""Inference-time refinements of a trained detector's spans (the "levers" of benchmarks/LOG.md),
no retraining: what a trained detector misses that the document itself tells.

- ``propagate``: a string tagged once in a document is tagged at its other word-bounded
  occurrences (:func:`kgnorm.ner.propagate.propagate_spans`, without short forms);
- ``abbreviations``: a short form the document defines next to a detected long form
  (Schwartz-Hearst, :func:`kgnorm.text.abbreviations.find_abbreviations`) is tagged wherever it
  occurs, and the long form of a detected short form is tagged too;
- ``dictionary``: the dictionary tagger's matches of multi-word names (an ontology's names) that
  no detected span overlaps are added.
The BIO repair of ill-formed tag sequences is the fourth refinement; it acts on tags, before spans
exist (:func:`kgnorm.ner.bio.tags_to_spans`'s ``repair``). Which refinements are on by default for a
trained detector is what won on both dev sets (benchmarks/LOG.md, "NER inference-time levers")."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kgnorm.ner.propagate import add_occurrences, propagate_spans
from kgnorm.ner.spans import MentionDetector, Span

__all__ = ["SpanRefinements", "TRAINED_DEFAULT", "refinements_from_meta", "refine_spans", "abbreviation_spans",
           "dictionary_union"]


@dataclass(frozen=True)
class SpanRefinements:
    """Which inference-time refinements a trained detector applies (module docstring)."""

    repair: str = "lenient"
    propagate: bool = False
    abbreviations: bool = False
    dictionary: bool = False

    def label(self) -> str:
        on = [k for k in ("dictionary", "abbreviations", "propagate") if getattr(self, k)]
        return "+".join([f"bio:{self.repair}", *on])


# What a trained detector loaded for annotate applies unless its kgnorm-model.json says otherwise
# ("levers": {...}, the key model directories have always used): the combination that beat the plain reading on both dev sets (benchmarks/LOG.md,
# "NER inference-time levers"). `train ner` selects its checkpoints on the plain reading (SpanRefinements()).
TRAINED_DEFAULT = SpanRefinements("drop", abbreviations=True, dictionary=True)


def refinements_from_meta(meta: dict) -> SpanRefinements:
    """The refinements a model directory pins (``"levers": {"repair": ..., ...}``), else the default."""
    pinned = meta.get("levers")
    return TRAINED_DEFAULT if pinned is None else SpanRefinements(**pinned)


def abbreviation_spans(text: str, spans: Sequence[Span]) -> list[Span]:
    """`spans` plus the short forms defined for detected long forms and the long forms of
    detected short forms, at every word-bounded occurrence that overlaps no kept span."""
    from kgnorm.text.abbreviations import find_abbreviations

    pairs = find_abbreviations(text)
    if not pairs or not spans:
        return sorted(spans, key=lambda s: s.start)
    found = {s.text.lower(): s.type for s in spans}
    more: dict[str, str] = {}
    for short, long in pairs.items():
        if long.lower() in found and short not in found:
            more[short] = found[long.lower()]
        elif short.lower() in found and long.lower() not in found:
            more[long] = found[short.lower()]
    shorts = {k: v for k, v in more.items() if k in pairs}   # case kept: "AT" is not "at"
    longs = {k: v for k, v in more.items() if k not in pairs}
    return add_occurrences(text, add_occurrences(text, spans, shorts), longs, ignore_case=True)


def dictionary_union(spans: Sequence[Span], matches: Sequence[Span]) -> list[Span]:
    """`spans` plus the multi-word dictionary `matches` that overlap none of them."""
    taken = sorted((s.start, s.end) for s in spans)
    out = list(spans)
    for m in matches:
        if len(m.text.split()) < 2 or any(a < m.end and m.start < b for a, b in taken):
            continue
        out.append(Span(m.start, m.end, m.text, m.type, 1.0, "dictionary"))
    return sorted(out, key=lambda s: s.start)


def refine_spans(texts: Sequence[str], spans: Sequence[Sequence[Span]], refinements: SpanRefinements,
                 dictionary: MentionDetector | None = None) -> list[list[Span]]:
    """The refinements of `refinements` applied to each text's detected spans, in the order dictionary
    union, abbreviations, propagation (so a string the dictionary added propagates too)."""
    out = [list(s) for s in spans]
    if refinements.dictionary and dictionary is not None:
        matches = dictionary.detect(list(texts))
        out = [dictionary_union(s, m) for s, m in zip(out, matches)]
    if refinements.abbreviations:
        out = [abbreviation_spans(t, s) for t, s in zip(texts, out)]
    if refinements.propagate:
        out = [propagate_spans(t, s, {}) for t, s in zip(texts, out)]
    return out
