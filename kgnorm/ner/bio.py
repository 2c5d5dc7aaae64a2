"""BIO token labels for a token classifier, from character spans and back, on the offsets a fast
tokenizer gives (``return_offsets_mapping``), and the overlapping windows that let any text,
however long, be read by an encoder with a fixed window.

Why offsets: every label and every predicted span is stated in characters of the original text,
so nothing is re-tokenized or re-joined and ``text[start:end] == span.text`` holds by
construction."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kgnorm.ner.spans import Span

__all__ = ["LabelSet", "Window", "token_tags", "tags_to_spans", "make_windows", "merge_windows", "BIO_REPAIRS"]

OUTSIDE = "O"


@dataclass(frozen=True)
class LabelSet:
    """The tag vocabulary of entity types ``types``: O, then B-T and I-T per type."""

    types: tuple[str, ...]

    @property
    def tags(self) -> list[str]:
        return [OUTSIDE] + [f"{p}-{t}" for t in self.types for p in ("B", "I")]

    def __len__(self) -> int:
        return 1 + 2 * len(self.types)

    def begin(self, type_: str) -> int:
        return 1 + 2 * self.types.index(type_)

    def inside(self, type_: str) -> int:
        return self.begin(type_) + 1

    def decode(self, tag: int) -> tuple[str, str | None]:
        """("O", None), ("B", type) or ("I", type)."""
        if tag <= 0:
            return OUTSIDE, None
        t = self.types[(tag - 1) // 2]
        return ("B" if (tag - 1) % 2 == 0 else "I"), t


def token_tags(offsets: Sequence[tuple[int, int]], spans: Sequence[Span], labels: LabelSet,
               ignore: int = -100) -> list[int]:
    """BIO tag of every token (``offsets`` into the text; (0, 0) marks a special token, tagged
    ``ignore``). A token overlapping a span is inside it; the first one of a span begins it."""
    tags: list[int] = []
    ordered = sorted(spans, key=lambda s: s.start)
    j, current = 0, None
    for s, e in offsets:
        if s == e:
            tags.append(ignore)
            continue
        while j < len(ordered) and ordered[j].end <= s:
            j += 1
        span = ordered[j] if j < len(ordered) and ordered[j].start < e else None
        if span is None:
            tags.append(0)
            current = None
        elif span is current:
            tags.append(labels.inside(span.type))
        else:
            tags.append(labels.begin(span.type))
            current = span
    return tags


def _word_char(c: str) -> bool:
    return c.isalnum()


BIO_REPAIRS = ("lenient", "drop", "bridge")


def tags_to_spans(text: str, offsets: Sequence[tuple[int, int]], tags: Sequence[int],
                  scores: Sequence[float], labels: LabelSet, repair: str = "lenient") -> list[Span]:
    """Spans of a tagged token sequence (content tokens in text order); a span that ends or
    starts inside a word is widened to the whole word, so "cancers" tagged "cancer"+O is
    "cancers", never half a word. An ill-formed I (after O or another type) is read by `repair`:
    ``lenient`` starts a span with it; ``drop`` reads it as O; ``bridge`` joins it to the span
    of its type that ended one token before (the O between them included), else starts one."""
    if repair not in BIO_REPAIRS:
        raise ValueError(f"unknown BIO repair {repair!r}; use one of {', '.join(BIO_REPAIRS)}")
    raw: list[tuple[int, int, str, list[float]]] = []   # (first token, last token, type, scores)
    for i, tag in enumerate(tags):
        prefix, type_ = labels.decode(int(tag))
        if prefix == OUTSIDE:
            continue
        gap = i - raw[-1][1] if raw and raw[-1][2] == type_ else 0
        if prefix == "I" and (gap == 1 or (gap == 2 and repair == "bridge")):
            first, _, t, sc = raw[-1]
            raw[-1] = (first, i, t, sc + [float(scores[i])])
        elif prefix == "I" and repair == "drop":
            continue
        else:
            raw.append((i, i, type_, [float(scores[i])]))
    out: list[Span] = []
    for first, last, type_, sc in raw:
        start, end = offsets[first][0], offsets[last][1]
        while start > 0 and _word_char(text[start - 1]) and _word_char(text[start]):
            start -= 1
        while end < len(text) and _word_char(text[end]) and _word_char(text[end - 1]):
            end += 1
        if out and start < out[-1].end:     # widening met the previous span: join them
            prev = out.pop()
            start = prev.start
        out.append(Span(start, end, text[start:end], type_, sum(sc) / len(sc)))
    return out


@dataclass
class Window:
    """One encoder window of a text: its token ids and their character offsets ((0, 0) for
    special tokens), and which text it belongs to."""

    text_index: int
    input_ids: list[int]
    offsets: list[tuple[int, int]]


def make_windows(tokenizer, texts: Sequence[str], max_length: int, stride: int) -> list[Window]:
    """Windows of at most ``max_length`` tokens; consecutive windows of a text share
    ``stride`` tokens, so every token is far from an edge in some window."""
    if not 0 <= stride < max_length - 2:
        raise ValueError(f"stride {stride} must be below the window ({max_length} tokens, "
                         "specials included)")
    enc = tokenizer(list(texts), max_length=max_length, stride=stride, truncation=True,
                    return_overflowing_tokens=True, return_offsets_mapping=True,
                    return_special_tokens_mask=True)
    out = []
    for k, ids in enumerate(enc["input_ids"]):
        special = enc["special_tokens_mask"][k]
        offs = [(0, 0) if sp else (int(s), int(e))
                for (s, e), sp in zip(enc["offset_mapping"][k], special)]
        out.append(Window(int(enc["overflow_to_sample_mapping"][k]), list(ids), offs))
    return out


def merge_windows(windows: Sequence[Window], tags: Sequence[Sequence[int]],
                  scores: Sequence[Sequence[float]], n_texts: int
                  ) -> list[tuple[list[tuple[int, int]], list[int], list[float]]]:
    """Per text: its content tokens in order, each with the tag and score of the window in
    which it lies farthest from an edge (so a mention across a window edge is read whole)."""
    best: list[dict[tuple[int, int], tuple[int, int, float]]] = [{} for _ in range(n_texts)]
    for w, wt, ws in zip(windows, tags, scores):
        content = [i for i, (s, e) in enumerate(w.offsets) if s != e]
        n = len(content)
        seen = best[w.text_index]
        for rank, i in enumerate(content):
            margin = min(rank, n - 1 - rank)
            key = w.offsets[i]
            old = seen.get(key)
            if old is None or margin > old[0]:
                seen[key] = (margin, int(wt[i]), float(ws[i]))
    out = []
    for seen in best:
        keys = sorted(seen)
        out.append((keys, [seen[k][1] for k in keys], [seen[k][2] for k in keys]))
    return out
