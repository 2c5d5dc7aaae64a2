"""`kgnorm retrain`'s partial labels: the detector learns the reviewed spans of documents nobody
marked done, the unreviewed rest adding no loss (token cross-entropy restricted to known tokens;
with a CRF, the unknown tokens marginalized), a span reviewed not a mention taught as "not this
span" (not O on its words), and the guard judges the retrained detector on the held-back reviewed
spans."""
from __future__ import annotations

import itertools

import pytest
import torch

from kgnorm.methods.ner.model import UNKNOWN, NerNet, partial_crf_loss
from kgnorm.ner.corpus import AnnotatedText
from kgnorm.ner.spans import Span
from kgnorm.review.export import ReviewedMention

TEXT = ("Patients with breast cancer were seen. Some had ovarian cancer and others had none of it. "
        "The tumor was small.")


def _m(start: int, end: int, decision: str = "accept", text: str = TEXT, doc_id: str = "p1") -> ReviewedMention:
    return ReviewedMention(doc_id, start, end, text[start:end], "Disease", decision,
                           "D:1" if decision == "accept" else "", doc_text=text)


def _span(s: str, text: str = TEXT) -> tuple[int, int]:
    i = text.index(s)
    return i, i + len(s)


def test_token_loss_ignores_unknown_tokens(tiny_bert_dir):
    """Cross-entropy: the loss with UNKNOWN tokens is the loss over the known ones alone, and an
    unknown token's emissions get no gradient."""
    from transformers import AutoModel

    net = NerNet(AutoModel.from_pretrained(str(tiny_bert_dir)), 3, crf=False, match_features=False)
    torch.manual_seed(0)
    em = torch.randn(2, 7, 3, requires_grad=True)
    mask = torch.ones(2, 7, dtype=torch.long)
    tags = torch.tensor([[-100, 1, 2, UNKNOWN, UNKNOWN, 0, -100], [-100, UNKNOWN, 0, 0, UNKNOWN, UNKNOWN, -100]])
    loss = net.loss(em, tags, mask)
    known = (tags >= 0)
    assert torch.allclose(loss, torch.nn.functional.cross_entropy(em[known], tags[known]))
    loss.backward()
    assert torch.count_nonzero(em.grad[tags == UNKNOWN]) == 0 and torch.count_nonzero(em.grad[known]) > 0
    nothing = torch.full((2, 7), UNKNOWN)
    assert net.loss(em, nothing, mask).item() == 0.0


def test_crf_loss_marginalizes_unknown_tokens():
    """CRF: exp(-loss) with unknown tokens is the sum, over every tagging of them, of the
    probability of the whole sequence (each tagging's ordinary negative log-likelihood);
    with every token known it is that likelihood; with none known it is 0."""
    from torchcrf import CRF

    torch.manual_seed(0)
    crf = CRF(3, batch_first=True)
    em = torch.randn(1, 6, 3)
    mask = torch.ones(1, 6, dtype=torch.long)
    tags = torch.tensor([[1, UNKNOWN, 0, UNKNOWN, UNKNOWN, 0]])
    n_known = 3
    got = partial_crf_loss(crf, em, tags, mask) * n_known
    unknown = [i for i in range(6) if tags[0, i] == UNKNOWN]
    total = []
    for filling in itertools.product(range(3), repeat=len(unknown)):
        full = tags.clone()
        for i, t in zip(unknown, filling):
            full[0, i] = t
        total.append(crf(em, full, mask=mask.bool(), reduction="sum"))  # log-likelihood of that tagging
    assert got.item() == pytest.approx(-torch.logsumexp(torch.stack(total), 0).item(), abs=1e-4)
    full = torch.tensor([[1, 2, 0, 1, 2, 0]])
    assert (partial_crf_loss(crf, em, full, mask) * 6).item() == pytest.approx(
        -crf(em, full, mask=mask.bool(), reduction="sum").item(), abs=1e-4)
    assert partial_crf_loss(crf, em, torch.full((1, 6), UNKNOWN), mask).item() == pytest.approx(0.0, abs=1e-5)


def test_a_rejected_span_is_not_that_span_not_o_on_its_words():
    """-log(1 - p(exactly the span)): high where the detector finds that span, near 0 where it
    finds a longer mention holding its words ("cancer" rejected, "breast cancer" found)."""
    from kgnorm.methods.ner.model import rejected_span_loss

    tags = torch.tensor([[-100, 0, 0, 0, -100]])  # [CLS] breast cancer patients [SEP]; tags only mark specials

    def emissions(path):  # confident logits for a tag path over the three words
        em = torch.full((1, 5, 3), -4.0)
        em[0, 0, 0] = em[0, 4, 0] = 4.0
        for k, t in enumerate(path, start=1):
            em[0, k, t] = 4.0
        return em.requires_grad_()

    found_alone = emissions([0, 1, 0])      # "cancer" alone: the rejected span
    found_longer = emissions([1, 2, 0])     # "breast cancer"
    loss_alone = rejected_span_loss(found_alone, [[(2, 2)]], tags)
    loss_longer = rejected_span_loss(found_longer, [[(2, 2)]], tags)
    assert loss_alone.item() > 5 and loss_longer.item() < 1e-3
    p = found_alone.softmax(-1)[0]
    assert loss_alone.item() == pytest.approx(-torch.log1p(-(p[2, 1] * (1 - p[3, 2]))).item(), rel=1e-4)
    loss_alone.backward()
    assert found_alone.grad[0, 2, 1] > 0  # descending lowers B at the rejected span's token
    assert torch.count_nonzero(found_alone.grad[0, 1]) == 0  # the word before it is left alone


