"""BioCoM's entity-linked corpus: dictionary matching over raw sentences (Ujiie et al. 2021).

BioCoM trains and searches on *sentences in which a dictionary name was found*, labelled with
the concept of that name (distant supervision, no gold annotation). :func:`build_corpus`
streams raw text, splits it into sentences, finds dictionary names and keeps a seeded sample
of at most ``cap`` sentences per concept (App. F of the paper: 20).

Inputs
  PubTator files (first non-empty line ``PMID|t|title``): the document text is
  ``title + " " + abstract``, split with :func:`kgnorm.mentions.readers.sentence_spans` at the title
  seam and after ``.!?`` + space -- the same splitter that gives PubTator mentions their
  ``context``, so corpus sentences and query contexts look alike. Gold annotations in the
  file are ignored (the corpus is built from the dictionary only). Any other file is plain
  text: every non-empty line is one document (``doc_id`` = ``<file name>:<line>``).
  Files are read line by line (UTF-8; an undecodable line is an InputError naming file and
  line); only the per-concept samples are held in memory.

Matching (:mod:`kgnorm.methods.biocom.matching`): longest dictionary match over whole tokens,
case-insensitive except for acronyms, not across hard punctuation, ambiguous names dropped;
document abbreviations (``abbreviations=True``, the default) label short forms whose long
form is a dictionary name. The same (concept, sentence, start) seen twice (a repeated
abstract) counts once.

Output directory
  ``sentences.parquet``  sentence, start, end (character span in the sentence), uid, doc_id,
                         mention (the matched text), name (the dictionary name that matched)
  ``names.parquet``      uid, name, preferred -- the dictionary the corpus was built from
  ``counts.tsv``         uid, matches, kept (one row per matched concept, most matches first)
  ``corpus.json``        manifest (written last: its presence marks a complete corpus):
                         ontology name and version, cap, seed, inputs, counts.
"""
from __future__ import annotations

import json
import os
import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from kgnorm.errors import InputError, KgnormError
from kgnorm.mentions.readers import iter_lines, read_pubtator, sentence_spans
from kgnorm.progress import progress_bar

from .matching import (Match, NameMatcher, dictionary_entries, local_abbreviations, name_tokens,
                       with_abbreviations)

__all__ = [
    "CORPUS_JSON", "SENTENCES_FILE", "NAMES_FILE", "COUNTS_FILE", "DEFAULT_CAP",
    "Match", "NameMatcher", "name_tokens", "dictionary_entries", "local_abbreviations",
    "with_abbreviations", "iter_documents",
    "build_corpus", "CorpusSummary", "Corpus", "load_corpus",
    "check_corpus", "read_manifest",
]

CORPUS_JSON = "corpus.json"
SENTENCES_FILE = "sentences.parquet"
NAMES_FILE = "names.parquet"
COUNTS_FILE = "counts.tsv"
FORMAT_VERSION = 1
DEFAULT_CAP = 20

_PUBTATOR_FIRST = re.compile(r"^\d+\|[ta]\|")
_SENTENCE_COLUMNS = ["sentence", "start", "end", "uid", "doc_id", "mention", "name"]


# --------------------------------------------------------------------------- text input

def _sniff_pubtator(path: Path) -> bool:
    for _, line in iter_lines(path):
        if line.strip():
            return bool(_PUBTATOR_FIRST.match(line))
    return False


def iter_documents(path: str | Path) -> Iterator[tuple[str, str, tuple[int, ...]]]:
    """(doc_id, text, sentence breaks) of a PubTator or plain-text file, streamed."""
    p = Path(path)
    if _sniff_pubtator(p):
        for doc in read_pubtator(p):
            yield doc.doc_id, doc.text, ((len(doc.title),) if doc.abstract else ())
        return
    for lineno, line in iter_lines(p):
        if line.strip():
            yield f"{p.name}:{lineno}", line, ()


# --------------------------------------------------------------------------- building

@dataclass
class CorpusSummary:
    out_dir: str
    documents: int
    sentences: int
    matches: int
    rows: int
    concepts_matched: int
    concepts_in_dictionary: int
    seconds: float
    manifest: dict = field(default_factory=dict)


