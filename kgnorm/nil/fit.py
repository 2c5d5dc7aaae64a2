"""The nil decision of a link run: none, a given score threshold, or one fitted on dev
mentions (DILBERT's threshold strategies, or the nil classifier), with what the Run records.

Everything is checked before anything is read or written, and fitting happens before the
store or the output is touched: a failure here writes nothing."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kgnorm.errors import InputError, KgnormError

NIL_STRATEGIES = ("auto", "min_fp", "max_tp", "weighted", "dev_accuracy", "classifier")


@dataclass
class NilDecision:
    """`threshold`: a top-1 score below it is nil (what `link_stream` takes); `classifier`: a
    fitted NilClassifier instead; `params`: recorded on the Run; `note`: one line for the user."""

    threshold: float | None = None
    classifier: Any = None
    params: dict[str, Any] = field(default_factory=dict)
    note: str = ""


def parse_nil_option(nil_threshold: float | str | None, nil_dev: str | Path | None, nil_strategy: str) -> bool:
    """True for `auto`; checks every nil option before anything is read or written."""
    if nil_strategy not in NIL_STRATEGIES:
        raise KgnormError(f"unknown --nil-strategy {nil_strategy!r}; valid: {', '.join(NIL_STRATEGIES)}")
    if isinstance(nil_threshold, str) and nil_threshold.strip().lower() == "auto":
        if nil_dev is None:
            raise KgnormError("--nil-threshold auto needs --nil-dev F: dev mentions with gold, some out-of-KB")
        if not Path(nil_dev).exists():
            raise InputError("nil dev mentions file not found", path=nil_dev)
        return True
    if nil_dev is not None:
        raise KgnormError("--nil-dev is only used with --nil-threshold auto")
    if nil_threshold is not None:
        try:
            value = float(nil_threshold)
        except ValueError:
            raise KgnormError(f"--nil-threshold must be a number or 'auto', got {nil_threshold!r}") from None
        if value != value:  # NaN
            raise KgnormError("--nil-threshold must not be NaN")
    return False


def nil_decision(linker, meta: dict[str, Any], pipeline, nil_threshold: float | str | None,
                 nil_dev: str | Path | None, nil_strategy: str, input_format: str | None, batch_size: int,
                 store: str | None) -> NilDecision:
    """The decision for the options as parsed by :func:`parse_nil_option` (call that first)."""
    if not (isinstance(nil_threshold, str) and nil_threshold.strip().lower() == "auto"):
        return NilDecision(threshold=None if nil_threshold is None else float(nil_threshold))
    decision = fit_nil(linker, meta, pipeline, Path(nil_dev), input_format, nil_strategy, batch_size, store)
    p = decision.params
    dev_note = f"dev: {p['nil_dev_n']} mention(s), {p['nil_dev_out_of_kb']} out-of-KB"
    if decision.classifier is not None:
        clf, cv = decision.classifier, p["nil_dev_accuracy"]
        decision.note = (f"nil classifier fitted on {clf.n_fit} dev part(s) ({clf.n_fit_nil} out-of-KB); {dev_note}, "
                         "nil accuracy " + (f"{cv:.4f} ({p['nil_dev_accuracy_kind']})" if cv is not None
                                            else "n/a (too few documents)"))
    else:
        decision.note = (f"nil threshold: strategy {p['nil_strategy']}: a top-1 score below "
                         f"{decision.threshold:.4f} is nil; {dev_note}, nil accuracy {p['nil_dev_accuracy']:.4f}")
    return decision


def fit_nil(linker, meta: dict[str, Any], pipeline, nil_dev: Path, input_format: str | None,
            strategy: str, batch_size: int, store: str | None) -> NilDecision:
    """Link the dev mentions, then pick DILBERT's distance threshold t (kgnorm.nil.thresholds);
    `link_stream` takes the score threshold -t (distance = -score). With strategy
    `classifier`, fit a NilClassifier (kgnorm.nil.classifier) instead."""
    from kgnorm.evaluation.composites import scoring_gold
    from kgnorm.evaluation.link_predictions import known_ids
    from kgnorm.evaluation.link_accuracy import GoldMention, MentionPrediction, mention_rank
    from kgnorm.linking.linker import candidate_sets, link_stream
    from kgnorm.nil.thresholds import choose_threshold, from_scores, nil_metrics
    from kgnorm.nil.classifier import DEFAULT_DEPTH
    from kgnorm.mentions.readers import NIL_PART, read_mentions_with_abbreviations

    known, alt = known_ids(linker, meta, store)
    scores: list[float] = []
    in_kb: list[bool] = []
    correct: list[bool] = []
    n_total = n_minus1 = n_unknown = 0
    depth = DEFAULT_DEPTH if strategy == "classifier" else 1
    linked = list(link_stream(linker, pipeline, read_mentions_with_abbreviations(nil_dev, input_format),
                              top_k=depth, batch_size=batch_size))
    if not any(lm.mention.gold for lm in linked):
        raise InputError("no dev mention has a gold field: --nil-dev needs gold concepts (-1 for out-of-KB)",
                         path=nil_dev)
    for lm in linked:
        n_total += 1
        gold = list(lm.mention.gold)
        top = [p[0].score for p in lm.parts if p]
        scores.append(min(top) if top else float("-inf"))
        linkable = [g for g in gold if g != NIL_PART]  # a -1 part of a composite is ignored, as in eval
        if not linkable:
            n_minus1 += 1
            kb = False
        else:
            kb = all(any(x in known for x in g.split("+")) for g in linkable)
            n_unknown += not kb
        in_kb.append(kb)
        rank = mention_rank(MentionPrediction(candidate_sets(lm)), GoldMention(tuple(scoring_gold(lm.mention))), 1, alt) if kb else 0
        correct.append(rank == 1)
    n_out = n_minus1 + n_unknown
    if n_out == 0:
        raise InputError(f"none of the {n_total} dev mention(s) is out-of-KB (gold -1, or a concept the model's "
                         "dictionary lacks), so no nil threshold can be chosen; give --nil-threshold NUMBER",
                         path=nil_dev)
    if strategy == "classifier":
        return fit_nil_classifier(linked, in_kb, correct, nil_dev, n_total, n_out)
    examples = from_scores(scores, in_kb, correct)
    t, used = choose_threshold(examples, strategy)
    m = nil_metrics(examples, t)
    return NilDecision(threshold=-t, params={
        "nil_strategy": used, "nil_distance_threshold": t, "nil_dev": str(nil_dev), "nil_dev_n": n_total,
        "nil_dev_out_of_kb": n_out, "nil_dev_accuracy": m["accuracy"],
        "nil_dev_f1": None if m["nil_f1"] != m["nil_f1"] else m["nil_f1"]})


def fit_nil_classifier(linked: list, in_kb: list[bool], correct: list[bool], nil_dev: Path,
                       n_total: int, n_out: int) -> NilDecision:
    """Fit the nil classifier on every dev mention's parts (a composite's parts share its
    flags); its accuracy is reported cross-validated by document (5 folds, or one per document
    when there are fewer; a mention without one is its own), not on the mentions it was fitted on."""
    from kgnorm.nil.classifier import NilClassifier, cross_validated_accuracy, cv_folds, hit_features

    X, kb, ok, docs = [], [], [], []
    for lm, k, c in zip(linked, in_kb, correct):
        for q, hits in zip(lm.queries, lm.parts):
            X.append(hit_features(q, [(h.name, h.score) for h in hits]))
            kb.append(k)
            ok.append(c)
            docs.append(lm.mention.doc_id or lm.mention.mention_id)
    X = np.vstack(X) if X else np.zeros((0, 8))
    try:
        clf = NilClassifier.fit(X, kb, ok)
    except KgnormError as e:
        raise InputError(str(e), path=nil_dev) from None
    cv = cross_validated_accuracy(X, kb, ok, docs)
    return NilDecision(classifier=clf, params={
        "nil_strategy": "classifier", "nil_dev": str(nil_dev), "nil_dev_n": n_total, "nil_dev_out_of_kb": n_out,
        "nil_dev_accuracy": cv, "nil_dev_accuracy_kind": f"{cv_folds(docs)}-fold cross-validated by document"})
