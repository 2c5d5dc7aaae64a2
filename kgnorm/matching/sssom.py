"""SSSOM TSV (https://mapping-commons.github.io/sssom/): a YAML metadata block of `#` lines (the
curie map, the mapping set's id, licence, tool and version), then one mapping per TSV row.

Written by hand rather than with the `sssom` package (whose dependencies are heavy for a file
this simple); the reader checks what the spec requires and names the file and line of the
first thing wrong, so a bad file is one clear error."""
from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from kgnorm.errors import InputError

EXACT, BROAD, NARROW, CLOSE = "skos:exactMatch", "skos:broadMatch", "skos:narrowMatch", "skos:closeMatch"
PREDICATES = (EXACT, BROAD, NARROW, CLOSE, "skos:relatedMatch", "owl:equivalentClass", "oboInOwl:hasDbXref",
              "rdfs:subClassOf", "semapv:crossSpeciesExactMatch")
LEXICAL = "semapv:LexicalMatching"
SEMANTIC = "semapv:SemanticSimilarityThresholdMatching"
STRUCTURAL = "semapv:StructuralMatching"
CURATED = "semapv:ManualMappingCuration"  # an xref the ontology's curators wrote
UNSPECIFIED = "semapv:UnspecifiedMatching"

COLUMNS = ("subject_id", "subject_label", "predicate_id", "object_id", "object_label", "mapping_justification",
           "confidence", "subject_source", "object_source", "comment")
REQUIRED = ("subject_id", "predicate_id", "object_id", "mapping_justification")

# Prefixes every SSSOM file may use; other prefixes go into the curie map by the OBO PURL pattern
# unless listed here (MeSH and OMIM are not OBO ontologies).
BUILTIN = {"skos": "http://www.w3.org/2004/02/skos/core#", "semapv": "https://w3id.org/semapv/vocab/",
           "owl": "http://www.w3.org/2002/07/owl#", "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
           "oboInOwl": "http://www.geneontology.org/formats/oboInOwl#", "sssom": "https://w3id.org/sssom/"}
KNOWN = {"MESH": "http://id.nlm.nih.gov/mesh/", "OMIM": "https://omim.org/entry/",
         "UMLS": "http://linkedlifedata.com/resource/umls/id/", "SNOMEDCT": "http://snomed.info/id/",
         "NCIT": "http://purl.obolibrary.org/obo/NCIT_", "ICD10CM": "http://purl.bioontology.org/ontology/ICD10CM/"}
_CURIE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*:\S+$")


@dataclass
class Mapping:
    """One row of an SSSOM file: subject `predicate` object, why, and how sure."""

    subject_id: str
    predicate_id: str
    object_id: str
    mapping_justification: str
    confidence: float | None = None
    subject_label: str = ""
    object_label: str = ""
    subject_source: str = ""
    object_source: str = ""
    comment: str = ""

    def row(self) -> list[str]:
        conf = "" if self.confidence is None else f"{self.confidence:.4f}"
        return [self.subject_id, self.subject_label, self.predicate_id, self.object_id, self.object_label,
                self.mapping_justification, conf, self.subject_source, self.object_source, self.comment]


@dataclass
class MappingSet:
    """The mappings and the metadata block (`curie_map` filled from the CURIEs used when written)."""

    mappings: list[Mapping]
    metadata: dict[str, Any] = field(default_factory=dict)

    def pairs(self, predicate: str | None = None) -> set[tuple[str, str]]:
        return {(m.subject_id, m.object_id) for m in self.mappings if predicate is None or m.predicate_id == predicate}


def prefix(curie: str) -> str:
    return curie.split(":", 1)[0]


def curie_map(mappings: list[Mapping], given: dict[str, str] | None = None) -> dict[str, str]:
    """Every prefix the mappings use, with its URI base (given ones win)."""
    used = {prefix(c) for m in mappings for c in (m.subject_id, m.predicate_id, m.object_id,
                                                   m.mapping_justification, m.subject_source, m.object_source) if c}
    out: dict[str, str] = {}
    for p in sorted(used):
        out[p] = (given or {}).get(p) or BUILTIN.get(p) or KNOWN.get(p) or f"http://purl.obolibrary.org/obo/{p}_"
    return out


