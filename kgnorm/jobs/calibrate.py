"""`kgnorm calibrate`: fit annotate's mention confidence (kgnorm.nil.confidence) for one detector
directory and one linking model on annotated dev documents, and store it in the detector's
directory (kgnorm.methods.mention_confidence), where `annotate --min-confidence auto` (the default)
finds it.

The dev documents are annotated exactly as `annotate` does (no store write, no threshold), each
found mention's rank-1 concepts compared with its document's gold concepts (alt ids folded as
`kgnorm eval annotate` folds them); the regression and the threshold with the best document-level
F1 are fitted on them. That F1 is measured on the documents the threshold was chosen on: the
figure to quote is a held-out one (benchmarks/annotate.py --confidence cross-fits two halves)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgnorm.errors import KgnormError


@dataclass
class CalibrationReport:
    threshold: float
    fit: dict[str, Any]
    coef: dict[str, float]
    notes: list[str] = field(default_factory=list)

    def summary(self) -> list[str]:
        before, after = self.fit["document_before"], self.fit["document_after"]
        return [f"mention confidence fitted on {self.fit['dev_documents']:,} dev document(s), "
                f"{self.fit['dev_mentions']:,} found mention(s) ({self.fit['dev_right']:,} linked right)",
                f"threshold {self.threshold:.3f}: dev document-level P/R/F1 {before[0]:.4f}/{before[1]:.4f}/"
                f"{before[2]:.4f} -> {after[0]:.4f}/{after[1]:.4f}/{after[2]:.4f} (in-sample: the threshold was "
                "chosen on these documents)"]


def calibrate_annotate(ner: str | Path, model: str | Path, dev: str | Path, *, dev_format: str | None = None,
                       types: list[str] | None = None, store: str | None = None, threads: int | None = None,
                       progress: bool = True) -> CalibrationReport:
    """Fit and store the confidence of `ner` (a trained detector's directory) with `model`."""
    from kgnorm.documents.readers import read_documents
    from kgnorm.evaluation.annotate_eval import concept_set
    from kgnorm.evaluation.link_eval import ontology_ids
    from kgnorm.jobs.annotate import annotate_documents
    from kgnorm.jobs.eval_annotate import sniff_document_format
    from kgnorm.methods.mention_confidence import linker_identity, store_confidence
    from kgnorm.methods.model_dir import read_model_meta
    from kgnorm.nil.confidence import FEATURES, DevMention, fit_confidence

    if not Path(ner).is_dir():
        raise KgnormError(f"--ner {ner}: the confidence is stored in a detector's model directory (kgnorm train ner)")
    fmt = dev_format or sniff_document_format(dev)
    meta = read_model_meta(model)
    ontology = meta.get("ontology")
    if not ontology:
        raise KgnormError(f"{model}: the linking model names no ontology")
    report = annotate_documents(ner, model, dev, input_format=fmt, output=None, write=False, collect=True,
                                min_confidence="off", progress=progress, threads=threads, store=store)
    _, alt_ids = ontology_ids(ontology, store)
    canonical = {a: uid for uid, alts in alt_ids.items() for a in alts}
    wanted = set(types) if types else None
    gold = {d.doc_id: concept_set([i for a in d.annotations if wanted is None or a.type in wanted for i in a.ids],
                                  canonical)
            for d in read_documents(dev, fmt)}
    mentions = [DevMention(r["doc_id"], tuple(r["features"]),
                           concept_set(r["concept_uids"].split("|") if r["concept_uids"] else [], canonical))
                for r in report.rows]
    fitted = fit_confidence(mentions, gold, linker_identity(model, meta))
    store_confidence(ner, fitted)
    return CalibrationReport(fitted.threshold, fitted.fit, dict(zip(FEATURES, fitted.coef)), report.notes)
