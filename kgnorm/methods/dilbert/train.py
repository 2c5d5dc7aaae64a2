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
(BENCHMARKS.md), hence off by default.

Mining (:func:`triplet_loss`): ``"all"`` triplets count (the paper) or only ``"semi-hard"``
ones (negative farther than the positive). With MiniLM and the resampled (hardest)
negatives, ``"all"`` shrank the pooled vectors (mean norm 6.9 -> 1.3 in one BC5CDR epoch);
``"semi-hard"`` does not shrink them (7.4 after 300 steps). After one epoch both were still
below the untrained encoder's dev accuracy (BENCHMARKS.md).

Optimisation: Adam (lr 1e-5), batch 48 triplets; texts repeated within a batch are
encoded once per step. Dev selection: Acc@1 of :meth:`DilbertModel.link` on the dev
queries after every epoch; the best model is written to ``out_dir`` (model directory with
names and index). Without dev the last epoch's model is written. With dev, the starting
encoder is a candidate too (``eval_initial``, "epoch 0"): fine-tuning that makes the dev
accuracy worse -- which happened with MiniLM (BENCHMARKS.md) -- then writes the starting
encoder instead, and ``best_epoch == 0`` says so.

Checkpoints: ``out_dir/checkpoints/last.pt`` after every epoch and every
``checkpoint_every_steps`` steps (weights, optimizer, epoch, step, the epoch's triplets,
history, RNG); ``resume=True`` continues; a checkpoint of other data or settings is
refused. Same seed and same data give the same run.
"""
from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from kgnorm.methods.bne.model import as_name_dictionary
from kgnorm.methods.dilbert.model import DISTANCES, DilbertModel, load_dilbert
from kgnorm.errors import KgnormError
from kgnorm.graph.hierarchy import Hierarchy
from kgnorm.encoders.dense import DenseEncoder
from kgnorm.linking.dictionary import NameDictionary
from kgnorm.progress import progress_bar
from kgnorm.methods.biosyn.train import _prepare
from kgnorm.methods.bne.train import evaluate_linking
from kgnorm.training.checkpoints import (atomic_save, digest, load_checkpoint, rng_state, seed_all,
                                        set_rng_state)
from kgnorm.methods.dilbert.sampling import (BATCHINGS, PAIRINGS, STRATEGIES, DilbertSampler,
                                              MentionSample, check_strategy, make_triplets)

__all__ = ["STRATEGIES", "PAIRINGS", "BATCHINGS", "MININGS", "DilbertConfig", "DilbertTrainResult",
           "DilbertSampler", "MentionSample", "triplet_loss", "make_triplets", "synonym_anchor_pairs",
           "train_dilbert", "load_dilbert"]

CHECKPOINT = "last.pt"
MININGS = ("all", "semi-hard")


@dataclass
class DilbertConfig:
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

    _RESUMABLE = ("epochs", "encode_batch_size", "checkpoint_every_steps", "eval_initial")

    def to_dict(self) -> dict:
        return asdict(self)

    def fingerprint_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k not in self._RESUMABLE}


@dataclass
class DilbertTrainResult:
    out_dir: Path
    model: DilbertModel
    best_epoch: int | None
    best_dev_acc1: float | None
    epochs_completed: int
    n_queries: int
    n_skipped: int                          # training mentions whose gold is not in the dictionary
    history: list[dict] = field(default_factory=list)
    resumed_from: dict | None = None
    train_seconds: float = 0.0


# ---------------------------------------------------------------------- loss
def triplet_loss(anchor: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor,
                 margin: float = 1.0, distance: str = "euclidean",
                 mining: str = "all") -> torch.Tensor:
    """``mean(relu(d(a, p) - d(a, n) + margin))``; ``d`` Euclidean or ``1 - cosine``.

    ``mining="semi-hard"`` (FaceNet, Schroff et al. 2015) averages over the triplets whose
    negative is farther than the positive (``d(a, n) > d(a, p)``) only: a triplet whose
    negative is closer lowers its loss most easily by shrinking every distance, which
    with the hardest negatives drives the encoder towards a collapsed space."""
    if distance == "euclidean":
        dp = torch.nn.functional.pairwise_distance(anchor, positive)
        dn = torch.nn.functional.pairwise_distance(anchor, negative)
    elif distance == "cosine":
        dp = 1.0 - torch.nn.functional.cosine_similarity(anchor, positive)
        dn = 1.0 - torch.nn.functional.cosine_similarity(anchor, negative)
    else:
        raise KgnormError(f"unknown distance {distance!r} (choose from {', '.join(DISTANCES)})")
    losses = torch.relu(dp - dn + float(margin))
    if mining == "all":
        return losses.mean()
    if mining != "semi-hard":
        raise KgnormError(f"unknown triplet mining {mining!r} (choose from {', '.join(MININGS)})")
    keep = (dn > dp).detach()
    if not bool(keep.any()):
        return (losses * 0.0).sum()  # keeps the graph: a step with no semi-hard triplet is a no-op
    return losses[keep].mean()


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


def train_dilbert(model: DilbertModel | DenseEncoder | str | Path | None,
                  dictionary: NameDictionary | Mapping[str, Sequence[str]],
                  train: Sequence[tuple[str, Iterable[str] | str]],
                  dev: Sequence[tuple[str, Iterable[str] | str]] | None, out_dir: str | Path,
                  config: DilbertConfig | None = None, hierarchy: Hierarchy | None = None,
                  alt_ids: Mapping[str, Iterable[str]] | None = None, resume: bool = True,
                  progress: bool = True, ontology: dict | None = None,
                  device: str | None = None) -> DilbertTrainResult:
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
    t_start = time.perf_counter()
    seed_all(cfg.seed)
    out = Path(out_dir)
    ckdir = out / "checkpoints"
    ckdir.mkdir(parents=True, exist_ok=True)

    dictionary = as_name_dictionary(dictionary, alt_ids)
    if not isinstance(model, DilbertModel):
        model = DilbertModel.create(None, encoder=model, device=device, distance=cfg.distance)
    model.distance = cfg.distance
    if cfg.max_length is not None:
        model.encoder.max_length = int(cfg.max_length)
    model.set_dictionary(dictionary)
    enc = model.encoder
    queries, golds = _prepare(train, cfg.dedupe)
    if not queries:
        raise KgnormError("no training queries with a gold uid")
    if cfg.synonym_anchors:
        extra_q, extra_g = _prepare(synonym_anchor_pairs(dictionary, cfg.synonym_anchors, cfg.seed), cfg.dedupe)
        queries, golds = queries + extra_q, golds + extra_g
    dev_q, dev_g = _prepare(dev, dedupe=False) if dev else ([], [])
    sampler = DilbertSampler(dictionary, queries, golds, cfg.strategy, hierarchy,
                             cfg.max_positives, cfg.n_negatives, cfg.k_parents,
                             cfg.k_siblings, cfg.seed)
    if len(sampler) == 0:
        raise KgnormError("no training mention has its gold concept in the dictionary")

    fingerprint = hashlib.sha1(json.dumps({
        "config": cfg.fingerprint_dict(), "queries": digest(queries),
        "golds": digest("|".join(sorted(g)) for g in golds), "names": digest(dictionary.names),
        "uids": digest("|".join(u) for u in dictionary.uids), "encoder": enc.config(),
        "base": str(getattr(enc, "base", "")), "dim": enc.dim,
        "hierarchy": _hierarchydigest(hierarchy), "dev": digest(dev_q),
    }, sort_keys=True).encode()).hexdigest()

    params = [p for p in enc.model.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(params, lr=cfg.learning_rate, weight_decay=cfg.weight_decay)

    epoch, step = 0, 0
    history: list[dict] = []
    best_acc: float | None = None
    best_epoch: int | None = None
    epoch_triplets: list[tuple[str, str, str]] | None = None
    resumed_from = None
    ck_path = ckdir / CHECKPOINT
    if resume and ck_path.is_file():
        ck = load_checkpoint(ck_path, fingerprint)
        enc.model.load_state_dict(ck["model"])
        optimizer.load_state_dict(ck["optimizer"])
        epoch, step = int(ck["epoch"]), int(ck["step"])
        history = list(ck["history"])
        best_acc, best_epoch = ck.get("best_acc"), ck.get("best_epoch")
        if step > 0 and ck.get("triplets"):
            epoch_triplets = [tuple(t) for t in ck["triplets"]]
        else:
            step = 0
        set_rng_state(ck["rng"])
        resumed_from = {"epoch": epoch, "step": step}
    elif not resume and ck_path.exists():
        ck_path.unlink()

    def checkpoint(ep: int, st: int, trip: list | None) -> None:
        atomic_save({"fingerprint": fingerprint, "epoch": ep, "step": st,
                      "model": enc.model.state_dict(), "optimizer": optimizer.state_dict(),
                      "history": history, "best_acc": best_acc, "best_epoch": best_epoch,
                      "rng": rng_state(),
                      "triplets": [list(t) for t in trip] if trip else []}, ck_path)

    name_vecs: np.ndarray | None = None      # dictionary vectors of the current weights
    if dev_q and cfg.eval_initial and epoch == 0 and step == 0 and not history:
        enc.model.eval()
        t0 = time.perf_counter()
        name_vecs = model.encode(dictionary.names, batch_size=cfg.encode_batch_size,
                                 progress=progress, desc="encode names")
        model.build_index(vectors=name_vecs)
        rec0 = {"epoch": 0, "loss": None, "steps": 0, "triplets": 0, "seconds_train": 0.0,
                "seconds_encode": round(time.perf_counter() - t0, 2)}
        t0 = time.perf_counter()
        rec0["dev"] = evaluate_linking(model, dev_q, dev_g, cfg.eval_top_k, cfg.encode_batch_size)
        rec0["seconds_dev"] = round(time.perf_counter() - t0, 2)
        history.append(rec0)
        best_acc, best_epoch = rec0["dev"]["acc@1"], 0
        model.save(out, hyper_parameters=cfg.to_dict(), ontology=ontology,
                   metrics={"epoch": 0, "train_loss": None, "dev": rec0["dev"]},
                   extra={"training": {"n_queries": len(sampler), "n_skipped": sampler.n_skipped,
                                       "history": history}})
        checkpoint(0, 0, None)
    ebar = progress_bar(total=cfg.epochs, desc="dilbert epochs", unit="epoch") if progress else None
    if ebar is not None:
        ebar.update(min(epoch, cfg.epochs))
    try:
        while epoch < cfg.epochs:
            t_ep = time.perf_counter()
            t_enc = 0.0
            if epoch_triplets is None:
                sampler.set_epoch(epoch)
                ranked = None
                if sampler.needs_ranking:
                    t0 = time.perf_counter()
                    if name_vecs is None or model.index is None:
                        name_vecs = model.encode(dictionary.names,
                                                 batch_size=cfg.encode_batch_size,
                                                 progress=progress, desc="encode names")
                        model.build_index(vectors=name_vecs)
                    depth = min(max(cfg.resample_depth, cfg.n_negatives + 1), len(dictionary))
                    _, ranked = model.retrieve(sampler.queries, top_k=depth,
                                               batch_size=cfg.encode_batch_size)
                    t_enc = time.perf_counter() - t0
                samples = sampler.sample(ranked)
                rng = np.random.default_rng([cfg.seed, epoch, 7])
                epoch_triplets = make_triplets(samples, cfg.pairing, rng, cfg.batching)
                step = 0
            name_vecs = None  # weights change from here on
            trip = epoch_triplets
            n_batches = math.ceil(len(trip) / cfg.batch_size)
            if cfg.max_steps_per_epoch:
                n_batches = min(n_batches, int(cfg.max_steps_per_epoch))
            enc.model.train()
            losses: list[float] = []
            sbar = (progress_bar(total=n_batches, desc=f"epoch {epoch + 1}", unit="batch")
                    if progress else None)
            if sbar is not None:
                sbar.update(step)
            for b in range(step, n_batches):
                batch = trip[b * cfg.batch_size:(b + 1) * cfg.batch_size]
                uniq: dict[str, int] = {}
                for t in batch:
                    for x in t:
                        uniq.setdefault(x, len(uniq))
                vec = enc.embed_bucketed(list(uniq))
                ix = torch.tensor([[uniq[x] for x in t] for t in batch], device=vec.device)
                loss = triplet_loss(vec[ix[:, 0]], vec[ix[:, 1]], vec[ix[:, 2]], cfg.margin,
                                    cfg.distance, cfg.mining)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                losses.append(float(loss.detach()))
                step = b + 1
                if sbar is not None:
                    sbar.update(1)
                    sbar.set_postfix(loss=f"{losses[-1]:.3f}")
                if (cfg.checkpoint_every_steps and step % cfg.checkpoint_every_steps == 0
                        and step < n_batches):
                    checkpoint(epoch, step, trip)
            if sbar is not None:
                sbar.close()
            t_train = time.perf_counter() - t_ep - t_enc
            enc.model.eval()
            rec = {"epoch": epoch + 1, "loss": float(np.mean(losses)) if losses else None,
                   "steps": len(losses), "triplets": len(trip),
                   "seconds_train": round(t_train, 2)}
            t0 = time.perf_counter()
            name_vecs = model.encode(dictionary.names, batch_size=cfg.encode_batch_size,
                                     progress=progress, desc="encode names")
            model.build_index(vectors=name_vecs)
            rec["seconds_encode"] = round(t_enc + time.perf_counter() - t0, 2)
            improved = True
            if dev_q:
                t0 = time.perf_counter()
                rec["dev"] = evaluate_linking(model, dev_q, dev_g, cfg.eval_top_k,
                                              cfg.encode_batch_size)
                rec["seconds_dev"] = round(time.perf_counter() - t0, 2)
                acc = rec["dev"]["acc@1"]
                improved = best_acc is None or acc > best_acc
                if improved:
                    best_acc, best_epoch = acc, epoch + 1
            else:
                best_epoch = epoch + 1
            rec["seconds"] = round(time.perf_counter() - t_ep, 2)
            history.append(rec)
            if improved:
                model.save(out, hyper_parameters=cfg.to_dict(), ontology=ontology,
                           metrics={"epoch": epoch + 1, "train_loss": rec["loss"],
                                    **({"dev": rec["dev"]} if dev_q else {})},
                           extra={"training": {"n_queries": len(sampler),
                                               "n_skipped": sampler.n_skipped,
                                               "history": history}})
            epoch += 1
            step = 0
            epoch_triplets = None
            checkpoint(epoch, 0, None)
            if ebar is not None:
                ebar.update(1)
                ebar.set_postfix(loss=rec["loss"], dev=(rec.get("dev") or {}).get("acc@1"))
    finally:
        if ebar is not None:
            ebar.close()

    if (out / "kgnorm-model.json").is_file():
        best = load_dilbert(out, device=str(enc.device))
    else:  # zero epochs requested
        best = model
    return DilbertTrainResult(out_dir=out, model=best, best_epoch=best_epoch,
                              best_dev_acc1=best_acc, epochs_completed=epoch,
                              n_queries=len(sampler), n_skipped=sampler.n_skipped,
                              history=history, resumed_from=resumed_from,
                              train_seconds=time.perf_counter() - t_start)
