"""`kgnorm link`, `kgnorm embed`, `kgnorm eval link` (`train biosyn` is in train_cmds.py)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from kgnorm.cli.common import (EngineOpt, FormatOpt, LockTimeoutOpt, QuietOpt, RayAddressOpt, StoreOpt, WorkersOpt,
                               info, print_evaluation, print_report, setup)
from kgnorm.errors import KgnormError

AbbrOpt = Annotated[Optional[bool], typer.Option(
    "--abbreviations/--no-abbreviations", help="Expand abbreviations defined in the document.")]
CompOpt = Annotated[Optional[bool], typer.Option(
    "--composites/--no-composites", help="Split composite mentions into parts.")]
ConsOpt = Annotated[Optional[bool], typer.Option(
    "--consistency/--no-consistency", help="One concept per document for mentions with the same normalized text "
                                           "or resolved short form (a vote weighted by score; a confident link "
                                           "keeps its own). Default: the model's setting, else off.")]

# measured cost of --fast (benchmarks/LOG.md, "query engine on dev: onnx-fp32 against onnx-int8", issue 51)
FAST_HELP = ("int8 query encoder on any CPU (KGNORM_QUERY_PRECISION=int8; onnx engine). The default already takes it "
             "where the CPU declares VNNI/AMX/asimddp, fp32 elsewhere. Measured against fp32 queries: dev Acc@1 "
             "NCBI-disease / BC5CDR within 0.0013 for four MiniLM linkers (BioSyn untrained +0.0013 / -0.0007, trained "
             "-0.0013 / -0.0002 and 0.0000 / +0.0002; DILBERT untrained -0.0013 / -0.0005).")


def link_cmd(
    model: Annotated[Path, typer.Option("--model", help="A trained model directory.")],
    input: Annotated[Optional[Path], typer.Option("--input", help="Mentions: .concept, PubTator or TSV (id, text …).")] = None,
    input_format: FormatOpt = None,
    top_k: Annotated[int, typer.Option("--top-k")] = 5,
    output: Annotated[Optional[Path], typer.Option("--output", help="TSV to write (default stdout).")] = None,
    write: Annotated[bool, typer.Option("--write/--no-write", help="Store LINKED_TO edges and a Run node.")] = True,
    write_top_k: Annotated[int, typer.Option("--write-top-k", help="Ranks stored as edges.")] = 1,
    nil_threshold: Annotated[Optional[str], typer.Option(
        "--nil-threshold", help="Top-1 score below which a mention is out-of-KB (nil), or 'auto': choose it "
                                "on --nil-dev with DILBERT's strategies.")] = None,
    nil_dev: Annotated[Optional[Path], typer.Option(
        "--nil-dev", help="Dev mentions with gold for --nil-threshold auto; a mention whose gold is -1, or a "
                          "concept the model's dictionary lacks, is out-of-KB.")] = None,
    nil_strategy: Annotated[str, typer.Option(
        "--nil-strategy", help="With auto: min_fp, max_tp, weighted, auto (the best of DILBERT's three on dev), "
                                "dev_accuracy (the most accurate cut on dev), or classifier (gradient-boosted trees "
                                "on the top-5 distances and the lexical overlap with the top-1 name, fitted on "
                                "dev; kgnorm.nil.classifier).")] = "auto",
    batch_size: Annotated[int, typer.Option("--batch-size", help="Mentions linked per batch.")] = 1024,
    write_batch: Annotated[int, typer.Option(
        "--write-batch", help="Mentions sent to the store at a time: memory follows this, not the input; the "
                              "run is still all or nothing (staged, then published).")] = 50_000,
    abbreviations: AbbrOpt = None, composites: CompOpt = None, consistency: ConsOpt = None,
    relink_orphans: Annotated[bool, typer.Option(
        "--relink-orphans", help="Instead of --input: link again the mentions a re-ingest of the model's ontology "
                                 "left orphans (their concept went without a single successor).")] = False,
    store: StoreOpt = None, lock_timeout: LockTimeoutOpt = 30.0, quiet: QuietOpt = False,
    engine: EngineOpt = "local", workers: WorkersOpt = 2, ray_address: RayAddressOpt = None,
    fast: Annotated[bool, typer.Option("--fast", help=FAST_HELP)] = False,
) -> None:
    """Link mentions to concepts; TSV out, LINKED_TO edges into the store."""
    setup(quiet)
    if fast:
        from kgnorm.linking.cpu_features import ask_query_precision

        if ray_address:  # a running cluster's workers do not see this process's environment
            raise KgnormError("--fast with --ray-address: set KGNORM_QUERY_PRECISION=int8 in the workers' "
                              "environment instead")
        ask_query_precision("int8")
    if relink_orphans == (input is not None):
        raise KgnormError("give --input, or --relink-orphans (not both)")
    if relink_orphans:
        from kgnorm.jobs.relink import relink_orphans as relink

        report = relink(model, store=store, top_k=top_k, write_top_k=write_top_k,
                        output=output if output else sys.stdout, batch_size=batch_size, lock_timeout=lock_timeout)
        print_report(report, quiet)
        return
    from kgnorm.jobs.link import link_mentions
    from kgnorm.jobs.ray_engine import RayOptions

    report = link_mentions(model, input, store=store, write=write, top_k=top_k, write_top_k=write_top_k,
                           output=output if output else sys.stdout, input_format=input_format,
                           nil_threshold=nil_threshold, nil_dev=nil_dev, nil_strategy=nil_strategy,
                           batch_size=batch_size, write_batch=write_batch, abbreviations=abbreviations,
                           composites=composites, lock_timeout=lock_timeout, progress=not quiet,
                           consistency=consistency, engine=engine,
                           ray=RayOptions(workers=workers, address=ray_address))
    print_report(report, quiet)


def embed_cmd(
    model: Annotated[Path, typer.Option("--model", help="A trained model directory.")],
    output: Annotated[Path, typer.Option("--output", help="Writes OUTPUT.npy and OUTPUT.tsv.")],
    input: Annotated[Optional[Path], typer.Option("--input", help="One name per line.")] = None,
    ontology: Annotated[Optional[str], typer.Option("--ontology", help="Embed every concept name of an ontology.")] = None,
    store: StoreOpt = None, quiet: QuietOpt = False,
    engine: EngineOpt = "local", workers: WorkersOpt = 2, ray_address: RayAddressOpt = None,
) -> None:
    """Vectors of names (one per line) or of every concept name of an ontology."""
    setup(quiet)
    from kgnorm.jobs.embed import embed_names
    from kgnorm.jobs.ray_engine import RayOptions

    res = embed_names(model, output, input=input, ontology=ontology, store=store, engine=engine,
                      ray=RayOptions(workers=workers, address=ray_address))
    info(f"{res.n:,} vectors of dimension {res.dim} → {res.base}.npy / {res.base}.tsv", quiet)


def eval_link_cmd(
    model: Annotated[Optional[Path], typer.Option("--model", help="A trained model directory: link --gold with it "
                                                  "and score the rows `link` would write.")] = None,
    input: Annotated[Optional[Path], typer.Option("--gold", "--input", help="Gold mentions (.concept, PubTator or "
                                                  "TSV with gold).")] = None,
    predictions: Annotated[Optional[Path], typer.Option(
        "--predictions", help="Score this TSV in `kgnorm link`'s layout (any system's output) instead of linking.")] = None,
    ontology: Annotated[Optional[str], typer.Option(
        "--ontology", help="With --predictions and no --model: the ontology in the store whose alt ids match and "
                           "whose concepts the gold ids must be.")] = None,
    allow_unknown_gold: Annotated[bool, typer.Option(
        "--allow-unknown-gold", help="Score mentions whose gold id is not a concept of the ontology as misses "
                                     "(counted in the report) instead of refusing the gold file.")] = False,
    train: Annotated[Optional[Path], typer.Option("--train", help="Training mentions: also report the refined "
                                                  "split (mentions whose text never occurs in train).")] = None,
    input_format: FormatOpt = None,
    batch_size: Annotated[int, typer.Option("--batch-size")] = 256,
    abbreviations: AbbrOpt = None, composites: CompOpt = None, consistency: ConsOpt = None,
    fmt: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
    nil_fraction: Annotated[Optional[float], typer.Option(
        "--nil-fraction", help="Also evaluate nil detection on DILBERT's constructed dev set: this fraction of "
                               "the input's gold concepts (e.g. 0.2) is removed from the model's dictionary; every "
                               "--nil-strategy is fitted on half of the documents and scored on the other half "
                               "(3 seeded splits).")] = None,
    nil_seed: Annotated[int, typer.Option("--nil-seed", help="Seed of the removed concepts.")] = 0,
    store: StoreOpt = None, quiet: QuietOpt = False,
) -> None:
    """Acc@1/Acc@5 of what `link` writes: one concept per rank, a concept right only through its own uid or
    alt ids (composites need every part; gold -1 skipped; a nil row is no link)."""
    setup(quiet)
    from kgnorm.jobs.evaluate import check_eval_options, evaluate_model, report_lines

    check_eval_options(model, input, predictions, ontology, nil_fraction)
    if nil_fraction is not None:
        info(f"nil: removing {nil_fraction:g} of the gold concepts from the dictionary and linking again …", quiet)
    report = evaluate_model(model, input, predictions=predictions, ontology=ontology,
                            allow_unknown_gold=allow_unknown_gold, train=train, input_format=input_format,
                            batch_size=batch_size, abbreviations=abbreviations, composites=composites,
                            nil_fraction=nil_fraction, nil_seed=nil_seed, store=store, consistency=consistency)
    print_evaluation(report, fmt, report_lines)
