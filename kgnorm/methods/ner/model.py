"""The trained mention detector: a Hugging Face encoder with a BIO token-classification head,
optionally a CRF on top (pytorch-crf) and a dictionary-match feature (the B/I/O tag of an
ontology-name match, as an embedding added to the token embeddings).

:class:`NerDetector` is a :class:`~kgnorm.ner.spans.MentionDetector`: it reads every text in
overlapping windows (:func:`~kgnorm.ner.bio.make_windows`), so a text of any length is
annotated and a mention at a window edge is read from the window where it sits in the middle.
:func:`load_ner` loads one from its model directory."""
from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from kgnorm.errors import KgnormError
from kgnorm.methods.ner.runtime import Emissions, make_emissions, resolve_precision
from kgnorm.ner.bio import LabelSet, Window, make_windows, merge_windows, tags_to_spans, token_tags
from kgnorm.ner.refine import SpanRefinements, refinements_from_meta, refine_spans
from kgnorm.ner.spans import Span

__all__ = ["NerNet", "NerDetector", "load_ner", "keep_layers", "METHOD", "MATCH_TAGS", "UNKNOWN"]

METHOD = "ner"
HEAD_FILE = "head.pt"
NAMES_FILE = "dictionary-names.txt"
MATCH_TAGS = LabelSet(("match",))     # O / B-match / I-match: 3 values
UNKNOWN = -1  # the tag of a token nobody labelled (a partly reviewed document): no loss of its own


def keep_layers(encoder: nn.Module, n: int) -> nn.Module:
    """Keep the first `n` transformer layers of a Hugging Face encoder (a smaller, faster
    detector that starts from the pretrained lower layers). ``config.num_hidden_layers`` is set
    to `n`, so the saved ``config.json`` rebuilds the same shape on loading."""
    total = int(getattr(encoder.config, "num_hidden_layers", 0) or 0)
    stacks = [m for m in encoder.modules() if isinstance(m, nn.ModuleList) and len(m) == total]
    if not stacks:
        raise KgnormError(f"cannot find the {total} transformer layers of {type(encoder).__name__} "
                          "to keep a prefix of (--layers)")
    if not 1 <= n <= total:
        raise KgnormError(f"--layers must be between 1 and the encoder's {total} layers, not {n}")
    stack = stacks[0]
    for _ in range(total - n):
        del stack[n]
    encoder.config.num_hidden_layers = n
    return encoder


