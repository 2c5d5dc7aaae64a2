"""`kgnorm train ensemble`: an ensemble directory over trained linker directories. Nothing is trained:
the members are checked (same ontology, version and text pipeline), and with ``--dev`` every fusion
is measured on the dev mentions, scored from the rows `link` would write (kgnorm.evaluation.link_predictions,
the scorer of `eval link`), the members alone too; the best fusion is kept unless ``--fusion`` names
one. That choice is made on dev: the ensemble's dev figure is then not a held-out one, and the
metadata says so."""
from __future__ import annotations

from dataclasses import MISSING, dataclass
from pathlib import Path
from typing import Any

from kgnorm.errors import KgnormError
from kgnorm.methods.ensemble.fusion import FUSIONS, RRF_K
from kgnorm.methods.options import input_format, option, out_option, threads
from kgnorm.methods.recipes import check_file, set_threads
from kgnorm.progress import note

__all__ = ["Options", "train"]


@dataclass(kw_only=True)
class Options:
    """Fuse the ranked concepts of several trained linkers (reciprocal rank or normalized score)."""

    member: list[Path] = option(MISSING, "--member", help="A trained linker's model directory (BioSyn, a reranker, "
                                "another ensemble ...); repeat for each member (at least two). Referenced, not copied.")
    out: Path = out_option("Ensemble directory to write (it holds only kgnorm-model.json).")
    fusion: str | None = option(None, "--fusion", help="rrf (reciprocal-rank fusion) or score (each member's "
                                "softmax over its top --depth, averaged). Default: the better on --dev (rrf on a "
                                "tie, or without --dev).")
    dev: Path | None = option(None, "--dev", help="Dev mentions: every fusion and every member is scored on them "
                              "(strict Acc@1 of the rows `link` writes) and the figures recorded; without --fusion "
                              "the best fusion is chosen on them.")
    input_format: str | None = input_format()
    depth: int = option(10, "--depth", help="Concepts of each member that are fused per query part.")
    rrf_k: int = option(RRF_K, "--rrf-k", help="RRF's constant k: rank r earns 1 / (k + r).")
    temperature: float = option(1.0, "--temperature", help="Score fusion: each member's scores are divided by it "
                                "before its softmax.")
    threads: int | None = threads()


def _score(linker: Any, meta: dict[str, Any], pipeline: Any, dev: Path, fmt: str | None,
           store: str | None) -> dict[str, Any]:
    from kgnorm.evaluation.link_predictions import evaluate_link

    full = evaluate_link(None, dev, None, None, None, fmt, allow_unknown_gold=True, store=store, linker=linker,
                         meta=meta, pipeline=pipeline)["full"]
    return {"acc1": full["acc1"], "acc5": full["acc5"], "n": full["n"]}


def measure(linker: Any, member_linkers: list[Any], meta: dict[str, Any], paths: list[str], dev: Path,
            fmt: str | None, store: str | None, quiet: bool) -> dict[str, Any]:
    """Strict Acc@1 / Acc@5 on ``dev`` of each fusion (the members' answers cached once) and of each member
    alone, as `eval link --model` computes them."""
    from kgnorm.linking.linker import pipeline_from_meta

    pipeline = pipeline_from_meta(meta)
    figures: dict[str, Any] = {}
    for fusion in FUSIONS:
        figures[fusion] = _score(linker.with_fusion(fusion), meta, pipeline, dev, fmt, store)
        note(f"dev {dev}: {fusion} fusion Acc@1 {figures[fusion]['acc1']:.4f}", quiet)
    figures["members"] = []
    for path, member in zip(paths, member_linkers):
        fig = {"path": path, **_score(member, meta, pipeline, dev, fmt, store)}
        figures["members"].append(fig)
        note(f"dev {dev}: member {path} alone Acc@1 {fig['acc1']:.4f}", quiet)
    return figures


def train(opts: Options, store: str | None = None, quiet: bool = False) -> Path:
    """Write the ensemble directory ``opts.out`` over ``opts.member``."""
    from kgnorm.methods.ensemble.linker import SHARED_KEYS, open_ensemble
    from kgnorm.methods.model_dir import library_versions, write_model_meta
    from kgnorm.methods.refit import file_sha256

    out = Path(opts.out)
    paths = [str(Path(m).resolve()) for m in opts.member]
    if len(paths) < 2:
        raise KgnormError("train ensemble: give at least two --member directories")
    if len(set(paths)) < len(paths):
        raise KgnormError("train ensemble: a --member is given twice")
    if str(out.resolve()) in paths:
        raise KgnormError("--out must not be a member's directory (the ensemble references its members)")
    if opts.fusion is not None and opts.fusion not in FUSIONS:
        raise KgnormError(f"--fusion must be one of {', '.join(FUSIONS)}, got {opts.fusion!r}")
    check_file(opts.dev, "--dev")
    set_threads(opts.threads)
    meta = {"method": "ensemble", "members": paths, "fusion": opts.fusion or "rrf", "depth": opts.depth,
            "rrf_k": opts.rrf_k, "temperature": opts.temperature}
    linker, metas = open_ensemble(meta)
    meta.update({k: metas[0].get(k) for k in SHARED_KEYS})
    if opts.dev is not None:
        figures = measure(linker, linker.members, meta, paths, Path(opts.dev), opts.input_format, store, quiet)
        chosen = opts.fusion or max(FUSIONS, key=lambda f: (figures[f]["acc1"], f == "rrf"))
        meta["fusion"] = chosen
        meta["selection"] = {
            "dev": {"path": str(Path(opts.dev).resolve()), "sha256": file_sha256(opts.dev)},
            "chosen_by": "--fusion" if opts.fusion else "dev Acc@1",
            "figures": figures,
            "note": ("the fusion was selected on this dev set: its dev figure is not a held-out one"
                     if not opts.fusion else "the fusion was named by --fusion; dev figures for the record")}
        note(f"fusion: {chosen} ({meta['selection']['chosen_by']})", quiet)
    write_model_meta(out, {**meta, "library_versions": library_versions()})
    note(f"ensemble → {out} ({meta['fusion']} fusion of {len(paths)} members, referenced)", quiet)
    return out
