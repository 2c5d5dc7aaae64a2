"""Self-alignment pretraining of a name encoder on ontology synonyms (SapBERT's recipe,
Liu et al. 2021), optionally with a hierarchy term (CODER's idea of using the graph's relations).

Each step draws ``concepts_per_batch`` concepts × ``names_per_concept`` of their names (the
BioCoM :class:`~kgnorm.samplers.concept_batch.ConceptBatchSampler`: every name about once per epoch,
a resumed run replays the same batches), encodes them with length bucketing (each bucket of
``bucket`` names padded only to its own longest name: names are short, one long one would
otherwise set the width of the whole batch) and minimises the Multi-Similarity loss with
online hard-pair mining (:mod:`kgnorm.losses.multi_similarity`; SapBERT's α 1, β 60, λ 0.5, ε 0.2) with AdamW.

Hierarchy term (``hierarchy=True``): for one name of each concept of the batch, a name of a
direct parent (drawn with the shared :class:`~kgnorm.samplers.parents.ParentPositiveSampler`
pools) is a *weaker* positive: ``weight · mean(relu(margin − cos(name, parent name)))``. It
pulls a concept towards its parent only up to ``margin``, while the MS loss keeps its own
synonyms above λ.

Output: a plain Hugging Face encoder directory (``save_pretrained`` model and tokenizer) that
every ``--encoder`` option takes, plus ``kgnorm-pretrain.json`` (ontologies, settings, loss
history). Steps, budgets and checkpoints are the shared
:class:`~kgnorm.training.loop.TrainingLoop`'s (step budget: ``max_steps``, and ``max_seconds``
of optimisation time). Checkpoints (``checkpoints/last.pt``: weights, optimizer,
position, RNG) are written every ``checkpoint_steps`` steps, after every epoch and at the
stop; a run stopped by its budget keeps its checkpoint so that ``resume`` with a larger
budget continues it, a finished one deletes it. Resuming with other ontologies, another
encoder or other settings is refused before anything is written.
"""
from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import torch

from kgnorm.errors import KgnormError
from kgnorm.losses.multi_similarity import ms_loss
from kgnorm.samplers.concept_batch import ConceptBatchSampler
from kgnorm.training.checkpoints import ResumableConfig
from kgnorm.training.loop import CHECKPOINT, LoopConfig, TrainingLoop, TrainResult, checkpoint_fingerprint
from kgnorm.training.task import TrainingTask

from .data import PretrainData
from .recipe import Options

__all__ = ["PretrainConfig", "TrainResult", "pretrain_encoder", "META_FILE"]

META_FILE = "kgnorm-pretrain.json"


@dataclass
class PretrainConfig(ResumableConfig):
    """The defaults of what `kgnorm pretrain` exposes are its options' (recipe.Options)."""

    concepts_per_batch: int = Options.concepts_per_batch
    names_per_concept: int = Options.names_per_concept
    alpha: float = 1.0
    beta: float = 60.0
    lam: float = 0.5
    epsilon: float = 0.2
    lr: float = Options.lr
    weight_decay: float = 0.01
    grad_clip: float | None = 1.0
    pooling: str = Options.pooling
    max_length: int = Options.max_length
    bucket: int = 32
    hierarchy: bool = Options.hierarchy
    hierarchy_weight: float = 1.0
    hierarchy_margin: float = Options.hierarchy_margin
    epochs: int = Options.epochs
    max_steps: int | None = None
    max_seconds: float | None = None
    checkpoint_steps: int = Options.checkpoint_steps
    keep_checkpoint: bool = False
    log_steps: int = 50
    seed: int = Options.seed
    device: str | None = None

    _RESUMABLE = ("epochs", "max_steps", "max_seconds", "checkpoint_steps", "keep_checkpoint",
                  "log_steps", "device")

    def check(self) -> None:
        if self.concepts_per_batch < 2:
            raise KgnormError(f"concepts per batch must be >= 2 (negatives), got {self.concepts_per_batch}")
        if self.names_per_concept < 2:
            raise KgnormError(f"names per concept must be >= 2 (a positive), got {self.names_per_concept}")
        if self.pooling not in ("mean", "cls"):
            raise KgnormError(f"pooling must be mean or cls, got {self.pooling!r}")
        if self.epochs < 1 or self.bucket < 1 or self.max_length < 2:
            raise KgnormError("epochs and bucket must be >= 1, max_length >= 2")
        if self.max_seconds is not None and self.max_seconds <= 0:
            raise KgnormError(f"the time budget must be positive, got {self.max_seconds} s")
        if not self.lr > 0:
            raise KgnormError(f"learning rate must be > 0, got {self.lr}")


def _fingerprint(data: PretrainData, cfg: PretrainConfig, encoder: str) -> dict:
    return {"data": data.fingerprint(), "config": cfg.fingerprint_dict(), "encoder": encoder}


