"""Issue 15: nothing a user wrote is lost. Links survive re-ingest, mentions keep their
identity, queries are read-only unless asked, failures name their cause, readers share
the store and a held lock is waited for and named. Store-level tests run on LadybugDB and
over Bolt (the `store` fixture of test_stores)."""
from __future__ import annotations

import csv
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cli_runner import run
from kgnorm.errors import InputError, StoreError
from kgnorm.stores import LinkEdge, MentionRow, PredictionEdge, RunRecord, RunWrite, open_store
from test_stores import _state, count, make_graph, store  # noqa: F401  (the two-backend fixture)

FIX = Path(__file__).parent / "fixtures"


def _linked_run(st) -> None:
    st.write_run(RunWrite(
        RunRecord("run-1", "link", "biosyn"),
        mentions=[MentionRow("f:m1", "alpha", "d1", 0, 5, mention_id="m1"),
                  MentionRow("f:m2", "gamma", "d1", 6, 11, mention_id="m2")],
        links=[LinkEdge("f:m1", "T:a", 0.9, 1), LinkEdge("f:m2", "T:c", 0.8, 1)],
        predictions=[PredictionEdge("T:b", "T:root", 0.7, 1, 1),
                     PredictionEdge("f:m2", "T:a", 0.6, 1, 1, source_is_mention=True)]))


# -- row 1: re-ingest keeps links ---------------------------------------------------
def test_reingest_keeps_links_and_reports_removed(store):  # noqa: F811
    store.load_ontology(make_graph())
    _linked_run(store)
    same = store.load_ontology(make_graph(version="2", extra=True))
    assert same.replaced and same.links_kept == 4 and same.links_removed == 0 and not same.removed_concepts
    assert count(store, "MATCH (:Mention)-[l:LINKED_TO]->(:Concept) RETURN count(l)") == 2
    assert count(store, "MATCH ()-[p:PREDICTED_IS_A]->(:Concept) RETURN count(p)") == 2
    assert [r["concept"] for r in store.run_saved("run_links", {"run": "run-1"}).records()] == ["T:a", "T:c"]
    # a version without T:c: its link goes with it, counted and named; the others stay
    g = make_graph(version="3", extra=True)
    del g.concepts["T:c"]
    g.is_a = [(c, p) for c, p in g.is_a if "T:c" not in (c, p)]
    summary = store.load_ontology(g)
    assert summary.removed_concepts == ["T:c"] and summary.links_removed == 1
    assert summary.links_removed_to == ["T:c"] and summary.links_kept == 3
    assert "1 link(s) that pointed to them: T:c" in summary.reingest_note()
    assert [r["concept"] for r in store.run_saved("run_links", {"run": "run-1"}).records()] == ["T:a"]
    assert count(store, "MATCH ()-[p:PREDICTED_IS_A]->(:Concept) RETURN count(p)") == 2
    assert count(store, "MATCH (c:Concept) RETURN count(c)") == 4


def test_reingest_updates_concepts_in_place(store):  # noqa: F811
    store.load_ontology(make_graph())
    _linked_run(store)
    g = make_graph(version="2")
    g.concepts["T:a"].name = "Alpha disease, renamed"
    store.load_ontology(g)
    row = store.run_saved("concept_links", {"uid": "T:a"}).records()
    assert [r["mention_id"] for r in row] == ["m1"]
    assert store.run_saved("concept", {"uid": "T:a"}).records()[0]["name"] == "Alpha disease, renamed"
    assert count(store, "MATCH (:Concept)-[r:IS_A]->(:Concept) RETURN count(r)") == 4


# -- row 4: the real cause, not the failed ROLLBACK ------------------------------------
def test_failed_ingest_names_its_cause(store):  # noqa: F811
    store.load_ontology(make_graph())
    before = _state(store)
    bad = make_graph(version="broken", extra=True)
    bad.is_a.append(("T:d", "T:nowhere"))
    with pytest.raises(StoreError) as err:
        store.load_ontology(bad)
    assert "T:nowhere" in str(err.value) and "ROLLBACK" not in str(err.value)
    assert _state(store) == before  # the version alone stays "1" even without a rollback


