"""`kgnorm hypernyms` and `kgnorm eval hierarchy`: store → hierarchy view → level split → ranker →
TSV and PREDICTED_IS_A edges (kgnorm.jobs.hypernyms), or the DAN §4.3 scores."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kgnorm.cli.common import QuietOpt, StoreOpt, info, setup

RootOpt = Annotated[str, typer.Option("--root", help="Root concept uid of the subgraph, e.g. HP:0000118.")]
LevelOpt = Annotated[int, typer.Option("--level", help="Hierarchy level K (1 = just below the root … 4).")]


def hypernyms_cmd(
    model: Annotated[Path, typer.Option("--model", help="A trained model directory (any method).")],
    root: RootOpt,
    level: LevelOpt,
    names: Annotated[Optional[Path], typer.Option("--names", help="One name per line; default: the held-out test names.")] = None,
    ontology: Annotated[Optional[str], typer.Option("--ontology", help="Default: the model's ontology.")] = None,
    top_k: Annotated[int, typer.Option("--top-k")] = 5,
    output: Annotated[Optional[Path], typer.Option("--output", help="TSV to write (default stdout).")] = None,
    write: Annotated[bool, typer.Option("--write/--no-write", help="Store PREDICTED_IS_A edges and a Run node.")] = True,
    write_top_k: Annotated[int, typer.Option("--write-top-k", help="How many ranks to store as edges.")] = 1,
    seed: Annotated[Optional[int], typer.Option("--seed", help="Split seed (default: the model's).")] = None,
    store: StoreOpt = None, quiet: QuietOpt = False,
) -> None:
    """Rank the level-K concepts under --root as hypernyms of each name."""
    setup(quiet)
    from kgnorm.jobs.hypernyms import rank_names, write_ranking, write_tsv

    ranking = rank_names(model, root, level, names, ontology=ontology, top_k=top_k, seed=seed, store=store)
    write_tsv(ranking, output)
    if write:
        uid, n_edges = write_ranking(ranking, write_top_k, store)
        info(f"wrote {n_edges} PREDICTED_IS_A edge(s) for {len(ranking.queries)} name(s) as run {uid}", quiet)


def eval_hierarchy_cmd(
    model: Annotated[Path, typer.Option("--model", help="A trained model directory.")],
    root: RootOpt,
    ontology: Annotated[Optional[str], typer.Option("--ontology", help="Default: the model's ontology.")] = None,
    baselines: Annotated[bool, typer.Option("--baselines/--no-baselines",
                                            help="Also score averaged word vectors, char tf-idf and MiniLM.")] = True,
    encoder: Annotated[Optional[Path], typer.Option("--encoder", help="HF encoder dir for the transformer baseline.")] = None,
    seed: Annotated[Optional[int], typer.Option("--seed")] = None,
    store: StoreOpt = None, quiet: QuietOpt = False,
) -> None:
    """Semantic-similarity mAP and hypernym-detection MRR per level (DAN §4.3)."""
    setup(quiet)
    from kgnorm.evaluation.hierarchy import format_results
    from kgnorm.jobs.eval_hierarchy import evaluate_model_hierarchy

    results = evaluate_model_hierarchy(model, root, ontology=ontology, baselines=baselines, encoder=encoder,
                                       seed=seed, store=store)
    typer.echo(format_results(results))
