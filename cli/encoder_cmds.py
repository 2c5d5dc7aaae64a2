"""`kgnorm train bne`, `kgnorm train dilbert`, `kgnorm eval relatedness`: store → dictionary /
hierarchy view → trainer → model directory that `link`, `embed` and `hypernyms` load."""
from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Callable, Optional

import typer

from kgnorm.cli.common import (FormatOpt, KeepCheckpointsOpt, MaxMinutesOpt, QuietOpt, ResumeOpt, SeedOpt, StoreOpt, ThreadsOpt, info,
                               finish_checkpoints, json_safe, ontology_word_vectors, setup,
                               set_threads, training_pairs_from_file)
from kgnorm.errors import InputError, KgnormError


# what `link` reads back from the model directory (same as `train biosyn` writes)
PIPELINE = {"lowercase": True, "normalize": True, "abbreviations": True, "composites": True}
HIERARCHY_STRATEGIES = ("random+parents", "resampling+siblings")


def _check_file(path: Path | None, what: str) -> None:
    """Fail before anything is written when an input file is missing."""
    if path is not None and not path.exists():
        raise InputError(f"{what} not found", path=path)


def _run_with_budget(train_epochs: Callable[[int, bool], Any], epochs: int, resume: bool,
                     max_minutes: float | None, done: Callable[[Any], bool], completed: Callable[[Any], int],
                     quiet: bool) -> Any:
    """Call a resumable trainer for all epochs at once, or one epoch per call while the time
    budget lasts (the trainers checkpoint every epoch; their epoch count is not fingerprinted)."""
    if max_minutes is None:
        return train_epochs(epochs, resume)
    budget, t0 = max_minutes * 60.0, time.perf_counter()
    target, res = 1, resume
    while True:
        result = train_epochs(min(target, epochs), res)
        res = True
        if done(result) or completed(result) >= epochs:
            return result
        if time.perf_counter() - t0 >= budget:
            info(f"time budget of {max_minutes:g} min spent after {completed(result)} epoch(s); "
                 f"--resume with a larger --max-minutes continues", quiet)
            return result
        target = completed(result) + 1


# ---------------------------------------------------------------------- train bne
WORD_SOURCES = ("fasttext", "encoder")


