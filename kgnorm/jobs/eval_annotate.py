"""`kgnorm eval annotate` as a library call: read gold and predicted documents, find the alt ids
of the model's (or the named) ontology in the store, score with kgnorm.evaluation.annotate_eval."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from kgnorm.errors import KgnormError


def evaluate_annotations(gold: str | Path, predictions: str | Path, *, model: str | Path | None = None,
                         ontology: str | None = None, types: list[str] | None = None, gold_format: str | None = None,
                         predictions_format: str | None = None, store: str | None = None) -> dict[str, Any]:
    """The report: keys ner, mention, document (precision, recall, f1, counts), documents, notes."""
    from kgnorm.documents.readers import read_documents, sniff_document_format
    from kgnorm.evaluation.annotate_eval import score_documents
    from kgnorm.evaluation.link_predictions import ontology_ids

    if model is None and ontology is None:
        raise KgnormError("give --model DIR or --ontology NAME (whose alt ids count as the concept)")
    if ontology is None:
        from kgnorm.methods.model_dir import read_model_meta
        ontology = read_model_meta(model).get("ontology") or None
        if ontology is None:
            raise KgnormError(f"{model}: the model names no ontology; give --ontology NAME")
    _, alt_ids = ontology_ids(ontology, store)
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
