"""Train BioCoM (Ujiie et al. 2021, "Biomedical entity linking with contrastive context
matching") on an entity-linked corpus built by :func:`kgnorm.methods.biocom.corpus.build_corpus`.

Each step draws 16 concepts × 2 of their corpus sentences (:class:`ConceptBatchSampler`),
encodes each sentence with the mention between ``[ENT]``/``[/ENT]`` (vector = hidden state
at ``[ENT]``) and minimises the Multi-Similarity loss (α 2, β 50, λ 1, mining ε 0.1) with
AdamW, lr 1e-5. All of these are :class:`BiocomConfig` fields.

Single-sentence concepts (decided here): by default (``single_sentence="pseudo"``) the one
sentence is paired with a *dictionary-name pseudo-sentence* -- one of the concept's names
(seeded choice, preferring a name other than the matched text) alone inside the markers,
exactly what :meth:`BiocomLinker.encode` embeds for a name. That keeps the ~40 % of concepts
a small corpus sees once in training and ties the name and context spaces together.
``single_sentence="skip"`` leaves them out of training (they stay in the search index
either way). Pseudo-sentences are training rows only; the index holds corpus sentences,
plus dictionary names when ``index_names`` is ``"preferred"`` or ``"all"``.

Synonym substitution (``substitutions=n``, off by default): each corpus row also gives up to
n training rows in which the matched text is replaced, inside the same sentence, by another
dictionary name of its concept (seeded, distinct names). A small corpus only ever shows the
names the dictionary matched, while the mentions to link often use other synonyms; the
substituted rows ask the encoder to place a concept's synonyms in one context together.
Training rows only, like the pseudo-sentences. Measured on the NCBI-disease low-resource
benchmark (one substitution per row, 40-min budget): dev Acc@1 0.548 vs 0.560 without, so it
stays off by default.

Model selection: with dev mentions -- ``(mention text, context, gold)`` triples, gold a uid or
a set of uids (alt ids included by the caller), or :class:`~kgnorm.mentions.types.Mention` objects
(mentions with several gold parts are skipped) -- the corpus is re-encoded every
``eval_every`` epochs (and after the last), dev Acc@1 is measured for every k in ``ks`` and
the best (epoch, k) is kept (ties: earlier epoch, smaller k). Without dev the last epoch and
``default_k`` are used.

Epochs, checkpoints, budgets and selection are the shared
:class:`~kgnorm.training.loop.TrainingLoop`'s (:class:`BiocomTask` supplies the batches, the
loss step and the dev evaluation). Resuming: ``<out>/checkpoints/last.pt`` (weights,
optimizer, position) is written after every epoch and every ``checkpoint_steps`` steps; a
run with ``resume=True`` continues from it when the configuration fields that shape
training, the base encoder and the corpus are unchanged (otherwise KgnormError). Each
epoch's batches are seeded with (seed, epoch) and each step's dropout with (seed, step), so
a resumed run replays the uninterrupted one. The checkpoint is deleted once the model
directory is complete (``keep_checkpoint``).

Budgets: ``max_steps`` (steps in all) and ``max_seconds`` (wall-clock of the optimisation
steps, dev evaluations excluded, summed over resumptions) stop training inside an epoch; the
stopped model is evaluated on dev like a finished epoch, so a time-boxed run (benchmarks)
still selects the best of what it trained.
"""
from __future__ import annotations

import os
import platform
import shutil
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import torch

from kgnorm.errors import KgnormError
from kgnorm.training.checkpoints import ResumableConfig
from kgnorm.training.loop import LoopConfig, TrainingLoop, TrainResult
from kgnorm.training.task import TrainingTask

from .corpus import Corpus, load_corpus
from .data import TrainingData, prepare_dev, prepare_training_data
from .linker import (ENCODER_DIR, INDEX_TYPES, MODEL_JSON, build_index, evaluate_rankings, save_linker,
                     vote_rankings)
from kgnorm.losses.multi_similarity import MultiSimilarityLoss
from .model import MARKERS, BiocomEncoder, Item
from kgnorm.samplers.concept_batch import ConceptBatchSampler

__all__ = ["BiocomConfig", "TrainResult", "train_biocom", "evaluate_dev",
           "prepare_dev"]

CHECKPOINT_DIR = "checkpoints"
BEST_VECTORS = "best_vectors.npy"
FORMAT_VERSION = 1
_prepare = prepare_training_data        # the name tests use


