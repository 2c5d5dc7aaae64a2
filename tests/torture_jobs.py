"""Crash and I/O-fault torture (issue 52), shared by tests/test_torture.py and benchmarks/torture.py.

Each job (ingest, re-ingest, `link --write`, `annotate`, `place`, reviews through `kgnorm serve`)
runs as a `kgnorm` subprocess on a copy of a small store. A kill cycle SIGKILLs it at a given moment
(seconds after its start), then asks what a user would: does the store open, does `kgnorm check`
pass once a writer reopened it, is every review the API acknowledged there, and does the job run
again finish with what an uninterrupted run gives. A fault cycle runs it under a file size limit
(RLIMIT_FSIZE) or with the store's folder made read-only midway: it must fail with one line, exit
non-zero and leave the store as it was. Everything is compared by content (`snapshot`), never by
run uids or timestamps."""
from __future__ import annotations

import itertools
import os
import random
import resource
import shutil
import signal
import stat
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from annotate_fixtures import DOCS, OBO, write_jsonl, write_pubtator
from cli_runner import exit_code

KGNORM = [sys.executable, "-m", "kgnorm.cli"]
# a second version of the toy ontology: one concept renamed, one gone (its links go), one new
OBO_V2 = (OBO.replace("toyd/2099-01-01", "toyd/2099-02-01").replace("name: colorectal cancer\n", "")
          .replace("id: TOYD:0004\nis_a: TOYD:0000\n", "id: TOYD:0006\nname: colon cancer\nis_a: TOYD:0000\n")
          .replace("name: ovarian cancer", "name: ovarian carcinoma"))
# the ontology `place` puts into toyd's hierarchy
SOURCE_OBO = """format-version: 1.2
data-version: toyx/2099-01-01
ontology: toyx

[Term]
id: TOYX:1
name: breast carcinoma

[Term]
id: TOYX:2
name: ataxia telangiectasia syndrome

[Term]
id: TOYX:3
name: cancer of the ovary

[Term]
id: TOYX:4
name: kidney disease
"""
PUBTATOR_DOCS = [("1001", "Ataxia telangiectasia and breast cancer.",
                  "Carriers of ataxia telangiectasia mutations have breast cancer more often.",
                  [("Ataxia telangiectasia", "TOYD:0001"), ("breast cancer", "TOYD:0002")]),
                 ("1002", "Ovarian cancer in families.", "No link between ovarian cancer and colorectal cancer.",
                  [("Ovarian cancer", "TOYD:0003"), ("colorectal cancer", "TOYD:0004")])]


def write_tiny_bert(d: Path) -> Path:
    """The tiny random BERT of conftest's `tiny_bert_dir`, for a benchmark that has no pytest."""
    import string

    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    from conftest import _SPECIAL, _WORDS, _make_tokenizer

    d.mkdir(parents=True, exist_ok=True)
    chars = list(string.ascii_lowercase + string.digits)
    vocab = list(dict.fromkeys(_SPECIAL + chars + ["##" + c for c in chars] + _WORDS + ["##" + w for w in _WORDS]
                               + [a + b for a in "aeiou" for b in "nrst"]
                               + ["##" + a + b for a in "aeiou" for b in "nrst"] + list(string.punctuation)))
    (d / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    _make_tokenizer(BertTokenizerFast, d / "vocab.txt", vocab).save_pretrained(str(d))
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=64, type_vocab_size=2)).save_pretrained(str(d))
    return d


# -- stores: a folder holding the embedded store and its journal, copied for every cycle -------------
@dataclass
class Bolt:
    """A Bolt store (tests/bolt_server.py's ArcadeDB) tortured in place of the embedded one: one
    database, wiped and rebuilt from the kgnorm commands that made each base store (in-process)
    where the embedded store's folder would be copied; the folder then holds only the job's outputs."""
    uri: str
    # base folder name -> its steps: kgnorm commands, or callables (the reviews of the 'reviewed' base)
    recipes: dict[str, list[list[str] | Callable[[], None]]] = field(default_factory=dict)


BOLT: Bolt | None = None  # set by the benchmark's --bolt


def uri(folder: Path) -> str:
    return BOLT.uri if BOLT is not None else f"ladybug://{folder}/graph"


def has_store(folder: Path) -> bool:
    return BOLT is not None or (folder / "graph").exists()


