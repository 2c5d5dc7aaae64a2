"""`kgnorm train ensemble`: a directory that references linker directories and fuses their rankings
(reciprocal rank or normalized score), one concept per rank. Fusion checked by hand; `link` and
`eval link` agree on it; the query cache and the batch never change its output; members of
different ontologies are refused in one line; nil decisions see the fused scores."""
from __future__ import annotations

import csv
import io
import json
import math
import random
import shutil
from types import SimpleNamespace

import pytest

from cli_runner import ctd_mentions, exit_code, link_then_eval, run
from kgnorm.linking.candidates import Hit
from kgnorm.methods.ensemble.fusion import fuse
from test_rerank import DEV as RERANK_DEV, TRAIN  # the reranker's mentions of the CTD fixture

DEV = RERANK_DEV + ("9||0|12||Disease||invented toe||D900002\n"
                   "9||13|30||Disease||syndrome fts2 toe||999002\n")
QUERIES = ["fictional syndromes", "toe pain", "toe syndrome fictional", "invented toe", "syndrome fts2 toe",
           "made up", "fictional", "toe", "invented slim"]


class Fixed:
    """A member that answers fixed rankings (the fusion arithmetic checked by hand)."""

    method = "fixed"

    def __init__(self, ranking: list[tuple[str, float]]) -> None:
        self.ranking = ranking

    def link_parts(self, queries, mentions, whole, top_k):
        return [[Hit(u, u.lower(), s) for u, s in self.ranking[:top_k]] for _ in queries]


def test_rrf_by_hand_differs_from_each_member():
    a = [Hit("X", "x", 9.0), Hit("Y", "y", 8.0), Hit("Z", "z", 1.0)]
    b = [Hit("Y", "y", 5.0), Hit("Z", "z", 4.9), Hit("X", "x", 0.0)]
    fused = fuse([a, b], "rrf", 3)
    # rank r earns 1/(60+r); scaled by 61/2: X 1/61+1/63, Y 1/62+1/61, Z 1/63+1/62
    want = {"X": (61 / 61 + 61 / 63) / 2, "Y": (61 / 62 + 61 / 61) / 2, "Z": (61 / 63 + 61 / 62) / 2}
    assert [h.uid for h in fused] == ["Y", "X", "Z"]  # neither member's order (X Y Z, Y Z X)
    assert all(math.isclose(h.score, want[h.uid], rel_tol=1e-12) for h in fused)
    assert fuse([a, a], "rrf", 3)[0].score == 1.0  # every member's rank 1


def test_score_fusion_by_hand_and_ties():
    a = [Hit("X", "x", 3.0), Hit("Y", "y", 1.0)]
    b = [Hit("Y", "y", 2.0), Hit("X", "x", 1.9)]
    pa = [1 / (1 + math.exp(-2.0)), math.exp(-2.0) / (1 + math.exp(-2.0))]
    pb = [1 / (1 + math.exp(-0.1)), math.exp(-0.1) / (1 + math.exp(-0.1))]
    fused = fuse([a, b], "score", 2)
    assert [h.uid for h in fused] == ["X", "Y"]  # A is confident, B hesitates: X
    assert math.isclose(fused[0].score, (pa[0] + pb[1]) / 2) and math.isclose(fused[1].score, (pa[1] + pb[0]) / 2)
    hot = fuse([a, b], "score", 2, temperature=4.0)  # flatter: the softmax of scores / 4
    assert math.isclose(hot[0].score, (1 / (1 + math.exp(-0.5)) + math.exp(-0.025) / (1 + math.exp(-0.025))) / 2)
    # swapped top two tie under RRF: the score fusion breaks it; a concept one member lacks gets nothing from it
    assert [h.uid for h in fuse([a, b], "rrf", 2)] == ["X", "Y"]
    assert [h.uid for h in fuse([a, [Hit("W", "w", 1.0)]], "score", 3)] == ["W", "X", "Y"]
    assert [h.uid for h in fuse([a, b], "rrf", 2, depth=1)] == ["X", "Y"]  # depth 1: X and Y each once at rank 1


