"""Issue 49, item 4 (routing): `annotate --model Disease=DIR --model Chemical=DIR` sends each found
mention to the linker of its type, and each is linked into its own ontology, in the outputs and
in the store (LadybugDB and Bolt), although the two ontologies share a uid. The router is one
registry entry (kgnorm.methods.router, a wrapper kind); `kgnorm train router` writes it as a
directory that annotates the same."""
from __future__ import annotations

import json
import sys
import textwrap

import pytest

from annotate_fixtures import write_jsonl
from cli_runner import run
from kgnorm.documents.readers import read_documents
from kgnorm.jobs.detectors import DetectorKind
from test_cli_journey import journey_store as store  # noqa: F401  (a fresh store of each kind)

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SHARED = "MESH:D003924"  # in both ontologies, as in MEDIC and MeSH

DISEASES = f"""format-version: 1.2
data-version: dis/2099-01-01
ontology: dis

[Term]
id: MESH:C
name: disease

[Term]
id: {SHARED}
name: type 2 diabetes
synonym: "NIDDM" EXACT []
is_a: MESH:C

[Term]
id: MESH:D009369
name: neoplasm
is_a: MESH:C
"""

CHEMICALS = f"""format-version: 1.2
data-version: chem/2099-01-01
ontology: chem

[Term]
id: MESH:D002241
name: carbohydrate

[Term]
id: MESH:D005947
name: glucose
is_a: MESH:D002241

[Term]
id: MESH:D008687
name: metformin

[Term]
id: {SHARED}
name: diabetes mellitus, type 2
"""

DOCS = [{"id": "p1", "title": "Metformin and glucose in type 2 diabetes.",
         "abstract": "Glucose fell with metformin; no neoplasm was seen."},
        {"id": "p2", "text": "Type 2 diabetes without metformin."}]

# a detector of two types: a word list per type (registered at run time, as a plugin would be)
TOY = '''
import re

from kgnorm.ner.spans import MentionDetector, Span

WORDS = {"Chemical": ("metformin", "glucose"), "Disease": ("type 2 diabetes", "neoplasm")}


class TwoTypes(MentionDetector):
    types = ("Chemical", "Disease")

    def detect(self, texts):
        out = []
        for t in texts:
            spans = [Span(m.start(), m.end(), m.group(), typ, 0.5 + (m.start() % 7) / 20) for typ, words in WORDS.items()
                     for m in re.finditer(r"\\b(?:" + "|".join(words) + r")\\b", t, re.IGNORECASE)]
            out.append(sorted(spans, key=lambda s: s.start))
        return out


def build(arg, ctx):
    return TwoTypes(), "twotypes"


def build_dir(arg, ctx):  # the same detector as a directory: what `kgnorm calibrate` stores its fits in
    return TwoTypes(), arg
'''

WANT = {"metformin": ("Chemical", "chem", "MESH:D008687"), "glucose": ("Chemical", "chem", "MESH:D005947"),
        "type 2 diabetes": ("Disease", "dis", SHARED), "neoplasm": ("Disease", "dis", "MESH:D009369")}


@pytest.fixture
def two_types(tmp_path, monkeypatch):
    from kgnorm.jobs import detectors

    pkg = tmp_path / "plugins" / "twotypes"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "det.py").write_text(textwrap.dedent(TOY))
    monkeypatch.syspath_prepend(str(tmp_path / "plugins"))
    monkeypatch.setattr(detectors, "DETECTORS", dict(detectors.DETECTORS))
    detectors.register(DetectorKind("twotypes", "twotypes.det:build", help="Chemicals and diseases from word lists."))
    detectors.register(DetectorKind("twotypesdir", "twotypes.det:build_dir", directory=True, help="The same, saved."))
    yield
    for mod in [m for m in sys.modules if m.startswith("twotypes")]:
        del sys.modules[mod]


def _models(capsys, tmp_path, store, tiny_bert_dir) -> dict[str, str]:
    """Both ontologies ingested, an (untrained) BioSyn linker over each."""
    out = {}
    for name, obo in (("dis", DISEASES), ("chem", CHEMICALS)):
        path = tmp_path / f"{name}.obo"
        path.write_text(obo, encoding="utf-8")
        code, _, err = run(capsys, "ingest", "obo", str(path), "--ontology", name, "--store", store, "-q")
        assert code == 0, err
        out[name] = str(tmp_path / f"biosyn-{name}")
        code, _, err = run(capsys, "train", "biosyn", "--ontology", name, "--out", out[name], "--encoder",
                           str(tiny_bert_dir), "--store", store, "-q")
        assert code == 0, err
    return out


