"""Document-level consistency of detected spans (annotate's ``--consistency``, first half), and
the occurrence search the inference-time levers of :mod:`kgnorm.ner.refine` share.

Why: a document names its diseases several times, and a detector misses some occurrences (a
short form it has no entry for, a string it tagged once but not twice). Every other
word-bounded occurrence of a detected surface string, and of a short form the document defines
for a detected long form, becomes a mention too. The second half, one concept for the mentions
that say the same thing, is :func:`kgnorm.linking.consistency.harmonize_document`."""
from __future__ import annotations

import bisect
import re
from collections.abc import Mapping, Sequence

from kgnorm.ner.spans import Span


def add_occurrences(text: str, spans: Sequence[Span], surfaces: Mapping[str, str],
                    ignore_case: bool = False) -> list[Span]:
    """`spans` plus every word-bounded occurrence in `text` of a string of `surfaces` (string ->
    type), longest first; a new span never overlaps a kept one. Sorted by start."""
    out = list(spans)
    if not surfaces:
        return sorted(out, key=lambda s: s.start)
    taken = sorted((s.start, s.end) for s in spans)
    starts = [a for a, _ in taken]
    types = {k.lower(): v for k, v in surfaces.items()} if ignore_case else dict(surfaces)
    pattern = re.compile(r"(?<![^\W_])(?:" + "|".join(re.escape(t) for t in sorted(surfaces, key=len, reverse=True))
                         + r")(?![^\W_])", re.IGNORECASE if ignore_case else 0)
    for m in pattern.finditer(text):
        a, b = m.span()
        i = bisect.bisect_right(starts, a) - 1
        if (i >= 0 and taken[i][1] > a) or (i + 1 < len(taken) and taken[i + 1][0] < b):
            continue  # overlaps a kept span
        found = m.group(0)
        out.append(Span(a, b, found, types[found.lower() if ignore_case else found], 1.0, "occurrence"))
        bisect.insort(taken, (a, b))
        starts.insert(bisect.bisect_left(starts, a), a)
    return sorted(out, key=lambda s: s.start)


def propagate_spans(text: str, spans: Sequence[Span], abbreviations: Mapping[str, str]) -> list[Span]:
    """`spans` plus the other occurrences of their surface strings and of the short forms defined
    for them; a new span never overlaps a kept one. Sorted by start."""
    if not spans:
        return []
    surfaces = {s.text: s.type for s in spans}
    lowered = {s.text.lower(): s.type for s in spans}
    for short, long in abbreviations.items():
        if long.lower() in lowered and short not in surfaces:
            surfaces[short] = lowered[long.lower()]
    return add_occurrences(text, spans, surfaces)
