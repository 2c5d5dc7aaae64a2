"""Local abbreviation resolution (Schwartz & Hearst 2003, "A simple algorithm for identifying
abbreviation definitions in biomedical text").

Why: a mention such as "APC" only links correctly once it is read as the long form the same
abstract defined ("adenomatous polyposis coli (APC)"); BioSyn loses ~10 points of Acc@1 on
NCBI-disease without this step (docs/architecture.md, "Text preprocessing").

Algorithm, written from the paper's description:
1. In each sentence, every parenthesised chunk gives a pair of candidates. Normally the
   chunk is the short form (SF) and the text before it the long form (LF): ``LF (SF)``. When
   the chunk has more than two words, or is longer than the text before it, the roles swap:
   the word before the parenthesis is the SF and the chunk the LF: ``SF (LF)``.
2. A SF has 2-10 characters, at least one letter, an alphanumeric first character and at most
   two words (a chunk is cut at its first ", " or "; ").
3. The LF candidate is at most min(|SF| + 5, |SF| * 2) words long. Walking both strings from
   right to left, every alphanumeric SF character must be found in the LF, in order; the SF's
   first character must match at the start of a word. The LF starts at the word holding that
   match (the shortest LF that fits).
4. Reject when the LF is shorter than the SF, contains the SF as a word, or has too many words.

Additions for the classes Schwartz-Hearst misses in NCBI-disease and BC5CDR (issue 14; the
counts are in benchmarks/LOG.md):

* Reordered letters: "myotonic dystrophy (DM)" -- an all-capital SF whose letters are, in some
  order, the initials of the last words before the parenthesis.
* Several SFs in one parenthesis: "Duchenne and Becker muscular dystrophy (DMD/BMD)",
  "(DMD or BMD)", "(VCFS/DGS)" -- each SF is matched on its own; with two SFs and a
  coordinated LF ("A and B head"), SF i gets "word i + head" when its letters fit.
* Plural SFs: "hypertrophy of the retinal pigment epithelium (CHRPEs)" defines CHRPEs and
  CHRPE; :func:`expand` also reads "RCCs" through a defined "RCC".
* Definitions outside the abstract's own "LF (SF)" (:func:`document_abbreviations`): an SF
  used but never defined in the text whose letters are exactly the initials of consecutive
  title words ("adenomatous polyposis coli" in the title, "APC" in the abstract), or of one
  other annotated mention of the document (:func:`abbreviations_from_mentions`, step 2).
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

__all__ = ["find_abbreviations", "abbreviations_from_mentions", "document_abbreviations", "expand",
           "best_long_form"]

_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+")
_LF_WORD_SPLIT = re.compile(r"[\s\-]+")


def _is_valid_short_form(sf: str) -> bool:
    """SF shape test (step 2): 2-10 chars, a letter, alphanumeric first char, <= 2 words."""
    return (2 <= len(sf) <= 10 and sf[0].isalnum() and any(c.isalpha() for c in sf)
            and len(sf.split()) <= 2)


def best_long_form(short: str, long_candidate: str) -> str | None:
    """Shortest suffix of `long_candidate` whose characters spell `short` right to left (step 3)."""
    s_idx = len(short) - 1
    l_idx = len(long_candidate) - 1
    while s_idx >= 0:
        ch = short[s_idx].lower()
        if not ch.isalnum():
            s_idx -= 1
            continue
        while l_idx >= 0 and (
            long_candidate[l_idx].lower() != ch
            or (s_idx == 0 and l_idx > 0 and long_candidate[l_idx - 1].isalnum())
        ):
            l_idx -= 1
        if l_idx < 0:
            return None
        l_idx -= 1
        s_idx -= 1
    # extend the LF back to the beginning of the word that holds the first match
    start = long_candidate.rfind(" ", 0, l_idx + 1) + 1
    return long_candidate[start:].strip()


_BAD_FIRST_WORDS = frozenset({"and", "or", "of", "the", "with", "in", "to", "for", "by", "a",
                              "an"})


def _accept(short: str, long: str) -> bool:
    """Step 4: reject implausible pairs (plus: a LF never starts with a function word, as in
    "AMN (and its companion, ...)")."""
    if len(long) < len(short) or long.split()[0].lower() in _BAD_FIRST_WORDS:
        return False
    if re.search(r"(?<!\w)" + re.escape(short) + r"(?!\w)", long, re.IGNORECASE):
        return False  # "ATP7B (Atp7b)" is a spelling variant, not a definition
    n_chars = sum(1 for c in short if c.isalnum())
    n_words = len([w for w in _LF_WORD_SPLIT.split(long) if w])
    return n_chars <= 10 and n_words <= min(n_chars + 5, n_chars * 2)


def _last_words(text: str, n: int) -> str:
    """The last `n` whitespace-separated words of `text` (keeps the original spacing)."""
    words = list(re.finditer(r"\S+", text))
    if len(words) <= n:
        return text.strip()
    return text[words[-n].start():].strip()


def _matching_paren(s: str, open_idx: int) -> int:
    """Index of the ')' closing the '(' at `open_idx`, or -1."""
    depth = 0
    for k in range(open_idx, len(s)):
        c = s[k]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return k
    return -1


_MULTI_SF_SPLIT = re.compile(r"\s*/\s*|\s+(?:or|and)\s+|,\s*")
_COORDINATED = re.compile(r"(\S+)\s+(?:and|or|/)\s+(\S+)\s+(\S.*)$")


def _singular(short: str) -> str | None:
    """"CHRPEs" -> "CHRPE": a plural SF (capitals, then a lowercase s)."""
    if len(short) > 2 and short.endswith("s") and short[-2].isupper() and _is_valid_short_form(short[:-1]):
        return short[:-1]
    return None


def _reordered_long_form(short: str, before: str) -> str | None:
    """"myotonic dystrophy (DM)": the last len(SF) words before the parenthesis, when their
    initials are the SF's capitals in another order (2-6 letters, no digits)."""
    if not (short.isalpha() and short.isupper() and 2 <= len(short) <= 6):
        return None
    words = before.split()[-len(short):]
    if len(words) < len(short) or any(w.lower() in _BAD_FIRST_WORDS for w in words):
        return None
    if sorted(w[0].lower() for w in words if w) != sorted(short.lower()):
        return None
    long = " ".join(words)
    return long if _accept(short, long) else None


