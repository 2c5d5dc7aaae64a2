"""Issue 40 (item 4): `kgnorm link --model M --relink-orphans` with a model built on the OLD
version of the ontology. The model still ranks the concepts the new version removed (an orphan's
own concept first), so each orphan takes its best-ranked candidate that is still a concept of
the ontology (or the single successor a merged candidate went to), not a skip; only orphans
without a survivor in the searched depth stay orphans. Both stores (`journey_store`)."""
from __future__ import annotations

import csv
import json
from pathlib import Path

from cli_runner import run
from test_cli_journey import journey_store  # noqa: F401  (LadybugDB and Bolt, by URI)

# v1: a near name for each concept the new version removes (the tiny untrained BioSyn ranks by
# character overlap, so each mention's own concept is rank 1 and its near name rank 2)
V1 = """C||Diseases
D000011||Kappa fever|kappa pyrexia
D000012||Kappa fever syndrome|kappa pyrexia syndrome
D000013||Lambda rash|lambda dermatitis
D000014||Mu cough|mu tussis
D000015||Nu palsy|nu paralysis
D000017||Mu cough syndrome|mu tussis syndrome
"""
# v2: D000011 and D000014 gone without a successor (their mentions become orphans); D000017 merged
# into D000018, a concept the old model never saw
V2 = """C||Diseases
D000012||Kappa fever syndrome|kappa pyrexia syndrome
D000013||Lambda rash|lambda dermatitis
D000015||Nu palsy|nu paralysis
D000018|D000017||Mu cough complex|mu tussis syndrome|mu cough syndrome
"""
MENTIONS = "id\ttext\nm1\tkappa pyrexia\nm2\tmu tussis\nm3\tlambda dermatitis\n"
ORPHANS = "MATCH (m:Mention)-[:ORPHAN_OF]->(:Ontology {name: 'medic'}) RETURN m.mention_id AS id ORDER BY id"
LINKS = "MATCH (m:Mention)-[:LINKED_TO]->(c:Concept) RETURN m.mention_id AS id, c.uid AS uid ORDER BY id, uid"


def _ok(capsys, store: str, *args: str) -> tuple[str, str]:
    code, out, err = run(capsys, *args, "--store", store)
    assert code == 0, err
    return out, err


def _query(capsys, store: str, cypher: str) -> list[dict]:
    return json.loads(_ok(capsys, store, "query", cypher, "--format", "json")[0])


def _old_model_then_new_version(capsys, tmp_path: Path, store: str, tiny_bert_dir) -> Path:
    """Ingest v1, build an (untrained) model on it, link the mentions, re-ingest v2: m1 and m2
    are orphans, m3 keeps its link. The model's directory."""
    v1, v2 = tmp_path / "medic_v1_01Jan2098.txt", tmp_path / "medic_v2_01Jan2099.txt"
    v1.write_text(V1)
    v2.write_text(V2)
    (tmp_path / "mentions.tsv").write_text(MENTIONS)
    model = tmp_path / "old-model"
    _ok(capsys, store, "ingest", "medic", str(v1), "-q")
    _ok(capsys, store, "train", "biosyn", "--ontology", "medic", "--out", str(model), "--encoder",
        str(tiny_bert_dir), "-q")
    _ok(capsys, store, "link", "--model", str(model), "--input", str(tmp_path / "mentions.tsv"), "-q")
    assert _query(capsys, store, LINKS) == [{"id": "m1", "uid": "MESH:D000011"}, {"id": "m2", "uid": "MESH:D000014"},
                                            {"id": "m3", "uid": "MESH:D000013"}]
    _, err = _ok(capsys, store, "ingest", "medic", str(v2))
    assert "orphaned 2 (of 2 mention(s))" in err
    assert _query(capsys, store, ORPHANS) == [{"id": "m1"}, {"id": "m2"}]
    return model


