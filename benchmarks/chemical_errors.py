"""Where BC5CDR-chemical dev linking goes wrong: every gold mention of a `kgnorm link` TSV (gold spans)
in one class, with counts and the most frequent cases, so the gap to the papers' figure is explained
by what stands in it rather than guessed.

    python benchmarks/chemical_errors.py --model DIR --predictions LINK.tsv [--gold dev.concept]

Classes, first that applies: nil gold (`-1`, not scored by `eval link`); gold id not in the model's
dictionary (records retired or merged since the corpus was annotated); right (top-1 shares a gold
id); wrong, a short form (2-10 characters, two or more capitals or digits: "CsA", "T4"); wrong, the
mention is itself a name of the predicted concept in this release (the dictionary gives that text to
another concept than the corpus did: version or convention, not ranking); wrong, gold in the top 5;
wrong, other. Dev only. Appends a section to benchmarks/LOG.md."""
from __future__ import annotations

import argparse
import csv
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import add_data_option, append, data_dir  # noqa: E402

DATA = data_dir()


def short_form(text: str) -> bool:
    t = text.strip()
    return 2 <= len(t) <= 10 and " " not in t and sum(c.isupper() or c.isdigit() for c in t) >= 2


def model_names(model: Path, sources: dict[str, set[str]] | None = None) -> tuple[dict[str, set[str]], set[str]]:
    """normalized name -> concept uids, and every uid, from the model's names/names.tsv (with
    `sources`, filled with name -> where it came from: ontology, mention)."""
    by_name: dict[str, set[str]] = defaultdict(set)
    uids: set[str] = set()
    with (model / "names" / "names.tsv").open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            ids = set(row["uids"].split("|"))
            by_name[row["name"]].update(ids)
            uids.update(ids)
            if sources is not None:
                sources.setdefault(row["name"], set()).add(row.get("source") or "?")
    return by_name, uids


def short_form_table(model: Path, predictions: Path, gold: Path) -> str:
    """The short-form mentions whose gold is in the dictionary, by whether the document's mentions
    define them (kgnorm.text.abbreviations.abbreviations_from_mentions: the query is then the long
    form) and whether the short form itself is a dictionary name (of the gold concept or of
    another; from the ontology or from training mentions): which rule about short forms could help."""
    from itertools import groupby

    from kgnorm.linking.linker import pipeline_from_meta
    from kgnorm.mentions.readers import read_concept
    from kgnorm.text.abbreviations import abbreviations_from_mentions

    pipeline = pipeline_from_meta(json.loads((model / "kgnorm-model.json").read_text()))
    sources: dict[str, set[str]] = {}
    by_name, uids = model_names(model, sources)
    top1: dict[str, set[str]] = {}
    with predictions.open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            if row["rank"] == "1":
                top1[row["mention_id"]] = set(row["concept_uids"].split("|"))
    cells: Counter = Counter()
    cases: dict[tuple, Counter] = defaultdict(Counter)
    for _, group in groupby(read_concept(gold), key=lambda m: m.doc_id):
        ms = list(group)
        abbr = abbreviations_from_mentions((m.text, m.start, m.end) for m in ms)
        for m in ms:
            g = {x for x in m.gold if x and x not in ("-1", "MESH:-1")}
            if not g or not g & uids or not short_form(m.text):
                continue
            name = pipeline.normalize_name(m.text)
            named = by_name.get(name, set())
            kind = ("no" if not named else "of the gold" if named & g else "of another concept")
            if named:
                kind += f" ({'+'.join(sorted(sources.get(name, ())))})"
            key = ("defined" if m.text in abbr else "not defined", kind)
            right = bool(top1.get(m.mention_id, set()) & g)
            cells[key + (right,)] += 1
            cases[key][f"{m.text}" + (f" → {abbr[m.text]}" if m.text in abbr else "") + ("" if right else " (wrong)")] += 1
    rows = ["| the document defines it | the short form is a dictionary name | right | wrong | most frequent |",
            "|---|---|---:|---:|---|"]
    for key in sorted(cases, key=lambda k: -sum(cells[k + (r,)] for r in (True, False))):
        rows.append(f"| {key[0]} | {key[1]} | {cells[key + (True,)]:,} | {cells[key + (False,)]:,} | "
                    + "; ".join(f"{c} ×{n}" for c, n in cases[key].most_common(4)) + " |")
    return "\n".join(rows)


def classify(model: Path, predictions: Path, gold: Path) -> tuple[Counter, dict[str, Counter]]:
    from kgnorm.linking.linker import pipeline_from_meta
    from kgnorm.mentions.readers import read_concept

    pipeline = pipeline_from_meta(json.loads((model / "kgnorm-model.json").read_text()))
    by_name, uids = model_names(model)
    ranked: dict[str, list[set[str]]] = defaultdict(list)
    with predictions.open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            ranked[row["mention_id"]].append(set(row["concept_uids"].split("|")))
    counts: Counter = Counter()
    cases: dict[str, Counter] = defaultdict(Counter)
    for m in read_concept(gold):
        g = {x for x in m.gold if x}
        top = ranked.get(m.mention_id) or [set()]
        if not g or g <= {"-1", "MESH:-1"}:
            cls = "nil gold (-1)"
        elif not g & uids:
            cls = "gold id not in the dictionary"
        elif top[0] & g:
            cls = "right"
        elif short_form(m.text):
            cls = "wrong: short form"
        elif by_name.get(pipeline.normalize_name(m.text), set()) & top[0]:
            cls = "wrong: the mention is a name of the predicted concept"
        elif any(r & g for r in top[:5]):
            cls = "wrong: gold in the top 5"
        else:
            cls = "wrong: other"
        counts[cls] += 1
        cases[cls][f"{m.text} ({'|'.join(sorted(g))} → {'|'.join(sorted(top[0]))})"] += 1
    return counts, cases


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_option(ap)
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--predictions", type=Path, required=True, help="what `kgnorm link` wrote for --gold")
    ap.add_argument("--gold", type=Path, default=DATA / "bc5cdr-chemical/dev.concept")
    args = ap.parse_args()
    counts, cases = classify(args.model, args.predictions, args.gold)
    total = sum(counts.values())
    rows = ["| class | mentions | share | most frequent (gold → predicted) |", "|---|---|---|---|"]
    for cls, n in counts.most_common():
        top = "; ".join(f"{c} ×{k}" for c, k in cases[cls].most_common(4)) if cls != "right" else ""
        rows.append(f"| {cls} | {n:,} | {n / total:.4f} | {top} |")
    shorts = ("\n\nThe short-form mentions (2-10 characters, two or more capitals or digits) whose gold is in the "
              "dictionary, by whether the document's mentions define them (the query is then the long form) and "
              "whether the short form itself is a dictionary name (names.tsv: from the ontology or from training "
              "mentions):\n\n" + short_form_table(args.model, args.predictions, args.gold))
    append("Chemical linking errors by class (BC5CDR-chemical dev, gold spans)",
           "\n".join([f"Model {args.model}; predictions {args.predictions} ({total:,} gold mentions).", "", *rows]) + shorts)


if __name__ == "__main__":
    main()
