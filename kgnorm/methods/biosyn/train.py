"""BioSyn training (Sung et al. 2020, "synonym marginalization"), resumable.

Per query the trainer keeps ``top_k`` candidate names: the first ``top_k - int(top_k *
dense_ratio)`` of the query's sparse top-k (computed once: the tf-idf never changes), then
the dense top-k names not already taken (recomputed every epoch with the current encoder),
then, if still short, further sparse names. The score of a candidate is
``lambda * sparse + dense`` and the loss is the negative log of the softmax mass on the
gold *concepts* (computed in log space), averaged over the queries of the batch that have at
least one gold candidate. Concept-level, as the linker ranks (:mod:`kgnorm.linking.concepts`):
a candidate name shared by ``m`` concepts stands for ``m`` candidates with its score, of which
those that are gold (own uid or alt id) are positive -- so a name that also belongs to another
concept is only partly right, where BioSyn's row view counted it as wholly right.

Choices (documented, configurable where it matters):

* Queries whose candidates contain no gold are skipped by the loss, as in BioSyn
  (``inject_gold=False``). ``inject_gold=True`` replaces the last candidate by a gold name.
  With BioSyn's usual training dictionary (ontology names + the training mentions, see
  :meth:`NameDictionary.with_mentions`) every query finds its own text, so this rarely
  matters.
* Training queries are deduplicated on (text, gold) as BioSyn does; pass only non-composite
  queries (or the split parts of composites) -- composite splitting is the text
  normalizer's job.
* Repeated texts in a batch (a query and its own name, names shared by several queries) are
  encoded once per step; each batch is length-bucketed so padding stays short (BioSyn pads
  everything to ``max_length``). Both change only the cost, not the objective.
* The dictionary is encoded once per epoch, under ``inference_mode`` with length-sorted
  batches: at the end of an epoch for the dev evaluation and the saved index, and the same
  vectors give the next epoch's dense candidates.
* A dictionary of more than ``pool_above`` names (MeSH's chemicals: 565k, 45x MEDIC; one
  encoding of it takes longer than an epoch of training) is encoded whole once at the start;
  after each epoch only its *pool* is encoded again: the names any training or dev query can
  reach (its sparse and its first dense top ``pool_depth``, 32, found without gold) and the training
  gold names. The other rows keep their vectors of the start, which no query ranks near its top.
  The selected model's index is encoded whole once at the end, so what is saved is exact
  (``exact_index``; off for a selection that the refit replaces), and the time budget keeps
  that encoding's time free (at the pace of the last pool encoding), so ``max_seconds`` bounds
  the whole training, the final index included. The vectors of the start are
  cached on disk per encoder and names (:func:`start_vectors`): selection, refit and the untrained
  model encode the dictionary with the starting encoder once between them.
* Adam (L2 weight decay, as ``torch.optim.Adam``) with lr 1e-5 / weight decay 1e-2 for the
  encoder and lr 1e-2 / no decay for lambda (BioSyn's ``RerankNet``).
* Dev selection: Acc@1 of the concepts the linker writes (:func:`link_concepts`, strict
  scorer) on the dev queries after every epoch;
  the best model is written to ``out_dir`` (a model directory). Without dev, the model of the
  last finished epoch is written.

Epochs, checkpoints, resume, the time budget and dev selection are the shared
:class:`~kgnorm.training.loop.TrainingLoop`'s; this module supplies the candidates, the
loss step and the model directory (:class:`BioSynTask`). Checkpoints:
``out_dir/checkpoints/last.pt`` after every epoch and inside epochs every
``checkpoint_every_steps`` steps and/or ``checkpoint_every_seconds`` (default 10 minutes)
(weights, optimizer, position, the epoch's candidate lists and permutation, RNG states,
history). ``resume=True`` continues from it; a checkpoint written with other data or
settings is refused. Same seed and same data give the same run.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from kgnorm.errors import KgnormError
from kgnorm.linking.dictionary import NameDictionary
from kgnorm.linking.name_index import NameIndex
from kgnorm.methods.biosyn.model import BioSynModel, load_biosyn, save_biosyn
from kgnorm.methods.model_dir import selected_model
from kgnorm.methods.biosyn.sampling import combine_candidates, gold_concepts
from kgnorm.losses.marginal_nll import marginal_nll
from kgnorm.training.checkpoints import ResumableConfig, digest
from kgnorm.training.loop import LoopConfig, TrainingLoop, TrainResult
from kgnorm.training.task import TrainingTask
from kgnorm.training.queries import DevQueries, prepare_queries, query_fingerprint

# the names older code and tests use
_combine, _gold_concepts, _prepare = combine_candidates, gold_concepts, prepare_queries


@dataclass
class BioSynConfig(ResumableConfig):
    epochs: int = 10
    top_k: int = 20
    dense_ratio: float = 0.5
    learning_rate: float = 1e-5
    weight_decay: float = 1e-2
    sparse_weight_lr: float = 1e-2
    initial_sparse_weight: float | None = None  # BioSyn starts at 0.0; None keeps the model's
    batch_size: int = 16
    max_length: int | None = None               # None keeps the encoder's (default 25)
    encode_batch_size: int = 256
    seed: int = 0
    dedupe: bool = True
    inject_gold: bool = False
    refit_sparse: bool = True                   # fit tf-idf on the training dictionary
    eval_top_k: int = 5
    eval_batch_size: int = 512
    max_steps_per_epoch: int | None = None      # time-boxing / smoke runs
    checkpoint_every_steps: int | None = None   # also checkpoint inside epochs ...
    checkpoint_every_seconds: float | None = 600.0  # ... and at least this often
    bucket: int = 64                            # texts per length bucket in a training step
    max_seconds: float | None = None            # time budget: no epoch expected to end past it
    exclude_query_name: bool = False            # never a candidate: the name identical to the query
    pool_above: int | None = 200_000            # more names than this: re-encode only the pool per epoch
    pool_depth: int = 32                        # per query: sparse and first dense top names in the pool
    exact_index: bool = True                    # pooled: encode the saved index whole at the end (a
                                                # selection the refit replaces needs no exact index)
    hard_negatives: int = 0                     # candidates per query drawn from its negative pool
    query_vectors_from_names: bool = False      # a query that is a dictionary name takes its row's vector

    _RESUMABLE = ("epochs", "eval_batch_size", "encode_batch_size", "checkpoint_every_steps",
                  "checkpoint_every_seconds", "max_seconds", "pool_above", "pool_depth", "exact_index")


class BioSynTask(TrainingTask):
    """BioSyn's part of the loop: candidates per epoch, the marginal-likelihood step, the
    dictionary index after each epoch, dev Acc@1 and the model directory."""

    def __init__(self, model: BioSynModel, dictionary: NameDictionary, queries: list[str],
                 golds: list[frozenset[str]], dev: DevQueries, cfg: BioSynConfig, out: Path,
                 ontology: dict | None, progress: bool, negative_pools: list[list[int]] | None = None) -> None:
        self.model, self.cfg, self.out, self.ontology, self.progress = model, cfg, out, ontology, progress
        self.negative_pools = negative_pools if cfg.hard_negatives > 0 else None
        self.queries, self.dev = queries, dev
        self.names = dictionary.names
        self.gold_rows = gold_concepts(dictionary, golds)
        self.n_concepts = np.fromiter((len(u) for u in dictionary.uids), np.float32, len(dictionary))
        self.top_k = min(cfg.top_k, len(dictionary) - (1 if cfg.exclude_query_name else 0))
        self.n_sparse = self.top_k - int(self.top_k * cfg.dense_ratio)
        # with exclude_query_name, the row holding the query's own text is never a candidate (with
        # merged training mentions every query finds itself, and the loss is ~0 from the start)
        self.row_of = row_of = {name: r for r, name in enumerate(self.names)}
        self.exclude = [row_of.get(q, -1) for q in queries] if cfg.exclude_query_name else None
        self.fetch = self.top_k + (1 if self.exclude else 0)
        self.q_sparse = model.sparse.transform(queries)         # sparse candidates: once
        _, self.s_idx = model.sparse.topk(self.q_sparse, self.fetch)
        bert_params = [p for p in model.encoder.model.parameters() if p.requires_grad]
        self.module = model.encoder.model
        self.optimizer = torch.optim.Adam(
            [{"params": bert_params},
             {"params": [model.sparse_weight], "lr": cfg.sparse_weight_lr, "weight_decay": 0.0}],
            lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
        self.dict_vecs: np.ndarray | None = None   # dictionary vectors of the current weights
        self.state: dict[str, np.ndarray] = {}
        self.t_enc = 0.0
        self.pooled = cfg.pool_above is not None and len(self.names) > cfg.pool_above
        self.pool: np.ndarray | None = None          # rows re-encoded per epoch (pooled only)
        self.vectors: np.ndarray | None = None       # pooled: every row's latest vector
        self.fresh_weights = True                    # the starting encoder's (not resumed): cached vectors fit
        self.initial: np.ndarray | None = None       # the starting encoder's vectors of every name, if known
        self.seconds_per_name: float | None = None   # pooled: the last pool encoding's pace
        self.seconds_once = 0.0                       # pooled: the whole first encoding, until reported

    def _encode_names(self) -> np.ndarray:
        """The dictionary's vectors with the current weights: every name, or (pooled, once the
        whole dictionary was encoded) the pool's names written over the vectors of the start."""
        if not self.pooled:
            return self.model.encode(self.names, batch_size=self.cfg.encode_batch_size, progress=self.progress)
        if self.vectors is None:  # once per run (and per resumption): the budget does not expect it again
            t0 = time.perf_counter()
            self.vectors = ((self.initial if self.initial is not None else
                             start_vectors(self.model, self.names, self.cfg.encode_batch_size, self.progress))
                            if self.fresh_weights else
                            self.model.encode(self.names, batch_size=self.cfg.encode_batch_size, progress=self.progress))
            self.pool = self._pool_rows(self.vectors)
            self.seconds_once += time.perf_counter() - t0
            return self.vectors
        t0 = time.perf_counter()
        fresh = self.model.encode([self.names[r] for r in self.pool], batch_size=self.cfg.encode_batch_size,
                                  progress=self.progress)
        self.seconds_per_name = (time.perf_counter() - t0) / max(len(self.pool), 1)
        self.vectors[self.pool] = fresh
        return self.vectors

    def _final_index_seconds(self) -> float | None:
        """Pooled with an exact index: encoding every name once more after the loop (whole_index),
        at the pace the pool was last encoded; None where no such encoding follows or before a pace."""
        if not (self.pooled and self.cfg.exact_index) or self.seconds_per_name is None:
            return None
        return self.seconds_per_name * len(self.names)

    def seconds_after(self) -> float:
        """The final index's encoding, which the epoch budget keeps free."""
        return self._final_index_seconds() or 0.0

    def _pool_rows(self, vectors: np.ndarray) -> np.ndarray:
        """The rows any training or dev query reaches (sparse and dense top ``pool_depth``, no gold
        used) and the training gold rows: what the next epochs re-encode."""
        depth = min(self.cfg.pool_depth, len(self.names))
        texts = self.queries + list(self.dev.queries)
        _, sparse = self.model.sparse.topk(self.model.sparse.transform(texts), depth)
        q_vecs = self.model.encode(texts, batch_size=self.cfg.encode_batch_size)
        _, dense = NameIndex.build(vectors, use_gpu="auto").search(q_vecs, depth)
        gold = np.fromiter((r for g in self.gold_rows for r in g), np.int64)
        rows = np.unique(np.concatenate([np.asarray(sparse).ravel(), np.asarray(dense).ravel(), gold]))
        return rows[(rows >= 0) & (rows < len(self.names))]

    def _query_vectors(self) -> np.ndarray:
        """The queries' vectors with the current weights; with ``query_vectors_from_names``, a query that is
        a dictionary name takes that row's vector, just encoded (training on an ontology's own names:
        every query is one, and encoding them again would double the epoch's encoding)."""
        if not self.cfg.query_vectors_from_names:
            return self.model.encode(self.queries, batch_size=self.cfg.encode_batch_size)
        rows = np.array([self.row_of.get(q, -1) for q in self.queries], np.int64)
        out = np.empty((len(rows), self.dict_vecs.shape[1]), self.dict_vecs.dtype)
        out[rows >= 0] = self.dict_vecs[rows[rows >= 0]]
        rest = np.flatnonzero(rows < 0)
        if len(rest):
            out[rest] = self.model.encode([self.queries[i] for i in rest], batch_size=self.cfg.encode_batch_size)
        return out

    def start_epoch(self, epoch: int, saved: dict | None) -> int:
        cfg, n = self.cfg, len(self.queries)
        self.t_enc = 0.0
        if saved is not None:
            self.state = {k: v.numpy() for k, v in saved.items()}
        else:   # dense candidates with the current weights
            t0 = time.perf_counter()
            if self.dict_vecs is None:
                self.dict_vecs = self._encode_names()
            q_vecs = self._query_vectors()
            _, d_idx = NameIndex.build(self.dict_vecs, use_gpu="auto").search(q_vecs, self.fetch)
            self.t_enc = time.perf_counter() - t0
            cand = combine_candidates(self.s_idx, d_idx, self.top_k, self.n_sparse, len(self.names),
                                      self.exclude)
            if self.negative_pools is not None:
                cand = with_hard_negatives(cand, self.negative_pools, self.gold_rows, cfg.hard_negatives,
                                           np.random.default_rng([cfg.seed, epoch, 1]))
            labels = np.zeros(cand.shape, np.float32)
            for i in range(n):
                labels[i] = [self.gold_rows[i].get(int(c), 0) for c in cand[i]]
                if cfg.inject_gold and not labels[i].any() and self.gold_rows[i]:
                    cand[i, -1] = min(self.gold_rows[i])
                    labels[i, -1] = self.gold_rows[i][int(cand[i, -1])]
            self.state = {"cand": cand, "labels": labels,
                          "c_sparse": self.model.sparse.score_pairs(self.q_sparse, cand),
                          "perm": np.random.default_rng(cfg.seed + epoch).permutation(n),
                          "mult": self.n_concepts[cand]}
        self.dict_vecs = None  # weights change from here on
        self.model.train()
        return math.ceil(n / cfg.batch_size)

    def epoch_state(self) -> dict:
        return {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in self.state.items()}

    def loss(self, step: int) -> torch.Tensor | None:
        st, bs = self.state, self.cfg.batch_size
        sel = st["perm"][step * bs:(step + 1) * bs]
        lab = torch.from_numpy(st["labels"][sel])
        if not bool(lab.any()):
            return None
        scores = self.model([self.queries[i] for i in sel],
                            [[self.names[c] for c in st["cand"][i]] for i in sel],
                            torch.from_numpy(st["c_sparse"][sel]))
        return marginal_nll(scores, lab.to(scores.device),
                            torch.from_numpy(st["mult"][sel]).to(scores.device))

    def end_epoch(self) -> dict:
        """Encode the dictionary once: the saved index, dev, and the next epoch's candidates."""
        self.model.eval()
        t0 = time.perf_counter()
        self.dict_vecs = self._encode_names()
        self.model.build_index(vectors=self.dict_vecs)
        final = self._final_index_seconds()
        return {"sparse_weight": self.model.lam,
                "seconds_encode": round(self.t_enc + time.perf_counter() - t0, 2),
                **({"pool_names": int(len(self.pool))} if self.pool is not None else {}),
                **({"seconds_final_index": round(final, 3)} if final is not None else {}),
                **({"seconds_once": round(self._take_once(), 2)} if self.seconds_once else {})}

    def _take_once(self) -> float:
        once, self.seconds_once = self.seconds_once, 0.0
        return once

    def evaluate(self) -> dict | None:
        return self.dev.evaluate(self.model)

    def save(self, record: dict, history: list[dict]) -> None:
        save_biosyn(self.model, self.out, ontology=self.ontology,
                    metrics={"epoch": record["epoch"], **({"dev": record["dev"]} if "dev" in record else {}),
                             "train_loss": record["loss"]},
                    hyper_parameters=self.cfg.to_dict(),
                    extra={"training": {"n_queries": len(self.queries), "history": history,
                                        **({"index": "pool"} if self.pooled else {})}})

    def state_dict(self) -> dict:
        return {**super().state_dict(), "sparse_weight": self.model.sparse_weight.detach().cpu().clone()}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.fresh_weights = False
        with torch.no_grad():
            self.model.sparse_weight.copy_(state["sparse_weight"].to(self.model.sparse_weight.device))


