"""`kgnorm train dan`, `kgnorm hypernyms`, `kgnorm eval hierarchy`: store → hierarchy view →
level split → trainer / ranker → TSV and PREDICTED_IS_A edges."""
from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from kgnorm.cli.common import (KeepCheckpointsOpt, MaxMinutesOpt, QuietOpt, ResumeOpt, SeedOpt, StoreOpt, ThreadsOpt, info,
                               finish_checkpoints, ontology_word_vectors, setup, warn)
from kgnorm.errors import KgnormError

RootOpt = Annotated[str, typer.Option("--root", help="Root concept uid of the subgraph, e.g. HP:0000118.")]
LevelOpt = Annotated[int, typer.Option("--level", help="Hierarchy level K (1 = just below the root … 4).")]
N_LEVELS = 4


def _check_level(level: int) -> None:
    if not 1 <= level <= N_LEVELS:
        raise KgnormError(f"--level must be between 1 and {N_LEVELS}, got {level}")


def _split(store_uri: str | None, ontology: str, root: str, seed: int):
    from kgnorm.graph.views import hierarchy_from_store
    from kgnorm.graph.levels import build_levels
    from kgnorm.stores import open_store

    with open_store(store_uri, read_only=True) as st:
        hierarchy, snap = hierarchy_from_store(st, ontology)
    if root not in hierarchy:
        raise KgnormError(f"root {root} is not a concept of ontology {ontology!r}")
    return build_levels(hierarchy, root, N_LEVELS, seed=seed), snap


DAN_PRESETS = ("paper", "cpu-fast")
DAN_INPUTS = ("word-vectors", "encoder")


def _encoder_inputs(encoder: Path | None, out: Path, resume: bool):
    """Frozen-encoder inputs; a resumed run reuses the vectors kept in --out."""
    from kgnorm.encoders.encoder_inputs import FORMAT, EncoderInputs
    from kgnorm.encoders.dense import DenseEncoder

    meta = out / "wordvectors" / "meta.json"
    if resume and encoder is None and meta.exists() and json.loads(meta.read_text()).get("format") == FORMAT:
        return EncoderInputs.load(meta.parent)
    return EncoderInputs(DenseEncoder(encoder, pooling="mean"))


def dan_config(preset: str, **options):
    """The preset's DanConfig with every option that was given (not None) on top."""
    from kgnorm.methods.dan.train import DanConfig

    if preset not in DAN_PRESETS:
        raise KgnormError(f"unknown --preset {preset!r}; valid presets: {', '.join(DAN_PRESETS)}")
    given = {k: v for k, v in options.items() if v is not None}
    return DanConfig.cpu_fast(**given) if preset == "cpu-fast" else DanConfig(**given)


