"""Where `kgnorm link`'s memory goes (issue 51): resident memory stage by stage as the ONNX link path
builds up, in one child process, and what each library link imports costs alone.

    python benchmarks/link_stages.py --model DIR [--gold FILE] [--label TEXT] [--store STORE]

Stages (one child, cumulative; each row: VmRSS, its anonymous and file-backed parts, VmHWM after
the stage): Python alone; the CLI's modules; the libraries the link path imports (numpy, scipy,
faiss, onnxruntime, tokenizers); the name dictionary; the name index (memory-mapped); the sparse
scorer; the ONNX query session; the sparse scorer's blocks (what its top-k builds on first use);
linking every distinct mention text of --gold (the link path's own batches). Imports alone: one fresh
child per library. The whole `kgnorm link --no-write` run's peak is benchmarks/link_peak.py's.
--store STORE (an embedded LadybugDB file): after the libraries, what a writing `link` adds before
it links: pyarrow and pandas (the store's bulk writes are COPY FROM data frames), the store opened
for writing with link's page cache (a fresh copy of STORE; kgnorm.jobs.run.LINK_BUFFER_POOL_MB) and
the model's ontology read from it (link's check_ontology), kept open while linking."""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import OFFLINE_ENV, add_data_option, append, data_dir  # noqa: E402

STATUS = """
import re
def status():
    d = dict(re.findall(r'(VmRSS|VmHWM|RssAnon|RssFile):\\s+(\\d+)', open('/proc/self/status').read()))
    return {k: int(v) / 1024 for k, v in d.items()}
"""

STAGES = STATUS + """
import json, sys
from pathlib import Path
out = [("Python alone", status())]
import kgnorm.cli.app
out.append(("+ the CLI's modules (kgnorm.cli.app)", status()))
from kgnorm.encoders.onnx_query import OnnxQueryEncoder
from kgnorm.methods.biosyn.retrieval import BioSynLinker, SavedParts
from kgnorm.linking.sparse import SparseScorer
from kgnorm.linking.cpu_features import query_path
from kgnorm.methods.model_dir import read_model_meta
from kgnorm.mentions.readers import read_mentions
import numpy, scipy.sparse, faiss, onnxruntime, tokenizers
out.append(("+ link's libraries (numpy, scipy, faiss, onnxruntime, tokenizers)", status()))
d, gold = Path(sys.argv[1]), sys.argv[2]
meta = read_model_meta(d, "biosyn")
if len(sys.argv) > 3:
    import pyarrow
    out.append(("+ pyarrow", status()))
    import pandas
    out.append(("+ pandas", status()))
    from kgnorm.jobs.run import LINK_BUFFER_POOL_MB
    from kgnorm.stores import open_store
    store = open_store(sys.argv[3], read_only=False, buffer_pool_mb=LINK_BUFFER_POOL_MB).__enter__()
    out.append((f"+ the store opened for writing (page cache {LINK_BUFFER_POOL_MB} MB)", status()))
    store.ontology_info(meta["ontology"])
    out.append(("+ the model's ontology read from it", status()))
from kgnorm.linking.dictionary import NameDictionary
dictionary = NameDictionary.load(d / meta.get("names", {}).get("path", "names"))
out.append((f"+ the name dictionary ({len(dictionary):,} names)", status()))
from kgnorm.linking.name_index import NameIndex
index = NameIndex.load(d / meta.get("index", {}).get("path", "index"), use_gpu=False)
index.engine = "onnx"
out.append((f"+ the name index ({index.ntotal:,} x {index.dim} {index.storage}, mapped: {index.mapped})", status()))
sparse = SparseScorer.load(d / meta.get("sparse", {}).get("path", "sparse"), precision="fp32")
out.append((f"+ the sparse scorer ({sparse.n_names:,} rows)", status()))
e = meta.get("encoder", {})
enc = OnnxQueryEncoder.for_encoder_dir(d / e.get("path", "encoder"), e.get("pooling", "cls"), e.get("max_length", 25),
                                       e.get("normalize", False), 1, query_path(engine="onnx")[0])
out.append((f"+ the ONNX query session ({enc.precision})", status()))
link = meta.get("link", {})
parts = SavedParts(meta, dictionary, index, sparse, float(meta.get("sparse_weight", 1.0)),
                   int(link.get("k_sparse", 20)), int(link.get("k_dense", 20)))
linker = BioSynLinker(enc, parts)
sparse._layout(max(parts.k_sparse, 5))
out.append(("+ the sparse scorer's blocks (dense terms x names, rare terms CSR)", status()))
texts = list(dict.fromkeys(m.text.lower() for m in read_mentions(gold)))
linker.link(texts, top_k=5, batch_size=1024)
out.append((f"+ linking the {len(texts):,} distinct mention texts (batches of 1,024)", status()))
print(json.dumps(out))
"""

LIBRARIES = ("numpy", "scipy.sparse", "faiss", "onnxruntime", "tokenizers", "sklearn", "transformers", "torch")


def _child(code: str, *args: str) -> str:
    return subprocess.run([sys.executable, "-c", code, *args], check=True, capture_output=True, text=True,
                          env={**__import__("os").environ, **OFFLINE_ENV, "OMP_NUM_THREADS": "1"}).stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_option(ap)
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--gold", default="bc5cdr-disease/dev.concept", help="under the data folder")
    ap.add_argument("--label", default="")
    ap.add_argument("--store", type=Path, default=None, help="an embedded store holding the model's ontology: "
                    "add a writing link's store stages (on a fresh copy of it)")
    args = ap.parse_args()
    gold = (data_dir() / args.gold).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        extra = [shutil.copy2(args.store, Path(tmp) / args.store.name)] if args.store is not None else []
        stages = json.loads(_child(STAGES, str(args.model.resolve()), str(gold), *map(str, extra)))
    rows = ["| stage | VmRSS | anon | file | Δ VmRSS | VmHWM |", "|---|---|---|---|---|---|"]
    prev = 0.0
    for name, s in stages:
        rows.append(f"| {name} | {s['VmRSS']:.0f} MB | {s['RssAnon']:.0f} | {s['RssFile']:.0f} | "
                    f"{s['VmRSS'] - prev:+.0f} | {s['VmHWM']:.0f} MB |")
        prev = s["VmRSS"]
    base = json.loads(_child(STATUS + "import json; print(json.dumps(status()))"))["VmRSS"]
    lib = ["| library | VmRSS after importing it alone (Python alone: %.0f MB) |" % base, "|---|---|"]
    for name in LIBRARIES:
        s = json.loads(_child(STATUS + f"import json, {name}; print(json.dumps(status()))"))
        lib.append(f"| {name} | {s['VmRSS']:.0f} MB (+{s['VmRSS'] - base:.0f}) |")
    body = (f"{args.label or args.model} on {args.gold}: one child, the ONNX link path's parts loaded as "
            "`link` loads them, 1 thread (OMP). anon / file: RssAnon / RssFile (MB) after each stage.\n\n"
            + "\n".join(rows) + "\n\nEach library imported alone in a fresh child:\n\n" + "\n".join(lib))
    print(body)
    append("link memory stage by stage (issue 51)", body)


if __name__ == "__main__":
    main()