def _long_form(short: str, long_candidate: str, before: str) -> str | None:
    """Schwartz-Hearst's LF for ``short`` (singular of a plural SF too), else reordered initials."""
    n_chars = sum(1 for c in short if c.isalnum())
    window = _last_words(long_candidate, min(n_chars + 5, n_chars * 2))
    for sf in (short, _singular(short)):
        if sf is None:
            continue
        long = best_long_form(sf, window)
        if long and _accept(sf, long):
            return long
    return _reordered_long_form(_singular(short) or short, before)


def _pairs_in_sentence(sentence: str):
    pos = 0
    while True:
        open_idx = sentence.find("(", pos)
        if open_idx < 0:
            return
        close_idx = _matching_paren(sentence, open_idx)
        if close_idx < 0:
            return
        pos = close_idx + 1
        before = sentence[:open_idx].rstrip()
        raw = sentence[open_idx + 1:close_idx].strip()
        inner = raw
        for sep in (", ", "; "):
            cut = inner.find(sep)
            if cut >= 0:
                inner = inner[:cut].strip()
        if not inner or not before:
            continue
        shorts = [t for t in _MULTI_SF_SPLIT.split(raw.split(";")[0]) if t]
        if 2 <= len(shorts) <= 3 and all(_is_valid_short_form(t) and " " not in t
                                         and sum(c.isupper() for c in t) >= 2 for t in shorts):
            yield from _several_short_forms(shorts, before)
            continue
        if len(inner.split()) > 2 or len(inner) > len(before):
            # "SF (long form)": the SF is the word before the parenthesis
            short = before.split()[-1]
            if not any(c.isupper() for c in short):
                continue
            long_candidate, before_sf = inner, inner
        else:
            short = inner
            long_candidate = before_sf = before
        if not _is_valid_short_form(short):
            continue
        long = _long_form(short, long_candidate, before_sf)
        if long:
            yield short, long
            single = _singular(short)
            if single:
                yield single, long