def test_ensemble_linker_fuses_its_members_at_depth():
    from kgnorm.methods.ensemble.linker import EnsembleLinker

    a = Fixed([("A", 5.0), ("B", 4.0), ("C", 3.0), ("D", 2.0)])
    b = Fixed([("D", 5.0), ("C", 4.5), ("B", 0.0), ("A", -1.0)])
    got = EnsembleLinker([a, b], "rrf", depth=4).link_parts(["q"], [None], [True], 3)[0]
    # asked for top 3, each member gives its top 4: A and D tie (ranks 1 + 4), B and C tie (2 + 3); the
    # average softmax breaks the ties: D (e^-3 share in a, 1/(1+e^-.5+...) in b) beats A
    za, zb = sum(math.exp(s - 5) for s in (5, 4, 3, 2)), sum(math.exp(s - 5) for s in (5, 4.5, 0, -1))
    prob = {u: (math.exp(sa - 5) / za + math.exp(sb - 5) / zb) / 2
            for u, sa, sb in (("A", 5, -1), ("B", 4, 0), ("C", 3, 4.5), ("D", 2, 5))}
    first = sorted("AD", key=lambda u: -prob[u]) + sorted("BC", key=lambda u: -prob[u])
    assert [h.uid for h in got] == first[:3]
    assert math.isclose(got[0].score, (61 / 61 + 61 / 64) / 2) and math.isclose(got[2].score, (61 / 62 + 61 / 63) / 2)


@pytest.fixture(scope="module")
def world(tmp_path_factory, tiny_bert_dir):
    base = ctd_mentions(tmp_path_factory.mktemp("ensemble"), TRAIN, DEV)
    tmp, store = base["tmp"], base["store"]
    common = ["--ontology", "ctd", "--train", str(tmp / "train.concept"), "--encoder", str(tiny_bert_dir),
              "--epochs", "1", "--topk", "3", "--store", store, "-q"]
    a, b = tmp / "biosyn_a", tmp / "biosyn_b"
    assert exit_code(["train", "biosyn", "--out", str(a), *common]) == 0
    # a second member that ranks differently: dense scores only, another seed
    assert exit_code(["train", "biosyn", "--out", str(b), *common, "--sparse-weight", "0", "--seed", "1"]) == 0
    ens = tmp / "ensemble"
    assert exit_code(["train", "ensemble", "--member", str(a), "--member", str(b), "--dev", str(tmp / "dev.concept"),
                      "--depth", "4", "--out", str(ens), "--store", store, "-q"]) == 0
    return {**base, "a": a, "b": b, "ens": ens}


def _members(world):
    from kgnorm.jobs.models import open_linker

    return [open_linker(world[k])[0] for k in ("a", "b")]


def _bare(qs):
    return [SimpleNamespace(text=q, context="") for q in qs]


def test_directory_references_its_members_and_records_dev(world):
    meta = json.loads((world["ens"] / "kgnorm-model.json").read_text())
    assert meta["method"] == "ensemble" and meta["members"] == [str(world["a"].resolve()), str(world["b"].resolve())]
    assert meta["ontology"] == "ctd" and meta["depth"] == 4
    sel = meta["selection"]
    assert sel["chosen_by"] == "dev Acc@1" and "not a held-out" in sel["note"]
    figs = sel["figures"]
    assert meta["fusion"] == max(("rrf", "score"), key=lambda f: (figs[f]["acc1"], f == "rrf"))
    assert [m["path"] for m in figs["members"]] == meta["members"] and figs["rrf"]["n"] == 5
    assert sorted(p.name for p in world["ens"].iterdir()) == ["kgnorm-model.json"]  # nothing copied


def test_fused_ranking_is_rrf_of_the_members_by_hand(world):
    from kgnorm.methods.ensemble.linker import EnsembleLinker

    a, b = _members(world)
    ens = EnsembleLinker([a, b], "rrf", depth=4)
    ra, rb = (m.link_parts(QUERIES, _bare(QUERIES), [True] * len(QUERIES), 4) for m in (a, b))
    got = ens.link_parts(QUERIES, _bare(QUERIES), [True] * len(QUERIES), 3)
    differs = 0
    for ha, hb, hf in zip(ra, rb, got):
        value = {}
        for hits in (ha, hb):
            for r, h in enumerate(hits, 1):
                value[h.uid] = value.get(h.uid, 0.0) + 61 / (60 + r) / 2
        assert [h.uid for h in hf] == sorted(value, key=lambda u: -value[u])[:3] or \
            all(math.isclose(value[h.uid], value[u]) for h, u in zip(hf, sorted(value, key=lambda u: -value[u])))
        assert all(math.isclose(h.score, value[h.uid]) for h in hf)
        assert len({h.uid for h in hf}) == len(hf)  # one concept per rank
        differs += [h.uid for h in hf] != [h.uid for h in ha[:3]]
    assert any([h.uid for h in x] != [h.uid for h in y] for x, y in zip(ra, rb))  # the members disagree somewhere
    assert differs > 0  # and the fusion is not member A