@dataclass
class BiocomConfig(ResumableConfig):
    concepts_per_batch: int = 16
    sentences_per_concept: int = 2
    single_sentence: str = "pseudo"      # "pseudo" (pair with a dictionary name) or "skip"
    substitutions: int = 0               # extra training rows per corpus row: mention -> synonym
    alpha: float = 2.0
    beta: float = 50.0
    lam: float = 1.0
    epsilon: float = 0.1
    mining: bool = True
    lr: float = 1e-5
    weight_decay: float = 0.0
    warmup_steps: int = 0
    grad_clip: float | None = 1.0
    epochs: int = 10
    max_steps: int | None = None         # stop after this many steps in all (None: no limit)
    max_seconds: float | None = None     # stop once the optimisation steps took this long
    max_length: int = 128
    window_chars: int = 200
    ks: tuple[int, ...] = (1, 3, 5, 10, 20)
    default_k: int = 1                   # k without dev mentions
    index_names: str = "none"            # also index dictionary names: none|preferred|all
    index_type: str = "fp16"             # fp16 | flat
    eval_every: int = 1                  # dev evaluation every n epochs (and after the last)
    eval_initial: bool = False           # also evaluate the untrained encoder (epoch 0)
    checkpoint_steps: int = 0            # extra checkpoints every n steps (0: per epoch only)
    keep_checkpoint: bool = False
    infer_batch_size: int = 64
    seed: int = 0
    threads: int | None = None           # torch.set_num_threads when set
    device: str | None = None

    # fields that may change between an interrupted run and its resumption
    _RESUMABLE = ("epochs", "max_steps", "max_seconds", "ks", "default_k", "index_names",
                  "index_type", "eval_every", "eval_initial", "checkpoint_steps", "keep_checkpoint",
                  "infer_batch_size", "threads", "device")

    def check(self) -> None:
        if self.single_sentence not in ("pseudo", "skip"):
            raise KgnormError(f"single_sentence must be 'pseudo' or 'skip', "
                              f"got {self.single_sentence!r}")
        if self.substitutions < 0:
            raise KgnormError(f"substitutions must be >= 0, got {self.substitutions}")
        if self.index_names not in ("none", "preferred", "all"):
            raise KgnormError(f"index_names must be none, preferred or all, "
                              f"got {self.index_names!r}")
        if self.index_type not in INDEX_TYPES:
            raise KgnormError(f"index_type must be one of {', '.join(INDEX_TYPES)}")
        if not self.ks or min(self.ks) < 1 or self.default_k < 1:
            raise KgnormError("k values must be positive")
        if self.epochs < 1:
            raise KgnormError("epochs must be at least 1")
        if self.max_seconds is not None and self.max_seconds <= 0:
            raise KgnormError("max_seconds must be positive")


# --------------------------------------------------------------------------- helpers

def _versions() -> dict:
    import faiss
    import pyarrow
    import transformers

    import kgnorm
    return {"kgnorm": kgnorm.__version__, "python": platform.python_version(),
            "torch": torch.__version__, "transformers": transformers.__version__,
            "faiss": getattr(faiss, "__version__", ""), "numpy": np.__version__,
            "pyarrow": pyarrow.__version__}


def evaluate_dev(encoder: BiocomEncoder, index_vectors: np.ndarray, index_uids: Sequence[str],
                 dev_items: Sequence[Item], dev_gold: Sequence[set[str]],
                 ks: Sequence[int], batch_size: int = 64) -> dict:
    """Acc@1/Acc@5 of the kNN vote for every k; "k" = the best k by Acc@1 (ties: smaller)."""
    q = encoder.embed(dev_items, batch_size, progress="dev")
    index = build_index(index_vectors, "flat")
    depth = min(index.ntotal, max(max(ks), 50))
    sims, idx = index.search(q, depth)
    neigh = [[index_uids[j] for j in row if j >= 0] for row in idx]
    per_k = {}
    for k in sorted(set(int(k) for k in ks)):
        per_k[k] = evaluate_rankings(vote_rankings(neigh, sims, k, 5), dev_gold, (1, 5))
    best = max(sorted(per_k), key=lambda k: (per_k[k]["acc@1"], -k))
    return {"k": best, "acc@1": per_k[best]["acc@1"], "acc@5": per_k[best]["acc@5"],
            "mentions": len(dev_gold), "per_k": {str(k): v for k, v in per_k.items()}}


def _fingerprint(cfg: BiocomConfig, encoder_path: str, corpus: Corpus) -> dict:
    m = corpus.manifest
    return {"config": cfg.fingerprint_dict(), "encoder": str(encoder_path),
            "corpus": {k: m.get(k) for k in ("ontology", "cap", "seed", "counts", "created_at")},
            "rows": len(corpus)}