def train_dan_cmd(
    ontology: Annotated[str, typer.Option("--ontology", help="Ontology name in the store.")],
    root: RootOpt,
    level: LevelOpt,
    out: Annotated[Path, typer.Option("--out", help="Model directory to write.")],
    word_vectors: Annotated[Optional[Path], typer.Option(
        "--word-vectors", help="fastText .bin / word2vec .vec file; default: train fastText on the ontology's names and definitions.")] = None,
    input_kind: Annotated[Optional[str], typer.Option(
        "--input", help="The DAN's input per name. encoder (default with --preset cpu-fast): the mean-pooled vector "
                        "of a frozen encoder (--encoder), computed once for the split's names and kept with the "
                        "model (stronger on HPO, see BENCHMARKS.md); word-vectors (default with --preset paper or "
                        "--word-vectors): the mean of its word vectors (the paper).")] = None,
    encoder: Annotated[Optional[Path], typer.Option(
        "--encoder", help="Local Hugging Face encoder directory for --input encoder (default: the offline MiniLM).")] = None,
    preset: Annotated[str, typer.Option(
        "--preset", help="paper: DAN's settings (hidden 2048, lr 1e-3, loss weights 1/1/1); cpu-fast: hidden 1024, "
                         "lr 2e-3, context/grounding weights 0.3, 30% class-name positives, 14-min budget "
                         "(the default: what reached the HPO figures on a 2-core CPU). Options given explicitly override it.")] = "cpu-fast",
    hidden: Annotated[Optional[int], typer.Option(help="Width of the hidden layer.")] = None,
    epochs: Annotated[Optional[int], typer.Option("--epochs", help="Maximum epochs (early stopping on validation mAP).")] = None,
    patience: Annotated[Optional[int], typer.Option(help="Early-stopping patience in epochs.")] = None,
    batch_size: Annotated[Optional[int], typer.Option("--batch-size")] = None,
    lr: Annotated[Optional[float], typer.Option("--lr")] = None,
    max_minutes: MaxMinutesOpt = None,
    threads: ThreadsOpt = None,
    seed: SeedOpt = 0,
    resume: ResumeOpt = True,
    keep_checkpoints: KeepCheckpointsOpt = False,
    store: StoreOpt = None, quiet: QuietOpt = False,
) -> None:
    """Train a DAN (Fivez et al. 2021) on level K of the hierarchy under --root."""
    setup(quiet)
    _check_level(level)
    if input_kind is None:  # the preset's input; a word-vector file implies word vectors
        input_kind = "word-vectors" if preset == "paper" or word_vectors is not None else "encoder"
    if input_kind not in DAN_INPUTS:
        raise KgnormError(f"unknown --input {input_kind!r}; valid inputs: {', '.join(DAN_INPUTS)}")
    if input_kind == "encoder" and word_vectors is not None:
        raise KgnormError("--word-vectors goes with --input word-vectors, not --input encoder")
    if input_kind == "word-vectors" and encoder is not None:
        raise KgnormError("--encoder goes with --input encoder")
    from kgnorm.methods.model_dir import update_meta
    from kgnorm.methods.dan.train import train_dan

    config = dan_config(preset, seed=seed, hidden=hidden, max_epochs=epochs, patience=patience,
                        batch_size=batch_size, lr=lr, threads=threads,
                        max_seconds=None if max_minutes is None else max_minutes * 60)
    split, snap = _split(store, ontology, root, seed)
    info(split.summary_table(), quiet)
    if input_kind == "encoder":
        wv = _encoder_inputs(encoder, out, resume)
    else:
        definitions: list[str] = []
        if word_vectors is None:
            from kgnorm.graph.views import read_definitions
            from kgnorm.stores import open_store

            with open_store(store, read_only=True) as st:
                definitions = read_definitions(st, ontology)
        wv = ontology_word_vectors(word_vectors, out, resume,
                                   lambda: [n for c in snap.concepts for n in c.all_names()] + definitions,
                                   seed, quiet, f"{ontology}'s names and definitions")
    result = train_dan(split, wv, level, out, config, progress=not quiet, resume=resume)
    update_meta(out, ontology=ontology, ontology_version=snap.version, root=root, level=level,
                split_seed=seed, n_levels=N_LEVELS)
    finish_checkpoints(out, keep_checkpoints, quiet)
    info(f"DAN level {level}: best validation mAP {result.best_val_map:.3f} at epoch {result.best_epoch} "
         f"({result.epochs_run} epochs, {result.train_seconds:.0f}s) → {out}", quiet)
    if result.test_metrics:
        from kgnorm.evaluation.hierarchy import format_results
        info(format_results({"dan": result.test_metrics}), quiet)


