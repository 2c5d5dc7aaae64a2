"""Train a DAN name encoder on one level of a :class:`~kgnorm.graph.levels.LevelSplit`
(Fivez et al. 2021, "Integrating higher-level semantics into robust biomedical name
representations").

Per training name (one triplet per name per epoch by default, from
:class:`~kgnorm.samplers.levels.LevelTripletSampler`, distance-weighted negatives over the
current embeddings), with ``f`` the DAN, ``x`` the name's input vector (averaged word vectors,
or a frozen encoder's pooled vector: :mod:`kgnorm.encoders.encoder_inputs`) and
``cos_d(a, b) = 1 - cos(a, b)``:

* triplet:     ``max(0, margin + cos_d(f(a), f(p)) - cos_d(f(a), f(n)))`` (margin 0.1)
* contextual:  ``cos_d(f(a), x_a)`` — keep the meaning of the input
* grounding:   ``cos_d(f(a), (x_a + proto_a) / 2)`` where ``proto_a`` is the mean, over the
  anchor's level-K classes, of the class prototype = mean of the averaged inputs of the
  class's training names

loss = w_triplet * triplet + w_context * contextual + w_ground * grounding (1/1/1).
Adam (lr 1e-3), batch 64; early stopping on validation mAP at level K (patience 10).
Epochs, checkpoints, the budget and selection are the shared
:class:`~kgnorm.training.loop.TrainingLoop`'s (:class:`DanTask` supplies the triplets, the
step and the validation mAP). A checkpoint (``checkpoints/last.pt``) is written after every epoch;
``resume=True`` continues from it when the configuration, split and word vectors are the
same. Each epoch seeds its own random streams (seed + epoch), so a resumed run equals an
uninterrupted one.
"""
from __future__ import annotations

import hashlib
import math
import os
import platform
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from threadpoolctl import threadpool_limits

import kgnorm
from kgnorm.encoders.encoder_inputs import EncoderInputs
from kgnorm.encoders.wordvectors import WordVectors
from kgnorm.errors import KgnormError
from kgnorm.evaluation.hierarchy import evaluate_hierarchy
from kgnorm.graph.levels import LevelSplit
from kgnorm.methods.dan.model import DAN, WEIGHTS, WORDVECTORS, DanEncoder, load_dan
from kgnorm.methods.model_dir import write_model_meta
from kgnorm.samplers.levels import LevelTripletSampler
from kgnorm.training.checkpoints import ResumableConfig, digest
from kgnorm.training.loop import LoopConfig, TrainingLoop, TrainResult, run_fingerprint
from kgnorm.training.task import TrainingTask

__all__ = ["DanConfig", "TrainResult", "train_dan", "load_dan"]


@dataclass
class DanConfig(ResumableConfig):
    """Hyper-parameters. The defaults follow the DAN recipe (margin 0.1, loss weights
    1/1/1, Adam 1e-3, batch 64, dropout 0.5, one triplet per name per epoch, patience 10);
    :meth:`cpu_fast` is the setting used for the HPO check under a CPU time budget.

    ``class_name_items`` (on by default, a kgnorm addition) adds the names of the class
    concepts of levels K..n_levels to the training names, labelled with their level-K
    class: they are never test names and teach the encoder what the class names (the
    candidates of hypernym detection) mean. ``class_positive_prob`` makes that share of
    positives such a class name.
    """
    hidden: int = 2048
    dropout: float = 0.5
    margin: float = 0.1
    w_triplet: float = 1.0
    w_context: float = 1.0
    w_ground: float = 1.0
    lr: float = 1e-3
    batch_size: int = 64
    max_epochs: int = 100
    patience: int = 10
    max_seconds: float | None = None     # time budget: no epoch expected to end past it
    triplets_per_name: int = 1
    negatives: str = "distance"          # "distance" (Wu et al. 2017) or "random"
    seed: int = 0
    class_name_items: bool = True        # also train on the names of the level-K..n classes
    class_positive_prob: float = 0.0     # share of positives that are such class names
    threads: int | None = 1              # torch intra-op threads while training (restored after)
    evaluate_test: bool = True           # evaluate_hierarchy on the test names at the end
    eval_levels: tuple[int, ...] | None = None   # default: all levels of the split

    # fields that may change between an interrupted run and its resumption
    _RESUMABLE = ("max_epochs", "patience", "max_seconds", "threads", "evaluate_test",
                  "eval_levels")

    @classmethod
    def cpu_fast(cls, **overrides) -> "DanConfig":
        """Narrower hidden layer, higher learning rate, lighter contextual and grounding
        losses and a 14-minute budget: what reached the HPO targets on a busy 2-core CPU."""
        base = dict(hidden=1024, lr=2e-3, w_context=0.3, w_ground=0.3,
                    class_positive_prob=0.3, max_seconds=840.0)
        base.update(overrides)
        return cls(**base)


