"""DILBERT training (Miftahutdinov, Kadurin, Kudrin & Tutubalina 2021, "Drug and disease
interpretation learning with biomedical entity representation transformer"), resumable.

Encoder: a Hugging Face transformer with mean pooling (:class:`DenseEncoder`). Loss: the
triplet loss ``mean(max(0, d(a, p) - d(a, n) + margin))`` with ``d`` the Euclidean
distance of the pooled vectors (margin 1) or, with ``distance="cosine"``, ``1 - cos``.

Per training mention (normalized query, gold uids) and epoch (:class:`DilbertSampler`,
seeded with ``seed + epoch``):

* positives: up to ``max_positives`` (30) dictionary names whose row carries a gold uid
  (or an alt id of one), other than the query text itself, drawn at random when there are
  more;
* negatives (``n_negatives`` = 5) by ``strategy``:

  - ``random``: names of other concepts, uniformly
    (:class:`~kgnorm.samplers.random.RandomNegativeSampler`);
  - ``random+parents``: as ``random``, plus ``k_parents`` names of the gold concept's
    direct parents added as *positives* (:class:`~kgnorm.samplers.parents.ParentPositiveSampler`);
    random negatives then also avoid the gold concept's ancestors and descendants;
  - ``resampling``: hard negatives -- the names the current model ranks above the first
    gold name (FAISS top ``resample_depth`` over the current name embeddings, re-encoded
    and re-indexed every epoch), hardest first; when fewer than ``n_negatives`` outrank
    the gold, the next-ranked non-gold names, then random names fill up;
  - ``resampling+siblings``: as ``resampling``, plus ``k_siblings`` names of sibling
    concepts (sharing a parent) as extra negatives
    (:class:`~kgnorm.samplers.siblings.SiblingNegativeSampler`).

  A negative never is a name whose dictionary row carries a gold uid (checked after every
  sampler). Parents and siblings come from a :class:`~kgnorm.graph.hierarchy.Hierarchy`; its
  graph is used with the dictionary's (normalized) names.
* triplets: ``pairing="product"`` crosses every positive with every negative (up to 30 x 5
  per mention, the DILBERT data layout); ``"cycle"`` pairs positive i with negative
  ``i mod n_neg`` (one triplet per positive), for small budgets. ``batching="shuffled"``
  shuffles all the epoch's triplets (the paper's data loader); ``"mention"`` shuffles the
  mentions and keeps each mention's (shuffled) triplets consecutive, so a batch holds the
  triplets of two or three mentions and far fewer distinct texts to encode -- the same
  triplets and loss, several times fewer encoder passes per step on a CPU.

Synonym anchors (``synonym_anchors`` = N, default 0; :func:`synonym_anchor_pairs`): N
dictionary names join the training mentions as queries, one name each of N seeded concepts
that have another name, so the triplets also pull the ontology's own synonyms together
(self-alignment, as SapBERT) for concepts the training mentions never reach. With MiniLM on
BC5CDR-disease, 5,000 MEDIC anchors lowered dev refined Acc@1 from 0.736 to 0.653
(benchmarks/LOG.md), hence off by default.

Mining (:func:`triplet_loss`): ``"all"`` triplets count (the paper) or only ``"semi-hard"``
ones (negative farther than the positive). With MiniLM and the resampled (hardest)
negatives, ``"all"`` shrank the pooled vectors (mean norm 6.9 -> 1.3 in one BC5CDR epoch);
``"semi-hard"`` does not shrink them (7.4 after 300 steps). After one epoch both were still
below the untrained encoder's dev accuracy (benchmarks/LOG.md).

Optimisation: Adam (lr 1e-5), batch 48 triplets; texts repeated within a batch are
encoded once per step. Dev selection: Acc@1 of :meth:`DilbertModel.link` on the dev
queries after every epoch; the best model is written to ``out_dir`` (model directory with
names and index). Without dev the last epoch's model is written. With dev, the starting
encoder is a candidate too (``eval_initial``, "epoch 0"): fine-tuning that makes the dev
accuracy worse -- which happened with MiniLM (benchmarks/LOG.md) -- then writes the starting
encoder instead, and ``best_epoch == 0`` says so.

Epochs, checkpoints, resume and dev selection are the shared
:class:`~kgnorm.training.loop.TrainingLoop`'s (:class:`DilbertTask` supplies the triplets,
the step, the index and dev Acc@1). Checkpoints: ``out_dir/checkpoints/last.pt`` after every
epoch and every ``checkpoint_every_steps`` steps (weights, optimizer, position, the epoch's
triplets, history, RNG); ``resume=True`` continues; a checkpoint of other data or settings
is refused. Same seed and same data give the same run.
"""
from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from kgnorm.encoders.dense import DenseEncoder
from kgnorm.errors import KgnormError
from kgnorm.graph.hierarchy import Hierarchy
from kgnorm.linking.dictionary import NameDictionary
from kgnorm.methods.bne.model import as_name_dictionary
from kgnorm.losses.triplet import DISTANCES, MININGS, triplet_loss
from kgnorm.methods.dilbert.model import DilbertModel, load_dilbert
from kgnorm.methods.model_dir import selected_model
from kgnorm.training.checkpoints import ResumableConfig, digest
from kgnorm.training.loop import LoopConfig, TrainingLoop, TrainResult
from kgnorm.training.task import TrainingTask
from kgnorm.training.queries import DevQueries, prepare_queries, query_fingerprint
from kgnorm.methods.dilbert.sampling import (BATCHINGS, PAIRINGS, STRATEGIES, DilbertSampler,
                                              MentionSample, check_strategy, make_triplets)

