"""Document-level consistency for mentions found in raw text (annotate).

Why: a document names its diseases several times; a detector misses some occurrences (a short
form it has no entry for, a string it tagged once but not twice) and a linker may send one
surface string to two concepts. Two steps, both switchable (``--consistency``):
- spans: every other word-bounded occurrence of a detected surface string, and of a short form
  the document defines for a detected long form, becomes a mention too;
- links: mentions of one document whose prepared queries are the same form one group; the group's
  concept is the one with the largest summed top-1 score, and a member adopts it unless its own
  top-1 beats its runner-up by at least `margin` (the linker is confident otherwise)."""
from __future__ import annotations

import bisect
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence

from kgnorm.linking.candidates import LinkedMention
from kgnorm.ner.spans import Span


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
    taken = sorted((s.start, s.end) for s in spans)
    out = list(spans)
    pattern = re.compile(r"(?<![^\W_])(?:" + "|".join(re.escape(t) for t in sorted(surfaces, key=len, reverse=True))
                         + r")(?![^\W_])")
    starts = [a for a, _ in taken]
    for m in pattern.finditer(text):
        a, b = m.span()
        i = bisect.bisect_right(starts, a) - 1
        if (i >= 0 and taken[i][1] > a) or (i + 1 < len(taken) and taken[i + 1][0] < b):
            continue  # overlaps a kept span
        out.append(Span(a, b, m.group(0), surfaces[m.group(0)], 1.0))
        bisect.insort(taken, (a, b))
        starts.insert(bisect.bisect_left(starts, a), a)
    return sorted(out, key=lambda s: s.start)


def harmonize(linked: Sequence[LinkedMention], margin: float = 0.1) -> int:
    """Make the mentions of one document that share their prepared queries agree (module
    docstring); returns how many mentions changed concept."""
    groups: dict[tuple[str, ...], list[LinkedMention]] = defaultdict(list)
    for lm in linked:
        groups[tuple(lm.queries)].append(lm)
    changed = 0
    for members in groups.values():
        if len(members) < 2:
            continue
        votes: dict[tuple[str, ...], float] = defaultdict(float)
        best: dict[tuple[str, ...], LinkedMention] = {}
        for lm in members:
            if lm.nil or not lm.parts or not all(lm.parts):
                continue
            key = tuple(p[0].uid for p in lm.parts)
            votes[key] += sum(p[0].score for p in lm.parts) / len(lm.parts)
            if key not in best or _top(best[key]) < _top(lm):
                best[key] = lm
        if not votes:
            continue
        winner = max(votes, key=lambda k: votes[k])
        for lm in members:
            own = tuple(p[0].uid for p in lm.parts if p) if lm.parts else ()
            if own == winner and not lm.nil:
                continue
            if not lm.nil and own and _margin(lm) >= margin:
                continue
            lm.parts, lm.nil = [list(p) for p in best[winner].parts], False
            changed += 1
    return changed


def _top(lm: LinkedMention) -> float:
    return min(p[0].score for p in lm.parts)


def _margin(lm: LinkedMention) -> float:
    """How far the top-1 is ahead of the runner-up (the weakest part's)."""
    return min((p[0].score - p[1].score) if len(p) > 1 else float("inf") for p in lm.parts)
