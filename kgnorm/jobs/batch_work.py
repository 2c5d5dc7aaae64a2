"""The work of one batch of `link`, `annotate` and `embed`, as the in-process run does it and as
each Ray actor does it (kgnorm.jobs.ray_engine): one code path, so the outputs are the same bytes.

Each `*BatchWork` class holds picklable settings (paths, the text pipeline, the nil decision);
`open()` loads the models (once per actor) and returns the function of one batch."""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from kgnorm.documents.types import TextDocument
from kgnorm.linking.candidates import LinkedMention, PartLinker
from kgnorm.mentions.types import Mention
from kgnorm.ner.spans import MentionDetector, Span
from kgnorm.nil.confidence import MentionConfidence, confidence_for, mention_features

Confidences = dict[str, MentionConfidence | None]  # by mention type (kgnorm.nil.confidence.confidence_for)
from kgnorm.text.pipeline import TextPipeline

EMBED_BATCH = 2048  # names encoded per call, in-process and per Ray task alike


def batches_of(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    """`items` in lists of `size` (the last shorter): the unit of work in-process and per Ray task."""
    block: list[Any] = []
    for item in items:
        block.append(item)
        if len(block) >= size:
            yield block
            block = []
    if block:
        yield block


def _linker(model_dir: str | dict[str, Any]) -> PartLinker:
    """The linker of a model directory (or of a router's meta given in memory), behind the query cache."""
    from kgnorm.jobs.models import open_linker
    from kgnorm.linking.query_cache import with_cache

    return with_cache(open_linker(model_dir)[0])


@dataclass
class LinkBatchWork:
    """`link`: a block of (mention, abbreviations) → its LinkedMentions."""

    model_dir: str | dict[str, Any]  # a directory, or a router's meta (kgnorm.methods.router)
    pipeline: TextPipeline
    link_kw: dict[str, Any]

    def open(self) -> Any:
        from kgnorm.linking.linker import link_stream

        linker = _linker(self.model_dir)
        return lambda block: list(link_stream(linker, self.pipeline, block, **self.link_kw))


@dataclass
class DocumentsDone:
    """One annotate batch: per document, its linked mentions (document consistency applied)."""

    linked: list[list[LinkedMention]]
    propagated: int = 0
    harmonized: int = 0
    dropped: int = 0  # mentions under the confidence threshold


def _contexts(doc: TextDocument, spans: list[Any]) -> list[str]:
    """The sentence(s) of each span (what BioCoM links in, and the Mention's `context`)."""
    from kgnorm.mentions.readers import _context, sentence_spans

    sents = sentence_spans(doc.text, (doc.title_end,) if doc.title_end else ())
    starts = [s for s, _ in sents]
    return [_context(doc.text, sents, starts, s.start, s.end) for s in spans]


@dataclass
class DocumentsFound:
    """One annotate batch after detection: the mentions to link (with their document's
    abbreviations), the index of each one's document, and the spans consistency added."""

    n_docs: int
    items: list[tuple[Mention, Any]]
    owner: list[int]
    propagated: int = 0
    spans: list[Span] = field(default_factory=list)  # the detector's span of each item


def detect_batch(detector: MentionDetector, consistency: bool, batch: list[TextDocument]) -> DocumentsFound:
    """Find the mentions of a batch of documents (abbreviations from each document's own text; with
    `consistency`, every occurrence of a found string tagged). The first stage of annotate_batch."""
    return _found(batch, detector.detect([d.text for d in batch]), consistency)


def detect_batches(detector: MentionDetector, consistency: bool,
                   batches: list[list[TextDocument]]) -> list[DocumentsFound]:
    """:func:`detect_batch` of each batch, the detector called once over all of them: a trained
    detector sorts the windows of every text it is given by length, so more documents per call fill
    its padded rows better (benchmarks/LOG.md, "windows packed over 128 documents"). A document's
    spans do not depend on the others in the call, so each batch's result is what detect_batch gives."""
    texts = [d.text for batch in batches for d in batch]
    spans = detector.detect(texts) if texts else []
    out, k = [], 0
    for batch in batches:
        out.append(_found(batch, spans[k:k + len(batch)], consistency))
        k += len(batch)
    return out


def _found(batch: list[TextDocument], found: list[list[Span]], consistency: bool) -> DocumentsFound:
    """A batch's detected spans as the mentions to link (abbreviations, consistency, contexts)."""
    from kgnorm.ner.propagate import propagate_spans
    from kgnorm.text.abbreviations import document_abbreviations

    out = DocumentsFound(len(batch), [], [])
    for i, (doc, spans) in enumerate(zip(batch, found)):
        abbr = document_abbreviations(doc.title, doc.text, [(s.text, s.start, s.end) for s in spans])
        if consistency:
            more = propagate_spans(doc.text, spans, abbr)
            out.propagated += len(more) - len(spans)
            spans = more
        for s, ctx in zip(spans, _contexts(doc, spans)):
            out.items.append((Mention(text=s.text, doc_id=doc.doc_id, start=s.start, end=s.end, type=s.type,
                                      context=ctx, parts=[s.reading] if s.reading else []), abbr))
            out.owner.append(i)
            out.spans.append(s)
    return out


def link_found(linker: PartLinker, pipeline: TextPipeline, consistency: bool, link_kw: dict[str, Any],
               found: DocumentsFound, confidence: Confidences | None = None, evidence: bool = False) -> DocumentsDone:
    """Link a detected batch (with `consistency`, one concept per string in a document). The second
    stage of annotate_batch. With a fitted `confidence` for a mention's type (kgnorm.nil.confidence_for),
    the mention gets its probability and is dropped under the threshold (counted in ``dropped``). With
    `evidence`, a span whose dictionary match names its concept(s) is linked to them
    (kgnorm.linking.evidence.prefer_named), unless it is a short form its document defines ("DM" is
    MEDIC's name of one disease, and in an abstract on myotonic dystrophy, that)."""
    from kgnorm.linking.consistency import harmonize_document
    from kgnorm.linking.evidence import prefer_named
    from kgnorm.linking.linker import link_stream

    done = DocumentsDone([[] for _ in range(found.n_docs)], propagated=found.propagated)
    named: list[tuple[Any, Span]] = []
    for i, span, (_, abbr), lm in zip(found.owner, found.spans, found.items,
                                      link_stream(linker, pipeline, found.items, **link_kw)):
        # a composite's parts are no one name; a short form the document defines means what it defines
        if evidence and span.concepts and len(lm.parts) == 1 and span.text not in abbr:
            named.append((lm, span))
        lm.features = mention_features(span.score, span.source, lm.parts)
        fitted = confidence_for(confidence, lm.mention.type)
        if fitted is not None:
            lm.confidence = fitted.probability(lm.features)
            if lm.confidence < fitted.threshold:
                done.dropped += 1
                continue
        done.linked[i].append(lm)
    if consistency:
        done.harmonized = sum(harmonize_document(lms) for lms in done.linked)
    # after the document's vote, which weighs the linker's scores: the name the text says decides
    for lm, span in named:
        lm.parts[0] = prefer_named(lm.parts[0], span.concepts, span.name)
    return done


def prefetch_found(linker: PartLinker, pipeline: TextPipeline, link_kw: dict[str, Any], found: DocumentsFound) -> None:
    """The queries of a detected batch handed to the linker ahead of its :func:`link_found`
    (kgnorm.linking.linker.prefetch_mentions; the same `link_kw`)."""
    from kgnorm.linking.linker import prefetch_mentions

    prefetch_mentions(linker, pipeline, found.items, **link_kw)


def annotate_batch(detector: MentionDetector, linker: PartLinker, pipeline: TextPipeline, consistency: bool,
                   link_kw: dict[str, Any], batch: list[TextDocument],
                   confidence: Confidences | None = None, evidence: bool = False) -> DocumentsDone:
    """Find the mentions of a batch of documents and link them: detect_batch, then link_found."""
    return link_found(linker, pipeline, consistency, link_kw, detect_batch(detector, consistency, batch),
                      confidence, evidence)


def annotate_group(detector: MentionDetector, linker: PartLinker, pipeline: TextPipeline, consistency: bool,
                   link_kw: dict[str, Any], group: list[list[TextDocument]],
                   confidence: Confidences | None = None, evidence: bool = False) -> list[DocumentsDone]:
    """:func:`annotate_batch` of each batch of `group`, detected in one call (:func:`detect_batches`)
    and linked batch by batch: what a Ray actor does with a block."""
    return [link_found(linker, pipeline, consistency, link_kw, found, confidence, evidence)
            for found in detect_batches(detector, consistency, group)]


@dataclass
class AnnotateBatchWork:
    """`annotate`: a group of batches of documents → a :class:`DocumentsDone` per batch (the
    detector called once over the group, :func:`annotate_group`). `detector`: a detector object
    (the dictionary tagger, built by the driver from the store) or a trained detector's directory
    (loaded by each worker)."""

    detector: MentionDetector | str
    model_dir: str | dict[str, Any]  # a directory, or a router's meta (kgnorm.methods.router)
    pipeline: TextPipeline
    consistency: bool
    link_kw: dict[str, Any] = field(default_factory=dict)
    dictionary_tagger: Any = None  # a trained detector's `dictionary` refinement's tagger (built by the driver)
    ner_precision: str | None = None  # a trained detector's path (kgnorm.methods.ner.runtime), loaded by a worker
    confidence: Confidences | None = None  # the fitted mention confidence by type (kgnorm calibrate), if any
    evidence: bool = False  # a dictionary match's concepts ranked first (kgnorm.linking.evidence)

    def bind(self, detector: MentionDetector, linker: PartLinker) -> Any:
        if self.dictionary_tagger is not None:  # the dictionary refinement, in-process and in each Ray worker alike
            detector.dictionary_tagger = self.dictionary_tagger  # type: ignore[attr-defined]
        return partial(annotate_group, detector, linker, self.pipeline, self.consistency, self.link_kw,
                       confidence=self.confidence, evidence=self.evidence)

    def stages(self, detector: MentionDetector, linker: PartLinker) -> tuple[Any, Any]:
        """(detect, link), the two halves of `bind`'s function (kgnorm.jobs.overlap): detect takes a
        list of batches (detected in one call, :func:`detect_batches`), link one batch."""
        self.bind(detector, linker)
        return (partial(detect_batches, detector, self.consistency),
                partial(link_found, linker, self.pipeline, self.consistency, self.link_kw,
                        confidence=self.confidence, evidence=self.evidence))

    def prefetch(self, linker: PartLinker) -> Any:
        """The function that hands a detected batch's queries to `linker` ahead of its linking."""
        return partial(prefetch_found, linker, self.pipeline, self.link_kw)

    def open(self) -> Any:
        from kgnorm.jobs.detectors import build_detector

        detector = self.detector
        if isinstance(detector, str):
            detector = build_detector(Path(detector), None, self.ner_precision)[0]
        return self.bind(detector, _linker(self.model_dir))


@dataclass
class EmbedBatchWork:
    """`embed`: a block of names → float32 vectors."""

    model_dir: str

    @staticmethod
    def bind(encoder: Any) -> Any:
        return lambda texts: np.asarray(encoder.encode(texts), dtype=np.float32)

    def open(self) -> Any:
        from kgnorm.methods.registry import load_encoder

        return self.bind(load_encoder(self.model_dir))
