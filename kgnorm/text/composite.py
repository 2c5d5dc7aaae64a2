"""Composite-mention splitting (rules in the spirit of D'Souza & Ng 2015).

Why: NCBI-disease and BC5CDR annotate coordinations such as "breast and ovarian cancer" as
one mention with one concept per part; the linker must query each part ("breast cancer",
"ovarian cancer") and a composite counts as right only if every part is (the linking protocol of
docs/architecture.md, "Evaluation protocols").

A coordination ``S0 , S1 , ... (and|or|and/or|/) Sk`` is read in one of these ways:

A  shared head to the right (and shared modifiers to the left):
   "hereditary breast and ovarian cancer" -> "hereditary breast cancer", "hereditary ovarian cancer"
   "type I and II diabetes" -> "type I diabetes", "type II diabetes"
B  a head and preposition distributed over the conjuncts:
   "deficiency of C6 and C7" -> "deficiency of C6", "deficiency of C7"
C  a shared prepositional phrase to the right (weak):
   "degeneration and death of neurons" -> "degeneration of neurons", "death of neurons"
D  a shared modifier to the left, no head: "pancreatic cysts and tumors"
E  full conjuncts: "pain and visual disturbance", "breast cancer and ovarian cancer"

A bare "/" counts as a coordinator ("Duchenne/Becker muscular dystrophy") but only as a weak
one: it also joins single names ("glucose/galactose malabsorption") and synonyms.

Without a gold part count only unambiguous readings (one coordination, short conjuncts,
kinds A/B/D/E) split; with a count, weaker readings (kind C, several coordinations, a hyphen
as in "breast-ovarian cancer") may be used to reach it.
"""
from __future__ import annotations

import re
from collections.abc import Container

from kgnorm.text.normalize import normalize

__all__ = ["split_composite", "candidate_splits"]

# "head and neck" is one anatomical unit, never a coordination of its own
_TOKEN = re.compile(r"head and neck(?![^\s,;()/])|and/or(?![^\s,;()/])|[^\s,;()/]+|[,;()/]",
                    re.IGNORECASE)
_QUOTES = re.compile(r"^[\"'`\u2018\u2019\u201c\u201d]+$")
_HYPHENATED = re.compile(r"^([^\W_][\w']*)-([^\W_][\w'-]*)$")

COORDINATORS = frozenset({"and", "or", "and/or", "&", "/"})
_WORD_COORDINATORS = frozenset({"and", "or", "and/or", "&"})
PREPOSITIONS = frozenset({"of", "in", "to", "with", "on", "at", "for", "affecting",
                          "involving", "within"})
_DETERMINERS = frozenset({"the", "a", "an"})
# words that continue a modifier rather than start the head: "squamous cell", "soft tissue",
# "central nervous system"
_MODIFIER_CONTINUATION = frozenset({"cell", "cells", "tissue", "tissues", "system", "systems",
                                    "nervous", "node", "nodes", "marrow", "tract", "duct",
                                    "ducts"})
_NEGATION_PREFIXES = frozenset({"non", "not"})
_HEAD_WORDS = frozenset("""
cancer cancers carcinoma carcinomas tumor tumors tumour tumours neoplasm neoplasms disease
diseases syndrome syndromes disorder disorders deficiency deficiencies defect defects
abnormality abnormalities anomaly anomalies malformation malformations lesion lesions cyst
cysts polyp polyps infection infections failure injury injuries pain seizure seizures palsy
retardation loss toxicity dysfunction damage ulcer ulcers fever cataract cataracts dystrophy
dystrophies epilepsy deafness blindness hypertension stroke inflammation hemorrhage
haemorrhage obesity diabetes asthma
""".split())
_HEAD_SUFFIXES = ("oma", "omas", "itis", "osis", "oses", "emia", "aemia", "pathy", "pathies",
                  "plasia", "trophy", "algia", "ism", "isms", "ia", "ias", "iasis", "cele")
# hyphenated tokens that are one word, not a coordination ("co-infected", "non-syndromic")
_HYPHEN_PREFIXES = frozenset("""
non co anti pre post sub semi multi early late x self de re auto neuro over under mid inter
intra trans extra hyper hypo pseudo poly bi tri well ill low high cross long short in un ex
""".split())

# candidate quality: lower is better; only _CLEAR splits without a gold part count
_CLEAR, _MULTI, _WEAK, _COMBINED, _HYPHEN = range(5)