def copy_store(base: Path | None, dest: Path) -> Path:
    if dest.exists():
        _writable(dest)
        shutil.rmtree(dest)
    if BOLT is not None:
        dest.mkdir(parents=True)
        _rebuild(BOLT, base.name if base is not None else None)
    elif base is None:
        dest.mkdir(parents=True)
    else:
        shutil.copytree(base, dest)
    return dest


def _rebuild(bolt: Bolt, base: str | None) -> None:
    """The Bolt database wiped, then made by the base store's commands."""
    from kgnorm.stores import open_store

    with open_store(bolt.uri) as st:
        st.query("MATCH (n) DETACH DELETE n")
    for step in bolt.recipes[base] if base is not None else []:
        step() if callable(step) else _ok([*step, "--store", bolt.uri])


def bolt_recipes(w: World) -> dict[str, list[list[str]]]:
    """The commands that built each base store of `w` (build_world), for a Bolt store; outputs
    go to the world's folder."""
    r = w.root
    ont = [["ingest", "obo", str(r / "toyd.obo"), "--ontology", "toyd", "-q"],
           ["ingest", "obo", str(r / "toyx.obo"), "--ontology", "toyx", "-q"]]
    annotated = [*ont, w.jobs["annotate"].args(r)]
    return {"ontologies": ont, "linked": [*ont, w.jobs["link"].args(r)], "annotated": annotated,
            "reviewed": [*annotated, lambda: _review_all(w, r)]}


def _writable(folder: Path) -> None:
    for p in [folder, *folder.rglob("*")]:
        if p.is_dir():
            p.chmod(p.stat().st_mode | stat.S_IWUSR | stat.S_IXUSR)


def _rows(st: Any, cypher: str) -> list[tuple]:
    return sorted(tuple(round(x, 4) if isinstance(x, float) else x for x in r) for r in st.query(cypher).rows)


def snapshot(folder: Path) -> dict[str, Any]:
    """What the store holds, by content: no run uids or times, scores to 4 decimals. Empty when there
    is no store yet (an ingest killed before it made one)."""
    from kgnorm.stores import open_store

    if not has_store(folder):
        return {}
    with open_store(uri(folder), read_only=True) as st:
        return {key: _rows(st, cypher) for key, cypher in QUERIES.items()}


QUERIES = {  # a snapshot's parts
    "ontologies": "MATCH (o:Ontology) RETURN o.name, o.version, o.concept_count",
    "concepts": "MATCH (c:Concept) RETURN c.key, c.name, c.synonyms, c.alt_ids, c.obsolete",
    "is_a": "MATCH (a:Concept)-[:IS_A]->(b:Concept) RETURN a.key, b.key",
    "mentions": "MATCH (m:Mention) RETURN m.uid, m.text, m.doc_id, m.start, m.`end`",
    "documents": "MATCH (d:Document) RETURN d.uid, d.doc_id",
    "in": "MATCH (m:Mention)-[:`IN`]->(d:Document) RETURN m.uid, d.uid",
    "links": "MATCH (m:Mention)-[l:LINKED_TO]->(c:Concept) RETURN m.uid, c.key, l.score, l.rank, l.method",
    "placed": "MATCH (a:Concept)-[p:PREDICTED_IS_A]->(b:Concept) RETURN a.key, b.key, p.score, p.rank",
    "runs": "MATCH (r:Run) RETURN r.kind, r.method",
    "reviews": "MATCH (r:Review) WHERE r.current = true RETURN r.mention_uid, r.decision, r.concept_uid, r.reviewer",
}


def files_state(folder: Path) -> dict[str, tuple[int, int]]:
    """(size, mtime) of every file of the store folder: did the killed process touch it?"""
    out = {}
    for p in folder.iterdir():
        try:
            st = p.stat()
        except FileNotFoundError:  # removed by the job meanwhile
            continue
        if stat.S_ISREG(st.st_mode):  # a job's output folder (retrain's OUT) is not the store
            out[p.name] = (st.st_size, st.st_mtime_ns)
    return out


def store_state(folder: Path) -> Any:
    """What tells whether a killed process changed the store: its files' sizes and times (the
    embedded store), or its content, staging runs included (a Bolt store, read without writing)."""
    return snapshot(folder) if BOLT is not None else files_state(folder)


@contextmanager
def _write_probe(folder: Path) -> Iterator[Callable[[], bool]]:
    """A callable saying whether the store changed since the probe began: its files (the embedded
    store) or its count of nodes, read on one open connection (a Bolt store: a run's staging node
    is its first write)."""
    if BOLT is None:
        before = files_state(folder)
        yield lambda: files_state(folder) != before
        return
    from kgnorm.stores import open_store

    with open_store(BOLT.uri, read_only=True) as st:
        def count() -> int:
            return st.query("MATCH (n) RETURN count(n)").rows[0][0]
        n = count()
        yield lambda: count() != n


