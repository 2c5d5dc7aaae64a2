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

Resuming: ``<out>/checkpoints/checkpoint.pt`` (weights, optimizer, position) is written
after every epoch and every ``checkpoint_steps`` steps; a run with ``resume=True`` continues
from it when the configuration fields that shape training, the base encoder and the corpus
are unchanged (otherwise KgnormError). Each epoch's batches are seeded with (seed, epoch)
and each step's dropout with (seed, step), so a resumed run replays the uninterrupted one.
The checkpoint is deleted once the model directory is complete (``keep_checkpoint``).

Budgets: ``max_steps`` (steps in all) and ``max_seconds`` (wall-clock of the optimisation
steps, dev evaluations excluded, summed over resumptions) stop training inside an epoch; the
stopped model is evaluated on dev like a finished epoch, so a time-boxed run (benchmarks)
still selects the best of what it trained.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import random
import shutil
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import torch

from kgnorm.errors import KgnormError
from kgnorm.progress import progress_bar

from .corpus import Corpus, load_corpus
from .matching import name_tokens
from .linker import (ENCODER_DIR, INDEX_TYPES, MODEL_JSON, BiocomLinker, as_items,
                     build_index, evaluate_rankings, load_biocom, save_linker,
                     vote_rankings)
from .loss import MultiSimilarityLoss
from .model import MARKERS, BiocomEncoder, Item
from .sampler import ConceptBatchSampler

__all__ = ["BiocomConfig", "BiocomTrainResult", "train_biocom", "evaluate_dev",
           "prepare_dev"]

CHECKPOINT_DIR = "checkpoints"
CHECKPOINT = "checkpoint.pt"
BEST_VECTORS = "best_vectors.npy"
FORMAT_VERSION = 1


@dataclass
class BiocomConfig:
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

    def fingerprint_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k not in self._RESUMABLE}

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


@dataclass
class BiocomTrainResult:
    model_dir: str
    k: int
    best_epoch: int
    dev_metrics: dict | None
    epochs_run: int
    steps: int
    train_seconds: float
    resumed: bool
    history: list[dict] = field(default_factory=list)

    def load(self) -> BiocomLinker:
        return load_biocom(self.model_dir)


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


def prepare_dev(dev: Sequence[Any] | None) -> tuple[list[Item], list[set[str]], int]:
    """(items, gold sets, skipped) from dev triples or Mention objects (module doc)."""
    items: list[Item] = []
    gold: list[set[str]] = []
    skipped = 0
    for d in dev or ():
        if hasattr(d, "gold") and hasattr(d, "text"):
            parts = [g for g in d.gold if g and g != "-1"]
            if len(d.gold) != 1 or not parts:
                skipped += 1
                continue
            text, context, g = d.text, d.context, set(parts)
        else:
            text, context, g = d
            g = {g} if isinstance(g, str) else set(g)
            if not g:
                skipped += 1
                continue
        items.extend(as_items([(text, context)]))
        gold.append(g)
    return items, gold, skipped


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


def _pseudo_name(names: Sequence[str], mention: str, rng: random.Random) -> str | None:
    if not names:
        return None
    other = [n for n in names if name_tokens(n) != name_tokens(mention)]
    pool = other or list(names)
    return pool[rng.randrange(len(pool))]


@dataclass
class _Data:
    train_items: list[Item]
    train_labels: list[int]
    groups: dict[str, list[int]]
    index_items: list[Item]
    index_rows: dict[str, list]
    pseudo_training_rows: int
    single_sentence_concepts: int
    substituted_rows: int = 0