def _atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _write_parquet(path: Path, columns: dict[str, list], schema: Any) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    table = pa.table(columns, schema=schema)
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def _kgnorm_version() -> str:
    import kgnorm
    return kgnorm.__version__


def build_corpus(dictionary: Any, texts: str | Path | Sequence[str | Path],
                 out_dir: str | Path, *, ontology: str | None = None,
                 version: str | None = None, cap: int | None = DEFAULT_CAP, seed: int = 0,
                 min_name_chars: int = 2, abbreviations: bool = True) -> CorpusSummary:
    """Build an entity-linked corpus from raw text files (see the module doc).

    dictionary: anything :func:`dictionary_entries` accepts; with an OntologyGraph the
    ontology name and version default to the graph's. cap: sentences kept per concept
    (reservoir sample, seeded; None = keep all). Raises InputError for unreadable input,
    KgnormError when the dictionary matches nothing."""
    import time

    t0 = time.time()
    if ontology is None:
        ontology = getattr(dictionary, "name", None)
    if version is None:
        version = getattr(dictionary, "version", None) or ""
    if not ontology:
        raise KgnormError("build_corpus needs the ontology name (ontology=...)")
    if cap is not None and cap < 1:
        raise KgnormError(f"cap must be at least 1 sentence per concept, got {cap}")
    paths = _text_paths(texts)
    entries, matcher = _corpus_matcher(dictionary, ontology, min_name_chars)

    sample = _CorpusSample(cap, random.Random(seed))
    for p in paths:
        sample.scan_file(p, matcher, abbreviations)
    if sample.n_match == 0:
        raise KgnormError(
            f"the dictionary of ontology {ontology!r} ({matcher.n_names} names) matched "
            f"nothing in {sample.sentences} sentences of {', '.join(str(p) for p in paths)}")

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    old_manifest = out / CORPUS_JSON
    if old_manifest.exists():  # a rebuild: the old manifest must not vouch for new files
        old_manifest.unlink()
    rows = sample.rows()
    _write_corpus_tables(out, rows, entries, sample)
    seconds = time.time() - t0
    manifest = {
        "kind": "biocom-corpus", "format_version": FORMAT_VERSION,
        "ontology": {"name": ontology, "version": version or ""},
        "cap": cap, "seed": seed, "min_name_chars": min_name_chars,
        "abbreviations": bool(abbreviations),
        "inputs": sample.inputs,
        "counts": sample.counts(matcher, len(rows), len(entries)),
        "files": {"sentences": SENTENCES_FILE, "names": NAMES_FILE, "counts": COUNTS_FILE},
        "seconds": round(seconds, 3),
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "kgnorm": _kgnorm_version(),
    }
    _atomic_write_text(out / CORPUS_JSON, json.dumps(manifest, indent=2) + "\n")
    return CorpusSummary(out_dir=str(out), documents=sample.documents, sentences=sample.sentences,
                         matches=sample.n_match, rows=len(rows), concepts_matched=len(sample.matches),
                         concepts_in_dictionary=len(entries), seconds=seconds,
                         manifest=manifest)


def _text_paths(texts: str | Path | Sequence[str | Path]) -> list[Path]:
    """The input files, each checked to exist and not to be a directory."""
    paths = [Path(texts)] if isinstance(texts, (str, Path)) else [Path(t) for t in texts]
    if not paths:
        raise KgnormError("no text files given")
    for p in paths:
        if not p.exists():
            raise InputError("file not found", p)
        if p.is_dir():
            raise InputError("is a directory, expected a text file", p)
    return paths


def _corpus_matcher(dictionary: Any, ontology: str, min_name_chars: int) -> tuple[list, NameMatcher]:
    """The dictionary's (uid, names) entries and the matcher over them; an empty one is refused."""
    entries = dictionary_entries(dictionary)
    if not entries:
        raise KgnormError(f"the dictionary of ontology {ontology!r} has no concepts")
    matcher = NameMatcher(entries, min_name_chars=min_name_chars)
    if len(matcher) == 0:
        raise KgnormError(f"the dictionary of ontology {ontology!r} has no usable names "
                          f"(all shorter than {min_name_chars} letters/digits)")
    return entries, matcher


