"""Training the mention detector on the shared :class:`~kgnorm.training.loop.TrainingLoop`:
annotated texts are cut into the detector's own windows (the very windows inference reads),
labelled BIO from their gold spans, and batched by length; the model is selected on dev
strict-span F1 and written on every improvement.

Optimisation: AdamW (lr 3e-4, batch 8 windows, weight decay 0.01) with a linear warm-up over the first
``warmup_steps`` steps, then a rate falling linearly to 0 where the run ends: the loop's progress, the
tightest of epochs, step cap and time budget (:meth:`~kgnorm.training.loop.TrainingLoop.progress`), so
a CPU run cut by its budget still ends on a low rate. Chosen on dev (benchmarks/LOG.md, "Mention detector:
learning rate and schedule"): at the steps the CPU budget fits, +0.012 dev F1 on both NCBI-disease and
BC5CDR over the former constant 1e-4 (mean of three seeds). ``lr_schedule="constant"`` keeps the rate
after the warm-up. Gradient norm clipped at 1. The time budget is the run's wall clock, dev
evaluations included (``budget="wall"``), so ``train ner --max-minutes M`` ends within M minutes
whatever the dev set costs; one epoch of BC5CDR is a large part of a CPU budget, so the loop stops
inside an epoch and evaluates what it trained rather than skipping an epoch it cannot finish.

Dev evaluations tag on the path ``annotate`` takes on this machine
(:func:`~kgnorm.methods.ner.runtime.resolve_precision`: bf16 autocast where the CPU declares native
bf16, else onnx where onnxruntime is installed, else fp32; onnx and int8, which need a saved
model's export, evaluate in fp32, whose tags onnx gives to 3e-5): the F1 that selects
is the one a user of the model gets here, and a bf16 evaluation is faster (BC5CDR dev: 15-19 s
against 24-32 s).
"""
from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from kgnorm.errors import KgnormError
from kgnorm.evaluation.annotate_eval import strict_span_prf
from kgnorm.methods.ner.model import NerDetector, NerNet, keep_layers
from kgnorm.ner.bio import LabelSet, token_tags
from kgnorm.ner.corpus import AnnotatedText
from kgnorm.training.checkpoints import ResumableConfig, digest
from kgnorm.training.loop import LoopConfig, TrainingLoop, TrainResult
from kgnorm.training.task import TrainingTask

__all__ = ["NerConfig", "build_detector", "train_ner"]

LR_SCHEDULES = ("constant", "linear")


@dataclass
class NerConfig(ResumableConfig):
    crf: bool = False
    dictionary_features: bool = False
    layers: int | None = None         # keep the encoder's first N transformer layers (None: all)
    teacher: str | None = None        # a trained detector to distill (kgnorm.methods.ner.distill)
    init_from: str | None = None      # a trained detector to start from, encoder and head (`kgnorm retrain`)
    distill_alpha: float = 0.5        # weight of the gold tags' loss; the rest goes to the teacher's
    distill_temperature: float = 2.0
    max_length: int = 256             # window in tokens, specials included
    stride: int = 64                  # tokens shared by consecutive windows
    batch_size: int = 8
    learning_rate: float = 3e-4
    weight_decay: float = 0.01
    crf_learning_rate: float = 5e-3   # the CRF's transitions start at random: a faster rate
    warmup_steps: int = 50
    lr_schedule: str = "linear"       # to 0 where the run ends (the loop's progress), or "constant"
    dropout: float = 0.1
    epochs: float = 20                # fractional: a refit of a selection stopped inside an epoch
    seed: int = 0
    max_seconds: float | None = None
    max_steps_per_epoch: int | None = None
    checkpoint_every_seconds: float | None = 300.0
    eval_batch_size: int = 32

    _RESUMABLE = ("epochs", "max_seconds", "checkpoint_every_seconds", "eval_batch_size")


