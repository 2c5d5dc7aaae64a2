"""The `kgnorm` command end to end on the embedded store: ingest every fixture format, query in
every output format, bad input (one line, exit != 0, store unchanged), link and hypernyms."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from cli_runner import run

FIX = Path(__file__).parent / "fixtures"


@pytest.fixture()
def store(tmp_path) -> str:
    return f"ladybug://{tmp_path}/graph"


def counts(capsys, store: str) -> list[dict]:
    code, out, _ = run(capsys, "ontologies", "--format", "json", "--store", store)
    assert code == 0
    return json.loads(out)


@pytest.mark.parametrize("fmt,path,name,uid", [
    ("obo", "obo/hp_mini.obo", None, None),
    ("medic", "medic/CTD_diseases.tsv", "ctd", "MESH:D900001"),
    ("mesh", "mesh/release", None, None),
    ("snomed", "snomed/SnomedCT_InternationalRF2_PRODUCTION_20990131T120000Z", None, "SNOMEDCT:9990002000"),
    ("meddra", "meddra/MedDRA_99_0_English/MedAscii", None, "MEDDRA:19900301"),
])
def test_ingest_every_format(capsys, store, fmt, path, name, uid):
    args = ["ingest", fmt, str(FIX / path), "--store", store, "--quiet"]
    if name:
        args[3:3] = ["--ontology", name]
    code, _, err = run(capsys, *args)
    assert code == 0, err
    rows = counts(capsys, store)
    assert len(rows) == 1 and rows[0]["concepts"] > 0 and rows[0]["format"] == fmt
    if uid:
        code, out, _ = run(capsys, "query", "--saved", "concept", "--param", f"uid={uid}", "--format", "json",
                           "--store", store)
        assert json.loads(out)[0]["uid"] == uid


def test_query_formats_params_and_files(capsys, store, tmp_path):
    assert run(capsys, "ingest", "medic", str(FIX / "medic/CTD_diseases.tsv"), "--store", store, "-q")[0] == 0
    code, out, _ = run(capsys, "query", "MATCH (c:Concept) WHERE c.uid = $u RETURN c.uid AS uid, c.name AS name",
                       "--param", "u=MESH:D900002", "--format", "json", "--store", store)
    assert code == 0 and json.loads(out) == [{"uid": "MESH:D900002", "name": "Fictional Syndrome of the Toe"}]
    code, out, _ = run(capsys, "query", "--saved", "concept", "--param", "uid=MESH:D900002", "--format", "csv",
                       "--store", store)
    rows = list(csv.DictReader(out.splitlines()))
    assert rows[0]["uid"] == "MESH:D900002" and json.loads(rows[0]["parents"]) == ["MESH:D900001"]
    assert json.loads(rows[0]["children"]) == ["OMIM:999002"]
    qf = tmp_path / "q.cypher"
    qf.write_text("// count\nMATCH (c:Concept) RETURN count(c) AS n;\n")
    code, out, _ = run(capsys, "query", "--file", str(qf), "--store", store)
    assert code == 0 and "n" in out and "1 row(s)" in out
    code, out, _ = run(capsys, "query", "--saved", "descendants", "--param", "root=MESH:D900000",
                       "--param", "depth=2", "--format", "json", "--store", store)
    assert [r["uid"] for r in json.loads(out)] == ["MESH:D900001", "MESH:D900002"]
    code, out, _ = run(capsys, "query", "--saved", "search", "--param", "q=toe syndrome", "--format", "json",
                       "--store", store)
    assert {r["uid"] for r in json.loads(out)} >= {"OMIM:999002"}
    code, out, _ = run(capsys, "query", "--list")
    assert code == 0 and "descendants" in out and "predicted_hypernyms" in out


@pytest.mark.parametrize("args,needle", [
    (["ingest", "medic", "medic/bad_line.txt"], "bad_line.txt:"),
    (["ingest", "medic", "obo/hp_mini.obo"], "hp_mini.obo"),
    (["ingest", "obo", "obo/error_page.obo"], "error_page.obo"),  # a web page saved as .obo
    (["ingest", "medic", "medic/dangling.tsv"], "dangling.tsv"),
    (["ingest", "obo", "obo/dangling.obo"], "dangling.obo"),
    (["ingest", "obo", "obo/nonexistent.obo"], "nonexistent.obo"),
    (["query", "MATCH (c:Concept RETURN c"], "query failed"),
    (["query", "--saved", "nope"], "no saved query"),
    (["query", "--saved", "descendants", "--param", "root=X", "--param", "depth=deep"], "must be an integer"),
])
def test_bad_input_one_line_nonzero_store_unchanged(capsys, store, args, needle):
    assert run(capsys, "ingest", "medic", str(FIX / "medic/CTD_diseases.tsv"), "--store", store, "-q")[0] == 0
    before = counts(capsys, store)
    args = [str(FIX / a) if "/" in a and not a.startswith("MATCH") else a for a in args]
    code, out, err = run(capsys, *args, "--store", store)
    assert code != 0
    lines = [line for line in err.strip().splitlines() if line.startswith("kgnorm: error")]
    assert len(lines) == 1 and needle in lines[0], err
    assert "Traceback" not in err
    assert counts(capsys, store) == before


def test_unreachable_neo4j(capsys):
    code, _, err = run(capsys, "ontologies", "--store", "bolt://127.0.0.1:1")
    assert code == 1 and err.startswith("kgnorm: error: cannot reach Neo4j")


def test_allow_dangling_drops_and_reports(capsys, store):
    code, _, err = run(capsys, "ingest", "medic", str(FIX / "medic/dangling.tsv"), "--allow-dangling",
                       "--store", store)
    assert code == 0 and "unknown ids dropped" in err


def test_link_and_eval_with_tiny_bert(capsys, store, tmp_path, tiny_bert_dir):
    assert run(capsys, "ingest", "medic", str(FIX / "medic/CTD_diseases.tsv"), "--ontology", "ctd",
               "--store", store, "-q")[0] == 0
    train = tmp_path / "train.concept"
    train.write_text("1||0|18||Disease||fictional syndrome||D900001\n"
                     "2||0|11||Disease||toe disease||D900002\n"
                     "3||0|4||Disease||fts2||999002\n")
    model = tmp_path / "model"
    code, _, err = run(capsys, "train", "biosyn", "--ontology", "ctd", "--out", str(model), "--train", str(train),
                       "--dev", str(train), "--encoder", str(tiny_bert_dir), "--epochs", "1", "--topk", "4",
                       "--store", store, "-q")
    assert code == 0, err
    mentions = tmp_path / "m.tsv"
    mentions.write_text("id\ttext\tdoc_id\ngx1\tFictional syndromes\td1\ngx2\ttoe syndrome, fictional, type 2\td1\n")
    out_tsv = tmp_path / "links.tsv"
    for _ in range(2):  # the same run twice leaves one copy
        code, _, err = run(capsys, "link", "--model", str(model), "--input", str(mentions), "--top-k", "3",
                           "--output", str(out_tsv), "--store", store, "-q")
        assert code == 0, err
    rows = list(csv.DictReader(out_tsv.open(), delimiter="\t"))
    assert list(rows[0]) == ["mention_id", "mention", "rank", "concept_uids", "score", "nil"]
    assert [r["rank"] for r in rows[:3]] == ["1", "2", "3"] and rows[0]["mention_id"] == "gx1"
    known = {"MESH:D900000", "MESH:D900001", "MESH:D900002", "OMIM:999002"}
    gx1 = [r["concept_uids"] for r in rows if r["mention_id"] == "gx1"]
    assert set(gx1) <= known and len(set(gx1)) == len(gx1) == 3  # concepts, not names, are ranked
    code, out, _ = run(capsys, "query", "MATCH (m:Mention)-[l:LINKED_TO]->(c:Concept) RETURN count(l) AS n",
                       "--format", "json", "--store", store)
    assert json.loads(out) == [{"n": 2}]
    code, out, _ = run(capsys, "eval", "link", "--model", str(model), "--input", str(train), "--train", str(train),
                       "--format", "json", "--store", store)
    report = json.loads(out)
    assert report["full"]["n"] == 3 and 0.0 <= report["full"]["acc1"] <= 1.0
    assert report["refined"]["n"] == 0  # every dev text occurs in train
    emb = tmp_path / "vecs"
    code, _, err = run(capsys, "embed", "--model", str(model), "--ontology", "ctd", "--output", str(emb),
                       "--store", store, "-q")
    assert code == 0, err
    import numpy as np
    vecs = np.load(f"{emb}.npy")
    assert vecs.shape[0] == len(Path(f"{emb}.tsv").read_text().splitlines()) - 1 and vecs.shape[1] == 32


def _run_and_link_counts(capsys, store: str) -> tuple[int, int]:
    code, out, _ = run(capsys, "query", "MATCH (r:Run) OPTIONAL MATCH (:Mention)-[l:LINKED_TO]->(:Concept) "
                       "RETURN count(DISTINCT r) AS runs, count(l) AS links", "--format", "json", "--store", store)
    assert code == 0
    row = json.loads(out)[0]
    return row["runs"], row["links"]


def test_linking_bad_input(capsys, store, tmp_path, tiny_bert_dir):
    assert run(capsys, "ingest", "medic", str(FIX / "medic/CTD_diseases.tsv"), "--ontology", "ctd",
               "--store", store, "-q")[0] == 0
    # unknown ontology: nothing written
    out = tmp_path / "nope-model"
    code, _, err = run(capsys, "train", "biosyn", "--ontology", "nope", "--out", str(out), "--encoder",
                       str(tiny_bert_dir), "--store", store, "-q")
    assert code != 0 and "nope" in err and not (out / "kgnorm-model.json").exists()
    # an encoder directory that is not a model
    not_model = tmp_path / "not-a-model"
    not_model.mkdir()
    code, _, err = run(capsys, "train", "biosyn", "--ontology", "ctd", "--out", str(tmp_path / "m2"), "--encoder",
                       str(not_model), "--store", store, "-q")
    assert code != 0 and "not-a-model" in err and not (tmp_path / "m2" / "kgnorm-model.json").exists()
    # an untrained model (dictionary + index) to link with
    model = tmp_path / "model"
    assert run(capsys, "train", "biosyn", "--ontology", "ctd", "--out", str(model), "--encoder",
               str(tiny_bert_dir), "--store", store, "-q")[0] == 0
    # a mention file in the wrong layout: file and line named, nothing written
    bad = tmp_path / "bad.concept"
    bad.write_text("1||0|18||Disease||fictional syndrome||D900001\n2||zero|11||toe disease\n")
    before = _run_and_link_counts(capsys, store)
    code, _, err = run(capsys, "link", "--model", str(model), "--input", str(bad), "--store", store, "-q")
    assert code != 0 and f"{bad}:2" in err and "Traceback" not in err
    assert _run_and_link_counts(capsys, store) == before
    # a model from another version of the ontology: it runs, and says so with both versions, even with -q
    meta_path = model / "kgnorm-model.json"
    meta = json.loads(meta_path.read_text())
    store_version = meta["ontology_version"]
    meta["ontology_version"] = "1999-01-01"
    meta_path.write_text(json.dumps(meta))
    ok = tmp_path / "ok.tsv"
    ok.write_text("id\ttext\nq1\tfictional syndrome\n")
    code, _, err = run(capsys, "link", "--model", str(model), "--input", str(ok), "--store", store, "-q")
    assert code == 0 and "'1999-01-01'" in err and repr(str(store_version)) in err


def test_biocom_corpus_train_and_link(capsys, store, tmp_path, tiny_bert_dir):
    assert run(capsys, "ingest", "medic", str(FIX / "medic/CTD_diseases.tsv"), "--store", store, "-q")[0] == 0
    text = tmp_path / "docs.txt"
    text.write_text("Patients with fictional syndromes were seen. Two had FTS2 and one made-up syndrome.\n"
                    "Made-up syndrome is rare. FTS2 runs in families. Fictional syndromes vary.\n"
                    "A fictional syndrome of the toe was reported. FTS2 was confirmed.\n")
    corpus = tmp_path / "corpus"
    code, _, err = run(capsys, "corpus", "build", "--ontology", "medic", "--text", str(text), "--out", str(corpus),
                       "--store", store)
    assert code == 0, err
    assert (corpus / "corpus.json").exists() and "rows for" in err and "through document abbreviations" in err
    code, _, err = run(capsys, "corpus", "build", "--ontology", "medic", "--text", str(text), "--out",
                       str(tmp_path / "c-noabbr"), "--no-abbreviations", "--store", store)
    assert code == 0 and json.loads((tmp_path / "c-noabbr" / "corpus.json").read_text())["abbreviations"] is False
    model = tmp_path / "biocom"
    code, _, err = run(capsys, "train", "biocom", "--ontology", "medic", "--corpus", str(corpus), "--out", str(model),
                       "--encoder", str(tiny_bert_dir), "--epochs", "1", "--max-steps", "2", "--store", store, "-q")
    assert code == 0, err
    mentions = tmp_path / "m.tsv"
    mentions.write_text("id\ttext\tcontext\nq1\tFTS2\tThe boy had FTS2 since birth.\n")
    code, out, err = run(capsys, "link", "--model", str(model), "--input", str(mentions), "--top-k", "2",
                         "--no-write", "--store", store)
    assert code == 0, err
    rows = [line.split("\t") for line in out.strip().splitlines()]
    assert rows[0][0] == "mention_id" and rows[1][0] == "q1"
    assert rows[1][3] in {"MESH:D900000", "MESH:D900001", "MESH:D900002", "OMIM:999002"}
    code, _, err = run(capsys, "corpus", "build", "--ontology", "nope", "--text", str(text), "--out",
                       str(tmp_path / "c2"), "--store", store)
    assert code == 1 and "unknown ontology" in err
    # --index-names all: the dictionary's names join the corpus sentences in the search index
    model2 = tmp_path / "biocom-names"
    code, _, err = run(capsys, "train", "biocom", "--ontology", "medic", "--corpus", str(corpus), "--out", str(model2),
                       "--encoder", str(tiny_bert_dir), "--epochs", "1", "--max-steps", "2", "--index-names", "all",
                       "--substitutions", "1", "--store", store, "-q")
    assert code == 0, err
    meta = json.loads((model2 / "kgnorm-model.json").read_text())
    assert meta["hyper_parameters"]["index_names"] == "all"
    assert meta["hyper_parameters"]["substitutions"] == 1
    import pyarrow.parquet as pq
    rows = pq.read_table(model2 / "corpus_rows.parquet").to_pydict()
    assert any(rows["pseudo"]) and not all(rows["pseudo"])
    code, _, err = run(capsys, "train", "biocom", "--ontology", "medic", "--corpus", str(corpus), "--out",
                       str(tmp_path / "bad"), "--encoder", str(tiny_bert_dir), "--index-names", "some", "--store", store)
    assert code == 1 and "index_names must be none, preferred or all" in err and not (tmp_path / "bad").exists()


def test_train_biosyn_defaults_presets_and_checkpoints(capsys, store, tmp_path, tiny_bert_dir):
    """No tuning flags: the benchmarked recipe (lambda 30, query name excluded, 45-min budget);
    --preset paper: BioSyn's (lambda 0, query name kept, no budget), as the trained models record
    them; finished models drop checkpoints/."""
    assert run(capsys, "ingest", "medic", str(FIX / "medic/CTD_diseases.tsv"), "--ontology", "ctd",
               "--store", store, "-q")[0] == 0
    common = ["--ontology", "ctd", "--encoder", str(tiny_bert_dir), "--store", store, "-q"]
    for preset, lam in ((None, 30.0), ("paper", 0.0)):
        out = tmp_path / f"untrained-{preset}"
        args = ["train", "biosyn", "--out", str(out), *common] + (["--preset", preset] if preset else [])
        assert run(capsys, *args)[0] == 0
        assert json.loads((out / "kgnorm-model.json").read_text())["sparse_weight"] == lam
    assert run(capsys, "train", "biosyn", "--out", str(tmp_path / "x"), "--preset", "fast", *common)[0] != 0
    train = tmp_path / "train.concept"
    train.write_text("1||0|18||Disease||fictional syndrome||D900001\n2||0|11||Disease||toe disease||D900002\n")
    # the recipe a trained model records is the one its training ran: the default excludes the
    # query's own name from the candidates and has a 45-minute budget; paper keeps it, no budget
    for keep, preset, recipe in ((False, None, (30.0, True, 45 * 60)), (True, None, (30.0, True, 45 * 60)),
                                 (False, "paper", (0.0, False, None))):
        out = tmp_path / f"trained-{keep}-{preset}"
        args = ["train", "biosyn", "--out", str(out), "--train", str(train), "--epochs", "1", "--topk", "3",
                *common] + (["--keep-checkpoints"] if keep else []) + (["--preset", preset] if preset else [])
        code, _, err = run(capsys, *args)
        assert code == 0, err
        assert (out / "checkpoints").exists() is keep
        assert (out / "kgnorm-model.json").is_file() and (out / "index").is_dir()
        hp = json.loads((out / "kgnorm-model.json").read_text())["hyper_parameters"]
        assert (hp["initial_sparse_weight"], hp["exclude_query_name"], hp["max_seconds"]) == recipe, hp


def test_link_reports_what_it_wrote_and_explains_edge_counts(capsys, store, tmp_path, tiny_bert_dir):
    from kgnorm.jobs.link import EdgeCounts
    from kgnorm.stores.base import LinkEdge

    def note(per_mention: list[list[LinkEdge]], kept: int) -> str:
        counts = EdgeCounts()
        for links in per_mention:
            counts.add(links)
        counts.kept = kept
        return counts.note(1)

    m1, m2, m3 = [LinkEdge("m1", "C1", 0.9, 1)], [LinkEdge("m2", "C2", 0.8, 1), LinkEdge("m2", "C3", 0.7, 1)], \
        [LinkEdge("m3", "C9", 0.5, 1)]
    text = note([m1, m2, m3, []], 3)
    assert "1 composite mention(s) got one edge per part" in text and "1 nil mention(s) got none" in text
    assert "1 to concepts not in the store skipped" in text
    assert note([m1, [LinkEdge("m2", "C2", 0.8, 1)]], 2) == ""

    assert run(capsys, "ingest", "medic", str(FIX / "medic/CTD_diseases.tsv"), "--ontology", "ctd",
               "--store", store, "-q")[0] == 0
    model = tmp_path / "model"
    assert run(capsys, "train", "biosyn", "--ontology", "ctd", "--out", str(model), "--encoder",
               str(tiny_bert_dir), "--store", store, "-q")[0] == 0
    mentions = tmp_path / "m.tsv"
    mentions.write_text("id\ttext\tdoc_id\ngx1\tFictional syndromes\td1\ngx2\ttoe disease\td1\n")
    out_tsv = tmp_path / "links.tsv"
    code, out, err = run(capsys, "link", "--model", str(model), "--input", str(mentions), "--top-k", "2",
                         "--no-write", "--output", str(out_tsv), "--store", store)
    assert code == 0, err
    assert f"wrote 2 mention(s) (up to 2 rank(s) each) to {out_tsv}" in err and out == ""
    assert len(out_tsv.read_text().splitlines()) == 1 + 4