@dataclass
class _CorpusSample:
    """What the scan keeps: per concept a seeded reservoir of at most ``cap`` rows (None: all),
    its match count, and the counters the manifest reports."""

    cap: int | None
    rng: random.Random
    reservoirs: dict[str, list[tuple]] = field(default_factory=dict)
    matches: dict[str, int] = field(default_factory=dict)
    seen: set[int] = field(default_factory=set)
    inputs: list[dict] = field(default_factory=list)
    documents: int = 0
    sentences: int = 0
    n_match: int = 0
    ambiguous: int = 0
    duplicates: int = 0
    abbreviation_matches: int = 0

    def scan_file(self, path: Path, matcher: NameMatcher, abbreviations: bool) -> None:
        """Every sentence of every document of ``path``, its dictionary matches sampled."""
        bar = progress_bar(total=path.stat().st_size, desc=f"corpus {path.name}", unit="B")
        for doc_id, text, breaks in iter_documents(path):
            self.documents += 1
            bar.update(len(text.encode("utf-8", "replace")) + 1)
            local = local_abbreviations(text, matcher) if abbreviations else {}
            for s, e in sentence_spans(text, breaks):
                if e <= s:
                    continue
                sentence = text[s:e]
                self.sentences += 1
                for m in with_abbreviations(sentence, matcher.find(sentence), local):
                    self.add(m, sentence, doc_id, local)
        bar.close()
        self.inputs.append({"path": str(path), "bytes": path.stat().st_size})

    def add(self, m: Match, sentence: str, doc_id: str, local: dict) -> None:
        """One match: dropped when ambiguous or seen before, else counted and sampled."""
        if len(m.uids) > 1:
            self.ambiguous += 1
            return
        uid = m.uids[0]
        key = hash((uid, sentence, m.start))
        if key in self.seen:
            self.duplicates += 1
            return
        self.seen.add(key)
        self.n_match += 1
        self.abbreviation_matches += sentence[m.start:m.end] in local
        count = self.matches.get(uid, 0) + 1
        self.matches[uid] = count
        row = (sentence, m.start, m.end, uid, doc_id, sentence[m.start:m.end], m.name)
        res = self.reservoirs.setdefault(uid, [])
        if self.cap is None or len(res) < self.cap:
            res.append(row)
        else:
            j = self.rng.randrange(count)
            if j < self.cap:
                res[j] = row

    def rows(self) -> list[tuple]:
        """The kept rows, by uid, then document, sentence and start."""
        return [r for uid in sorted(self.reservoirs) for r in
                sorted(self.reservoirs[uid], key=lambda r: (r[4], r[0], r[1]))]

    def counts(self, matcher: NameMatcher, n_rows: int, n_concepts: int) -> dict:
        """The manifest's ``counts``."""
        kept_hist: dict[str, int] = {}
        for res in self.reservoirs.values():
            kept_hist[str(len(res))] = kept_hist.get(str(len(res)), 0) + 1
        return {
            "documents": self.documents, "sentences": self.sentences, "matches": self.n_match,
            "abbreviation_matches": self.abbreviation_matches,
            "ambiguous_matches_dropped": self.ambiguous, "duplicate_matches_dropped": self.duplicates,
            "rows": n_rows, "concepts_in_dictionary": n_concepts,
            "concepts_matched": len(self.matches), "names": matcher.n_names,
            "names_skipped_short": matcher.n_skipped,
            "ambiguous_names": matcher.ambiguous_names,
            "concepts_by_rows_kept": dict(sorted(kept_hist.items(), key=lambda kv: int(kv[0]))),
        }


