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
A checkpoint (``checkpoint.pt``) is written after every epoch; ``resume=True`` continues
from it when the configuration, split and word vectors are the same. Each epoch seeds its
own random streams (seed + epoch), so a resumed run equals an uninterrupted one.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from threadpoolctl import threadpool_limits

import kgnorm
from kgnorm.methods.dan.model import DAN, MODEL_JSON, WEIGHTS, WORDVECTORS, DanEncoder, load_dan
from kgnorm.encoders.encoder_inputs import EncoderInputs
from kgnorm.errors import KgnormError
from kgnorm.evaluation.hierarchy import evaluate_hierarchy
from kgnorm.graph.levels import LevelSplit
from kgnorm.progress import progress_bar
from kgnorm.samplers.levels import LevelTripletSampler
from kgnorm.encoders.wordvectors import WordVectors

__all__ = ["DanConfig", "TrainResult", "train_dan", "load_dan"]

CHECKPOINT = "checkpoint.pt"


@dataclass
class DanConfig:
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
    max_seconds: float | None = None     # time budget: stop after the epoch that passes it
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

    def fingerprint_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k not in self._RESUMABLE}


@dataclass
class TrainResult:
    model_dir: str
    level: int
    best_epoch: int
    best_val_map: float
    epochs_run: int
    stopped_early: bool
    train_seconds: float
    resumed: bool
    history: list[dict] = field(default_factory=list)
    test_metrics: dict | None = None

    def load(self) -> DanEncoder:
        return load_dan(self.model_dir)


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


def _fingerprint(config: DanConfig, split: LevelSplit, level: int, x: np.ndarray) -> str:
    h = hashlib.sha256()
    h.update(json.dumps({"config": config.fingerprint_dict(), "level": level,
                         "root": split.root, "n_levels": split.n_levels,
                         "split_seed": split.seed}, sort_keys=True).encode())
    for it in split.train:
        h.update(f"{it.name}\t{it.concept_uid}\n".encode())
    for it in split.val:
        h.update(f"v{it.name}\t{it.concept_uid}\n".encode())
    h.update(np.ascontiguousarray(x, dtype=np.float32).tobytes())
    return h.hexdigest()


def _atomic_torch_save(obj: dict, path: Path) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


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


def _write_model_json(out: Path, meta: dict) -> None:
    tmp = out / (MODEL_JSON + ".tmp")
    tmp.write_text(json.dumps(meta, indent=2, sort_keys=False, default=str))
    os.replace(tmp, out / MODEL_JSON)


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
    t_start = time.perf_counter()  # the budget counts the encoding of the inputs too
    try:
        if isinstance(wordvecs, EncoderInputs):
            wordvecs.precompute([it.name for it in split.items()] +
                                [n for k in split.classes for c in split.classes[k]
                                 for n in split.class_names[k][c]], progress=progress)
        return _train_loop(split, train_split, wordvecs, level, out, cfg, progress, resume, t_start)
    finally:
        torch.set_num_threads(old_threads)
        if limits is not None:
            limits.restore_original_limits()