def _scheduler(opt: torch.optim.Optimizer, warmup: int) -> torch.optim.lr_scheduler.LambdaLR:
    return torch.optim.lr_scheduler.LambdaLR(
        opt, lambda step: min(1.0, (step + 1) / warmup) if warmup > 0 else 1.0)


# --------------------------------------------------------------------------- training

class BiocomTask(TrainingTask):
    """BioCoM's part of the loop: the concept batches of an epoch, the Multi-Similarity step,
    the dev evaluation (corpus re-encoded) and the best encoder with its index vectors."""

    def __init__(self, enc: BiocomEncoder, data: TrainingData, sampler: ConceptBatchSampler,
                 dev_items: list[Item], dev_gold: list[set[str]], cfg: BiocomConfig,
                 out: Path) -> None:
        self.enc, self.data, self.sampler, self.cfg, self.out = enc, data, sampler, cfg, out
        self.dev_items, self.dev_gold = dev_items, dev_gold
        self.module = enc.model
        self.optimizer = torch.optim.AdamW(enc.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        self.scheduler = _scheduler(self.optimizer, cfg.warmup_steps)
        self.clip_norm = cfg.grad_clip or None
        self.loss_fn = MultiSimilarityLoss(cfg.alpha, cfg.beta, cfg.lam, cfg.epsilon, cfg.mining)
        self.plan: list = []
        self.vecs: np.ndarray | None = None

    def start_epoch(self, epoch: int, saved: dict | None) -> int:
        self.plan = self.sampler.plan(epoch)
        self.enc.train()
        return len(self.plan)

    def loss(self, step: int) -> torch.Tensor:
        rows, data = self.plan[step], self.data
        vec = self.enc.forward([data.train_items[r] for r in rows])
        labels = torch.tensor([data.train_labels[r] for r in rows], device=vec.device)
        loss = self.loss_fn(vec, labels)
        # no anchor with a mined pair: counted, but no optimizer step (the schedule moves on)
        return loss if self.loss_fn.last_stats.anchors > 0 else loss.detach()

    def evaluate(self) -> dict | None:
        if not self.dev_items:
            return None
        cfg = self.cfg
        self.vecs = self.enc.embed(self.data.index_items, cfg.infer_batch_size, progress="corpus")
        return evaluate_dev(self.enc, self.vecs, self.data.index_rows["uid"], self.dev_items,
                            self.dev_gold, cfg.ks, cfg.infer_batch_size)

    def save(self, record: dict, history: list[dict]) -> None:
        if self.vecs is None:       # no dev: the final model is the last epoch's
            return
        (self.out / CHECKPOINT_DIR).mkdir(parents=True, exist_ok=True)
        self.enc.save(self.out / ENCODER_DIR)
        path = self.out / CHECKPOINT_DIR / BEST_VECTORS
        tmp = path.with_name("best_vectors.tmp.npy")
        np.save(tmp, self.vecs)
        os.replace(tmp, path)


def train_biocom(corpus_dir: str | Path, out_dir: str | Path, encoder: str | Path, *,
                 dev: Sequence[Any] | None = None, config: BiocomConfig | None = None,
                 ontology: str | None = None, version: str | None = None,
                 resume: bool = True) -> TrainResult:
    """Train BioCoM and write a complete model directory to `out_dir` (see linker module).

    corpus_dir: a corpus directory (checked against `ontology`/`version` when given);
    encoder: a local Hugging Face encoder directory; dev: optional dev mentions for model
    and k selection (module doc)."""
    cfg = config or BiocomConfig()
    cfg.check()
    if cfg.threads:
        torch.set_num_threads(int(cfg.threads))
    t_start = time.time()
    corpus = load_corpus(corpus_dir, ontology, version)
    if len(corpus) == 0:
        raise KgnormError(f"{corpus_dir}: the corpus has no sentences")
    data = prepare_training_data(corpus, cfg)
    sampler = ConceptBatchSampler(data.groups, cfg.concepts_per_batch,
                                  cfg.sentences_per_concept, cfg.seed)
    dev_items, dev_gold, dev_skipped = prepare_dev(dev)

    out = Path(out_dir)
    ckpt_dir = out / CHECKPOINT_DIR
    loop = TrainingLoop(LoopConfig(
        epochs=cfg.epochs, name="BioCoM", budget="step", max_steps=cfg.max_steps,
        max_seconds=cfg.max_seconds, checkpoint_every_steps=cfg.checkpoint_steps or None,
        eval_initial=cfg.eval_initial and bool(dev_items), eval_every=cfg.eval_every,
        step_seed=cfg.seed, seed=cfg.seed), out, resume=resume)
    enc = BiocomEncoder(encoder, max_length=cfg.max_length, window_chars=cfg.window_chars,
                        device=cfg.device)
    task = BiocomTask(enc, data, sampler, dev_items, dev_gold, cfg, out)
    fingerprint = _fingerprint(cfg, str(encoder), corpus)
    resumed = loop.begin(task, fingerprint) is not None
    if not resume:
        shutil.rmtree(ckpt_dir, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / MODEL_JSON).unlink(missing_ok=True)   # the directory is incomplete until the end
    res = loop.run(task, fingerprint)

    best = None if res.best_metrics is None else {**res.best_metrics, "epoch": res.best_epoch}
    final = _final_model(best if dev_items else None, enc, data, cfg, out, res.epochs_completed)
    meta = _model_meta(cfg, encoder, final, Path(corpus_dir), corpus, data, sampler,
                       {"dev": best, "dev_skipped_mentions": dev_skipped, "best_epoch": final.best_epoch},
                       {"epochs_run": res.epochs_completed, "steps": res.global_step,
                        "batches_per_epoch": len(sampler), "seconds": round(res.elapsed, 1),
                        "resumed": resumed, "history": res.history})
    save_linker(out, final.enc, final.vecs, data.index_rows, meta, cfg.index_type,
                save_encoder=final.save_encoder)
    if not cfg.keep_checkpoint and ckpt_dir.exists():
        shutil.rmtree(ckpt_dir)
    res.best_epoch, res.train_seconds = final.best_epoch, time.time() - t_start
    res.info = {"k": final.k, "dev": best}   # dev: the selected epoch's metrics with its k
    return res


@dataclass
class _FinalModel:
    """The encoder the model directory keeps, its corpus vectors and the vote's k."""

    k: int
    k_source: str           # dev | default
    enc: BiocomEncoder
    vecs: np.ndarray
    save_encoder: bool      # False: the dev-selected encoder is already in the directory
    best_epoch: int


def _final_model(best: dict | None, enc: BiocomEncoder, data: TrainingData, cfg: BiocomConfig,
                 out: Path, epochs_completed: int) -> _FinalModel:
    """With a dev selection (``best``): the selected encoder and vectors the task saved, and the
    selected k; without one: the last epoch's encoder, the corpus encoded now, the default k."""
    if best is not None:
        return _FinalModel(int(best["k"]), "dev",
                           BiocomEncoder(out / ENCODER_DIR, max_length=cfg.max_length,
                                         window_chars=cfg.window_chars, device=cfg.device),
                           np.load(out / CHECKPOINT_DIR / BEST_VECTORS), False, int(best["epoch"]))
    return _FinalModel(int(cfg.default_k), "default", enc,
                       enc.embed(data.index_items, cfg.infer_batch_size, progress="corpus"), True,
                       epochs_completed)


def _model_meta(cfg: BiocomConfig, encoder: str | Path, final: _FinalModel, corpus_dir: Path,
                corpus: Corpus, data: TrainingData, sampler: ConceptBatchSampler, metrics: dict,
                training: dict) -> dict:
    """The model directory's ``kgnorm-model.json``."""
    onto = corpus.manifest.get("ontology", {})
    return {
        "method": "biocom", "format_version": FORMAT_VERSION,
        "encoder": {"base": str(encoder), "dir": ENCODER_DIR, "max_length": cfg.max_length,
                    "window_chars": cfg.window_chars, "markers": list(MARKERS),
                    "dim": final.enc.dim,
                    "representation": "hidden state at [ENT], L2-normalised"},
        "hyper_parameters": asdict(cfg),
        "k": final.k, "k_source": final.k_source,
        "scores": "vote share among the k nearest corpus entities (0.0 for fillers)",
        "ontology": {"name": onto.get("name", ""), "version": onto.get("version", "")},
        "corpus": {"path": str(corpus_dir.resolve()), "rows": len(corpus),
                   "concepts": len(set(corpus.uids)), "cap": corpus.manifest.get("cap"),
                   "seed": corpus.manifest.get("seed"),
                   "single_sentence_concepts": data.single_sentence_concepts,
                   "pseudo_training_rows": data.pseudo_training_rows,
                   "substituted_training_rows": data.substituted_rows,
                   "skipped_concepts": len(sampler.skipped)},
        "index": {"file": "corpus.faiss", "rows_file": "corpus_rows.parquet",
                  "type": cfg.index_type, "metric": "inner_product",
                  "size": len(data.index_items),
                  "pseudo_rows": int(sum(data.index_rows["pseudo"]))},
        "metrics": metrics,
        "training": training,
        "versions": _versions(),
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