def _annotate(capsys, store, models: list[str], src, out, fmt: str, *extra: str) -> str:
    args = [a for m in models for a in ("--model", m)]
    code, _, err = run(capsys, "annotate", "--ner", "twotypes", *args, "--input", str(src), "--input-format", "jsonl",
                       "--output", str(out), "--output-format", fmt, "--store", store, "--no-consistency", *extra)
    assert code == 0, err
    return err


def test_annotate_routes_each_type_to_its_own_linker(two_types, capsys, tmp_path, store, tiny_bert_dir):
    models = _models(capsys, tmp_path, store, tiny_bert_dir)
    src = write_jsonl(tmp_path / "docs.jsonl", DOCS)
    routes = [f"Disease={models['dis']}", f"Chemical={models['chem']}"]
    _annotate(capsys, store, routes, src, tmp_path / "out.jsonl", "jsonl")
    found = [(m["text"].lower(), m["type"], m.get("ontology"), tuple(m["ids"]))
             for line in (tmp_path / "out.jsonl").read_text().splitlines() for m in json.loads(line)["mentions"]]
    assert len(found) == 8
    assert all((typ, onto, ids) == (*WANT[text][:2], (WANT[text][2],)) for text, typ, onto, ids in found), found
    # the store: each mention's type, and its link on its own ontology's node (MESH:D003924 is in both)
    code, out, err = run(capsys, "query", "MATCH (m:Mention)-[l:LINKED_TO]->(c:Concept) RETURN m.text AS t, "
                         "m.type AS type, c.ontology AS o, c.uid AS u", "--format", "json", "--store", store)
    assert code == 0, err
    rows = sorted((r["t"].lower(), r["type"], r["o"], r["u"]) for r in json.loads(out))
    assert rows == sorted((text, *WANT[text]) for text, *_ in found)
    # PubTator and BioC carry the types; BioC the ontology too; the same run again replaces itself
    _annotate(capsys, store, routes, src, tmp_path / "out.pubtator", "pubtator", "-q")
    _annotate(capsys, store, routes, src, tmp_path / "out.bioc", "bioc", "-q")
    for fmt in ("pubtator", "bioc"):
        docs = read_documents(tmp_path / f"out.{fmt}", fmt)
        assert sorted((a.text.lower(), a.type, a.ids) for d in docs for a in d.annotations) == sorted(
            (t, typ, ids) for t, typ, _, ids in found)
    bioc = (tmp_path / "out.bioc").read_text()
    for onto in ("chem", "dis"):
        assert bioc.count(f'<infon key="ontology">{onto}</infon>') == sum(o == onto for _, _, o, _ in found)
    # eval annotate: overall and per type (gold here: the output without p2's metformin)
    lines = (tmp_path / "out.pubtator").read_text().splitlines(keepends=True)
    gold = tmp_path / "gold.pubtator"
    gold.write_text("".join(x for x in lines if not (x.startswith("p2\t") and "\tChemical\t" in x)))
    code, out, err = run(capsys, "eval", "annotate", "--gold", str(gold), "--predictions", str(tmp_path / "out.pubtator"),
                         "--ontology", "dis,chem", "--format", "json", "--store", store)
    assert code == 0, err
    report = json.loads(out)
    counts = {t: {k: (s[k]["tp"], s[k]["predicted"], s[k]["gold"]) for k in ("ner", "mention", "document")}
              for t, s in [("all", report), *report["by_type"].items()]}
    assert counts == {"all": {"ner": (7, 8, 7), "mention": (7, 8, 7), "document": (5, 6, 5)},
                      "Chemical": {"ner": (4, 5, 4), "mention": (4, 5, 4), "document": (2, 3, 2)},
                      "Disease": {"ner": (3, 3, 3), "mention": (3, 3, 3), "document": (3, 3, 3)}}
    code, out, _ = run(capsys, "eval", "annotate", "--gold", str(gold), "--predictions", str(tmp_path / "out.pubtator"),
                       "--ontology", "dis,chem", "--store", store)
    assert "mention Chemical" in out and "document Disease" in out
    code, out, _ = run(capsys, "query", "MATCH (r:Run) RETURN r.method AS m, r.model_path AS p", "--format", "json",
                       "--store", store)
    assert [r["m"] for r in json.loads(out)] == ["router"] and json.loads(out)[0]["p"].startswith("router:Chemical=")