class NerTask(TrainingTask):
    """Windows of the training texts, their BIO tags and dictionary-match tags; dev F1."""

    def __init__(self, detector: NerDetector, train: Sequence[AnnotatedText], dev: Sequence[AnnotatedText] | None,
                 cfg: NerConfig, out: Path, meta: dict, teacher: Any = None) -> None:
        self.det, self.cfg, self.out, self.meta = detector, cfg, out, meta
        texts = [d.text for d in train]
        self.windows = detector.windows(texts)
        self.tags = [known_tags(w.offsets, token_tags(w.offsets, train[w.text_index].spans, detector.labels),
                                train[w.text_index].known) for w in self.windows]
        self.rejected = [rejected_tokens(w.offsets, train[w.text_index].rejected) for w in self.windows]
        if any(d.known is not None for d in train):  # a window of a partly reviewed text with nothing known: no loss
            keep = [i for i, t in enumerate(self.tags) if any(x >= 0 for x in t) or self.rejected[i]]
            self.windows, self.tags = [self.windows[i] for i in keep], [self.tags[i] for i in keep]
            self.rejected = [self.rejected[i] for i in keep]
        self.match = detector.match_tags(texts, self.windows)
        self.soft = None
        if teacher is not None:  # the teacher's emissions of every training window, computed once
            from kgnorm.methods.ner.distill import teacher_emissions

            self.soft = teacher_emissions(teacher, self.windows, cfg.eval_batch_size)
        self.dev = list(dev or [])
        net = detector.net
        crf = [p for n, p in net.named_parameters() if n.startswith("crf.")]
        decay = [p for n, p in net.named_parameters() if not n.startswith("crf.") and p.ndim > 1]
        no_decay = [p for n, p in net.named_parameters() if not n.startswith("crf.") and p.ndim <= 1]
        groups = [{"params": decay, "weight_decay": cfg.weight_decay},
                  {"params": no_decay, "weight_decay": 0.0}]
        if crf:
            groups.append({"params": crf, "weight_decay": 0.0, "lr": cfg.crf_learning_rate})
        self.module = net
        self.optimizer = torch.optim.AdamW(groups, lr=cfg.learning_rate)
        if cfg.lr_schedule not in LR_SCHEDULES:
            raise KgnormError(f"lr schedule must be one of {', '.join(LR_SCHEDULES)}, not {cfg.lr_schedule!r}")
        self.progress: Any = None  # the loop's progress() (train_ner sets it): where a linear decay is
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, self._lr_factor)
        self.clip_norm = 1.0
        self.batches: list[list[int]] = []
        self.steps_done = 0

    def _lr_factor(self, k: int) -> float:
        warm = min(1.0, (k + 1) / max(self.cfg.warmup_steps, 1))
        if self.cfg.lr_schedule == "constant" or self.progress is None:
            return warm
        return warm * max(0.0, 1.0 - self.progress())

    def start_epoch(self, epoch: int, saved: dict | None) -> int:
        """Windows shuffled by the epoch's seed, sorted by length within chunks of 50 batches
        (less padding), the batches shuffled again."""
        rng = random.Random(self.cfg.seed * 7919 + epoch)
        order = list(range(len(self.windows)))
        rng.shuffle(order)
        bs, chunk = self.cfg.batch_size, self.cfg.batch_size * 50
        batches = []
        for k in range(0, len(order), chunk):
            part = sorted(order[k:k + chunk], key=lambda i: len(self.windows[i].input_ids))
            batches.extend(part[j:j + bs] for j in range(0, len(part), bs))
        rng.shuffle(batches)
        self.batches = batches
        self.det.net.train()
        return len(batches)

    def loss(self, step: int) -> torch.Tensor:
        from kgnorm.methods.ner.model import pad_batch

        net = self.det.net
        net.train()
        rows = self.batches[step]
        batch = self.det.tensors(self.windows, self.match, rows)
        tags = pad_batch([self.tags[i] for i in rows], -100).to(self.det.device)
        em = net.emissions(batch["input_ids"], batch["attention_mask"], batch["match_tags"])
        if self.soft is not None:
            from kgnorm.methods.ner.distill import distill_loss

            return distill_loss(em, [self.soft[i] for i in rows], tags, self.cfg.distill_alpha,
                                self.cfg.distill_temperature)
        return net.loss(em, tags, batch["attention_mask"], [self.rejected[i] for i in rows])

    def after_step(self, step: int, loss: float) -> None:
        self.steps_done += 1

    def evaluate(self) -> dict | None:
        if not self.dev:
            return None
        self.det.batch_size = self.cfg.eval_batch_size
        pred = self.det.detect([d.text for d in self.dev])
        scores = strict_span_prf([d.spans for d in self.dev], pred)
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in scores.items()}

    def save(self, record: dict, history: list[dict]) -> None:
        self.det.save(self.out, {**self.meta, "metrics": {"dev": record.get("dev"), "epoch": record["epoch"],
                                                             "steps": self.steps_done},
                                 "history": history})

    def state_dict(self) -> dict:
        return {**super().state_dict(), "steps_done": self.steps_done}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.steps_done = int(state["steps_done"])


