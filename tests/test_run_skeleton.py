"""The job skeleton (kgnorm.jobs.run): every job that writes opens the store once, for everything it
reads before the write and the write itself; a job that fails before writing leaves the store and
the output file as they were; a streamed run and a run given whole agree."""
from __future__ import annotations

import json

import pytest

from kgnorm.stores import open_store
from kgnorm.stores.ladybug_store import LadybugStore
from test_annotate_formats import world  # noqa: F401  (the fixture: a toy ontology and a BioSyn model)


@pytest.fixture
def opens(monkeypatch):
    """Every LadybugDB store a job opens, as (read_only, path), recorded where one is made (the staged
    write's reopening of the database between batches, which returns LadybugDB's memory, is the
    same store)."""
    seen: list[tuple[bool, str]] = []
    real = LadybugStore.__init__

    def recorded(self, path, read_only=False, *args, **kwargs):
        seen.append((read_only, str(path)))
        return real(self, path, read_only, *args, **kwargs)

    monkeypatch.setattr(LadybugStore, "__init__", recorded)
    return seen


def _docs(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": "d1", "title": "Ataxia telangiectasia",
                               "abstract": "Breast cancer and colorectal cancer."}) + "\n", encoding="utf-8")
    return src


def test_annotate_opens_the_store_once(tmp_path, world, opens):  # noqa: F811
    """Dictionary tagger, model check, nil and the staged write: one connection (it used to be four)."""
    from kgnorm.jobs.annotate import annotate_documents

    store, model = world
    report = annotate_documents("dictionary:toyd", model, _docs(tmp_path), input_format="jsonl",
                                output=tmp_path / "out.pubtator", store=store, progress=False)
    assert report.run_uid and report.n_mentions >= 2 and report.n_edges >= 2
    assert opens == [(False, store[len("ladybug://"):])], opens


def test_annotate_without_writing_reads_the_store_once_read_only(tmp_path, world, opens):  # noqa: F811
    from kgnorm.jobs.annotate import annotate_documents

    store, model = world
    report = annotate_documents("dictionary:toyd", model, _docs(tmp_path), input_format="jsonl", output=None,
                                store=store, write=False, progress=False)
    assert report.run_uid is None and report.n_mentions >= 2
    assert opens == [(True, store[len("ladybug://"):])], opens


def test_link_opens_the_store_once(tmp_path, world, opens):  # noqa: F811
    from kgnorm.jobs.link import link_mentions

    store, model = world
    report = link_mentions(model, ["breast cancer", "ataxia telangiectasia"], store=store, progress=False)
    assert report.run_uid and report.n_edges == 2
    assert [ro for ro, _ in opens] == [False], opens


def test_a_job_that_fails_before_writing_leaves_store_and_output_as_they_were(tmp_path, world):  # noqa: F811
    """An unknown dictionary fails after the store is open, before anything is staged: no Run, no
    partial file, the old output untouched."""
    from kgnorm.errors import KgnormError
    from kgnorm.jobs.annotate import annotate_documents

    store, model = world
    out = tmp_path / "out.pubtator"
    out.write_text("earlier\n", encoding="utf-8")
    with open_store(store, read_only=True) as st:
        before = sorted(tuple(r) for r in st.query("MATCH (r:Run) RETURN r.uid, r.kind").rows)
    with pytest.raises(KgnormError):
        annotate_documents("dictionary:absent", model, _docs(tmp_path), input_format="jsonl", output=out,
                           store=store, progress=False)
    with open_store(store, read_only=True) as st:
        assert sorted(tuple(r) for r in st.query("MATCH (r:Run) RETURN r.uid, r.kind").rows) == before
    assert out.read_text(encoding="utf-8") == "earlier\n"
    assert not (tmp_path / "out.pubtator.partial").exists()


def test_streamed_and_whole_runs_write_the_same_edges(tmp_path, world):  # noqa: F811
    """`link` streams its run through the skeleton (StreamedRun); written again with one batch per
    mention, the stored edges are the same."""
    from kgnorm.jobs.link import link_mentions

    store, model = world
    names = ["breast cancer", "ataxia telangiectasia", "colorectal cancer"]

    def edges():
        with open_store(store, read_only=True) as st:
            return sorted(tuple(r) for r in st.query(
                "MATCH (m:Mention)-[l:LINKED_TO]->(c:Concept) WHERE l.run = $r RETURN m.text, c.uid, l.rank, l.score",
                {"r": uid}).rows)

    uid = link_mentions(model, names, store=store, progress=False).run_uid
    whole = edges()
    assert link_mentions(model, names, store=store, progress=False, write_batch=1).run_uid == uid
    assert edges() == whole and len(whole) == 3
