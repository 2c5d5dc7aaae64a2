"""Detection and linking overlapped on two threads (kgnorm.jobs.overlap): the plan follows the
declared cores and --threads; the overlapped run writes the one-thread run's bytes (PubTator, BioC,
JSONL) and the same mentions and edges into the store; a failing detector leaves the store as it was."""
from __future__ import annotations

import threading

import pytest
from annotate_fixtures import DOCS, build, write_jsonl
from cli_runner import run

from kgnorm.jobs.annotate import annotate_documents
from kgnorm.errors import KgnormError
from kgnorm.jobs.overlap import DETECTORS_ENV, OverlapPlan, overlap_plan, overlapped

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.mark.parametrize("overlap, threads, cores, plan", [
    (None, None, 2, OverlapPlan(True, 1, 2)),  # 2 cores: one per stage, two blocks detected at once
    (None, None, 8, OverlapPlan(True, 4, 2)),
    (None, 1, 2, OverlapPlan(True, 1, 2)),
    (None, 1, 4, OverlapPlan(True, 1, 4)),
    (None, 2, 2, OverlapPlan(False, 2)),       # --threads 2 on 2 cores: no core for a second stage
    (None, 2, 4, OverlapPlan(True, 2, 2)),
    (None, None, 1, OverlapPlan(False, None)),
    (False, None, 8, OverlapPlan(False, None)),
    (True, None, 1, OverlapPlan(True, 1, 1)),  # forced
    (True, 3, 2, OverlapPlan(True, 3, 1)),
])
def test_plan_from_declared_cores_and_threads(overlap, threads, cores, plan, monkeypatch):
    monkeypatch.delenv(DETECTORS_ENV, raising=False)
    assert overlap_plan(overlap, threads, cores) == plan


def test_the_number_of_detecting_threads_is_declared(monkeypatch):
    monkeypatch.setenv(DETECTORS_ENV, "1")
    assert overlap_plan(None, None, 2) == OverlapPlan(True, 1, 1)
    assert overlap_plan(None, None, 1) == OverlapPlan(False, None)  # no overlap: nothing to set
    monkeypatch.setenv(DETECTORS_ENV, "two")
    with pytest.raises(KgnormError, match=DETECTORS_ENV):
        overlap_plan(None, None, 2)


def test_two_blocks_are_detected_at_once_and_still_come_out_in_order():
    both = threading.Barrier(2, timeout=10)   # blocks 0 and 1 must be in their first stage together

    def first(b: int) -> int:
        if b < 2:
            both.wait()
        return b * 10

    assert list(overlapped(range(7), first, lambda x: x + 1, workers=2)) == [(b, b * 10 + 1) for b in range(7)]
    with pytest.raises(threading.BrokenBarrierError):   # one worker: the second block never starts beside the first
        list(overlapped(range(3), first, lambda x: x, workers=1))


def test_overlapped_keeps_order_and_runs_the_next_first_stage_beside_this_second_stage():
    started = [threading.Event() for _ in range(6)]
    order: list[int] = []

    def first(b: int) -> int:
        assert threading.current_thread() is not threading.main_thread()
        started[b].set()
        return b * 10

    def second(x: int) -> int:
        b = x // 10
        assert threading.current_thread() is threading.main_thread()
        if b + 1 < 6:  # block b+1 is being detected while block b is linked (else this would time out)
            assert started[b + 1].wait(timeout=10)
        order.append(b)
        return x + 1

    assert list(overlapped(range(6), first, second)) == [(b, b * 10 + 1) for b in range(6)]
    assert order == list(range(6))


def test_overlapped_stops_cleanly_on_an_error_and_an_early_stop():
    def boom(b: int) -> int:
        if b == 2:
            raise ValueError("block 2")
        return b

    with pytest.raises(ValueError, match="block 2"):
        list(overlapped(range(5), boom, lambda x: x))
    started: list[int] = []
    gen = overlapped(range(100), lambda b: started.append(b) or b, lambda x: x)
    assert next(gen) == (0, 0)
    gen.close()
    assert len(started) <= 3 and not [t for t in threading.enumerate() if t.name.startswith("kgnorm-detect")]


