"""`kgnorm train rerank`: a cross-encoder over a linker's top-k. The directory references the linker,
`link` and `eval link` take it and agree, ranks hold one concept each, scores are cached; bad input
is one line."""
from __future__ import annotations

import json

import pytest

from cli_runner import ctd_mentions, exit_code, link_then_eval, run

TRAIN = ("1||0|18||Disease||fictional syndrome||D900001\n"
         "1||20|31||Disease||toe disease||D900002\n"
         "2||0|4||Disease||fts2||999002\n"
         "2||5|24||Disease||made-up syndromes||D900001\n"
         "3||0|20||Disease||fictional toe illness||D900002\n")
DEV = ("7||0|19||Disease||fictional syndromes||D900001\n"
       "7||20|28||Disease||toe pain||D900002\n"
       "8||0|22||Disease||toe syndrome fictional||999002\n")


@pytest.fixture(scope="module")
def world(tmp_path_factory, tiny_bert_dir):
    base = ctd_mentions(tmp_path_factory.mktemp("rerank"), TRAIN, DEV)
    tmp, store = base["tmp"], base["store"]
    linker = tmp / "biosyn"
    assert exit_code(["train", "biosyn", "--ontology", "ctd", "--out", str(linker), "--train",
                      str(tmp / "train.concept"), "--encoder", str(tiny_bert_dir), "--epochs", "1", "--topk", "3",
                      "--store", store, "-q"]) == 0
    out = tmp / "rerank"
    assert exit_code(["train", "rerank", "--linker", str(linker), "--train", str(tmp / "train.concept"),
                      "--dev", str(tmp / "dev.concept"), "--out", str(out), "--top-k", "3", "--encoder",
                      str(tiny_bert_dir), "--epochs", "2", "--batch-size", "2", "--store", store, "-q"]) == 0
    return {"tmp": tmp, "store": store, "linker": linker, "out": out}


def test_directory_references_the_linker(world):
    meta = json.loads((world["out"] / "kgnorm-model.json").read_text())
    assert meta["method"] == "rerank" and meta["linker"] == str(world["linker"].resolve())
    assert meta["top_k"] == 3 and len(meta["training"]["history"]) >= 1
    assert (world["out"] / "cross_encoder" / "model.safetensors").is_file()
    assert not (world["out"] / "names.tsv").exists()  # the linker's dictionary is not copied


def test_link_and_eval_link_agree(capsys, world):
    rows, reps = link_then_eval(capsys, world["out"], world["tmp"] / "dev.concept", world["store"],
                                world["tmp"] / "reranked.tsv")
    for mid in {r["mention_id"] for r in rows}:
        uids = [r["concept_uids"] for r in rows if r["mention_id"] == mid]
        assert len(uids) == len(set(uids)) and 1 <= len(uids) <= 3  # one concept per rank
        scores = [float(r["score"]) for r in rows if r["mention_id"] == mid]
        assert scores == sorted(scores, reverse=True)  # the cross-encoder's order
    assert reps[0]["full"] == reps[1]["full"] and reps[0]["full"]["n"] == 3


def test_scores_are_cached(world):
    from kgnorm.methods.rerank.model import CrossScorer

    scorer = CrossScorer.load(world["out"])
    first = scorer.score(["toe pain", "toe pain"], ["toe syndrome", "toe syndrome"])
    assert first[0] == first[1] and scorer.cache_hits == 1
    again = scorer.score(["toe pain"], ["toe syndrome"])
    assert again == first[:1] and scorer.cache_hits == 2


def test_bad_input(capsys, world):
    base = ["train", "rerank", "--train", str(world["tmp"] / "train.concept"), "--out",
            str(world["tmp"] / "bad"), "--store", world["store"], "-q"]
    code, _, err = run(capsys, *base, "--linker", str(world["tmp"] / "nowhere"))
    assert code != 0 and "nowhere" in err and "Traceback" not in err
    code, _, err = run(capsys, *base, "--linker", str(world["linker"]), "--top-k", "1")
    assert code != 0 and "--top-k" in err
    code, _, err = run(capsys, *base, "--linker", str(world["out"]))
    assert code != 0 and "cannot be reranked" in err


def test_nil_detection_sees_the_reranked_scores(world):
    """`eval link --nil-fraction` on a reranker directory decides nil on the scores `link` writes,
    not on the wrapped linker's."""
    from kgnorm.jobs.models import open_linker
    from kgnorm.linking.linker import DictionaryLinker
    from kgnorm.nil.evaluation import concept_hits

    linker, _ = open_linker(world["out"])
    queries = ["fictional syndromes", "toe pain"]
    reranked = concept_hits(linker.model, queries, depth=3, linker=linker)
    bare = concept_hits(linker.model, queries, depth=3)
    direct = linker.link_parts(queries, [type("M", (), {"context": "", "text": q})() for q in queries],
                               [True, True], 3)
    assert [[(h.uid, h.score) for h in hits] for hits in direct] == [[(u, s) for u, _, s in h] for h in reranked]
    assert [[s for _, _, s in h] for h in reranked] != [[s for _, _, s in h] for h in bare]