def test_reviewed_spans_of_unfinished_documents_become_known_ranges():
    """A mention's span is gold, a not-a-mention span rejected, the rest unknown; each run of
    nearby reviewed spans is read with its context, offsets shifted into the piece."""
    from kgnorm.jobs.retrain_labels import partial_texts

    mentions = [("d1", "m1", _m(*_span("breast cancer")))]
    rejected = [("d1", "m2", _m(*_span("tumor"), decision="not_a_mention"))]
    part = partial_texts(mentions, rejected, ("Disease",), context=None)
    [doc] = part.texts
    assert (part.documents, part.mentions, part.rejected) == (1, 1, 1)
    assert doc.text == TEXT and [(s.start, s.end) for s in doc.spans] == [_span("breast cancer")]
    assert doc.known == [_span("breast cancer")] and doc.rejected == [_span("tumor")]

    pieces = partial_texts(mentions, rejected, ("Disease",), context=10).texts
    assert len(pieces) == 2  # the two reviewed spans lie farther apart than twice the context
    first, second = pieces
    assert first.text.startswith("Patients") and first.text.endswith("seen.")  # cut at whitespace
    assert [first.text[s.start:s.end] for s in first.spans] == ["breast cancer"]
    assert [first.text[a:b] for a, b in first.known] == ["breast cancer"] and first.rejected == []
    assert second.spans == second.known == [] and [second.text[a:b] for a, b in second.rejected] == ["tumor"]
    assert len(partial_texts(mentions, rejected, ("Disease",), context=200).texts) == 1


def test_tokens_outside_the_reviewed_spans_are_unknown(tiny_bert_dir):
    """The training windows of a partly reviewed text: B/I on the reviewed mention, UNKNOWN
    elsewhere, the span reviewed not a mention among the window's rejected spans (first and last
    token); a window with nothing known or rejected is not trained on."""
    from kgnorm.methods.ner.train import NerConfig, NerTask, build_detector

    det, _ = build_detector(tiny_bert_dir, ("Disease",), NerConfig(max_length=32, stride=8))
    b, e = _span("breast cancer")
    tb, te = _span("tumor")
    docs = [AnnotatedText("p1", TEXT, [Span(b, e, "breast cancer", "Disease")], [(b, e)], [(tb, te)]),
            AnnotatedText("p2", "Nothing was reviewed in this text at all.", [], [])]
    task = NerTask(det, docs, None, NerConfig(max_length=32, stride=8), tiny_bert_dir, {})
    assert {w.text_index for w in task.windows} == {0}
    seen = {}
    rejected = set()
    for w, tags, rej in zip(task.windows, task.tags, task.rejected):
        for (s, t), tag in zip(w.offsets, tags):
            if s != t:
                seen[(s, t)] = tag
        rejected |= {(w.offsets[i][0], w.offsets[j][1]) for i, j in rej}
    assert rejected == {(tb, te)}
    for (s, t), tag in seen.items():
        if b <= s < e:
            assert tag in (det.labels.begin("Disease"), det.labels.inside("Disease"))
        else:
            assert tag == UNKNOWN
    assert seen[min(k for k in seen if k[0] >= b)] == det.labels.begin("Disease")


def _head(ner_dir):
    from kgnorm.methods.ner.model import HEAD_FILE

    return torch.load(ner_dir / HEAD_FILE, weights_only=True)


