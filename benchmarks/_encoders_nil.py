"""Nil detection on DILBERT's constructed dev set, for benchmarks/encoders.py: every strategy
fitted on half of the dev documents and scored on the other half
(:func:`kgnorm.nil.evaluation.evaluate_nil_strategies`), formatted as Markdown."""
from __future__ import annotations

from collections.abc import Callable, Sequence

from _report import f4 as _f


def nil_rows(label: str, report: dict) -> list[str]:
    from kgnorm.nil.evaluation import strategy_summaries

    rows = []
    for strategy, m, error, accs in strategy_summaries(report):
        if m is None:
            rows.append(f"| {label} | {strategy} | n/a ({error}) | | | | | |")
            continue
        rows.append(f"| {label} | {strategy} | **{m['accuracy']:.4f}** ({', '.join(map(_f, accs))}) | "
                    f"{_f(m['nil_precision'])} | {_f(m['nil_recall'])} | {_f(m['nil_f1'])} | "
                    f"{_f(m['in_kb_accuracy'])} | {m['predicted_nil']} / {m['n_nil']} |")
    rows.append(f"| {label} | (ceiling: every nil found, every in-KB top-1 kept) | "
                f"{_f(report['ceiling']['accuracy'])} | | | | | |")
    return rows


def nil_section(models: Sequence[tuple[str, Callable[[], object]]], nil_set, docs: Sequence[str],
                log: Callable[[str], None]) -> list[str]:
    """Link the constructed dev set with every model (a factory returning a linker already
    set to ``nil_set.dictionary``) and score every strategy."""
    from kgnorm.nil.evaluation import SPLIT_SEEDS, concept_hits, evaluate_nil_strategies

    rows: list[str] = []
    for label, make in models:
        log(f"nil: linking the constructed dev set with {label} …")
        hits = concept_hits(make(), nil_set.queries)
        rows += nil_rows(label, evaluate_nil_strategies(nil_set, hits, docs))
    return [
        "### 3. Nil detection (DILBERT's constructed dev set)",
        "",
        f"{len(nil_set.removed)} of the gold concepts of the BC5CDR-disease dev queries (20%, seeded) removed "
        f"from the dictionary ({len(nil_set.dictionary):,} names left); {len(nil_set.queries):,} dev queries "
        f"from {len(set(docs))} documents, {nil_set.n_nil} of them now out-of-KB. Each strategy is fitted on "
        f"half of the documents and scored on the other half, for {len(SPLIT_SEEDS)} seeded document splits "
        "(kgnorm.nil.evaluation, as `kgnorm eval link --nil-fraction 0.2`); the figures are means over the "
        "splits (accuracy per split in brackets; nil counts summed). "
        "Thresholds cut the negated top-1 score (DILBERT, MiniLM: the Euclidean distance; BioSyn: "
        "−(λ·sparse + dense)); `dev_accuracy` = the most accurate cut on the fitting half; "
        "`classifier` = `kgnorm link --nil-strategy classifier` (gradient-boosted trees on the top-5 "
        "concept scores and the lexical overlap of the query with the top-1 name, "
        "kgnorm.nil.classifier). Accuracy counts a nil query declared nil and an in-KB query "
        "linked correctly; precision/recall are for the nil class.",
        "",
        "| model | strategy | accuracy (per split) | nil precision | nil recall | nil F1 | in-KB accuracy "
        "| predicted nil / nil |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
        "",
    ]