def _several_short_forms(shorts: list[str], before: str):
    """"Duchenne and Becker muscular dystrophy (DMD/BMD)": each SF on its own; SF i is tried on
    the i-th of as many long forms separated by "/", "or", "and" ("VCFS/DGS"), then, with two SFs and a
    coordinated LF, on "coordinated word i + head", then on the whole text before."""
    coord = _COORDINATED.search(_last_words(before, 8)) if len(shorts) == 2 else None
    pieces = re.split(r"\s*/\s*|\s+(?:or|and)\s+", before)
    slashed = pieces[-len(shorts):] if len(pieces) >= len(shorts) else None
    for i, short in enumerate(shorts):
        long = _long_form(short, slashed[i], slashed[i]) if slashed else None
        if long is None and coord:
            own = f"{coord.group(i + 1)} {coord.group(3)}"
            cand = best_long_form(short, own)
            long = cand if cand == own and _accept(short, cand) else None
        long = long or _long_form(short, before, before)
        if long:
            yield short, long


def find_abbreviations(text: str) -> dict[str, str]:
    """Short form -> long form for every definition in `text`; the first definition wins."""
    found: dict[str, str] = {}
    if "(" not in text:
        return found
    for sentence in _SENTENCE_BREAK.split(text):
        if "(" not in sentence:
            continue
        for short, long in _pairs_in_sentence(sentence):
            found.setdefault(short, long)
    return found


def _initials(long: str) -> str:
    return "".join(w[0] for w in (re.sub(r"^[^\w]+", "", w) for w in _LF_WORD_SPLIT.split(long))
                   if w).lower()


def abbreviations_from_mentions(spans: Iterable[tuple[str, int, int]]) -> dict[str, str]:
    """Short form -> long form from the mentions of one document when its text is absent
    (BioSyn ``.concept`` files carry only mention texts and character offsets).

    1. A definition site ``LF (SF)``: a short-form mention that starts 1-3 characters after
       a mention that ends with the SF's long form (steps 3-4 above; "aneurysmal subarachnoid
       hemorrhage (SAH)" gives "subarachnoid hemorrhage"), or whose word initials end the SF:
       the mention is the head of a longer definition that was only partly annotated
       ("contrast-induced nephropathy (CIN)" with the mention "nephropathy" gives
       "nephropathy"); likewise ``SF (LF)`` when the whole LF mention spells the SF. Failing
       both, a SF of two or more capitals or digits that shares its first letter with the
       mention before it ("cyclosporine (CsA)", "cisplatin (CDDP)", "Fujimycine (FK506)"):
       chemical short forms often come from another name than the one written.
    2. Otherwise a one-word short form with two or more capitals (a plural ``s`` allowed)
       whose letters are exactly the word initials of one other mention ("VSD" -> "ventricular
       septal defects"); ambiguous initials resolve nothing.
    """
    ms = sorted({(t.strip(), int(s), int(e)) for t, s, e in spans if t and t.strip()},
                key=lambda x: (x[1], x[2]))
    found: dict[str, str] = {}

    def short_form(t: str) -> bool:
        return _is_valid_short_form(t) and any(c.isupper() for c in t)

    def letters(t: str) -> str:
        core = t[:-1] if t.endswith("s") and t[:-1].isupper() else t
        return "".join(c for c in core if c.isalnum()).lower()

    for (a, _, a_end), (b, b_start, _) in zip(ms, ms[1:]):
        if not 1 <= b_start - a_end <= 3:
            continue
        if short_form(b) and len(a) > len(b):
            lf = best_long_form(b, a)
            if lf and _accept(b, lf):
                found.setdefault(b, lf)
            elif len(_initials(a)) < len(letters(b)) and letters(b).endswith(_initials(a)):
                found.setdefault(b, a)
            elif _first_letter_site(a, b):
                found.setdefault(b, a)
        elif (short_form(a) and (len(b.split()) > 2 or len(b) > len(a))
              and best_long_form(a, b) == b and _accept(a, b)):
            found.setdefault(a, b)
    by_initials: dict[str, set[str]] = {}
    for t, _, _ in ms:
        if len(t.split()) >= 2:
            by_initials.setdefault(_initials(t), set()).add(t)
    for t, _, _ in ms:
        if t in found or " " in t or not _is_valid_short_form(t):
            continue
        if sum(c.isupper() for c in t) < 2 or not t.isalnum():
            continue
        longs = by_initials.get(letters(t), set())
        if len(longs) == 1:
            found[t] = next(iter(longs))
    return found