def known_tags(offsets: Sequence[tuple[int, int]], tags: list[int],
               known: Sequence[tuple[int, int]] | None) -> list[int]:
    """`tags` with every content token outside the `known` character ranges set to UNKNOWN (a token
    overlapping a known range is known); `known` None: every token is known."""
    if known is None:
        return tags
    from kgnorm.methods.ner.model import UNKNOWN

    ranges = sorted(known)
    out = []
    for (s, e), t in zip(offsets, tags):
        inside = s == e or any(a < e and s < b for a, b in ranges)
        out.append(t if inside else UNKNOWN)
    return out


def rejected_tokens(offsets: Sequence[tuple[int, int]], spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """(first, last) token of each rejected character span lying whole in the window (its
    tokens: those overlapping it); a span cut by the window's edge is left to the other window."""
    out = []
    for a, b in spans:
        toks = [i for i, (s, e) in enumerate(offsets) if s != e and s < b and a < e]
        if toks and offsets[toks[0]][0] <= a and offsets[toks[-1]][1] >= b:
            out.append((toks[0], toks[-1]))
    return out


def _say(rec: dict) -> None:
    """One line per evaluated epoch, also when stderr is not a terminal (long CPU runs)."""
    from kgnorm.progress import note

    dev = rec.get("dev") or {}
    loss = "n/a" if rec.get("loss") is None else f"{rec['loss']:.4f}"
    note(f"ner epoch {rec['epoch']}: loss {loss}, {rec['steps']} steps in {rec['seconds_train']:.0f}s"
         + (f"; dev P/R/F1 {dev['precision']:.4f}/{dev['recall']:.4f}/{dev['f1']:.4f}" if dev else ""))


def _fingerprint(cfg: NerConfig, train: Sequence[AnnotatedText], dev: Sequence[AnnotatedText] | None,
                 labels: LabelSet, encoder: str, names: Sequence[str] | None) -> str:
    def docs(ds):
        return digest(f"{d.doc_id}\x01{d.text}\x01" + ";".join(f"{s.start},{s.end},{s.type}" for s in d.spans)
                      + ("" if d.known is None else "\x01" + ";".join(f"{a},{b}" for a, b in d.known))
                      + ("" if not d.rejected else "\x02" + ";".join(f"{a},{b}" for a, b in d.rejected))
                      for d in ds or [])
    return hashlib.sha1(json.dumps({"config": cfg.fingerprint_dict(), "train": docs(train), "dev": docs(dev),
                                    "tags": labels.tags, "encoder": encoder,
                                    "names": digest(names or [])}, sort_keys=True).encode()).hexdigest()


def build_detector(encoder_dir: str | Path | None, types: Sequence[str], cfg: NerConfig,
                   names: Sequence[str] | None = None, teacher: Any = None, device: str | None = None):
    """(the untrained detector ``cfg`` describes, the encoder it starts from); a checkpoint's
    ``model`` state loads into ``detector.net``. With a `teacher` (distillation) and no
    `encoder_dir`, the student starts from the teacher's encoder and classification head."""
    from kgnorm.encoders.dense import DenseEncoder

    if teacher is not None and encoder_dir is None:
        encoder_dir = Path(cfg.teacher) / "encoder"
    if cfg.init_from is not None:
        encoder_dir = Path(cfg.init_from) / "encoder"
    base = DenseEncoder(encoder_dir, max_length=cfg.max_length)
    if cfg.layers is not None:
        keep_layers(base.model, cfg.layers)
    labels = LabelSet(tuple(types))
    net = NerNet(base.model, len(labels), cfg.crf, cfg.dictionary_features, cfg.dropout)
    if teacher is not None:
        if base.tokenizer.get_vocab() != teacher.tokenizer.get_vocab():
            raise KgnormError("--teacher: the student's encoder must share the teacher's vocabulary")
        if Path(encoder_dir).resolve() == (Path(cfg.teacher) / "encoder").resolve():
            net.classifier.load_state_dict(teacher.net.classifier.state_dict())
    if cfg.init_from is not None:  # warm start: the trained head too (its tags are `types`, in order)
        from kgnorm.methods.ner.model import HEAD_FILE

        net.load_state_dict(torch.load(Path(cfg.init_from) / HEAD_FILE, map_location="cpu", weights_only=True),
                            strict=False)
    det = NerDetector(net, base.tokenizer, labels, cfg.max_length, cfg.stride,
                      names if cfg.dictionary_features else None, cfg.eval_batch_size, device=device or "cpu")
    return det, base


def train_ner(train: Sequence[AnnotatedText], dev: Sequence[AnnotatedText] | None, out_dir: str | Path,
              types: Sequence[str], encoder_dir: str | Path | None = None, config: NerConfig | None = None,
              names: Sequence[str] | None = None, resume: bool = True, progress: bool = True,
              meta: dict | None = None, device: str | None = None) -> TrainResult:
    """Train a detector of ``types`` on ``train`` (select on ``dev`` strict-span F1) into
    ``out_dir``; ``names``: the dictionary for ``config.dictionary_features``; ``device``: a torch
    device to train on (default the CPU; the saved detector loads on the CPU either way)."""
    cfg = config or NerConfig()
    if cfg.dictionary_features and not names:
        raise KgnormError("dictionary features need an ontology's names (--ontology)")
    if not types:
        raise KgnormError("no entity type to train on")
    out = Path(out_dir)
    loop = TrainingLoop(LoopConfig(epochs=cfg.epochs, name="ner", metric="f1", max_seconds=cfg.max_seconds,
                                   budget="wall", max_steps_per_epoch=cfg.max_steps_per_epoch,
                                   checkpoint_every_seconds=cfg.checkpoint_every_seconds, epoch_seed=cfg.seed,
                                   step_seed=cfg.seed, seed=cfg.seed, progress=progress),
                        out, resume=resume, on_record=_say if progress else None)
    teacher = None
    if cfg.teacher is not None:
        from kgnorm.methods.ner.distill import load_teacher

        teacher = load_teacher(cfg.teacher, types)
    det, base = build_detector(encoder_dir, types, cfg, names, teacher, device)
    dev_precision = "fp32"
    if det.device.type == "cpu":
        from kgnorm.methods.ner.runtime import make_emissions, resolve_precision

        dev_precision = "bf16" if resolve_precision() == "bf16" else "fp32"
        det.run = make_emissions(det.net, dev_precision)
    labels = det.labels
    meta = {**(meta or {}), "base_encoder": base.base, "dev_precision": dev_precision,
            "hyper_parameters": cfg.to_dict(), "train_documents": len(train),
            "dev_documents": len(dev or [])}
    task = NerTask(det, train, dev, cfg, out, meta, teacher)
    if not any(t >= 1 for tags in task.tags for t in tags):
        raise KgnormError("no training document has a mention of the chosen types")
    if cfg.epochs != int(cfg.epochs):  # so many epochs' worth of steps (ceil(windows / batch) per epoch)
        per_epoch = math.ceil(len(task.windows) / cfg.batch_size)
        per_epoch = min(per_epoch, cfg.max_steps_per_epoch or per_epoch)
        loop.cfg.epochs, loop.cfg.max_steps = math.ceil(cfg.epochs), max(1, round(cfg.epochs * per_epoch))
    task.progress = loop.progress
    fingerprint = _fingerprint(cfg, train, dev, labels, base.base, names if cfg.dictionary_features else None)
    res = loop.run(task, fingerprint)
    res.info.update({"windows": len(task.windows)})
    return res
