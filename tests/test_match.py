"""`kgnorm match`, `place`, `eval match`, `eval place` (issue 42) on two small disease ontologies and
an untrained BioSyn over the target (tiny random BERT), on the embedded store and over Bolt: the
SSSOM file round-trips, MAPS_TO edges are one idempotent Run that a failed write leaves out, the
saved query lists a concept's mappings both ways, and a bad SSSOM file is one line naming its line."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from cli_runner import run
from test_cli_journey import journey_store  # noqa: F401  (the fixture: ladybug and bolt)

SRC = """format-version: 1.2
ontology: srcd

[Term]
id: SRCD:0
name: disease

[Term]
id: SRCD:1
name: breast cancer
synonym: "breast carcinoma" EXACT []
xref: TGTD:1
is_a: SRCD:0

[Term]
id: SRCD:2
name: ovarian cancer
is_a: SRCD:0

[Term]
id: SRCD:3
name: lung small cell carcinoma
is_a: SRCD:0

[Term]
id: SRCD:4
name: inflammatory breast cancer
is_a: SRCD:1

[Term]
id: SRCD:5
name: retired thing
is_obsolete: true
"""

TGT = """format-version: 1.2
ontology: tgtd

[Term]
id: TGTD:0
name: Diseases

[Term]
id: TGTD:1
name: Breast Neoplasms
synonym: "breast tumor" EXACT []
is_a: TGTD:0

[Term]
id: TGTD:2
name: Ovarian Cancer
is_a: TGTD:0

[Term]
id: TGTD:3
name: Small Cell Lung Carcinoma
is_a: TGTD:0