def test_two_ontologies_sharing_curies_live_in_one_store(store):  # noqa: F811
    store.load_ontology(make_graph())
    _linked_run(store)
    other = make_graph("other", "T", version="9")  # the same uids, another ontology (MeSH and MEDIC)
    other.concepts["T:a"].name = "Alpha, as the other ontology names it"
    assert not store.load_ontology(other).replaced
    assert count(store, "MATCH (c:Concept) RETURN count(c)") == 8
    rows = store.run_saved("concept", {"uid": "T:a"}).records()
    assert sorted((r["ontology"], r["name"]) for r in rows) == [
        ("other", "Alpha, as the other ontology names it"), ("toy", "Alpha disease")]
    assert count(store, "MATCH (:Concept)-[r:IS_A]->(:Concept) RETURN count(r)") == 8
    # a run names its ontology; the links land on that ontology's node only
    store.write_run(RunWrite(RunRecord("run-o", "link", "x"), mentions=[MentionRow("f:m9", "alpha")],
                             links=[LinkEdge("f:m9", "T:a", 1.0, 1)], ontology="other"))
    assert store.query("MATCH (:Mention)-[:LINKED_TO]->(c:Concept) WHERE c.uid = 'T:a' "
                       "RETURN c.ontology ORDER BY c.ontology").rows == [["other"], ["toy"]]
    with pytest.raises(StoreError, match="several ontologies"):  # without one, a shared uid is ambiguous
        store.write_run(RunWrite(RunRecord("run-x", "link", "x"), mentions=[MentionRow("f:m9", "alpha")],
                                 links=[LinkEdge("f:m9", "T:a", 1.0, 1)]))
    # re-ingesting one leaves the other, and its links, alone
    store.load_ontology(make_graph(version="2", extra=True))
    assert count(store, "MATCH (c:Concept) WHERE c.ontology = 'other' RETURN count(c)") == 4
    assert count(store, "MATCH (:Mention)-[l:LINKED_TO]->(:Concept) RETURN count(l)") == 3


def test_mesh_and_medic_in_one_store(capsys, tmp_path):
    uri = f"ladybug://{tmp_path}/graph"
    for fmt, path in (("mesh", "mesh/release"), ("medic", "medic/CTD_diseases.tsv")):
        code, _, err = run(capsys, "ingest", fmt, str(FIX / path), "--store", uri, "-q")
        assert code == 0, err
    code, out, _ = run(capsys, "query", "--saved", "concept", "--param", "uid=MESH:D900001", "--format", "json",
                       "--store", uri)
    assert sorted(r["ontology"] for r in json.loads(out)) == ["medic", "mesh"]


# -- row 9 (Bolt): a run is all or nothing ----------------------------------------------
def test_run_with_a_missing_concept_writes_nothing(store):  # noqa: F811
    store.load_ontology(make_graph())
    with pytest.raises(StoreError, match="store unchanged.*T:missing"):
        store.write_run(RunWrite(RunRecord("r", "link", "x"), mentions=[MentionRow("m", "t")],
                                 links=[LinkEdge("m", "T:a", 1.0, 1), LinkEdge("m", "T:missing", 1.0, 2)]))
    with pytest.raises(StoreError, match="store unchanged"):  # a mention the run does not write
        store.write_run(RunWrite(RunRecord("r", "link", "x"), mentions=[MentionRow("m", "t")],
                                 links=[LinkEdge("m", "T:a", 1.0, 1), LinkEdge("elsewhere", "T:b", 1.0, 1)]))
    assert count(store, "MATCH (r:Run) RETURN count(r)") == 0
    assert count(store, "MATCH ()-[l:LINKED_TO]->() RETURN count(l)") == 0


# -- row 3: read-only unless asked --------------------------------------------------------
READ_ONLY = "the store is opened read-only: pass --write to change it"
WRITES = ["MATCH (c:Concept) DETACH DELETE c",                      # deletes
          "MATCH (c:Concept {uid: 'T:a'}) SET c.name = 'renamed' RETURN c.name",  # sets, returns rows
          "MATCH (c:Concept {uid: 'T:none'}) SET c.name = 'x'",      # a write that matches nothing
          "CREATE (o:Ontology {name: 'intruder'})",                  # creates
          "CREATE INDEX kgnorm_intruder IF NOT EXISTS FOR (c:Concept) ON (c.name)"]  # schema