def test_a_router_directory_and_a_default_route(two_types, capsys, tmp_path, store, tiny_bert_dir):
    models = _models(capsys, tmp_path, store, tiny_bert_dir)
    src = write_jsonl(tmp_path / "docs.jsonl", DOCS)
    router = tmp_path / "router"
    code, _, err = run(capsys, "train", "router", "--route", f"Disease={models['dis']}", "--route",
                       f"chemical={models['chem']}", "--out", str(router))
    assert code == 0, err
    assert "router → " in err and "chemical: chem" in err
    meta = json.loads((router / "kgnorm-model.json").read_text())
    assert meta["method"] == "router" and meta["ontologies"] == {"Disease": "dis", "chemical": "chem"}
    _annotate(capsys, store, [str(router)], src, tmp_path / "dir.jsonl", "jsonl", "--no-write")
    _annotate(capsys, store, [f"Disease={models['dis']}", f"Chemical={models['chem']}"], src,
              tmp_path / "flags.jsonl", "jsonl", "--no-write")
    assert (tmp_path / "dir.jsonl").read_text() == (tmp_path / "flags.jsonl").read_text()
    # eval link routes gold mentions by their type too (the store holds both ontologies' ids)
    gold = tmp_path / "gold.concept"
    gold.write_text("p1||14|21||Chemical||glucose||MESH:D005947\np1||25|40||Disease||type 2 diabetes||MESH:D003924\n"
                    "p2||0|15||Disease||Type 2 diabetes||MESH:D003924\np2||24|33||Chemical||metformin||MESH:D008687\n")
    code, out, err = run(capsys, "eval", "link", "--model", str(router), "--gold", str(gold), "--format", "json",
                         "--store", store)
    assert code == 0, err
    assert json.loads(out)["full"]["acc1"] == 1.0 and json.loads(out)["full"]["n"] == 4
    # a plain DIR beside TYPE=DIR links the types no route names; a type with no route at all stays unlinked
    _annotate(capsys, store, [f"Chemical={models['chem']}", models["dis"]], src, tmp_path / "default.jsonl", "jsonl",
              "--no-write")
    assert (tmp_path / "default.jsonl").read_text() == (tmp_path / "flags.jsonl").read_text()
    err = _annotate(capsys, store, [f"Chemical={models['chem']}"], src, tmp_path / "chem.jsonl", "jsonl", "--no-write")
    assert "3 mention(s) of type Disease: no linker for that type (not linked)" in err
    mentions = [m for line in (tmp_path / "chem.jsonl").read_text().splitlines() for m in json.loads(line)["mentions"]]
    assert {m["type"]: bool(m["ids"]) for m in mentions} == {"Chemical": True, "Disease": False}
    # bad routes: one line each
    for bad, message in (([f"Chemical={tmp_path}"], "not a model directory"),
                         ([f"Chemical={models['chem']}", f"chemical={models['dis']}"], "type chemical is given twice")):
        code, _, err = run(capsys, "annotate", "--ner", "twotypes", *[a for m in bad for a in ("--model", m)],
                           "--input", str(src), "--input-format", "jsonl", "--store", store, "--no-write")
        assert code != 0 and message in err, err


def _dev(path) -> None:
    """Dev documents with gold: every document names both types; in half of them a mention's gold
    concept is another than the one its name says (so each type has right and wrong links)."""
    blocks = []
    for i in range(12):
        title, abstract = f"Case {i}.", "Glucose rose under metformin in type 2 diabetes; a neoplasm was found."
        text = f"{title} {abstract}"
        odd = i % 2
        gold = {"Glucose": ("Chemical", "MESH:D002241" if odd else "MESH:D005947"),
                "metformin": ("Chemical", "MESH:D008687"), "type 2 diabetes": ("Disease", SHARED),
                "neoplasm": ("Disease", "MESH:C" if odd else "MESH:D009369")}
        lines = [f"d{i}|t|{title}", f"d{i}|a|{abstract}"]
        for word, (typ, uid) in gold.items():
            start = text.index(word)
            lines.append(f"d{i}\t{start}\t{start + len(word)}\t{word}\t{typ}\t{uid}")
        blocks.append("\n".join(lines) + "\n")
    path.write_text("\n".join(blocks) + "\n", encoding="utf-8")