def _ranking(model: Path, text: str) -> list[str]:
    """The model's own ranking of `text`, deep: what the expected survivors are read from."""
    from kgnorm.jobs.models import open_linker
    from kgnorm.linking.linker import link_stream, pipeline_from_meta
    from kgnorm.mentions.types import Mention

    linker, meta = open_linker(model)
    lm = next(link_stream(linker, pipeline_from_meta(meta), [(Mention(text=text, id="x"), {})], top_k=50))
    return [h.uid for h in lm.parts[0]]


def test_old_version_model_relinks_orphans_to_best_surviving_candidate(capsys, tmp_path, journey_store,  # noqa: F811
                                                                       tiny_bert_dir):
    store = journey_store
    model = _old_model_then_new_version(capsys, tmp_path, store, tiny_bert_dir)
    # the model's top candidate of each orphan is the removed concept; the next one survives
    # (m1: as itself; m2: merged into D000018, which the old model cannot rank)
    assert _ranking(model, "kappa pyrexia")[:2] == ["MESH:D000011", "MESH:D000012"]
    assert _ranking(model, "mu tussis")[:3] == ["MESH:D000014", "MESH:D000017", "MESH:D000015"]
    tsv = tmp_path / "relinked.tsv"
    _, err = _ok(capsys, store, "link", "--model", str(model), "--relink-orphans", "--output", str(tsv))
    assert "linked 2 mention(s); wrote 2 LINKED_TO edge(s)" in err and "still orphans" not in err
    assert "2 orphan(s) linked to their best candidate still in medic" in err
    assert _query(capsys, store, ORPHANS) == []
    assert _query(capsys, store, LINKS) == [{"id": "m1", "uid": "MESH:D000012"}, {"id": "m2", "uid": "MESH:D000018"},
                                            {"id": "m3", "uid": "MESH:D000013"}]
    rows = list(csv.DictReader(tsv.open(), delimiter="\t"))
    assert {r["mention_id"]: r["concept_uids"] for r in rows if r["rank"] == "1"} == \
        {"m1": "MESH:D000012", "m2": "MESH:D000018"}  # the TSV shows what the graph holds
    removed = {"MESH:D000011", "MESH:D000014", "MESH:D000017"}
    assert not removed & {r["concept_uids"] for r in rows}
    runs = _query(capsys, store, "MATCH (m:Mention)-[l:LINKED_TO]->(:Concept) WHERE m.mention_id IN ['m1', 'm2'] "
                                 "MATCH (r:Run) WHERE r.uid = l.run RETURN DISTINCT r.uid AS u")
    assert len(runs) == 1  # both orphans relinked in one run


def test_orphans_without_a_survivor_in_the_searched_depth_stay_orphans(capsys, tmp_path,  # noqa: F811
                                                                       journey_store, tiny_bert_dir):
    from kgnorm.api import Workbench

    store = journey_store
    model = _old_model_then_new_version(capsys, tmp_path, store, tiny_bert_dir)
    shallow = Workbench(store).relink_orphans(model, top_k=1, depth=1)  # the top one only: removed for both
    assert (shallow.n_mentions, shallow.n_edges) == (2, 0) and "2 still orphans" in shallow.edge_note
    assert any("no candidate in medic among the model's top 1: left orphans" in n for n in shallow.notes)
    assert _query(capsys, store, ORPHANS) == [{"id": "m1"}, {"id": "m2"}]
    deep = Workbench(store).relink_orphans(model)  # same model, same orphans: the same run, replaced
    assert deep.run_uid == shallow.run_uid and (deep.n_mentions, deep.n_edges) == (2, 2)
    assert _query(capsys, store, ORPHANS) == []
    assert _query(capsys, store, f"MATCH (r:Run) WHERE r.uid = '{deep.run_uid}' RETURN count(r) AS n") == [{"n": 1}]
    assert Workbench(store).relink_orphans(model).run_uid is None  # nothing left to relink