def _versions() -> dict:
    import gensim
    import networkx
    import safetensors
    import scipy
    import sklearn
    return {"kgnorm": kgnorm.__version__, "python": platform.python_version(),
            "torch": torch.__version__, "numpy": np.__version__, "gensim": gensim.__version__,
            "scipy": scipy.__version__, "scikit-learn": sklearn.__version__,
            "networkx": networkx.__version__, "safetensors": safetensors.__version__}


def _fingerprint(config: DanConfig, split: LevelSplit, level: int, x: np.ndarray) -> dict:
    return {"config": config.fingerprint_dict(), "level": level, "root": split.root,
            "n_levels": split.n_levels, "split_seed": split.seed,
            "train": digest(f"{it.name}\t{it.concept_uid}" for it in split.train),
            "val": digest(f"{it.name}\t{it.concept_uid}" for it in split.val),
            "inputs": hashlib.sha1(np.ascontiguousarray(x, dtype=np.float32).tobytes()).hexdigest()}


def _save_weights(state: dict, path: Path) -> None:
    from safetensors.torch import save_file
    tmp = path.with_suffix(".tmp")
    save_file({k: v.detach().contiguous() for k, v in state.items()}, str(tmp))
    os.replace(tmp, path)


def _ground_targets(split: LevelSplit, level: int, x: np.ndarray) -> np.ndarray:
    """(x_i + mean of the prototypes of item i's level-K classes) / 2."""
    from kgnorm.evaluation.hierarchy import label_matrix
    lab = label_matrix(split.train, level, split.classes[level])          # n x C
    counts = np.asarray(lab.sum(axis=0)).ravel()
    counts[counts == 0] = 1.0
    protos = (lab.T @ x) / counts[:, None]                                  # C x d
    per = np.asarray(lab.sum(axis=1)).ravel()
    per[per == 0] = 1.0
    item_proto = (lab @ protos) / per[:, None]
    return ((x + item_proto) / 2.0).astype(np.float32)


def train_dan(split: LevelSplit, wordvecs: WordVectors | EncoderInputs, level: int,
              out_dir: str | os.PathLike, config: DanConfig | None = None,
              progress: bool = True, resume: bool = False) -> TrainResult:
    """Train a DAN on level ``level`` of ``split``; write the model directory ``out_dir``.

    With ``resume=True`` an existing checkpoint in ``out_dir`` from the same configuration,
    split and word vectors is continued (a finished run is returned as is, unless
    ``max_epochs`` was raised); a checkpoint from anything else raises KgnormError.
    Without it, any previous run in ``out_dir`` is overwritten. ``wordvecs`` is the DAN's
    input: word vectors, or :class:`EncoderInputs` (then every name of the split is encoded
    once, up front, and kept with the model).
    """
    cfg = config or DanConfig()
    if level not in split.classes:
        raise KgnormError(f"level {level} is not in the split (levels 1..{split.n_levels})")
    if cfg.negatives not in ("distance", "random"):
        raise KgnormError(f"negatives must be 'distance' or 'random' (got {cfg.negatives!r})")
    if not split.val:
        raise KgnormError("the split has no validation names (early stopping needs them)")
    # the triplets, prototypes and inputs use the training names plus (optionally) the class
    # concepts' own names; validation and test use the split as given
    train_split = split
    if cfg.class_name_items:
        train_split = replace(split, train=list(split.train) + split.class_items(level))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    # small batches: more intra-op threads only add synchronisation (and thrash on a busy
    # machine); numpy's BLAS is limited the same way while training
    old_threads = torch.get_num_threads()
    limits = None
    if cfg.threads:
        torch.set_num_threads(int(cfg.threads))
        limits = threadpool_limits(int(cfg.threads))
    # made here: the budget counts the encoding of the inputs too
    loop = TrainingLoop(LoopConfig(epochs=cfg.max_epochs, name="DAN", metric="map",
                                   max_seconds=cfg.max_seconds, patience=cfg.patience,
                                   epoch_seed=cfg.seed, progress=progress), out, resume=resume)
    try:
        if isinstance(wordvecs, EncoderInputs):
            wordvecs.precompute([it.name for it in split.items()] +
                                [n for k in split.classes for c in split.classes[k]
                                 for n in split.class_names[k][c]], progress=progress)
        return _train_loop(loop, split, train_split, wordvecs, level, cfg)
    finally:
        torch.set_num_threads(old_threads)
        if limits is not None:
            limits.restore_original_limits()


