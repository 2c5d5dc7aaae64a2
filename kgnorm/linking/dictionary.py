"""The name dictionary a linker searches: one row per distinct (already normalized) name.

A row holds the name and every concept uid that carries it (BioSyn's ``cui1|cui2||name``):
when two concepts share a normalized name both uids are kept. A row is not a prediction:
the linker ranks *concepts* (:mod:`kgnorm.linking.concepts`), each at its own rank, and uses
``counts`` (how many training mentions with the row's text were linked to each of its uids)
as evidence when a name is shared. ``alt_ids`` maps a primary uid to its other ids (MEDIC's
OMIM ids on a MeSH line, MedDRA LLT codes, ...) so evaluation can match through them.

BioSyn merges the training mentions into the dictionary (``train_dictionary.txt``);
:meth:`NameDictionary.with_mentions` does the same and flags those rows (``is_mention``) so
callers that want ontology names only (hypernyms, embed) can filter them out.

Files in a model directory (``<dir>/names.tsv``, ``<dir>/alt_ids.tsv``), UTF-8, with a header:
``names.tsv``: ``name  uids  source  counts`` -- uids joined by ``|``, source
``ontology``/``mention``, counts (training mentions per uid, same order) joined by ``|``
(files without the column read as zero counts);
``alt_ids.tsv``: ``uid  alt_ids`` -- alt ids joined by ``|``.
Tabs, newlines and backslashes inside a name are written as ``\\t``, ``\\n``, ``\\\\``.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from kgnorm.errors import InputError, KgnormError

NAMES_FILE = "names.tsv"
ALT_IDS_FILE = "alt_ids.tsv"
_SOURCES = {False: "ontology", True: "mention"}


def _escape(text: str) -> str:
    return (text.replace("\\", "\\\\").replace("\t", "\\t")
            .replace("\n", "\\n").replace("\r", "\\r"))


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            out.append({"t": "\t", "n": "\n", "r": "\r", "\\": "\\"}.get(nxt, "\\" + nxt))
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _check_uid(uid: str) -> str:
    if not uid or "|" in uid or "\t" in uid or "\n" in uid:
        raise KgnormError(f"invalid concept uid {uid!r}: empty or contains '|', tab or newline")
    return uid


@dataclass
class NameDictionary:
    """Distinct names with the uids that carry them.

    ``names[i]`` is a normalized name, ``uids[i]`` the tuple of uids carrying it (first-seen
    order), ``is_mention[i]`` True when the row came only from training mentions,
    ``counts[i][j]`` how many training mentions with text ``names[i]`` had gold ``uids[i][j]``.
    Build with :meth:`from_entries`; do not mutate the lists afterwards.
    """

    names: list[str]
    uids: list[tuple[str, ...]]
    alt_ids: dict[str, list[str]] = field(default_factory=dict)
    is_mention: list[bool] = field(default_factory=list)
    counts: list[tuple[int, ...]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if len(self.names) != len(self.uids):
            raise KgnormError(f"NameDictionary: {len(self.names)} names but "
                              f"{len(self.uids)} uid tuples")
        if not self.is_mention:
            self.is_mention = [False] * len(self.names)
        elif len(self.is_mention) != len(self.names):
            raise KgnormError("NameDictionary: is_mention has the wrong length")
        self.uids = [tuple(u) for u in self.uids]
        if not self.counts:
            self.counts = [(0,) * len(u) for u in self.uids]
        else:  # equal count tuples shared: most rows of an ontology's dictionary hold (0,)
            memo: dict[tuple, tuple[int, ...]] = {}
            self.counts = [memo.get(k) or memo.setdefault(k, tuple(int(x) for x in k))
                           for k in map(tuple, self.counts)]
            if len(self.counts) != len(self.uids) or any(
                    len(c) != len(u) for c, u in zip(self.counts, self.uids)):
                raise KgnormError("NameDictionary: counts do not match the uids")
        self._row: dict[str, int] = {}
        for i, name in enumerate(self.names):
            if name in self._row:
                raise KgnormError(f"NameDictionary: duplicate name {name!r}; "
                                  "use NameDictionary.from_entries to merge")
            self._row[name] = i
        self._by_uid: dict[str, list[int]] | None = None

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_entries(cls, entries: Iterable[tuple[str, str]],
                     alt_ids: Mapping[str, Iterable[str]] | None = None,
                     is_mention: bool = False) -> NameDictionary:
        """Build from ``(normalized name, uid)`` pairs; duplicates are dropped, names whose
        text is empty (after strip) are skipped, and a name under several uids keeps them all."""
        names: list[str] = []
        uids: list[list[str]] = []
        row: dict[str, int] = {}
        for entry in entries:
            try:
                name, uid = entry
            except (TypeError, ValueError):
                raise KgnormError(f"dictionary entry {entry!r} is not a (name, uid) pair") from None
            if not isinstance(name, str) or not name.strip():
                continue
            _check_uid(uid)
            i = row.get(name)
            if i is None:
                row[name] = len(names)
                names.append(name)
                uids.append([uid])
            elif uid not in uids[i]:
                uids[i].append(uid)
        alts = {u: [a for a in dict.fromkeys(v) if a != u] for u, v in (alt_ids or {}).items()}
        return cls(names=names, uids=[tuple(u) for u in uids],
                   alt_ids={u: v for u, v in alts.items() if v},
                   is_mention=[is_mention] * len(names))

    def with_mentions(self, mentions: Iterable[tuple[str, str | Iterable[str]]]
                      ) -> NameDictionary:
        """A new dictionary with training mentions added as extra names (BioSyn's
        train dictionary). Each mention is ``(normalized text, uid or uids)``; a text that
        already is a name gains the uids; a new text becomes a row flagged ``is_mention``."""
        names = list(self.names)
        uids = [list(u) for u in self.uids]
        counts = [list(c) for c in self.counts]
        flags = list(self.is_mention)
        row = dict(self._row)
        for text, gold in mentions:
            if not isinstance(text, str) or not text.strip():
                continue
            # a set of uids is sorted: its iteration order changes with the hash seed, and the
            # rows (first uid first) must not differ between processes (resume fingerprints)
            golds = ([gold] if isinstance(gold, str) else
                     list(gold) if isinstance(gold, (list, tuple)) else sorted(gold))
            golds = [_check_uid(g) for g in golds if g and g != "-1"]
            if not golds:
                continue
            i = row.get(text)
            if i is None:
                i = row[text] = len(names)
                names.append(text)
                uids.append([])
                counts.append([])
                flags.append(True)
            for g in dict.fromkeys(golds):
                if g not in uids[i]:
                    uids[i].append(g)
                    counts[i].append(0)
                counts[i][uids[i].index(g)] += 1
        return NameDictionary(names=names, uids=[tuple(u) for u in uids],
                              alt_ids={k: list(v) for k, v in self.alt_ids.items()},
                              is_mention=flags, counts=[tuple(c) for c in counts])

    # ------------------------------------------------------------------ access
    def __len__(self) -> int:
        return len(self.names)

    def index_of(self, name: str) -> int | None:
        """Row of an exact name, or None."""
        return self._row.get(name)

    @property
    def rows_by_name(self) -> Mapping[str, int]:
        """Name -> row, read-only (the dictionary's own map: no second copy of 500k names)."""
        return MappingProxyType(self._row)

    def mention_count(self, i: int, uid: str) -> int:
        """Training mentions with the text of row ``i`` whose gold was ``uid`` (0 if none)."""
        us = self.uids[i]
        return self.counts[i][us.index(uid)] if uid in us else 0

    def rows_of(self, uid: str) -> list[int]:
        """Rows whose uids include ``uid`` (built lazily)."""
        if self._by_uid is None:
            by: dict[str, list[int]] = {}
            for i, us in enumerate(self.uids):
                for u in us:
                    by.setdefault(u, []).append(i)
            self._by_uid = by
        return list(self._by_uid.get(uid, []))

    def expanded_uids(self, i: int) -> frozenset[str]:
        """uids of row ``i`` plus all their alt ids (what evaluation matches against)."""
        out = set(self.uids[i])
        for u in self.uids[i]:
            out.update(self.alt_ids.get(u, ()))
        return frozenset(out)

    @property
    def concept_count(self) -> int:
        return len({u for us in self.uids for u in us})

    # ------------------------------------------------------------------ files
    def save(self, directory: str | Path) -> None:
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        tmp = d / (NAMES_FILE + ".tmp")
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.write("name\tuids\tsource\tcounts\n")
            for name, us, m, c in zip(self.names, self.uids, self.is_mention, self.counts):
                f.write(f"{_escape(name)}\t{'|'.join(us)}\t{_SOURCES[bool(m)]}\t"
                        f"{'|'.join(map(str, c))}\n")
        tmp.replace(d / NAMES_FILE)
        tmp = d / (ALT_IDS_FILE + ".tmp")
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.write("uid\talt_ids\n")
            for uid, alts in self.alt_ids.items():
                if alts:
                    f.write(f"{uid}\t{'|'.join(alts)}\n")
        tmp.replace(d / ALT_IDS_FILE)

    @classmethod
    def load(cls, directory: str | Path) -> NameDictionary:
        d = Path(directory)
        path = d / NAMES_FILE
        if not path.is_file():
            raise KgnormError(f"{d}: no {NAMES_FILE} (not a saved name dictionary)")
        names: list[str] = []
        uids: list[tuple[str, ...]] = []
        flags: list[bool] = []
        counts: list[tuple[int, ...]] = []
        shared: dict[str, tuple[str, ...]] = {}  # one tuple (and uid strings) per distinct uids field
        with open(path, encoding="utf-8", newline="\n") as f:
            header = f.readline().rstrip("\n")
            if header.split("\t")[:2] != ["name", "uids"]:
                raise InputError("unexpected header " + repr(header), path=path, line=1)
            for ln, line in enumerate(f, start=2):
                line = line.rstrip("\n")
                if not line:
                    continue
                parts = line.split("\t")
                if len(parts) < 2 or not parts[1]:
                    raise InputError("expected name<TAB>uids[<TAB>source]", path=path, line=ln)
                names.append(_unescape(parts[0]))
                uids.append(shared.get(parts[1]) or shared.setdefault(parts[1], tuple(parts[1].split("|"))))
                flags.append(len(parts) > 2 and parts[2] == "mention")
                try:
                    cs = tuple(int(x) for x in parts[3].split("|")) if len(parts) > 3 else ()
                except ValueError:
                    raise InputError("counts must be integers joined by '|'", path=path, line=ln) from None
                if cs and len(cs) != len(uids[-1]):
                    raise InputError("counts and uids differ in number", path=path, line=ln)
                counts.append(cs or (0,) * len(uids[-1]))
        alt_ids: dict[str, list[str]] = {}
        apath = d / ALT_IDS_FILE
        if apath.is_file():
            with open(apath, encoding="utf-8", newline="\n") as f:
                f.readline()
                for ln, line in enumerate(f, start=2):
                    line = line.rstrip("\n")
                    if not line:
                        continue
                    parts = line.split("\t")
                    if len(parts) != 2:
                        raise InputError("expected uid<TAB>alt_ids", path=apath, line=ln)
                    alt_ids[parts[0]] = [a for a in parts[1].split("|") if a]
        try:
            return cls(names=names, uids=uids, alt_ids=alt_ids, is_mention=flags, counts=counts)
        except KgnormError as e:
            raise InputError(str(e), path=path) from None


def ontology_dictionary(snapshot, normalize) -> NameDictionary:
    """Every name of an ontology snapshot (:class:`kgnorm.graph.views.OntologySnapshot`),
    normalized like the queries, with its alt ids; an ontology without names is an error."""
    dictionary = NameDictionary.from_entries(
        ((normalize(n), c.uid) for c in snapshot.concepts for n in c.all_names()), snapshot.alt_ids())
    if len(dictionary) == 0:
        raise KgnormError(f"ontology {snapshot.name!r} gives an empty dictionary")
    return dictionary


def as_name_dictionary(concepts: NameDictionary | Mapping[str, Iterable[str]],
                       alt_ids: Mapping[str, Iterable[str]] | None = None) -> NameDictionary:
    """A :class:`NameDictionary` from a dictionary or a plain ``uid -> names`` mapping
    (names already normalized; empty names are skipped)."""
    if isinstance(concepts, NameDictionary):
        if alt_ids:
            merged = {k: list(v) for k, v in concepts.alt_ids.items()}
            for k, v in alt_ids.items():
                merged[k] = list(dict.fromkeys([*merged.get(k, []), *v]))
            return NameDictionary(names=list(concepts.names), uids=list(concepts.uids),
                                  alt_ids=merged, is_mention=list(concepts.is_mention))
        return concepts
    if not isinstance(concepts, Mapping):
        raise KgnormError("concepts must be a NameDictionary or a mapping uid -> names")
    entries = []
    for uid, names in concepts.items():
        if isinstance(names, str):
            names = [names]
        entries.extend((n, str(uid)) for n in names)
    return NameDictionary.from_entries(entries, alt_ids=alt_ids)


def concept_names(dictionary: NameDictionary, ontology_only: bool = False
                  ) -> dict[str, list[str]]:
    """``uid -> names`` (dictionary order) of a :class:`NameDictionary`; a name carried by
    several uids is listed under each. ``ontology_only`` skips rows added from mentions."""
    out: dict[str, list[str]] = {}
    for name, uids, m in zip(dictionary.names, dictionary.uids, dictionary.is_mention):
        if ontology_only and m:
            continue
        for u in uids:
            out.setdefault(u, []).append(name)
    return out
