"""`train ner` as a library call: read and check the annotated files (every error before anything
is written), the ontology's names when dictionary features are on, then `train_ner` under the
time budget."""
from __future__ import annotations

from dataclasses import MISSING, dataclass
from pathlib import Path

from kgnorm.errors import KgnormError
from kgnorm.methods.options import keep_checkpoints, option, out_option, refit, refit_minutes
from kgnorm.methods.recipes import check_file, finish, note_budget, read_snapshot, set_threads
from kgnorm.methods.refit import Phase, run_phases
from kgnorm.progress import note


@dataclass(kw_only=True)
class Options:
    """Train a mention detector (BIO token classification) on annotated texts."""

    train: Path = option(MISSING, help="Annotated texts: PubTator or BioC XML.")
    out: Path = out_option()
    dev: Path | None = option(None, help="Annotated dev texts (selects on strict-span F1).")
    types: str | None = option(None, help="Entity types to learn, comma-separated; TYPE=LABEL maps a corpus type onto "
                               "a label, e.g. SpecificDisease=Disease,DiseaseClass=Disease,Modifier=Disease,"
                               "CompositeMention=Disease (default: every type present, each its own label).")
    input_format: str | None = option(None, "--format", help="pubtator or bioc (default: sniffed).")
    encoder: Path | None = option(None, help="Any local Hugging Face encoder directory (default: the offline MiniLM).")
    ontology: str | None = option(None, help="Ontology in the store whose names give --dictionary-features.")
    crf: bool = option(False, "--crf/--no-crf", help="A CRF layer on the token classifier (off by default: it scored "
                       "below the plain detector at equal steps, benchmarks/LOG.md).")
    dictionary_features: bool = option(False, "--dictionary-features/--no-dictionary-features", help=(
        "Add the B/I/O tag of --ontology's name matches to the token embeddings (off by default: it scored below "
        "the plain detector at equal steps, benchmarks/LOG.md)."))
    layers: int | None = option(None, help="Keep only the encoder's first N transformer layers (a smaller, faster "
                                "detector; recorded in the model's config, so loading rebuilds it).")
    teacher: Path | None = option(None, help="Distil this trained detector (same types) into the one trained here: "
                                  "the student starts from the teacher's encoder (its first --layers layers) and "
                                  "head, and learns from the gold tags and the teacher's tag distribution.")
    epochs: int = option(20)
    batch_size: int = option(8, help="Windows per batch.")
    lr: float = option(3e-4, help="Peak learning rate (after a 50-step warm-up).")
    lr_schedule: str = option("linear", help="linear: the rate falls to 0 where the run ends (the epochs or the "
                              "--max-minutes budget, whichever comes first); constant: it stays at --lr (the "
                              "linear schedule at 3e-4 scored +0.012 dev F1 over constant 1e-4 on both corpora, "
                              "benchmarks/LOG.md).")
    device: str = option("cpu", help="Torch device to train on, e.g. cuda; the detector loads on the CPU either way.")
    max_length: int = option(256, help="Window in tokens.")
    stride: int = option(64, help="Tokens consecutive windows share.")
    max_steps: int | None = option(None, "--max-steps-per-epoch", help="Time-box each epoch.")
    seed: int = option(0)
    resume: bool = option(True, "--resume/--no-resume")
    max_minutes: float | None = option(28.0, help="Budget of the whole training run, dev evaluations included: "
                                       "no step starts that, with the evaluation after it, would end past it, so "
                                       "the run ends within it; the last, stopped part of an epoch is evaluated "
                                       "like an epoch.")
    threads: int | None = option(None)
    refit: bool | None = refit(False, "off: train ner's 30-minute target leaves no time for a second run, and "
                               "the selection's steps are what the F1 needs (benchmarks/LOG.md)")
    refit_minutes: float | None = refit_minutes(30.0)
    keep_checkpoints: bool = keep_checkpoints()


def check_device(device: str) -> None:
    """A torch device this machine has, refused in one line before anything is read."""
    import torch

    try:
        dev = torch.device(device)
    except RuntimeError as e:
        raise KgnormError(f"--device {device!r}: {e}") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise KgnormError(f"--device {device}: no CUDA device is available here (train on the cpu)")


