"""`kgnorm eval link` as a library call: Acc@1/Acc@5 of what `link` writes (by linking the gold
mentions with a model, or from any system's TSV), optionally nil detection on DILBERT's
constructed dev set; and the report's text lines."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from kgnorm.errors import InputError, KgnormError


def check_eval_options(model: str | Path | None, gold: str | Path | None, predictions: str | Path | None,
                       ontology: str | None, nil_fraction: float | None) -> None:
    """Every option combination is checked before anything is read."""
    if gold is None:
        raise KgnormError("give --gold F (gold mentions)")
    if model is None and predictions is None:
        raise KgnormError("give --model DIR (link and score) or --predictions F (score a link TSV)")
    if predictions is not None and model is None and ontology is None:
        raise KgnormError("--predictions needs --ontology NAME (or --model DIR) for the concepts' alt ids")
    if nil_fraction is not None:
        if model is None:
            raise KgnormError("--nil-fraction needs --model DIR")
        if not 0.0 < nil_fraction < 1.0:
            raise KgnormError(f"--nil-fraction must be between 0 and 1 (exclusive), got {nil_fraction}")


def evaluate_model(model: str | Path | None, gold: str | Path, *, predictions: str | Path | None = None,
                   ontology: str | None = None, allow_unknown_gold: bool = False, train: str | Path | None = None,
                   input_format: str | None = None, batch_size: int = 256, abbreviations: bool | None = None,
                   composites: bool | None = None, nil_fraction: float | None = None, nil_seed: int = 0,
                   store: str | None = None, consistency: bool | None = None) -> dict[str, Any]:
    """The report: "full" (and "refined" with `train`), unknown gold counts, "nil" with
    `nil_fraction`, "gold_held_out" (with a model: false when it was refit on the gold file's
    mentions) and "notes": lines the user must see (gold ids scored as misses, a gold file the
    model was trained on)."""
    from kgnorm.evaluation.link_predictions import evaluate_link
    from kgnorm.jobs.models import open_linker
    from kgnorm.linking.consistency import consistency_on
    from kgnorm.linking.linker import pipeline_from_meta

    check_eval_options(model, gold, predictions, ontology, nil_fraction)
    model = Path(model) if model is not None else None
    linker = meta = pipeline = None
    if model is not None:
        linker, meta = open_linker(model)
        pipeline = pipeline_from_meta(meta, abbreviations=abbreviations, composites=composites)
    report = evaluate_link(model, Path(gold), Path(predictions) if predictions is not None else None, ontology,
                           Path(train) if train is not None else None, input_format, batch_size,
                           allow_unknown_gold, store, linker=linker, meta=meta, pipeline=pipeline,
                           consistency=consistency_on(consistency, meta))
    notes = []
    if report["unknown_gold_ids"]:
        where = f"ontology {ontology!r}" if ontology is not None else f"the dictionary of {model}"
        notes.append(f"{report['unknown_gold_ids']} gold id(s) of {gold} are not concepts of {where}; their "
                     f"{report['unknown_gold_mentions']} mention(s) are scored as misses")
    if nil_fraction is not None:
        report["nil"] = evaluate_nil_detection(model, Path(gold), input_format, nil_fraction, nil_seed,
                                               abbreviations, composites)
    report["notes"] = notes
    if meta is not None:
        from kgnorm.methods.refit import mark_held_out

        mark_held_out(report, meta, gold)
    return report


def evaluate_nil_detection(model: Path, input: Path, input_format: str | None, fraction: float, seed: int,
                           abbreviations: bool | None = None, composites: bool | None = None) -> dict[str, Any]:
    """`eval link --nil-fraction`: DILBERT's constructed out-of-KB set from the input's gold mentions and
    every nil strategy on it (kgnorm.nil.evaluation). The model is opened afresh: its dictionary is
    replaced by the reduced one."""
    from kgnorm.nil.evaluation import constructed_nil_report
    from kgnorm.jobs.models import open_linker
    from kgnorm.linking.linker import pipeline_from_meta
    from kgnorm.mentions.readers import read_mentions_with_abbreviations

    linker, meta = open_linker(model)
    inner = getattr(linker, "model", None)
    if getattr(inner, "dictionary", None) is None or not hasattr(inner, "set_dictionary"):
        raise KgnormError(f"{model}: --nil-fraction needs a model that links through a name dictionary "
                          f"(a {meta['method']} model has none)")
    pipeline = pipeline_from_meta(meta, abbreviations=abbreviations, composites=composites)
    try:
        return constructed_nil_report(inner, pipeline, read_mentions_with_abbreviations(input, input_format),
                                      fraction, seed, linker=linker)
    except InputError:
        raise
    except KgnormError as e:  # about the input's gold mentions (none, or too few concepts)
        raise InputError(str(e), path=input) from None


def report_lines(report: dict[str, Any]) -> list[str]:
    """The table `kgnorm eval link` prints."""
    from kgnorm.nil.evaluation import strategy_summaries

    lines = []
    for split, r in report.items():
        if split in ("full", "in_store", "refined"):
            lines.append(f"{split:8s} n={r['n']:5d}  Acc@1 {r['acc1']:.4f}  Acc@5 {r['acc5']:.4f}")
    if report.get("composites"):
        lines.append(f"composites (every part must be right): {report['composites']}, left unsplit by the "
                     f"linker (misses): {report['composites_unsplit']}")
    if report.get("unknown_gold_ids"):
        lines.append(f"gold ids the model or ontology lacks: {report['unknown_gold_ids']} (their "
                     f"{report['unknown_gold_mentions']} mention(s) scored as misses)")
    if report.get("retired_gold_ids"):
        lines.append(f"retired gold ids scored through their successor: {report['retired_gold_ids']} (in "
                     f"{report['retired_gold_mentions']} mention(s))")
    if "nil" in report:
        nil = report["nil"]
        lines.append(f"nil: {nil['removed']} concept(s) removed, {nil['queries']} queries from {nil['documents']} "
                     f"document(s), {nil['out_of_kb']} out-of-KB; fitted on half of the documents, scored on the "
                     f"other half (mean of {len(nil['splits'])} splits)")
        for strategy, m, error, _ in strategy_summaries(nil["strategies"]):
            if m is None:
                lines.append(f"  {strategy:12s} n/a ({error})")
                continue
            lines.append(f"  {strategy:12s} accuracy {m['accuracy']:.4f}  nil P {m['nil_precision']:.4f}  "
                         f"R {m['nil_recall']:.4f}  F1 {m['nil_f1']:.4f}  in-KB accuracy {m['in_kb_accuracy']:.4f}")
    return lines
