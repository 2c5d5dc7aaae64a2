"""`kgnorm embed` as a library call: vectors of names (one per line of a file, or given in
memory) or of every concept name of an ontology, written as OUTPUT.npy + OUTPUT.tsv."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from kgnorm.errors import KgnormError


@dataclass
class EmbedResult:
    n: int
    dim: int
    base: Path  # the files are base.npy and base.tsv


def embedding_inputs(input: str | Path | Sequence[str] | None = None, ontology: str | None = None,
                     store: str | None = None) -> tuple[list[str], list[str]]:
    """(texts, concept uids; "" for free names) of exactly one of `input` and `ontology`."""
    if (input is None) == (ontology is None):
        raise KgnormError("give exactly one of --input F or --ontology NAME")
    if input is not None:
        from kgnorm.mentions.readers import read_names

        texts = read_names(input) if isinstance(input, (str, Path)) else list(input)
        return texts, [""] * len(texts)
    from kgnorm.graph.views import read_ontology
    from kgnorm.stores import open_store

    with open_store(store, read_only=True) as st:
        snap = read_ontology(st, ontology, with_edges=False)
    pairs = [(c.uid, n) for c in snap.concepts for n in c.all_names()]
    return [p[1] for p in pairs], [p[0] for p in pairs]


def embed_names(model: str | Path, output: str | Path, input: str | Path | Sequence[str] | None = None,
                ontology: str | None = None, store: str | None = None, engine: str = "local",
                ray: Any = None) -> EmbedResult:
    """Encode and write; the .npy appears only once complete (written aside, then renamed).
    Names are encoded in blocks of EMBED_BATCH, in-process or (`engine="ray"`) by a pool of Ray
    actors (`ray`: a kgnorm.jobs.ray_engine.RayOptions): the same blocks, the same vectors."""
    from kgnorm.jobs.batch_work import EMBED_BATCH, EmbedBatchWork, batches_of
    from kgnorm.jobs.ray_engine import RayOptions, check_engine, ray_map

    from kgnorm.methods.model_dir import read_model_meta

    check_engine(engine, ray)
    read_model_meta(model)  # a model directory, checked before any work (a Ray driver loads no weights)
    texts, uids = embedding_inputs(input, ontology, store)
    work = EmbedBatchWork(str(Path(model).resolve()))
    if engine == "ray":
        parts = [v for _, v in ray_map(work, batches_of(texts, EMBED_BATCH), ray or RayOptions())]
    else:
        one = work.open()
        parts = [one(b) for b in batches_of(texts, EMBED_BATCH)] or [one([])]
    vecs = np.concatenate(parts) if parts else np.zeros((0, 0), dtype=np.float32)
    output = Path(output)
    base = output.with_suffix("") if output.suffix in (".npy", ".tsv") else output
    base.parent.mkdir(parents=True, exist_ok=True)
    tmp = base.with_name(base.name + ".partial.npy")
    np.save(tmp, vecs)
    with open(base.with_name(base.name + ".tsv"), "w", encoding="utf-8") as fh:
        fh.write("row\ttext\tuid\n")
        for i, (t, u) in enumerate(zip(texts, uids)):
            fh.write(f"{i}\t{t}\t{u}\n")
    tmp.replace(base.with_name(base.name + ".npy"))
    return EmbedResult(len(texts), vecs.shape[1] if vecs.ndim == 2 else 0, base)
