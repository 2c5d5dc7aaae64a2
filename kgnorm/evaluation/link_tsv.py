"""Scoring what `kgnorm link` writes: its TSV layout, read back and judged against gold mentions.

``kgnorm eval link --predictions F --gold G`` scores any file in this layout (another system's
output too), and ``kgnorm eval link --model M`` scores the rows ``link`` would write for the
same model (:func:`kgnorm.linking.linker.tsv_rows`) through the same parser -- so the two agree by
construction, and the accuracy is that of the concepts a user gets.

Layout (docs/formats.md, "What link writes"): a header ``mention_id mention rank concept_uids score nil``, then per
mention one row per rank (1, 2, ...), ``concept_uids`` one concept per composite part joined
by ``|``. A mention whose ``nil`` is 1 has no link (the graph gets no edge), so it scores as a
miss when its gold is linkable. A mention id may repeat (a file that lists one span twice);
a row with rank 1 starts its next occurrence, and occurrences are matched to the gold
mentions with that id in order.
"""
from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kgnorm.errors import InputError, KgnormError
from kgnorm.evaluation.linking import UNLINKABLE, accuracy_at_k

HEADER = ["mention_id", "mention", "rank", "concept_uids", "score", "nil"]


@dataclass
class PredictedMention:
    """One mention's ranked concepts per part, as a link TSV shows them."""

    mention_id: str
    text: str
    parts: list[list[str]] = field(default_factory=list)
    nil: bool = False

    def ranked(self) -> list[list[str]]:
        """What the user gets: nothing for a nil mention, else the ranked concepts."""
        return [] if self.nil else self.parts


def parse_link_rows(rows: Iterable[Sequence[str]], source: str | Path | None = None,
                    first_line: int = 2) -> dict[str, list[PredictedMention]]:
    """{mention id: its occurrences in file order} from link TSV rows (no header)."""
    out: dict[str, list[PredictedMention]] = {}
    for ln, row in enumerate(rows, start=first_line):
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if len(row) != len(HEADER):
            raise InputError(f"expected {len(HEADER)} tab-separated fields ({' '.join(HEADER)}), "
                             f"got {len(row)}", path=source, line=ln)
        mid, text, rank_s, uids, score, nil = row
        try:
            rank = int(rank_s)
            float(score)
        except ValueError:
            raise InputError(f"rank {rank_s!r} or score {score!r} is not a number",
                             path=source, line=ln) from None
        if nil not in ("0", "1"):
            raise InputError(f"nil must be 0 or 1, got {nil!r}", path=source, line=ln)
        parts = uids.split("|")
        if not mid or any(not p.strip() for p in parts):
            raise InputError("empty mention_id or concept uid", path=source, line=ln)
        occ = out.setdefault(mid, [])
        if rank == 1:
            occ.append(PredictedMention(mid, text, [[p] for p in parts], nil == "1"))
            continue
        cur = occ[-1] if occ else None
        if cur is None or rank != len(cur.parts[0]) + 1:
            want = 1 if cur is None else len(cur.parts[0]) + 1
            raise InputError(f"mention {mid}: rank {rank} where rank {want} was expected "
                             "(ranks of a mention are 1, 2, ... in order)", path=source, line=ln)
        if len(parts) != len(cur.parts):
            raise InputError(f"mention {mid}: {len(parts)} part(s) at rank {rank}, "
                             f"{len(cur.parts)} at rank 1", path=source, line=ln)
        if (nil == "1") != cur.nil:
            raise InputError(f"mention {mid}: nil differs between its ranks", path=source, line=ln)
        for ranked, uid in zip(cur.parts, parts):
            ranked.append(uid)
    return out


def read_link_tsv(path: str | Path) -> dict[str, list[PredictedMention]]:
    """Parse a file written by ``kgnorm link --output`` (or any file in its layout)."""
    p = Path(path)
    if not p.is_file():
        raise InputError("no such file", path=p)
    with open(p, encoding="utf-8", newline="") as f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_MINIMAL)
        header = next(reader, None)
        if header != HEADER:
            raise InputError(f"not a link TSV: the header must be {' '.join(HEADER)} "
                             f"(tab-separated), got {header!r}", path=p, line=1)
        try:
            return parse_link_rows(reader, p)
        except csv.Error as e:
            raise InputError(f"malformed TSV ({e})", path=p, line=reader.line_num) from None


def _first(ids: Iterable[str], n: int = 3) -> str:
    ids = list(ids)
    return ", ".join(ids[:n]) + (", …" if len(ids) > n else "")


def align(predictions: Mapping[str, list[PredictedMention]], gold_ids: Sequence[str],
          pred_source: str | Path | None = None, gold_source: str | Path | None = None
          ) -> list[PredictedMention]:
    """The prediction of each gold mention, in gold order; every gold mention needs exactly
    one and every prediction a gold mention, else the first missing ids are named."""
    want: dict[str, int] = {}
    for mid in gold_ids:
        want[mid] = want.get(mid, 0) + 1
    missing = [m for m in want if len(predictions.get(m, ())) < want[m]]
    if missing:
        raise InputError(f"{len(missing)} gold mention id(s) of {gold_source} have no prediction "
                         f"(first: {_first(missing)})", path=pred_source)
    extra = [m for m, occ in predictions.items() if len(occ) > want.get(m, 0)]
    if extra:
        raise InputError(f"{len(extra)} mention id(s) are not in the gold file {gold_source} "
                         f"(first: {_first(extra)})", path=pred_source)
    seen: dict[str, int] = {}
    out = []
    for mid in gold_ids:
        k = seen.get(mid, 0)
        seen[mid] = k + 1
        out.append(predictions[mid][k])
    return out


def unknown_gold_ids(golds: Iterable[Sequence[str]], known: set[str]) -> list[str]:
    """Distinct gold ids (conjunction pieces included) that are not concepts of the ontology
    (``known`` holds uids and alt ids), in first-seen order."""
    out: dict[str, None] = {}
    for parts in golds:
        for part in parts:
            for piece in part.split("+"):
                piece = piece.strip()
                if piece not in UNLINKABLE and piece not in known:
                    out.setdefault(piece, None)
    return list(out)


def score(predicted: Sequence[PredictedMention], golds: Sequence[Sequence[str]],
          alt_ids: Mapping[str, Iterable[str]] | None, indices: Sequence[int] | None = None,
          ks: Sequence[int] = (1, 5)) -> dict:
    """{n, skipped, acc1, acc5} of the aligned predictions (strict scorer, one concept per
    rank, nil = no link) over ``indices`` (default all)."""
    if len(predicted) != len(golds):
        raise KgnormError(f"{len(predicted)} predictions for {len(golds)} gold mentions")
    idx = range(len(golds)) if indices is None else indices
    rep = accuracy_at_k([predicted[i].ranked() for i in idx], [list(golds[i]) for i in idx],
                        ks=ks, alt_ids=alt_ids)
    return {"n": rep.n_evaluated, "skipped": rep.n_skipped,
            **{f"acc{k}": rep.accuracy[k] for k in rep.ks}}
