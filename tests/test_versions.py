"""Issue 27: a new version of an ontology keeps its links. Links to surviving concepts stay,
links to a concept merged into a single successor move there (recording `moved_from`), the
rest leave their mention an ORPHAN_OF the ontology; retired ids stay resolvable. Store-level
tests run on LadybugDB and over Bolt (the `store` fixture of test_stores)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kgnorm.errors import StoreError
from kgnorm.graph.ontology_graph import Concept, OntologyGraph, RetiredId
from kgnorm.graph.versions import plan_version
from kgnorm.ontologies import medic, snomed
from kgnorm.stores import LinkEdge, MentionRow, PredictionEdge, RunRecord, RunWrite
from test_cli_journey import journey_store  # noqa: F401  (LadybugDB and Bolt, by URI)
from test_stores import count, store  # noqa: F401  (the two-backend fixture)

FIX = Path(__file__).parent / "fixtures"
V1 = FIX / "medic" / "versions" / "medic_v1_01Jan2098.txt"
V2 = FIX / "medic" / "versions" / "medic_v2_01Jan2099.txt"
SCT = FIX / "snomed" / "SnomedCT_InternationalRF2_PRODUCTION_20990131T120000Z"
LINKS = {"m1": "D000001", "m2": "D000002", "m3": "D000003", "m4": "D000004", "m5": "D000005", "m8": "D000008"}


def _graph(*concepts: tuple[str, list[str]]) -> OntologyGraph:
    g = OntologyGraph("t", "obo", "/x")
    for uid, alts in concepts:
        g.add_concept(Concept(uid, uid, uid.lower(), alt_ids=list(alts)))
    g.finalize()
    return g


# -- the plan, without a store -----------------------------------------------------------
def test_plan_moves_single_successors_and_orphans_the_rest():
    new = _graph(("T:a", ["T:x"]), ("T:b", ["T:y"]), ("T:c", ["T:y"]), ("T:d", []))
    new.retired["T:z"] = RetiredId("T:z", "zed", replaced_by=["T:w"])
    new.retired["T:w"] = RetiredId("T:w", "double-u", replaced_by=["T:d"])  # a chain: z -> w -> d
    plan = plan_version({"T:a", "T:x", "T:y", "T:z", "T:gone"}, new)
    assert plan.moved == {"T:x": "T:a", "T:z": "T:d"}
    assert plan.removed == ["T:gone", "T:y"] and plan.ambiguous == {"T:y": ["T:b", "T:c"]}
    assert sorted(plan.added) == ["T:b", "T:c", "T:d"]
    assert plan.retired["T:x"].replaced_by == ["T:a"] and plan.retired["T:y"].consider == ["T:b", "T:c"]
    assert plan.retired["T:gone"].replaced_by == [] and plan.retired["T:z"].replaced_by == ["T:d"]


def test_plan_keeps_earlier_retired_ids_resolvable():
    previous = {"T:old": RetiredId("T:old", "old", replaced_by=["T:a"])}
    plan = plan_version({"T:a"}, _graph(("T:a", []), ("T:b", [])), previous)
    assert plan.retired["T:old"].replaced_by == ["T:a"] and not plan.moved and not plan.removed
    # the successor itself merged away later: the old id follows it
    plan = plan_version({"T:a"}, _graph(("T:b", ["T:a"])), previous)
    assert plan.moved == {"T:a": "T:b"} and plan.retired["T:old"].replaced_by == ["T:b"]


def test_snomed_inactive_concepts_are_retired_with_their_successors():
    g = snomed.load(SCT)
    assert "SNOMEDCT:9990003005" not in g.concepts
    ret = g.retired["SNOMEDCT:9990003005"]
    # the active REPLACED BY row counts; the inactive one (to 9990002000) does not
    assert ret.replaced_by == ["SNOMEDCT:9990001007"] and ret.consider == []


def test_retired_gold_ids_resolve_only_for_a_model_that_lacks_them():
    from kgnorm.evaluation.retired import resolve_retired

    golds = [["T:old"], ["T:old+T:a"], ["-1"], ["T:gone"]]
    new_model = resolve_retired(golds, {"T:a", "T:new", "T:old"}, {"T:old": "T:new"}, {"T:new": ["T:old"]})
    assert new_model.golds == [["T:new"], ["T:new+T:a"], ["-1"], ["T:gone"]]
    assert (new_model.ids, new_model.mentions) == (1, 2)
    old_model = resolve_retired(golds, {"T:a", "T:old"}, {"T:old": "T:new"}, {})  # T:old is its own concept
    assert old_model.golds == golds and old_model.ids == 0


# -- MEDIC v1 -> v2 on both stores ----------------------------------------------------------
def _link_v1(st) -> None:
    st.write_run(RunWrite(
        RunRecord("run-1", "link", "biosyn"),
        mentions=[MentionRow(f"f:{m}", f"text {m}", "d1", i, i + 1, mention_id=m) for i, m in enumerate(LINKS)],
        links=[LinkEdge(f"f:{m}", f"MESH:{d}", 0.9, 1) for m, d in LINKS.items()],
        predictions=[PredictionEdge("f:m1", "MESH:D000003", 0.5, 1, 1, source_is_mention=True)],
        ontology="medic"))


def _links(st) -> dict[str, tuple[str, str]]:
    rows = st.query("MATCH (m:Mention)-[l:LINKED_TO]->(c:Concept) RETURN m.mention_id, c.uid, "
                    "coalesce(l.moved_from, '')").rows
    return {m: (c, f) for m, c, f in rows}


def _orphans(st) -> dict[str, str]:
    return dict(st.query("MATCH (m:Mention)-[r:ORPHAN_OF]->(o:Ontology {name: 'medic'}) "
                         "RETURN m.mention_id, r.concept_uid").rows)


def test_medic_new_version_keeps_moves_and_orphans_links(store):  # noqa: F811
    store.load_ontology(medic.load(V1))
    _link_v1(store)
    s = store.load_ontology(medic.load(V2))
    assert (s.links_kept, s.links_moved, s.links_orphaned, s.orphan_mentions, s.predictions_removed) == (2, 2, 2, 2, 1)
    assert s.merged == {"MESH:D000002": "MESH:D000006", "MESH:D000005": "MESH:D000004"}
    assert s.added_concepts == ["MESH:D000007"] and len(s.removed_concepts) == 4
    assert "moved 2 to a successor, orphaned 2 (of 2 mention(s))" in s.reingest_note()
    assert _links(store) == {"m1": ("MESH:D000001", ""), "m4": ("MESH:D000004", ""),
                             "m2": ("MESH:D000006", "MESH:D000002"), "m5": ("MESH:D000004", "MESH:D000005")}
    assert _orphans(store) == {"m3": "MESH:D000003", "m8": "MESH:D000008"}
    assert [m.mention_id for m in store.orphans("medic")] == ["m3", "m8"]
    assert [(r["mention_id"], r["was_linked_to"]) for r in store.run_saved("orphans", {"ontology": "medic"}).records()] \
        == [("m3", "MESH:D000003"), ("m8", "MESH:D000008")]
    assert [(r["mention_id"], r["moved_from"], r["concept"]) for r in
            store.run_saved("moved_links", {"ontology": "medic"}).records()] == [
        ("m2", "MESH:D000002", "MESH:D000006"), ("m5", "MESH:D000005", "MESH:D000004")]
    assert [r["uid"] for r in store.run_saved("retired_ids", {"ontology": "medic"}).records()] == [
        "MESH:D000002", "MESH:D000003", "MESH:D000005", "MESH:D000008"]
    row = store.query("MATCH (:Mention)-[r:ORPHAN_OF]->(:Ontology) WHERE r.concept_uid = 'MESH:D000003' "
                      "RETURN r.run, r.rank, r.version").rows[0]
    assert row == ["run-1", 1, "01Jan2098"]
    assert count(store, "MATCH ()-[p:PREDICTED_IS_A]->() RETURN count(p)") == 0
    retired = store.retired_ids("medic")
    assert retired["MESH:D000002"].replaced_by == ["MESH:D000006"]
    assert retired["MESH:D000008"].replaced_by == [] and retired["MESH:D000008"].consider == [
        "MESH:D000001", "MESH:D000007"]
    # the same v2 again: nothing moves twice, the orphans stay orphans
    again = store.load_ontology(medic.load(V2))
    assert again.unchanged and len(_orphans(store)) == 2 and len(_links(store)) == 4


def test_relinked_orphans_lose_their_orphan_edge(store):  # noqa: F811
    store.load_ontology(medic.load(V1))
    _link_v1(store)
    store.load_ontology(medic.load(V2))
    orphans = store.orphans("medic")
    store.write_run(RunWrite(RunRecord("relink", "link", "biosyn"), mentions=orphans,
                             links=[LinkEdge(m.uid, "MESH:D000007", 0.7, 1) for m in orphans], ontology="medic",
                             relinked=[m.uid for m in orphans]))
    assert _orphans(store) == {} and _links(store)["m3"] == ("MESH:D000007", "")
    assert count(store, "MATCH (m:Mention) RETURN count(m)") == len(LINKS)


def test_a_failed_replace_leaves_old_version_and_links_whole(store, monkeypatch):  # noqa: F811
    store.load_ontology(medic.load(V1))
    _link_v1(store)
    before = (_links(store), store.ontology_info("medic")["version"])
    bad = medic.load(V2)
    bad.is_a.append(("MESH:D000001", "MESH:nowhere"))  # fails after the links were moved (same transaction)
    with pytest.raises(StoreError, match="store unchanged"):
        store.load_ontology(bad)
    assert (_links(store), store.ontology_info("medic")["version"]) == before
    assert _orphans(store) == {} and store.retired_ids("medic") == {}
    assert count(store, "MATCH ()-[p:PREDICTED_IS_A]->() RETURN count(p)") == 1
    if store.uri.startswith("ladybug"):  # LadybugDB: fail while the moved links and orphans are copied back
        from kgnorm.stores.ladybug_store import LadybugStore
        real = LadybugStore._copy

        def failing(self, table, frame, options=""):
            if table == "ORPHAN_OF":
                raise RuntimeError("disk full (injected)")
            return real(self, table, frame, options)

        monkeypatch.setattr(LadybugStore, "_copy", failing)
        with pytest.raises(StoreError, match="store unchanged.*injected"):
            store.load_ontology(medic.load(V2))
        monkeypatch.undo()
        assert (_links(store), store.ontology_info("medic")["version"]) == before and _orphans(store) == {}


def test_dry_run_plan_writes_nothing(store):  # noqa: F811
    store.load_ontology(medic.load(V1))
    _link_v1(store)
    plan = store.plan_load(medic.load(V2))
    assert (plan.links_kept, plan.links_moved, plan.links_orphaned) == (2, 2, 2) and plan.dry_run
    assert store.ontology_info("medic")["version"] == "01Jan2098" and _orphans(store) == {}
    assert len(_links(store)) == 6


# -- SNOMED: REPLACED BY / SAME AS move links ---------------------------------------------------
def _snomed_v2(tmp: Path) -> Path:
    """The fixture release, a year on: 9990002000 inactive, REPLACED BY 9990001007, and only POSSIBLY
    EQUIVALENT TO the root (a suggestion: `consider`, no move)."""
    dst = tmp / "SnomedCT_InternationalRF2_PRODUCTION_21000131T120000Z"
    shutil.copytree(SCT, dst)
    concept = next(dst.rglob("sct2_Concept_Snapshot*.txt"))
    concept.write_bytes(concept.read_bytes().replace(b"9990002000\t20990131\t1", b"9990002000\t21000131\t0"))
    assoc = next(dst.rglob("der2_cRefset_AssociationSnapshot*.txt"))
    assoc.write_bytes(assoc.read_bytes() + b"7c3d2e1f-4a5b-5c6d-8e7f-9a0b1c2d3e04\t21000131\t1\t900000000000207008\t"
                      b"900000000000526001\t9990002000\t9990001007\r\n"
                      b"8d4e3f20-5b6c-5d7e-9f80-ab1c2d3e4f05\t21000131\t1\t900000000000207008\t"
                      b"900000000000523009\t9990002000\t138875005\r\n")
    return dst


def test_snomed_replaced_by_moves_links(store, tmp_path):  # noqa: F811
    store.load_ontology(snomed.load(SCT))
    store.write_run(RunWrite(RunRecord("r", "link", "x"), mentions=[MentionRow("f:toe", "left toe thing")],
                             links=[LinkEdge("f:toe", "SNOMEDCT:9990002000", 0.8, 1)], ontology="snomedct"))
    s = store.load_ontology(snomed.load(_snomed_v2(tmp_path)))
    assert (s.links_kept, s.links_moved, s.links_orphaned) == (0, 1, 0)
    assert store.query("MATCH (:Mention)-[l:LINKED_TO]->(c:Concept) RETURN c.uid, l.moved_from").rows == [
        ["SNOMEDCT:9990001007", "SNOMEDCT:9990002000"]]
    retired = store.retired_ids("snomedct")
    assert retired["SNOMEDCT:9990002000"].replaced_by == ["SNOMEDCT:9990001007"]
    assert retired["SNOMEDCT:9990002000"].consider == ["SNOMEDCT:138875005"]
    assert retired["SNOMEDCT:9990002000"].name == "Left toe fictional disorder"
    assert retired["SNOMEDCT:9990003005"].replaced_by == ["SNOMEDCT:9990001007"]


# -- the journey on the command line: link v1, dry run, re-ingest v2, relink, score ------------
MENTIONS = ("id\ttext\tgold\nm1\talpha pyrexia\tMESH:D000001\nm2\tbeta disease\tMESH:D000002\n"
            "m3\tgamma wasting\tMESH:D000003\nm4\tdelta anaemia\tMESH:D000004\n"
            "m5\tepsilon dermatitis\tMESH:D000005\nm8\teta tussis\tMESH:D000008\n")


def test_medic_upgrade_journey_on_the_cli(capsys, tmp_path, journey_store, tiny_bert_dir):  # noqa: F811
    import csv
    import json

    from cli_runner import run

    store, mentions = journey_store, tmp_path / "mentions.tsv"
    mentions.write_text(MENTIONS)

    def ok(*args: str) -> tuple[str, str]:
        code, out, err = run(capsys, *args, "--store", store)
        assert code == 0, err
        return out, err

    def query(cypher: str) -> list[dict]:
        return json.loads(ok("query", cypher, "--format", "json")[0])

    def model(name: str) -> str:
        ok("train", "biosyn", "--ontology", "medic", "--out", str(tmp_path / name), "--encoder", str(tiny_bert_dir),
           "-q")
        return str(tmp_path / name)

    ok("ingest", "medic", str(V1), "-q")
    links = tmp_path / "links.tsv"
    ok("link", "--model", model("m1"), "--input", str(mentions), "--output", str(links), "-q")
    top1 = {r["mention_id"]: r["concept_uids"] for r in csv.DictReader(links.open(), delimiter="\t")
            if r["rank"] == "1"}
    assert top1 == {f"m{i}": f"MESH:D00000{i}" for i in (1, 2, 3, 4, 5, 8)}  # exact names, so exact links
    # the dry run says what would happen and changes nothing
    _, err = ok("ingest", "medic", str(V2), "--dry-run")
    assert "links: 2 kept, 2 moved, 2 orphaned (2 mention(s))" in err
    assert "1 added: MESH:D000007" in err and "2 removed: MESH:D000003, MESH:D000008" in err
    assert "MESH:D000002 -> MESH:D000006" in err
    assert query("MATCH (o:Ontology) RETURN o.version AS v") == [{"v": "01Jan2098"}]
    from kgnorm.api import Workbench
    plan = Workbench(store).ingest("medic", V2, dry_run=True, quiet=True)
    assert plan.dry_run and (plan.links_kept, plan.links_moved, plan.links_orphaned) == (2, 2, 2)
    _, err = ok("ingest", "medic", str(V2))
    assert "kept 2 link(s), moved 2 to a successor, orphaned 2 (of 2 mention(s))" in err
    moved = query("MATCH (m:Mention)-[l:LINKED_TO]->(c:Concept) WHERE coalesce(l.moved_from, '') <> '' "
                  "RETURN m.mention_id AS id, c.uid AS c, l.moved_from AS f ORDER BY id")
    assert moved == [{"id": "m2", "c": "MESH:D000006", "f": "MESH:D000002"},
                     {"id": "m5", "c": "MESH:D000004", "f": "MESH:D000005"}]
    orphan_q = "MATCH (m:Mention)-[:ORPHAN_OF]->(:Ontology {name: 'medic'}) RETURN m.mention_id AS id ORDER BY id"
    assert query(orphan_q) == [{"id": "m3"}, {"id": "m8"}]
    # relink the orphans with a model of the new version
    m2 = model("m2")
    out, err = ok("link", "--model", m2, "--relink-orphans")
    assert "linked 2 mention(s)" in err and query(orphan_q) == []
    assert {r["m"] for r in query("MATCH (m:Mention)-[:LINKED_TO]->(:Concept) RETURN DISTINCT m.mention_id AS m")} \
        == {"m1", "m2", "m3", "m4", "m5", "m8"}
    assert [r["mention_id"] for r in csv.DictReader(out.splitlines(), delimiter="\t")][:1] == ["m3"]
    from kgnorm.api import Workbench
    again = Workbench(store).relink_orphans(m2)  # the Python API: nothing left to relink
    assert again.run_uid is None and "no orphan mentions" in again.notes[0]
    # gold written against v1: the merged ids are scored through their successor, and said so
    out, _ = ok("eval", "link", "--model", m2, "--gold", str(mentions), "--allow-unknown-gold", "--format", "json")
    report = json.loads(out)
    assert (report["retired_gold_ids"], report["retired_gold_mentions"], report["unknown_gold_ids"]) == (2, 2, 1)


def test_link_needs_input_or_relink_orphans(capsys, tmp_path):
    from cli_runner import run

    for extra in ((), ("--input", str(tmp_path / "m.tsv"), "--relink-orphans")):
        code, _, err = run(capsys, "link", "--model", str(tmp_path), *extra, "--store", str(tmp_path / "g"))
        assert code != 0 and "give --input, or --relink-orphans (not both)" in err


# -- a kill while the links are being moved leaves the old version whole ----------------------
KILLED = """
import os, sys, time
from kgnorm.ontologies import medic
from kgnorm.stores import open_store
import kgnorm.stores.ladybug_store as lb, kgnorm.stores.neo4j_store as neo