def train_bne_cmd(
    ontology: Annotated[str, typer.Option("--ontology", help="Ontology name in the store.")],
    out: Annotated[Path, typer.Option("--out", help="Model directory to write.")],
    word_vectors: Annotated[Optional[Path], typer.Option(
        "--word-vectors", help="fastText .bin / word2vec .vec file; default: made from the ontology's names "
                               "and definitions (--word-source).")] = None,
    word_source: Annotated[str, typer.Option(
        "--word-source", help="Without --word-vectors: fasttext (trained on the ontology's text) or encoder "
                              "(each word of that text encoded alone by --encoder: static transformer "
                              "vectors, far better synonym retrieval on MEDIC, see BENCHMARKS.md).")] = "fasttext",
    encoder: Annotated[Optional[Path], typer.Option(
        "--encoder", help="Local Hugging Face encoder directory for --word-source encoder (default: the "
                          "offline MiniLM).")] = None,
    dev: Annotated[Optional[Path], typer.Option(
        "--dev", help="Dev mentions for early stopping (Acc@1); default: a seeded held-out slice of "
                      "the ontology's synonyms.")] = None,
    input_format: FormatOpt = None,
    epochs: Annotated[int, typer.Option("--epochs", help="Maximum epochs (early stopping on dev Acc@1).")] = 20,
    patience: Annotated[int, typer.Option("--patience", help="Evaluations without a better dev Acc@1.")] = 3,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Names per batch (in-batch negatives).")] = 64,
    lr: Annotated[float, typer.Option("--lr")] = 1e-3,
    hidden: Annotated[int, typer.Option("--hidden", help="Character and word BiLSTM width.")] = 200,
    dim: Annotated[int, typer.Option("--dim", help="Name embedding dimension.")] = 200,
    max_steps: Annotated[Optional[int], typer.Option("--max-steps-per-epoch", help="Time-box each epoch.")] = None,
    siblings_k: Annotated[int, typer.Option("--siblings-k", help="Sibling-concept names per name and epoch as hard "
                                            "negatives of the synonym objective (IS_A graph; 0: off).")] = 0,
    parents_k: Annotated[int, typer.Option("--parents-k", help="Parent-concept names per name and epoch as "
                                           "positives of the conceptual objective (IS_A graph; 0: off).")] = 0,
    seed: SeedOpt = 0,
    resume: ResumeOpt = True,
    max_minutes: MaxMinutesOpt = 55.0,  # the budget of the BENCHMARKS.md runs (README)
    threads: ThreadsOpt = None,
    keep_checkpoints: KeepCheckpointsOpt = False,
    store: StoreOpt = None, quiet: QuietOpt = False,
) -> None:
    """Train BNE (Phan et al. 2019): char+word BiLSTM name encoder on the ontology's synonyms."""
    setup(quiet)
    _check_file(word_vectors, "word-vectors file")
    _check_file(dev, "dev mentions file")
    _check_file(encoder, "encoder directory")
    if word_source not in WORD_SOURCES:
        raise KgnormError(f"unknown --word-source {word_source!r}; valid: {', '.join(WORD_SOURCES)}")
    if word_vectors is not None and (word_source != "fasttext" or encoder is not None):
        raise KgnormError("--word-vectors is a finished file: it goes without --word-source and --encoder")
    if encoder is not None and word_source != "encoder":
        raise KgnormError("--encoder goes with --word-source encoder")
    if epochs < 1 or batch_size < 2 or min(siblings_k, parents_k) < 0:
        raise KgnormError("--epochs must be >= 1, --batch-size >= 2, --siblings-k and --parents-k >= 0")
    set_threads(threads)
    from kgnorm.linking.dictionary import ontology_dictionary
    from kgnorm.graph.views import hierarchy_from_store, read_definitions, read_ontology
    from kgnorm.methods.model_dir import update_meta
    from kgnorm.stores import open_store
    from kgnorm.text.pipeline import TextPipeline
    from kgnorm.methods.bne.train import BneConfig, train_bne

    hierarchy = None
    with open_store(store, read_only=True) as st:
        if siblings_k or parents_k:
            hierarchy, snap = hierarchy_from_store(st, ontology)
        else:
            snap = read_ontology(st, ontology, with_edges=False)
        definitions = read_definitions(st, ontology) if word_vectors is None else []
    if hierarchy is not None and hierarchy.graph.number_of_edges() == 0:
        raise KgnormError(f"--siblings-k / --parents-k need IS_A edges and ontology {ontology!r} has none; "
                          "leave them at 0")
    pipeline = TextPipeline()
    dictionary = ontology_dictionary(snap, pipeline.normalize_name)
    dev_pairs = training_pairs_from_file(pipeline, dev, input_format) if dev else None
    if dev is not None and not dev_pairs:
        raise InputError("no dev mention has a gold concept", path=dev)
    wv = ontology_word_vectors(word_vectors, out, resume,
                               lambda: [n for c in snap.concepts for n in c.all_names()] + definitions,
                               seed, quiet, f"{ontology}'s names and definitions", word_source, encoder)
    info(f"dictionary: {len(dictionary):,} names of {dictionary.concept_count:,} concepts; "
         f"word vectors: {wv.kind}, {wv.dim} dimensions", quiet)
    cfg = BneConfig(char_hidden=hidden, word_hidden=hidden, out_dim=dim, learning_rate=lr,
                    batch_size=batch_size, max_epochs=epochs, patience=patience, seed=seed,
                    max_steps_per_epoch=max_steps, siblings_k=siblings_k, parents_k=parents_k)
    onto = {"name": ontology, "version": snap.version}

    def run(n_epochs: int, res: bool):
        return train_bne(dictionary, wv, out, dev=dev_pairs, config=replace(cfg, max_epochs=n_epochs),
                         resume=res, progress=not quiet, ontology=onto, hierarchy=hierarchy)

    result = _run_with_budget(run, epochs, resume, max_minutes, lambda r: r.stopped_early,
                              lambda r: r.epochs_completed, quiet)
    update_meta(out, ontology=ontology, ontology_version=snap.version, text_pipeline=PIPELINE)
    finish_checkpoints(out, keep_checkpoints, quiet)
    msg = f"BNE: {result.epochs_completed} epoch(s) in {result.train_seconds:.0f}s on {result.n_train_names:,} names"
    if result.best_dev_acc1 is not None:
        msg += (f"; best dev Acc@1 {result.best_dev_acc1:.4f} at epoch {result.best_epoch:g} "
                f"({result.n_dev} {'held-out synonyms' if result.dev_source == 'held_out' else 'dev queries'})")
    info(msg + f" → {out}", quiet)


