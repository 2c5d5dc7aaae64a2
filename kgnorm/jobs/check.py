"""`kgnorm check` as a library call: read the whole graph (and an embedded store's review journal)
and say, one finding a line, what is inconsistent, the first thing to run after a crash.

Every write kgnorm makes is one transaction or a staged run published in one, so a sound store
holds none of these; each one names what a killed process or a hand-made write left behind:
edges whose run tag names no Run node, runs staged but neither published nor rolled back,
mentions that lost their document, mention offsets outside their document's text, reviews whose
mention is gone, journaled reviews not in the store, and ontologies whose concept count differs
from the one recorded when they were loaded. Orphans (mentions and reviews whose concept a new
ontology version removed) are reported as notes: they wait for a person, and are no fault. So is
what a process killed outright leaves and the next writer settles (a stage whose process on this
host is gone, journaled reviews not yet written): `check` right after a crash passes and says so.
The store is only read (LadybugDB read-only, Neo4j READ sessions); the queries are the saved
``check_*`` queries in cypher/queries, shared by both backends."""
from __future__ import annotations

import json
import socket
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from kgnorm.errors import KgnormError, StoreError
from kgnorm.review.journal import ReviewJournal
from kgnorm.review.records import REVIEW_RUN, applied
from kgnorm.stores import GraphStore, check_store_uri, embedded_path, open_store, store_exists
from kgnorm.stores.stages import PUBLISHED, STAGING, owner_is_gone

SHOWN = 5  # examples named in a finding's line
LABELS = ("Ontology", "Concept", "Mention", "Document", "Review", "Run")  # counted in the report


@dataclass
class Finding:
    """One line of the report: `check` names what was checked, `problem` False for a note."""

    check: str
    message: str
    problem: bool = True
    count: int = 1


@dataclass
class CheckReport:
    store: str
    findings: list[Finding] = field(default_factory=list)
    read: dict[str, int] = field(default_factory=dict)  # what was read: nodes per label

    @property
    def sound(self) -> bool:
        return not any(f.problem for f in self.findings)

    def problems(self) -> list[Finding]:
        return [f for f in self.findings if f.problem]

    def lines(self) -> list[str]:
        """The text report: a line per finding, then the verdict."""
        out = [f"{'problem' if f.problem else 'note'}: {f.check}: {f.message}" for f in self.findings]
        read = ", ".join(f"{n:,} {label}" for label, n in self.read.items())
        n = len(self.problems())
        out.append(f"sound: {read}" if n == 0 else f"not sound: {n} problem(s) in {read}")
        return out

    def record(self) -> dict[str, Any]:
        """The JSON report (`kgnorm check --format json`)."""
        return {"store": self.store, "sound": self.sound, "read": self.read,
                "findings": [asdict(f) for f in self.findings]}


def check_store(store: str | None = None, lock_timeout: float = 30.0) -> CheckReport:
    """Read the store and its journal; a missing embedded store is one clear error."""
    from kgnorm.stores import redact

    uri = check_store_uri(store)
    if not store_exists(uri):
        raise KgnormError(f"no store at {uri}")
    report = CheckReport(redact(uri))
    with open_store(uri, read_only=True, lock_timeout=lock_timeout) as st:
        if getattr(st, "recovery_note", None):  # opening it undid a recovery that lost an ontology
            report.findings.append(Finding("recovery", st.recovery_note, problem=False))
        try:
            report.read = _node_counts(st)
            for step in (_runs, _homeless_mentions, _offsets, _lost_reviews, _orphans, _ontologies):
                report.findings.extend(step(st))
        except StoreError as exc:
            if "does not exist" not in str(exc):
                raise
            if _unfinished_new_store(st):
                report.read = {label: 0 for label in LABELS}
                report.findings = [Finding("empty", "the store holds no data and not all of its tables: the command "
                                                    "that created it stopped before it wrote any (run it again)",
                                           problem=False)]
                return report
            raise StoreError(f"{report.store} was made by an earlier kgnorm and lacks what check reads "
                             f"({str(exc).removeprefix('query failed: ')}); any command that writes the store "
                             "brings its tables up to date") from None
        path = embedded_path(uri)
        if path is not None:
            report.findings.extend(_journal(st, ReviewJournal.beside(path)))
    return report


def _unfinished_new_store(st: GraphStore) -> bool:
    """An embedded store an ingest created and was killed in before its tables were all made: every
    table it has is empty (found by the crash torture; not the store of an earlier kgnorm, which
    holds data). Such a store is nothing broken: the same ingest run again fills it."""
    if not str(getattr(st, "uri", "")).startswith("ladybug://"):
        return False
    tables = [r[1] for r in st.query("CALL show_tables() RETURN *").rows if r[2] == "NODE"]
    return all(int(st.query(f"MATCH (n:`{t}`) RETURN count(n)").rows[0][0]) == 0 for t in tables)