@pytest.fixture(scope="module")
def world(tmp_path_factory, tiny_bert_dir):
    """(store, linker, documents, a tiny trained detector whose random head tags freely)."""
    from test_annotate_formats import _tiny_detector
    from test_ray_engine import _Quiet

    tmp = tmp_path_factory.mktemp("overlap")
    store = f"ladybug://{tmp}/graph"
    model = build(tmp, _Quiet(), store, tiny_bert_dir)
    docs = [{**d, "id": f"{d['id']}-{i}"} for i in range(5) for d in DOCS]
    det = _tiny_detector(tiny_bert_dir, tmp / "ner", silent=False)
    return store, model, write_jsonl(tmp / "docs.jsonl", docs), det


@pytest.mark.parametrize("fmt", ["pubtator", "bioc", "jsonl"])
@pytest.mark.parametrize("consistency", [False, True])
@pytest.mark.parametrize("detectors", ["1", "3"])  # blocks detected at once, forced whatever the cores
def test_overlapped_annotate_writes_the_one_thread_bytes(world, tmp_path, fmt, consistency, detectors,
                                                         monkeypatch):
    store, model, docs, det = world
    monkeypatch.setenv(DETECTORS_ENV, detectors)

    def out(overlap: bool) -> bytes:
        path = tmp_path / f"{overlap}.{fmt}"
        rep = annotate_documents(str(det), model, docs, input_format="jsonl", output=path, output_format=fmt,
                                 store=store, write=False, batch_docs=2, progress=False, consistency=consistency,
                                 overlap=overlap, ner_precision="fp32")
        assert rep.n_documents == 10 and rep.n_empty == 5
        return path.read_bytes()

    one = out(False)
    assert one.count(b"Disease") >= 10   # the random head tags a good many spans
    assert out(True) == one


def test_overlapped_annotate_writes_the_same_run_and_a_failure_leaves_the_store(world, tmp_path, capsys,
                                                                                 monkeypatch):
    store, model, docs, det = world
    query = ("MATCH (m:Mention)-[l:LINKED_TO]->(c:Concept) RETURN m.uid AS mu, m.text AS t, m.start AS s, "
             "m.`end` AS e, m.doc_id AS d, c.uid AS cu, l.score AS score, l.rank AS r, l.run AS run "
             "ORDER BY mu, cu, r")

    def rows() -> str:
        code, text, err = run(capsys, "query", query, "--format", "csv", "--store", store)
        assert code == 0, err
        return text

    def write(overlap: bool):
        return annotate_documents(str(det), model, docs, input_format="jsonl", output=tmp_path / "o.pubtator",
                                  store=store, batch_docs=2, progress=False, overlap=overlap, ner_precision="fp32")

    one = write(False)
    before = rows()
    assert one.n_edges > 5 and before.count("\n") == one.n_edges + 1
    two = write(True)   # the same run key: it replaces the run with what it wrote
    assert (two.run_uid, two.n_edges, rows()) == (one.run_uid, one.n_edges, before)

    from kgnorm.methods.ner.model import NerDetector

    calls = {"n": 0}
    real = NerDetector.detect

    def failing(self, texts):
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("detector died on the third batch")
        return real(self, texts)

    monkeypatch.setattr(NerDetector, "detect", failing)
    monkeypatch.setattr(NerDetector, "pack_documents", 2)  # one batch a call: the third call is mid-run
    other = write_jsonl(tmp_path / "other.jsonl", [{**d, "id": f"x{d['id']}-{i}"} for i in range(4) for d in DOCS])
    with pytest.raises(RuntimeError, match="third batch"):
        annotate_documents(str(det), model, other, input_format="jsonl", output=tmp_path / "x.pubtator",
                           store=store, batch_docs=2, progress=False, overlap=True, ner_precision="fp32")
    assert rows() == before and not (tmp_path / "x.pubtator").exists()


@pytest.mark.parametrize("ner, overlap, expected", [
    ("trained", None, True),          # 2 declared cores: a trained detector overlaps by default
    ("dictionary:toyd", None, False),  # the dictionary tagger holds the GIL: not by default
    ("dictionary:toyd", True, True),   # unless asked for
])
def test_default_overlap_follows_the_detector_kind(world, tmp_path, monkeypatch, ner, overlap, expected):
    import kgnorm.jobs.overlap as overlap_module

    store, model, docs, det = world
    monkeypatch.setattr(overlap_module, "available_cores", lambda: 2)
    used: list[bool] = []
    real = overlap_module.overlapped

    def spy(*args, **kwargs):
        used.append(True)
        return real(*args, **kwargs)

    monkeypatch.setattr(overlap_module, "overlapped", spy)
    rep = annotate_documents(str(det) if ner == "trained" else ner, model, docs, input_format="jsonl",
                             output=tmp_path / "o.pubtator", store=store, write=False, batch_docs=2,
                             progress=False, overlap=overlap, ner_precision="fp32")
    assert rep.n_documents == 10 and bool(used) is expected


