"""`kgnorm eval hierarchy` as a library call: semantic-similarity mAP and hypernym-detection MRR
per level (DAN §4.3) of a model's vectors on the level split under a root, beside baselines."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from kgnorm.jobs.models import model_split


def evaluate_model_hierarchy(model: str | Path, root: str, *, ontology: str | None = None, baselines: bool = True,
                             encoder: str | Path | None = None, seed: int | None = None,
                             store: str | None = None) -> dict[str, dict[str, Any]]:
    """Per scorer (the model's method; with ``baselines`` also averaged word vectors when the
    model has them, char tf-idf and a MiniLM -- or ``encoder`` -- mean-pooled), its scores by
    level (kgnorm.evaluation.hierarchy.format_results prints them)."""
    from kgnorm.evaluation.hierarchy import char_tfidf_encoder, evaluate_hierarchy, word_vector_encoder
    from kgnorm.methods.registry import load_encoder

    meta, _, split, _ = model_split(model, root, ontology, seed, store)
    enc = load_encoder(model)
    results = {meta["method"]: evaluate_hierarchy(enc.encode, split)}
    if baselines:
        if hasattr(enc, "wordvecs"):
            results["avg-wordvec"] = evaluate_hierarchy(word_vector_encoder(enc.wordvecs), split)
        results["char-tfidf"] = evaluate_hierarchy(char_tfidf_encoder(it.name for it in split.items()), split)
        from kgnorm.encoders.dense import DenseEncoder, default_encoder_path
        dense = DenseEncoder(encoder or default_encoder_path(), pooling="mean")
        results["minilm"] = evaluate_hierarchy(lambda names: dense.encode(list(names), normalize=True), split)
    return results


def hierarchy_rows(results: dict[str, dict[str, Any]]) -> list[tuple[str, int, float, float]]:
    """(scorer, level, mAP, MRR) rows of :func:`evaluate_model_hierarchy`'s results."""
    return [(scorer, k, r["map"][k], r["mrr"][k]) for scorer, r in results.items() for k in r["levels"]]
