"""A document's text cut into plain and highlighted pieces on the server: the template writes each
piece escaped, so text and names can never become markup. Overlapping mentions split the text at
every boundary; a piece covered by several mentions belongs to the shortest (the most specific) and
names the others in `also`."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

LOW_SCORE = 0.5  # a machine link scored below this is marked as doubtful
PALETTE = 8  # entity types cycle through this many colours (t0 .. t7 in app.css)
# PubTator's types keep one colour on every page; any other type takes the next colour free on its page
KNOWN_TYPES = ("Disease", "Chemical", "Gene", "Species", "Mutation", "CellLine", "Phenotype")


@dataclass
class Piece:
    start: int
    text: str
    mention: str = ""
    classes: str = ""
    title: str = ""
    also: list[str] = field(default_factory=list)


def type_class(typ: str, types: list[str]) -> str:
    """A colour per entity type: a known type's own on every page (KNOWN_TYPES), any other the next
    one free on this page (`types`: the other types in the order they first appear)."""
    if typ in KNOWN_TYPES:
        return f"t{KNOWN_TYPES.index(typ) % PALETTE}"
    if typ not in types:
        types.append(typ)
    return f"t{(len(KNOWN_TYPES) + types.index(typ)) % PALETTE}"


def type_legend(mentions: Sequence[dict[str, Any]]) -> list[tuple[str, str, int]]:
    """(type, its colour class, how many mentions) of a page's types, in the order they appear: the
    legend and the type filter of the document page."""
    types: list[str] = []
    counts: dict[str, int] = {}
    for m in mentions:
        t = m.get("type") or ""
        counts[t] = counts.get(t, 0) + 1
    seen = [t for t in dict.fromkeys(m.get("type") or "" for m in mentions)]
    return [(t, type_class(t, types), counts[t]) for t in seen]


def mark_classes(m: dict[str, Any]) -> list[str]:
    """State classes of a mention: reviewed (and pending while not in the store yet), nil (no concept
    now), low (a machine link scored below LOW_SCORE), conflict (two reviewers' answers differ). The
    page's script takes these from /api/documents as they are: the rule lives here only."""
    out = ["conflict"] if m.get("conflict") else []
    review = m.get("review")
    if review:
        out += ["reviewed", "pending"] if review.get("pending") else ["reviewed"]
    if not m.get("concept"):
        out.append("nil")
    elif not review and m.get("score") is not None and m["score"] < LOW_SCORE:
        out.append("low")
    return out


def mark_title(m: dict[str, Any]) -> str:
    concept = f"{m['concept_name']} ({m['concept']})" if m.get("concept") else "no concept (nil)"
    review = m.get("review")
    if review:
        concept += f" - {review['decision']}" + (f" by {review['reviewer']}" if review.get("reviewer") else "")
        concept += " (pending)" if review.get("pending") else ""
    return f"{m.get('type') or 'mention'}: {concept}"


def placed(text: str, mentions: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(mentions whose offsets fit the text, the rest): the rest are listed under the text."""
    ok, bad = [], []
    for m in mentions:
        s, e = m.get("start"), m.get("end")
        fits = isinstance(s, int) and isinstance(e, int) and 0 <= s < e <= len(text)
        (ok if fits else bad).append(m)
    return ok, bad


def segments(text: str, mentions: Sequence[dict[str, Any]]) -> list[Piece]:
    """The text as consecutive pieces, each plain or one mention's highlight."""
    types: list[str] = []
    cls = {m["uid"]: " ".join([type_class(m.get("type") or "", types), *mark_classes(m)]) for m in mentions}
    cuts = sorted({0, len(text), *(m["start"] for m in mentions), *(m["end"] for m in mentions)})
    out: list[Piece] = []
    for a, b in zip(cuts, cuts[1:]):
        covering = sorted((m for m in mentions if m["start"] <= a and m["end"] >= b),
                          key=lambda m: (m["end"] - m["start"], m["start"], m["uid"]))
        if not covering:
            piece = Piece(a, text[a:b])
        else:
            top = covering[0]
            piece = Piece(a, text[a:b], top["uid"], cls[top["uid"]], mark_title(top), [m["uid"] for m in covering[1:]])
        last = out[-1] if out else None
        if last is not None and (last.mention, last.also) == (piece.mention, piece.also):
            last.text += piece.text
        else:
            out.append(piece)
    return out