def test_read_only_store_refuses_writes(store, tmp_path):  # noqa: F811
    """Every backend refuses each write with one line and leaves the store as it was.

    Test server differs from Neo4j 5: ArcadeDB's Bolt plugin runs writes in READ access mode,
    so on it the refusal is kgnorm's own (kgnorm.stores.bolt_read). Found by experiment
    (arcadedb-embedded 26.10): its result summaries do show a write (query type 'w', update
    counters, also for a SET that matched nothing), and a rolled-back transaction undoes data
    writes; but schema changes are not transactional there, so a statement-level check refuses
    CREATE/DROP INDEX|CONSTRAINT before it is sent. It also reports query type 'w' for the
    EXPLAIN of a read, so an EXPLAIN (planned, never run) is judged by its counters alone.
    Neo4j 5 refuses all five writes itself."""
    store.load_ontology(make_graph())
    before = _state(store)
    indexes = _index_names(store)
    store.close()
    reader = open_store(store.test_uri, read_only=True)
    try:
        for cypher in WRITES:
            with pytest.raises(StoreError, match=f"^query failed: .*; {READ_ONLY}$"):
                reader.query(cypher)
        assert _state(reader) == before and _index_names(reader) == indexes
        assert "kgnorm_intruder" not in indexes
        assert count(reader, "MATCH (c:Concept) RETURN count(c)") == 4  # reads still run
        reader.query("EXPLAIN MATCH (c:Concept) RETURN c.uid")  # ArcadeDB says query type 'w' for any EXPLAIN
    finally:
        reader.close()


def _index_names(st) -> list[str]:
    """The index names on a Bolt server (LadybugDB has no SHOW INDEXES: [] there)."""
    if st.uri.startswith("ladybug://"):
        return []
    res = st.query("SHOW INDEXES")
    return sorted(str(r[res.columns.index("name")]) for r in res.rows)


@pytest.fixture()
def medic_store(capsys, tmp_path) -> str:
    uri = f"ladybug://{tmp_path}/graph"
    code, _, err = run(capsys, "ingest", "medic", str(FIX / "medic/CTD_diseases.tsv"), "--store", uri, "-q")
    assert code == 0, err
    assert "creating a new store at" in err
    return uri


def _concepts(capsys, uri: str) -> int:
    code, out, err = run(capsys, "query", "MATCH (c:Concept) RETURN count(c) AS n", "--format", "json",
                         "--store", uri)
    assert code == 0, err
    return json.loads(out)[0]["n"]


def test_query_is_read_only_unless_write(capsys, medic_store, tmp_path):
    n = _concepts(capsys, medic_store)
    for stmt in ("MATCH (c:Concept) DETACH DELETE c", "CREATE (c:Concept {uid: 'X:1'})", "DROP TABLE Run",
                 f"COPY (MATCH (c:Concept) RETURN c.uid) TO '{tmp_path}/leak.csv'"):
        code, _, err = run(capsys, "query", stmt, "--store", medic_store)
        assert code == 1 and "read-only" in err and "--write" in err, (stmt, err)
    assert not (tmp_path / "leak.csv").exists() and _concepts(capsys, medic_store) == n
    code, out, err = run(capsys, "query", "MATCH (c:Concept) RETURN count(*); MATCH (c) DETACH DELETE c",
                         "--write", "--store", medic_store)
    assert code == 1 and "one statement" in err
    assert _concepts(capsys, medic_store) == n
    code, _, err = run(capsys, "query", "CREATE (c:Concept {key: 'x|X:1', uid: 'X:1', ontology: 'x'})", "--write",
                       "--store", medic_store)
    assert code == 0, err
    assert _concepts(capsys, medic_store) == n + 1


# -- row 5: reads never create a store ----------------------------------------------------
def test_reads_never_create_a_store(capsys, tmp_path):
    typo = tmp_path / "grpah"
    for args in (["ontologies"], ["query", "MATCH (c:Concept) RETURN c"], ["query", "--saved", "ontology_counts"]):
        code, out, err = run(capsys, *args, "--store", str(typo))
        assert code == 1 and f"no store at {typo}" in err and out == ""
    assert not typo.exists() and list(tmp_path.iterdir()) == []


# -- row 4: Ctrl-C ---------------------------------------------------------------------------
def test_ctrl_c_during_ingest_exits_130_store_unchanged(capsys, medic_store, monkeypatch):
    from kgnorm.stores.ladybug_store import LadybugStore

    before = run(capsys, "ontologies", "--format", "json", "--store", medic_store)[1]
    calls = []
    real = LadybugStore._copy

    def interrupted(self, table, frame, options=""):
        calls.append(table)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self, table, frame, options)

    monkeypatch.setattr(LadybugStore, "_copy", interrupted)
    code, _, err = run(capsys, "ingest", "medic", str(FIX / "medic/medic_01Jan2099.txt"), "--store", medic_store,
                       "-q")  # another version: an unchanged one would write nothing
    monkeypatch.undo()
    assert code == 130 and err.strip().splitlines()[-1] == "kgnorm: interrupted; store unchanged"
    assert run(capsys, "ontologies", "--format", "json", "--store", medic_store)[1] == before