# ---------------------------------------------------------------------- train dilbert
def train_dilbert_cmd(
    ontology: Annotated[str, typer.Option("--ontology", help="Ontology name in the store (the dictionary).")],
    out: Annotated[Path, typer.Option("--out", help="Model directory to write.")],
    train: Annotated[Path, typer.Option("--train", help="Training mentions (.concept, PubTator or TSV with gold).")],
    dev: Annotated[Optional[Path], typer.Option("--dev", help="Dev mentions for model selection (Acc@1).")] = None,
    input_format: FormatOpt = None,
    encoder: Annotated[Optional[Path], typer.Option(
        "--encoder", help="Any local Hugging Face encoder directory (default: the offline MiniLM).")] = None,
    strategy: Annotated[str, typer.Option(
        "--strategy", help="Negative sampling: random, random+parents, resampling or resampling+siblings "
                           "(parents and siblings come from the ontology's IS_A graph).")] = "random",
    parents_k: Annotated[int, typer.Option("--parents-k", help="Parent names added as positives (random+parents).")] = 1,
    siblings_k: Annotated[int, typer.Option("--siblings-k", help="Sibling names added as negatives "
                                            "(resampling+siblings).")] = 1,
    negatives: Annotated[int, typer.Option("--negatives", help="Negatives per mention.")] = 5,
    max_positives: Annotated[int, typer.Option("--max-positives", help="Gold names per mention (at most).")] = 30,
    pairing: Annotated[str, typer.Option(
        "--pairing", help="product: every positive with every negative (the paper); cycle: one triplet per "
                          "positive.")] = "product",
    batching: Annotated[str, typer.Option(
        "--batching", help="shuffled: all triplets shuffled (the paper); mention: a mention's triplets stay in "
                           "consecutive batches, several times fewer texts to encode per step.")] = "shuffled",
    mining: Annotated[str, typer.Option(
        "--mining", help="all: every triplet counts (the paper); semi-hard: only triplets whose negative is "
                         "farther than the positive (FaceNet), so hard negatives cannot shrink the space.")] = "all",
    synonym_anchors: Annotated[int, typer.Option(
        "--synonym-anchors", help="Also train on N dictionary names as queries, one each of N seeded concepts "
                                  "with another name (SapBERT-like self-alignment; 0: mentions only).")] = 0,
    merge_train: Annotated[bool, typer.Option(
        "--merge-train-mentions/--no-merge-train-mentions",
        help="Add the training mentions to the dictionary as extra names (as BioSyn does).")] = True,
    eval_initial: Annotated[bool, typer.Option(
        "--eval-initial/--no-eval-initial",
        help="With --dev, the starting encoder competes as epoch 0: if no epoch beats it on dev "
             "Acc@1, it is the model written.")] = True,
    distance: Annotated[str, typer.Option("--distance", help="euclidean (the paper) or cosine.")] = "euclidean",
    margin: Annotated[float, typer.Option("--margin", help="Triplet margin (the paper: 1, in distance units).")] = 1.0,
    epochs: Annotated[int, typer.Option("--epochs")] = 1,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Triplets per batch.")] = 48,
    lr: Annotated[float, typer.Option("--lr")] = 1e-5,
    max_length: Annotated[int, typer.Option("--max-length")] = 25,
    max_steps: Annotated[Optional[int], typer.Option("--max-steps-per-epoch", help="Time-box each epoch.")] = None,
    seed: SeedOpt = 0,
    resume: ResumeOpt = True,
    max_minutes: MaxMinutesOpt = 55.0,  # the budget of the BENCHMARKS.md runs (README)
    threads: ThreadsOpt = None,
    keep_checkpoints: KeepCheckpointsOpt = False,
    store: StoreOpt = None, quiet: QuietOpt = False,
) -> None:
    """Train DILBERT (Miftahutdinov et al. 2021): triplet loss over mention/name distances."""
    setup(quiet)
    from kgnorm.methods.dilbert.train import BATCHINGS, MININGS, PAIRINGS, STRATEGIES

    if strategy not in STRATEGIES:
        raise KgnormError(f"unknown --strategy {strategy!r}; valid strategies: {', '.join(STRATEGIES)}")
    if pairing not in PAIRINGS:
        raise KgnormError(f"unknown --pairing {pairing!r}; valid: {', '.join(PAIRINGS)}")
    if batching not in BATCHINGS:
        raise KgnormError(f"unknown --batching {batching!r}; valid: {', '.join(BATCHINGS)}")
    if mining not in MININGS:
        raise KgnormError(f"unknown --mining {mining!r}; valid: {', '.join(MININGS)}")
    if distance not in ("euclidean", "cosine"):
        raise KgnormError(f"unknown --distance {distance!r}; valid: euclidean, cosine")
    if not margin > 0:
        raise KgnormError(f"--margin must be > 0, got {margin}")
    if synonym_anchors < 0:
        raise KgnormError(f"--synonym-anchors must be >= 0, got {synonym_anchors}")
    if min(epochs, batch_size, negatives, parents_k, siblings_k, max_positives) < 1:
        raise KgnormError("--epochs, --batch-size, --negatives, --max-positives, --parents-k and --siblings-k "
                          "must be >= 1")
    _check_file(train, "training mentions file")
    _check_file(dev, "dev mentions file")
    _check_file(encoder, "encoder directory")
    set_threads(threads)
    from kgnorm.linking.dictionary import ontology_dictionary
    from kgnorm.graph.views import hierarchy_from_store, read_ontology
    from kgnorm.methods.model_dir import update_meta
    from kgnorm.stores import open_store
    from kgnorm.text.pipeline import TextPipeline
    from kgnorm.methods.dilbert.train import DilbertConfig, train_dilbert

    hierarchy = None
    with open_store(store, read_only=True) as st:
        if strategy in HIERARCHY_STRATEGIES:
            hierarchy, snap = hierarchy_from_store(st, ontology)
        else:
            snap = read_ontology(st, ontology, with_edges=False)
    if hierarchy is not None and hierarchy.graph.number_of_edges() == 0:
        raise KgnormError(f"--strategy {strategy} needs IS_A edges and ontology {ontology!r} has none; "
                          "use random or resampling")
    pipeline = TextPipeline()
    dictionary = ontology_dictionary(snap, pipeline.normalize_name)
    train_pairs = training_pairs_from_file(pipeline, train, input_format)
    if not train_pairs:
        raise InputError("no training mention has a gold concept", path=train)
    dev_pairs = training_pairs_from_file(pipeline, dev, input_format) if dev else None
    search_dict = dictionary.with_mentions(train_pairs) if merge_train else dictionary
    info(f"dictionary: {len(dictionary):,} names of {dictionary.concept_count:,} concepts"
         + (f" + {len(search_dict) - len(dictionary):,} training mentions" if merge_train else "")
         + f"; {len(train_pairs):,} training queries"
         + (f" + {synonym_anchors:,} synonym anchors" if synonym_anchors else "") + f"; strategy {strategy}", quiet)
    cfg = DilbertConfig(strategy=strategy, n_negatives=negatives, k_parents=parents_k, k_siblings=siblings_k,
                        max_positives=max_positives, pairing=pairing, batching=batching, margin=margin,
                        mining=mining,
                        distance=distance, learning_rate=lr, batch_size=batch_size, epochs=epochs,
                        max_length=max_length, seed=seed, max_steps_per_epoch=max_steps,
                        eval_initial=eval_initial, synonym_anchors=synonym_anchors)
    onto = {"name": ontology, "version": snap.version}

    def run(n_epochs: int, res: bool):
        return train_dilbert(encoder, search_dict, train_pairs, dev_pairs, out, replace(cfg, epochs=n_epochs),
                             hierarchy=hierarchy, resume=res, progress=not quiet, ontology=onto)

    result = _run_with_budget(run, epochs, resume, max_minutes, lambda r: False, lambda r: r.epochs_completed,
                              quiet)
    update_meta(out, ontology=ontology, ontology_version=snap.version, text_pipeline=PIPELINE)
    finish_checkpoints(out, keep_checkpoints, quiet)
    msg = (f"DILBERT ({strategy}, {distance}): {result.epochs_completed} epoch(s) in {result.train_seconds:.0f}s "
           f"on {result.n_queries:,} queries")
    if result.n_skipped:
        msg += f" ({result.n_skipped} skipped: gold not in the dictionary)"
    if result.best_dev_acc1 is not None:
        msg += f"; best dev Acc@1 {result.best_dev_acc1:.4f} at epoch {result.best_epoch}"
        if result.best_epoch == 0:
            msg += (" (no trained epoch beat the starting encoder on dev: the model written is "
                    "the starting encoder)")
    info(msg + f" → {out}", quiet)