def test_link_and_eval_link_agree(capsys, world):
    rows, reps = link_then_eval(capsys, world["ens"], world["tmp"] / "dev.concept", world["store"],
                                world["tmp"] / "ensemble.tsv")
    for mid in {r["mention_id"] for r in rows}:
        mine = [r for r in rows if r["mention_id"] == mid]
        assert len({r["concept_uids"] for r in mine}) == len(mine)  # one concept per rank
        scores = [float(r["score"]) for r in mine]
        assert scores == sorted(scores, reverse=True) and all(0.0 < s <= 1.0 for s in scores)  # fused scores
    assert reps[0]["full"] == reps[1]["full"] and reps[0]["full"]["n"] == 5
    meta = json.loads((world["ens"] / "kgnorm-model.json").read_text())
    assert math.isclose(reps[1]["full"]["acc1"], meta["selection"]["figures"][meta["fusion"]]["acc1"])


def _tsv(model, **kw) -> str:
    from kgnorm.jobs.link import link_mentions

    out = io.StringIO()
    mentions = QUERIES * 3
    link_mentions(model, mentions, write=False, output=out, progress=False, **{"batch_size": 4, **kw})
    return out.getvalue()


def test_the_cache_and_the_batch_never_change_the_output(world, monkeypatch):
    monkeypatch.setenv("KGNORM_LINK_CACHE", "0")
    before = _tsv(world["ens"])
    monkeypatch.setenv("KGNORM_LINK_CACHE", "1")
    assert _tsv(world["ens"]) == before
    assert _tsv(world["ens"], batch_size=1) == _tsv(world["ens"], batch_size=7) == before
    assert before.count("\n") > len(QUERIES) * 3


def test_cached_members_give_the_uncached_fusion(world):
    from kgnorm.linking.query_cache import CachedLinker
    from kgnorm.methods.ensemble.linker import EnsembleLinker

    a, b = _members(world)
    for seed in range(6):
        rng = random.Random(seed)
        fusion = rng.choice(["rrf", "score"])
        plain = EnsembleLinker([a, b], fusion, depth=4)
        cached = EnsembleLinker([CachedLinker(a, max_entries=rng.choice([1, 5, 100])), CachedLinker(b)], fusion, 4)
        for _ in range(3):
            qs = [rng.choice(QUERIES) for _ in range(rng.randint(1, 12))]
            k = rng.choice([1, 3, 5])
            want = plain.link_parts(qs, _bare(qs), [True] * len(qs), k)
            got = cached.link_parts(qs, _bare(qs), [True] * len(qs), k)
            assert [[(h.uid, h.score) for h in p] for p in got] == [[(h.uid, h.score) for h in p] for p in want]


def test_members_of_different_ontologies_are_refused(capsys, world, tiny_bert_dir):
    other = world["tmp"] / "other"
    from pathlib import Path

    fixture = Path(__file__).parent / "fixtures/medic/CTD_diseases.tsv"
    assert exit_code(["ingest", "medic", str(fixture), "--ontology", "ctd2", "--store", world["store"], "-q"]) == 0
    assert exit_code(["train", "biosyn", "--ontology", "ctd2", "--out", str(other), "--encoder", str(tiny_bert_dir),
                      "--store", world["store"], "-q"]) == 0
    out = world["tmp"] / "refused"
    code, _, err = run(capsys, "train", "ensemble", "--member", str(world["a"]), "--member", str(other),
                       "--out", str(out), "--store", world["store"], "-q")
    assert code != 0 and "ontology" in err and "'ctd2'" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()
    # the same ontology, another version
    copy = world["tmp"] / "a_v2"
    shutil.copytree(world["a"], copy)
    meta = json.loads((copy / "kgnorm-model.json").read_text())
    (copy / "kgnorm-model.json").write_text(json.dumps({**meta, "ontology_version": "v2"}))
    code, _, err = run(capsys, "train", "ensemble", "--member", str(world["a"]), "--member", str(copy),
                       "--out", str(out), "-q")
    assert code != 0 and "ontology_version" in err and len(err.strip().splitlines()) == 1 and not out.exists()
    code, _, err = run(capsys, "train", "ensemble", "--member", str(world["a"]), "--out", str(out), "-q")
    assert code != 0 and "at least two" in err


