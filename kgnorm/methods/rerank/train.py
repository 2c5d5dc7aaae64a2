"""Training the reranker on the linker's own candidates (hard negatives), on the shared loop.

A training group is one mention part: its first segment, the linker's top-k concepts (their
names and the linker's scores) and which of them are gold. The reranker is residual: a candidate's
score is the linker's score plus the cross-encoder's, so an untrained head leaves the linker's
order and training learns corrections to it. The loss is listwise: the softmax over a group's
scores should put its mass on the gold candidates (-log of their summed probability). A group whose
gold the linker missed gets the gold concept's name added, so it still teaches. Dev selection:
Acc@1 of the reranked list over the dev parts (a part whose gold is not in the top-k counts as a
miss), the starting model ("epoch 0": the linker's own order, near enough) included.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

import torch

from kgnorm.methods.rerank.model import CrossScorer
from kgnorm.training.loop import LoopConfig, TrainingLoop
from kgnorm.training.task import TrainingTask

__all__ = ["Group", "RerankConfig", "RerankResult", "train_rerank", "reranked_acc1"]


@dataclass
class Group:
    """One query and its candidates: names, and whether each is a gold concept."""

    first: str
    names: list[str]
    gold: list[bool]
    priors: list[float]            # the linker's scores


@dataclass
class RerankConfig:
    epochs: int = 2
    batch_groups: int = 8          # groups per step
    train_candidates: int = 8      # gold + the hardest negatives per group, per step
    learning_rate: float = 2e-5
    weight_decay: float = 0.01
    seed: int = 0
    max_seconds: float | None = None
    max_steps_per_epoch: int | None = None


@dataclass
class RerankResult:
    best_epoch: float | None
    best_dev_acc1: float | None
    linker_dev_acc1: float | None
    epochs_completed: int
    history: list[dict] = field(default_factory=list)
    stop_reason: str = "epochs"


def reranked_acc1(scorer: CrossScorer, groups: list[Group]) -> float:
    """Share of groups whose best-scored candidate is gold."""
    flat = [(g.first, n) for g in groups for n in g.names]
    scores = iter(scorer.score([a for a, _ in flat], [b for _, b in flat]))
    right = 0
    for g in groups:
        s = [next(scores) + p for p in g.priors]
        right += bool(s) and g.gold[max(range(len(s)), key=lambda i: (s[i], -i))]
    return right / len(groups) if groups else float("nan")


def _listwise_loss(scores: torch.Tensor, gold: torch.Tensor) -> torch.Tensor:
    logp = torch.log_softmax(scores, dim=-1)
    return -(torch.logsumexp(logp.masked_fill(~gold, float("-inf")), dim=-1)).mean()


class RerankTask(TrainingTask):
    def __init__(self, scorer: CrossScorer, train: list[Group], dev: list[Group], out: Path,
                 cfg: RerankConfig, save_meta) -> None:
        self.scorer, self.train, self.dev, self.out, self.cfg = scorer, train, dev, out, cfg
        self.save_meta = save_meta
        self.module = scorer.model
        self.optimizer = torch.optim.AdamW(scorer.model.parameters(), lr=cfg.learning_rate,
                                           weight_decay=cfg.weight_decay)
        self.clip_norm = 1.0
        self.order: list[int] = []

    def start_epoch(self, epoch: int, saved: dict | None) -> int:
        self.order = list(range(len(self.train)))
        random.Random(self.cfg.seed * 1009 + epoch).shuffle(self.order)
        self.scorer.model.train()
        return (len(self.order) + self.cfg.batch_groups - 1) // self.cfg.batch_groups

    def _trim(self, g: Group) -> tuple[list[str], list[bool], list[float]]:
        """The gold candidates first seen, then the hardest (top-ranked) negatives."""
        k = self.cfg.train_candidates
        pos = [i for i, y in enumerate(g.gold) if y][:1]
        neg = [i for i, y in enumerate(g.gold) if not y][:max(1, k - len(pos))]
        keep = sorted(pos + neg)
        return [g.names[i] for i in keep], [g.gold[i] for i in keep], [g.priors[i] for i in keep]

    def loss(self, step: int) -> torch.Tensor | None:
        b = self.cfg.batch_groups
        groups = [self.train[i] for i in self.order[step * b:(step + 1) * b]]
        trimmed = [self._trim(g) for g in groups]
        trimmed = [(g, t) for g, t in zip(groups, trimmed) if any(t[1]) and not all(t[1])]
        if not trimmed:
            return None
        width = max(len(t[0]) for _, t in trimmed)
        firsts, names, gold, mask, priors = [], [], [], [], []
        for g, (ns, ys, ps) in trimmed:
            pad = width - len(ns)
            firsts += [g.first] * width
            names += ns + [ns[0]] * pad
            gold.append(ys + [False] * pad)
            mask.append([True] * len(ns) + [False] * pad)
            priors.append(ps + [0.0] * pad)
        scores = self.scorer.forward(firsts, names).view(len(trimmed), width) + torch.tensor(priors)
        scores = scores.masked_fill(~torch.tensor(mask), float("-inf"))
        return _listwise_loss(scores, torch.tensor(gold))

    def evaluate(self) -> dict | None:
        if not self.dev:
            return None
        self.scorer.clear_cache()
        acc = reranked_acc1(self.scorer, self.dev)
        self.scorer.clear_cache()
        self.scorer.model.train()
        return {"acc@1": acc}

    def save(self, record: dict, history: list[dict]) -> None:
        self.scorer.save(self.out)
        self.save_meta(record, history)


def train_rerank(scorer: CrossScorer, train: list[Group], dev: list[Group], out: Path, cfg: RerankConfig,
                 fingerprint: str, save_meta, resume: bool = True, progress: bool = True,
                 on_epoch=None) -> RerankResult:
    """Train with :class:`TrainingLoop`; ``save_meta(record, history)`` writes the directory's
    metadata whenever a better epoch is saved."""
    linker_acc = (sum(g.gold[0] for g in dev if g.gold) / len(dev)) if dev else None
    loop = TrainingLoop(LoopConfig(epochs=cfg.epochs, name="rerank", max_seconds=cfg.max_seconds,
                                   max_steps_per_epoch=cfg.max_steps_per_epoch, epoch_seed=cfg.seed,
                                   eval_initial=bool(dev), progress=progress),
                        out, resume=resume, on_record=on_epoch)
    res = loop.run(RerankTask(scorer, train, dev, out, cfg, save_meta), fingerprint)
    return RerankResult(res.best_epoch, res.best_value, linker_acc, res.epochs_completed, res.history,
                        res.stop_reason)
