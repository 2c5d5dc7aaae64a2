"""`kgnorm export reviewed` (issue 40, item 5): the links people reviewed come out as a corpus that
kgnorm's own readers read back -- PubTator and BioC with each reviewed document's text, .concept
lines -- with the reviewed concepts (nil as -1 where the reader takes it back, not_a_mention left
out), on both stores; and `train biosyn --reviewed FILE` trains on those links."""
from __future__ import annotations

import json

import pytest

from annotate_fixtures import build
from cli_runner import run
from kgnorm.review.desk import ReviewDesk
from kgnorm.review.records import AddedMention
from test_cli_journey import journey_store as store  # noqa: F401  (a fresh store of each kind)
from test_reviews import _annotate, _json, _mention


def _review(capsys, tmp_path, store: str, tiny_bert_dir) -> tuple:
    """Annotate the toy documents, then review: a changed concept, an accepted link, a nil, a
    not-a-mention and a span the detector missed. (model, the expected linked rows, the nil row)."""
    model = build(tmp_path, capsys, store, tiny_bert_dir)
    _annotate(capsys, tmp_path, store, model)
    bc, ov = _mention(capsys, store, "breast cancer"), _mention(capsys, store, "Ovarian cancer")
    cc, ovl = _mention(capsys, store, "colorectal cancer"), _mention(capsys, store, "ovarian cancer")
    other = "TOYD:0003" if bc["concept"] != "TOYD:0003" else "TOYD:0004"
    d2 = _json(capsys, store, "MATCH (d:Document) WHERE d.doc_id = 'd2' RETURN d.uid AS uid, d.text AS text")[0]
    at = d2["text"].index("link")
    desk = ReviewDesk(store)
    try:
        desk.record(bc["mention_uid"], "nil", reviewer="ann")  # superseded by the next review
        desk.record(bc["mention_uid"], "concept", other, reviewer="ann")
        acc = desk.record(cc["mention_uid"], "accept", reviewer="ann")
        desk.record(ov["mention_uid"], "not_a_mention", reviewer="ann")
        desk.record(ovl["mention_uid"], "nil", reviewer="ann")
        desk.record("", "concept", "TOYD:0002", reviewer="ann",
                    added=AddedMention(d2["uid"], at, at + 4, "link", "Disease"))
    finally:
        desk.close()
    linked = {("d1", bc["start"], bc["end"], "breast cancer", other),
              ("d2", cc["start"], cc["end"], "colorectal cancer", acc.concept_uid),
              ("d2", at, at + 4, "link", "TOYD:0002")}
    return model, linked, ("d2", ovl["start"], ovl["end"], "ovarian cancer")


def _export(capsys, store: str, out, fmt: str) -> str:
    code, stdout, err = run(capsys, "export", "reviewed", "--format", fmt, "--output", str(out), "--store", store)
    assert code == 0, err
    assert stdout == "" and "exported 3 reviewed link(s)" in err  # the summary goes to stderr
    return err


def test_export_reviewed_round_trips_through_the_readers(capsys, tmp_path, store, tiny_bert_dir):
    from kgnorm.documents.readers import read_documents
    from kgnorm.mentions.readers import read_mentions

    _, linked, nil = _review(capsys, tmp_path, store, tiny_bert_dir)
    texts = {r["doc"]: r["text"] for r in _json(capsys, store, "MATCH (d:Document) RETURN d.doc_id AS doc, "
                                                               "d.text AS text")}
    for fmt in ("pubtator", "bioc"):
        out = tmp_path / f"reviewed.{fmt}"
        err = _export(capsys, store, out, fmt)
        docs = list(read_documents(out, fmt))
        assert [d.doc_id for d in docs] == ["d1", "d2"]  # d3: nothing reviewed
        for d in docs:
            assert d.text.rstrip() == texts[d.doc_id] and d.title == texts[d.doc_id][:d.title_end]
        rows = {(d.doc_id, a.start, a.end, a.text, a.ids) for d in docs for a in d.annotations}
        want = {(*r[:4], (r[4],)) for r in linked}
        if fmt == "pubtator":  # -1 reads back as no concept
            assert rows == want | {(*nil, ())} and "+ 1 reviewed nil" in err
        else:  # BioC's reader keeps -1 as an id: nil is left out
            assert rows == want
        assert all(d.text[a.start:a.end] == a.text for d in docs for a in d.annotations)
    out = tmp_path / "reviewed.concept"
    _export(capsys, store, out, "concept")
    got = {(m.doc_id, m.start, m.end, m.text, tuple(m.gold)) for m in read_mentions(out)}
    assert got == {(*r[:4], (r[4],)) for r in linked} | {(*nil, ())}