# -- row 6: readers share the store; a held lock is waited for, then named -----------------
HOLD = textwrap.dedent("""
    import sys, time
    from kgnorm.stores import open_store
    st = open_store(sys.argv[1], read_only=sys.argv[2] == "ro")
    print("open", flush=True)
    time.sleep(float(sys.argv[3]))
    st.close()
""")


def _hold(uri: str, mode: str, seconds: float) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, uri, mode, str(seconds)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "open"
    return proc


def test_readers_share_and_a_held_lock_is_named(capsys, medic_store):
    reader = _hold(medic_store, "ro", 30)
    try:
        assert _concepts(capsys, medic_store) > 0  # a second reader while the first holds the store
    finally:
        reader.kill()
        reader.wait()
    writer = _hold(medic_store, "rw", 30)
    try:
        assert _concepts(capsys, medic_store) > 0  # reads do not wait for a writer
        code, _, err = run(capsys, "query", "CREATE (c:Concept {uid: 'X:1'})", "--write", "--lock-timeout", "0.5",
                           "--store", medic_store)
        assert code == 1 and f"pid {writer.pid}" in err and "--lock-timeout" in err, err
    finally:
        writer.kill()
        writer.wait()


# -- row 2: duplicate ids within one file ------------------------------------------------------
def test_duplicate_mention_id_names_both_lines(tmp_path):
    from kgnorm.mentions.readers import read_mentions

    f = tmp_path / "m.tsv"
    f.write_text("id\ttext\nm1\tstroke\nm2\tfever\nm1\tseizures\n")
    with pytest.raises(InputError, match=r"m.tsv:4: duplicate id m1 \(first on line 2\)"):
        list(read_mentions(f))


# -- rows 5 and 7: malformed URIs are refused before the disk is touched; no password is echoed --
@pytest.mark.parametrize("uri,needle", [
    ("bolt//user:secret@host", "malformed store URI 'bolt//user:***@host'"),
    ("neo4j:/db.example", "malformed store URI"),
    ("http://user:secret@host/db", "unknown store URI scheme in 'http://user:***@host/db'"),
    ("bolt+x://user:secret@host", "unknown store URI scheme in 'bolt+x://user:***@host'"),
])
def test_malformed_uri_refused_and_redacted(capsys, tmp_path, monkeypatch, uri, needle):
    monkeypatch.chdir(tmp_path)
    for args in (["ontologies"], ["ingest", "obo", str(FIX / "obo/hp_mini.obo")]):
        code, _, err = run(capsys, *args, "--store", uri)
        assert code == 1 and needle in err and "secret" not in err, err
    assert list(tmp_path.iterdir()) == []


def test_neo4j_routing_failure_names_its_cause_on_one_line(capsys):
    code, _, err = run(capsys, "ontologies", "--store", "neo4j://user:secret@127.0.0.1:1")
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert "Connection refused" in err and "secret" not in err


# -- row 9: unbound or misspelt parameters and ill-typed slots are errors ---------------------
@pytest.mark.parametrize("args,needle", [
    (["--saved", "concept", "--param", "id=MESH:D900002"], "no parameter 'id' (it takes: uid)"),
    (["--saved", "concept"], "needs --param uid"),
    (["MATCH (c:Concept) WHERE c.uid = $u RETURN c.uid"], "needs --param u"),
    (["--saved", "descendants", "--param", "root=MESH:D900000", "--param", "depth=true"], "must be an integer"),
    (["--saved", "descendants", "--param", "root=MESH:D900000", "--param", "depth=2.9"], "must be an integer"),
    (["--saved", "descendants", "--param", "root=MESH:D900000", "--param", "dept=2"], "no parameter 'dept'"),
])
def test_unbound_params_and_bad_slots_are_errors(capsys, medic_store, args, needle):
    code, out, err = run(capsys, "query", *args, "--store", medic_store)
    assert code == 1 and needle in err and out == "", err


def test_params_inside_strings_are_not_parameters():
    from kgnorm.stores.cypher_files import fill_slots

    text, params = fill_slots("MATCH (c) WHERE c.name = '$notaparam' AND c.uid = $u RETURN c", {"u": "X"})
    assert params == {"u": "X"}


# -- row 8: an unchanged re-ingest rewrites nothing, so the store does not grow ---------------
def test_unchanged_reingest_rewrites_nothing(store, tmp_path):  # noqa: F811
    store.load_ontology(make_graph())
    _linked_run(store)
    first = store.load_ontology(make_graph(version="1"))
    assert first.unchanged and first.links_kept == 4 and "nothing rewritten" in first.reingest_note()
    assert count(store, "MATCH (:Mention)-[l:LINKED_TO]->(:Concept) RETURN count(l)") == 2
    changed = make_graph(version="2")
    changed.concepts["T:b"].name = "Beta disease, renamed"
    assert not store.load_ontology(changed).unchanged
    assert store.ontology_info("toy")["version"] == "2"