def stall(*args, **kw):  # inside the replace's transaction, after the links were moved
    print("moving", flush=True)
    time.sleep(60)

real_copy = lb.LadybugStore._copy
lb.LadybugStore._copy = lambda self, table, frame, options="": (
    stall() if table == "ORPHAN_OF" else real_copy(self, table, frame, options))
real_batches = neo._batches
neo._batches = lambda rows, *a: (  # Bolt: the removed concepts' keys, deleted after the moves and orphans
    stall() if rows and isinstance(rows[0], str) else real_batches(rows, *a))
st = open_store(sys.argv[1])
st.load_ontology(medic.load(sys.argv[2]))
"""


def test_a_kill_while_links_move_leaves_old_version_whole(store):  # noqa: F811
    import subprocess
    import sys

    store.load_ontology(medic.load(V1))
    _link_v1(store)
    before = (_links(store), store.ontology_info("medic")["version"])
    uri = store.test_uri
    if uri.startswith("ladybug"):
        store.close()  # the child takes the write lock
    proc = subprocess.Popen([sys.executable, "-c", KILLED, uri, str(V2)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "moving"
    finally:
        proc.kill()
        proc.wait()
    from kgnorm.stores import open_store
    with open_store(uri) as st:
        assert (_links(st), st.ontology_info("medic")["version"]) == before
        assert _orphans(st) == {} and st.retired_ids("medic") == {}
        assert count(st, "MATCH (c:Concept) WHERE c.ontology = 'medic' RETURN count(c)") == 8


def test_dry_run_never_makes_a_store(capsys, tmp_path):
    from cli_runner import run

    code, _, err = run(capsys, "ingest", "medic", str(V1), "--dry-run", "--store", str(tmp_path / "none"))
    assert code == 0 and "new ontology: 8 concept(s) added" in err and not (tmp_path / "none").exists()
    code, _, err = run(capsys, "ingest", "medic", str(FIX / "medic" / "bad_line.txt"), "--dry-run",
                       "--store", str(tmp_path / "none"))
    assert code != 0 and "bad_line.txt" in err and not (tmp_path / "none").exists()


# -- OBO: an obsolete term with replaced_by moves its links; consider alone orphans them -----------
OBO_HEAD = "format-version: 1.2\nontology: toy\n\n[Term]\nid: TOY:0000001\nname: toy root\n"
OBO_V1 = OBO_HEAD + """
[Term]
id: TOY:0000002
name: toy anomaly
is_a: TOY:0000001

