"""`kgnorm eval annotate` as a library call: read gold and predicted documents, find the alt ids
of the model's (or the named) ontology in the store, score with kgnorm.evaluation.annotate_eval."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from kgnorm.errors import KgnormError


def evaluate_annotations(gold: str | Path, predictions: str | Path, *, model: str | Path | None = None,
                         ontology: str | None = None, types: list[str] | None = None, gold_format: str | None = None,
                         predictions_format: str | None = None, store: str | None = None) -> dict[str, Any]:
    """The report: keys ner, mention, document (precision, recall, f1, counts), by_type (the same per
    type, for a run of several types), documents, notes. `ontology`: one name, or several
    comma-separated; else the model's (a router's: each route's)."""
    from kgnorm.documents.readers import read_documents, sniff_document_format
    from kgnorm.evaluation.annotate_eval import score_documents
    from kgnorm.evaluation.link_predictions import ontology_ids

    if model is None and ontology is None:
        raise KgnormError("give --model DIR or --ontology NAME (whose alt ids count as the concept)")
    names = [o.strip() for o in ontology.split(",") if o.strip()] if ontology else _model_ontologies(model)
    alt_ids: dict[str, list[str]] = {}
    for name in names:  # a run of several types: every ontology's alt ids count
        for uid, alts in ontology_ids(name, store)[1].items():
            alt_ids[uid] = [*alt_ids.get(uid, []), *alts]
    pred_docs = read_documents(predictions, predictions_format or sniff_document_format(predictions))
    predicted = {}
    for doc in pred_docs:
        predicted.setdefault(doc.doc_id, []).extend(doc.annotations)
    gold_docs = read_documents(gold, gold_format or sniff_document_format(gold))
    report = score_documents(gold_docs, predicted, alt_ids, types, gold)
    if model is not None:  # a model refit on the gold file's mentions: its figures are not held out
        from kgnorm.methods.model_dir import read_model_meta
        from kgnorm.methods.refit import mark_held_out

        mark_held_out(report, read_model_meta(model), gold)
    return report


def _model_ontologies(model: str | Path | None) -> list[str]:
    """The ontologies a model links into: its own, or each of a router's routes'."""
    from kgnorm.methods.model_dir import read_model_meta

    meta = read_model_meta(model)
    names = [meta["ontology"]] if meta.get("ontology") else sorted(set((meta.get("ontologies") or {}).values()))
    if not names:
        raise KgnormError(f"{model}: the model names no ontology; give --ontology NAME")
    return names
