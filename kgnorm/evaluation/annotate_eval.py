"""Scores of annotated documents against gold (what `kgnorm eval annotate` reports).

Three measures, each precision / recall / F1 (micro, over all documents):
- ner: strict spans, (document, start, end) equal;
- mention: span and concept set right: the set of a mention's concept ids (composite parts and
  conjunctions, ``-1`` dropped) equal to gold's after mapping alt ids to their concept, so a
  nil prediction is right only for a gold mention without a concept;
- document: per document, the set of concept ids found vs gold's (BioCreative V DNER's measure).
Type filter: gold keeps the given types; a prediction is dropped only when its type is a gold
type that was not selected (Chemical when scoring Disease), so a detector's single label
("Disease") still meets NCBI-disease's four."""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgnorm.documents.types import Annotation, TextDocument
from kgnorm.errors import InputError
from kgnorm.ner.spans import Span

UNLINKABLE = {"", "-1"}


@dataclass
class Counts:
    tp: int = 0
    n_pred: int = 0
    n_gold: int = 0

    def add(self, pred: set, gold: set) -> None:
        self.tp += len(pred & gold)
        self.n_pred += len(pred)
        self.n_gold += len(gold)

    def scores(self) -> dict[str, float | int]:
        p = self.tp / self.n_pred if self.n_pred else 0.0
        r = self.tp / self.n_gold if self.n_gold else 0.0
        f = 2 * p * r / (p + r) if p + r else 0.0
        return {"precision": p, "recall": r, "f1": f, "tp": self.tp, "predicted": self.n_pred, "gold": self.n_gold}


def strict_span_prf(gold: Sequence[Sequence[Span]], predicted: Sequence[Sequence[Span]]) -> dict[str, float | int]:
    """Strict-span NER scores of detector spans per document (start, end and type equal), micro
    over all documents: what `train ner` selects its model on."""
    counts = Counts()
    for g, p in zip(gold, predicted, strict=True):
        counts.add({(s.start, s.end, s.type) for s in p}, {(s.start, s.end, s.type) for s in g})
    return counts.scores()


def concept_set(ids: Iterable[str], canonical: Mapping[str, str]) -> frozenset[str]:
    """Concept ids of one mention: parts (``|``) and conjunctions (``+``) split, ``-1`` dropped,
    an alt id replaced by its concept's uid."""
    out = set()
    for part in ids:
        for piece in str(part).replace("+", "|").split("|"):
            piece = piece.strip()
            if piece not in UNLINKABLE:
                out.add(canonical.get(piece, piece))
    return frozenset(out)


def check_offsets(doc: TextDocument, path: str | Path) -> None:
    """Every gold annotation's text is the document's text at its offsets."""
    for a in doc.annotations:
        if doc.text[a.start:a.end] != a.text:
            raise InputError(f"annotation {a.start}-{a.end} says {a.text!r} but the text there is "
                             f"{doc.text[a.start:a.end]!r}", path, doc.line, record=doc.doc_id)


def score_documents(gold: Iterable[TextDocument], predicted: Mapping[str, list[Annotation]],
                    alt_ids: Mapping[str, Iterable[str]], types: Iterable[str] | None = None,
                    gold_path: str | Path = "gold") -> dict[str, Any]:
    """{ner, mention, document} scores (see the module docstring), plus counts and notes; and
    ``by_type``, the same three per type, when two or more gold types are also predicted types
    (a run of several types: each scored on its own gold and predictions, documents included)."""
    canonical = {a: uid for uid, alts in alt_ids.items() for a in alts}
    wanted = set(types) if types else None
    gold_types: set[str] = set()
    seen: set[str] = set()
    gold_docs = []
    for doc in gold:
        check_offsets(doc, gold_path)
        if doc.doc_id in seen:
            raise InputError(f"document {doc.doc_id} appears twice", gold_path, record=doc.doc_id)
        seen.add(doc.doc_id)
        gold_types.update(a.type for a in doc.annotations)
        gold_docs.append((doc.doc_id, doc.annotations))
    dropped = gold_types - wanted if wanted else set()
    pairs = [([a for a in anns if wanted is None or a.type in wanted],
              [a for a in predicted.get(doc_id, ()) if a.type not in dropped]) for doc_id, anns in gold_docs]
    report: dict[str, Any] = _scores(pairs, canonical)
    both = sorted({a.type for g, _ in pairs for a in g} & {a.type for _, p in pairs for a in p})
    if len(both) > 1:
        report["by_type"] = {t: _scores([([a for a in g if a.type == t], [a for a in p if a.type == t])
                                         for g, p in pairs], canonical) for t in both}
    extra = sorted(set(predicted) - seen)
    notes = [f"{len(extra)} predicted document(s) are not in the gold file and are not scored "
             f"(first: {extra[0]})"] if extra else []
    return {**report, "documents": len(gold_docs), "notes": notes}


def _scores(pairs: Iterable[tuple[list[Annotation], list[Annotation]]],
            canonical: Mapping[str, str]) -> dict[str, Any]:
    """ner, mention and document scores over (gold, predicted) annotations per document."""
    ner, mention, document = Counts(), Counts(), Counts()
    for g, p in pairs:
        ner.add({(a.start, a.end) for a in p}, {(a.start, a.end) for a in g})
        mention.add({(a.start, a.end, concept_set(a.ids, canonical)) for a in p},
                    {(a.start, a.end, concept_set(a.ids, canonical)) for a in g})
        document.add(set().union(*(concept_set(a.ids, canonical) for a in p)),
                     set().union(*(concept_set(a.ids, canonical) for a in g)))
    return {"ner": ner.scores(), "mention": mention.scores(), "document": document.scores()}


def report_lines(report: dict[str, Any]) -> list[str]:
    width = max([10] + [len(t) + 10 for t in report.get("by_type", {})])
    lines = [f"{'measure':<{width}}{'precision':>10}{'recall':>10}{'f1':>10}{'tp':>8}{'pred':>8}{'gold':>8}"]
    rows = [("", report)] + sorted(report.get("by_type", {}).items())
    for typ, scores in rows:
        for key in ("ner", "mention", "document"):
            s = scores[key]
            label = f"{key} {typ}" if typ else key
            lines.append(f"{label:<{width}}{s['precision']:>10.4f}{s['recall']:>10.4f}{s['f1']:>10.4f}"
                         f"{s['tp']:>8}{s['predicted']:>8}{s['gold']:>8}")
    lines.append(f"{report['documents']} gold document(s)")
    return lines