# -- the world: fixtures and base stores, built once --------------------------------------------------
@dataclass
class Job:
    name: str
    base: str | None        # the base store the job starts from (None: no store yet)
    args: Callable[[Path], list[str]]  # kgnorm arguments, given the cycle's folder (for outputs)
    # problems with what the job wrote outside the store, given the folder and whether the job finished
    outputs: Callable[[Path, bool], list[str]] | None = None


@dataclass
class World:
    root: Path
    model: Path
    ner: Path | None = None  # a tiny detector (retrain's --ner)
    bases: dict[str, Path] = field(default_factory=dict)
    jobs: dict[str, Job] = field(default_factory=dict)


def build_world(root: Path, bert: Path) -> World:
    """toyd (5 concepts), toyx (place's source), an untrained BioSyn over toyd, and the base stores:
    'ontologies' (toyd + toyx), 'linked' (+ a link run), 'annotated' (+ an annotate run)."""
    root.mkdir(parents=True, exist_ok=True)
    for name, text in (("toyd.obo", OBO), ("toyd_v2.obo", OBO_V2), ("toyx.obo", SOURCE_OBO)):
        (root / name).write_text(text, encoding="utf-8")
    write_pubtator(root / "docs.pubtator", PUBTATOR_DOCS)
    write_jsonl(root / "docs.jsonl", [*DOCS, {"id": "d4", "title": "Breast cancer and ovarian cancer.",
                                              "abstract": "Colorectal cancer, breast carcinoma."}])
    base = root / "bases"
    ont = copy_store(None, base / "ontologies")
    _ok(["ingest", "obo", str(root / "toyd.obo"), "--ontology", "toyd", "--store", uri(ont), "-q"])
    _ok(["ingest", "obo", str(root / "toyx.obo"), "--ontology", "toyx", "--store", uri(ont), "-q"])
    model = root / "biosyn"
    _ok(["train", "biosyn", "--ontology", "toyd", "--out", str(model), "--encoder", str(bert), "--store", uri(ont),
         "-q"])
    from test_annotate_formats import _tiny_detector

    w = World(root, model, _tiny_detector(bert, root / "ner", silent=False), {"ontologies": ont})
    for job in jobs(w).values():
        w.jobs[job.name] = job
    w.bases["linked"] = copy_store(ont, base / "linked")
    _ok([*w.jobs["link"].args(root), "--store", uri(w.bases["linked"])])
    w.bases["annotated"] = copy_store(ont, base / "annotated")
    _ok([*w.jobs["annotate"].args(root), "--store", uri(w.bases["annotated"])])
    w.bases["reviewed"] = _reviewed(w, base / "reviewed")
    return w


def _reviewed(w: World, folder: Path) -> Path:
    """The annotated store with every mention reviewed once (review_plan's first round) and every
    document marked done: what `retrain` learns from."""
    copy_store(w.bases["annotated"], folder)
    _review_all(w, folder)
    return folder