def with_hard_negatives(cand: np.ndarray, pools: Sequence[Sequence[int]], gold_rows: Sequence[dict[int, int]],
                        k: int, rng: np.random.Generator) -> np.ndarray:
    """The candidate lists with their last ``k`` slots (at most) given to rows drawn from each query's
    negative pool that are neither candidates already nor gold -- hard negatives the retrieval may
    not have offered (an ontology's sibling names, kgnorm.training.ontology_names)."""
    out = cand.copy()
    for i, pool in enumerate(pools):
        taken = set(int(c) for c in out[i])
        free = [r for r in pool if r not in taken and r not in gold_rows[i]]
        if not free:
            continue
        drawn = rng.choice(len(free), size=min(k, len(free)), replace=False)
        # never overwrite a gold candidate: fill the last non-gold slots
        slots = [j for j in range(out.shape[1] - 1, -1, -1) if int(out[i, j]) not in gold_rows[i]][:len(drawn)]
        for j, d in zip(slots, drawn):
            out[i, j] = free[int(d)]
    return out


def train_biosyn(model: BioSynModel, dictionary: NameDictionary,
                 train: Sequence[tuple[str, set[str]]],
                 dev: Sequence[tuple[str, set[str]]] | None, out_dir: str | Path,
                 config: BioSynConfig | None = None, resume: bool = True,
                 progress: bool = True, ontology: dict | None = None,
                 on_epoch: Callable[[dict], None] | None = None,
                 negatives: Sequence[Sequence[int]] | None = None,
                 initial_vectors: np.ndarray | None = None) -> TrainResult:
    """Train ``model`` in place on ``train`` (normalized query, gold uids) against
    ``dictionary``; write the selected model to ``out_dir`` and return it. ``on_epoch``
    receives each epoch's history record (a log line where progress bars are hidden).
    ``negatives``: per ``train`` pair, dictionary rows of its hard negatives (``hard_negatives``
    of them join its candidates each epoch). ``initial_vectors``: the starting encoder's vectors of
    ``dictionary``'s names, row for row, where the caller has them (a fine-tuning: its base's index),
    so a pooled run does not encode the whole dictionary at the start."""
    cfg = config or BioSynConfig()
    if cfg.top_k < 1 or not 0.0 <= cfg.dense_ratio <= 1.0 or cfg.batch_size < 1:
        raise KgnormError("BioSynConfig: need top_k >= 1, 0 <= dense_ratio <= 1, batch_size >= 1")
    out = Path(out_dir)
    loop = TrainingLoop(LoopConfig(epochs=cfg.epochs, name="biosyn", max_seconds=cfg.max_seconds,
                                   max_steps_per_epoch=cfg.max_steps_per_epoch,
                                   checkpoint_every_steps=cfg.checkpoint_every_steps,
                                   checkpoint_every_seconds=cfg.checkpoint_every_seconds, seed=cfg.seed,
                                   progress=progress), out, resume=resume, on_record=on_epoch)

    if cfg.max_length is not None:
        model.encoder.max_length = int(cfg.max_length)
    model.set_dictionary(dictionary, refit_sparse=cfg.refit_sparse)
    if cfg.initial_sparse_weight is not None:
        with torch.no_grad():
            model.sparse_weight.fill_(float(cfg.initial_sparse_weight))
    queries, golds = prepare_queries(train, cfg.dedupe)
    if not queries:
        raise KgnormError("no training queries with a gold uid")
    dev_queries = DevQueries.from_pairs(dev, cfg.eval_top_k, cfg.eval_batch_size)
    pools = None
    extra = {}
    if negatives is not None:
        by_pair = {}
        for (text, gold), rows in zip(train, negatives, strict=True):
            by_pair.setdefault((text, frozenset({gold} if isinstance(gold, str) else gold)), []).extend(rows)
        pools = [list(dict.fromkeys(by_pair.get((q, g), ()))) for q, g in zip(queries, golds)]
        extra["negatives"] = digest(",".join(map(str, p)) for p in pools)

    fingerprint = query_fingerprint(cfg, queries, golds, dictionary, model.encoder, objective="concept-marginal",
                                    **extra)
    task = BioSynTask(model, dictionary, queries, golds, dev_queries, cfg, out, ontology, progress, pools)
    if initial_vectors is not None:
        if len(initial_vectors) != len(dictionary):
            raise KgnormError("initial_vectors: one row per dictionary name")
        task.initial = np.asarray(initial_vectors, dtype=np.float32)
    res = loop.run(task, fingerprint)
    res.model = selected_model(out, load_biosyn, model, str(model.device))
    if task.pooled and cfg.exact_index:
        whole_index(res.model, out, cfg.encode_batch_size, progress)
    res.info = {"n_queries": len(queries)}
    return res


