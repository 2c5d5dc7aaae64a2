"""MedDRA ASCII (`MedAscii/*.asc`) loader.

PATH is the `MedAscii` folder or a release folder that contains one (file names are
matched case-insensitively). Every line holds `$`-terminated fields; a line whose field
count differs from the file's layout is an InputError naming file and line. Lines are
decoded as UTF-8, falling back to cp1252/latin-1 for bytes that are not UTF-8.

Mapping
- Concepts: SOC, HLGT, HLT and PT records, uid `MEDDRA:<code>`, level_label SOC/HLGT/HLT/PT.
- IS_A: HLGT -> SOC from `soc_hlgt.asc`, HLT -> HLGT from `hlgt_hlt.asc`, PT -> HLT from
  `hlt_pt.asc` (multi-axial: a PT may have several HLT parents); when any of these link
  files is missing, all levels come from `mdhier.asc` instead (edges de-duplicated).
  A link naming an unknown code is a dangling edge (strict: error).
- LLTs: the name of each current LLT (`llt_currency == "Y"`) becomes an EXACT synonym of its
  PT and its code (when it differs from the PT's) an alt_id `MEDDRA:<llt_code>`; with
  `include_noncurrent=True` non-current LLTs are added too, as RELATED synonyms. An LLT whose
  PT is unknown is an error (strict) or skipped and counted (allow_dangling).
- version: the first field of `meddra_release.asc` when present (e.g. `27.1$English$…`),
  else "".
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kgnorm.errors import InputError
from kgnorm.graph.ontology_graph import Concept, OntologyGraph

from .common import finish, iter_lines, require_path

FORMAT = "meddra"
DEFAULT_NAME = "meddra"
PREFIX = "MEDDRA"

# Number of `$`-terminated fields per file (docs/formats.md, "MedDRA ASCII").
FIELDS = {"soc": 10, "hlgt": 9, "hlt": 9, "pt": 11, "llt": 11, "soc_hlgt": 2, "hlgt_hlt": 2,
          "hlt_pt": 2, "mdhier": 12}
LEVELS = (("soc", "SOC"), ("hlgt", "HLGT"), ("hlt", "HLT"), ("pt", "PT"))
LINKS = (("soc_hlgt", "SOC", "HLGT"), ("hlgt_hlt", "HLGT", "HLT"), ("hlt_pt", "HLT", "PT"))


def load(path: str | Path, name: str | None = None, *, allow_dangling: bool = False,
         **options: Any) -> OntologyGraph:
    """Load a MedDRA MedAscii folder into a finalized graph (see the module docstring)."""
    path = require_path(path, "MedDRA folder")
    folder = _find_folder(path)
    files = {f.name.lower(): f for f in folder.iterdir() if f.is_file()}
    missing = [f"{k}.asc" for k, _ in (*LEVELS, ("llt", "LLT")) if f"{k}.asc" not in files]
    use_links = all(f"{k}.asc" in files for k, _, _ in LINKS)
    if not use_links and "mdhier.asc" not in files:
        missing.append("soc_hlgt.asc/hlgt_hlt.asc/hlt_pt.asc or mdhier.asc")
    if missing:
        raise InputError("missing MedDRA file(s): " + ", ".join(missing), path=folder)

    graph = OntologyGraph(name=name or DEFAULT_NAME, format=FORMAT, source_path=str(folder))
    graph.version = _version(files.get("meddra_release.asc"))
    stats: dict[str, int] = {}

    for key, label in LEVELS:
        for lineno, f in _records(files[f"{key}.asc"], FIELDS[key], stats):
            code, term = f[0].strip(), f[1].strip()
            if not code:
                raise InputError(f"empty {label} code", path=files[f"{key}.asc"], line=lineno)
            graph.add_concept(Concept(uid=f"{PREFIX}:{code}", code=code, name=term, level_label=label))

    if use_links:
        for key, _, _ in LINKS:
            src = files[f"{key}.asc"]
            for lineno, f in _records(src, 2, stats):
                parent, child = f[0].strip(), f[1].strip()
                graph.add_is_a(f"{PREFIX}:{child}", f"{PREFIX}:{parent}", origin=f"{src}:{lineno}")
    else:
        src = files["mdhier.asc"]
        seen: set[tuple[str, str]] = set()
        for lineno, f in _records(src, FIELDS["mdhier"], stats):
            pt, hlt, hlgt, soc = (x.strip() for x in f[:4])
            for child, parent in ((pt, hlt), (hlt, hlgt), (hlgt, soc)):
                if (child, parent) not in seen:
                    seen.add((child, parent))
                    graph.add_is_a(f"{PREFIX}:{child}", f"{PREFIX}:{parent}", origin=f"{src}:{lineno}")

    include_noncurrent = bool(options.get("include_noncurrent", False))
    llt_file = files["llt.asc"]
    orphans = 0
    for lineno, f in _records(llt_file, FIELDS["llt"], stats):
        code, term, pt_code, currency = f[0].strip(), f[1].strip(), f[2].strip(), f[9].strip()
        current = currency.upper() != "N"
        if not current and not include_noncurrent:
            continue
        pt = graph.concepts.get(f"{PREFIX}:{pt_code}")
        if pt is None or pt.level_label != "PT":
            if not allow_dangling:
                raise InputError(f"LLT {code} names unknown PT {pt_code} "
                                 f"(use --allow-dangling to skip such LLTs)", path=llt_file, line=lineno)
            orphans += 1
            continue
        pt.add_synonym(term, "EXACT" if current else "RELATED")
        if code != pt_code:
            pt.add_alt_id(f"{PREFIX}:{code}")
    if orphans:
        graph.warnings.append(f"{orphans} LLT(s) naming an unknown PT skipped")
    if stats.get("fallback_lines"):
        graph.warnings.append(f"{stats['fallback_lines']} line(s) were not valid UTF-8 and "
                              f"were decoded as cp1252/latin-1")
    return finish(graph, allow_dangling)


def _find_folder(path: Path) -> Path:
    if path.is_file():
        if path.suffix.lower() == ".asc":
            return path.parent
        raise InputError("the meddra loader expects the MedAscii folder of a MedDRA release "
                         "(holding soc.asc … llt.asc), got a file", path=path)
    if any(p.name.lower() == "pt.asc" for p in path.iterdir()):
        return path
    for sub in sorted(path.rglob("*")):
        if sub.is_dir() and sub.name.lower() == "medascii":
            return sub
    raise InputError("no MedAscii folder (soc.asc, pt.asc, llt.asc …) found here", path=path)


def _records(path: Path, fields: int,
             stats: dict[str, int] | None = None) -> Iterator[tuple[int, list[str]]]:
    """Yield (line, fields) for each non-empty line, checking the `$`-terminated layout."""
    for lineno, line in iter_lines(path, desc=f"meddra {path.name}", stats=stats):
        if not line.strip():
            continue
        parts = line.split("$")
        if parts and parts[-1] == "":
            parts.pop()
        if len(parts) != fields:
            raise InputError(f"expected {fields} `$`-terminated fields, found {len(parts)}",
                             path=path, line=lineno)
        yield lineno, parts


def _version(release: Path | None) -> str:
    if release is None:
        return ""
    for _, line in iter_lines(release, desc="meddra release"):
        if line.strip():
            return line.split("$", 1)[0].strip()
    return ""