def _is_head(word: str) -> bool:
    """Does `word` look like a disease head noun (so it ends a full conjunct)?"""
    w = word.lower()
    return w in _HEAD_WORDS or (len(w) > 4 and w.endswith(_HEAD_SUFFIXES))


def _tokens(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text) if not _QUOTES.match(t)]


def _drop_parentheses(toks: list[str]) -> list[str]:
    """Drop parenthesised asides ("ventricular septal (VSD) and midline (MD) defects") when a
    coordinator stands outside them; otherwise only the brackets ("deficiencies (C2 and C7)")."""
    if "(" not in toks and ")" not in toks:
        return toks
    depth = 0
    outside: list[str] = []
    for t in toks:
        if t == "(":
            depth += 1
        elif t == ")":
            depth = max(0, depth - 1)
        elif depth == 0:
            outside.append(t)
    if any(t.lower() in COORDINATORS for t in outside[1:-1]):
        return outside
    return [t for t in toks if t not in ("(", ")")]


def _join(*chunks: list[str]) -> str:
    """Join token chunks, dropping a word repeated across a seam ("of the" + "the ovaries")."""
    out: list[str] = []
    for chunk in chunks:
        for i, t in enumerate(chunk):
            if i == 0 and out and out[-1].lower() == t.lower():
                continue
            out.append(t)
    return re.sub(r" ([,;])", r"\1", " ".join(out)).strip(" ,;")


def _groups(toks: list[str]) -> list[tuple[str, list[str], list[list[str]], list[str]]]:
    """Every coordination as (coordinator, S0, middle conjuncts, Sk); commas join a list only
    when they precede its final coordinator without a preposition or another coordinator
    between."""
    found = []
    for c, tok in enumerate(toks):
        low = tok.lower()
        if low not in COORDINATORS or c == 0 or c == len(toks) - 1:
            continue
        seps: list[int] = []
        if low in _WORD_COORDINATORS:
            for k in range(c - 1, 0, -1):
                t = toks[k].lower()
                if t in COORDINATORS or t in PREPOSITIONS or t == ";":
                    break
                if t == ",":
                    seps.append(k)
        # a comma right before the coordinator (serial comma) separates nothing
        bounds = sorted(k for k in seps if k != c - 1) + [c]

        def end_of(k: int) -> int:
            return k - 1 if toks[k - 1] == "," else k

        s0 = toks[:end_of(bounds[0])]
        mids = [toks[bounds[i] + 1:end_of(bounds[i + 1])] for i in range(len(bounds) - 1)]
        sk = toks[c + 1:]
        if s0 and sk and all(mids):
            found.append((low, s0, mids, sk))
    return found