class DanTask(TrainingTask):
    """DAN's part of the loop: one epoch's triplets (distance-weighted over the current
    embeddings), the three-part loss step, validation mAP at level K, the best weights."""

    def __init__(self, split: LevelSplit, train_split: LevelSplit, wordvecs, level: int,
                 cfg: DanConfig, out: Path) -> None:
        self.split, self.level, self.cfg, self.out = split, level, cfg, out
        self.x_np = wordvecs([it.name for it in train_split.train])
        self.x = torch.from_numpy(self.x_np)
        self.g = torch.from_numpy(_ground_targets(train_split, level, self.x_np))
        self.val_index = {it.name: i for i, it in enumerate(split.val)}
        self.train_index = {it.name: i for i, it in enumerate(split.train)}
        self.x_val = wordvecs([it.name for it in split.val])
        torch.manual_seed(cfg.seed)
        self.net = DAN(wordvecs.dim, cfg.hidden, cfg.dropout)
        # the fused kernel: ~40% less time per step than the per-tensor loop on CPU, same update
        self.module = self.net
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=cfg.lr, fused=True)
        self.sampler = LevelTripletSampler(train_split, level, seed=cfg.seed,
                                           triplets_per_name=cfg.triplets_per_name,
                                           preferred_positives=range(len(split.train),
                                                                     len(train_split.train)),
                                           preferred_prob=cfg.class_positive_prob)
        self.encoder = DanEncoder(self.net, wordvecs)
        self.trip = torch.empty(0, 3, dtype=torch.long)
        self.sums = np.zeros(4)

    def start_epoch(self, epoch: int, saved: dict | None) -> int:
        self.sampler.set_epoch(epoch)
        self.net.eval()
        emb = self.encoder.encode_inputs(self.x_np) if self.cfg.negatives == "distance" else None
        trip = torch.from_numpy(self.sampler.sample(emb))
        self.trip = trip[torch.randperm(len(trip))]
        self.sums = np.zeros(4)
        self.net.train()
        return math.ceil(len(self.trip) / self.cfg.batch_size)

    def loss(self, step: int) -> torch.Tensor:
        cfg, x, g = self.cfg, self.x, self.g
        b = self.trip[step * cfg.batch_size:(step + 1) * cfg.batch_size]
        a, p, n = b[:, 0], b[:, 1], b[:, 2]
        ya, yp, yn = self.net(torch.cat([x[a], x[p], x[n]])).split(len(b))
        l_trip = F.relu(cfg.margin + (1 - F.cosine_similarity(ya, yp))
                        - (1 - F.cosine_similarity(ya, yn))).mean()
        l_ctx = (1 - F.cosine_similarity(ya, x[a])).mean()
        l_grd = (1 - F.cosine_similarity(ya, g[a])).mean()
        loss = cfg.w_triplet * l_trip + cfg.w_context * l_ctx + cfg.w_ground * l_grd
        self.sums += [loss.item(), l_trip.item(), l_ctx.item(), l_grd.item()]
        return loss

    def end_epoch(self) -> dict:
        self.net.eval()
        nb = max(math.ceil(len(self.trip) / self.cfg.batch_size), 1)
        return {"triplet": float(self.sums[1] / nb), "context": float(self.sums[2] / nb),
                "ground": float(self.sums[3] / nb), "triplets": len(self.trip)}

    def _encode_val(self, names: list[str]) -> np.ndarray:
        # evaluation texts are train and val names: reuse the averaged inputs
        rows = np.empty((len(names), self.x_np.shape[1]), np.float32)
        for i, n in enumerate(names):
            j = self.val_index.get(n)
            rows[i] = self.x_val[j] if j is not None else self.x_np[self.train_index[n]]
        return self.encoder.encode_inputs(rows)

    def evaluate(self) -> dict:
        return {"map": evaluate_hierarchy(self._encode_val, self.split, levels=(self.level,),
                                          queries="val", metrics=("map",))["map"][self.level]}

    def save(self, record: dict, history: list[dict]) -> None:
        _save_weights(self.net.state_dict(), self.out / WEIGHTS)


