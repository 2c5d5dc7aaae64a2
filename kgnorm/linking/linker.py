"""The linker: mentions → text pipeline → model → ranked candidates per part.

Streams: mentions are read, prepared and linked in batches, so memory follows the batch
size, not the corpus. Output rows (docs/formats.md, "What link writes") and store edges are derived from the same
`LinkedMention` objects, so the TSV and the graph never disagree.
"""
from __future__ import annotations

import os
from collections import deque
from typing import Any, Iterable, Iterator

from kgnorm.graph.refs import ConceptRef
from kgnorm.linking.candidates import Hit, LinkedMention, PartLinker
from kgnorm.mentions.types import Mention
from kgnorm.text.pipeline import TextPipeline

TSV_HEADER = ["mention_id", "mention", "rank", "concept_uids", "score", "nil"]
# mentions read ahead of the batch being linked (their queries prefetched: kgnorm.encoders.fixed_shape)
LOOKAHEAD = int(os.environ.get("KGNORM_LINK_LOOKAHEAD", "8192"))


class DictionaryLinker:
    """Adapter for name-dictionary models (BioSyn and every encoder with a name index):
    concepts ranked by :func:`kgnorm.linking.concepts.link_concepts`, one per rank, each hit
    stamped with the model's `ontology`."""

    def __init__(self, model: Any, method: str, ontology: str = "") -> None:
        self.model = model
        self.method = method
        self.ontology = ontology

    def link_parts(self, queries: list[str], mentions: list[Mention], whole: list[bool],
                   top_k: int) -> list[list[Hit]]:
        from kgnorm.linking.concepts import link_concepts

        names = self.model.dictionary.names
        return [[Hit(c.uid, names[c.row], c.score, self.ontology) for c in ranked]
                for ranked in link_concepts(self.model, queries, top_k)]

    def prefetch(self, queries: list[str], top_k: int) -> None:
        """Queries a later call will link: handed to the model's encoder early where it takes them."""
        ahead = getattr(self.model, "prefetch", None)
        if ahead is not None:
            ahead(queries)


class ContextLinker:
    """Adapter for context models (BioCoM): each part is embedded inside its mention's sentence; the
    model's ``link([(text, context), ...], top_k=)`` answers ``(uid, score)`` pairs per item."""

    def __init__(self, model: Any, method: str = "biocom", ontology: str = "") -> None:
        self.model = model
        self.method = method
        self.ontology = ontology

    def link_parts(self, queries: list[str], mentions: list[Mention], whole: list[bool],
                   top_k: int) -> list[list[Hit]]:
        # a whole mention is found in its sentence by its surface text; a composite part is not
        items = [(m.text if w else q, m.context or m.text) for q, m, w in zip(queries, mentions, whole)]
        out = self.model.link(items, top_k=top_k)
        return [[Hit(uid, uid, float(score), self.ontology) for uid, score in cands] for cands in out]


def pipeline_from_meta(meta: dict[str, Any], **overrides: Any) -> TextPipeline:
    cfg = dict(meta.get("text_pipeline", {}))
    cfg.update({k: v for k, v in overrides.items() if v is not None})
    allowed = {"lowercase", "normalize", "abbreviations", "composites", "single_gold_no_split"}
    return TextPipeline(**{k: v for k, v in cfg.items() if k in allowed})


def link_stream(linker: PartLinker, pipeline: TextPipeline,
                mentions: Iterable[tuple[Mention, dict[str, str]]], top_k: int = 5,
                batch_size: int = 256, nil_threshold: float | None = None,
                nil_classifier: Any = None, lookahead: int | None = None) -> Iterator[LinkedMention]:
    """Link mentions batch by batch, in input order; `nil_threshold`: a top-1 score below it marks nil;
    `nil_classifier` (a :class:`~kgnorm.nil.classifier.NilClassifier`) instead
    decides from each part's top hits (a mention is nil when any of its parts is).
    Up to `lookahead` mentions are read and prepared ahead of the batch being linked, and their
    queries handed to the linker's ``prefetch`` where it has one (the query encoder fills its
    fixed-shape calls from them; ``prefetch_parts`` also gets each query's mention, for a linker
    that routes by it); memory follows `batch_size` + `lookahead`, not the corpus."""
    fetch = _fetch_depth(top_k, nil_classifier)
    lookahead = LOOKAHEAD if lookahead is None else lookahead

    def prepare(batch: list[tuple[Mention, dict[str, str]]]) -> list[LinkedMention]:
        linked = _prepared(pipeline, batch)
        _prefetch(linker, linked, fetch)
        return linked

    def run(linked: list[LinkedMention]) -> Iterator[LinkedMention]:
        flat_q = [q for lm in linked for q in lm.queries]
        flat_m = [lm.mention for lm in linked for _ in lm.queries]
        whole = [len(lm.queries) == 1 for lm in linked for _ in lm.queries]
        hits = linker.link_parts(flat_q, flat_m, whole, fetch) if flat_q else []
        part_nil = (nil_classifier.decide(flat_q, [[(h.name, h.score) for h in p] for p in hits])
                    if nil_classifier is not None else None)
        pos = 0
        for lm in linked:
            lm.parts = [p[:top_k] for p in hits[pos:pos + len(lm.queries)]]
            if part_nil is not None:
                lm.nil = not lm.parts or any(part_nil[pos:pos + len(lm.queries)])
            pos += len(lm.queries)
            if nil_threshold is not None:
                top = [p[0].score for p in lm.parts if p]
                lm.nil = not top or min(top) < nil_threshold
            yield lm

    ahead: deque[list[LinkedMention]] = deque()
    n_ahead = 0
    batch: list[tuple[Mention, dict[str, str]]] = []
    for item in mentions:
        batch.append(item)
        if len(batch) >= batch_size:
            ahead.append(prepare(batch))
            n_ahead += len(batch)
            batch = []
            while ahead and n_ahead - len(ahead[0]) >= lookahead:
                n_ahead -= len(ahead[0])
                yield from run(ahead.popleft())
    if batch:
        ahead.append(prepare(batch))
    while ahead:
        yield from run(ahead.popleft())


