"""Nil-detection evaluation on DILBERT's constructed dev set (`kgnorm eval link --nil-fraction`,
benchmarks/encoders.py).

Every strategy -- DILBERT's thresholds (:mod:`kgnorm.nil.thresholds`) and the classifier
(:mod:`kgnorm.nil.classifier`) -- is fitted on half of the dev *documents* and scored
on the other half, for a few seeded document splits. Splitting by document keeps a
document's mentions from helping decide their own case, while a surface form repeated
across documents counts as it would on a user's new documents.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from kgnorm.errors import KgnormError
from kgnorm.nil.thresholds import (NilDevSet, NilExample, choose_threshold, decision_metrics,
                                nil_dev_set, nil_metrics)
from kgnorm.nil.classifier import DEFAULT_DEPTH, NilClassifier, hit_features

__all__ = ["EVALUATED_STRATEGIES", "SPLIT_SEEDS", "concept_hits", "document_halves",
           "nil_examples", "evaluate_nil_strategies", "strategy_summaries",
           "constructed_nil_report"]

EVALUATED_STRATEGIES = ("min_fp", "max_tp", "weighted", "dev_accuracy", "classifier")
SPLIT_SEEDS = (0, 1, 2)
METRICS = ("accuracy", "nil_precision", "nil_recall", "nil_f1", "in_kb_accuracy")

Hits = list[tuple[str, str, float]]


def concept_hits(model: Any, queries: Sequence[str], depth: int = DEFAULT_DEPTH, linker: Any = None) -> list[Hits]:
    """Top ``depth`` concepts per query as (uid, name, score) from a name-dictionary model,
    names collapsed to their concept's best one exactly as `kgnorm link` does
    (:class:`kgnorm.linking.linker.DictionaryLinker`), or from ``linker`` (a linker over ``model``,
    e.g. a reranker: the nil decision must see the scores `link` writes). The queries are read
    without their sentences (the constructed set keeps only the normalized parts)."""
    from types import SimpleNamespace

    from kgnorm.linking.linker import DictionaryLinker

    qs = list(queries)
    linker = linker if linker is not None else DictionaryLinker(model, "nil")
    bare = [SimpleNamespace(text=q, context="") for q in qs]
    parts = linker.link_parts(qs, bare, [True] * len(qs), depth)
    return [[(h.uid, h.name, h.score) for h in hits] for hits in parts]


def document_halves(docs: Sequence[str], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the mentions of a seeded half of the documents, and of the rest."""
    names = sorted(set(docs))
    if len(names) < 2:
        raise KgnormError("nil evaluation needs dev mentions from at least 2 documents")
    perm = np.random.default_rng([seed, 29]).permutation(len(names))
    in_a = {names[i] for i in perm[: len(names) // 2]}
    a = np.array([i for i, d in enumerate(docs) if d in in_a], dtype=int)
    b = np.array([i for i, d in enumerate(docs) if d not in in_a], dtype=int)
    return a, b


def nil_examples(nil_set: NilDevSet, hits: Sequence[Hits]
                 ) -> tuple[list[NilExample], np.ndarray]:
    """Per query: the threshold strategies' example (distance = -top-1 score) and the
    classifier's features."""
    if len(hits) != len(nil_set.queries):
        raise KgnormError(f"{len(hits)} rankings for {len(nil_set.queries)} queries")
    alt = nil_set.dictionary.alt_ids
    examples, feats = [], []
    for q, h, gs, kb in zip(nil_set.queries, hits, nil_set.golds, nil_set.in_kb):
        ids = {h[0][0], *alt.get(h[0][0], ())} if h else set()
        examples.append(NilExample(-h[0][2] if h else float("inf"), kb, bool(kb and ids & gs)))
        feats.append(hit_features(q, [(name, score) for _, name, score in h]))
    return examples, np.vstack(feats) if feats else np.zeros((0, 8))


def evaluate_nil_strategies(nil_set: NilDevSet, hits: Sequence[Hits], docs: Sequence[str],
                            strategies: Sequence[str] = EVALUATED_STRATEGIES,
                            seeds: Sequence[int] = SPLIT_SEEDS) -> dict[str, dict]:
    """{strategy: {"mean": metrics averaged over the splits, "splits": per-split metrics or
    {"error": why}}}, each fitted on half A of the documents and scored on half B."""
    if len(docs) != len(nil_set.queries):
        raise KgnormError(f"{len(docs)} document ids for {len(nil_set.queries)} queries")
    examples, X = nil_examples(nil_set, hits)
    kb = np.array([e.in_kb for e in examples], dtype=bool)
    ok = np.array([e.correct for e in examples], dtype=bool)

    def scorer(strategy: str) -> Callable[[np.ndarray, np.ndarray], dict]:
        if strategy == "classifier":
            def run(a: np.ndarray, b: np.ndarray) -> dict:
                clf = NilClassifier.fit(X[a], kb[a], ok[a])
                return decision_metrics([examples[i] for i in b], clf.is_nil(X[b]))
        else:
            def run(a: np.ndarray, b: np.ndarray) -> dict:
                t, used = choose_threshold([examples[i] for i in a], strategy)
                return {**nil_metrics([examples[i] for i in b], t), "strategy_used": used}
        return run

    halves = [document_halves(docs, s) for s in seeds]
    out: dict[str, dict] = {}
    for strategy in strategies:
        run = scorer(strategy)
        splits = []
        for a, b in halves:
            try:
                splits.append(run(a, b))
            except KgnormError as e:          # a half without nil (or in-KB) mentions
                splits.append({"error": str(e)})
        good = [m for m in splits if "error" not in m]
        with warnings.catch_warnings():       # all-NaN ratios (no predicted nil) stay NaN
            warnings.simplefilter("ignore", RuntimeWarning)
            mean = ({k: float(np.nanmean([m[k] for m in good])) for k in METRICS}
                    if good else None)
        if mean is not None:
            mean["predicted_nil"] = int(sum(m["predicted_nil"] for m in good))
            mean["n_nil"] = int(sum(m["n_nil"] for m in good))
        out[strategy] = {"mean": mean, "splits": splits}
    out["ceiling"] = {"accuracy": float(np.mean(np.where(kb, ok, True))) if len(kb) else None}
    return out


def strategy_summaries(report: dict[str, dict]
                       ) -> list[tuple[str, dict | None, str | None, list[float | None]]]:
    """(strategy, mean metrics or None, the first split's error when no split worked,
    per-split accuracies) of an :func:`evaluate_nil_strategies` report, for printing."""
    out = []
    for strategy, r in report.items():
        if strategy == "ceiling":
            continue
        error = None if r["mean"] is not None else r["splits"][0].get("error")
        out.append((strategy, r["mean"], error, [m.get("accuracy") for m in r["splits"]]))
    return out


def constructed_nil_report(model: Any, pipeline: Any, mentions: Iterable[tuple[Any, dict[str, str]]],
                           fraction: float = 0.2, seed: int = 0, linker: Any = None) -> dict[str, Any]:
    """DILBERT's constructed set from gold ``mentions`` ((Mention, abbreviations) pairs; one
    query per composite part, as training pairs) against ``model``'s dictionary, linked
    with ``model`` (its dictionary is replaced by the reduced one; through ``linker`` when it wraps
    ``model``) and every strategy scored by :func:`evaluate_nil_strategies`."""
    from kgnorm.linking.linker import training_pairs

    pairs, docs = [], []
    for m, abbr in mentions:
        for pair in training_pairs(pipeline, [(m, abbr)]):
            pairs.append(pair)
            docs.append(m.doc_id or m.mention_id)
    if not pairs:
        raise KgnormError("no mention with a gold concept to build the nil dev set from")
    nil_set = nil_dev_set(model.dictionary, pairs, fraction=fraction, seed=seed)
    model.set_dictionary(nil_set.dictionary)
    hits = concept_hits(model, nil_set.queries, linker=linker)
    nil_docs = [docs[i] for i in nil_set.source]
    return {"fraction": fraction, "seed": seed, "removed": len(nil_set.removed),
            "queries": len(nil_set.queries), "documents": len(set(nil_docs)),
            "out_of_kb": nil_set.n_nil, "splits": list(SPLIT_SEEDS),
            "strategies": evaluate_nil_strategies(nil_set, hits, nil_docs)}