def test_export_errors_are_one_line_and_write_nothing(capsys, tmp_path, tiny_bert_dir):
    store = f"ladybug://{tmp_path}/graph"
    model = build(tmp_path, capsys, store, tiny_bert_dir)
    _annotate(capsys, tmp_path, store, model)
    out = tmp_path / "reviewed.concept"
    out.write_text("old\n")
    code, _, err = run(capsys, "export", "reviewed", "--format", "concept", "--output", str(out), "--store", store)
    assert code == 1 and err.count("\n") == 1 and "no reviewed mention with a concept" in err
    code, _, err = run(capsys, "export", "reviewed", "--format", "csv", "--output", str(out), "--store", store)
    assert code == 1 and err.count("\n") == 1 and "unknown export format 'csv'" in err
    assert out.read_text() == "old\n" and [p.name for p in tmp_path.glob(".reviewed*")] == []
    # a mention linked from a mention file has no document text: only the concept format writes it
    tsv = tmp_path / "m.tsv"
    tsv.write_text("id\ttext\tdoc_id\nm1\tbreast carcinoma\td7\n")
    code, _, err = run(capsys, "link", "--model", str(model), "--input", str(tsv), "--output", str(tmp_path / "l.tsv"),
                       "--store", store, "-q")
    assert code == 0, err
    uid = _json(capsys, store, "MATCH (m:Mention) WHERE m.doc_id = 'd7' RETURN m.uid AS uid")[0]["uid"]
    desk = ReviewDesk(store)
    try:
        desk.record(uid, "concept", "TOYD:0002", reviewer="ann")
    finally:
        desk.close()
    code, _, err = run(capsys, "export", "reviewed", "--format", "pubtator", "--output", str(tmp_path / "r.pubtator"),
                       "--store", store)
    assert code == 1 and "no reviewed mention with a concept in a stored document" in err
    code, _, err = run(capsys, "export", "reviewed", "--format", "concept", "--output", str(out), "--store", store)
    assert code == 0, err
    from kgnorm.mentions.readers import read_mentions

    assert [(m.doc_id, m.text, m.gold) for m in read_mentions(out)] == [("d7", "breast carcinoma", ["TOYD:0002"])]


def test_train_biosyn_learns_from_the_reviewed_links(capsys, tmp_path, tiny_bert_dir, monkeypatch):
    import kgnorm.methods.biosyn.train as biosyn_train

    store = f"ladybug://{tmp_path}/graph"
    _, linked, _ = _review(capsys, tmp_path, store, tiny_bert_dir)
    reviewed = tmp_path / "reviewed.concept"
    _export(capsys, store, reviewed, "concept")
    seen: list = []
    real = biosyn_train.train_biosyn

    def spy(model, dictionary, train_pairs, *args, **kw):
        seen.append(list(train_pairs))
        return real(model, dictionary, train_pairs, *args, **kw)

    monkeypatch.setattr(biosyn_train, "train_biosyn", spy)
    train = tmp_path / "train.tsv"
    train.write_text("id\ttext\tgold\nt1\tbreast carcinoma\tTOYD:0002\n")
    out = tmp_path / "retrained"
    code, _, err = run(capsys, "train", "biosyn", "--ontology", "toyd", "--out", str(out), "--train", str(train),
                       "--reviewed", str(reviewed), "--encoder", str(tiny_bert_dir), "--epochs", "1", "--topk", "4",
                       "--store", store, "-q")
    assert code == 0, err
    pairs = {(q, frozenset(g)) for q, g in seen[0]}
    assert ("breast carcinoma", frozenset({"TOYD:0002"})) in pairs  # --train
    for _, _, _, text, uid in linked:  # and every reviewed link; the nil one teaches nothing
        assert (text.lower(), frozenset({uid})) in pairs
    assert len(seen[0]) == 1 + len(linked)
    meta = json.loads((out / "kgnorm-model.json").read_text())
    assert meta["reviewed_file"]["path"] == str(reviewed.resolve())
    code, _, err = run(capsys, "train", "biosyn", "--ontology", "toyd", "--out", str(tmp_path / "x"),
                       "--reviewed", str(tmp_path / "none.concept"), "--store", store, "-q")
    assert code == 1 and "reviewed mentions file not found" in err


def test_export_one_reviewers_answers_and_only_resolved_ones(capsys, tmp_path, store, tiny_bert_dir):
    """Issue 50: `--reviewer NAME` writes that reviewer's newest answers (whoever reviewed after
    them), `--resolved-only` leaves out the mentions two reviewers answered differently, and a
    withdrawn review is written by neither."""
    from kgnorm.mentions.readers import read_mentions

    model = build(tmp_path, capsys, store, tiny_bert_dir)
    _annotate(capsys, tmp_path, store, model)
    bc, cc = _mention(capsys, store, "breast cancer"), _mention(capsys, store, "colorectal cancer")
    ov, ovl = _mention(capsys, store, "Ovarian cancer"), _mention(capsys, store, "ovarian cancer")
    desk = ReviewDesk(store)
    try:
        desk.record(bc["mention_uid"], "concept", "TOYD:0003", reviewer="ann")
        desk.record(bc["mention_uid"], "concept", "TOYD:0004", reviewer="bob")  # they disagree; bob's is current
        acc = desk.record(cc["mention_uid"], "accept", reviewer="ann")
        desk.record(cc["mention_uid"], "concept", acc.concept_uid, reviewer="bob")  # the same answer
        desk.record(ovl["mention_uid"], "concept", "TOYD:0003", reviewer="ann")
        desk.record(ovl["mention_uid"], "withdraw", reviewer="ann")
        desk.record(ov["mention_uid"], "concept", "TOYD:0003", reviewer="bob")
    finally:
        desk.close()

    def exported(*opts: str) -> set:
        out = tmp_path / "r.concept"
        code, _, err = run(capsys, "export", "reviewed", "--format", "concept", "--output", str(out), *opts,
                           "--store", store)
        assert code == 0, err
        return {(m.text, tuple(m.gold)) for m in read_mentions(out)}

    cc_row, ov_row = ("colorectal cancer", (acc.concept_uid,)), ("Ovarian cancer", ("TOYD:0003",))
    assert exported() == {("breast cancer", ("TOYD:0004",)), cc_row, ov_row}
    assert exported("--reviewer", "ann") == {("breast cancer", ("TOYD:0003",)), cc_row}
    assert exported("--resolved-only") == {cc_row, ov_row}
    assert exported("--reviewer", "ann", "--resolved-only") == {cc_row}
    code, _, err = run(capsys, "export", "reviewed", "--output", str(tmp_path / "n.concept"), "--reviewer", "nobody",
                       "--store", store)
    assert code == 1 and "by reviewer 'nobody'" in err and not (tmp_path / "n.concept").exists()