def _analyse(s0: list[str], mids: list[list[str]], sk: list[str]) -> tuple[list[str], bool]:
    """Parts for one coordination and whether the reading is clear (see module docstring)."""
    low0 = [t.lower() for t in s0]
    lowk = [t.lower() for t in sk]
    p = next((i for i in range(len(s0) - 2, 0, -1) if low0[i] in PREPOSITIONS), None)
    q = next((i for i in range(1, len(sk)) if lowk[i] in PREPOSITIONS), None)
    longest_mid = max((len(m) for m in mids), default=0)

    if p is not None:  # B: "deficiency of X and Y"
        start = p + 1
        if low0[start] in _DETERMINERS and start < len(s0) - 1:
            start += 1
        after = s0[start:]
        right = sk[1:] if lowk[0] in _DETERMINERS and len(sk) > 1 else sk
        a = max(1, min(len(after), max(len(right), longest_mid)))
        prefix, left = s0[:-a], s0[-a:]
        parts = [_join(prefix, left)] + [_join(prefix, m) for m in mids] + [_join(prefix, right)]
        clear = a <= 3 and len(right) <= 3 and longest_mid <= 3
        return parts, clear

    if q is not None:  # C: "X and Y of Z"
        head = sk[q:]
        parts = [_join(s0, head)] + [_join(m, head) for m in mids] + [_join(sk[:q], head)]
        return parts, False

    if lowk[0] in _DETERMINERS and len(sk) > 1:
        sk, lowk = sk[1:], lowk[1:]

    if len(sk) == 1 or _is_head(s0[-1]) or low0[-1] == lowk[-1]:
        if len(s0) == 1 or len(sk) > 1:  # E: full conjuncts
            parts = [_join(s0)] + [_join(m) for m in mids] + [_join(sk)]
            clear = max(len(s0), len(sk), longest_mid) <= 4
            return parts, clear
        a = 1  # D: shared modifier to the left: "pancreatic cysts and tumors", "type I and II"
        while a < len(s0) - 1 and low0[-a] in _MODIFIER_CONTINUATION:
            a += 1
        prefix, left = s0[:-a], s0[-a:]
        parts = [_join(prefix, left)] + [_join(prefix, m) for m in mids] + [_join(prefix, sk)]
        return parts, longest_mid <= 3

    # A: shared head to the right, modifiers to the left
    if low0[-1] in lowk[1:-1]:
        # the left conjunct's last word recurs on the right: "subtotal C6 and complete C6
        # deficiency" -> the head starts after it
        j = lowk.index(low0[-1], 1)
        right, head = sk[:j + 1], sk[j + 1:]
        parts = [_join(s0, head)] + [_join(m, head) for m in mids] + [_join(right, head)]
        return parts, max(len(s0), len(right), longest_mid) <= 3
    a = 1
    while a < len(s0) and low0[-a] in _MODIFIER_CONTINUATION:
        a += 1
    if a < len(s0) and low0[-a - 1] in _NEGATION_PREFIXES:
        a += 1
    b = 1
    if lowk[0] in _NEGATION_PREFIXES and len(sk) > 2:
        b = 2
    while b < len(sk) - 1 and lowk[b] in _MODIFIER_CONTINUATION:
        b += 1
    prefix, left = s0[:-a], s0[-a:]
    if prefix and lowk[0] == prefix[-1].lower() and b < len(sk) - 1:
        # parallel repetition: "type I and type II diabetes"
        prefix, left = prefix[:-1], [prefix[-1]] + left
        b += 1
    right, head = sk[:b], sk[b:]
    parts = ([_join(prefix, left, head)] + [_join(prefix, m, head) for m in mids]
             + [_join(prefix, right, head)])
    clear = max(len(left), len(right), longest_mid) <= 3
    return parts, clear


def _group_candidates(toks: list[str]) -> list[tuple[list[str], int]]:
    groups = _groups(toks)
    out: list[tuple[list[str], int]] = []
    for coordinator, s0, mids, sk in groups:
        parts, clear = _analyse(s0, mids, sk)
        if any(not part for part in parts):
            continue
        # a bare slash often joins one name ("glucose/galactose malabsorption") or synonyms
        clear = clear and coordinator != "/"
        quality = (_CLEAR if len(groups) == 1 else _MULTI) if clear else _WEAK
        out.append((parts, quality))
    return out


def candidate_splits(text: str) -> list[tuple[list[str], int]]:
    """All candidate splits of `text` as (parts, quality), best first (quality 0 = clear)."""
    toks = _drop_parentheses(_tokens(text))
    cands = _group_candidates(toks)
    # a second coordination inside a part: "aplasia or hypoplasia of the thymus and parathyroid"
    for parts, _ in list(cands):
        combined: list[str] = []
        changed = False
        for part in parts:
            sub = _group_candidates(_tokens(part))
            if sub:
                combined.extend(sub[0][0])
                changed = True
            else:
                combined.append(part)
        if changed:
            cands.append((combined, _COMBINED))
    # a hyphen as coordinator: "breast-ovarian cancer", "HBV-HIV co-infected"
    for i, t in enumerate(toks):
        m = _HYPHENATED.match(t)
        if m and m.group(1).lower() not in _HYPHEN_PREFIXES:
            alt = toks[:i] + [m.group(1), "/", m.group(2)] + toks[i + 1:]
            cands.extend((parts, _HYPHEN) for parts, _ in _group_candidates(alt))
    cands.sort(key=lambda c: c[1])
    return cands


def split_composite(text: str, n_parts: int | None = None,
                    known: Container[str] | None = None) -> list[str]:
    """Split a composite mention into its parts; a non-composite returns [text].

    `n_parts` (from the gold) picks the best candidate with that many parts, [text] when none
    has it. Without it only clear coordinations split. `known` holds normalized names (e.g.
    the dictionary's) that are real concepts and must not be split ("hand foot and mouth
    disease"); it is ignored when `n_parts` is given.
    """
    if n_parts is not None and n_parts <= 1:
        return [text]
    if n_parts is None and known is not None and normalize(text) in known:
        return [text]
    for parts, quality in candidate_splits(text):
        if n_parts is None:
            if quality == _CLEAR:
                return parts
            break
        if len(parts) == n_parts:
            return parts
    return [text]