def _check_out(out: Path, data: PretrainData, cfg: PretrainConfig, encoder: str, resume: bool) -> dict | None:
    """The checkpoint to resume from (None: start fresh); refuses, before anything is written,
    a checkpoint for other ontologies/encoder/settings and a directory that is not ours."""
    if out.exists() and not out.is_dir():
        raise KgnormError(f"--out {out} exists and is not a directory")
    ours = (out / META_FILE).is_file() or (out / CHECKPOINT).is_file()
    if out.is_dir() and any(out.iterdir()) and not ours:
        raise KgnormError(f"--out {out} is not empty and holds no pretraining run; choose another directory")
    if not resume or not (out / CHECKPOINT).is_file():
        if resume and (out / META_FILE).is_file():
            raise KgnormError(f"{out} already holds a finished pretrained encoder; use another --out "
                              "or --no-resume to replace it")
        return None
    try:
        ck = torch.load(out / CHECKPOINT, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - corrupt file
        raise KgnormError(f"{out / CHECKPOINT}: unreadable checkpoint ({e}); use --no-resume") from None
    had = [o["name"] for o in ck.get("ontologies", [])]
    want = [o["name"] for o in data.ontologies]
    if had != want:
        raise KgnormError(f"{out} holds a run on ontologies {', '.join(had)}, not {', '.join(want)}: resume it "
                          "with those, or start over with --no-resume or another --out")
    if ck.get("encoder") != encoder:
        raise KgnormError(f"{out} holds a run from encoder {ck.get('encoder')}, not {encoder}: resume it with "
                          "that --encoder, or start over with --no-resume or another --out")
    if ck.get("fingerprint") != checkpoint_fingerprint(_fingerprint(data, cfg, encoder)):
        raise KgnormError(f"{out} holds a run with other settings or other ontology contents; resume it with "
                          "the same ones, or start over with --no-resume or another --out")
    return ck


def _parent_names(data: PretrainData, rows: list[int], rng: np.random.Generator,
                  samplers: dict) -> tuple[list[int], list[str]]:
    """(anchor row, parent name) for the first name of each concept of a batch that has a parent."""
    anchors, parents, seen = [], [], set()
    for r in rows:
        ci = data.labels[r]
        if ci in seen:
            continue
        seen.add(ci)
        onto, uid = data.concepts[ci]
        pool = samplers[onto].pool(uid) if onto in samplers else []
        if pool:
            anchors.append(r)
            parents.append(pool[int(rng.integers(len(pool)))][0])
    return anchors, parents


class PretrainTask(TrainingTask):
    """Pretraining's part of the loop: the concept batches of an epoch, the Multi-Similarity
    step (plus the hierarchy term) and the log of loss and mining per ``log_steps`` steps."""

    def __init__(self, enc, data: PretrainData, cfg: PretrainConfig, samplers: dict, enc_id: str,
                 on_log: Callable[[dict], None] | None) -> None:
        self.enc, self.data, self.cfg, self.samplers, self.enc_id = enc, data, cfg, samplers, enc_id
        self.on_log = on_log
        self.sampler = ConceptBatchSampler(data.groups, cfg.concepts_per_batch, cfg.names_per_concept,
                                           cfg.seed)
        self.module = enc.model
        self.optimizer = torch.optim.AdamW([p for p in enc.model.parameters() if p.requires_grad], lr=cfg.lr,
                                           weight_decay=cfg.weight_decay)
        self.clip_norm = cfg.grad_clip or None
        self._t0 = 0.0
        self._parts = (0, 0, 0, 0.0, 0)
        self.labels = torch.tensor(data.labels)
        self.plan: list = []
        self.epoch = self.steps = 0
        self.elapsed = 0.0
        self.log: list[dict] = []
        self.window: list[tuple[float, int, int, int, float, int]] = []

    def start_epoch(self, epoch: int, saved: dict | None) -> int:
        self.epoch = epoch
        self.sampler.set_epoch(epoch)
        self.plan = self.sampler.plan()
        self.enc.model.train()
        return len(self.plan)

    def _hierarchy_term(self, rows: list[int], emb: torch.Tensor, step: int) -> tuple[torch.Tensor | None, int]:
        cfg = self.cfg
        rng = np.random.default_rng([cfg.seed, self.epoch, step])
        anchors, parent_names = _parent_names(self.data, rows, rng, self.samplers)
        if not anchors:
            return None, 0
        pos = {r: i for i, r in enumerate(rows)}
        a = torch.nn.functional.normalize(emb[[pos[r] for r in anchors]], dim=-1)
        p = torch.nn.functional.normalize(self.enc.embed_bucketed(parent_names, cfg.bucket), dim=-1)
        return torch.relu(cfg.hierarchy_margin - (a * p).sum(-1)).mean(), len(anchors)

    def loss(self, step: int) -> torch.Tensor:
        cfg = self.cfg
        self._t0 = time.perf_counter()
        rows = self.plan[step]
        emb = self.enc.embed_bucketed([self.data.names[r] for r in rows], bucket=cfg.bucket)
        loss, stats = ms_loss(emb, self.labels[rows].to(emb.device), cfg.alpha, cfg.beta, cfg.lam,
                              cfg.epsilon, mining=True)
        h_loss, h_pairs = 0.0, 0
        if self.samplers:
            term, h_pairs = self._hierarchy_term(rows, emb, step)
            if term is not None:
                loss = loss + cfg.hierarchy_weight * term
                h_loss = float(term.detach())
        self._parts = (stats.anchors, stats.positives, stats.negatives, h_loss, h_pairs)
        return loss

    def after_step(self, step: int, loss: float) -> None:
        self.steps += 1
        self.elapsed += time.perf_counter() - self._t0
        self.window.append((loss, *self._parts))
        if len(self.window) >= self.cfg.log_steps or step + 1 == len(self.plan):
            self._log()

    def _log(self) -> None:
        w = np.array(self.window)
        rec = {"step": self.steps, "epoch": self.epoch, "loss": float(w[:, 0].mean()),
               "anchors": float(w[:, 1].mean()), "positive_pairs": float(w[:, 2].mean()),
               "negative_pairs": float(w[:, 3].mean()), "seconds": round(self.elapsed, 1)}
        if self.samplers:
            rec["hierarchy_loss"] = float(w[:, 4].mean())
            rec["parent_pairs"] = float(w[:, 5].mean())
        self.log.append(rec)
        self.window = []
        if self.on_log is not None:
            self.on_log(rec)

    def state_dict(self) -> dict:
        return {**super().state_dict(), "ontologies": self.data.ontologies, "encoder": self.enc_id, "log": self.log,
                "task_steps": self.steps, "task_elapsed": self.elapsed}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.log = list(state["log"])
        self.steps, self.elapsed = int(state["task_steps"]), float(state["task_elapsed"])


def pretrain_encoder(data: PretrainData, out_dir: str | Path, encoder: str | Path | None = None,
                     config: PretrainConfig | None = None, resume: bool = True, progress: bool = False,
                     on_log: Callable[[dict], None] | None = None) -> TrainResult:
    """Pretrain ``encoder`` (default: the offline MiniLM) on ``data`` and write it to ``out_dir``."""
    from kgnorm.encoders.dense import DenseEncoder, default_encoder_path
    from kgnorm.samplers.parents import ParentPositiveSampler

    cfg = config or PretrainConfig()
    cfg.check()
    if cfg.hierarchy and not data.hierarchies:
        raise KgnormError("the hierarchy term needs data built with with_hierarchy=True")
    if len(data.groups) < cfg.concepts_per_batch:
        counts = "; ".join(f"{o['name']}: {o['multi_name_concepts']}" for o in data.ontologies)
        raise KgnormError(f"too few concepts with two or more distinct names to form batches ({counts}); "
                          f"a batch takes {cfg.concepts_per_batch} (lower the concepts per batch)")
    out = Path(out_dir)
    enc_path = Path(encoder) if encoder is not None else default_encoder_path()
    enc_id = str(enc_path.resolve())
    _check_out(out, data, cfg, enc_id, resume)
    enc = DenseEncoder(enc_path, pooling=cfg.pooling, max_length=cfg.max_length, device=cfg.device)
    loop = TrainingLoop(LoopConfig(
        epochs=cfg.epochs, name="pretrain", budget="step", max_steps=cfg.max_steps,
        max_seconds=cfg.max_seconds, checkpoint_every_steps=cfg.checkpoint_steps or None,
        step_seed=cfg.seed, seed=cfg.seed, progress=progress), out, resume=resume)
    samplers = ({o: ParentPositiveSampler(h, items=[], seed=cfg.seed) for o, h in data.hierarchies.items()}
                if cfg.hierarchy else {})
    task = PretrainTask(enc, data, cfg, samplers, enc_id, on_log)
    res = loop.run(task, _fingerprint(data, cfg, enc_id))
    complete = res.epochs_completed >= cfg.epochs
    enc.model.eval()
    enc.save(out)
    meta = {"method": "pretrain", "recipe": "Multi-Similarity self-alignment on ontology synonyms (SapBERT)",
            "base_encoder": enc_id, "pooling": cfg.pooling, "max_length": cfg.max_length,
            "ontologies": data.ontologies, "concepts": len(data.groups), "names": len(data.names),
            "config": asdict(cfg), "steps": res.global_step, "epochs_completed": res.epochs_completed,
            "complete": complete, "train_seconds": round(res.elapsed, 1), "history": task.log,
            "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    tmp = out / (META_FILE + ".tmp")
    tmp.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    tmp.replace(out / META_FILE)
    if complete and not cfg.keep_checkpoint:
        shutil.rmtree(out / CHECKPOINT.parent, ignore_errors=True)
    res.info = {"log": task.log}   # per log interval: step, loss, mining
    return res