# ---------------------------------------------------------------------- eval relatedness
BASELINES = ("word-vectors",)


def _report_dict(path: Path, rep) -> dict[str, Any]:
    d = json_safe(rep.as_dict())
    d["file"] = str(path)
    d["unencodable_pairs"] = [[p.term1, p.term2] for p in rep.unencodable]
    return d


def eval_relatedness_cmd(
    model: Annotated[Path, typer.Option("--model", help="A trained model directory (any method).")],
    pairs: Annotated[list[Path], typer.Option(
        "--pairs", help="UMNSRS-style CSV (Mean,Stdev,Term1,Term2,CUI1,CUI2); repeat for several files.")],
    baseline: Annotated[Optional[list[str]], typer.Option(
        "--baseline", help="Also score word-vectors: the mean of the model's own word vectors (BNE, DAN).")] = None,
    fmt: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
    store: StoreOpt = None, quiet: QuietOpt = False,
) -> None:
    """Spearman between cosine similarity and human relatedness scores (BNE §4.3)."""
    setup(quiet)
    if fmt not in ("table", "json"):
        raise KgnormError(f"--format must be table or json, got {fmt!r}")
    baselines = list(dict.fromkeys(baseline or []))
    bad = [b for b in baselines if b not in BASELINES]
    if bad:
        raise KgnormError(f"unknown --baseline {bad[0]!r}; valid: {', '.join(BASELINES)}")
    from kgnorm.evaluation.relatedness import load_umnsrs, spearman_relatedness, wordvector_can_encode
    from kgnorm.methods.model_dir import read_model_meta
    from kgnorm.methods.registry import load_encoder

    data = [(p, load_umnsrs(p)) for p in pairs]          # every file is checked before the model loads
    meta = read_model_meta(model)
    enc = load_encoder(model)
    wv = getattr(enc, "word_vectors", None)
    if wv is None:
        wv = getattr(enc, "wordvecs", None)
    # a DAN sees only averaged word vectors: a term with no known word has no meaning to it
    can_encode = wordvector_can_encode(wv, subwords=True) if meta["method"] == "dan" and wv is not None else None
    scorers: list[tuple[str, Callable, Callable | None]] = [(meta["method"], enc.encode, can_encode)]
    if "word-vectors" in baselines:
        if wv is None:
            raise KgnormError(f"--baseline word-vectors: a {meta['method']} model has no word vectors")
        scorers.append(("avg-wordvec", wv.average, wordvector_can_encode(wv, subwords=True)))
    rows: list[dict[str, Any]] = []
    for path, items in data:
        for name, encode, can in scorers:
            rep = spearman_relatedness(lambda terms, f=encode: f(list(terms)), items, can_encode=can, name=name)
            rows.append(_report_dict(path, rep))
            if rep.n_unencodable and not quiet:
                shown = "; ".join(f"{p.term1!r}/{p.term2!r}" for p in rep.unencodable[:5])
                more = f" and {rep.n_unencodable - 5} more" if rep.n_unencodable > 5 else ""
                info(f"{path.name}: {name} cannot encode {rep.n_unencodable} pair(s): {shown}{more}", quiet)
    if fmt == "json":
        typer.echo(json.dumps(rows, indent=2))
        return
    typer.echo(f"{'file':24s} {'model':12s} {'pairs':>6s} {'used':>6s} {'unenc':>6s} {'spearman':>9s} {'all':>7s}")

    def num(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.4f}"

    for r in rows:
        typer.echo(f"{Path(r['file']).name[:24]:24s} {r['name'][:12]:12s} {r['n_pairs']:6d} {r['n_used']:6d} "
                   f"{r['n_unencodable']:6d} {num(r['spearman']):>9s} {num(r['spearman_all']):>7s}")