def _first_letter_site(long: str, short: str) -> bool:
    """``LF (SF)`` between two mentions whose letters do not spell the SF: trusted when the SF
    starts with the LF's first letter and has at least two capitals or digits ("Pain" is a word)."""
    return (long[0].lower() == short[0].lower() and len(long.split()) <= 4
            and sum(c.isupper() or c.isdigit() for c in short) >= 2)


def _title_initials(title: str, short: str) -> str | None:
    """The consecutive title words whose initials spell the SF's letters in order (words
    split at spaces and hyphens; a unique match only)."""
    letters = "".join(c for c in (_singular(short) or short) if c.isalnum()).lower()
    if not (2 <= len(letters) <= 6 and letters.isalpha()):
        return None
    words = [m for m in re.finditer(r"[A-Za-z][\w']*", title)]
    found = set()
    for i in range(len(words) - len(letters) + 1):
        span = words[i:i + len(letters)]
        if any(w.group(0).lower() in _BAD_FIRST_WORDS for w in span):
            continue
        if "".join(w.group(0)[0].lower() for w in span) == letters:
            found.add(title[span[0].start():span[-1].end()])
    return next(iter(found)) if len(found) == 1 else None


def document_abbreviations(title: str, text: str,
                           spans: Iterable[tuple[str, int, int]] = ()) -> dict[str, str]:
    """Short form -> long form for a document: Schwartz-Hearst on its text, then, for the short
    forms its mentions use but the text never defines, the title's words or another mention
    whose initials spell them (module docstring)."""
    found = find_abbreviations(text)
    spans = list(spans)
    used = {t for m, _, _ in spans for t in re.findall(r"[A-Za-z0-9]+", m)
            if _is_valid_short_form(t) and sum(c.isupper() for c in t) >= 2}
    for sf in sorted(used):
        if sf in found or (_singular(sf) or "") in found:
            continue
        long = _title_initials(title, sf)
        if long and _accept(sf, long):
            found[sf] = long
    for sf, long in abbreviations_from_mentions(spans).items():
        found.setdefault(sf, long)
    return found


def expand(mention_text: str, abbreviations: Mapping[str, str] | None) -> str:
    """Replace whole-token short forms in a mention by their long forms.

    Tokens are delimited by non-alphanumerics ("APC-associated" expands); matching is
    case-sensitive; a SF whose long form the mention already spells out is left alone.
    """
    if not abbreviations or not mention_text:
        return mention_text
    plurals = {sf + "s": lf for sf, lf in abbreviations.items()
               if sf and sf[-1].isupper() and sf + "s" not in abbreviations and sf + "s" in mention_text}
    if plurals:
        abbreviations = {**abbreviations, **plurals}
    lowered = mention_text.lower()
    present = [sf for sf, lf in abbreviations.items()
               if sf and sf in mention_text and lf.lower() not in lowered]
    if not present:
        return mention_text
    present.sort(key=len, reverse=True)
    pattern = re.compile(
        r"(?<![^\W_])(?:" + "|".join(re.escape(sf) for sf in present) + r")(?![^\W_])")
    return pattern.sub(lambda m: abbreviations[m.group(0)], mention_text)