def test_mention_confidence_is_fitted_and_applied_per_type(two_types, capsys, tmp_path, tiny_bert_dir):
    from kgnorm.jobs.annotate import annotate_documents
    from kgnorm.methods.router.linker import routes_from_options
    from kgnorm.nil.confidence import MentionConfidence

    store = f"ladybug://{tmp_path}/graph"  # the store plays no part in the fit: one kind is enough
    models = _models(capsys, tmp_path, store, tiny_bert_dir)
    detector = tmp_path / "detector"
    detector.mkdir()
    (detector / "kgnorm-model.json").write_text(json.dumps({"method": "twotypesdir"}))
    dev = tmp_path / "dev.pubtator"
    _dev(dev)
    routes = ["--model", f"Disease={models['dis']}", "--model", f"Chemical={models['chem']}"]
    code, _, err = run(capsys, "calibrate", "--ner", str(detector), *routes, "--dev", str(dev), "--store", store)
    assert code == 0, err
    assert "mention confidence (disease) fitted on 12 dev document(s), 24 found" in err and "threshold (chemical)" in err
    entries = {e["type"]: e for e in json.loads((detector / "kgnorm-model.json").read_text())["mention_confidence"]}
    created = {n: json.loads((tmp_path / f"biosyn-{n}" / "kgnorm-model.json").read_text())["created_at"]
               for n in ("dis", "chem")}
    assert {t: e["linker"]["created_at"] for t, e in entries.items()} == {"disease": created["dis"],
                                                                         "chemical": created["chem"]}
    fits = {t: MentionConfidence.from_meta(e) for t, e in entries.items()}
    # annotate applies each type's own fit (the routes given as flags find what calibrate stored)
    report = annotate_documents(str(detector), routes_from_options([r for r in routes if r != "--model"]), dev,
                                input_format="pubtator", output=None, write=False, collect=True, progress=False,
                                store=store, min_confidence="off")
    assert report.rows and {r["type"] for r in report.rows} == {"Chemical", "Disease"}
    for r in report.rows:
        assert r["confidence"] == pytest.approx(fits[r["type"].lower()].probability(r["features"]))
    kept = annotate_documents(str(detector), routes_from_options([r for r in routes if r != "--model"]), dev,
                              input_format="pubtator", output=None, write=False, collect=True, progress=False,
                              store=store)
    assert all(r["confidence"] >= fits[r["type"].lower()].threshold for r in kept.rows)
    assert len(kept.rows) == sum(r["confidence"] >= fits[r["type"].lower()].threshold for r in report.rows)
    # one linker alone has no fit of its own: annotate says so and keeps every mention
    alone = annotate_documents(str(detector), models["chem"], dev, input_format="pubtator", output=None, write=False,
                               collect=True, progress=False, store=store)
    assert all(r["confidence"] is None for r in alone.rows) and any("none fitted" in n for n in alone.notes)


def test_serve_colours_filters_and_offers_candidates_by_type(two_types, capsys, tmp_path, tiny_bert_dir):
    from starlette.testclient import TestClient

    from kgnorm.methods.router.linker import routes_from_options
    from kgnorm.review.desk import ReviewDesk
    from kgnorm.serve import create_app

    store = f"ladybug://{tmp_path}/graph"  # serve's reads on both stores: test_serve_http
    models = _models(capsys, tmp_path, store, tiny_bert_dir)
    routes = [f"Disease={models['dis']}", f"Chemical={models['chem']}"]
    _annotate(capsys, store, routes, write_jsonl(tmp_path / "docs.jsonl", DOCS), tmp_path / "o.jsonl", "jsonl", "-q")
    desk = ReviewDesk(store, model=routes_from_options(routes))
    try:
        client = TestClient(create_app(desk, "token-0123456789abcdef"))
        page = client.get("/documents/p1").text
        assert 'data-type-class="t0"> <mark class="t0">Disease</mark> 2' in page  # a colour per type, a filter each
        assert 'data-type-class="t1"> <mark class="t1">Chemical</mark> 4' in page
        mentions = {(m["text"].lower(), m["type"]): m["uid"] for m in client.get("/api/documents/p1").json()["mentions"]}
        for (text, typ), uid in mentions.items():
            m = client.get(f"/api/mentions/{uid}").json()
            onto = WANT[text][1]
            # the model's candidates come from the mention's type's linker: its own ontology
            assert m["ontology"] == onto and m["candidates_from"] == "model" and m["candidates"]
            assert {c["ontology"] for c in m["candidates"]} == {onto}, (text, m["candidates"])
        # MESH:D003924 is in both: the disease mention's details are the disease ontology's concept
        dm = client.get(f"/api/mentions/{mentions[('type 2 diabetes', 'Disease')]}").json()
        assert dm["candidates"][0]["uid"] == SHARED and dm["candidates"][0]["parents"] == [
            {"uid": "MESH:C", "name": "disease"}]
        # the document names each mention's concept in its own ontology, a review's choice included
        view = {m["uid"]: m for m in client.get("/api/documents/p1").json()["mentions"]}
        dis_uid = mentions[("type 2 diabetes", "Disease")]
        assert (view[dis_uid]["ontology"], view[dis_uid]["concept_name"]) == ("dis", "type 2 diabetes")
        assert all(m["ontology"] == WANT[m["text"].lower()][1] for m in view.values())
        r = client.post(f"/api/mentions/{dis_uid}/review", json={"decision": "concept", "concept": SHARED,
                                                                  "ontology": "chem", "reviewer": "t"},
                        headers={"X-Kgnorm-Token": "token-0123456789abcdef"})
        assert r.status_code == 200 and r.json()["ontology"] == "chem", r.text
        view = {m["uid"]: m for m in client.get("/api/documents/p1").json()["mentions"]}
        assert (view[dis_uid]["ontology"], view[dis_uid]["concept_name"]) == ("chem", "diabetes mellitus, type 2")
        # the search box offers the mention's ontology's concepts (all of them without one)
        hits = client.get("/api/concepts", params={"q": "type 2"}).json()["concepts"]
        assert sorted(h["ontology"] for h in hits) == ["chem", "dis"]
        hits = client.get("/api/concepts", params={"q": SHARED, "ontology": "chem"}).json()["concepts"]
        assert [(h["uid"], h["ontology"]) for h in hits] == [(SHARED, "chem")]
    finally:
        desk.close()