def test_partial_labels_change_the_detector_and_the_unknown_rest_does_not(tmp_path, tiny_bert_dir):
    """Fine-tuned on the reviewed spans of an unfinished document, the detector moves; a gold span
    outside the reviewed ranges (unknown there) changes nothing: the same weights to the bit."""
    from test_annotate_formats import _tiny_detector

    from kgnorm.methods.ner.finetune import finetune_ner

    base = _tiny_detector(tiny_bert_dir, tmp_path / "ner", silent=True)
    b, e = _span("breast cancer")
    o, f = _span("ovarian cancer")
    known, rejected = [(b, e)], [_span("tumor")]
    doc = AnnotatedText("p1", TEXT, [Span(b, e, "breast cancer", "Disease")], known, rejected)
    other = AnnotatedText("p1", TEXT, [Span(b, e, "breast cancer", "Disease"), Span(o, f, "ovarian cancer", "Disease")],
                          known, rejected)
    a = finetune_ner(base, [doc], tmp_path / "a", max_minutes=None, epochs=3, seed=0, quiet=True)
    finetune_ner(base, [other], tmp_path / "b", max_minutes=None, epochs=3, seed=0, quiet=True)
    assert a.steps > 0
    before, after, again = _head(base), _head(tmp_path / "a"), _head(tmp_path / "b")
    assert not torch.equal(before["classifier.bias"], after["classifier.bias"])
    assert all(torch.equal(after[k], again[k]) for k in after)
    # the reviewed mention's first token now leans to B-Disease more than the given detector did
    from kgnorm.methods.ner.model import load_ner

    def b_logit(d):
        det = load_ner(d, precision="fp32")
        w = det.windows([TEXT])[0]
        i = next(k for k, (s, _) in enumerate(w.offsets) if s == b)
        batch = det.tensors([w], None, [0])
        em = det.net.emissions(batch["input_ids"], batch["attention_mask"], None)[0, i]
        return (em[1] - em[0]).item()
    assert b_logit(tmp_path / "a") > b_logit(base)


def test_span_scores_count_only_what_was_reviewed():
    """Unfinished document: a found span is right on a reviewed mention, wrong on a span reviewed
    not a mention, not counted elsewhere; done document: every other found span is wrong."""
    from kgnorm.jobs.retrain_labels import held_back_spans, span_prf

    t2 = "Asthma and colds. Asthma again."
    rows = [("d1", "m1", _m(*_span("breast cancer"))), ("d2", "m3", _m(0, 6, text=t2, doc_id="p2"))]
    rejected = [("d1", "m2", _m(*_span("tumor"), decision="not_a_mention"))]
    reviewed = held_back_spans(rows, rejected, {"d2"})
    assert reviewed.spans == 3 and reviewed.done == {"d2"}
    found = {"d1": {_span("breast cancer"), _span("tumor"), _span("ovarian cancer")},  # ovarian: unreviewed, ignored
             "d2": {(0, 6), (11, 16)}}                                                 # colds: wrong, d2 is done
    s = span_prf(reviewed, found)
    assert (s["tp"], s["fp"], s["fn"]) == (2, 2, 0) and s["precision"] == 0.5 and s["recall"] == 1.0
    assert span_prf(reviewed, {})["f1"] == 0.0


def test_the_guard_keeps_the_detector_that_finds_the_held_back_reviews(tmp_path, tiny_bert_dir):
    """The held-back reviews are the spans one detector finds: the detector that finds nothing loses
    to it (not kept when it is the retrained one; kept when the given one is the silent one); a
    detector with the F1 but not the recall of the given one is not kept either."""
    from test_annotate_formats import _tiny_detector
    from test_retrain import _detector_bytes

    from kgnorm.jobs.retrain import RetrainReport, _judge_spans
    from kgnorm.methods.ner.model import load_ner

    tagger = _tiny_detector(tiny_bert_dir, tmp_path / "tagger", silent=False)
    silent = _tiny_detector(tiny_bert_dir, tmp_path / "silent", silent=True)
    found = load_ner(tagger).detect([TEXT])[0]
    assert found, "the random head tags something"
    test = [("d1", f"m{i}", _m(s.start, s.end)) for i, s in enumerate(found)]
    for given, retrained, kept in ((tagger, silent, False), (silent, tagger, True)):
        out = tmp_path / f"out-{kept}"
        _tiny_detector(tiny_bert_dir, out / "ner", silent=retrained == silent)
        report, hb = RetrainReport(out, ner={"documents": 0, "steps": 1}), {}
        _judge_spans(given, out, test, [], set(), hb, report, 1)
        assert hb["spans"] == len(found)
        assert ("kept_given" not in report.ner) == kept
        assert _detector_bytes(out / "ner") == _detector_bytes(retrained if kept else given)
        assert hb["spans_after"]["f1"] == 1.0
    # the retrained detector finds the same spans: F1 and recall tie, kept; with one reviewed
    # mention fewer found by it (its span reviewed by nobody else), its recall falls: not kept
    out = tmp_path / "out-tie"
    _tiny_detector(tiny_bert_dir, out / "ner", silent=False)
    report, hb = RetrainReport(out, ner={"documents": 0, "steps": 1}), {}
    _judge_spans(tagger, out, test, [], set(), hb, report, 1)
    assert "kept_given" not in report.ner
    from kgnorm.jobs.retrain_labels import loses

    given = {"f1": 0.375, "recall": 1.0}
    assert loses(given, {"f1": 0.5, "recall": 0.5556})   # finds less: better on the reviews, not kept
    assert loses(given, {"f1": 0.3, "recall": 1.0}) and not loses(given, {"f1": 0.4, "recall": 1.0})
