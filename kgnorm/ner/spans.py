"""The contract between a mention detector and what uses it (annotate, eval annotate).

A detector turns raw texts into character spans; ``text[span.start:span.end] == span.text``
always holds, so offsets written from a span round-trip into every output format."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, Sequence

from kgnorm.graph.refs import ConceptRef


@dataclass(frozen=True)
class Span:
    """One detected mention: [start, end) character offsets into the text it was found in.
    `score`: the detector's confidence in the span (a trained one: the mean probability of its
    tokens' tags); `source`: what found it -- ``detector``, or an inference-time lever that added it
    (``dictionary``: a dictionary match; ``occurrence``: another occurrence of a found string or
    short form), whose `score` says nothing (annotate's mention confidence tells them apart).
    `concepts`: the concepts of the dictionary name the span matched, when a dictionary tagger found
    it (empty: no name said which), and `name` that name as the ontology writes it; `exact`: the name
    matched word for word (after the tagger's folds), not in another word order, through a word
    variant or without a modifier. Annotate may read them as evidence for the linker
    (kgnorm.linking.evidence)."""

    start: int
    end: int
    text: str
    type: str
    score: float = 1.0
    source: str = "detector"
    concepts: tuple[ConceptRef, ...] = ()
    name: str = ""
    exact: bool = False
    # what the span says when its text read alone says more: a conjunct of a coordination ("palmar and
    # plantar pits" reads "palmar pits"); annotate links this reading (Mention.parts) and not the text
    reading: str = ""


class MentionDetector(Protocol):
    """What ``annotate`` reads from a detector: the label set it emits, spans
    per text, and the settings below, which a job reads with these defaults when a detector does
    not set them. A detector that subclasses this class explicitly inherits the defaults and needs
    only ``types`` and ``detect``; a structural one (no subclassing) is read the same way.

    - ``consistency_by_default``: annotate tags a found string's other occurrences in the document
      and links them alike unless ``--no-consistency`` (the dictionary tagger: on; a trained one: off).
    - ``evidence_by_default``: annotate links a span whose dictionary match names one concept to it
      (kgnorm.linking.evidence) unless ``--no-dictionary-evidence`` (the dictionary tagger: on).
    - ``overlap_by_default``: annotate may detect the next batch on a second core while it links
      this one (off for a pure-Python detector that holds the GIL: it gains nothing).
    - ``pack_documents``: documents annotate hands ``detect`` in one call (in `--batch-size`
      batches, linked one batch at a time): a trained detector sorts the windows of a call by
      length, so more documents fill its padded rows better; 1: one batch a call.
    - ``refinements``: the inference-time span refinements (a :class:`kgnorm.ner.refine.SpanRefinements`)
      a trained detector applies; None: none (annotate then builds no dictionary tagger).
    - ``dictionary_tagger``: the tagger whose matches the ``dictionary`` refinement adds; annotate
      sets it when ``refinements`` asks for one (None until then).
    """

    types: tuple[str, ...]
    consistency_by_default: bool = False
    evidence_by_default: bool = False
    overlap_by_default: bool = True
    pack_documents: int = 1
    refinements: Any = None
    dictionary_tagger: Any = None

    def detect(self, texts: Sequence[str]) -> list[list[Span]]:
        """Spans of each text, sorted by start, non-overlapping."""
        ...