__all__ = ["STRATEGIES", "PAIRINGS", "BATCHINGS", "MININGS", "DilbertConfig", "TrainResult",
           "DilbertSampler", "MentionSample", "triplet_loss", "make_triplets", "synonym_anchor_pairs",
           "train_dilbert", "load_dilbert"]



@dataclass
class DilbertConfig(ResumableConfig):
    strategy: str = "random"
    max_positives: int = 30
    n_negatives: int = 5
    k_parents: int = 1
    k_siblings: int = 1
    resample_depth: int = 50
    pairing: str = "product"
    batching: str = "shuffled"
    mining: str = "all"
    margin: float = 1.0
    distance: str = "euclidean"
    learning_rate: float = 1e-5
    weight_decay: float = 0.0
    batch_size: int = 48
    epochs: int = 1
    max_length: int | None = None          # None keeps the encoder's
    seed: int = 0
    dedupe: bool = True
    eval_top_k: int = 5
    encode_batch_size: int = 256
    max_steps_per_epoch: int | None = None
    checkpoint_every_steps: int | None = None
    eval_initial: bool = True              # dev-evaluate the starting encoder as "epoch 0"
    synonym_anchors: int = 0               # dictionary names added as training queries (0: none)
    max_seconds: float | None = None       # time budget: no epoch expected to end past it

    _RESUMABLE = ("epochs", "encode_batch_size", "checkpoint_every_steps", "eval_initial",
                  "max_seconds")


# ---------------------------------------------------------------------- trainer
def synonym_anchor_pairs(dictionary: NameDictionary, n: int, seed: int) -> list[tuple[str, set[str]]]:
    """``n`` (name, {uid}) training queries drawn from the dictionary itself: one name each
    of ``n`` seeded concepts that have another name to be its positive (self-alignment on
    the ontology's synonyms, as SapBERT; Liu et al. 2021): training mentions reach a
    thousand-odd concepts, the synonyms reach all of them. Names that came only from
    training mentions are not drawn, nor names of several concepts."""
    if n < 0:
        raise KgnormError("synonym_anchors must be >= 0")
    rows: dict[str, list[int]] = {}
    for i, (us, mention) in enumerate(zip(dictionary.uids, dictionary.is_mention)):
        if len(us) == 1 and not mention:
            rows.setdefault(us[0], []).append(i)
    uids = sorted(u for u, r in rows.items() if len(r) > 1)
    rng = np.random.default_rng([seed, 23])
    pairs = []
    for k in rng.permutation(len(uids))[:n]:
        uid = uids[int(k)]
        pairs.append((dictionary.names[rows[uid][int(rng.integers(len(rows[uid])))]], {uid}))
    return pairs


