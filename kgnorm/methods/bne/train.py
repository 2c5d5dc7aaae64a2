"""BNE training (Phan, Sun & Tay 2019), resumable, with early stopping on dev linking.

Data: ``concepts`` -- a :class:`~kgnorm.linking.dictionary.NameDictionary` or a plain
``uid -> [normalized names]`` mapping -- and :class:`~kgnorm.encoders.wordvectors.WordVectors`.
Every training name is an anchor once per epoch (order and synonym choice seeded with
``seed + epoch``, :mod:`kgnorm.methods.bne.sampling`). The objectives -- synonym, conceptual,
contextual, and the optional sibling / parent terms -- are in
:mod:`kgnorm.methods.bne.objectives`; weights w_syn/w_con/w_ctx 1/1/1.

Hierarchy (kgnorm's addition): with ``hierarchy`` (the ontology's IS_A view) and
``siblings_k`` > 0, each anchor gets ``siblings_k`` names of sibling concepts per epoch as hard
negatives for the synonym objective; with ``parents_k`` > 0, ``parents_k`` names of its parent
concepts as positives for the conceptual one (the shared samplers of :mod:`kgnorm.samplers`).
Without them the negatives are in-batch only, as in the paper.

Target map ``P`` (decided here): the paper compares ``e(s)`` directly with word-vector
averages of the same dimension. ``projection="auto"`` does exactly that when the word
vectors have ``out_dim`` dimensions (``P`` = identity) and otherwise *compares in the
input space through a learned projection*: ``P`` is a bias-free ``Linear(out_dim,
word_dim)`` trained with the network (``BNE.target_proj``). The targets ``q``/``g`` stay
fixed -- nothing can move them to make the objective easy -- and the name space keeps
its own dimension. ``"linear"`` forces the learned map, ``"identity"`` requires equal
dimensions.

Optimisation: Adam (lr 1e-3), gradient-norm clipping 5, batch 64, dropout 0.5. Early
stopping on dev Acc@1 (linking the dev queries against the training names) evaluated
after every epoch (and every ``eval_every_steps`` when set), patience ``patience``
evaluations. ``dev`` is a list of (normalized query, gold uid set); without it a seeded
slice of the synonyms is held out (``dev_fraction`` of the names, at most ``dev_max``,
only names of concepts with another name left, only names carried by one concept) and
removed from the training names. The saved model indexes *all* names of ``concepts``.

Checkpoints: ``out_dir/checkpoints/last.pt`` (weights, optimizer, epoch, step, history,
early-stopping state, RNG) after every evaluation and every ``checkpoint_every_steps``
steps; ``checkpoints/best.safetensors`` holds the best weights so far. ``resume=True``
continues an interrupted run with the same data and settings (a different fingerprint is
refused); the epoch's order is a function of ``seed + epoch``, so resumed runs see the
same batches.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from kgnorm.encoders.wordvectors import WordVectors
from kgnorm.errors import KgnormError
from kgnorm.training.queries import evaluate_linking  # re-exported: the one dev metric
from kgnorm.graph.hierarchy import Hierarchy
from kgnorm.linking.dictionary import NameDictionary, as_name_dictionary, concept_names
from kgnorm.methods.bne.model import BNE, BneModel, build_char_vocab, load_bne
from kgnorm.methods.bne.objectives import (BatchData, batch_loss, inbatch_scores, l2_rows,
                                           logistic_inbatch_loss, prototypes)
from kgnorm.methods.bne.sampling import (HierarchyDraws, TrainingNames, epoch_synonyms,
                                         hold_out_synonyms)
from kgnorm.progress import progress_bar
from kgnorm.training.checkpoints import (atomic_save, digest, load_checkpoint, rng_state,
                                         seed_all, set_rng_state)

__all__ = ["BneConfig", "BneTrainResult", "train_bne", "logistic_inbatch_loss",
           "inbatch_scores", "hold_out_synonyms", "prototypes", "load_bne", "evaluate_linking"]

CHECKPOINT = "last.pt"
BEST = "best.safetensors"
PROJECTIONS = ("auto", "identity", "linear")


@dataclass
class BneConfig:
    char_dim: int = 50
    char_hidden: int = 200
    word_hidden: int = 200
    out_dim: int = 200
    dropout: float = 0.5
    max_word_len: int = 30
    projection: str = "auto"          # auto | identity | linear (see module docstring)
    w_synonym: float = 1.0
    w_concept: float = 1.0
    w_context: float = 1.0
    siblings_k: int = 0               # sibling names per anchor as hard negatives (0: off)
    parents_k: int = 0                # parent names per anchor as conceptual positives (0: off)
    w_sibling: float = 1.0
    w_parent: float = 1.0
    learning_rate: float = 1e-3
    clip: float = 5.0
    batch_size: int = 64
    max_epochs: int = 20
    patience: int = 3                 # evaluations without a better dev Acc@1
    eval_every_steps: int | None = None
    dev_fraction: float = 0.05
    dev_max: int = 1000
    eval_top_k: int = 5
    max_steps_per_epoch: int | None = None
    checkpoint_every_steps: int | None = None
    encode_batch_size: int = 512
    seed: int = 0

    _RESUMABLE = ("max_epochs", "patience", "checkpoint_every_steps", "encode_batch_size")

    def to_dict(self) -> dict:
        return asdict(self)

    def fingerprint_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k not in self._RESUMABLE}


@dataclass
class BneTrainResult:
    out_dir: Path
    model: BneModel
    best_epoch: float | None
    best_dev_acc1: float | None
    epochs_completed: int
    stopped_early: bool
    dev_source: str                   # "given" | "held_out" | "none"
    n_train_names: int
    n_dev: int
    history: list[dict] = field(default_factory=list)
    resumed_from: dict | None = None
    train_seconds: float = 0.0


# ---------------------------------------------------------------------- data
def _prepare_dev(dev: Iterable[tuple[str, Iterable[str] | str]] | None
                 ) -> tuple[list[str], list[frozenset[str]]]:
    qs, gs = [], []
    for item in dev or ():
        try:
            text, gold = item
        except (TypeError, ValueError):
            raise KgnormError(f"dev item {item!r} is not a (query, gold uids) pair") from None
        golds = frozenset([gold] if isinstance(gold, str) else gold) - {"", "-1"}
        if isinstance(text, str) and text.strip() and golds:
            qs.append(text)
            gs.append(golds)
    return qs, gs


def _save_weights(state: dict, path: Path) -> None:
    from safetensors.torch import save_file

    tmp = path.with_name(path.name + ".tmp")
    save_file({k: v.detach().cpu().contiguous() for k, v in state.items()}, str(tmp))
    os.replace(tmp, path)


# ---------------------------------------------------------------------- trainer
def train_bne(concepts: NameDictionary | Mapping[str, Sequence[str]],
              word_vectors: WordVectors, out_dir: str | Path,
              dev: Sequence[tuple[str, Iterable[str] | str]] | None = None,
              config: BneConfig | None = None,
              alt_ids: Mapping[str, Iterable[str]] | None = None, resume: bool = True,
              progress: bool = True, ontology: dict | None = None,
              device: str | None = None, hierarchy: Hierarchy | None = None) -> BneTrainResult:
    """Train a BNE encoder on the synonyms of ``concepts`` and write the selected model
    (with every name of ``concepts`` indexed) to ``out_dir``. ``hierarchy`` (IS_A edges over
    the same uids) is needed when ``siblings_k`` or ``parents_k`` is set."""
    cfg = config or BneConfig()
    if (cfg.siblings_k or cfg.parents_k) and hierarchy is None:
        raise KgnormError("BneConfig.siblings_k / parents_k need a hierarchy (the ontology's "
                          "IS_A edges)")
    if cfg.projection not in PROJECTIONS:
        raise KgnormError(f"unknown projection {cfg.projection!r} (choose from "
                          f"{', '.join(PROJECTIONS)})")
    if cfg.batch_size < 2:
        raise KgnormError("BneConfig.batch_size must be at least 2 (in-batch negatives)")
    t_start = time.perf_counter()
    seed_all(cfg.seed)
    out = Path(out_dir)
    ckdir = out / "checkpoints"
    ckdir.mkdir(parents=True, exist_ok=True)

    full_dict = as_name_dictionary(concepts, alt_ids)
    all_concepts = concept_names(full_dict, ontology_only=False)
    if dev:
        dev_q, dev_g = _prepare_dev(dev)
        train_concepts = all_concepts
        dev_source = "given"
    else:
        train_concepts, held = hold_out_synonyms(all_concepts, cfg.dev_fraction, cfg.dev_max,
                                                 cfg.seed)
        dev_q, dev_g = _prepare_dev(held)
        dev_source = "held_out" if dev_q else "none"
    items = TrainingNames.build(train_concepts)
    uids, item_name, item_concept = items.uids, items.names, items.concept
    n_items = len(items)
    if n_items < 2:
        raise KgnormError("BNE needs at least two training names")
    draws = (HierarchyDraws(items, hierarchy, cfg.siblings_k, cfg.parents_k, cfg.seed)
             if hierarchy is not None and (cfg.siblings_k or cfg.parents_k) else None)
    train_dict = NameDictionary.from_entries(
        ((n, uids[c]) for n, c in zip(item_name, item_concept)), alt_ids=full_dict.alt_ids)

    # targets: q(s) (Option 2) and g(c)
    wd = word_vectors.dim
    if cfg.projection == "identity" and wd != cfg.out_dim:
        raise KgnormError(f"projection='identity' needs word vectors of out_dim={cfg.out_dim} "
                          f"dimensions, they have {wd}")
    use_proj = cfg.projection == "linear" or (cfg.projection == "auto" and wd != cfg.out_dim)
    q_np = l2_rows(word_vectors.average(item_name))
    g_np = prototypes(q_np, item_concept, len(uids))

    chars = build_char_vocab(item_name)
    torch.manual_seed(cfg.seed)
    net = BNE(len(chars), wd, cfg.char_dim, cfg.char_hidden, cfg.word_hidden, cfg.out_dim,
              cfg.dropout, target_dim=wd if use_proj else None)
    model = BneModel(net, word_vectors, chars, train_dict, max_word_len=cfg.max_word_len,
                     device=device)
    batch_data = BatchData(item_name, item_concept, items.name_concepts,
                           torch.from_numpy(q_np).to(model.device),
                           torch.from_numpy(g_np).to(model.device),
                           {"syn": cfg.w_synonym, "con": cfg.w_concept, "ctx": cfg.w_context,
                            "sib": cfg.w_sibling, "par": cfg.w_parent})
    optimizer = torch.optim.Adam(net.parameters(), lr=cfg.learning_rate)

    n_batches = math.ceil(n_items / cfg.batch_size)
    if cfg.max_steps_per_epoch:
        n_batches = min(n_batches, int(cfg.max_steps_per_epoch))
    kv = word_vectors.kv
    fingerprint = hashlib.sha1(json.dumps({
        "config": cfg.fingerprint_dict(), "names": digest(item_name),
        "concepts": digest(uids[c] for c in item_concept), "dev": digest(dev_q),
        "dev_gold": digest("|".join(sorted(g)) for g in dev_g), "chars": digest(chars),
        "wv": [word_vectors.kind, wd, len(kv.index_to_key),
               hashlib.sha1(np.ascontiguousarray(kv.vectors, np.float32).tobytes()).hexdigest()],
        **({"is_a": digest(f"{c}>{p}" for c, p in sorted(draws.view.graph.edges))}
           if draws is not None else {}),
    }, sort_keys=True).encode()).hexdigest()

    epoch, step, evals_since_best = 0, 0, 0
    history: list[dict] = []
    best_acc: float | None = None
    best_epoch: float | None = None
    stopped = False
    resumed_from = None
    ck_path, best_path = ckdir / CHECKPOINT, ckdir / BEST
    if resume and ck_path.is_file():
        ck = load_checkpoint(ck_path, fingerprint)
        net.load_state_dict(ck["model"])
        optimizer.load_state_dict(ck["optimizer"])
        epoch, step = int(ck["epoch"]), int(ck["step"])
        history = list(ck["history"])
        best_acc, best_epoch = ck.get("best_acc"), ck.get("best_epoch")
        evals_since_best = int(ck.get("evals_since_best", 0))
        stopped = bool(ck.get("stopped", False))
        set_rng_state(ck["rng"])
        resumed_from = {"epoch": epoch, "step": step}
    elif not resume:
        for p in (ck_path, best_path):
            if p.exists():
                p.unlink()

    def checkpoint(ep: int, st: int) -> None:
        atomic_save({"fingerprint": fingerprint, "epoch": ep, "step": st,
                      "model": net.state_dict(), "optimizer": optimizer.state_dict(),
                      "history": history, "best_acc": best_acc, "best_epoch": best_epoch,
                      "evals_since_best": evals_since_best, "stopped": stopped,
                      "rng": rng_state()}, ck_path)

    def evaluate(ep_float: float, losses: list[float]) -> None:
        nonlocal best_acc, best_epoch, evals_since_best, stopped
        ep_float = round(float(ep_float), 4)
        rec: dict = {"epoch": ep_float,
                     "loss": float(np.mean(losses)) if losses else None}
        t0 = time.perf_counter()
        if dev_q:
            model.build_index(batch_size=cfg.encode_batch_size)
            rec["dev"] = evaluate_linking(model, dev_q, dev_g, cfg.eval_top_k,
                                          cfg.encode_batch_size)
            acc = rec["dev"]["acc@1"]
            if best_acc is None or acc > best_acc:
                best_acc, best_epoch, evals_since_best = acc, ep_float, 0
                _save_weights(net.state_dict(), best_path)
            else:
                evals_since_best += 1
                if evals_since_best >= cfg.patience:
                    stopped = True
        else:
            best_epoch = ep_float
            _save_weights(net.state_dict(), best_path)
        rec["seconds_eval"] = round(time.perf_counter() - t0, 2)
        history.append(rec)

    ebar = (progress_bar(total=cfg.max_epochs, desc="bne epochs", unit="epoch")
            if progress else None)
    if ebar is not None:
        ebar.update(min(epoch, cfg.max_epochs))
    try:
        while epoch < cfg.max_epochs and not stopped:
            rng = np.random.default_rng(cfg.seed + epoch)
            perm = rng.permutation(n_items)
            syn = epoch_synonyms(items, rng)
            siblings, parents = draws.draw(epoch) if draws is not None else (None, None)
            net.train()
            losses: list[float] = []
            sbar = (progress_bar(total=n_batches, desc=f"epoch {epoch + 1}", unit="batch")
                    if progress else None)
            if sbar is not None:
                sbar.update(step)
            for b in range(step, n_batches):
                sel = perm[b * cfg.batch_size:(b + 1) * cfg.batch_size]
                loss, parts = batch_loss(model, batch_data, sel, syn, siblings, parents)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if cfg.clip and cfg.clip > 0:
                    torch.nn.utils.clip_grad_norm_(net.parameters(), cfg.clip)
                optimizer.step()
                losses.append(float(loss.detach()))
                step = b + 1
                if sbar is not None:
                    sbar.update(1)
                    sbar.set_postfix(loss=f"{losses[-1]:.3f}", **{k: f"{v:.3f}"
                                                                  for k, v in parts.items()})
                if (cfg.eval_every_steps and step % cfg.eval_every_steps == 0
                        and step < n_batches):
                    evaluate(epoch + step / n_batches, losses[-cfg.eval_every_steps:])
                    net.train()
                    checkpoint(epoch, step)
                    if stopped:
                        break
                elif (cfg.checkpoint_every_steps and step % cfg.checkpoint_every_steps == 0
                      and step < n_batches):
                    checkpoint(epoch, step)
            if sbar is not None:
                sbar.close()
            if stopped:
                break
            evaluate(epoch + 1.0, losses)
            epoch += 1
            step = 0
            checkpoint(epoch, 0)
            if ebar is not None:
                ebar.update(1)
                ebar.set_postfix(loss=history[-1]["loss"],
                                 dev=(history[-1].get("dev") or {}).get("acc@1"))
    finally:
        if ebar is not None:
            ebar.close()

    # final model: best weights, every name of the input indexed
    from safetensors.torch import load_file

    if best_path.is_file():
        net.load_state_dict(load_file(str(best_path)))
    net.eval()
    model.set_dictionary(full_dict)
    model.build_index(batch_size=cfg.encode_batch_size, progress=progress)
    model.save(out, hyper_parameters=cfg.to_dict(), ontology=ontology,
               metrics={"best_epoch": best_epoch,
                        **({"dev": next((h["dev"] for h in history
                                         if h["epoch"] == best_epoch and "dev" in h), None)}
                           if dev_q else {})},
               extra={"training": {"n_train_names": n_items, "n_concepts": len(uids),
                                   "n_dev": len(dev_q), "dev_source": dev_source,
                                   "target_projection": "linear" if use_proj else "identity",
                                   **(draws.coverage() if draws is not None else {}),
                                   "stopped_early": stopped, "history": history}})
    final = load_bne(out, device=str(model.device))
    return BneTrainResult(out_dir=out, model=final, best_epoch=best_epoch,
                          best_dev_acc1=best_acc, epochs_completed=epoch,
                          stopped_early=stopped, dev_source=dev_source,
                          n_train_names=n_items, n_dev=len(dev_q), history=history,
                          resumed_from=resumed_from,
                          train_seconds=time.perf_counter() - t_start)

