"""`--engine ray` for link, annotate and embed: a local Ray with 2 workers gives the in-process
bytes (TSV, PubTator, .npy), a worker killed mid-job is restarted by Ray and its block retried
with the same result, and an address where nothing listens fails in one line. One Ray for the
module (starting Ray is the slow part)."""
from __future__ import annotations

import io
import socket

import numpy as np
import pytest
from annotate_fixtures import DOCS, build, write_jsonl
from cli_runner import run

from kgnorm.jobs.annotate import annotate_documents
from kgnorm.jobs.embed import embed_names
from kgnorm.jobs.link import link_mentions
from kgnorm.jobs.ray_engine import EXIT_ONCE_ENV, RayOptions

pytestmark = pytest.mark.usefixtures("one_torch_thread")
TWO = RayOptions(workers=2, block=3)


class _Quiet:
    """Stands in for capsys where a module fixture runs the CLI (capsys is per test)."""

    def readouterr(self) -> tuple[str, str]:
        return "", ""


@pytest.fixture(scope="module")
def ray_local():
    ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'kgnorm[ray]'")
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def toy(tmp_path_factory, tiny_bert_dir):
    """(store, model dir, documents file): the annotate tests' ontology, an untrained BioSyn, and
    its documents repeated under new ids so that blocks go to both workers."""
    tmp = tmp_path_factory.mktemp("ray")
    store = f"ladybug://{tmp}/graph"
    model = build(tmp, _Quiet(), store, tiny_bert_dir)
    docs = [{**d, "id": f"{d['id']}-{i}"} for i in range(4) for d in DOCS]
    return store, model, write_jsonl(tmp / "docs.jsonl", docs)


def _annotate(toy, tmp_path, name: str, **kw) -> bytes:
    store, model, docs = toy
    out = tmp_path / name
    annotate_documents("dictionary:toyd", model, docs, input_format="jsonl", output=out, store=store,
                       write=False, batch_docs=2, progress=False, **kw)
    return out.read_bytes()


def test_annotate_with_two_workers_writes_the_in_process_pubtator(toy, ray_local, tmp_path):
    local = _annotate(toy, tmp_path, "local.pubtator")
    assert local.count(b"\tDisease\t") >= 16  # 4 copies of the toy documents' mentions
    assert _annotate(toy, tmp_path, "ray.pubtator", engine="ray", ray=TWO) == local


def test_a_router_given_as_routes_reaches_the_workers(toy, ray_local, tmp_path):
    """`annotate --model Disease=DIR` (a router with no directory, kgnorm.methods.router): each worker
    opens the routes it is sent, and writes the in-process bytes."""
    from kgnorm.methods.router.linker import router_meta

    store, model, docs = toy
    routes = router_meta({"Disease": model})
    out = {}
    for engine in ("local", "ray"):
        out[engine] = tmp_path / f"{engine}.jsonl"
        annotate_documents("dictionary:toyd", routes, docs, input_format="jsonl", output=out[engine],
                           output_format="jsonl", store=store, write=False, batch_docs=2, progress=False,
                           engine=engine, ray=TWO)
    assert out["ray"].read_bytes() == out["local"].read_bytes() and b'"ontology": "toyd"' in out["local"].read_bytes()


def test_a_worker_killed_mid_job_is_retried_and_the_output_is_the_same(toy, ray_local, tmp_path, monkeypatch):
    local = _annotate(toy, tmp_path, "local.pubtator")
    marker = tmp_path / "a-worker-died"
    monkeypatch.setenv(EXIT_ONCE_ENV, str(marker))
    got = _annotate(toy, tmp_path, "ray.pubtator", engine="ray", ray=TWO)
    assert marker.exists()  # a worker did exit mid-job (os._exit on its first block)
    assert got == local


def test_annotate_with_ray_writes_one_run_to_the_store(toy, ray_local, tmp_path, capsys):
    store, model, docs = toy
    report = annotate_documents("dictionary:toyd", model, docs, input_format="jsonl", output=tmp_path / "o.jsonl",
                                output_format="jsonl", store=store, batch_docs=2, progress=False, engine="ray",
                                ray=TWO)
    code, out, err = run(capsys, "query", "MATCH (m:Mention)-[:`IN`]->(d:Document) RETURN count(m) AS n",
                         "--format", "csv", "--store", store)
    assert code == 0, err
    assert report.run_uid and report.n_mentions == int(out.split()[-1]) > 0


