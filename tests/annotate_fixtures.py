"""A small disease ontology, documents that mention it, and a store + untrained BioSyn model over it
(tiny random BERT): what the annotate tests run on."""
from __future__ import annotations

import json
from pathlib import Path

from cli_runner import run

OBO = """format-version: 1.2
data-version: toyd/2099-01-01
ontology: toyd

[Term]
id: TOYD:0000
name: disease

[Term]
id: TOYD:0001
name: ataxia telangiectasia
synonym: "Louis-Bar syndrome" EXACT []
is_a: TOYD:0000

[Term]
id: TOYD:0002
name: breast cancer
synonym: "breast carcinoma" EXACT []
is_a: TOYD:0000

[Term]
id: TOYD:0003
name: ovarian cancer
alt_id: TOYD:0903
is_a: TOYD:0000

[Term]
id: TOYD:0004
name: colorectal cancer
is_a: TOYD:0000
"""

DOCS = [
    {"id": "d1", "title": "Ataxia telangiectasia and breast cancer.",
     "abstract": "Carriers of ataxia telangiectasia (AT) mutations have breast cancer more often; AT is rare."},
    {"id": "d2", "title": "Ovarian cancer",
     "abstract": "No link between ovarian cancer and colorectal cancer was seen."},
    {"id": "d3", "text": ""},
]


def build(tmp: Path, capsys, store: str, tiny_bert_dir: Path) -> Path:
    """Ingest the ontology into `store` and train an untrained BioSyn over it; the model dir."""
    obo = tmp / "toyd.obo"
    obo.write_text(OBO, encoding="utf-8")
    code, _, err = run(capsys, "ingest", "obo", str(obo), "--ontology", "toyd", "--store", store, "-q")
    assert code == 0, err
    model = tmp / "biosyn"
    code, _, err = run(capsys, "train", "biosyn", "--ontology", "toyd", "--out", str(model), "--encoder",
                       str(tiny_bert_dir), "--store", store, "-q")
    assert code == 0, err
    return model


def write_jsonl(path: Path, docs=DOCS) -> Path:
    path.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    return path


def write_pubtator(path: Path, docs) -> Path:
    """PubTator of (pmid, title, abstract, [(mention, gold id)]): each mention at its first
    occurrence in "title abstract", typed Disease."""
    lines = []
    for pmid, title, abstract, spans in docs:
        text = f"{title} {abstract}"
        lines += [f"{pmid}|t|{title}", f"{pmid}|a|{abstract}"]
        for mention, gold in spans:
            start = text.index(mention)
            lines.append(f"{pmid}\t{start}\t{start + len(mention)}\t{mention}\tDisease\t{gold}")
        lines.append("")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# four toy abstracts over OBO's concepts, with every name they hold (calibration and retrain tests)
TEXTS = [("Ataxia telangiectasia in children", "Ataxia telangiectasia and breast cancer were seen in carriers."),
         ("Ovarian cancer", "No link between ovarian cancer and colorectal cancer was seen in the cohort."),
         ("Breast carcinoma", "Breast carcinoma and ovarian cancer in families with Louis-Bar syndrome."),
         ("Colorectal cancer screening", "Screening for colorectal cancer lowers mortality in adults.")]
NAMES = {"ataxia telangiectasia": "TOYD:0001", "breast cancer": "TOYD:0002", "breast carcinoma": "TOYD:0002",
         "ovarian cancer": "TOYD:0003", "colorectal cancer": "TOYD:0004", "louis-bar syndrome": "TOYD:0001"}


def write_gold_pubtator(path: Path, copies: int = 6) -> Path:
    """TEXTS repeated under new ids, every ontology name annotated with its concept (the gold a
    simulated curator or a calibration answers from)."""
    lines = []
    for k in range(copies):
        for i, (title, abstract) in enumerate(TEXTS):
            pmid = f"{k}{i:02d}"
            text = f"{title} {abstract}"
            lines += [f"{pmid}|t|{title}", f"{pmid}|a|{abstract}"]
            low = text.lower()
            for name, cid in NAMES.items():
                start = low.find(name)
                while start >= 0:
                    lines.append(f"{pmid}\t{start}\t{start + len(name)}\t{text[start:start + len(name)]}\tDisease\t{cid}")
                    start = low.find(name, start + 1)
            lines.append("")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
