"""`kgnorm annotate` and `kgnorm eval annotate`: parse options, call the library, print."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from kgnorm.cli.common import (EngineOpt, LockTimeoutOpt, QuietOpt, RayAddressOpt, StoreOpt, WorkersOpt, print_evaluation,
                               print_report, setup)


def annotate_cmd(
    ner: Annotated[str, typer.Option("--ner", help="dictionary:ONTOLOGY (the ontology's names in the store; "
                                     "dictionary:ONTOLOGY,root=UID,type=TYPE keeps the concepts under UID and types the "
                                     "mentions TYPE: HPO defaults to Phenotype under HP:0000118) or a "
                                     "trained detector's directory (kgnorm train ner).")],
    model: Annotated[list[str], typer.Option("--model", help="A linking model directory (any model `link` takes); or "
                                             "TYPE=DIR, repeated, to link each mention type with its own model "
                                             "(e.g. --model Disease=DIR --model Chemical=DIR; a plain DIR beside "
                                             "them links the other types).")],
    input: Annotated[Path, typer.Option("--input", help="A file, or a directory of .txt files (--input-format text).")],
    input_format: Annotated[str, typer.Option("--input-format", help="text, jsonl, pubtator or bioc (read for the "
                                              "text only).")] = "text",
    output: Annotated[Optional[Path], typer.Option("--output", help="Annotated documents (default: stdout).")] = None,
    output_format: Annotated[str, typer.Option("--output-format", help="pubtator, bioc or jsonl.")] = "pubtator",
    write: Annotated[bool, typer.Option("--write/--no-write", help="Store documents, mentions, LINKED_TO edges "
                                        "and a Run node.")] = True,
    top_k: Annotated[int, typer.Option("--top-k", help="Ranks stored as LINKED_TO edges.")] = 1,
    consistency: Annotated[Optional[bool], typer.Option(
        "--consistency/--no-consistency", help="Document-level consistency: tag every occurrence of a found string "
                                               "and of its defined short form; one concept per string. Default: on "
                                               "with the dictionary tagger, off with a trained detector (what won "
                                               "on dev, benchmarks/LOG.md).", show_default=False)] = None,
    nil_threshold: Annotated[Optional[str], typer.Option(
        "--nil-threshold", help="As in `link`: a top-1 score below it is nil, or 'auto' with --nil-dev.")] = None,
    nil_dev: Annotated[Optional[Path], typer.Option("--nil-dev", help="As in `link`.")] = None,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Documents per batch.")] = 32,
    ner_precision: Annotated[Optional[str], typer.Option(
        "--ner-precision", help="A trained detector's network: auto (bf16 where the CPU declares native bf16, "
                                "else onnx where onnxruntime is installed, else fp32), fp32 (torch), bf16, onnx "
                                "(float32 on ONNX Runtime: fp32's tags at about 0.7x its CPU time), or int8 "
                                "(ONNX Runtime, faster still; BC5CDR dev document F1 -0.007). onnx and int8 need "
                                "onnxruntime and onnx; exported once, cached. Default: $KGNORM_NER_PRECISION, else auto.",
        show_default=False)] = None,
    threads: Annotated[Optional[int], typer.Option(
        "--threads", help="Intra-op threads of the detector and of the linker in-process (default: half the "
                          "cores each when they overlap, else torch's).", show_default=False)] = None,
    overlap: Annotated[Optional[bool], typer.Option(
        "--overlap/--no-overlap", help="Detect the next batch on a second thread while this one is linked (same "
                                       "output). Default: on where the cores this process may use are at least "
                                       "twice --threads (2 cores without --threads).", show_default=False)] = None,
    min_confidence: Annotated[str, typer.Option(
        "--min-confidence", help="Drop found mentions whose confidence (detector and linker together) is under "
                                 "this probability. auto: the threshold `kgnorm calibrate` chose on dev for this "
                                 "detector and linking model (every mention kept when it fitted none); off: keep "
                                 "every mention.")] = "auto",
    dictionary_evidence: Annotated[Optional[bool], typer.Option(
        "--dictionary-evidence/--no-dictionary-evidence",
        help="With the dictionary tagger: a span whose matched name names one concept is linked to it (several: "
             "the linker chooses among them). Default: on with the dictionary tagger (what won on dev, "
             "benchmarks/LOG.md).", show_default=False)] = None,
    store: StoreOpt = None, lock_timeout: LockTimeoutOpt = 30.0, quiet: QuietOpt = False,
    engine: EngineOpt = "local", workers: WorkersOpt = 2, ray_address: RayAddressOpt = None,
) -> None:
    """Find mentions in raw text, link them, write annotated documents and the graph."""
    setup(quiet)
    from kgnorm.jobs.annotate import annotate_documents
    from kgnorm.jobs.ray_engine import RayOptions
    from kgnorm.methods.router.linker import routes_from_options

    report = annotate_documents(ner, routes_from_options(model), input, input_format=input_format,
                                output=output if output else sys.stdout, output_format=output_format, store=store,
                                write=write, top_k=top_k, consistency=consistency, nil_threshold=nil_threshold,
                                nil_dev=nil_dev, batch_docs=batch_size, lock_timeout=lock_timeout,
                                progress=not quiet, engine=engine, ray=RayOptions(workers=workers, address=ray_address),
                                ner_precision=ner_precision, threads=threads, overlap=overlap,
                                min_confidence=min_confidence, dictionary_evidence=dictionary_evidence)
    print_report(report, quiet)


def calibrate_cmd(
    ner: Annotated[Path, typer.Option("--ner", help="A trained detector's directory (kgnorm train ner): the "
                                      "confidence is stored in it.")],
    model: Annotated[list[str], typer.Option("--model", help="The linking model annotate will use with it (or its "
                                             "TYPE=DIR routes, as in annotate: one fit per type).")],
    dev: Annotated[Path, typer.Option("--dev", help="Annotated dev documents (PubTator, BioC or JSONL) with gold "
                                      "concepts; not the documents you will report figures on.")],
    dev_format: Annotated[Optional[str], typer.Option("--dev-format", help="pubtator, bioc or jsonl (default: "
                                                      "from the file name).")] = None,
    types: Annotated[Optional[str], typer.Option("--types", help="Gold types that count, comma-separated "
                                                 "(default: all).")] = None,
    threads: Annotated[Optional[int], typer.Option("--threads", help="As in `annotate`.", show_default=False)] = None,
    store: StoreOpt = None, quiet: QuietOpt = False,
) -> None:
    """Fit annotate's mention confidence for a detector and a linking model on dev documents: a
    probability that a found mention's concept is right (from the detector's span score and the
    linker's score and margin), and the threshold with the best document-level F1. Stored in the
    detector's directory; `annotate` then drops mentions under it with no flag."""
    setup(quiet)
    from kgnorm.jobs.annotate import calibrate_annotate
    from kgnorm.methods.router.linker import routes_from_options

    report = calibrate_annotate(ner, routes_from_options(model), dev, dev_format=dev_format,
                                types=[t.strip() for t in types.split(",") if t.strip()] if types else None,
                                store=store, threads=threads, progress=not quiet)
    print_report(report, quiet)