def _write_corpus_tables(out: Path, rows: list[tuple], entries: list, sample: _CorpusSample) -> None:
    """``sentences.parquet`` (the kept rows), ``names.parquet`` (the dictionary) and ``counts.tsv``."""
    import pyarrow as pa

    cols = {c: [r[i] for r in rows] for i, c in enumerate(_SENTENCE_COLUMNS)}
    _write_parquet(out / SENTENCES_FILE, cols, pa.schema([
        ("sentence", pa.string()), ("start", pa.int32()), ("end", pa.int32()),
        ("uid", pa.string()), ("doc_id", pa.string()), ("mention", pa.string()),
        ("name", pa.string())]))
    n_uids, n_names, n_pref = [], [], []
    for uid, names in entries:
        for i, name in enumerate(names):
            n_uids.append(uid)
            n_names.append(name)
            n_pref.append(i == 0)
    _write_parquet(out / NAMES_FILE, {"uid": n_uids, "name": n_names, "preferred": n_pref},
                   pa.schema([("uid", pa.string()), ("name", pa.string()),
                              ("preferred", pa.bool_())]))
    lines = ["uid\tmatches\tkept"]
    for uid in sorted(sample.matches, key=lambda u: (-sample.matches[u], u)):
        lines.append(f"{uid}\t{sample.matches[uid]}\t{len(sample.reservoirs[uid])}")
    _atomic_write_text(out / COUNTS_FILE, "\n".join(lines) + "\n")


# --------------------------------------------------------------------------- reading

def read_manifest(corpus_dir: str | Path) -> dict:
    from kgnorm.methods.model_dir import read_dir_json

    d = Path(corpus_dir)
    manifest = read_dir_json(d, CORPUS_JSON, no_dir=f"{d}: corpus directory not found",
                             no_file=f"{d}: not a BioCoM corpus (no {CORPUS_JSON}; build it with "
                                     "`kgnorm corpus build`, or the build was interrupted)")
    if not isinstance(manifest, dict) or manifest.get("kind") != "biocom-corpus":
        raise InputError("not a BioCoM corpus manifest", d / CORPUS_JSON)
    return manifest


def check_corpus(corpus_dir: str | Path, ontology: str, version: str | None = None) -> dict:
    """The corpus manifest, after checking it was built from `ontology` (and `version`, when
    given): a corpus of another ontology or version labels sentences with uids that may not
    exist, or mean something else, in the loaded one."""
    manifest = read_manifest(corpus_dir)
    built = manifest.get("ontology", {})
    if built.get("name") != ontology:
        raise KgnormError(f"{corpus_dir}: corpus was built from ontology "
                          f"{built.get('name')!r}, not {ontology!r}")
    if version is not None and (built.get("version") or "") != (version or ""):
        raise KgnormError(f"{corpus_dir}: corpus was built from {ontology} version "
                          f"{built.get('version') or '(none)'!r}, but the loaded {ontology} "
                          f"is version {version or '(none)'!r}; rebuild the corpus")
    return manifest


@dataclass
class Corpus:
    """A corpus loaded for training: parallel row lists plus the dictionary names."""

    directory: str
    manifest: dict
    sentences: list[str]
    starts: list[int]
    ends: list[int]
    uids: list[str]
    doc_ids: list[str]
    names: dict[str, list[str]]            # uid -> dictionary names, preferred first

    def __len__(self) -> int:
        return len(self.uids)

    def rows_by_concept(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for i, uid in enumerate(self.uids):
            out.setdefault(uid, []).append(i)
        return out


def load_corpus(corpus_dir: str | Path, ontology: str | None = None,
                version: str | None = None) -> Corpus:
    """Read a corpus directory (checked against `ontology`/`version` when given)."""
    import pyarrow.parquet as pq
    d = Path(corpus_dir)
    manifest = (check_corpus(d, ontology, version) if ontology is not None
                else read_manifest(d))
    try:
        t = pq.read_table(d / SENTENCES_FILE).to_pydict()
        nt = pq.read_table(d / NAMES_FILE).to_pydict()
    except (OSError, ValueError) as exc:
        raise InputError(f"unreadable corpus files: {exc}", d) from None
    names: dict[str, list[str]] = {}
    for uid, name, pref in zip(nt["uid"], nt["name"], nt["preferred"]):
        lst = names.setdefault(uid, [])
        if pref:
            lst.insert(0, name)
        else:
            lst.append(name)
    return Corpus(directory=str(d), manifest=manifest, sentences=t["sentence"],
                  starts=[int(x) for x in t["start"]], ends=[int(x) for x in t["end"]],
                  uids=t["uid"], doc_ids=t["doc_id"], names=names)