def test_store_size_bounded_on_unchanged_reingest(tmp_path):
    from kgnorm.ontologies import obo

    path = tmp_path / "graph"
    g = obo.load(FIX / "obo/hp_mini.obo")

    def size() -> int:
        return sum(f.stat().st_size for f in tmp_path.glob("graph*") if f.is_file())

    with open_store(str(path), create=True) as st:
        st.load_ontology(g)
    once = size()
    for _ in range(3):
        with open_store(str(path)) as st:
            assert st.load_ontology(g).unchanged
    assert size() < once * 1.5  # a full rewrite each time would add about `once` per re-ingest


def test_store_from_before_concept_keys_is_read_not_rewritten(capsys, tmp_path):
    import ladybug as lb

    from kgnorm.stores.cypher_files import split_statements

    old = (Path(__file__).parent / "fixtures/ladybug_schema_0_1.cypher").read_text()
    path = tmp_path / "old"
    db = lb.Database(str(path))
    conn = lb.Connection(db)
    for stmt in split_statements(old):
        conn.execute(stmt)
    conn.execute("CREATE (c:Concept {uid: 'MESH:D1', ontology: 'medic', name: 'old'})")
    conn.execute("CREATE (o:Ontology {name: 'medic', version: '1'})")
    conn.close()
    db.close()
    code, out, err = run(capsys, "query", "MATCH (c:Concept) WHERE c.uid = 'MESH:D1' RETURN c.name AS name",
                         "--format", "json", "--store", str(path))
    assert code == 0 and json.loads(out)[0]["name"] == "old", err
    code, _, err = run(capsys, "ingest", "medic", str(FIX / "medic/CTD_diseases.tsv"), "--store", str(path))
    assert code == 1 and "made by an earlier kgnorm" in err
    code, out, _ = run(capsys, "query", "MATCH (c:Concept) RETURN c.name AS n", "--format", "json", "--store", str(path))
    assert json.loads(out) == [{"n": "old"}]


def test_second_ingest_waits_for_the_lock_before_parsing(capsys, medic_store, monkeypatch):
    from kgnorm.ontologies import medic

    def parse(*a, **k):
        raise AssertionError("parsed while another process held the store")

    writer = _hold(medic_store, "rw", 30)
    try:
        monkeypatch.setattr(medic, "load", parse)
        code, _, err = run(capsys, "ingest", "medic", str(FIX / "medic/CTD_diseases.tsv"), "--lock-timeout", "0.5",
                           "--store", medic_store)
        assert code == 1 and f"pid {writer.pid}" in err, err
    finally:
        writer.kill()
        writer.wait()


def test_compact_reclaims_space_and_keeps_everything(capsys, tmp_path):
    from kgnorm.ontologies import obo
    from kgnorm.stores.ladybug_compact import store_mb

    path = tmp_path / "graph"
    g = obo.load(FIX / "obo/hp_mini.obo")
    with open_store(str(path), create=True) as st:
        st.load_ontology(g)
        st.write_run(RunWrite(RunRecord("r1", "link", "x"), mentions=[MentionRow("f:m1", "curl", mention_id="m1")],
                              links=[LinkEdge("f:m1", "HP:9990001", 0.9, 1)], ontology=g.name))
        for i in range(4):  # changed versions: each rewrites the ontology
            g.concepts["HP:9990003"].name = f"Fictional nail ridge v{i}"
            st.load_ontology(g)
    grown = store_mb(path)
    q = ["MATCH (c:Concept)-[:IS_A]->(p:Concept) RETURN count(*) AS n", "MATCH (m:Mention)-[l:LINKED_TO]->(c:Concept) "
         "RETURN m.mention_id AS m, c.uid AS c, l.run AS run", "MATCH (c:Concept) RETURN c.key AS k, c.name AS n, "
         "c.synonyms AS s ORDER BY k", "MATCH (o:Ontology) RETURN o.name AS n, o.content_digest AS d"]
    before = [run(capsys, "query", x, "--format", "json", "--store", str(path))[1] for x in q]
    code, _, err = run(capsys, "compact", "--store", str(path))
    assert code == 0 and "compacted" in err, err
    assert store_mb(path) < grown
    assert [run(capsys, "query", x, "--format", "json", "--store", str(path))[1] for x in q] == before
    assert run(capsys, "query", "--saved", "concept", "--param", "uid=HP:9990001", "--format", "json",
               "--store", str(path))[0] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["graph"]