def _hierarchydigest(h: Hierarchy | None) -> str:
    if h is None:
        return ""
    return digest(sorted(f"{c}>{p}" for c, p in h.graph.edges))


class DilbertTask(TrainingTask):
    """DILBERT's part of the loop: the epoch's triplets (resampled with the current model
    when the strategy asks), the triplet-loss step, the name index, dev Acc@1, the model
    directory."""

    def __init__(self, model: DilbertModel, dictionary: NameDictionary, sampler: DilbertSampler,
                 dev: DevQueries, cfg: DilbertConfig, out: Path, ontology: dict | None,
                 progress: bool) -> None:
        self.model, self.enc, self.dictionary, self.sampler = model, model.encoder, dictionary, sampler
        self.dev, self.cfg, self.out, self.ontology = dev, cfg, out, ontology
        self.progress = progress
        params = [p for p in self.enc.model.parameters() if p.requires_grad]
        self.module = self.enc.model
        self.optimizer = torch.optim.Adam(params, lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
        self.name_vecs: np.ndarray | None = None   # dictionary vectors of the current weights
        self.triplets: list[tuple[str, str, str]] = []
        self.t_enc = 0.0

    def _encode_names(self) -> None:
        self.name_vecs = self.model.encode(self.dictionary.names, batch_size=self.cfg.encode_batch_size,
                                           progress=self.progress, desc="encode names")
        self.model.build_index(vectors=self.name_vecs)

    def start_epoch(self, epoch: int, saved: dict | None) -> int:
        cfg = self.cfg
        self.t_enc = 0.0
        if saved is not None:
            self.triplets = [tuple(t) for t in saved["triplets"]]
        else:
            self.sampler.set_epoch(epoch)
            ranked = None
            if self.sampler.needs_ranking:
                t0 = time.perf_counter()
                if self.name_vecs is None or self.model.index is None:
                    self._encode_names()
                depth = min(max(cfg.resample_depth, cfg.n_negatives + 1), len(self.dictionary))
                _, ranked = self.model.retrieve(self.sampler.queries, top_k=depth,
                                                batch_size=cfg.encode_batch_size)
                self.t_enc = time.perf_counter() - t0
            samples = self.sampler.sample(ranked)
            rng = np.random.default_rng([cfg.seed, epoch, 7])
            self.triplets = make_triplets(samples, cfg.pairing, rng, cfg.batching)
        self.name_vecs = None  # weights change from here on
        self.enc.model.train()
        return math.ceil(len(self.triplets) / cfg.batch_size)

    def epoch_state(self) -> dict:
        return {"triplets": [list(t) for t in self.triplets]}

    def loss(self, step: int) -> torch.Tensor:
        cfg = self.cfg
        batch = self.triplets[step * cfg.batch_size:(step + 1) * cfg.batch_size]
        uniq: dict[str, int] = {}
        for t in batch:
            for x in t:
                uniq.setdefault(x, len(uniq))
        vec = self.enc.embed_bucketed(list(uniq))
        ix = torch.tensor([[uniq[x] for x in t] for t in batch], device=vec.device)
        return triplet_loss(vec[ix[:, 0]], vec[ix[:, 1]], vec[ix[:, 2]], cfg.margin,
                            cfg.distance, cfg.mining)

    def end_epoch(self) -> dict:
        self.enc.model.eval()
        t0 = time.perf_counter()
        self._encode_names()
        return {"triplets": len(self.triplets),
                "seconds_encode": round(self.t_enc + time.perf_counter() - t0, 2)}

    def evaluate(self) -> dict | None:
        return self.dev.evaluate(self.model)

    def save(self, record: dict, history: list[dict]) -> None:
        self.model.save(self.out, hyper_parameters=self.cfg.to_dict(), ontology=self.ontology,
                        metrics={"epoch": record["epoch"], "train_loss": record["loss"],
                                 **({"dev": record["dev"]} if "dev" in record else {})},
                        extra={"training": {"n_queries": len(self.sampler),
                                            "n_skipped": self.sampler.n_skipped,
                                            "history": history}})


def train_dilbert(model: DilbertModel | DenseEncoder | str | Path | None,
                  dictionary: NameDictionary | Mapping[str, Sequence[str]],
                  train: Sequence[tuple[str, Iterable[str] | str]],
                  dev: Sequence[tuple[str, Iterable[str] | str]] | None, out_dir: str | Path,
                  config: DilbertConfig | None = None, hierarchy: Hierarchy | None = None,
                  alt_ids: Mapping[str, Iterable[str]] | None = None, resume: bool = True,
                  progress: bool = True, ontology: dict | None = None,
                  device: str | None = None) -> TrainResult:
    """Fine-tune ``model`` (a DilbertModel, a DenseEncoder, or an encoder directory --
    default MiniLM -- loaded with mean pooling) on ``train`` (normalized query, gold uids)
    against ``dictionary`` and write the selected model to ``out_dir``."""
    cfg = config or DilbertConfig()
    check_strategy(cfg.strategy)
    if cfg.distance not in DISTANCES:
        raise KgnormError(f"unknown distance {cfg.distance!r} (choose from {', '.join(DISTANCES)})")
    if cfg.pairing not in PAIRINGS:
        raise KgnormError(f"unknown pairing {cfg.pairing!r} (choose from {', '.join(PAIRINGS)})")
    if cfg.batching not in BATCHINGS:
        raise KgnormError(f"unknown batching {cfg.batching!r} (choose from {', '.join(BATCHINGS)})")
    if cfg.mining not in MININGS:
        raise KgnormError(f"unknown triplet mining {cfg.mining!r} (choose from {', '.join(MININGS)})")
    if cfg.batch_size < 1:
        raise KgnormError("DilbertConfig.batch_size must be >= 1")
    out = Path(out_dir)
    loop = TrainingLoop(LoopConfig(epochs=cfg.epochs, name="dilbert", max_seconds=cfg.max_seconds,
                                   max_steps_per_epoch=cfg.max_steps_per_epoch,
                                   checkpoint_every_steps=cfg.checkpoint_every_steps, seed=cfg.seed,
                                   progress=progress), out, resume=resume)

    dictionary = as_name_dictionary(dictionary, alt_ids)
    if not isinstance(model, DilbertModel):
        model = DilbertModel.create(None, encoder=model, device=device, distance=cfg.distance)
    model.distance = cfg.distance
    if cfg.max_length is not None:
        model.encoder.max_length = int(cfg.max_length)
    model.set_dictionary(dictionary)
    enc = model.encoder
    queries, golds = prepare_queries(train, cfg.dedupe)
    if not queries:
        raise KgnormError("no training queries with a gold uid")
    if cfg.synonym_anchors:
        extra_q, extra_g = prepare_queries(synonym_anchor_pairs(dictionary, cfg.synonym_anchors, cfg.seed),
                                           cfg.dedupe)
        queries, golds = queries + extra_q, golds + extra_g
    dev_queries = DevQueries.from_pairs(dev, cfg.eval_top_k, cfg.encode_batch_size)
    sampler = DilbertSampler(dictionary, queries, golds, cfg.strategy, hierarchy,
                             cfg.max_positives, cfg.n_negatives, cfg.k_parents,
                             cfg.k_siblings, cfg.seed)
    if len(sampler) == 0:
        raise KgnormError("no training mention has its gold concept in the dictionary")

    fingerprint = query_fingerprint(cfg, queries, golds, dictionary, enc, base=str(getattr(enc, "base", "")),
                                    hierarchy=_hierarchydigest(hierarchy), dev=digest(dev_queries.queries))
    task = DilbertTask(model, dictionary, sampler, dev_queries, cfg, out, ontology, progress)
    # no epoch to run (a refit of a dev selection that kept the starting encoder): write that encoder
    loop.cfg.eval_initial = (cfg.eval_initial and bool(dev_queries)) or cfg.epochs == 0
    res = loop.run(task, fingerprint)
    res.model = selected_model(out, load_dilbert, model, str(enc.device))
    res.info = {"n_queries": len(sampler), "n_skipped": sampler.n_skipped}  # n_skipped: gold not in the dictionary
    return res
