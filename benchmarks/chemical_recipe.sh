#!/bin/bash
# The chemical recipe of docs/recipes.md ("Chemicals to MeSH") as a user runs it from a bare clone:
#
#   bash benchmarks/chemical_recipe.sh WORK MESH_DIR [DATA_DIR]
#
# clones this checkout into WORK/kgnorm, makes a fresh venv there (torch's CPU wheel, then
# `pip install -e .`: install time is not the recipe's), and runs the recipe's three commands in
# WORK/run with an empty model cache (WORK/cache), each under /usr/bin/time: "<wall s>_s_<peak KB>_KB".
# MESH_DIR: the folder ../shared/data/mesh/fetch.sh printed; DATA_DIR: ../shared/data (default).
# Prints to stdout; the figures go into benchmarks/LOG.md by hand (the run takes an hour or more).
set -euo pipefail
WORK=$(realpath -m "$1"); MESH=$(realpath "$2")
DATA=$(realpath "${3:-$(dirname "$0")/../../shared/data}")
REPO=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
rm -rf "$WORK" && mkdir -p "$WORK/run"
git clone -q "$REPO" "$WORK/kgnorm"
python3 -m venv "$WORK/kgnorm/.venv"
"$WORK/kgnorm/.venv/bin/pip" install -q torch==2.13.0
"$WORK/kgnorm/.venv/bin/pip" install -q -e "$WORK/kgnorm"
cd "$WORK/run"
cp -r "$MESH" mesh && cp "$DATA"/bc5cdr-chemical/{train,dev}.concept .
export PATH="$WORK/kgnorm/.venv/bin:$PATH" KGNORM_CACHE_DIR="$WORK/cache" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
T="/usr/bin/time -f %e_s_%M_KB"
echo "commit $(git -C "$WORK/kgnorm" rev-parse --short HEAD); $(nproc) cores; load $(cut -d' ' -f1 /proc/loadavg)"
date -u
$T kgnorm ingest mesh mesh/ --branches D --ontology mesh
date -u
$T kgnorm train biosyn --ontology mesh --train train.concept --dev dev.concept --out models/chem
date -u
$T kgnorm eval link --model models/chem --gold dev.concept --allow-unknown-gold
date -u