def _fetch_depth(top_k: int, nil_classifier: Any = None) -> int:
    """Ranks the linker is asked for: `top_k`, or deeper where the nil classifier reads more."""
    return max(top_k, nil_classifier.depth) if nil_classifier is not None else top_k


def _prepared(pipeline: TextPipeline, batch: Iterable[tuple[Mention, dict[str, str]]]) -> list[LinkedMention]:
    return [LinkedMention(m, pipeline.prepare(m, abbr) or [pipeline.normalize_name(m.text)]) for m, abbr in batch]


def _prefetch(linker: PartLinker, linked: list[LinkedMention], fetch: int) -> None:
    """The queries of `linked` handed to the linker's ``prefetch`` (or ``prefetch_parts``, with each
    query's mention, for a linker that routes by it) where it has one."""
    by_mention = getattr(linker, "prefetch_parts", None)  # a linker that routes each query by its mention
    prefetch = getattr(linker, "prefetch", None)
    if by_mention is not None:
        by_mention([q for lm in linked for q in lm.queries], [lm.mention for lm in linked for _ in lm.queries],
                   fetch)
    elif prefetch is not None:
        prefetch([q for lm in linked for q in lm.queries], fetch)


def prefetch_mentions(linker: PartLinker, pipeline: TextPipeline, mentions: Iterable[tuple[Mention, dict[str, str]]],
                      top_k: int = 5, nil_classifier: Any = None, **_: Any) -> None:
    """Mentions a later :func:`link_stream` (same linker, pipeline and link options) will link,
    their queries handed to the linker's prefetch now: a caller that links in many short streams
    (annotate, one per batch of documents) lets the query encoder fill its fixed-shape calls across
    them, where each stream alone would end in part-filled calls (kgnorm.encoders.fixed_shape). It
    changes when a query's vector is computed, not its value: the output is the same."""
    _prefetch(linker, _prepared(pipeline, mentions), _fetch_depth(top_k, nil_classifier))


def tsv_rows(linked: LinkedMention, top_k: int) -> list[list[str]]:
    """The TSV rows of one mention (docs/formats.md, "What link writes"): one per rank, one concept per part, parts
    joined by ``|``. `eval link` scores exactly these rows (kgnorm.evaluation.link_predictions)."""
    rows = []
    for rank, hits in linked.ranks(top_k):
        score = sum(h.score for h in hits) / len(hits)
        rows.append([linked.mention.mention_id, linked.mention.text, str(rank),
                     "|".join(h.uid for h in hits), f"{score:.4f}", str(int(linked.nil))])
    return rows


def candidate_sets(linked: LinkedMention) -> list[list[str]]:
    """Per part, the ranked concept uids (one per rank, as the TSV shows them)."""
    return [[h.uid for h in part] for part in linked.parts]


def edges_for(linked: LinkedMention, write_top_k: int) -> list[tuple[ConceptRef, int, float]]:
    """(concept, rank, score) edges of one mention; each part's concept gets its own edge."""
    if linked.nil:
        return []
    out: dict[tuple[ConceptRef, int], float] = {}
    for rank, hits in linked.ranks(write_top_k):
        for h in hits:
            key = (h.ref, rank)
            out[key] = max(out.get(key, float("-inf")), h.score)
    return [(ref, rank, score) for (ref, rank), score in out.items()]


def training_pairs(pipeline: TextPipeline, items: Iterable[tuple[Mention, dict[str, str]]]
                   ) -> list[tuple[str, set[str]]]:
    """(normalized query, gold uids) per composite part, for training and dev selection;
    mentions without gold and parts whose gold is nil are dropped. When the split does not
    match the gold parts, the whole normalized mention keeps all its golds."""
    from kgnorm.mentions.readers import NIL_PART

    pairs: list[tuple[str, set[str]]] = []
    for mention, abbr in items:
        if not mention.gold:
            continue
        queries = pipeline.prepare(mention, abbr)
        golds = mention.gold if len(queries) == len(mention.gold) else ["|".join(mention.gold)]
        if len(queries) != len(golds):
            queries = [pipeline.normalize_name(mention.text)]
        for q, g in zip(queries, golds):
            ids = {x for part in g.split("|") for x in part.split("+") if x and x not in ("-1", NIL_PART)}
            if q and ids:
                pairs.append((q, ids))
    return pairs
