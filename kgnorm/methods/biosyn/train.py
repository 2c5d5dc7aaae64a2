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
* Adam (L2 weight decay, as ``torch.optim.Adam``) with lr 1e-5 / weight decay 1e-2 for the
  encoder and lr 1e-2 / no decay for lambda (BioSyn's ``RerankNet``).
* Dev selection: Acc@1 of the concepts the linker writes (:func:`link_concepts`, strict
  scorer) on the dev queries after every epoch;
  the best model is written to ``out_dir`` (a model directory). Without dev, the model of the
  last finished epoch is written.

Checkpoints: ``out_dir/checkpoints/last.pt`` after every epoch and inside epochs every
``checkpoint_every_steps`` steps and/or ``checkpoint_every_seconds`` (default 10 minutes) (weights, optimizer, epoch, step, the epoch's
candidate lists and permutation, RNG states, history). ``resume=True`` continues from it;
a checkpoint written with other data or settings is refused. Same seed and same data give
the same run.
"""
from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from kgnorm.errors import KgnormError
from kgnorm.evaluation.linking import GoldMention, accuracy_at_k
from kgnorm.methods.biosyn.model import BioSynModel
from kgnorm.linking.concepts import link_concepts
from kgnorm.linking.dictionary import NameDictionary
from kgnorm.linking.index import NameIndex
from kgnorm.methods.biosyn.model import load_biosyn, save_biosyn
from kgnorm.progress import progress_bar
from kgnorm.training.checkpoints import (atomic_save, digest, load_checkpoint, rng_state, seed_all,
                                        set_rng_state)

CHECKPOINT = "last.pt"


@dataclass
class BioSynConfig:
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

    def to_dict(self) -> dict:
        return asdict(self)

    def fingerprint_dict(self) -> dict:
        """Settings that must not change across a resume (epochs may grow)."""
        d = self.to_dict()
        for k in ("epochs", "eval_batch_size", "encode_batch_size", "checkpoint_every_steps",
                  "checkpoint_every_seconds", "max_seconds"):
            d.pop(k, None)
        return d


@dataclass
class TrainResult:
    out_dir: Path
    model: BioSynModel
    best_epoch: int | None
    best_dev_acc1: float | None
    epochs_completed: int
    history: list[dict] = field(default_factory=list)
    resumed_from: dict | None = None
    train_seconds: float = 0.0
    n_queries: int = 0


# ---------------------------------------------------------------------- helpers
def marginal_nll(scores: torch.Tensor, labels: torch.Tensor,
                 multiplicity: torch.Tensor | None = None) -> torch.Tensor:
    """-log of the softmax mass on the gold concepts, mean over rows with a positive.

    Concept view (``multiplicity`` given): candidate j is a name standing for
    ``multiplicity[j]`` concepts, ``labels[j]`` of them gold, so the mass is
    ``sum_j labels_j e^s_j / sum_j multiplicity_j e^s_j``. Without ``multiplicity`` every
    candidate counts once and any ``labels > 0`` makes it positive (BioSyn's row view)."""
    pos = labels > 0
    has = pos.any(dim=1)
    if not bool(has.any()):
        return scores.sum() * 0.0
    s = scores[has]
    if multiplicity is None:
        w_pos, w_all = pos[has].to(s.dtype), torch.ones_like(s)
    else:
        w_pos, w_all = labels[has].to(s.dtype), multiplicity[has].to(s.dtype)
    lse_all = torch.logsumexp(s + torch.log(w_all), dim=1)
    lse_pos = torch.logsumexp(s.masked_fill(w_pos <= 0, float("-inf")) + torch.log(w_pos.clamp(min=1e-30)),
                              dim=1)
    return (lse_all - lse_pos).mean()


def _prepare(pairs: Sequence[tuple[str, set[str] | Sequence[str] | str]], dedupe: bool
             ) -> tuple[list[str], list[frozenset[str]]]:
    qs, gs, seen = [], [], set()
    for item in pairs:
        try:
            text, gold = item
        except (TypeError, ValueError):
            raise KgnormError(f"training item {item!r} is not a (query, gold uids) pair") from None
        golds = {gold} if isinstance(gold, str) else set(gold)
        golds = frozenset(g for g in golds if g and g not in ("-1",))
        if not isinstance(text, str) or not text.strip() or not golds:
            continue
        if dedupe:
            key = (text, golds)
            if key in seen:
                continue
            seen.add(key)
        qs.append(text)
        gs.append(golds)
    return qs, gs


def _gold_concepts(dictionary: NameDictionary, golds: list[frozenset[str]]) -> list[dict[int, int]]:
    """Per query, {row: number of the row's concepts that are gold} -- a concept is gold
    through its own uid or its alt ids, never through another concept sharing the name."""
    by_id: dict[str, set[tuple[int, str]]] = {}
    for i, us in enumerate(dictionary.uids):
        for u in us:
            by_id.setdefault(u, set()).add((i, u))
            for a in dictionary.alt_ids.get(u, ()):
                by_id.setdefault(a, set()).add((i, u))
    out = []
    for gs in golds:
        counts: dict[int, int] = {}
        for row, _ in set().union(*(by_id.get(g, set()) for g in gs)):
            counts[row] = counts.get(row, 0) + 1
        out.append(counts)
    return out


def _positive_rows(dictionary: NameDictionary, golds: list[frozenset[str]]) -> list[set[int]]:
    """Rows holding at least one gold concept, per query (DILBERT's positive names)."""
    return [set(c) for c in _gold_concepts(dictionary, golds)]


def _combine(s_idx: np.ndarray, d_idx: np.ndarray, top_k: int, n_sparse: int,
             n_names: int, exclude: Sequence[int] | None = None) -> np.ndarray:
    """BioSyn's candidate list: n_sparse sparse, then dense not yet taken, then sparse;
    ``exclude[i]`` (a row, or -1) is never a candidate of query i."""
    out = np.empty((len(s_idx), top_k), np.int64)
    for i in range(len(s_idx)):
        chosen: list[int] = []
        taken: set[int] = {int(exclude[i])} if exclude is not None else set()
        for src in (s_idx[i, :n_sparse], d_idx[i], s_idx[i, n_sparse:]):
            for c in src:
                c = int(c)
                if c >= 0 and c not in taken:
                    taken.add(c)
                    chosen.append(c)
                    if len(chosen) == top_k:
                        break
            if len(chosen) == top_k:
                break
        if len(chosen) < top_k:  # tiny dictionaries: pad with unused rows
            extra = (c for c in range(n_names) if c not in taken)
            chosen.extend(next(extra) for _ in range(top_k - len(chosen)))
        out[i] = chosen
    return out


def _evaluate(model: BioSynModel, dev_q: list[str], dev_g: list[frozenset[str]],
              top_k: int, batch_size: int) -> dict:
    """Dev Acc@k of the concepts the linker would write (one per rank, strict scorer)."""
    ranked = link_concepts(model, dev_q, top_k, batch_size=batch_size)
    preds = [[[c.uid for c in r]] for r in ranked]
    gold = [GoldMention(("+".join(sorted(g)),)) for g in dev_g]
    rep = accuracy_at_k(preds, gold, ks=sorted({1, min(5, top_k), top_k}),
                        alt_ids=model.dictionary.alt_ids, conjunction="any")
    return {f"acc@{k}": v for k, v in rep.accuracy.items()} | {"n": rep.n_evaluated}


# ---------------------------------------------------------------------- trainer
def train_biosyn(model: BioSynModel, dictionary: NameDictionary,
                 train: Sequence[tuple[str, set[str]]],
                 dev: Sequence[tuple[str, set[str]]] | None, out_dir: str | Path,
                 config: BioSynConfig | None = None, resume: bool = True,
                 progress: bool = True, ontology: dict | None = None,
                 on_epoch: Callable[[dict], None] | None = None) -> TrainResult:
    """Train ``model`` in place on ``train`` (normalized query, gold uids) against
    ``dictionary``; write the selected model to ``out_dir`` and return it. ``on_epoch``
    receives each epoch's history record (a log line where progress bars are hidden)."""
    cfg = config or BioSynConfig()
    if cfg.top_k < 1 or not 0.0 <= cfg.dense_ratio <= 1.0 or cfg.batch_size < 1:
        raise KgnormError("BioSynConfig: need top_k >= 1, 0 <= dense_ratio <= 1, batch_size >= 1")
    out = Path(out_dir)
    ckdir = out / "checkpoints"
    ckdir.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    seed_all(cfg.seed)

    if cfg.max_length is not None:
        model.encoder.max_length = int(cfg.max_length)
    model.set_dictionary(dictionary, refit_sparse=cfg.refit_sparse)
    if cfg.initial_sparse_weight is not None:
        with torch.no_grad():
            model.sparse_weight.fill_(float(cfg.initial_sparse_weight))
    names = dictionary.names
    queries, golds = _prepare(train, cfg.dedupe)
    if not queries:
        raise KgnormError("no training queries with a gold uid")
    dev_q, dev_g = _prepare(dev, dedupe=False) if dev else ([], [])
    gold_rows = _gold_concepts(dictionary, golds)
    n_concepts = np.fromiter((len(u) for u in dictionary.uids), np.float32, len(dictionary))
    n, top_k = len(queries), min(cfg.top_k, len(dictionary) - (1 if cfg.exclude_query_name else 0))
    n_sparse = top_k - int(top_k * cfg.dense_ratio)
    n_batches = math.ceil(n / cfg.batch_size)
    if cfg.max_steps_per_epoch:
        n_batches = min(n_batches, int(cfg.max_steps_per_epoch))

    fingerprint = hashlib.sha1(json.dumps({
        "config": cfg.fingerprint_dict(), "queries": digest(queries),
        "golds": digest(["|".join(sorted(g)) for g in golds]), "names": digest(names),
        "uids": digest(["|".join(u) for u in dictionary.uids]),
        "encoder": model.encoder.config(), "dim": model.encoder.dim,
        "objective": "concept-marginal",
    }, sort_keys=True).encode()).hexdigest()

    # with exclude_query_name, the row holding the query's own text is never a candidate (with
    # merged training mentions every query finds itself, and the loss is ~0 from the start)
    row_of = {name: r for r, name in enumerate(names)}
    exclude = [row_of.get(q, -1) for q in queries] if cfg.exclude_query_name else None
    fetch = top_k + (1 if exclude else 0)
    # sparse candidates: once
    q_sparse = model.sparse.transform(queries)
    _, s_idx = model.sparse.topk(q_sparse, fetch)

    bert_params = [p for p in model.encoder.model.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(
        [{"params": bert_params},
         {"params": [model.sparse_weight], "lr": cfg.sparse_weight_lr, "weight_decay": 0.0}],
        lr=cfg.learning_rate, weight_decay=cfg.weight_decay)

    epoch, step = 0, 0
    history: list[dict] = []
    best_acc: float | None = None
    best_epoch: int | None = None
    epoch_state: dict | None = None
    resumed_from = None
    ck_path = ckdir / CHECKPOINT
    if resume and ck_path.is_file():
        ck = load_checkpoint(ck_path, fingerprint)
        model.encoder.model.load_state_dict(ck["model"])
        with torch.no_grad():
            model.sparse_weight.copy_(ck["sparse_weight"].to(model.sparse_weight.device))
        optimizer.load_state_dict(ck["optimizer"])
        epoch, step = int(ck["epoch"]), int(ck["step"])
        history = list(ck["history"])
        best_acc, best_epoch = ck.get("best_acc"), ck.get("best_epoch")
        if step > 0:
            epoch_state = {k: ck["epoch_state"][k].numpy() for k in ck["epoch_state"]}
        set_rng_state(ck["rng"])
        resumed_from = {"epoch": epoch, "step": step}
    elif not resume and ck_path.exists():
        ck_path.unlink()

    def checkpoint(ep: int, st: int, es: dict | None) -> None:
        atomic_save({
            "fingerprint": fingerprint, "epoch": ep, "step": st,
            "model": model.encoder.model.state_dict(),
            "sparse_weight": model.sparse_weight.detach().cpu().clone(),
            "optimizer": optimizer.state_dict(), "history": history,
            "best_acc": best_acc, "best_epoch": best_epoch, "rng": rng_state(),
            "epoch_state": {k: torch.from_numpy(np.ascontiguousarray(v))
                            for k, v in (es or {}).items()},
        }, ck_path)

    dict_vecs: np.ndarray | None = None
    ebar = progress_bar(total=cfg.epochs, desc="biosyn epochs", unit="epoch") if progress else None
    if ebar is not None:
        ebar.update(min(epoch, cfg.epochs))
    try:
        while epoch < cfg.epochs:
            t_ep = time.perf_counter()
            t_enc = 0.0
            if epoch_state is None:
                # dense candidates with the current weights
                t0 = time.perf_counter()
                if dict_vecs is None:
                    dict_vecs = model.encode(names, batch_size=cfg.encode_batch_size,
                                             progress=progress)
                q_vecs = model.encode(queries, batch_size=cfg.encode_batch_size)
                _, d_idx = NameIndex.build(dict_vecs, use_gpu="auto").search(q_vecs, fetch)
                t_enc = time.perf_counter() - t0
                cand = _combine(s_idx, d_idx, top_k, n_sparse, len(names), exclude)
                labels = np.zeros(cand.shape, np.float32)
                for i in range(n):
                    labels[i] = [gold_rows[i].get(int(c), 0) for c in cand[i]]
                    if cfg.inject_gold and not labels[i].any() and gold_rows[i]:
                        cand[i, -1] = min(gold_rows[i])
                        labels[i, -1] = gold_rows[i][int(cand[i, -1])]
                c_sparse = model.sparse.score_pairs(q_sparse, cand)
                perm = np.random.default_rng(cfg.seed + epoch).permutation(n)
                epoch_state = {"cand": cand, "labels": labels, "c_sparse": c_sparse,
                               "perm": perm, "mult": n_concepts[cand]}
                step = 0
            dict_vecs = None  # weights change from here on
            cand, labels, mult = epoch_state["cand"], epoch_state["labels"], epoch_state["mult"]
            c_sparse, perm = epoch_state["c_sparse"], epoch_state["perm"]

            model.train()
            last_ck = time.perf_counter()
            losses: list[float] = [float(x) for x in epoch_state.get("losses", ())]
            sbar = (progress_bar(total=n_batches, desc=f"epoch {epoch + 1}", unit="batch")
                    if progress else None)
            if sbar is not None:
                sbar.update(step)
            for b in range(step, n_batches):
                sel = perm[b * cfg.batch_size:(b + 1) * cfg.batch_size]
                lab = torch.from_numpy(labels[sel])
                if bool(lab.any()):
                    scores = model([queries[i] for i in sel],
                                   [[names[c] for c in cand[i]] for i in sel],
                                   torch.from_numpy(c_sparse[sel]))
                    loss = marginal_nll(scores, lab.to(scores.device),
                                        torch.from_numpy(mult[sel]).to(scores.device))
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    optimizer.step()
                    losses.append(float(loss.detach()))
                step = b + 1
                if sbar is not None:
                    sbar.update(1)
                    if losses:
                        sbar.set_postfix(loss=f"{losses[-1]:.3f}", lam=f"{model.lam:.3f}")
                due = bool(cfg.checkpoint_every_steps
                           and step % cfg.checkpoint_every_steps == 0)
                if cfg.checkpoint_every_seconds is not None:
                    due = due or time.perf_counter() - last_ck >= cfg.checkpoint_every_seconds
                if due and step < n_batches:
                    checkpoint(epoch, step, {**epoch_state, "losses": np.asarray(losses)})
                    last_ck = time.perf_counter()
            if sbar is not None:
                sbar.close()
            t_train = time.perf_counter() - t_ep - t_enc

            # end of epoch: encode the dictionary once (index, dev, next epoch)
            model.eval()
            t0 = time.perf_counter()
            dict_vecs = model.encode(names, batch_size=cfg.encode_batch_size, progress=progress)
            model.build_index(vectors=dict_vecs)
            t_enc2 = time.perf_counter() - t0
            rec = {"epoch": epoch + 1, "loss": float(np.mean(losses)) if losses else None,
                   "steps": len(losses), "sparse_weight": model.lam,
                   "seconds_train": round(t_train, 2),
                   "seconds_encode": round(t_enc + t_enc2, 2)}
            improved = True
            if dev_q:
                t0 = time.perf_counter()
                metrics = _evaluate(model, dev_q, dev_g, cfg.eval_top_k, cfg.eval_batch_size)
                rec["dev"] = metrics
                rec["seconds_dev"] = round(time.perf_counter() - t0, 2)
                acc1 = metrics["acc@1"]
                improved = best_acc is None or acc1 > best_acc
                if improved:
                    best_acc, best_epoch = acc1, epoch + 1
            else:
                best_epoch = epoch + 1
            rec["seconds"] = round(time.perf_counter() - t_ep, 2)
            history.append(rec)
            if improved:
                save_biosyn(model, out, ontology=ontology,
                            metrics={"epoch": epoch + 1, **({"dev": rec["dev"]} if dev_q else {}),
                                     "train_loss": rec["loss"]},
                            hyper_parameters=cfg.to_dict(),
                            extra={"training": {"n_queries": n, "history": history}})
            epoch += 1
            step = 0
            epoch_state = None
            checkpoint(epoch, 0, None)
            if ebar is not None:
                ebar.update(1)
                ebar.set_postfix(loss=rec["loss"], dev=(rec.get("dev") or {}).get("acc@1"))
            if on_epoch is not None:
                on_epoch(rec)
            if cfg.max_seconds is not None:
                # no epoch that would end past the budget, judged by the one just run
                if time.perf_counter() - t_start + rec["seconds"] > cfg.max_seconds:
                    break
    finally:
        if ebar is not None:
            ebar.close()

    if (out / "kgnorm-model.json").is_file():
        best_model = load_biosyn(out, device=str(model.device))
    else:  # zero epochs requested
        best_model = model
    return TrainResult(out_dir=out, model=best_model, best_epoch=best_epoch,
                       best_dev_acc1=best_acc, epochs_completed=epoch, history=history,
                       resumed_from=resumed_from,
                       train_seconds=time.perf_counter() - t_start, n_queries=n)
