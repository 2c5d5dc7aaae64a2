"""`kgnorm eval relatedness`: Spearman of a model's cosine similarities against human relatedness
scores (the trainers went to kgnorm/methods/<name>/recipe.py, their commands to train_cmds.py)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Callable, Optional

import typer

from kgnorm.cli.common import QuietOpt, StoreOpt, info, json_safe, setup
from kgnorm.errors import KgnormError

BASELINES = ("word-vectors",)


def _report_dict(path: Path, rep) -> dict[str, Any]:
    d = json_safe(rep.as_dict())
    d["file"] = str(path)
    d["unencodable_pairs"] = [[p.term1, p.term2] for p in rep.unencodable]
    return d


def eval_relatedness_cmd(
    model: Annotated[Path, typer.Option("--model", help="A trained model directory (any method).")],
    pairs: Annotated[list[Path], typer.Option(
        "--pairs", help="UMNSRS-style CSV (Mean,Stdev,Term1,Term2,CUI1,CUI2); repeat for several files.")],
    baseline: Annotated[Optional[list[str]], typer.Option(
        "--baseline", help="Also score word-vectors: the mean of the model's own word vectors (BNE, DAN).")] = None,
    fmt: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
    store: StoreOpt = None, quiet: QuietOpt = False,
) -> None:
    """Spearman between cosine similarity and human relatedness scores (BNE §4.3)."""
    setup(quiet)
    if fmt not in ("table", "json"):
        raise KgnormError(f"--format must be table or json, got {fmt!r}")
    baselines = list(dict.fromkeys(baseline or []))
    bad = [b for b in baselines if b not in BASELINES]
    if bad:
        raise KgnormError(f"unknown --baseline {bad[0]!r}; valid: {', '.join(BASELINES)}")
    from kgnorm.evaluation.relatedness import load_umnsrs, spearman_relatedness, wordvector_can_encode
    from kgnorm.methods.model_dir import read_model_meta
    from kgnorm.methods.registry import load_encoder

    data = [(p, load_umnsrs(p)) for p in pairs]          # every file is checked before the model loads
    meta = read_model_meta(model)
    enc = load_encoder(model)
    wv = getattr(enc, "word_vectors", None)
    if wv is None:
        wv = getattr(enc, "wordvecs", None)
    # a DAN sees only averaged word vectors: a term with no known word has no meaning to it
    can_encode = wordvector_can_encode(wv, subwords=True) if meta["method"] == "dan" and wv is not None else None
    scorers: list[tuple[str, Callable, Callable | None]] = [(meta["method"], enc.encode, can_encode)]
    if "word-vectors" in baselines:
        if wv is None:
            raise KgnormError(f"--baseline word-vectors: a {meta['method']} model has no word vectors")
        scorers.append(("avg-wordvec", wv.average, wordvector_can_encode(wv, subwords=True)))
    rows: list[dict[str, Any]] = []
    for path, items in data:
        for name, encode, can in scorers:
            rep = spearman_relatedness(lambda terms, f=encode: f(list(terms)), items, can_encode=can, name=name)
            rows.append(_report_dict(path, rep))
            if rep.n_unencodable and not quiet:
                shown = "; ".join(f"{p.term1!r}/{p.term2!r}" for p in rep.unencodable[:5])
                more = f" and {rep.n_unencodable - 5} more" if rep.n_unencodable > 5 else ""
                info(f"{path.name}: {name} cannot encode {rep.n_unencodable} pair(s): {shown}{more}", quiet)
    if fmt == "json":
        typer.echo(json.dumps(rows, indent=2))
        return
    typer.echo(f"{'file':24s} {'model':12s} {'pairs':>6s} {'used':>6s} {'unenc':>6s} {'spearman':>9s} {'all':>7s}")

    def num(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.4f}"

    for r in rows:
        typer.echo(f"{Path(r['file']).name[:24]:24s} {r['name'][:12]:12s} {r['n_pairs']:6d} {r['n_used']:6d} "
                   f"{r['n_unencodable']:6d} {num(r['spearman']):>9s} {num(r['spearman_all']):>7s}")