def _node_counts(st: GraphStore) -> dict[str, int]:
    out = {}
    for label in LABELS:
        out[label] = int(st.query(f"MATCH (n:{label}) RETURN count(n)").rows[0][0])
    return out


def _examples(items: list[str]) -> str:
    more = f", … ({len(items) - SHOWN} more)" if len(items) > SHOWN else ""
    return ", ".join(items[:SHOWN]) + more


def _runs(st: GraphStore) -> list[Finding]:
    """Stages left by killed processes, and edges whose run tag names no Run node."""
    runs = st.run_saved("check_runs").records()
    known = {r["uid"] for r in runs}
    stage_of: dict[str, str] = {}  # edge tag -> staging uid (LadybugDB stages a new run under its own uid)
    out: list[Finding] = []
    for r in runs:
        if r["kind"] not in (STAGING, PUBLISHED):
            continue
        meta = _json(r["metrics_json"])
        stage_of[meta.get("edge_run") or r["uid"]] = r["uid"]
        if _running(meta):  # its process is writing it now (this host, alive): no fault
            continue
        out.append(_left_stage(r, meta))
    dangling: dict[str, list[str]] = defaultdict(list)
    for edge, run, n in st.run_saved("check_edge_runs").rows:
        if run in known or run in stage_of or (run or "") in ("", REVIEW_RUN):
            continue
        dangling[run].append(f"{n:,} {edge}")
    for run, edges in sorted(dangling.items()):
        out.append(Finding("edge-run", f"{' and '.join(edges)} edge(s) carry run {run!r}, which is no Run in "
                                       "the store (a write stopped halfway, or edited by hand)"))
    return out