def hypernyms_cmd(
    model: Annotated[Path, typer.Option("--model", help="A trained model directory (any method).")],
    root: RootOpt,
    level: LevelOpt,
    names: Annotated[Optional[Path], typer.Option("--names", help="One name per line; default: the held-out test names.")] = None,
    ontology: Annotated[Optional[str], typer.Option("--ontology", help="Default: the model's ontology.")] = None,
    top_k: Annotated[int, typer.Option("--top-k")] = 5,
    output: Annotated[Optional[Path], typer.Option("--output", help="TSV to write (default stdout).")] = None,
    write: Annotated[bool, typer.Option("--write/--no-write", help="Store PREDICTED_IS_A edges and a Run node.")] = True,
    write_top_k: Annotated[int, typer.Option("--write-top-k", help="How many ranks to store as edges.")] = 1,
    seed: Annotated[Optional[int], typer.Option("--seed", help="Split seed (default: the model's).")] = None,
    store: StoreOpt = None, quiet: QuietOpt = False,
) -> None:
    """Rank the level-K concepts under --root as hypernyms of each name."""
    setup(quiet)
    _check_level(level)
    if top_k < 1:
        raise KgnormError(f"--top-k must be >= 1, got {top_k}")
    from kgnorm.linking.hypernyms import rank_hypernyms
    from kgnorm.mentions.readers import read_names
    from kgnorm.methods.model_dir import check_ontology_version, read_model_meta
    from kgnorm.methods.registry import load_encoder
    from kgnorm.stores.run_ids import file_digest, run_uid, text_uid
    from kgnorm.stores import MentionRow, PredictionEdge, RunRecord, RunWrite, open_store

    meta = read_model_meta(model)
    onto = ontology or meta.get("ontology")
    if not onto:
        raise KgnormError("the model names no ontology: pass --ontology")
    free_names = read_names(names) if names is not None else None
    split, snap = _split(store, onto, root, meta.get("split_seed", 0) if seed is None else seed)
    check_ontology_version(meta, onto, snap.version, warn)
    encoder = load_encoder(model)
    class_names = split.class_names[level]
    candidates = list(split.classes[level])
    if free_names is not None:
        queries = [(n, None) for n in free_names]
    else:
        queries = [(it.name, it.concept_uid) for it in split.test]
    hits = rank_hypernyms(encoder.encode, [q for q, _ in queries], candidates, class_names, top_k=top_k)
    fh = open(output, "w", encoding="utf-8", newline="") if output else sys.stdout
    try:
        w = csv.writer(fh, delimiter="\t", lineterminator="\n")
        w.writerow(["name", "rank", "hypernym_uid", "hypernym_name", "score"])
        for h in hits:
            w.writerow([h.query, h.rank, h.uid, class_names[h.uid][0] if class_names.get(h.uid) else "",
                        f"{h.score:.4f}"])
    finally:
        if output:
            fh.close()
    if not write:
        return
    method = meta["method"]
    uid = run_uid("hypernyms", model=str(Path(model).resolve()), root=root, level=level, top_k=write_top_k,
                  names=file_digest(names), ontology=onto)
    source_of = {q: c for q, c in queries}
    best: dict[tuple[str, str, bool], PredictionEdge] = {}
    mentions: dict[str, MentionRow] = {}
    for h in hits:
        if h.rank > write_top_k:
            continue
        concept = source_of.get(h.query)
        if concept is None:
            src, is_mention = text_uid(h.query), True
            mentions[src] = MentionRow(src, h.query)
        else:
            src, is_mention = concept, False
        key = (src, h.uid, is_mention)
        if key not in best or h.score > best[key].score:
            best[key] = PredictionEdge(src, h.uid, float(h.score), int(h.rank), level, is_mention)
    run = RunRecord(uid, "hypernyms", method, str(Path(model).resolve()),
                    params={"root": root, "level": level, "top_k": top_k, "write_top_k": write_top_k,
                            "names": str(names) if names else "held-out test names", "ontology": onto})
    with open_store(store) as st:
        st.write_run(RunWrite(run, list(mentions.values()), [], list(best.values()), ontology=onto))
    info(f"wrote {len(best)} PREDICTED_IS_A edge(s) for {len(queries)} name(s) as run {uid}", quiet)


def eval_hierarchy_cmd(
    model: Annotated[Path, typer.Option("--model", help="A trained model directory.")],
    root: RootOpt,
    ontology: Annotated[Optional[str], typer.Option("--ontology", help="Default: the model's ontology.")] = None,
    baselines: Annotated[bool, typer.Option("--baselines/--no-baselines",
                                            help="Also score averaged word vectors, char tf-idf and MiniLM.")] = True,
    encoder: Annotated[Optional[Path], typer.Option("--encoder", help="HF encoder dir for the transformer baseline.")] = None,
    seed: Annotated[Optional[int], typer.Option("--seed")] = None,
    store: StoreOpt = None, quiet: QuietOpt = False,
) -> None:
    """Semantic-similarity mAP and hypernym-detection MRR per level (DAN §4.3)."""
    setup(quiet)
    from kgnorm.evaluation.hierarchy import char_tfidf_encoder, evaluate_hierarchy, format_results
    from kgnorm.methods.model_dir import read_model_meta
    from kgnorm.methods.registry import load_encoder

    meta = read_model_meta(model)
    onto = ontology or meta.get("ontology")
    if not onto:
        raise KgnormError("the model names no ontology: pass --ontology")
    split, _ = _split(store, onto, root, meta.get("split_seed", 0) if seed is None else seed)
    enc = load_encoder(model)
    results = {meta["method"]: evaluate_hierarchy(enc.encode, split)}
    if baselines:
        if hasattr(enc, "wordvecs"):
            from kgnorm.evaluation.hierarchy import word_vector_encoder
            results["avg-wordvec"] = evaluate_hierarchy(word_vector_encoder(enc.wordvecs), split)
        results["char-tfidf"] = evaluate_hierarchy(char_tfidf_encoder(it.name for it in split.items()), split)
        from kgnorm.encoders.dense import DenseEncoder, default_encoder_path
        dense = DenseEncoder(encoder or default_encoder_path(), pooling="mean")
        results["minilm"] = evaluate_hierarchy(lambda names: dense.encode(list(names), normalize=True), split)
    typer.echo(format_results(results))