def test_the_overlapped_linking_stage_declares_its_one_core_to_the_query_encoder(world, tmp_path, monkeypatch):
    """Detection holds the second core: the linking stage declares 1 core, so the query encoder's
    own overlap (kgnorm.encoders.fixed_shape.default_overlap) stays off inside it."""
    import kgnorm.encoders.fixed_shape as fs

    store, model, docs, det = world
    monkeypatch.delenv(fs.OVERLAP_ENV, raising=False)
    seen: list[tuple[int, bool]] = []
    real = fs.QueryVectors.submit

    def spy(self, texts):
        seen.append((fs.cores_for_queries(), self.overlap))
        return real(self, texts)

    monkeypatch.setattr(fs.QueryVectors, "submit", spy)
    for overlap in (True, False):
        seen.clear()
        annotate_documents(str(det), model, docs, input_format="jsonl", output=tmp_path / "o.pubtator",
                           store=store, write=False, batch_docs=2, progress=False, overlap=overlap,
                           threads=1, ner_precision="fp32")
        if overlap:
            assert seen and all(s == (1, False) for s in seen)
        else:
            import os

            assert all(cores == len(os.sched_getaffinity(0)) for cores, _ in seen)  # nothing declared


def test_read_ahead_fills_the_query_encoder_across_batches_and_writes_the_same_bytes(world, tmp_path, monkeypatch):
    """In-process, not overlapped: batches are detected up to LOOKAHEAD mentions ahead of the one
    linked and their queries prefetched, so the fixed-shape encoder calls fill across batches (fewer
    calls than linking each batch as it comes, LOOKAHEAD 0) and the output is the same bytes."""
    import kgnorm.encoders.fixed_shape as fs
    import kgnorm.linking.linker as linker_module

    store, model, docs, det = world
    calls: list[int] = []
    real = fs.QueryVectors._encode

    def spy(self, counts, later=False):
        before = self.calls
        real(self, counts, later)
        calls.append(self.calls - before)

    monkeypatch.setattr(fs.QueryVectors, "_encode", spy)

    def out(lookahead: int) -> tuple[bytes, int]:
        monkeypatch.setattr(linker_module, "LOOKAHEAD", lookahead)
        calls.clear()
        path = tmp_path / f"{lookahead}.jsonl"
        annotate_documents(str(det), model, docs, input_format="jsonl", output=path, output_format="jsonl",
                           store=store, write=False, batch_docs=1, progress=False, overlap=False,
                           ner_precision="fp32")
        return path.read_bytes(), sum(calls)

    each, n_each = out(0)
    ahead, n_ahead = out(10_000)
    assert each.count(b'"ids"') >= 10
    assert ahead == each
    assert 0 < n_ahead < n_each


@pytest.mark.parametrize("overlap", [False, True])
def test_a_trained_detector_gets_several_batches_per_call_and_writes_the_same_bytes(world, tmp_path, monkeypatch,
                                                                                   overlap):
    """annotate hands a trained detector `pack_documents` documents per call (their windows sorted
    by length together), links them batch by batch, and writes what one batch per call writes, in
    input order; streamed: a call never holds more than the pack."""
    from kgnorm.methods.ner.model import NerDetector

    store, model, docs, det = world
    calls: list[int] = []
    real = NerDetector.detect

    def spy(self, texts):
        calls.append(len(texts))
        return real(self, texts)

    monkeypatch.setattr(NerDetector, "detect", spy)

    def out(pack: int) -> bytes:
        monkeypatch.setattr(NerDetector, "pack_documents", pack)
        calls.clear()
        path = tmp_path / f"{pack}.pubtator"
        annotate_documents(str(det), model, docs, input_format="jsonl", output=path, output_format="pubtator",
                           store=store, write=False, batch_docs=2, progress=False, overlap=overlap,
                           ner_precision="fp32")
        return path.read_bytes()

    one = out(1)
    assert calls == [2] * 5
    packed = out(6)
    assert calls == [6, 4]   # three batches of two in one call, then the rest
    assert packed == one and one.count(b"Disease") >= 10
    ids = [line.split(b"|")[0] for line in packed.splitlines() if b"|t|" in line]
    assert ids == [f"{d}-{i}".encode() for i in range(5) for d in ("d1", "d2")]