def _train_loop(split: LevelSplit, train_split: LevelSplit,
                wordvecs: WordVectors | EncoderInputs, level: int,
                out: Path, cfg: DanConfig, progress: bool, resume: bool,
                t_start: float) -> TrainResult:
    x_np = wordvecs([it.name for it in train_split.train])
    fp = _fingerprint(cfg, train_split, level, x_np)
    ck_path = out / CHECKPOINT
    ck = None
    if resume and ck_path.exists():
        try:
            ck = torch.load(ck_path, map_location="cpu", weights_only=True)
        except Exception as e:
            raise KgnormError(f"cannot read checkpoint {ck_path}: {e}") from e
        if ck.get("fingerprint") != fp:
            raise KgnormError(f"{ck_path} belongs to a different configuration, split or word "
                              f"vectors; train with resume=False or another output directory")

    wv_dir = out / WORDVECTORS
    if ck is None or not (wv_dir / "meta.json").exists():
        wordvecs.save(wv_dir)

    x = torch.from_numpy(x_np)
    g = torch.from_numpy(_ground_targets(train_split, level, x_np))
    val_index = {it.name: i for i, it in enumerate(split.val)}
    train_index = {it.name: i for i, it in enumerate(split.train)}
    x_val = wordvecs([it.name for it in split.val])

    torch.manual_seed(cfg.seed)
    net = DAN(wordvecs.dim, cfg.hidden, cfg.dropout)
    # the fused kernel: ~40% less time per step than the per-tensor loop on CPU, same update
    opt = torch.optim.Adam(net.parameters(), lr=cfg.lr, fused=True)
    n_plain = len(split.train)
    sampler = LevelTripletSampler(train_split, level, seed=cfg.seed,
                                  triplets_per_name=cfg.triplets_per_name,
                                  preferred_positives=range(n_plain, len(train_split.train)),
                                  preferred_prob=cfg.class_positive_prob)
    encoder = DanEncoder(net, wordvecs)

    history: list[dict] = []
    start_epoch, best_map, best_epoch, bad, stopped = 0, -1.0, -1, 0, False
    best_state = None
    elapsed_before = 0.0
    stop_reason = "max_epochs"
    if ck is not None:
        net.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        start_epoch = int(ck["epoch"]) + 1
        best_map, best_epoch = float(ck["best_map"]), int(ck["best_epoch"])
        bad, stopped = int(ck["bad_epochs"]), bool(ck["stopped"])
        best_state = ck["best_state"]
        history = json.loads(ck["history"])
        elapsed_before = float(ck["elapsed"])
        stop_reason = str(ck.get("stop_reason", stop_reason))

    def encode_val(names: list[str]) -> np.ndarray:
        # evaluation texts are train and val names: reuse the averaged inputs
        rows = np.empty((len(names), x_np.shape[1]), np.float32)
        for i, n in enumerate(names):
            j = val_index.get(n)
            rows[i] = x_val[j] if j is not None else x_np[train_index[n]]
        return encoder.encode_inputs(rows)

    epochs = range(start_epoch, cfg.max_epochs)
    bar = progress_bar(total=len(epochs), desc=f"DAN level {level}", unit="epoch") \
        if progress and not stopped else None
    for epoch in epochs:
        if stopped:
            break
        t0 = time.perf_counter()
        torch.manual_seed(cfg.seed * 100_003 + epoch)
        sampler.set_epoch(epoch)
        net.eval()
        emb = encoder.encode_inputs(x_np) if cfg.negatives == "distance" else None
        trip = torch.from_numpy(sampler.sample(emb))
        order = torch.randperm(len(trip))
        trip = trip[order]
        net.train()
        sums = np.zeros(4)
        nb = 0
        for s in range(0, len(trip), cfg.batch_size):
            b = trip[s:s + cfg.batch_size]
            a, p, n = b[:, 0], b[:, 1], b[:, 2]
            y = net(torch.cat([x[a], x[p], x[n]]))
            ya, yp, yn = y.split(len(b))
            d_ap = 1 - F.cosine_similarity(ya, yp)
            d_an = 1 - F.cosine_similarity(ya, yn)
            l_trip = F.relu(cfg.margin + d_ap - d_an).mean()
            l_ctx = (1 - F.cosine_similarity(ya, x[a])).mean()
            l_grd = (1 - F.cosine_similarity(ya, g[a])).mean()
            loss = cfg.w_triplet * l_trip + cfg.w_context * l_ctx + cfg.w_ground * l_grd
            opt.zero_grad()
            loss.backward()
            opt.step()
            sums += [loss.item(), l_trip.item(), l_ctx.item(), l_grd.item()]
            nb += 1
        net.eval()
        val = evaluate_hierarchy(encode_val, split, levels=(level,), queries="val",
                                 metrics=("map",))["map"][level]
        nb = max(nb, 1)
        rec = {"epoch": epoch, "loss": float(sums[0] / nb), "triplet": float(sums[1] / nb),
               "context": float(sums[2] / nb), "ground": float(sums[3] / nb), "val_map": val,
               "triplets": len(trip), "seconds": round(time.perf_counter() - t0, 3)}
        history.append(rec)
        if val > best_map:
            best_map, best_epoch, bad = val, epoch, 0
            best_state = {k: v.detach().clone() for k, v in net.state_dict().items()}
            _save_weights(best_state, out / WEIGHTS)
        else:
            bad += 1
        stopped = bad >= cfg.patience
        elapsed = elapsed_before + time.perf_counter() - t_start
        out_of_time = cfg.max_seconds is not None and elapsed >= cfg.max_seconds
        stop_reason = ("patience" if stopped else "max_seconds" if out_of_time
                       else "max_epochs")
        _atomic_torch_save({"fingerprint": fp, "epoch": epoch, "model": net.state_dict(),
                            "optimizer": opt.state_dict(), "best_map": best_map,
                            "best_epoch": best_epoch, "bad_epochs": bad, "stopped": stopped,
                            "best_state": best_state, "history": json.dumps(history),
                            "elapsed": elapsed, "stop_reason": stop_reason}, ck_path)
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{rec['loss']:.4f}", val_map=f"{val:.4f}")
        if out_of_time:
            break
    if bar is not None:
        bar.close()
    if best_state is None:
        raise KgnormError("no training epoch ran (max_epochs must be >= 1)")
    if not (out / WEIGHTS).exists():
        _save_weights(best_state, out / WEIGHTS)

    train_seconds = elapsed_before + time.perf_counter() - t_start
    net.load_state_dict(best_state)
    net.eval()
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
                    "train_seconds": round(train_seconds, 2),
                    "test": test_metrics, "history": history},
        "fingerprint": fp,
        "versions": _versions(),
    }
    _write_model_json(out, meta)
    return TrainResult(model_dir=str(out), level=level, best_epoch=best_epoch,
                       best_val_map=best_map, epochs_run=len(history), stopped_early=stopped,
                       train_seconds=train_seconds, resumed=ck is not None, history=history,
                       test_metrics=test_metrics)
