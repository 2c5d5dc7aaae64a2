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

Epochs, early stopping, checkpoints, resume, the time budget ``max_seconds`` and progress are
the shared :class:`~kgnorm.training.loop.TrainingLoop`'s (:class:`BneTask` supplies the epoch's
draws, the step and dev Acc@1). Checkpoints: ``out_dir/checkpoints/last.pt`` (weights,
optimizer, position, history, early-stopping state, RNG) after every evaluation and every
``checkpoint_every_steps`` steps; ``checkpoints/best.safetensors`` holds the best weights so
far. ``resume=True`` continues an interrupted run with the same data and settings (a
different fingerprint, or a checkpoint of the trainer before the shared loop, is refused);
the epoch's order is a function of ``seed + epoch``, so resumed runs see the same batches.
"""
from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
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
from kgnorm.training.checkpoints import ResumableConfig, digest
from kgnorm.training.loop import LoopConfig, TrainingLoop, TrainResult
from kgnorm.training.task import TrainingTask

__all__ = ["BneConfig", "TrainResult", "BneTask", "train_bne", "logistic_inbatch_loss",
           "inbatch_scores", "hold_out_synonyms", "prototypes", "load_bne", "evaluate_linking"]

BEST = "best.safetensors"
PROJECTIONS = ("auto", "identity", "linear")


@dataclass
class BneConfig(ResumableConfig):
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
    max_seconds: float | None = None  # time budget: no epoch expected to end past it
    eval_every_steps: int | None = None
    dev_fraction: float = 0.05
    dev_max: int = 1000
    eval_top_k: int = 5
    max_steps_per_epoch: int | None = None
    checkpoint_every_steps: int | None = None
    encode_batch_size: int = 512
    seed: int = 0

    # the stopping rules (max_epochs, patience, max_seconds) may change on resume
    _RESUMABLE = ("max_epochs", "patience", "max_seconds", "checkpoint_every_steps",
                  "encode_batch_size")


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
class BneTask(TrainingTask):
    """BNE's part of :class:`~kgnorm.training.loop.TrainingLoop`: the epoch's order, synonyms
    and hierarchy draws (a function of ``seed + epoch``, so nothing per epoch is checkpointed),
    the loss step, dev Acc@1 on the training names' index, and the best weights file (the model
    directory, with every name indexed, is written once at the end)."""

    def __init__(self, model: BneModel, data: BatchData, items: TrainingNames,
                 draws: HierarchyDraws | None, cfg: BneConfig, dev_q: list[str],
                 dev_g: list[frozenset[str]], best_path: Path) -> None:
        self.model, self.net, self.data, self.items, self.draws = model, model.net, data, items, draws
        self.cfg, self.dev_q, self.dev_g, self.best_path = cfg, dev_q, dev_g, best_path
        self.module = self.net
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=cfg.learning_rate)
        self.clip_norm = cfg.clip if cfg.clip and cfg.clip > 0 else None
        self.perm: np.ndarray = np.arange(0)
        self.syn: np.ndarray = np.arange(0)
        self.siblings: list[list[int]] | None = None
        self.parents: list[list[int]] | None = None

    def start_epoch(self, epoch: int, saved: dict | None) -> int:
        rng = np.random.default_rng(self.cfg.seed + epoch)
        self.perm = rng.permutation(len(self.items))
        self.syn = epoch_synonyms(self.items, rng)
        self.siblings, self.parents = (self.draws.draw(epoch) if self.draws is not None
                                       else (None, None))
        return math.ceil(len(self.items) / self.cfg.batch_size)

    def loss(self, step: int) -> torch.Tensor:
        cfg = self.cfg
        self.net.train()  # an evaluation inside the epoch leaves eval mode
        sel = self.perm[step * cfg.batch_size:(step + 1) * cfg.batch_size]
        return batch_loss(self.model, self.data, sel, self.syn, self.siblings, self.parents)[0]

    def evaluate(self) -> dict | None:
        if not self.dev_q:
            return None
        self.model.build_index(batch_size=self.cfg.encode_batch_size)
        return evaluate_linking(self.model, self.dev_q, self.dev_g, self.cfg.eval_top_k,
                                self.cfg.encode_batch_size)

    def save(self, record: dict, history: list[dict]) -> None:
        _save_weights(self.net.state_dict(), self.best_path)


def _begin(loop: TrainingLoop, task: BneTask, fingerprint: dict) -> dict | None:
    """``loop.begin()``, with a checkpoint of the trainer before the shared loop (it has no
    ``global_step``) refused in one line that says how to go on."""
    path = loop.path
    try:
        return loop.begin(task, fingerprint)
    except KgnormError:
        try:
            old = torch.load(path, map_location="cpu", weights_only=True)
        except Exception:  # noqa: BLE001 - unreadable: the loop's message stands
            old = None
        if isinstance(old, dict) and "best_acc" in old and "global_step" not in old:
            raise KgnormError(f"{path} was written by an older kgnorm's BNE trainer and cannot be "
                              "resumed: rerun with --no-resume (resume=False) or another --out") from None
        raise


def train_bne(concepts: NameDictionary | Mapping[str, Sequence[str]],
              word_vectors: WordVectors, out_dir: str | Path,
              dev: Sequence[tuple[str, Iterable[str] | str]] | None = None,
              config: BneConfig | None = None,
              alt_ids: Mapping[str, Iterable[str]] | None = None, resume: bool = True,
              progress: bool = True, ontology: dict | None = None,
              device: str | None = None, hierarchy: Hierarchy | None = None) -> TrainResult:
    """Train a BNE encoder on the synonyms of ``concepts`` and write the selected model
    (with every name of ``concepts`` indexed) to ``out_dir``. ``hierarchy`` (IS_A edges over
    the same uids) is needed when ``siblings_k`` or ``parents_k`` is set."""
    cfg = config or BneConfig()
    _check_config(cfg, hierarchy)
    out = Path(out_dir)
    loop = TrainingLoop(LoopConfig(epochs=cfg.max_epochs, name="bne", max_seconds=cfg.max_seconds,
                                   max_steps_per_epoch=cfg.max_steps_per_epoch,
                                   checkpoint_every_steps=cfg.checkpoint_every_steps,
                                   eval_every_steps=cfg.eval_every_steps, patience=cfg.patience, seed=cfg.seed,
                                   progress=progress), out, resume=resume)
    ckdir = loop.path.parent
    ckdir.mkdir(parents=True, exist_ok=True)

    full_dict = as_name_dictionary(concepts, alt_ids)
    train_concepts, dev_q, dev_g, dev_source = _dev_split(full_dict, dev, cfg)
    items = TrainingNames.build(train_concepts)
    n_items = len(items)
    if n_items < 2:
        raise KgnormError("BNE needs at least two training names")
    draws = (HierarchyDraws(items, hierarchy, cfg.siblings_k, cfg.parents_k, cfg.seed)
             if hierarchy is not None and (cfg.siblings_k or cfg.parents_k) else None)
    chars = build_char_vocab(items.names)
    model, batch_data, use_proj = _build_model(items, full_dict.alt_ids, word_vectors, chars, cfg, device)
    fingerprint = _fingerprint(cfg, items, chars, dev_q, dev_g, word_vectors, draws)

    best_path = ckdir / BEST
    if not resume and best_path.exists():
        best_path.unlink()
    task = BneTask(model, batch_data, items, draws, cfg, dev_q, dev_g, best_path)
    _begin(loop, task, fingerprint)
    res = loop.run(task, fingerprint)
    best_epoch = None if res.best_epoch is None else float(res.best_epoch)

    training = {"n_train_names": n_items, "n_concepts": len(items.uids), "n_dev": len(dev_q),
                "dev_source": dev_source, "target_projection": "linear" if use_proj else "identity",
                **(draws.coverage() if draws is not None else {}),
                "stopped_early": res.stopped_early, "history": res.history}
    _write_model(model, best_path, full_dict, out, cfg, progress, ontology,
                 {"best_epoch": best_epoch, **({"dev": res.best_metrics} if dev_q else {})}, training)
    res.model, res.best_epoch = load_bne(out, device=str(model.device)), best_epoch
    res.info = {"dev_source": dev_source, "n_train_names": n_items, "n_dev": len(dev_q)}  # dev_source: given | held_out | none
    return res


def _check_config(cfg: BneConfig, hierarchy: Hierarchy | None) -> None:
    if (cfg.siblings_k or cfg.parents_k) and hierarchy is None:
        raise KgnormError("BneConfig.siblings_k / parents_k need a hierarchy (the ontology's "
                          "IS_A edges)")
    if cfg.projection not in PROJECTIONS:
        raise KgnormError(f"unknown projection {cfg.projection!r} (choose from "
                          f"{', '.join(PROJECTIONS)})")
    if cfg.batch_size < 2:
        raise KgnormError("BneConfig.batch_size must be at least 2 (in-batch negatives)")


def _dev_split(full_dict: NameDictionary, dev: Sequence[tuple[str, Iterable[str] | str]] | None,
               cfg: BneConfig) -> tuple[dict[str, list[str]], list[str], list[frozenset[str]], str]:
    """The training concepts, the dev queries and golds, and where dev came from: ``given``
    (every name trains), ``held_out`` (a seeded share of the synonyms) or ``none``."""
    all_concepts = concept_names(full_dict, ontology_only=False)
    if dev:
        dev_q, dev_g = _prepare_dev(dev)
        return all_concepts, dev_q, dev_g, "given"
    train_concepts, held = hold_out_synonyms(all_concepts, cfg.dev_fraction, cfg.dev_max, cfg.seed)
    dev_q, dev_g = _prepare_dev(held)
    return train_concepts, dev_q, dev_g, "held_out" if dev_q else "none"


def _build_model(items: TrainingNames, alt_ids: Mapping[str, Iterable[str]], word_vectors: WordVectors,
                 chars: list[str], cfg: BneConfig, device: str | None) -> tuple[BneModel, BatchData, bool]:
    """The untrained model over the training names, its batch targets -- q(s) (Option 2) and
    g(c) -- and whether the targets go through a linear projection."""
    uids, item_name, item_concept = items.uids, items.names, items.concept
    train_dict = NameDictionary.from_entries(
        ((n, uids[c]) for n, c in zip(item_name, item_concept)), alt_ids=alt_ids)
    wd = word_vectors.dim
    if cfg.projection == "identity" and wd != cfg.out_dim:
        raise KgnormError(f"projection='identity' needs word vectors of out_dim={cfg.out_dim} "
                          f"dimensions, they have {wd}")
    use_proj = cfg.projection == "linear" or (cfg.projection == "auto" and wd != cfg.out_dim)
    q_np = l2_rows(word_vectors.average(item_name))
    g_np = prototypes(q_np, item_concept, len(uids))

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
    return model, batch_data, use_proj


def _fingerprint(cfg: BneConfig, items: TrainingNames, chars: list[str], dev_q: list[str],
                 dev_g: list[frozenset[str]], word_vectors: WordVectors,
                 draws: HierarchyDraws | None) -> dict:
    """What must not change across a resume: the settings, the data and the word vectors."""
    kv = word_vectors.kv
    return {
        "config": cfg.fingerprint_dict(), "names": digest(items.names),
        "concepts": digest(items.uids[c] for c in items.concept), "dev": digest(dev_q),
        "dev_gold": digest("|".join(sorted(g)) for g in dev_g), "chars": digest(chars),
        "wv": [word_vectors.kind, word_vectors.dim, len(kv.index_to_key),
               hashlib.sha1(np.ascontiguousarray(kv.vectors, np.float32).tobytes()).hexdigest()],
        **({"is_a": digest(f"{c}>{p}" for c, p in sorted(draws.view.graph.edges))}
           if draws is not None else {}),
    }


def _write_model(model: BneModel, best_path: Path, full_dict: NameDictionary, out: Path, cfg: BneConfig,
                 progress: bool, ontology: dict | None, metrics: dict, training: dict) -> None:
    """The model directory: the selected weights, every name of the input indexed."""
    from safetensors.torch import load_file

    if best_path.is_file():
        model.net.load_state_dict(load_file(str(best_path)))
    model.net.eval()
    model.set_dictionary(full_dict)
    model.build_index(batch_size=cfg.encode_batch_size, progress=progress)
    model.save(out, hyper_parameters=cfg.to_dict(), ontology=ontology, metrics=metrics,
               extra={"training": training})