class NerNet(nn.Module):
    """Encoder -> dropout -> linear emissions (-> CRF). With ``match_features`` a zero-initialised
    embedding of the dictionary-match tag is added to the word embeddings, so training starts
    from the plain encoder and learns how much the dictionary is worth."""

    def __init__(self, encoder: nn.Module, n_tags: int, crf: bool, match_features: bool,
                 dropout: float = 0.1) -> None:
        super().__init__()
        self.encoder = encoder
        hidden = int(encoder.config.hidden_size)
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(hidden, n_tags)
        self.match = None
        if match_features:
            self.match = nn.Embedding(len(MATCH_TAGS), hidden)
            nn.init.zeros_(self.match.weight)
        self.crf = None
        if crf:
            from torchcrf import CRF

            self.crf = CRF(n_tags, batch_first=True)

    def emissions(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                  match_tags: torch.Tensor | None = None) -> torch.Tensor:
        if self.match is not None and match_tags is not None:
            embeds = self.encoder.get_input_embeddings()(input_ids) + self.match(match_tags)
            hidden = self.encoder(inputs_embeds=embeds, attention_mask=attention_mask).last_hidden_state
        else:
            hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return self.classifier(self.dropout(hidden))

    def loss(self, emissions: torch.Tensor, tags: torch.Tensor, attention_mask: torch.Tensor,
             rejected: Sequence[Sequence[tuple[int, int]]] = ()) -> torch.Tensor:
        """The token loss (:meth:`token_loss`) plus, for `rejected` spans (per row, first and last
        token), :func:`rejected_span_loss`."""
        loss = self.token_loss(emissions, tags, attention_mask)
        if any(rejected):
            loss = loss + rejected_span_loss(emissions, rejected, tags)
        return loss

    def token_loss(self, emissions: torch.Tensor, tags: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Token cross-entropy (special, padding and UNKNOWN tokens ignored), or the CRF's negative
        log-likelihood per token (special tokens count as O: the CRF needs a dense sequence). With
        UNKNOWN tokens the CRF's loss is the partial-label one: -log of the probability of every
        path that agrees with the known tags (the unknown ones marginalized), per known token."""
        known = (tags != UNKNOWN) & (tags != -100)
        if not bool(known.any()):
            return emissions.sum() * 0.0  # nothing labelled in the batch: no loss, no gradient
        if self.crf is None:
            return nn.functional.cross_entropy(emissions.reshape(-1, emissions.shape[-1]),
                                               tags.masked_fill(tags == UNKNOWN, -100).reshape(-1), ignore_index=-100)
        if not bool((tags == UNKNOWN).any()):
            return -self.crf(emissions, tags.clamp(min=0), mask=attention_mask.bool(), reduction="token_mean")
        return partial_crf_loss(self.crf, emissions, tags, attention_mask)

    def decode(self, emissions: torch.Tensor, attention_mask: torch.Tensor) -> tuple[list[list[int]], torch.Tensor]:
        """(tags per sequence, per-token confidence = the softmax probability of the emissions)."""
        probs = emissions.softmax(-1)
        if self.crf is None:
            conf, best = probs.max(-1)
            return best.tolist(), conf
        paths = self.crf.decode(emissions, mask=attention_mask.bool())
        conf = torch.zeros(attention_mask.shape, dtype=probs.dtype)
        for i, path in enumerate(paths):
            idx = torch.tensor(path, dtype=torch.long)
            conf[i, :len(path)] = probs[i, torch.arange(len(path)), idx]
        return [p + [0] * (attention_mask.shape[1] - len(p)) for p in paths], conf


def partial_crf_loss(crf: Any, emissions: torch.Tensor, tags: torch.Tensor,
                     attention_mask: torch.Tensor) -> torch.Tensor:
    """log Z - log Z(known): the CRF's normalizer over all paths minus the one over the paths whose
    tag is the known one wherever a token is known (special tokens: O; UNKNOWN: any tag), so an
    unknown token adds no label and a window with every token known gets the ordinary
    negative log-likelihood (Tsuboi et al. 2008, "Training CRFs with incomplete annotations").
    Divided by the number of known tokens in the batch (cross-entropy's mean, restricted)."""
    mask = attention_mask.bool()
    fixed = tags.clamp(min=0)                            # -100 (special/padding) -> O
    unknown = tags == UNKNOWN
    allowed = torch.nn.functional.one_hot(fixed, emissions.shape[-1]).bool() | unknown.unsqueeze(-1)
    constrained = emissions.masked_fill(~allowed, -1e4)
    em, cm, m = emissions.transpose(0, 1), constrained.transpose(0, 1), mask.transpose(0, 1)
    log_z = crf._compute_normalizer(em, m)
    log_z_known = crf._compute_normalizer(cm, m)
    n_known = (mask & ~unknown).sum().clamp(min=1)
    return (log_z - log_z_known).sum() / n_known


def rejected_span_loss(emissions: torch.Tensor, rejected: Sequence[Sequence[tuple[int, int]]],
                       tags: torch.Tensor) -> torch.Tensor:
    """Mean over the rejected spans of -log(1 - p(exactly that span)): p = p(B at its first token) x
    p(I at the others) x p(not I at the next content token), summed over the types (from the
    emissions' softmax; with a CRF, an approximation). The detector learns not to find that very
    span -- not that its words are O: a span reviewed "not a mention" for its boundaries ("cancer" of
    "breast cancer") would otherwise teach O on a mention's words."""
    logp = emissions.log_softmax(-1)
    n_types = (emissions.shape[-1] - 1) // 2
    terms = []
    for row, spans in enumerate(rejected):
        for first, last in spans:
            per_type = []
            for k in range(n_types):
                b, i = 1 + 2 * k, 2 + 2 * k
                lp = logp[row, first, b] + logp[row, first + 1:last + 1, i].sum()
                nxt = last + 1
                if nxt < tags.shape[1] and int(tags[row, nxt]) != -100:  # a content token follows
                    lp = lp + torch.log1p(-logp[row, nxt, i].exp().clamp(max=1 - 1e-6))
                per_type.append(lp)
            p = torch.logsumexp(torch.stack(per_type), 0).exp().clamp(max=1 - 1e-6)
            terms.append(-torch.log1p(-p))
    return torch.stack(terms).mean() if terms else emissions.sum() * 0.0


def pad_batch(rows: Sequence[Sequence[int]], value: int) -> torch.Tensor:
    width = max(len(r) for r in rows)
    return torch.tensor([list(r) + [value] * (width - len(r)) for r in rows], dtype=torch.long)


class NerDetector:
    """A trained token classifier as a :class:`~kgnorm.ner.spans.MentionDetector`."""

    # annotate's documents per `tag` call: windows sorted by length over 128 documents fill the
    # padded rows 97 % against 89 % over 32 (benchmarks/LOG.md, "windows packed over 128 documents")
    pack_documents = 128

    def __init__(self, net: NerNet, tokenizer: Any, labels: LabelSet, max_length: int = 256,
                 stride: int = 64, names: Sequence[str] | None = None, batch_size: int = 16,
                 device: str | None = None, emissions: Emissions | None = None) -> None:
        if net.match is not None and not names:
            raise KgnormError("a detector trained with dictionary features needs the dictionary's names")
        self.net, self.tokenizer, self.labels = net, tokenizer, labels
        self._tokenizing = threading.Lock()
        self.types: tuple[str, ...] = labels.types
        self.max_length, self.stride = int(max_length), int(stride)
        self.names = list(names or []) if net.match is not None else []
        self.dictionary = dictionary_detector(self.names) if self.names else None
        self.batch_size = int(batch_size)
        # inference-time refinements (kgnorm.ner.refine); `dictionary_tagger`: the dictionary tagger whose
        # multi-word matches the ``dictionary`` lever adds (set by whoever knows the ontology)
        self.refinements = SpanRefinements()
        self.dictionary_tagger: Any = None
        self.device = torch.device(device or "cpu")
        self.net.to(self.device)
        # how the network runs (kgnorm.methods.ner.runtime): load_ner picks it; float32 torch here
        self.run = emissions or Emissions(net, "fp32")

    def __getstate__(self) -> dict[str, Any]:   # a lock does not pickle (a detector sent to Ray)
        return {k: v for k, v in self.__dict__.items() if k != "_tokenizing"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._tokenizing = threading.Lock()

    # ------------------------------------------------------------------ inputs
    def windows(self, texts: Sequence[str]) -> list[Window]:
        # a fast tokenizer sets its truncation on each call: two threads detecting at once
        # (kgnorm.jobs.overlap) would race on it ("Already borrowed"), so one call at a time
        with self._tokenizing:
            return make_windows(self.tokenizer, texts, self.max_length, self.stride)

    def match_tags(self, texts: Sequence[str], windows: Sequence[Window]) -> list[list[int]] | None:
        """The dictionary-match tag of every window token (None without dictionary features)."""
        if self.dictionary is None:
            return None
        found = self.dictionary.detect(list(texts))
        spans = [[Span(s.start, s.end, s.text, "match") for s in f] for f in found]
        return [[max(t, 0) for t in token_tags(w.offsets, spans[w.text_index], MATCH_TAGS)]
                for w in windows]

    def tensors(self, windows: Sequence[Window], match: Sequence[Sequence[int]] | None,
                rows: Sequence[int]) -> dict[str, torch.Tensor]:
        pad = int(self.tokenizer.pad_token_id or 0)
        ids = [windows[i].input_ids for i in rows]
        out = {"input_ids": pad_batch(ids, pad).to(self.device),
               "attention_mask": pad_batch([[1] * len(r) for r in ids], 0).to(self.device)}
        out["match_tags"] = pad_batch([match[i] for i in rows], 0).to(self.device) if match is not None else None
        return out

    # ------------------------------------------------------------------ inference
    def detect(self, texts: Sequence[str]) -> list[list[Span]]:
        texts = list(texts)
        if not texts:
            return []
        spans = [tags_to_spans(text, offs, t, s, self.labels, self.refinements.repair)
                 for text, (offs, t, s) in zip(texts, self.tag(texts))]
        return refine_spans(texts, spans, self.refinements, self.dictionary_tagger)

    @torch.inference_mode()
    def tag(self, texts: Sequence[str]) -> list[tuple[list[tuple[int, int]], list[int], list[float]]]:
        """Per text: its content tokens' offsets, tags and confidences (windows merged). The
        windows of all `texts` are read together, shortest first, `batch_size` at a time, on the
        path of ``self.run`` (float32, bfloat16 autocast or ONNX Runtime int8)."""
        windows = self.windows(texts)
        match = self.match_tags(texts, windows)
        tags: list[list[int]] = [[] for _ in windows]
        scores: list[list[float]] = [[] for _ in windows]
        order = sorted(range(len(windows)), key=lambda i: len(windows[i].input_ids))
        was_training = self.net.training
        self.net.eval()
        try:
            for k in range(0, len(order), self.batch_size):
                rows = order[k:k + self.batch_size]
                batch = self.tensors(windows, match, rows)
                em = self.run(batch["input_ids"], batch["attention_mask"], batch["match_tags"])
                best, conf = self.net.decode(em, batch["attention_mask"])
                for j, i in enumerate(rows):
                    n = len(windows[i].input_ids)
                    tags[i], scores[i] = best[j][:n], conf[j, :n].tolist()
        finally:
            self.net.train(was_training)
        return merge_windows(windows, tags, scores, len(texts))

    # ------------------------------------------------------------------ files
    def save(self, directory: str | Path, meta: dict[str, Any]) -> None:
        """The encoder (Hugging Face files in ``encoder/``), the head, the dictionary's names
        and ``kgnorm-model.json`` (``meta``: what the trainer adds: metrics, data, ontology)."""
        from kgnorm.methods.model_dir import write_model_meta

        d = Path(directory)
        (d / "encoder").mkdir(parents=True, exist_ok=True)
        self.net.encoder.save_pretrained(str(d / "encoder"))
        self.tokenizer.save_pretrained(str(d / "encoder"))
        head = {k: v for k, v in self.net.state_dict().items() if not k.startswith("encoder.")}
        torch.save(head, d / HEAD_FILE)
        if self.dictionary is not None:
            (d / NAMES_FILE).write_text("\n".join(self.names) + "\n", encoding="utf-8")
        write_model_meta(d, {"method": METHOD, "types": list(self.types), "tags": self.labels.tags,
                             "crf": self.net.crf is not None,
                             "dictionary_features": self.net.match is not None,
                             "layers": int(self.net.encoder.config.num_hidden_layers),
                             "max_length": self.max_length, "stride": self.stride,
                             "encoder": {"path": "encoder"}, **meta})


def dictionary_detector(names: Sequence[str]) -> Any:
    """The dictionary tagger whose matches feed the match feature."""
    from kgnorm.ner.dictionary import DictionaryDetector

    return DictionaryDetector(names, type="match")


def load_ner(model_dir: str | Path, device: str | None = None, precision: str | None = None,
             threads: int | None = None) -> NerDetector:
    """The detector saved in ``model_dir`` by ``kgnorm train ner``, its network on the path
    `precision` names (auto, fp32, bf16, int8; None: ``KGNORM_NER_PRECISION``, else auto; see
    kgnorm.methods.ner.runtime); `threads`: ONNX Runtime's intra-op threads on the int8 path."""
    from transformers import AutoModel, AutoTokenizer

    from kgnorm.encoders.dense import _quiet_hf_bars
    from kgnorm.methods.model_dir import read_model_meta

    d = Path(model_dir)
    meta = read_model_meta(d)
    if meta["method"] != METHOD:
        raise KgnormError(f"{d} holds a {meta['method']!r} model, not a mention detector (train one "
                          "with `kgnorm train ner`)")
    with _quiet_hf_bars():
        tokenizer = AutoTokenizer.from_pretrained(str(d / "encoder"), local_files_only=True)
        encoder = AutoModel.from_pretrained(str(d / "encoder"), local_files_only=True)
    labels = LabelSet(tuple(meta["types"]))
    net = NerNet(encoder, len(labels), bool(meta.get("crf")), bool(meta.get("dictionary_features")))
    net.load_state_dict(torch.load(d / HEAD_FILE, map_location="cpu", weights_only=True), strict=False)
    names = (d / NAMES_FILE).read_text(encoding="utf-8").splitlines() if net.match is not None else None
    net.eval()
    det = NerDetector(net, tokenizer, labels, meta.get("max_length", 256), meta.get("stride", 64),
                      names, device=device, emissions=make_emissions(net, resolve_precision(precision), d, threads))
    det.refinements = refinements_from_meta(meta)
    return det