def _json(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _running(meta: dict[str, Any]) -> bool:
    """True when the stage's process may still be writing it (this host, alive): not a fault."""
    owner = meta.get("owner")
    if not isinstance(owner, dict) or owner.get("host") != socket.gethostname():
        return False
    return not owner_is_gone(json.dumps(meta))


def _left_stage(r: dict[str, Any], meta: dict[str, Any]) -> Finding:
    """A stage no live process of this host writes. One whose recorded process (this host) is gone
    is what a kill leaves, and the next writer to open the store removes it (clear_abandoned_stages):
    a note, so that `check` right after a crash passes. Any other (another host, no owner) is a fault."""
    gone = owner_is_gone(json.dumps(meta))
    if r["kind"] == PUBLISHED:
        what = f"run {r['uid']} was published but its staging record is left (the process stopped before removing it)"
        then = "the next command that writes the store removes the record"
    else:
        what = f"run {r['uid']} ({r['method']}, started {r['created_at']}) was staged but neither published nor " \
               "rolled back"
        then = "the next command that writes the store rolls it back (removes what it staged); the run's " \
               "edges are not the store's until then"
    if gone:
        return Finding("staged-run", f"{what}: its process (pid {meta['owner']['pid']}) is gone; {then}",
                       problem=False)
    owner = meta.get("owner")
    if isinstance(owner, dict) and owner.get("host") not in (None, socket.gethostname()):
        return Finding("staged-run", f"{what} (written from host {owner.get('host')}, pid {owner.get('pid')}: if "
                                     "that process is still running, this is its run in progress)")
    return Finding("staged-run", f"{what} (no process is recorded on it: the next attempt at the same run removes it)")


def _homeless_mentions(st: GraphStore) -> list[Finding]:
    sources = [r[0] for r in st.run_saved("check_document_sources").rows if r[0]]
    rows = st.run_saved("check_homeless_mentions", {"sources": sources}).records()
    by_doc: dict[tuple[str, str], list[str]] = defaultdict(list)
    for r in rows:
        by_doc[(r["source"] or "", r["doc_id"] or "")].append(f"{r['mention_uid']} {r['mention']!r}")
    return [Finding("mention-without-document", f"{len(ms)} mention(s) of document {doc!r} ({source}) are in no "
                                                f"document: {_examples(ms)}", count=len(ms))
            for (source, doc), ms in sorted(by_doc.items())]


def _offsets(st: GraphStore) -> list[Finding]:
    """The query's candidates, checked again against the text's length in code points (what offsets
    count): LadybugDB's size() counts grapheme clusters, fewer where characters combine."""
    rows = st.run_saved("check_offsets").records()
    lengths = {uid: len(text or "") for uid, text in st.rows_for(
        "UNWIND $u AS x MATCH (d:Document {uid: x}) RETURN d.uid, d.text", sorted({r["document_uid"] for r in rows}))}
    by_doc: dict[tuple[str, str, str, int], list[str]] = defaultdict(list)
    for r in rows:
        n = lengths.get(r["document_uid"], 0)
        if r["start"] is not None and r["end"] is not None and 0 <= r["start"] <= r["end"] <= n:
            continue
        key = (r["source"] or "", r["doc_id"] or "", r["document_uid"], n)
        by_doc[key].append(f"{r['mention_uid']} at {r['start']}-{r['end']}")
    return [Finding("offsets", f"document {doc!r} ({source}) has {len(ms)} mention(s) whose offsets fall outside "
                               f"its text of {n:,} characters: {_examples(ms)}", count=len(ms))
            for (source, doc, _, n), ms in sorted(by_doc.items())]


def _lost_reviews(st: GraphStore) -> list[Finding]:
    out = []
    for r in st.run_saved("check_lost_reviews").records():
        what = (f"review {r['review']} ({r['decision']} by {r['reviewer'] or 'anonymous'}, {r['created_at']}) "
                f"of mention {r['mention_uid']} in document {r['doc_id']!r}")
        if r["mentions"]:
            out.append(Finding("review", f"{what} hangs from mention(s) {', '.join(r['mentions'])} instead"))
        else:
            out.append(Finding("review", f"{what}: the mention is gone"))
    for r in st.run_saved("reviewed_orphans").records():
        out.append(Finding("reviewed-orphan", f"mention {r['mention_uid']} {r['mention']!r} in document "
                           f"{r['doc_id']!r} was reviewed as {r['was_reviewed_as']}, which {r['ontology']} no longer "
                           "has: a person settles it on the review page", problem=False))
    return out


def _orphans(st: GraphStore) -> list[Finding]:
    return [Finding("orphans", f"{r['mentions']:,} mention(s) are orphans of {r['ontology']} (their concept went "
                    f"in a re-ingest): `kgnorm link --relink-orphans` or a person settles them",
                    problem=False, count=int(r["mentions"])) for r in st.run_saved("check_orphans").records()]


def _ontologies(st: GraphStore) -> list[Finding]:
    out = []
    for r in st.run_saved("check_ontologies").records():
        if r["recorded"] is None or int(r["recorded"]) < 0:
            out.append(Finding("ontology", f"{r['stored']:,} concept(s) of ontology {r['ontology']!r}, which has "
                                           "no Ontology record", count=int(r["stored"])))
        elif int(r["recorded"]) != int(r["stored"]):
            out.append(Finding("ontology", f"ontology {r['ontology']} holds {r['stored']:,} concept(s), but "
                                           f"{r['recorded']:,} were loaded", count=abs(int(r["recorded"]) - int(r["stored"]))))
    return out


def _journal(st: GraphStore, journal: ReviewJournal) -> list[Finding]:
    reviews, damaged = journal.scan()
    out = [Finding("journal", f"{len(damaged)} line(s) of the journal {journal.path} are no review (damaged): "
                              f"line(s) {_examples([str(i) for i in damaged])}", count=len(damaged))] if damaged else []
    there = applied(st, [r.uid for r in reviews]) if reviews else set()
    missing = [r for r in reviews if r.uid not in there]
    landing = _can_land(st, missing)
    for pending in (True, False):
        part = [r for r in missing if (r.uid in landing) == pending]
        if not part:
            continue
        names = [f"{r.uid} ({r.decision} of {r.mention_uid} by {r.reviewer or 'anonymous'}, {r.created_at})"
                 for r in part]
        what = f"{len(part)} review(s) in the journal {journal.path} are not in the store: {_examples(names)}"
        if pending:  # acknowledged, journaled, not yet written (a server killed, or waiting for the lock)
            out.append(Finding("journal", f"{what}; `kgnorm serve` (or Workbench.review) writes them when it "
                                          "opens the store", problem=False, count=len(part)))
        else:
            out.append(Finding("journal", f"{what}, and what they review (the mention, or an added span's "
                                          "document) is not in the store: they cannot be written", count=len(part)))
    return out


def _can_land(st: GraphStore, reviews: list[Any]) -> set[str]:
    """The uids of `reviews` a review desk can still write: their mention (an added span: its
    document) is in the store."""
    mentions = {r[0] for r in st.rows_for("UNWIND $u AS x MATCH (m:Mention {uid: x}) RETURN m.uid",
                                          sorted({r.mention_uid for r in reviews if not r.added}))}
    docs = {r[0] for r in st.rows_for("UNWIND $u AS x MATCH (d:Document {uid: x}) RETURN d.uid",
                                      sorted({r.added.document_uid for r in reviews if r.added}))}
    return {r.uid for r in reviews if (r.added.document_uid in docs if r.added else r.mention_uid in mentions)}