def train(opts: Options, store: str | None = None, quiet: bool = False) -> Path:
    """Train a mention detector into ``out``. Defaults: no CRF, no dictionary features -- at equal
    steps on NCBI-disease dev both scored below the plain token classifier (benchmarks/LOG.md
    2026-11-26: F1 0.5250 plain, 0.5145 CRF, 0.4754 dictionary features)."""
    from kgnorm.ner.corpus import corpus_types, parse_types, read_annotated

    out = Path(opts.out)
    train, dev, types, input_format, encoder = opts.train, opts.dev, opts.types, opts.input_format, opts.encoder
    ontology, crf, dictionary_features, epochs = opts.ontology, opts.crf, opts.dictionary_features, opts.epochs
    batch_size, max_length, stride, threads = opts.batch_size, opts.max_length, opts.stride, opts.threads
    check_file(train, "training file")
    check_file(dev, "dev file")
    check_file(encoder, "encoder directory")
    check_file(opts.teacher, "teacher detector directory")
    if ontology is not None and not dictionary_features:
        note(f"--ontology {ontology} is used only with --dictionary-features; training without it", quiet)
    if dictionary_features and ontology is None:
        raise KgnormError("--dictionary-features needs --ontology (the names to match)")
    if opts.layers is not None and opts.layers < 1:
        raise KgnormError("--layers must be >= 1")
    check_device(opts.device)
    from kgnorm.methods.ner.train import LR_SCHEDULES

    if opts.lr_schedule not in LR_SCHEDULES:
        raise KgnormError(f"--lr-schedule must be one of {', '.join(LR_SCHEDULES)}, not {opts.lr_schedule!r}")
    if min(epochs, batch_size) < 1 or not 0 <= stride < max_length - 2:
        raise KgnormError("--epochs and --batch-size must be >= 1, and 0 <= --stride < --max-length - 2")
    type_map = parse_types(types)
    train_docs = read_annotated(train, type_map, input_format)
    dev_docs = read_annotated(dev, type_map, input_format, require_types=False) if dev else None
    labels = type_map.labels or corpus_types(train_docs)
    if not labels:
        raise KgnormError(f"{train}: no annotated mention to learn from")
    names = None
    onto = {}
    if dictionary_features:
        _, snap, _ = read_snapshot(store, ontology, False)
        names = sorted({n for c in snap.concepts for n in c.all_names()})
        onto = {"ontology": ontology, "ontology_version": snap.version}
    set_threads(threads)
    n_spans = sum(len(d.spans) for d in train_docs)
    note(f"{len(train_docs):,} training documents, {n_spans:,} mentions of {', '.join(labels)}"
         + (f"; {len(dev_docs):,} dev documents" if dev_docs is not None else "")
         + (f"; dictionary features from {len(names):,} names of {ontology}" if names else "")
         + ("; CRF" if crf else ""), quiet)
    run_phases(opts, lambda phase: _train_phase(opts, train_docs, dev_docs, labels, names, type_map, onto, phase, quiet),
               quiet, opts.refit_minutes, metric="f1")
    note(f"mention detector → {out}", quiet)
    return out


def _train_phase(opts: Options, train_docs, dev_docs, labels, names, type_map, onto: dict, phase: Phase, quiet: bool):
    """One detector directory: selection (train, dev F1 selects) or refit (train + dev documents, no dev)."""
    from kgnorm.methods.ner.train import NerConfig, train_ner

    if phase.refit:
        train_docs, dev_docs = list(train_docs) + list(dev_docs or []), None
    cfg = NerConfig(crf=opts.crf, dictionary_features=opts.dictionary_features, layers=opts.layers,
                    teacher=None if opts.teacher is None else str(Path(opts.teacher).resolve()),
                    max_length=opts.max_length,
                    stride=opts.stride, batch_size=opts.batch_size, learning_rate=opts.lr,
                    lr_schedule=opts.lr_schedule, epochs=phase.epochs,
                    seed=opts.seed, max_steps_per_epoch=opts.max_steps,
                    max_seconds=None if phase.max_minutes is None else phase.max_minutes * 60)
    result = train_ner(train_docs, dev_docs, phase.out, labels, opts.encoder, cfg, names, resume=opts.resume,
                       progress=not quiet, meta={"types_map": type_map.mapping, **onto}, device=opts.device)
    note_budget(result.stop_reason, phase.max_minutes, result.epochs_completed, quiet)
    if result.best_epoch is None:
        raise KgnormError(f"no model was selected (the budget ended before a step ran); nothing usable in {phase.out}")
    finish(phase.out, opts.keep_checkpoints, quiet, train_seconds=round(result.train_seconds, 1))
    msg = f"mention detector: {result.global_step:,} steps ({result.epochs_completed} full epoch(s)) in " \
          f"{result.train_seconds / 60:.1f} min" + (" on train + dev (refit)" if phase.refit else "")
    if result.best_metrics:
        d = result.best_metrics
        msg += (f"; best dev strict-span P/R/F1 {d['precision']:.4f}/{d['recall']:.4f}/{d['f1']:.4f} "
                f"at epoch {result.best_epoch}")
    note(msg + f" → {phase.out}", quiet)
    return result