def test_nil_decisions_see_the_fused_scores(capsys, world):
    dev = world["tmp"] / "dev.concept"
    first = list(csv.DictReader(io.StringIO(_tsv(world["ens"])), delimiter="\t"))
    top = sorted({float(r["score"]) for r in first if r["rank"] == "1"})
    assert len(top) > 1 and top[-1] <= 1.0  # fused scores (the members' BioSyn scores are not in [0, 1])
    t = (top[len(top) // 2 - 1] + top[len(top) // 2]) / 2  # between two printed scores
    rows = list(csv.DictReader(io.StringIO(_tsv(world["ens"], nil_threshold=t)), delimiter="\t"))
    assert {r["mention_id"]: r["nil"] == "1" for r in rows if r["rank"] == "1"} == \
        {r["mention_id"]: float(r["score"]) < t for r in first if r["rank"] == "1"}
    assert any(r["nil"] == "1" for r in rows) and any(r["nil"] == "0" for r in rows)
    # the constructed nil set: every member loses the removed concepts, the hits are the fused ones
    from kgnorm.jobs.models import open_linker
    from kgnorm.nil.evaluation import concept_hits
    from kgnorm.nil.thresholds import without_concepts

    linker, _ = open_linker(world["ens"])
    fused = concept_hits(linker.model, QUERIES, depth=3, linker=linker)
    assert [[(u, s) for u, _, s in h] for h in fused] == \
        [[(h.uid, h.score) for h in p] for p in linker.link_parts(QUERIES, _bare(QUERIES), [True] * len(QUERIES), 3)]
    linker.model.set_dictionary(without_concepts(linker.model.dictionary, {"MESH:D900002"}))
    assert all("MESH:D900002" not in {u for us in m.model.dictionary.uids for u in us} for m in linker.members)
    after = concept_hits(linker.model, QUERIES, depth=3, linker=linker)
    assert all(u != "MESH:D900002" for h in after for u, _, _ in h) and after != fused
    code, out, err = run(capsys, "eval", "link", "--model", str(world["ens"]), "--gold", str(dev), "--nil-fraction",
                         "0.3", "--format", "json", "--store", world["store"])
    assert code == 0, err
    assert "classifier" in json.loads(out)["nil"]["strategies"]


def test_an_ensemble_has_no_encoder_of_its_own(world):
    from kgnorm.errors import KgnormError
    from kgnorm.methods.registry import load_encoder

    with pytest.raises(KgnormError, match="ensemble of linkers"):
        load_encoder(world["ens"])


def test_known_ids_are_the_members_union(world):
    """A concept only one member's dictionary holds (another corpus's training mention) is one the ensemble
    links to: `eval link` must not count its gold as unknown."""
    from kgnorm.jobs.models import open_linker
    from kgnorm.linking.dictionary import NameDictionary

    linker, _ = open_linker(world["ens"])
    b = linker.members[1].model
    b.set_dictionary(b.dictionary.with_mentions([("only in b", "MESH:D999999")]))
    d = linker.model.dictionary
    first = linker.members[0].model.dictionary
    assert isinstance(d, NameDictionary) and "MESH:D999999" in {u for us in d.uids for u in us}
    assert d.names[:len(first)] == first.names and d.index_of("only in b") is not None
    assert "MESH:D999999" not in {u for us in first.uids for u in us}  # the members are unchanged


def test_annotate_links_through_the_ensemble(capsys, world):
    """`annotate` takes an ensemble directory as it takes any linker; its Run records the method."""
    src = world["tmp"] / "docs.jsonl"
    src.write_text(json.dumps({"id": "d1", "text": "A fictional syndrome of the toe, then fts2."}) + "\n")
    out = world["tmp"] / "annotated.pubtator"
    code, _, err = run(capsys, "annotate", "--ner", "dictionary:ctd", "--model", str(world["ens"]), "--input",
                       str(src), "--input-format", "jsonl", "--output", str(out), "--store", world["store"], "-q")
    assert code == 0, err
    assert "fts2" in out.read_text().lower()
    code, printed, err = run(capsys, "query", "MATCH (r:Run) WHERE r.kind = 'annotate' RETURN r.method AS m",
                             "--format", "json", "--store", world["store"])
    assert code == 0, err
    assert {r["m"] for r in json.loads(printed)} == {"ensemble"}