def test_the_dictionary_refinement_matches_each_type_over_its_own_ontology(capsys, tmp_path):
    """A trained detector's `dictionary` refinement (kgnorm.ner.refine) under a router: each of its types
    matched over its route's ontology, one tagger of non-overlapping spans."""
    from types import SimpleNamespace

    from kgnorm.jobs.detectors import TypedTaggers, dictionary_tagger_for
    from kgnorm.ner.refine import SpanRefinements

    store = f"ladybug://{tmp_path}/graph"
    for name, obo in (("dis", DISEASES), ("chem", CHEMICALS)):
        (tmp_path / f"{name}.obo").write_text(obo, encoding="utf-8")
        code, _, err = run(capsys, "ingest", "obo", str(tmp_path / f"{name}.obo"), "--ontology", name, "--store",
                           store, "-q")
        assert code == 0, err
    detector = SimpleNamespace(refinements=SpanRefinements(dictionary=True), types=("Chemical", "Disease"))
    text = "Glucose and metformin in type 2 diabetes with a neoplasm; diabetes mellitus, type 2 diabetes."
    for routes in ({"Disease": "dis", "Chemical": "chem"}, {"*": "dis", "chemical": "chem"}):
        notes: list[str] = []
        _, tagger = dictionary_tagger_for(detector, store, routes, notes)
        assert isinstance(tagger, TypedTaggers) and not notes
        assert [(s.text, s.type) for s in tagger.detect([text])[0]] == [
            ("Glucose", "Chemical"), ("metformin", "Chemical"), ("type 2 diabetes", "Disease"),
            ("neoplasm", "Disease"), ("diabetes mellitus, type 2", "Chemical")]  # the overlapping disease match goes
    _, one = dictionary_tagger_for(detector, store, "dis", notes)  # one ontology: the first type, as before
    assert not isinstance(one, TypedTaggers) and one.types == ("Chemical",)


def test_the_router_sends_each_query_and_its_prefetch_to_its_types_linker():
    from kgnorm.linking.candidates import Hit
    from kgnorm.linking.linker import link_stream
    from kgnorm.mentions.types import Mention
    from kgnorm.methods.router.linker import RouterLinker
    from kgnorm.text.pipeline import TextPipeline

    class Toy:  # answers every query with its own name, and records what it was asked and told ahead
        def __init__(self, name):
            self.method, self.name, self.asked, self.ahead = "toy", name, [], []

        def link_parts(self, queries, mentions, whole, top_k):
            self.asked += queries
            return [[Hit(f"{self.name}:{q}", q, 1.0, self.name)] for q in queries]

        def prefetch(self, queries, top_k):
            self.ahead += queries

    chem, dis = Toy("chem"), Toy("dis")
    router = RouterLinker({"Chemical": chem, "disease": dis})
    items = [(Mention(text=t, type=typ, id=str(i)), {}) for i, (t, typ) in enumerate(
        [("glucose", "Chemical"), ("diabetes", "Disease"), ("BRCA1", "Gene"), ("insulin", "chemical")])]
    linked = list(link_stream(router, TextPipeline(), items, top_k=1))
    assert [[h.ontology for h in p[0:1]] for lm in linked for p in lm.parts] == [["chem"], ["dis"], [], ["chem"]]
    assert (chem.asked, dis.asked, chem.ahead, dis.ahead) == (
        ["glucose", "insulin"], ["diabetes"], ["glucose", "insulin"], ["diabetes"])
    assert router.unrouted == {"Gene": 1}