def _prepare(corpus: Corpus, cfg: BiocomConfig) -> _Data:
    items: list[Item] = [(s, a, b) for s, a, b in
                         zip(corpus.sentences, corpus.starts, corpus.ends)]
    uids = list(corpus.uids)
    concept_ids = {u: i for i, u in enumerate(sorted(set(uids)))}
    groups = corpus.rows_by_concept()
    singles = sorted(u for u, rows in groups.items() if len(rows) == 1)
    n_pseudo = 0
    train_items, train_uids = list(items), list(uids)
    if cfg.single_sentence == "pseudo":
        rng = random.Random(cfg.seed)
        for u in singles:
            (r,) = groups[u]
            name = _pseudo_name(corpus.names.get(u, []), corpus.sentences[r][
                corpus.starts[r]:corpus.ends[r]], rng)
            if name is None:
                continue
            groups[u] = [r, len(train_items)]
            train_items.append((name, 0, len(name)))
            train_uids.append(u)
            n_pseudo += 1
    n_subst = 0
    if cfg.substitutions:
        rng = random.Random(cfg.seed + 1)
        for r, u in enumerate(uids):
            sent, a, b = items[r]
            own = name_tokens(sent[a:b])
            pool = sorted({n for n in corpus.names.get(u, []) if name_tokens(n) != own})
            for name in rng.sample(pool, min(cfg.substitutions, len(pool))):
                groups[u].append(len(train_items))
                train_items.append((sent[:a] + name + sent[b:], a, a + len(name)))
                train_uids.append(u)
                n_subst += 1
    labels = [concept_ids.setdefault(u, len(concept_ids)) for u in train_uids]

    index_items = list(items)
    rows = {"uid": list(uids), "sentence": list(corpus.sentences),
            "start": list(corpus.starts), "end": list(corpus.ends),
            "doc_id": list(corpus.doc_ids), "pseudo": [False] * len(uids)}
    if cfg.index_names != "none":
        for u in sorted(corpus.names):
            names = corpus.names[u]
            for name in (names[:1] if cfg.index_names == "preferred" else names):
                index_items.append((name, 0, len(name)))
                rows["uid"].append(u)
                rows["sentence"].append(name)
                rows["start"].append(0)
                rows["end"].append(len(name))
                rows["doc_id"].append("")
                rows["pseudo"].append(True)
    return _Data(train_items, labels, groups, index_items, rows, n_pseudo, len(singles),
                 n_subst)


def _fingerprint(cfg: BiocomConfig, encoder_path: str, corpus: Corpus) -> str:
    h = hashlib.sha256()
    m = corpus.manifest
    h.update(json.dumps({"config": cfg.fingerprint_dict(), "encoder": str(encoder_path),
                         "corpus": {k: m.get(k) for k in ("ontology", "cap", "seed", "counts",
                                                          "created_at")},
                         "rows": len(corpus)}, sort_keys=True, default=str).encode())
    return h.hexdigest()