def eval_annotate_cmd(
    gold: Annotated[Path, typer.Option("--gold", help="Gold annotated documents (PubTator, BioC or JSONL).")],
    predictions: Annotated[Path, typer.Option("--predictions", help="What `kgnorm annotate` wrote (or any system "
                                              "in one of its formats).")],
    model: Annotated[Optional[Path], typer.Option("--model", help="The linking model: its ontology's alt ids "
                                                  "count.")] = None,
    ontology: Annotated[Optional[str], typer.Option("--ontology", help="Or the ontology whose alt ids count (several: "
                                                    "comma-separated).")] = None,
    types: Annotated[Optional[str], typer.Option("--types", help="Gold types scored, comma-separated (default: "
                                                 "all); predictions of other types are dropped too.")] = None,
    gold_format: Annotated[Optional[str], typer.Option("--gold-format", help="pubtator, bioc or jsonl (default: "
                                                       "from the extension, else pubtator).")] = None,
    predictions_format: Annotated[Optional[str], typer.Option("--predictions-format")] = None,
    fmt: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
    store: StoreOpt = None, quiet: QuietOpt = False,
) -> None:
    """NER strict-span, end-to-end mention and document-level concept precision/recall/F1, overall and,
    for a run of several types, per type."""
    setup(quiet)
    from kgnorm.evaluation.annotate_eval import report_lines
    from kgnorm.jobs.eval_annotate import evaluate_annotations

    report = evaluate_annotations(gold, predictions, model=model, ontology=ontology,
                                  types=[t.strip() for t in types.split(",") if t.strip()] if types else None,
                                  gold_format=gold_format, predictions_format=predictions_format, store=store)
    print_evaluation(report, fmt, report_lines)