[Term]
id: TOY:0000003
name: toy defect
is_a: TOY:0000001
"""
OBO_V2 = OBO_HEAD + """
[Term]
id: TOY:0000002
name: toy anomaly
is_obsolete: true
replaced_by: TOY:0000004

[Term]
id: TOY:0000003
name: toy defect
is_obsolete: true
consider: TOY:0000001

[Term]
id: TOY:0000004
name: toy anomaly, refined
is_a: TOY:0000001
"""

def test_obo_obsolete_replaced_by_moves_links(store, tmp_path):  # noqa: F811
    from kgnorm.ontologies import obo

    for name, body in (("v1", OBO_V1), ("v2", OBO_V2)):
        (tmp_path / f"{name}.obo").write_text(body)
    store.load_ontology(obo.load(tmp_path / "v1.obo", "toy"))
    store.write_run(RunWrite(RunRecord("r", "link", "x"), ontology="toy",
                             mentions=[MentionRow("f:a", "anomaly"), MentionRow("f:d", "defect")],
                             links=[LinkEdge("f:a", "TOY:0000002", 0.9, 1), LinkEdge("f:d", "TOY:0000003", 0.9, 1)]))
    s = store.load_ontology(obo.load(tmp_path / "v2.obo", "toy"))
    assert (s.links_kept, s.links_moved, s.links_orphaned) == (0, 1, 1)
    assert store.query("MATCH (:Mention)-[l:LINKED_TO]->(c:Concept) RETURN c.uid, l.moved_from").rows == [
        ["TOY:0000004", "TOY:0000002"]]
    assert store.query("MATCH (m:Mention)-[r:ORPHAN_OF]->(:Ontology) RETURN m.uid, r.concept_uid").rows == [
        ["f:d", "TOY:0000003"]]
    retired = store.retired_ids("toy")
    assert retired["TOY:0000003"].consider == ["TOY:0000001"] and retired["TOY:0000003"].replaced_by == []