[Term]
id: TGTD:4
name: Colorectal Neoplasms
is_a: TGTD:0
"""


def _setup(tmp: Path, capsys, store: str, tiny_bert_dir: Path) -> Path:
    for name, body in (("srcd", SRC), ("tgtd", TGT)):
        (tmp / f"{name}.obo").write_text(body, encoding="utf-8")
        code, _, err = run(capsys, "ingest", "obo", str(tmp / f"{name}.obo"), "--ontology", name, "--store", store, "-q")
        assert code == 0, err
    model = tmp / "biosyn"
    code, _, err = run(capsys, "train", "biosyn", "--ontology", "tgtd", "--out", str(model), "--encoder",
                       str(tiny_bert_dir), "--store", store, "-q")
    assert code == 0, err
    return model


def _maps(capsys, store: str) -> list[dict]:
    code, out, err = run(capsys, "query", "MATCH (a:Concept)-[m:MAPS_TO]->(b:Concept) RETURN a.uid AS s, b.uid AS t, "
                         "m.predicate AS p, m.justification AS j, m.run AS run ORDER BY s, t",
                         "--format", "json", "--store", store)
    assert code == 0, err
    return json.loads(out)


def test_match_writes_sssom_and_one_run_on_both_stores(capsys, tmp_path, journey_store, tiny_bert_dir):  # noqa: F811
    from kgnorm.matching.sssom import CURATED, EXACT, LEXICAL, read_sssom

    store = journey_store
    model = _setup(tmp_path, capsys, store, tiny_bert_dir)
    out = tmp_path / "m.sssom.tsv"
    args = ["match", "--source", "srcd", "--target", "tgtd", "--model", str(model), "--output", str(out),
            "--threshold", "1.0", "--store", store, "-q"]
    code, _, err = run(capsys, *args)
    assert code == 0, err
    mset = read_sssom(out)
    got = {(m.subject_id, m.object_id): m for m in mset.mappings}
    assert got[("SRCD:1", "TGTD:1")].mapping_justification == CURATED        # the xref
    assert got[("SRCD:2", "TGTD:2")].mapping_justification == LEXICAL        # same name, other case
    assert got[("SRCD:3", "TGTD:3")].predicate_id == EXACT                   # the same words reordered
    assert got[("SRCD:4", "TGTD:1")].predicate_id == "skos:broadMatch"       # through its parent's xref
    assert not any(m.subject_id == "SRCD:5" for m in mset.mappings)          # obsolete: not matched
    assert {"SRCD", "TGTD", "skos", "semapv"} <= set(mset.metadata["curie_map"])
    assert "model" in mset.metadata["mapping_tool_version"] and mset.metadata["license"]
    edges = _maps(capsys, store)
    assert {(e["s"], e["t"]) for e in edges} == set(got) and len({e["run"] for e in edges}) == 1
    code, _, err = run(capsys, *args)  # the same match again replaces its run
    assert code == 0, err
    assert _maps(capsys, store) == edges
    # a new version of either ontology keeps the mappings whose two ends it keeps
    (tmp_path / "tgtd2.obo").write_text(TGT.replace("name: Colorectal Neoplasms", "name: Colorectal Tumors"),
                                        encoding="utf-8")
    code, _, err = run(capsys, "ingest", "obo", str(tmp_path / "tgtd2.obo"), "--ontology", "tgtd", "--store", store, "-q")
    assert code == 0, err
    assert _maps(capsys, store) == edges
    code, txt, err = run(capsys, "query", "--saved", "concept_mappings", "--param", "uid=TGTD:1", "--format", "json",
                         "--store", store)
    assert code == 0, err
    both = json.loads(txt)
    assert {(r["direction"], r["other_uid"]) for r in both} == {("in", "SRCD:1"), ("in", "SRCD:4")}
    code, txt, err = run(capsys, "query", "--saved", "concept_mappings", "--param", "uid=SRCD:1", "--format", "json",
                         "--store", store)
    assert code == 0 and [r["direction"] for r in json.loads(txt)] == ["out"], err
    # a write that fails (a concept missing) changes nothing
    from kgnorm.jobs.match import match_ontologies, write_mappings
    from kgnorm.matching.matcher import Decision
    from kgnorm.errors import KgnormError

    result = match_ontologies("srcd", "tgtd", model, xrefs="ignore", store=store)
    result.decisions.append(Decision("SRCD:2", "TGTD:404", EXACT, 0.5, LEXICAL))
    with pytest.raises(KgnormError, match="store unchanged"):
        write_mappings(result, store)
    assert _maps(capsys, store) == edges


def test_blind_match_place_api_and_evals(capsys, tmp_path, tiny_bert_dir):
    from kgnorm.api import Workbench
    from kgnorm.matching.sssom import EXACT, Mapping, MappingSet, write_sssom

    store = f"ladybug://{tmp_path}/graph"
    model = _setup(tmp_path, capsys, store, tiny_bert_dir)
    wb = Workbench(store)
    frame = wb.match("srcd", "tgtd", model, xrefs="ignore", threshold=1.0, write=False,
                     output=tmp_path / "blind.sssom.tsv")
    exact = set(zip(frame[frame.predicate_id == EXACT].subject_id, frame[frame.predicate_id == EXACT].object_id))
    assert exact == {("SRCD:0", "TGTD:0"), ("SRCD:2", "TGTD:2"), ("SRCD:3", "TGTD:3")}  # blind: no breast cancer
    gold = tmp_path / "gold.sssom.tsv"
    with open(gold, "w", encoding="utf-8") as fh:
        write_sssom(MappingSet([Mapping(s, EXACT, t, "semapv:ManualMappingCuration")
                                for s, t in [("SRCD:1", "TGTD:1"), ("SRCD:2", "TGTD:2"), ("SRCD:3", "TGTD:3")]]), fh)
    code, out, err = run(capsys, "eval", "match", "--gold", str(gold), "--predictions", str(tmp_path / "blind.sssom.tsv"),
                         "--format", "json")
    assert code == 0, err
    row = next(r for r in json.loads(out) if r["predicate"] == EXACT)
    assert (row["correct"], row["predicted"], row["gold"]) == (2, 2, 3) and row["precision"] == 1.0
    placed = wb.place("srcd", "tgtd", model, top_k=3, unmatched_only=True, write=True)
    assert set(placed.source_uid) == {"SRCD:4"} and list(placed["rank"]) == [1, 2, 3]  # the rest have equivalents
    edges = wb.query("MATCH (s:Concept)-[p:PREDICTED_IS_A]->(t:Concept) RETURN s.uid AS s, t.ontology AS o")
    assert len(edges) == placed.source_uid.nunique() and set(edges.o) == {"tgtd"}
    tsv = tmp_path / "place.tsv"
    code, _, err = run(capsys, "place", "--source", "srcd", "--target", "tgtd", "--model", str(model), "--top-k", "5",
                       "--no-write", "--output", str(tsv), "--store", store, "-q")
    assert code == 0, err
    first = {r["source_uid"]: r["target_uid"] for r in csv.DictReader(tsv.open(), delimiter="\t") if r["rank"] == "1"}
    truth = tmp_path / "parents.sssom.tsv"
    with open(truth, "w", encoding="utf-8") as fh:
        write_sssom(MappingSet([Mapping("SRCD:4", "skos:broadMatch", first["SRCD:4"], "semapv:ManualMappingCuration"),
                                Mapping("SRCD:2", "skos:broadMatch", "TGTD:404", "semapv:ManualMappingCuration")]), fh)
    code, out, err = run(capsys, "eval", "place", "--gold", str(truth), "--predictions", str(tsv), "--format", "json")
    assert code == 0, err
    assert json.loads(out)[0]["mrr"] == pytest.approx(0.5) and json.loads(out)[0]["unranked"] == 1


@pytest.mark.parametrize("body, line, says", [
    ("#curie_map:\n#  A: http://a/\nsubject_id\tpredicate_id\tobject_id\n", 3, "mapping_justification"),
    ("subject_id\tpredicate_id\tobject_id\tmapping_justification\tconfidence\nA:1\tskos:exactMatch\tB:1\t"
     "semapv:LexicalMatching\t1.5\n", 2, "outside [0, 1]"),
    ("subject_id\tpredicate_id\tobject_id\tmapping_justification\nA:1\tskos:exactMatch\tB 1\tsemapv:LexicalMatching\n",
     2, "not a CURIE"),
    ("#curie_map: [unclosed\nsubject_id\tpredicate_id\tobject_id\tmapping_justification\n", 1, "bad metadata"),
    ("#curie_map:\n#  A: http://a/\nsubject_id\tpredicate_id\tobject_id\tmapping_justification\n"
     "A:1\tskos:exactMatch\tB:1\tsemapv:LexicalMatching\n", 4, "not in the curie_map"),
])
def test_bad_sssom_is_one_line_naming_file_and_line(capsys, tmp_path, body, line, says):
    bad = tmp_path / "bad.sssom.tsv"
    bad.write_text(body, encoding="utf-8")
    code, out, err = run(capsys, "eval", "match", "--gold", str(bad), "--predictions", str(bad))
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert f"{bad}:{line}: " in err and says in err


def test_sssom_round_trip_keeps_every_field(tmp_path):
    from kgnorm.matching.sssom import Mapping, MappingSet, read_sssom, write_sssom

    rows = [Mapping("DOID:1612", "skos:exactMatch", "MESH:D001943", "semapv:SemanticSimilarityThresholdMatching",
                    0.8731, "breast cancer", "Breast Neoplasms", comment="tab\u00a0free, ünïcode"),
            Mapping("DOID:2", "skos:broadMatch", "OMIM:100", "semapv:StructuralMatching", None)]
    path = tmp_path / "r.sssom.tsv"
    with open(path, "w", encoding="utf-8") as fh:
        write_sssom(MappingSet(rows, {"mapping_tool": "kgnorm match", "mapping_tool_version": "kgnorm 0.1.0"}), fh)
    back = read_sssom(path)
    assert back.mappings == rows
    assert back.metadata["curie_map"]["MESH"] == "http://id.nlm.nih.gov/mesh/"
    assert back.metadata["mapping_tool_version"] == "kgnorm 0.1.0"


def test_calibration_and_scores_by_hand():
    from kgnorm.matching.matcher import Calibration, MatchSide, decide
    from kgnorm.matching.scores import score_placement

    src = MatchSide("s", {"S:1": "a"}, {"S:1": ["a"]})
    tgt = MatchSide("t", {"T:1": "b", "T:2": "c"}, {"T:1": ["b"], "T:2": ["c"]})
    cands = {"S:1": [("T:1", 0.9), ("T:2", 0.5)]}
    cal = Calibration(threshold=0.8, slope=10.0, center=0.8)
    [d] = decide(src, tgt, cands, cal)
    assert (d.target_uid, d.confidence) == ("T:1", pytest.approx(1 / (1 + 2.718281828 ** -1.0), abs=1e-4))
    assert decide(src, tgt, cands, Calibration(threshold=0.95)) == []
    s = score_placement({"q1": ["x", "y"], "q2": ["y", "z", "w"]}, {"q1": {"y"}, "q2": {"y"}, "q3": {"v"}})
    assert (s.mrr, s.hits_at_1, s.unranked) == (pytest.approx(0.5), pytest.approx(1 / 3), 1)


def test_match_encoder_takes_the_models_stored_name_vectors(capsys, tmp_path, tiny_bert_dir, monkeypatch):
    """A name the model's dictionary holds (after the model's own text normalization) takes its stored
    vector: a target that is the model's ontology is not encoded again; the vectors are the ones
    encoding gives (KGNORM_NAME_VECTORS=encode)."""
    import numpy as np

    import kgnorm.methods.registry as registry
    from kgnorm.jobs.ontology_pair import model_encoder

    model = _setup(tmp_path, capsys, f"ladybug://{tmp_path}/graph", tiny_bert_dir)
    encoded: list[str] = []
    real = registry.load_encoder

    def counting(model_dir):
        encoder = real(model_dir)
        inner = encoder.encode

        def encode(names, *a, **kw):
            encoded.extend(names)
            return inner(names, *a, **kw)
        encoder.encode = encode
        return encoder

    monkeypatch.setattr(registry, "load_encoder", counting)
    names = ["Breast Neoplasms", "breast  neoplasms,", "Small Cell Lung Carcinoma", "a name nobody has"]
    stored = model_encoder(model)[0](names)
    assert encoded == ["a name nobody has"]          # the target's names came from the model's index
    np.testing.assert_array_equal(stored[0], stored[1])  # normalized as the linker normalizes
    monkeypatch.setenv("KGNORM_NAME_VECTORS", "encode")
    monkeypatch.setenv("KGNORM_MATCH_CACHE", "0")
    encoded.clear()
    again = model_encoder(model)[0](names)
    assert len(encoded) == 3                          # every distinct normalized name encoded
    np.testing.assert_allclose(again, stored, rtol=1e-4, atol=1e-5)


def test_calibration_leaves_out_terms_the_lexical_rules_map():
    """`--threshold auto` fits on the xref'd terms the cosine would decide: a term with a lexical match
    (whose top cosine is often a wrong, equally named sibling) does not move the threshold; too few
    terms left: the dev defaults."""
    from kgnorm.matching.matcher import DEFAULT_THRESHOLD, MatchSide, calibrate, lexically_mapped

    cands, ref = {}, set()
    for i in range(30):   # cosine decides these: right above 0.8, wrong below
        score = round(0.70 + i * 0.01, 2)
        cands[f"S:{i}"] = [(f"T:{i}" if i >= 10 else "T:x", score)]
        ref.add((f"S:{i}", f"T:{i}"))
    lexical = {f"L:{i}" for i in range(30)}
    for s in lexical:     # equal names: mapped lexically, their top cosine a wrong sibling at 0.99
        cands[s] = [("T:sibling", 0.99)]
        ref.add((s, "T:" + s))
    fitted = calibrate(cands, ref, lexical=lexical)
    assert fitted.threshold == pytest.approx(0.80) and fitted.fitted_on == "30 shared xref(s)"
    assert calibrate(cands, ref).threshold != pytest.approx(0.80)  # the wrong siblings at 0.99 would decide it
    few = {s: c for s, c in cands.items() if s.startswith("L:") or s in ("S:1", "S:25")}
    assert calibrate(few, ref, lexical=lexical).threshold == DEFAULT_THRESHOLD
    src = MatchSide("s", {"S:1": "breast cancer", "S:2": "tumour of lung"},
                    {"S:1": ["breast cancer"], "S:2": ["tumour of lung"]})
    tgt = MatchSide("t", {"T:1": "Breast Cancer", "T:2": "Lung Neoplasms"},
                    {"T:1": ["Breast Cancer"], "T:2": ["Lung Neoplasms"]})
    assert lexically_mapped(src, tgt, {"S:1": [("T:1", 1.0)], "S:2": [("T:2", 0.8)]}) == {"S:1"}