def test_a_job_whose_workers_keep_dying_fails_in_one_line_and_leaves_the_store_unchanged(
        toy, ray_local, tmp_path, capsys, monkeypatch):
    store, model, docs = toy

    def runs() -> str:
        code, out, err = run(capsys, "query", "MATCH (r:Run) RETURN r.uid AS uid ORDER BY uid", "--format", "csv",
                             "--store", store)
        assert code == 0, err
        return out

    before = runs()
    monkeypatch.setenv(EXIT_ONCE_ENV, str(tmp_path / "no-such-folder" / "marker"))  # every try dies
    out = tmp_path / "o.pubtator"
    code, _, err = run(capsys, "annotate", "--ner", "dictionary:toyd", "--model", str(model), "--input", str(docs),
                       "--input-format", "jsonl", "--output", str(out), "--batch-size", "4", "--store", store, "-q",
                       "--engine", "ray", "--workers", "2")
    assert code != 0 and len(err.strip().splitlines()) == 1 and "a block failed after 2 retries" in err
    assert runs() == before and not out.exists()


def test_link_with_two_workers_writes_the_in_process_tsv(toy, ray_local):
    _, model, _ = toy
    mentions = ["breast cancer", "Ovarian cancers", "AT", "breast and ovarian cancer", "colorectal",
                "Louis-Bar syndrome", "breast cancer"] * 3

    def tsv(**kw) -> str:
        out = io.StringIO()
        link_mentions(model, mentions, write=False, output=out, progress=False, batch_size=4, **kw)
        return out.getvalue()

    local = tsv()
    assert local.count("\n") > len(mentions)
    assert tsv(engine="ray", ray=RayOptions(workers=2, block=5)) == local


def test_embed_with_two_workers_writes_the_in_process_vectors(toy, ray_local, tmp_path, monkeypatch):
    _, model, _ = toy
    monkeypatch.setattr("kgnorm.jobs.batch_work.EMBED_BATCH", 3)  # several blocks for two workers
    names = ["breast cancer", "ovarian cancer", "ataxia telangiectasia", "colorectal cancer", "AT", "x",
             "a much longer name of a disease"]
    local = embed_names(model, tmp_path / "local", input=names)
    remote = embed_names(model, tmp_path / "ray", input=names, engine="ray", ray=TWO)
    assert (local.n, local.dim) == (remote.n, remote.dim) == (len(names), 32)
    assert (tmp_path / "ray.npy").read_bytes() == (tmp_path / "local.npy").read_bytes()
    assert (tmp_path / "ray.tsv").read_bytes() == (tmp_path / "local.tsv").read_bytes()
    assert np.load(tmp_path / "ray.npy").std() > 0


@pytest.mark.parametrize("command", ["link", "annotate", "embed"])
def test_ray_address_with_nothing_listening_fails_in_one_line(command, toy, capsys, tmp_path):
    pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'kgnorm[ray]'")
    store, model, docs = toy
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # a free port: nothing listens there
    names = tmp_path / "names.txt"
    names.write_text("breast cancer\n", encoding="utf-8")
    args = {"link": ["--input", str(names), "--input-format", "tsv", "--no-write"],
            "annotate": ["--ner", "dictionary:toyd", "--input", str(docs), "--input-format", "jsonl", "--no-write"],
            "embed": ["--input", str(names), "--output", str(tmp_path / "v")]}[command]
    code, out, err = run(capsys, command, "--model", str(model), *args, "--store", store, "-q",
                         "--engine", "ray", "--ray-address", f"127.0.0.1:{port}")
    assert code != 0 and out == ""
    assert len(err.strip().splitlines()) == 1 and f"no Ray cluster at 127.0.0.1:{port}" in err
    assert not (tmp_path / "v.npy").exists()


def test_trained_detector_with_its_dictionary_lever_on_two_workers(toy, ray_local, tmp_path, tiny_bert_dir):
    """A trained detector's directory is loaded by the workers; the dictionary its default levers
    union with is built by the driver from the store and handed to them: the in-process bytes."""
    from test_annotate_formats import _tiny_detector

    store, model, docs = toy
    det = str(_tiny_detector(tiny_bert_dir, tmp_path / "silent", silent=True))  # finds nothing itself

    def pubtator(name: str, **kw) -> bytes:
        annotate_documents(det, model, docs, input_format="jsonl", output=tmp_path / name, store=store,
                           write=False, batch_docs=2, progress=False, **kw)
        return (tmp_path / name).read_bytes()

    local = pubtator("local.pubtator")
    assert local.count(b"\tDisease\t") >= 16  # the dictionary's multi-word names and their short forms
    assert pubtator("ray.pubtator", engine="ray", ray=TWO) == local