def write_sssom(mset: MappingSet, out: TextIO) -> None:
    """The metadata block as `#` lines, then the TSV (COLUMNS, in file order)."""
    import yaml

    meta = {k: v for k, v in mset.metadata.items() if k != "curie_map" and v not in (None, "")}
    meta = {"curie_map": curie_map(mset.mappings, mset.metadata.get("curie_map")), **meta}
    meta.setdefault("mapping_set_id", "https://w3id.org/sssom/kgnorm/mappings.sssom.tsv")
    meta.setdefault("license", "https://creativecommons.org/publicdomain/zero/1.0/")
    block = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1000)
    for line in block.splitlines():
        out.write(f"#{line}\n")
    w = csv.writer(out, delimiter="\t", lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    w.writerow(COLUMNS)
    for m in mset.mappings:
        w.writerow(m.row())


def read_sssom(path: str | Path) -> MappingSet:
    """An SSSOM TSV file; anything the spec requires that is missing or malformed is one InputError
    naming the file and line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("no such file", path) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", path) from None
    lines = text.splitlines()
    n_meta = 0
    while n_meta < len(lines) and lines[n_meta].startswith("#"):
        n_meta += 1
    metadata = _metadata(path, [ln[1:] for ln in lines[:n_meta]])
    body = lines[n_meta:]
    if not body or not body[0].strip():
        raise InputError("no TSV header after the metadata block (expected subject_id, predicate_id, …)",
                         path, n_meta + 1)
    header = body[0].split("\t")
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise InputError(f"the header lacks the column {missing[0]} (SSSOM requires {', '.join(REQUIRED)})",
                         path, n_meta + 1)
    prefixes = set(metadata.get("curie_map") or {}) | set(BUILTIN)
    mappings = []
    rows = csv.reader(io.StringIO("\n".join(body[1:])), delimiter="\t")
    try:
        for i, row in enumerate(rows):
            if not any(cell.strip() for cell in row):
                continue
            mappings.append(_mapping(path, n_meta + 2 + i, header, row, prefixes))
    except csv.Error as exc:  # a field past the csv module's size limit
        raise InputError(f"unreadable TSV row ({exc})", path, n_meta + 1 + rows.line_num) from None
    return MappingSet(mappings, metadata)


def _metadata(path: Path, block: list[str]) -> dict[str, Any]:
    import yaml

    if not block:
        return {}
    try:
        meta = yaml.safe_load("\n".join(block)) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        why = getattr(exc, "problem", None) or "not YAML"
        raise InputError(f"bad metadata block: {why}", path, line) from None
    except RecursionError:
        raise InputError("bad metadata block: nested too deeply", path, 1) from None
    if not isinstance(meta, dict):
        raise InputError("bad metadata block: not a YAML mapping of keys to values", path, 1)
    cmap = meta.get("curie_map", {})
    if not isinstance(cmap, dict):
        raise InputError("bad metadata block: curie_map is not a mapping of prefixes to URIs", path, 1)
    return meta


def _mapping(path: Path, line: int, header: list[str], row: list[str], prefixes: set[str]) -> Mapping:
    if len(row) != len(header):
        raise InputError(f"{len(row)} column(s) where the header has {len(header)}", path, line)
    rec = dict(zip(header, (c.strip() for c in row)))
    for col in REQUIRED:
        value = rec[col]
        if not value:
            raise InputError(f"empty {col}", path, line)
        if not _CURIE.match(value):
            raise InputError(f"{col} {value!r} is not a CURIE (prefix:id)", path, line)
        if prefixes - set(BUILTIN) and prefix(value) not in prefixes:
            raise InputError(f"{col} {value!r}: prefix {prefix(value)} is not in the curie_map", path, line)
    conf: float | None = None
    if rec.get("confidence"):
        try:
            conf = float(rec["confidence"])
        except ValueError:
            raise InputError(f"confidence {rec['confidence']!r} is not a number", path, line) from None
        if not (0.0 <= conf <= 1.0) or math.isnan(conf):
            raise InputError(f"confidence {rec['confidence']} is outside [0, 1]", path, line)
    return Mapping(rec["subject_id"], rec["predicate_id"], rec["object_id"], rec["mapping_justification"], conf,
                   rec.get("subject_label", ""), rec.get("object_label", ""), rec.get("subject_source", ""),
                   rec.get("object_source", ""), rec.get("comment", ""))
