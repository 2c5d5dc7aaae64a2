"""`kgnorm eval relatedness` as a library call: Spearman between a model's cosine similarities and
human relatedness scores (UMNSRS-style files; BNE §4.3), optionally beside averaged word vectors."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from kgnorm.errors import KgnormError

BASELINES = ("word-vectors",)


@dataclass
class RelatednessReport:
    """`rows`: one dict per file and scorer (what `--format json` prints; an undefined Spearman is
    NaN); `notes`: the pairs a
    scorer could not encode, one line per file and scorer."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _report_dict(path: Path, rep) -> dict[str, Any]:
    d = rep.as_dict()
    d["file"] = str(path)
    d["unencodable_pairs"] = [[p.term1, p.term2] for p in rep.unencodable]
    return d


def evaluate_relatedness(model: str | Path, pairs: Sequence[str | Path],
                         baselines: Sequence[str] = ()) -> RelatednessReport:
    """Every pairs file is checked before the model loads; a DAN scores only pairs whose terms
    have a known word (it sees nothing but averaged word vectors)."""
    from kgnorm.evaluation.relatedness import load_umnsrs, spearman_relatedness, wordvector_can_encode
    from kgnorm.methods.model_dir import read_model_meta
    from kgnorm.methods.registry import load_encoder

    baselines = list(dict.fromkeys(baselines))
    bad = [b for b in baselines if b not in BASELINES]
    if bad:
        raise KgnormError(f"unknown --baseline {bad[0]!r}; valid: {', '.join(BASELINES)}")
    data = [(Path(p), load_umnsrs(p)) for p in pairs]
    meta = read_model_meta(model)
    enc = load_encoder(model)
    wv = getattr(enc, "word_vectors", None)
    if wv is None:
        wv = getattr(enc, "wordvecs", None)
    can_encode = wordvector_can_encode(wv, subwords=True) if meta["method"] == "dan" and wv is not None else None
    scorers: list[tuple[str, Callable, Callable | None]] = [(meta["method"], enc.encode, can_encode)]
    if "word-vectors" in baselines:
        if wv is None:
            raise KgnormError(f"--baseline word-vectors: a {meta['method']} model has no word vectors")
        scorers.append(("avg-wordvec", wv.average, wordvector_can_encode(wv, subwords=True)))
    report = RelatednessReport()
    for path, items in data:
        for name, encode, can in scorers:
            rep = spearman_relatedness(lambda terms, f=encode: f(list(terms)), items, can_encode=can, name=name)
            report.rows.append(_report_dict(path, rep))
            if rep.n_unencodable:
                shown = "; ".join(f"{p.term1!r}/{p.term2!r}" for p in rep.unencodable[:5])
                more = f" and {rep.n_unencodable - 5} more" if rep.n_unencodable > 5 else ""
                report.notes.append(f"{path.name}: {name} cannot encode {rep.n_unencodable} pair(s): {shown}{more}")
    return report
