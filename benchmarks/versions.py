"""Issue 27: a new MEDIC version keeps NCBI-disease dev's links. Appended to benchmarks/LOG.md.

CTD's 2017 file is not here, so "v2" is derived from MEDIC 2012 (seeded): `--merge` concepts
are folded into another concept (their ids appended to its id list, their names to its
synonyms: what CTD does when it merges), `--remove` vanish without a successor; half of each
are chosen among the concepts dev's run links to, so that links move and orphan. Every step
is the `kgnorm` command a user runs (timed as a child process):
ingest 2012 -> untrained BioSyn -> link dev -> ingest v2 --dry-run -> ingest v2 ->
untrained BioSyn on v2 -> link --relink-orphans; then the store's edges are compared with
what the plan implies (every link to a surviving concept kept, every link to a merged id
moved to the concept that lists it, the rest orphaned, then relinked).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import add_data_option, append, data_dir  # noqa: E402

DATA = data_dir()  # --data DIR, default ../shared/data

MEDIC = DATA / "medic" / "medic_06Jul2012.txt"
DEV = DATA / "ncbi-disease" / "NCBIdevelopset_corpus.txt"
KG = [sys.executable, "-m", "kgnorm.cli"]


def kg(*args: str) -> tuple[float, str, str]:
    """Run one kgnorm command: (wall seconds, stdout, stderr); a failure stops the benchmark."""
    t0 = time.perf_counter()
    p = subprocess.run([*KG, *args], capture_output=True, text=True,
                       env={**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"})
    if p.returncode != 0:
        raise SystemExit(f"kgnorm {' '.join(args)} failed: {p.stderr.strip()[-2000:]}")
    dt = time.perf_counter() - t0
    if args[0] != "query":
        from kgnorm.stores import redact
        print(f"{dt:7.1f} s  kgnorm {redact(' '.join(args))}", flush=True)
    return dt, p.stdout, p.stderr


def query(store: str, cypher: str) -> list[dict]:
    return json.loads(kg("query", cypher, "--format", "json", "--store", store)[1])


def derive_v2(src: Path, dst: Path, linked: set[str], n_merge: int, n_remove: int, seed: int
              ) -> tuple[dict[str, str], set[str]]:
    """Write the derived v2; (merged uid -> the uid that lists it now, removed uids)."""
    from kgnorm.ontologies.medic import mesh_first, normalize_id

    lines = src.read_text(encoding="utf-8").splitlines()
    ids = [mesh_first([normalize_id(x) for x in ln.split("||", 1)[0].split("|")]) for ln in lines]
    alt_anywhere = {a for uids in ids for a in uids[1:]}
    # candidates: MeSH-first lines whose uid is nobody's alt id (so the merge is the only successor)
    cand = [i for i, uids in enumerate(ids) if uids[0].startswith("MESH:D") and uids[0] not in alt_anywhere]
    rng = random.Random(seed)
    linked_c = [i for i in cand if ids[i][0] in linked]
    other_c = [i for i in cand if ids[i][0] not in linked]
    rng.shuffle(linked_c)
    rng.shuffle(other_c)
    # half of each among the linked concepts (as far as there are enough), the rest among the others
    half_m = min(n_merge // 2, len(linked_c) // 2)
    half_r = min(n_remove // 2, len(linked_c) - half_m)
    merged_i = linked_c[:half_m] + other_c[:n_merge - half_m]
    removed_i = linked_c[half_m:half_m + half_r] + other_c[n_merge - half_m:n_merge - half_m + n_remove - half_r]
    gone = set(merged_i) | set(removed_i)
    targets = [i for i in cand if i not in gone]
    out = list(lines)
    merged: dict[str, str] = {}
    for i in merged_i:
        t = rng.choice(targets)
        ids_t, names_t = out[t].split("||", 1)
        ids_i, names_i = lines[i].split("||", 1)
        out[t] = f"{ids_t}|{ids_i}||{names_t}|{names_i}"
        merged[ids[i][0]] = ids[t][0]
    for i in sorted(gone, reverse=True):
        del out[i]
    dst.write_text("\n".join(out) + "\n", encoding="utf-8")
    return merged, {ids[i][0] for i in removed_i}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_data_option(ap)
    ap.add_argument("--merge", type=int, default=200)
    ap.add_argument("--remove", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--reuse-model", action="store_true",
                    help="Reuse WORKDIR/m1 and WORKDIR/m2 (the untrained models of an earlier run with the same "
                         "seed and counts: the same v2) instead of building them.")
    ap.add_argument("--bolt", action="store_true",
                    help="Run it over Bolt against a throwaway ArcadeDB server (arcadedb-embedded) instead of LadybugDB.")
    args = ap.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="kgnorm-versions-"))
    for old in work.glob("graph*"):  # a fresh store (LadybugDB: a file, and its .wal / .holder)
        shutil.rmtree(old) if old.is_dir() else old.unlink()
    if not args.bolt:
        run(args, work, f"ladybug://{work}/graph", "LadybugDB store")
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from bolt_server import ArcadeDBProcess

    root = work / "arcadedb"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir()
    server = ArcadeDBProcess(root)
    os.environ["KGNORM_NEO4J_DATABASE"] = server.database
    try:
        run(args, work, server.uri, "Bolt store (ArcadeDB via arcadedb-embedded, a child process)")
    finally:
        server.stop()


def run(args: argparse.Namespace, work: Path, store: str, store_label: str) -> None:
    t: dict[str, float] = {}
    t["ingest 2012"], _, _ = kg("ingest", "medic", str(MEDIC), "--store", store, "-q")
    if not (args.reuse_model and (work / "m1" / "kgnorm-model.json").exists()):
        shutil.rmtree(work / "m1", ignore_errors=True)
        t["train biosyn (untrained) on 2012"], _, _ = kg("train", "biosyn", "--ontology", "medic", "--out",
                                                         str(work / "m1"), "--threads", "1", "--store", store, "-q")
    reuse_m2 = args.reuse_model and (work / "m2" / "kgnorm-model.json").exists()
    if not reuse_m2:
        shutil.rmtree(work / "m2", ignore_errors=True)
    t["link dev"], _, _ = kg("link", "--model", str(work / "m1"), "--input", str(DEV), "--output",
                             str(work / "dev.tsv"), "--store", store, "-q")
    before = query(store, "MATCH (m:Mention)-[l:LINKED_TO]->(c:Concept) RETURN m.uid AS m, c.uid AS c")
    v2 = work / "medic_v2_derived.txt"
    linked_set = {r["c"] for r in before}
    merged, removed = derive_v2(MEDIC, v2, linked_set, args.merge, args.remove, args.seed)
    print(f"v2: {len(merged)} merged, {len(removed)} removed", flush=True)
    t["ingest v2 --dry-run"], _, dry = kg("ingest", "medic", str(v2), "--dry-run", "--store", store)
    t["ingest v2"], _, note = kg("ingest", "medic", str(v2), "--store", store)
    after = query(store, "MATCH (m:Mention)-[l:LINKED_TO]->(c:Concept) "
                         "RETURN m.uid AS m, c.uid AS c, coalesce(l.moved_from, '') AS f")
    orphans = query(store, "MATCH (m:Mention)-[r:ORPHAN_OF]->(:Ontology {name: 'medic'}) "
                           "RETURN m.uid AS m, r.concept_uid AS c")
    want_links = sorted((r["m"], merged.get(r["c"], r["c"]), r["c"] if r["c"] in merged else "")
                        for r in before if r["c"] not in removed)
    want_orphans = sorted((r["m"], r["c"]) for r in before if r["c"] in removed)
    got_links = sorted((r["m"], r["c"], r["f"]) for r in after)
    got_orphans = sorted((r["m"], r["c"]) for r in orphans)
    kept = sum(1 for r in before if r["c"] not in merged and r["c"] not in removed)
    moved = sum(1 for r in before if r["c"] in merged)
    checks = {"links as the plan implies (kept + moved, moved_from set)": got_links == want_links,
              "orphans as the plan implies": got_orphans == want_orphans}
    if not reuse_m2:
        t["train biosyn (untrained) on v2"], _, _ = kg("train", "biosyn", "--ontology", "medic", "--out",
                                                       str(work / "m2"), "--threads", "1", "--store", store, "-q")
    t["link --relink-orphans"], _, relink = kg("link", "--model", str(work / "m2"), "--relink-orphans",
                                               "--output", str(work / "relinked.tsv"), "--store", store)
    left = query(store, "MATCH (m:Mention)-[:ORPHAN_OF]->(:Ontology) RETURN count(DISTINCT m) AS n")[0]["n"]
    checks["no orphan left after --relink-orphans"] = left == 0
    n_mentions = len({r["m"] for r in before})
    n_linked = len({r["c"] for r in before})
    body = [f"MEDIC 2012 ({MEDIC.name}) -> derived v2 ({len(merged)} concepts merged into another's ids, "
            f"{len(removed)} removed, seed {args.seed}; {sum(1 for u in merged if u in linked_set)} merged and "
            f"{sum(1 for u in removed if u in linked_set)} removed among the {n_linked} concepts dev's run links to); "
            f"NCBI-disease dev ({DEV.name}): {n_mentions:,} mentions, {len(before):,} LINKED_TO edges "
            f"(untrained BioSyn: char tf-idf + MiniLM, write-top-k 1). {store_label}. Other jobs may share the "
            "machine: times are noisy.", "",
            f"- links: {kept:,} kept, {moved:,} moved, {len(want_orphans):,} orphaned "
            f"({len({m for m, _ in want_orphans}):,} mentions)",
            "- `ingest --dry-run` said: " + " / ".join(ln.strip() for ln in dry.splitlines() if "links:" in ln),
            "- `ingest` said: " + " ".join(ln.strip() for ln in note.splitlines() if "kept" in ln),
            "- `link --relink-orphans` said: " + " ".join(ln.strip() for ln in relink.splitlines() if "linked" in ln),
            ""]
    body += [f"- check: {k}: {'yes' if ok else 'NO'}" for k, ok in checks.items()]
    body += ["", "| step (a `kgnorm` child process) | wall s |", "|---|---:|"]
    body += [f"| {k} | {v:.1f} |" for k, v in t.items()]
    if args.reuse_model:
        body.append("\n(--reuse-model: models not built here were built by an earlier run of this script in the "
                    "same workdir, with the same seed and counts.)")
    append("MEDIC versions keep their links (issue 27)", "\n".join(body))
    if not all(checks.values()):
        raise SystemExit("a check failed")


if __name__ == "__main__":
    main()