def _review_all(w: World, folder: Path) -> None:
    """_reviewed's reviews and done marks, written to the store of `folder` (annotated)."""
    from kgnorm.review.desk import ReviewDesk

    plan = review_plan(w, rebuild=False)
    desk = ReviewDesk(uri(folder))
    try:
        for mention, body in plan[:len(plan) // 2]:
            desk.record(mention, body["decision"], body.get("concept", ""), reviewer=body["reviewer"])
        with desk.reading() as st:
            documents = [r[0] for r in st.query("MATCH (d:Document) RETURN d.uid ORDER BY d.uid").rows]
        for d in documents:
            desk.mark_done(d, "r0")
        desk.flush()
    finally:
        desk.close()


def _ok(args: list[str]) -> None:
    code = exit_code(args)
    if code != 0:
        raise RuntimeError(f"kgnorm {' '.join(args)} exited {code}")


def jobs(w: World) -> dict[str, Job]:
    r, m = w.root, str(w.model)
    return {j.name: j for j in [
        Job("ingest", None, lambda d: ["ingest", "obo", str(r / "toyd.obo"), "--ontology", "toyd", "-q"]),
        Job("reingest", "linked", lambda d: ["ingest", "obo", str(r / "toyd_v2.obo"), "--ontology", "toyd", "-q"]),
        Job("link", "ontologies", lambda d: ["link", "--model", m, "--input", str(r / "docs.pubtator"), "--output",
                                             str(d / "links.tsv"), "-q"]),
        Job("annotate", "ontologies", lambda d: ["annotate", "--ner", "dictionary:toyd", "--model", m, "--input",
                                                 str(r / "docs.jsonl"), "--input-format", "jsonl", "--output",
                                                 str(d / "out.pubtator"), "-q"]),
        Job("place", "ontologies", lambda d: ["place", "--source", "toyx", "--target", "toyd", "--model", m,
                                              "--xrefs", "ignore", "--write-top-k", "2", "--output",
                                              str(d / "placed.tsv"), "-q"]),
        Job("retrain", "reviewed", lambda d: ["retrain", "--model", m, "--ner", str(w.ner), "--out", str(d / "retrained"),
                                             "--linker-minutes", "0.2", "--ner-minutes", "0.1", "--threads", "1", "-q"],
            retrain_out_problems),
    ]}


def retrain_staged(folder: Path) -> bool:
    """Whether retrain has begun training: its staging folder is there (kgnorm.jobs.retrain_out)."""
    from kgnorm.jobs.retrain_out import STAGING

    return (folder / "retrained" / STAGING).exists()


def model_file_written(folder: Path) -> bool:
    """Whether retrain has written a model's kgnorm-model.json anywhere under its OUT."""
    return any((folder / "retrained").rglob("kgnorm-model.json"))


def retrain_out_problems(folder: Path, finished: bool) -> list[str]:
    """What a killed retrain may leave in OUT (folder/retrained): OUT/linker absent or whole (its
    commit block, it loads), OUT/ner only beside a committed linker; once a run `finished`, both
    there, no staging left, and the store holds the Run the linker names."""
    from kgnorm.jobs.retrain_out import BLOCK, staging
    from kgnorm.methods.model_dir import read_model_meta
    from kgnorm.methods.ner.model import load_ner
    from kgnorm.methods.registry import open_linker
    from kgnorm.stores import open_store

    out = folder / "retrained"
    linker, ner, staged = out / "linker", out / "ner", staging(out) / "linker"
    problems = []
    for what, path, load in (("linker", linker, open_linker), ("detector", ner, load_ner)):
        if not path.exists():
            problems += [f"no {path} after the run again"] if finished else []
            continue
        try:
            load(path)
        except Exception as exc:  # noqa: BLE001 - a half-written model is what is looked for
            problems.append(f"{path} is there but does not load: {type(exc).__name__}: {exc}"[:300])
    committed = [p for p in (linker, staged) if p.exists() and BLOCK in read_model_meta(p)]
    if linker.exists() and linker not in committed:
        problems.append(f"{linker} is there without the block a finished retrain writes")
    if ner.exists() and not committed:
        problems.append(f"{ner} is there beside no committed linker")
    if finished:
        problems += [f"{staging(out)} left after the run again"] if staging(out).exists() else []
        if linker in committed:
            with open_store(uri(folder), read_only=True) as st:
                runs = {r[0] for r in st.query("MATCH (r:Run) RETURN r.uid").rows}
            uid = read_model_meta(linker)[BLOCK]["run"]["uid"]
            problems += [] if uid in runs else [f"the store lacks run {uid} that {linker} names"]
    return problems


# -- one job in a subprocess ------------------------------------------------------------------------
def start(args: list[str], folder: Path, *, fsize: int | None = None, stdout: int | None = subprocess.DEVNULL
          ) -> subprocess.Popen:
    """`kgnorm ARGS --store <folder>` as a child (its own session, so a kill reaches only it);
    `fsize`: RLIMIT_FSIZE in bytes (a write past it fails with EFBIG; SIGXFSZ is ignored so the
    write returns the error instead of killing the process)."""
    def limit() -> None:
        if fsize is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([*KGNORM, *args, "--store", uri(folder)], stdout=stdout, stderr=subprocess.PIPE,
                            env=env, start_new_session=True, preexec_fn=limit if fsize is not None else None)


def timed_run(job: Job, folder: Path) -> float:
    """An uninterrupted run's wall seconds (it must succeed)."""
    t0 = time.monotonic()
    proc = start(job.args(folder), folder)
    _, err = proc.communicate(timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{job.name} exited {proc.returncode}: {err.decode()[-500:]}")
    return time.monotonic() - t0


# -- what is judged after a kill or a fault ---------------------------------------------------------
def check(folder: Path) -> list[str]:
    """`kgnorm check`'s problems (not its notes), [] when sound or when there is no store yet."""
    from kgnorm.jobs.check import check_store

    if not has_store(folder):
        return []
    return [f"{f.check}: {f.message}" for f in check_store(uri(folder), lock_timeout=10).problems()]


SEEN_BY_QUERY = ("mentions", "in", "links", "placed")  # what a run writes: all of it or none visible


def seen_by_query(folder: Path) -> dict[str, Any]:
    """What `kgnorm query` shows of a run's writes (mentions, IN, links, placements), by content."""
    from kgnorm.jobs.query import run_query

    queries = {k: QUERIES[k] for k in SEEN_BY_QUERY}
    out = {}
    for key, cypher in queries.items():
        rows = run_query(cypher, store=uri(folder), lock_timeout=10).rows
        out[key] = sorted(tuple(round(x, 4) if isinstance(x, float) else x for x in r) for r in rows)
    return out


def reopen(folder: Path) -> None:
    """What the next writer does first (clears the stages of killed processes); nothing when no store."""
    from kgnorm.stores import open_store

    if has_store(folder):
        open_store(uri(folder), lock_timeout=10).close()


@dataclass
class Cycle:
    job: str
    moment: float
    finished: bool = False      # the job had ended before the kill came
    touched: bool = False       # the killed process had changed a store file
    opened: bool = True
    check_after_kill: list[str] = field(default_factory=list)   # before any writer reopened it
    check_after_reopen: list[str] = field(default_factory=list)
    half_run_seen: bool = False  # `kgnorm query` right after the kill showed neither the store before nor after
    rerun_code: int = 0
    same_result: bool = True
    lost_reviews: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)  # a half-written output (Job.outputs)
    error: str = ""
    ended_at: float | None = None  # seconds from the start to the job's end, when it ended before the kill
    rerun_err: str = ""
    # seconds of a run measured whole in this cycle (the job ended before the kill, or its run again
    # on a store the kill left untouched): what the next moments are drawn over (Pacer)
    measured: list[float] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(not self.opened or self.check_after_kill or self.check_after_reopen or self.half_run_seen
                    or self.rerun_code or not self.same_result or self.lost_reviews or self.outputs or self.error)

    def why(self) -> str:
        parts = [("store does not open: " + self.error) if not self.opened else self.error,
                 "; ".join(f"right after the kill: {p}" for p in self.check_after_kill),
                 "`kgnorm query` right after the kill shows a half run" if self.half_run_seen else "",
                 "; ".join(self.check_after_reopen),
                 f"rerun exit {self.rerun_code}: {self.rerun_err}" if self.rerun_code else "",
                 "" if self.same_result else "rerun result differs from an uninterrupted run",
                 f"lost reviews {self.lost_reviews[:3]}" if self.lost_reviews else "", "; ".join(self.outputs)]
        return f"{self.job} killed at {self.moment:.2f}s: " + " | ".join(p for p in parts if p)


def kill_cycle(w: World, job: Job, moment: float, folder: Path, expected: list[dict],
               after_write: bool = False, at_checkpoint: bool = False,
               after: Callable[[Path], bool] | None = None, measure: bool = False) -> Cycle:
    """Run `job` on a fresh copy of its base store, SIGKILL it `moment` seconds after its start (or,
    `after_write`, `moment` seconds after it first changed a file of the store; `at_checkpoint`,
    `moment` seconds after LadybugDB began a checkpoint: its log renamed `.wal.checkpoint`; `after`,
    `moment` seconds after after(folder) first held), judge. `measure`: the run again is a timed
    `kgnorm` process, and the cycle's `measured` holds the whole runs it saw (Pacer)."""
    from kgnorm.stores import open_store

    c = Cycle(job.name, moment)
    copy_store(w.bases.get(job.base) if job.base else None, folder)
    before = store_state(folder)
    whole = [{k: s[k] for k in SEEN_BY_QUERY} for s in [snapshot(folder), *expected] if s] if job.base else []
    t0 = time.monotonic()
    proc = start(job.args(folder), folder)
    if after_write:
        with _write_probe(folder) as changed:
            while proc.poll() is None and not changed():
                time.sleep(0.005)
    if at_checkpoint:
        while proc.poll() is None and not (folder / "graph.wal.checkpoint").exists():
            time.sleep(0.0005)
    while after is not None and proc.poll() is None and not after(folder):
        time.sleep(0.002)
    try:
        proc.wait(timeout=moment)
        c.finished = True
        c.ended_at = time.monotonic() - t0
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    proc.stderr.close()
    c.touched = store_state(folder) != before
    try:
        if has_store(folder):
            open_store(uri(folder), read_only=True, lock_timeout=10).close()
        c.outputs = job.outputs(folder, False) if job.outputs else []
        c.check_after_kill = check(folder)
        c.half_run_seen = bool(whole) and seen_by_query(folder) not in whole
        reopen(folder)
        c.check_after_reopen = check(folder)
    except Exception as exc:  # noqa: BLE001 - any failure to open is what is measured
        c.opened, c.error = False, f"{type(exc).__name__}: {exc}"[:300]
        return c
    if measure:  # a new process, as the user would run it, timed
        c.rerun_code, seconds, c.rerun_err = _run_again(job, folder)
        if c.finished and not (after_write or at_checkpoint or after):
            c.measured.append(c.ended_at)
        if not c.touched and c.rerun_code == 0 and not (job.outputs and (folder / "retrained").exists()):
            c.measured.append(seconds)  # the kill left nothing behind: the run again was a whole run
    else:  # in this process (the CI test: no interpreter to start)
        c.rerun_code = exit_code([*job.args(folder), "--store", uri(folder)])
    after = snapshot(folder)
    c.same_result = after in expected
    if job.outputs and c.rerun_code == 0:
        c.outputs += [f"after the run again: {p}" for p in job.outputs(folder, True)]
    if c.rerun_code == 0 and not c.check_after_reopen:
        c.check_after_reopen = check(folder)
    return c


def _run_again(job: Job, folder: Path) -> tuple[int, float, str]:
    """The job run again as the user would, a new `kgnorm` process: (exit code, wall seconds, its
    last stderr line)."""
    t0 = time.monotonic()
    proc = start(job.args(folder), folder)
    _, err = proc.communicate(timeout=1800)
    lines = err.decode(errors="replace").strip().splitlines()
    return proc.returncode, time.monotonic() - t0, (lines[-1] if lines else "")[:300]


def expected_results(w: World, job: Job, folder: Path, timed: bool = True) -> tuple[list[dict], float]:
    """The store after one uninterrupted run, and after two (a kill after the job published but
    before it exited leaves the first; the run again then makes the second): (results, seconds of
    the first as a subprocess; 0 when not `timed`: both run in this process)."""
    copy_store(w.bases.get(job.base) if job.base else None, folder)
    seconds = 0.0
    if timed:
        seconds = timed_run(job, folder)
    else:
        _ok([*job.args(folder), "--store", uri(folder)])
    once = snapshot(folder)
    _ok([*job.args(folder), "--store", uri(folder)])
    twice = snapshot(folder)
    return ([once] if once == twice else [once, twice]), seconds


# -- reviews through `kgnorm serve` -------------------------------------------------------------------
def review_plan(w: World, rebuild: bool = True) -> list[tuple[str, dict]]:
    """(mention uid, body) for every mention of the annotated base store: a concept, then a nil for
    every third, alternating reviewers, each mention twice: the reviews a session posts."""
    from kgnorm.stores import open_store

    if BOLT is not None and rebuild:  # else: the Bolt database holds the annotated store now
        _rebuild(BOLT, w.bases["annotated"].name)
    with open_store(uri(w.bases["annotated"]), read_only=True) as st:
        mentions = [r[0] for r in st.query("MATCH (m:Mention) RETURN m.uid ORDER BY m.uid").rows]
    plan = []
    for round_ in range(2):  # every mention twice: the second review replaces the first as current
        for i, m in enumerate(mentions):
            k = i + round_
            body = {"decision": "nil"} if k % 3 == 2 else {"decision": "concept", "concept": f"TOYD:000{k % 4 + 1}"}
            plan.append((m, {**body, "reviewer": f"r{k % 2}"}))
    return plan


def start_server(folder: Path) -> tuple[subprocess.Popen, str]:
    """`kgnorm serve --port 0` on the store: the process and "URL|token" once it printed them."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([*KGNORM, "serve", "--store", uri(folder), "--port", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env, start_new_session=True, text=True)
    line = proc.stdout.readline().strip()
    if not line.startswith("kgnorm serve: "):
        proc.kill()
        raise RuntimeError(f"kgnorm serve printed {line!r}")
    token = proc.stdout.readline().strip().split()[-1]
    return proc, line.split(": ", 1)[1].rstrip("/") + "|" + token


def post_reviews(base: str, plan: list[tuple[str, dict]], acked: list[str], deadline: float | None = None) -> None:
    """Post the plan in order; append to `acked` each mention whose review was answered 200/201.
    Stops at the first connection error (the server was killed)."""
    from urllib.parse import quote

    import httpx

    url, token = base.split("|")
    with httpx.Client(timeout=30) as client:
        for mention, body in plan:
            try:
                r = client.post(f"{url}/api/mentions/{quote(mention, safe='')}/review", json=body,
                                headers={"X-Kgnorm-Token": token})
            except httpx.TransportError:
                return
            if r.status_code in (200, 201):
                acked.append(r.json()["uid"])
            else:
                raise RuntimeError(f"review of {mention} answered {r.status_code}: {r.text[:200]}")


def stored_review_uids(folder: Path) -> set[str]:
    from kgnorm.stores import open_store

    with open_store(uri(folder), read_only=True) as st:
        return {r[0] for r in st.query("MATCH (r:Review) RETURN r.uid").rows}


def journaled_review_uids(folder: Path) -> set[str]:
    from kgnorm.review.journal import ReviewJournal

    return {r.uid for r in ReviewJournal.beside(folder / "graph").reviews()}


def review_cycle(w: World, moment: float | None, folder: Path, plan: list[tuple[str, dict]],
                 expected: list[dict], from_ready: bool = False) -> tuple[Cycle, float]:
    """Serve the annotated store, post `plan`, SIGKILL the server `moment` seconds after its start
    (None: no kill); then every acknowledged review must be in the store or its journal, and in the
    store once a review desk reopened it; posting the rest must give the uninterrupted result.
    (the cycle, seconds from the server's start to the last answer). `from_ready`: the moment
    counts from when the server printed its address, not from its start."""
    import threading

    from kgnorm.review.desk import ReviewDesk

    c = Cycle("reviews", moment if moment is not None else 0.0)
    copy_store(w.bases["annotated"], folder)
    before = store_state(folder)
    acked: list[str] = []
    t0 = time.monotonic()
    proc, base = start_server(folder)
    if from_ready:
        t0 = time.monotonic()
    poster = threading.Thread(target=post_reviews, args=(base, plan, acked), daemon=True)
    poster.start()
    if moment is None:
        poster.join()
        seconds = time.monotonic() - t0
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    else:
        poster.join(timeout=max(0.0, moment - (time.monotonic() - t0)))
        c.finished = not poster.is_alive()
        if c.finished:
            c.ended_at = time.monotonic() - t0
            c.measured.append(c.ended_at)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        poster.join(timeout=30)
        seconds = time.monotonic() - t0
    proc.stdout.close()
    c.touched = store_state(folder) != before
    try:
        c.lost_reviews = sorted(set(acked) - stored_review_uids(folder) - journaled_review_uids(folder))
        c.check_after_kill = check(folder)
        ReviewDesk(uri(folder)).close()  # reopening lands the journaled reviews
        c.lost_reviews += sorted(set(acked) - stored_review_uids(folder) - set(c.lost_reviews))
        c.check_after_reopen = check(folder)
    except Exception as exc:  # noqa: BLE001 - any failure to open is what is measured
        c.opened, c.error = False, f"{type(exc).__name__}: {exc}"[:300]
        return c, seconds
    if moment is not None:  # the session goes on: a new server, the reviews not acknowledged posted again
        done = len(acked)
        t1 = time.monotonic()
        proc, base = start_server(folder)
        try:
            again: list[str] = []
            t2 = time.monotonic()
            post_reviews(base, plan[done:], again)
            c.rerun_code = 0 if len(again) == len(plan) - done else 1
            if c.rerun_code == 0 and len(again) >= len(plan) / 4:  # the session's pace now, scaled to the plan
                posting = (time.monotonic() - t2) * len(plan) / len(again)
                c.measured.append(posting + (0.0 if from_ready else t2 - t1))
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)
            proc.stdout.close()
        c.check_after_reopen = c.check_after_reopen or check(folder)
    c.same_result = not expected or snapshot(folder) in expected
    return c, seconds


@dataclass
class Tally:
    job: str
    seconds: float = 0.0          # an uninterrupted run, timed before the cycles
    cycles: list[Cycle] = field(default_factory=list)
    spans: list[float] = field(default_factory=list)  # the duration each cycle's moment was drawn over
    stopped: bool = False  # ended early by stop()

    @property
    def ended_first(self) -> int:
        """Moments that came after the job had ended: no kill."""
        return sum(1 for c in self.cycles if c.finished)

    @property
    def kills(self) -> int:
        return sum(1 for c in self.cycles if not c.finished)

    @property
    def touched(self) -> int:
        return sum(1 for c in self.cycles if c.touched and not c.finished)

    @property
    def check_failed_before_reopen(self) -> int:
        return sum(1 for c in self.cycles if c.check_after_kill)

    @property
    def half_run_seen(self) -> int:
        return sum(1 for c in self.cycles if c.half_run_seen)

    @property
    def failures(self) -> list[Cycle]:
        return [c for c in self.cycles if c.failed]


@dataclass
class Pacer:
    """How long the job takes now, on this machine under its present load: the median of the last
    three whole runs measured in this session. The first is timed before the cycles; then every
    cycle whose job ended before its kill, every run again on a store its kill left untouched (and,
    for reviews, the pace of the session posting the rest) adds one, and when `refresh` cycles in a
    row added none an uninterrupted run is timed afresh (`retime`). Kill moments are fractions of
    it, so when the load changes they move with the job instead of falling past its end."""
    seconds: list[float]
    retime: Callable[[], float]
    refresh: int = 8
    dry: int = 0  # cycles since the last measurement

    def span(self) -> float:
        return statistics.median(self.seconds[-3:])

    def add(self, c: Cycle) -> None:
        self.seconds += c.measured
        self.dry = 0 if c.measured else self.dry + 1
        if self.dry >= self.refresh:
            self.seconds.append(self.retime())
            self.dry = 0


def fractions(n: int, seed: int, tries: int) -> Iterator[tuple[int, float]]:
    """(stratum, fraction of the run): for each n-th of [0, 1), `tries` fractions drawn in it
    (seeded); the caller moves to the next stratum once one landed."""
    rng = random.Random(seed)
    for i in range(n):
        for _ in range(tries):
            yield i, (i + rng.random()) / n


def torture(w: World, name: str, n: int, seed: int, work: Path, log: Callable[[str], None] = lambda s: None,
            checkpoint_window: float = 0.0, min_kills: int = 0, write_window: float = 0.0,
            stop: Callable[[], bool] = lambda: False, tries: int = 3) -> Tally:
    """Kill cycles of job `name`: one kill moment drawn in each n-th of the job's duration as
    measured now (Pacer; with `checkpoint_window`, of that many seconds from when LadybugDB began a
    checkpoint; with `write_window`, from when the job first changed the store), drawn again in the
    same n-th (at most `tries` times) while the job ended before it; then, while fewer than
    `min_kills` landed, one more drawn in the first 90 % (seeded). Over Bolt, review moments count
    from when the server is ready, after a first session that warms the server up. `log` gets a
    line per cycle (prefixed FAIL when it failed); `stop()` true ends the cycles early."""
    folder = work / name
    t = Tally(name)
    if name == "reviews":
        plan = review_plan(w)
        ready = BOLT is not None

        def retime() -> float:
            return review_cycle(w, None, folder, plan, [], from_ready=ready)[1]

        for _ in range(2 if ready else 1):
            t.seconds = retime()
        expected = [snapshot(folder)]

        def cycle(m: float) -> Cycle:
            return review_cycle(w, m, folder, plan, expected, from_ready=ready)[0]
    else:
        job = w.jobs[name]
        expected, t.seconds = expected_results(w, job, folder)

        def retime() -> float:
            return timed_run(job, copy_store(w.bases.get(job.base) if job.base else None, folder))

        def cycle(m: float) -> Cycle:
            return kill_cycle(w, job, m, folder, expected, at_checkpoint=bool(checkpoint_window),
                              after_write=bool(write_window), measure=True)
    window = checkpoint_window or write_window
    pacer = Pacer([t.seconds], retime)
    rng = random.Random(seed + 1)
    landed = -1  # the last stratum a kill landed in
    extra = ((n + i, rng.random() * 0.9) for i in itertools.count())
    for stratum, f in itertools.chain(fractions(n, seed, tries), extra):
        t.stopped = stop()
        if t.stopped or (stratum >= n and t.kills >= min_kills):
            break
        if stratum == landed:
            continue
        span = window or pacer.span()
        t.spans.append(span)
        t.cycles.append(c := cycle(f * span))
        landed = stratum if not c.finished else landed
        if not window:
            pacer.add(c)
        state = "ended before the kill" if c.finished else "killed" + (" after it wrote" if c.touched else "")
        log(f"{'FAIL ' if c.failed else ''}cycle {len(t.cycles)} at {f:.2f} of {span:.1f}s: {state}"
            + (f": {c.why()}" if c.failed else ""))
    return t
