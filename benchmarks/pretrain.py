"""An encoder pretrained on the graph (``kgnorm pretrain``) vs the offline MiniLM, dense-only
linking with no task training, on NCBI-disease dev and BC5CDR-disease dev against MEDIC 2012.

1. Pretraining: ``kgnorm pretrain --ontology … --max-minutes M --threads T`` in a child process
   (or ``--pretrained DIR``: a directory an earlier ``kgnorm pretrain`` wrote, whose
   ``kgnorm-pretrain.json`` gives steps and time; ``--pretrained-by`` records its command).
2. For each encoder, the same dense-only linker: a BioSyn model directory that is never
   trained (MEDIC names, mean pooling, L2-normalized vectors = cosine, FAISS exact inner product,
   sparse weight 0 so the score is the dense cosine alone), written through the library as
   ``kgnorm train biosyn`` writes its untrained models.
3. ``kgnorm link --no-write --output F.tsv`` in a child process on each dev set; accuracy is
   scored from that TSV only, STRICTLY: the rank-1 row's concept uids (one per composite part)
   must equal the gold parts, a predicted concept matching a gold part through its own uid or
   one of ITS alt ids (a concept sharing the name earns nothing; parts in any order; a gold
   part ``A|B`` or ``A+B`` accepts either). Mentions without gold (``-1``) are left out and counted. This is an independent
   scorer written here until issue 14's ``kgnorm eval link --predictions`` lands.
4. UMNSRS similarity and relatedness: ``kgnorm eval relatedness`` (Spearman of cosine vs human
   scores) on the same two model directories.
5. Clean evaluation: how many dev mentions (and distinct texts) occur verbatim -- after the
   linkers' name normalization -- among the pretraining names, and Acc@1 on those that do not.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import add_data_option, append, data_dir, f4, run_child  # noqa: E402

DATA = data_dir()  # --data DIR, default ../shared/data

DEVS = {"ncbi-disease": "ncbi-disease/NCBIdevelopset_corpus.txt", "bc5cdr-disease": "bc5cdr-disease/dev.concept"}
MEDIC_FILE = "medic/medic_06Jul2012.txt"


def kgnorm(*args: str) -> list[str]:
    return [sys.executable, "-m", "kgnorm.cli", *args]


def ensure_medic(store: str, ontology: str) -> None:
    from kgnorm.stores import open_store, store_exists

    if store_exists(store):
        with open_store(store, read_only=True) as st:
            if st.ontology_info(ontology) is not None:
                return
    subprocess.run(kgnorm("ingest", "medic", str(DATA / MEDIC_FILE), "--ontology", ontology,
                          "--store", store, "-q"), check=True)


def dense_only_model(store: str, ontology: str, encoder: Path | None, out: Path) -> tuple[float, int]:
    """An untrained dense-only linker directory; (seconds to encode + index, names)."""
    from kgnorm.graph.views import read_ontology
    from kgnorm.methods.biosyn.model import BioSynModel
    from kgnorm.linking.dictionary import ontology_dictionary
    from kgnorm.methods.model_dir import update_meta
    from kgnorm.stores import open_store
    from kgnorm.text.pipeline import TextPipeline

    with open_store(store, read_only=True) as st:
        snap = read_ontology(st, ontology, with_edges=False)
    dictionary = ontology_dictionary(snap, TextPipeline().normalize_name)
    model = BioSynModel.create(dictionary, encoder=encoder, pooling="mean", max_length=25, normalize=True,
                               sparse_weight=0.0)
    t0 = time.perf_counter()
    model.build_index()
    seconds = time.perf_counter() - t0
    model.save(out, ontology={"name": ontology, "version": snap.version},
               hyper_parameters={"pooling": "mean", "max_length": 25, "normalize": True, "trained": False,
                                 "dense_only": True})
    update_meta(out, ontology=ontology, ontology_version=snap.version,
                text_pipeline={"lowercase": True, "normalize": True, "abbreviations": True, "composites": True})
    return seconds, len(dictionary)


def alt_index(store: str, ontology: str) -> dict[str, set[str]]:
    """uid -> {uid} ∪ its alt ids."""
    from kgnorm.graph.views import read_ontology
    from kgnorm.stores import open_store

    with open_store(store, read_only=True) as st:
        snap = read_ontology(st, ontology, with_edges=False)
    return {c.uid: {c.uid, *c.alt_ids} for c in snap.concepts}


def score(tsv: Path, dev: Path, mentions, ids: dict[str, set[str]]) -> tuple[list[bool], set[int], int]:
    """The TSV `link` wrote, scored by the project's one scorer (what `kgnorm eval link --predictions`
    runs): per scored mention, whether its rank-1 concept is right; the mentions left out (no
    linkable gold); and the mentions written as nil or without a rank."""
    from kgnorm.evaluation.link_predictions import align, read_link_tsv
    from kgnorm.evaluation.link_accuracy import accuracy_at_k

    predicted = align(read_link_tsv(tsv), [m.mention_id for m in mentions], tsv, dev)
    rep = accuracy_at_k([p.ranked() for p in predicted], [list(m.gold) for m in mentions], ks=(1,), alt_ids=ids)
    skip = {i for i, r in enumerate(rep.ranks) if r is None}
    ok = [r == 1 for r in rep.ranks if r is not None]
    unranked = sum(1 for i, p in enumerate(predicted) if i not in skip and not any(p.ranked()))
    return ok, skip, unranked


def _pretraining_line(label: str, pmeta: dict, pre_cmd: str, pre_wall: float | None) -> str:
    hist = pmeta.get("history") or []
    return (f"Pretraining ({label}): `{pre_cmd}`" + (f" (run by this script; wall incl. start-up {pre_wall:.0f} s)"
                                                      if pre_wall else " (run before this script)") + ". "
            f"Ontologies {', '.join(o['name'] + ' ' + str(o['version']) for o in pmeta['ontologies'])}: "
            f"{pmeta['concepts']:,} concepts with two or more names, {pmeta['names']:,} names; "
            f"{pmeta['config']['concepts_per_batch']} concepts × {pmeta['config']['names_per_concept']} names per step, "
            f"α {pmeta['config']['alpha']}, β {pmeta['config']['beta']}, λ {pmeta['config']['lam']}, "
            f"ε {pmeta['config']['epsilon']}, AdamW lr {pmeta['config']['lr']}, pooling {pmeta['pooling']}, "
            f"hierarchy term {'on' if pmeta['config']['hierarchy'] else 'off'}. "
            f"{pmeta['steps']:,} steps ({pmeta['epochs_completed']} full epoch(s); "
            f"{'all epochs done' if pmeta['complete'] else 'stopped by the time budget'}) in "
            f"{pmeta['train_seconds']:.0f} s of training steps"
            + (f"; loss {hist[0]['loss']:.4f} (first {pmeta['config']['log_steps']} steps) → "
               f"{hist[-1]['loss']:.4f} (last logged steps)" if hist else "") + ".\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_option(ap)
    ap.add_argument("--store", required=True, help="Store holding MEDIC (ingested here when absent).")
    ap.add_argument("--medic", default="medic", help="MEDIC's ontology name in the store (the link dictionary).")
    ap.add_argument("--ontology", action="append", help="Pretraining ontologies (default: MEDIC).")
    ap.add_argument("--pretrained", type=Path, action="append",
                    help="Use this pretrained encoder instead of pretraining here (repeat to compare several, "
                         "all pretrained on --ontology).")
    ap.add_argument("--pretrained-by", action="append", default=[],
                    help="The command that wrote each --pretrained (recorded; one per --pretrained).")
    ap.add_argument("--max-minutes", type=float, default=20.0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--work", type=Path, default=Path("/tmp/kgnorm-bench-pretrain"))
    ap.add_argument("--no-append", action="store_true")
    a = ap.parse_args()
    import torch

    torch.set_num_threads(a.threads)
    os.environ.setdefault("OMP_NUM_THREADS", str(a.threads))
    from kgnorm.encoders.dense import default_encoder_path
    from kgnorm.mentions.readers import read_mentions_with_abbreviations
    from kgnorm.methods.pretrain import META_FILE, read_pretrain_data
    from kgnorm.stores import open_store
    from kgnorm.text.pipeline import TextPipeline

    ontologies = a.ontology or [a.medic]
    a.work.mkdir(parents=True, exist_ok=True)
    ensure_medic(a.store, a.medic)
    pre_cmds = list(a.pretrained_by)
    pre_wall = None
    if not a.pretrained:
        a.pretrained = [a.work / "pretrained"]
        args = ["pretrain", *[x for o in ontologies for x in ("--ontology", o)], "--out", str(a.pretrained[0]),
                "--max-minutes", str(a.max_minutes), "--threads", str(a.threads), "--store", a.store, "-q"]
        pre_cmds = ["kgnorm " + " ".join(args)]
        pre_wall, _ = run_child(kgnorm(*args), env={"OMP_NUM_THREADS": str(a.threads)})
    pre_cmds += [""] * (len(a.pretrained) - len(pre_cmds))
    metas = {d: json.loads((d / META_FILE).read_text()) for d in a.pretrained}
    with open_store(a.store, read_only=True) as st:
        pre_names = set(read_pretrain_data(st, ontologies).names)
    ids = alt_index(a.store, a.medic)
    norm = TextPipeline().normalize_name
    label_of = {d: ("pretrained" if len(a.pretrained) == 1 else f"pretrained `{d.name}`") for d in a.pretrained}
    encoders = {"MiniLM (offline all-MiniLM-L6-v2)": default_encoder_path(),
                **{label_of[d]: d for d in a.pretrained}}
    rows, enc_lines, rel_lines = [], [], []
    umnsrs = [DATA / "umnsrs/UMNSRS_similarity.csv", DATA / "umnsrs/UMNSRS_relatedness.csv"]
    for label, enc in encoders.items():
        mdir = a.work / ("model-" + ("minilm" if enc not in metas else "pretrained-" + enc.name))
        secs, n_names = dense_only_model(a.store, a.medic, enc, mdir)
        enc_lines.append(f"| {label} | {n_names:,} names encoded + indexed in {secs:.0f} s "
                         f"({n_names / secs:,.0f} names/s) |")
        rel_out = subprocess.run(kgnorm("eval", "relatedness", "--model", str(mdir), *[x for p in umnsrs for x in
                                        ("--pairs", str(p))], "--format", "json", "-q"),
                                 check=True, capture_output=True, text=True).stdout
        for r in json.loads(rel_out):
            rel_lines.append(f"| {Path(r['file']).stem} | {label} | {f4(r['spearman'])} | {r['n_used']} / "
                             f"{r['n_pairs']} |")
        for ds, rel in DEVS.items():
            dev = DATA / rel
            mentions = [m for m, _ in read_mentions_with_abbreviations(dev)]
            tsv = a.work / f"{mdir.name}-{ds}.tsv"
            wall, _ = run_child(kgnorm("link", "--model", str(mdir), "--input", str(dev), "--no-write", "--top-k", "1",
                                       "--output", str(tsv), "--store", a.store, "-q"),
                                env={"OMP_NUM_THREADS": str(a.threads)})
            ok, skip, missing = score(tsv, dev, mentions, ids)
            kept = [m for i, m in enumerate(mentions) if i not in skip]
            seen = [norm(m.text) in pre_names for m in kept]
            unseen_ok = [c for c, s in zip(ok, seen) if not s]
            texts = {norm(m.text) for m in kept}
            rows.append(f"| {ds} | {label} | {f4(sum(ok) / len(ok))} | {len(ok)} | {len(skip)} | {missing} | "
                        f"{sum(seen)} ({sum(1 for t in texts if t in pre_names)} of {len(texts)} distinct texts) | "
                        f"{f4(sum(unseen_ok) / max(len(unseen_ok), 1))} ({len(unseen_ok)}) | {wall:.0f} s |")
    body = "\n".join([
        "Encoder pretrained on the graph: contrastive self-alignment on the ontologies' synonym sets "
        "(Multi-Similarity loss with online hard-pair mining, SapBERT's recipe) from the offline MiniLM; then "
        "dense-only linking with NO task training (an untrained BioSyn directory with sparse weight 0: cosine of "
        "mean-pooled vectors, FAISS exact inner product over MEDIC's normalized names), `kgnorm link --no-write "
        "--top-k 1` in a child process, scored from that TSV by the project's one strict scorer (kgnorm.evaluation.link_predictions + link_accuracy."
        "accuracy_at_k, what `kgnorm eval link --predictions` runs: the rank-1 concept's uid or one of its own alt "
        "ids equals the gold, part by part). Torch threads "
        f"{a.threads}.",
        "",
        *[_pretraining_line(label_of[d], metas[d], cmd, pre_wall) for d, cmd in zip(a.pretrained, pre_cmds)],
        "| dataset | encoder | strict Acc@1 | mentions scored | without gold (left out) | written nil or unranked | "
        "mentions whose normalized text is a pretraining name | strict Acc@1 on the others (n) | `kgnorm link` wall |",
        "|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        "UMNSRS (`kgnorm eval relatedness --model DIR --pairs UMNSRS_similarity.csv --pairs "
        "UMNSRS_relatedness.csv`, the same two directories): Spearman of cosine vs human scores.",
        "",
        "| file | encoder | Spearman | pairs used |",
        "|---|---|---|---|",
        *rel_lines,
        "",
        "| encoder | dictionary encoding |",
        "|---|---|",
        *enc_lines,
    ])
    if a.no_append:
        print(body)
    else:
        append("Pretrained encoder (kgnorm pretrain) vs MiniLM: dense-only linking without task training", body)


if __name__ == "__main__":
    main()