def _dan_history(history: list[dict]) -> list[dict]:
    """DAN's records: epochs from 0, the validation mAP as ``val_map``."""
    return [{"epoch": int(h["epoch"]) - 1, "loss": h["loss"], "triplet": h["triplet"],
             "context": h["context"], "ground": h["ground"], "val_map": h["dev"]["map"],
             "triplets": h["triplets"], "seconds": h["seconds"]} for h in history]


def _train_loop(loop: TrainingLoop, split: LevelSplit, train_split: LevelSplit,
                wordvecs: WordVectors | EncoderInputs, level: int, cfg: DanConfig) -> TrainResult:
    out = loop.out
    task = DanTask(split, train_split, wordvecs, level, cfg, out)
    fp = _fingerprint(cfg, train_split, level, task.x_np)
    resumed = loop.begin(task, fp) is not None
    wv_dir = out / WORDVECTORS
    if not resumed or not (wv_dir / "meta.json").exists():
        wordvecs.save(wv_dir)
    res = loop.run(task, fp)
    if res.best_epoch is None or not (out / WEIGHTS).exists():
        raise KgnormError("no training epoch ran (max_epochs must be >= 1)")
    from safetensors.torch import load_file

    net, encoder = task.net, task.encoder
    net.load_state_dict(load_file(str(out / WEIGHTS)))
    net.eval()
    history = _dan_history(res.history)
    best_epoch, best_map = int(res.best_epoch) - 1, float(res.best_value)
    stopped = res.stopped_early
    stop_reason = "max_epochs" if res.stop_reason == "epochs" else res.stop_reason
    test_metrics = None
    eval_levels = tuple(cfg.eval_levels or split.levels)
    if cfg.evaluate_test and split.test:
        test_metrics = evaluate_hierarchy(encoder.encode, split, levels=eval_levels)
    meta = {
        "method": "dan", "encoder": "dan", "status": "complete",
        "architecture": {"dim": wordvecs.dim, "hidden": cfg.hidden, "dropout": cfg.dropout},
        "hyper_parameters": {**asdict(cfg), "level": level},
        "weights": WEIGHTS, "word_vectors": WORDVECTORS,
        "word_vectors_info": {"kind": wordvecs.kind, "source": wordvecs.source,
                              "dim": wordvecs.dim, "info": wordvecs.info},
        "split": {"root": split.root, "n_levels": split.n_levels, "seed": split.seed,
                  "summary": split.summary()},
        "metrics": {"best_val_map": best_map, "best_epoch": best_epoch,
                    "epochs_run": len(history), "stopped_early": stopped,
                    "stop_reason": stop_reason,
                    "train_seconds": round(res.elapsed, 2),
                    "test": test_metrics, "history": history},
        "fingerprint": run_fingerprint(fp),
        "versions": _versions(),
    }
    write_model_meta(out, meta)
    res.model = encoder
    res.info = {"level": level, "test_metrics": test_metrics}
    return res