def _atomic_torch_save(obj: dict, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def _scheduler(opt: torch.optim.Optimizer, warmup: int) -> torch.optim.lr_scheduler.LambdaLR:
    return torch.optim.lr_scheduler.LambdaLR(
        opt, lambda step: min(1.0, (step + 1) / warmup) if warmup > 0 else 1.0)


# --------------------------------------------------------------------------- training

def train_biocom(corpus_dir: str | Path, out_dir: str | Path, encoder: str | Path, *,
                 dev: Sequence[Any] | None = None, config: BiocomConfig | None = None,
                 ontology: str | None = None, version: str | None = None,
                 resume: bool = True) -> BiocomTrainResult:
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
    onto = corpus.manifest.get("ontology", {})
    data = _prepare(corpus, cfg)
    sampler = ConceptBatchSampler(data.groups, cfg.concepts_per_batch,
                                  cfg.sentences_per_concept, cfg.seed)
    dev_items, dev_gold, dev_skipped = prepare_dev(dev)

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / MODEL_JSON).unlink(missing_ok=True)   # the directory is incomplete until the end
    ckpt_dir = out / CHECKPOINT_DIR
    ckpt_path = ckpt_dir / CHECKPOINT
    fingerprint = _fingerprint(cfg, str(encoder), corpus)

    torch.manual_seed(cfg.seed)
    enc = BiocomEncoder(encoder, max_length=cfg.max_length, window_chars=cfg.window_chars,
                        device=cfg.device)
    opt = torch.optim.AdamW(enc.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    sched = _scheduler(opt, cfg.warmup_steps)
    loss_fn = MultiSimilarityLoss(cfg.alpha, cfg.beta, cfg.lam, cfg.epsilon, cfg.mining)

    state: dict[str, Any] = {"epoch": 0, "step_in_epoch": 0, "global_step": 0,
                             "epoch_loss": 0.0, "epoch_batches": 0, "history": [],
                             "best": None, "train_seconds": 0.0}
    resumed = False
    if ckpt_path.exists():
        if not resume:
            shutil.rmtree(ckpt_dir)
        else:
            ck = torch.load(ckpt_path, map_location=enc.device, weights_only=False)
            if ck.get("fingerprint") != fingerprint:
                raise KgnormError(
                    f"{out}: holds a checkpoint of a different BioCoM run (configuration, "
                    "encoder or corpus changed); use another --out or resume=False")
            enc.model.load_state_dict(ck["model"])
            opt.load_state_dict(ck["optimizer"])
            sched.load_state_dict(ck["scheduler"])
            state = ck["state"]
            resumed = True
    best_vectors_path = ckpt_dir / BEST_VECTORS

    def save_checkpoint() -> None:
        ckpt_dir.mkdir(parents=True, exist_ok=True)
        _atomic_torch_save({"fingerprint": fingerprint, "model": enc.model.state_dict(),
                            "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                            "state": state}, ckpt_path)

    def evaluate(epoch: int) -> None:
        vecs = enc.embed(data.index_items, cfg.infer_batch_size, progress="corpus")
        metrics = evaluate_dev(enc, vecs, data.index_rows["uid"], dev_items, dev_gold,
                               cfg.ks, cfg.infer_batch_size)
        metrics["epoch"] = epoch
        state["history"].append({"epoch": epoch, "dev": metrics})
        best = state["best"]
        if best is None or metrics["acc@1"] > best["acc@1"]:
            ckpt_dir.mkdir(parents=True, exist_ok=True)
            enc.save(out / ENCODER_DIR)
            tmp = best_vectors_path.with_name("best_vectors.tmp.npy")
            np.save(tmp, vecs)
            os.replace(tmp, best_vectors_path)
            state["best"] = metrics

    if dev_items and cfg.eval_initial and state["global_step"] == 0 and not state["history"]:
        evaluate(0)
        save_checkpoint()

    def over_time(since: float | None = None) -> bool:
        # the budget counts optimisation steps only (state["train_seconds"] plus the running
        # stretch), not dev evaluations; it applies across resumptions
        if cfg.max_seconds is None:
            return False
        running = time.time() - since if since is not None else 0.0
        return state["train_seconds"] + running >= cfg.max_seconds

    stop = False
    ran = 0                                       # steps taken by this call
    while state["epoch"] < cfg.epochs and not stop:
        epoch = state["epoch"]
        plan = sampler.plan(epoch)
        t_epoch = time.time()
        enc.train()
        bar = progress_bar(total=len(plan), desc=f"biocom epoch {epoch + 1}/{cfg.epochs}",
                           unit="batch", initial=state["step_in_epoch"])
        try:
            for b in range(state["step_in_epoch"], len(plan)):
                if cfg.max_steps is not None and state["global_step"] >= cfg.max_steps:
                    stop = True
                    break
                if over_time(t_epoch):
                    stop = True
                    break
                rows = plan[b]
                torch.manual_seed(cfg.seed * 1_000_003 + state["global_step"])
                vec = enc.forward([data.train_items[r] for r in rows])
                labels = torch.tensor([data.train_labels[r] for r in rows], device=vec.device)
                loss = loss_fn(vec, labels)
                opt.zero_grad(set_to_none=True)
                if loss.requires_grad and loss_fn.last_stats.anchors > 0:
                    loss.backward()
                    if cfg.grad_clip:
                        torch.nn.utils.clip_grad_norm_(enc.model.parameters(), cfg.grad_clip)
                    opt.step()
                sched.step()
                state["global_step"] += 1
                state["step_in_epoch"] = b + 1
                state["epoch_loss"] += float(loss.detach())
                state["epoch_batches"] += 1
                ran += 1
                bar.update(1)
                bar.set_postfix(loss=f"{state['epoch_loss'] / state['epoch_batches']:.4f}")
                if cfg.checkpoint_steps and state["global_step"] % cfg.checkpoint_steps == 0:
                    state["train_seconds"] += time.time() - t_epoch
                    t_epoch = time.time()
                    save_checkpoint()
        finally:
            bar.close()
        state["train_seconds"] += time.time() - t_epoch
        if stop:
            # max_steps / max_seconds reached inside the epoch: keep the position, so that a
            # later run with a larger budget continues this epoch where it stopped
            if ran and state["epoch_batches"]:
                state["history"].append({"epoch": epoch + state["step_in_epoch"] / len(plan),
                                         "steps": state["global_step"],
                                         "loss": state["epoch_loss"] / state["epoch_batches"],
                                         "partial": True})
            if dev_items and (ran or state["best"] is None):
                evaluate(round(epoch + state["step_in_epoch"] / len(plan), 3))
            save_checkpoint()
            break
        finished_epoch = epoch + 1
        state["history"].append({"epoch": finished_epoch, "steps": state["global_step"],
                                 "loss": state["epoch_loss"] / max(state["epoch_batches"], 1)})
        state.update(epoch=finished_epoch, step_in_epoch=0, epoch_loss=0.0, epoch_batches=0)
        last = finished_epoch >= cfg.epochs or (
            cfg.max_steps is not None and state["global_step"] >= cfg.max_steps) or over_time()
        if dev_items and (last or finished_epoch % max(cfg.eval_every, 1) == 0):
            evaluate(finished_epoch)
        save_checkpoint()
        if last:
            break

    # ---------------------------------------------------------------- final model
    best = state["best"]
    if dev_items and best is not None:
        k, k_source = int(best["k"]), "dev"
        final_enc = BiocomEncoder(out / ENCODER_DIR, max_length=cfg.max_length,
                                  window_chars=cfg.window_chars, device=cfg.device)
        vecs = np.load(best_vectors_path)
        save_encoder = False
        best_epoch = int(best["epoch"])
    else:
        k, k_source = int(cfg.default_k), "default"
        final_enc = enc
        vecs = enc.embed(data.index_items, cfg.infer_batch_size, progress="corpus")
        save_encoder = True
        best_epoch = int(state["epoch"])
    meta = {
        "method": "biocom", "format_version": FORMAT_VERSION,
        "encoder": {"base": str(encoder), "dir": ENCODER_DIR, "max_length": cfg.max_length,
                    "window_chars": cfg.window_chars, "markers": list(MARKERS),
                    "dim": final_enc.dim,
                    "representation": "hidden state at [ENT], L2-normalised"},
        "hyper_parameters": asdict(cfg),
        "k": k, "k_source": k_source,
        "scores": "vote share among the k nearest corpus entities (0.0 for fillers)",
        "ontology": {"name": onto.get("name", ""), "version": onto.get("version", "")},
        "corpus": {"path": str(Path(corpus_dir).resolve()), "rows": len(corpus),
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
        "metrics": {"dev": best, "dev_skipped_mentions": dev_skipped,
                    "best_epoch": best_epoch},
        "training": {"epochs_run": state["epoch"], "steps": state["global_step"],
                     "batches_per_epoch": len(sampler), "seconds": round(
                         state["train_seconds"], 1), "resumed": resumed,
                     "history": state["history"]},
        "versions": _versions(),
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    save_linker(out, final_enc, vecs, data.index_rows, meta, cfg.index_type,
                save_encoder=save_encoder)
    if not cfg.keep_checkpoint and ckpt_dir.exists():
        shutil.rmtree(ckpt_dir)
    return BiocomTrainResult(model_dir=str(out), k=k, best_epoch=best_epoch,
                             dev_metrics=best, epochs_run=state["epoch"],
                             steps=state["global_step"],
                             train_seconds=time.time() - t_start, resumed=resumed,
                             history=state["history"])
