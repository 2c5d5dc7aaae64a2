"""`kgnorm ingest mesh DIR --branches D` on the MeSH name tables (issue 49: ≤ 3 min, ≤ 2 GB on 2 cores),
beside the whole of MeSH in the same run; appended to benchmarks/LOG.md and benchmarks/results.jsonl.

DIR is the folder `../shared/data/mesh/fetch.sh DEST` prints (mesh_id_label_mappings.tsv and
mesh_supp_id_label_mappings.tsv); each ingest is a child process into a fresh embedded store, timed
with its CPU time and peak RSS (VmHWM), and the store then says what it holds.
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import add_data_option, append, kgnorm_stdout, record, run_child, OFFLINE_ENV  # noqa: E402

TABLES = ("mesh_id_label_mappings.tsv", "mesh_supp_id_label_mappings.tsv")
COUNTS = ("MATCH (c:Concept) WHERE c.ontology = 'mesh' RETURN count(c) AS concepts, sum(size(c.synonyms)) AS "
          "synonyms, sum(CASE WHEN c.level_label = 'supplementary' THEN 1 ELSE 0 END) AS supplementary")


def ingest(mesh: Path, store: Path, branches: list[str]) -> dict:
    """One `kgnorm ingest mesh` into a fresh store: wall s, CPU s, peak MB and what the store holds."""
    cmd = [sys.executable, "-m", "kgnorm.cli", "ingest", "mesh", str(mesh), "--ontology", "mesh",
           "--store", f"ladybug://{store}", "--quiet"]
    for b in branches:
        cmd += ["--branches", b]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, peak = run_child(cmd, env=OFFLINE_ENV)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    row = json.loads(kgnorm_stdout("query", COUNTS, "--format", "json", "--store", f"ladybug://{store}"))[0]
    is_a = json.loads(kgnorm_stdout("query", "MATCH (:Concept {ontology: 'mesh'})-[r:IS_A]->() RETURN count(r) AS n",
                                    "--format", "json", "--store", f"ladybug://{store}"))[0]["n"]
    concepts, synonyms = int(row["concepts"]), int(row["synonyms"])
    return {"wall": wall, "cpu": cpu, "peak": peak, "concepts": concepts, "names": concepts + synonyms,
            "supplementary": int(row["supplementary"]), "is_a": int(is_a)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    add_data_option(ap)
    ap.add_argument("--mesh", type=Path, default=None,
                    help="folder holding the two MeSH tables (default: DATA/mesh when it holds them)")
    ap.add_argument("--branches", action="append", default=None, help="tree letters to keep (default: D)")
    args = ap.parse_args()
    mesh = args.mesh or args.data / "mesh"
    if not (mesh / TABLES[0]).is_file():
        sys.exit(f"no {TABLES[0]} in {mesh}: run `bash {args.data / 'mesh' / 'fetch.sh'} DEST` and pass --mesh DEST")
    branches = args.branches or ["D"]
    with tempfile.TemporaryDirectory(prefix="kgnorm-bench-mesh-") as tmp:
        chosen = ingest(mesh, Path(tmp) / "branches", branches)
        whole = ingest(mesh, Path(tmp) / "whole", [])
    flags = " ".join(f"--branches {b}" for b in branches)
    lines = [f"| `kgnorm ingest mesh DIR` (name tables, fresh embedded store) | concepts (supplementary) | names | "
             f"IS_A | wall | CPU | peak RSS |", "|---|---|---|---|---|---|---|"]
    for label, r in ((f"`{flags}` (target ≤ 3 min, ≤ 2 GB)", chosen), ("all of MeSH (no --branches)", whole)):
        lines.append(f"| {label} | {r['concepts']:,} ({r['supplementary']:,}) | {r['names']:,} | {r['is_a']:,} | "
                     f"{r['wall']:.1f} s | {r['cpu']:.1f} s | {r['peak']:,.0f} MB |")
    append("Ingest of the MeSH name tables (issue 49)", "\n".join(lines))
    record("speed", f"ingest MeSH name tables {flags} ({chosen['concepts']:,} concepts, {chosen['names']:,} names)",
           f"{chosen['wall']:.0f} s, peak RSS {chosen['peak'] / 1024:.2f} GB",
           command_line=f"kgnorm ingest mesh DIR {flags} --ontology mesh")


if __name__ == "__main__":
    main()