def start_vectors(model: BioSynModel, names: Sequence[str], batch_size: int = 256,
                  progress: bool = False) -> np.ndarray:
    """The vectors of `names` under the starting encoder (its weights as saved in its directory),
    cached on disk by the encoder's content and settings and the names (kgnorm.model_cache): a large
    dictionary is encoded once for the untrained model, the selection and the refit alike (565k
    MeSH chemical names take about 35 CPU-minutes)."""
    import json

    from kgnorm.model_cache import cached_vectors, model_digest

    enc = model.encoder
    key = f"{model_digest(enc.path)}-{json.dumps(enc.config(), sort_keys=True)}"
    return cached_vectors("name-vectors", key, names,
                          lambda texts: model.encode(texts, batch_size=batch_size, progress=progress))


def whole_index(model: BioSynModel, out: Path, batch_size: int, progress: bool) -> None:
    """Pooled training saved an index whose rows outside the pool hold the vectors of the start:
    encode every name with the selected weights and write the exact index over it."""
    from kgnorm.methods.model_dir import read_model_meta, update_meta

    model.build_index(batch_size=batch_size, progress=progress)
    model.index.save(out / "index")
    training = dict(read_model_meta(out).get("training") or {})
    training["index"] = "whole"
    update_meta(out, training=training)
