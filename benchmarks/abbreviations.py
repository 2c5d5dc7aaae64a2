"""Unresolved short forms in NCBI-disease and BC5CDR-disease mentions, before and after issue 14's rules.

A mention token counts as a short form when it has 2-10 characters, at least two capitals, at
least half of its letters capitals, and is not a Roman numeral ("DM", "CHRPEs", "G6PD"; not
"McLeod", "II"). It is resolved when the abbreviations the reader gives its document (what
`kgnorm link` and training use) define it, or its singular. *Before* is Schwartz-Hearst plus the
.concept mention rules as of commit fc3303c (run from ``--before-root``, a checkout of it);
*after* is this tree. Appends a table to benchmarks/LOG.md.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import ROOT, add_data_option, append  # noqa: E402

FILES = {"NCBI-disease train": "ncbi-disease/NCBItrainset_corpus.txt",
         "NCBI-disease dev": "ncbi-disease/NCBIdevelopset_corpus.txt",
         "BC5CDR-disease train": "bc5cdr-disease/train.concept",
         "BC5CDR-disease dev": "bc5cdr-disease/dev.concept"}
_TOKEN = re.compile(r"[A-Za-z0-9]+")


def short_form_like(t: str) -> bool:
    up = sum(c.isupper() for c in t)
    letters = sum(c.isalpha() for c in t)
    return 2 <= len(t) <= 10 and up >= 2 and 2 * up >= letters and not re.fullmatch(r"[IVX]+", t)


def count(path: Path) -> dict:
    """Short-form tokens in mentions, resolved / unresolved, and the most frequent unresolved."""
    from kgnorm.mentions.readers import read_mentions_with_abbreviations

    n = resolved = 0
    missed: Counter = Counter()
    for m, abbr in read_mentions_with_abbreviations(path):
        for t in _TOKEN.findall(m.text):
            if not short_form_like(t):
                continue
            n += 1
            if t in abbr or (t.endswith("s") and t[:-1] in abbr):
                resolved += 1
            else:
                missed[t] += 1
    return {"n": n, "resolved": resolved, "unresolved": n - resolved, "top": missed.most_common(8)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_option(ap)
    ap.add_argument("--before-root", help="a checkout of the commit before (its kgnorm is imported for 'before')")
    ap.add_argument("--json", action="store_true", help="print this tree's counts as JSON and exit (child mode)")
    args = ap.parse_args()
    import warnings
    warnings.simplefilter("ignore")
    if args.json:
        print(json.dumps({k: count(args.data / v) for k, v in FILES.items()}))
        return
    after = {k: count(args.data / v) for k, v in FILES.items()}
    before = None
    if args.before_root:
        env_root = Path(args.before_root).resolve()
        out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--json", "--data", str(args.data)],
                             cwd=env_root,
                             env={"PYTHONPATH": str(env_root),
                                  "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, check=True).stdout
        before = json.loads(out)
    rows = ["| file | short-form tokens in mentions | unresolved before | unresolved after | most frequent "
            "unresolved after |", "|---|---|---|---|---|"]
    for k, a in after.items():
        b = before[k]["unresolved"] if before else "n/a"
        top = ", ".join(f"{t} {c}" for t, c in a["top"])
        rows.append(f"| {k} | {a['n']} | {b} | {a['unresolved']} | {top} |")
    append("Abbreviations: short forms left unresolved in the corpora' mentions", "\n".join([
        "A token counts as a short form when it has 2-10 characters, at least two capitals, at least half of its "
        "letters capitals, and is not a Roman numeral. Resolved: the document's abbreviations (what `kgnorm link` "
        "and training use) define it or its singular. Before: the tree at fc3303c (Schwartz-Hearst plus the "
        ".concept mention rules); after: reordered letters, several short forms in one parenthesis, plural short "
        "forms, title-word and mention initials (kgnorm.text.abbreviations). PubTator files have the text; "
        ".concept files only the mentions.", "", *rows]))


if __name__ == "__main__":
    main()
