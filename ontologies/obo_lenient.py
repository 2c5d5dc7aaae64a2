"""Lenient reading of OBO files that fastobo (and so pronto) refuses.

Real releases carry lines that the OBO 1.4 grammar rejects: definition xrefs with spaces
(`[JA:Epilepsy Genetics Kiel, …]`), synonyms without their `[...]` list, `property_value`
lines with unquoted values, synonym types the header never declares (ODK exports use
`OMO:0003012` without a `synonymtypedef:`). One such line makes fastobo refuse the whole file.

`repair` keeps fastobo as the judge: it parses the header and then batches of frames with
fastobo, and only the line fastobo names is mended (a definition keeps its text without its
xrefs, a synonym its text and scope, an unquoted value is quoted) or, when it cannot be
mended, blanked. Line numbers never move (a dropped line becomes a blank line), so every later
error still names the line of the original file. Each kind of repair is reported once, with a
count and the first lines, so nothing is dropped silently.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import fastobo

SCOPES = ("EXACT", "RELATED", "BROAD", "NARROW")
_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')
_SYNONYM = re.compile(r'^synonym:\s*("(?:[^"\\]|\\.)*")\s*(\S+)?')
_SYN_TYPED = re.compile(r'^(synonym:\s*"(?:[^"\\]|\\.)*"\s+(?:EXACT|RELATED|BROAD|NARROW))\s+([^\s\[{!]+)(\s*\[.*)$')
_TYPEDEF = re.compile(r"^synonymtypedef:\s*(\S+)")
_BATCH = (16, 1024)  # frames per fastobo call: small after an error, doubling while they parse
_PREFIX = "format-version: 1.2\n\n"
_PREFIX_LINES = 2

# kind -> how the warning describes it (the count goes first)
KINDS = {
    "def": "definition(s) with malformed xrefs kept without their xrefs",
    "synonym": "synonym(s) with a malformed scope or xref list kept without their xrefs",
    "synonym-type": "synonym(s) of a type the header does not declare kept (type ignored: {extra})",
    "property_value": "property_value line(s) with an unquoted value read as a string",
    "header": "header line(s) that are not OBO dropped",
    "frame": "stanza(s) with an unreadable header or id dropped",
}


@dataclass
class Repairs:
    """The mended document and what was mended, per kind: the 1-based lines."""

    lines: list[str]
    found: dict[str, list[int]] = field(default_factory=dict)
    mended: set[int] = field(default_factory=set)  # lines mended once (a second refusal drops them)
    types: dict[str, int] = field(default_factory=dict)  # undeclared synonym type -> uses

    def note(self, kind: str, index: int) -> None:
        self.found.setdefault(kind, []).append(index + 1)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

    def warnings(self, path: str) -> list[str]:
        """One line per kind: "f.obo:6229: 3 definition(s) … (lines 6229, 6301, 7012)"."""
        out = []
        for kind, lines in sorted(self.found.items(), key=lambda kv: kv[1][0]):
            what = KINDS.get(kind) or f"{kind.split(':', 1)[1]} line(s) that are not valid OBO dropped"
            if kind == "synonym-type":
                what = what.format(extra=", ".join(f"{t} ×{n}" for t, n in sorted(self.types.items())))
            shown = ", ".join(str(n) for n in lines[:5]) + (", …" if len(lines) > 5 else "")
            out.append(f"{path}:{lines[0]}: {len(lines)} {what} (line(s) {shown})")
        return out

    def count(self) -> int:
        return sum(len(v) for v in self.found.values())


def repair(text: str, syntax_ok: bool = False) -> Repairs:
    """Mend `text` (a whole OBO document) until fastobo accepts every header line and frame;
    `syntax_ok`: fastobo already accepted it, only undeclared synonym types are left to mend."""
    rep = Repairs(lines=text.splitlines())
    starts = [i for i, ln in enumerate(rep.lines) if _is_frame_header(ln)]
    header_end = starts[0] if starts else len(rep.lines)
    if not syntax_ok:
        _check_syntax(rep, header_end, starts)
    _drop_undeclared_types(rep, header_end)
    return rep


def _check_syntax(rep: Repairs, header_end: int, starts: list[int]) -> None:
    """fastobo parses in order and names its first error: each batch is parsed from the frame
    of the last error on, and batches are small after an error, so a file costs about one
    parse plus a few frames per rejected line."""
    _check_header(rep, header_end)
    bounds = list(zip(starts, starts[1:] + [len(rep.lines)]))
    pos, batch = 0, _BATCH[1]
    while pos < len(bounds):
        chunk = bounds[pos:pos + batch]
        index = _first_error(rep.lines, chunk[0][0], chunk[-1][1])
        if index is None:
            pos += batch
            batch = min(batch * 2, _BATCH[1])
            continue
        batch = _BATCH[0]
        if index < 0:  # fastobo failed without naming a line: find the frame one by one
            k = next((k for k, f in enumerate(chunk) if _first_error(rep.lines, *f) is not None), None)
            if k is None:  # pragma: no cover - only the batch fails; let pronto judge
                pos += len(chunk)
                continue
            frame = chunk[k]
            index = _first_error(rep.lines, *frame)  # type: ignore[assignment]
            if index is None or index < 0:
                index = _unreadable_line(rep.lines, frame)
        else:
            k = next(k for k, f in enumerate(chunk) if f[0] <= index < f[1])
            frame = chunk[k]
        _mend(rep, index, frame)
        pos += k  # the frames before it parsed


def _is_frame_header(line: str) -> bool:
    s = line.strip()
    return s.startswith("[") and s.endswith("]") and len(s) > 2


def _parse_error(doc: str) -> tuple[bool, int | None]:
    """(parsed, line of the error): fastobo panics (no line) on some inputs, e.g. a `!` line."""
    try:
        fastobo.loads(doc)
        return True, None
    except SyntaxError as exc:
        return False, exc.lineno
    except BaseException as exc:  # pyo3's PanicException derives from BaseException
        if isinstance(exc, (KeyboardInterrupt, SystemExit, MemoryError)):
            raise
        return False, None


def _first_error(lines: list[str], start: int, end: int) -> int | None:
    """None when lines[start:end] parse; else the 0-based index of the line fastobo names
    (-1 when it names none)."""
    ok, lineno = _parse_error(_PREFIX + "\n".join(lines[start:end]) + "\n")
    if ok:
        return None
    if lineno is None:
        return -1
    return min(max(start + lineno - 1 - _PREFIX_LINES, start), end - 1)


def _unreadable_line(lines: list[str], frame: tuple[int, int]) -> int:
    """The first clause of a frame that fastobo cannot parse on its own (or the frame header)."""
    for i in range(frame[0] + 1, frame[1]):
        if lines[i].strip() and not lines[i].startswith(("id:", "id :")):
            if not _parse_error(f"{_PREFIX}[Term]\nid: X:1\n{lines[i]}\n")[0]:
                return i
    return frame[0]


def _check_header(rep: Repairs, header_end: int) -> None:
    for _ in range(header_end + 1):
        ok, lineno = _parse_error("\n".join(rep.lines[:header_end]) + "\n")
        if ok:
            return
        if lineno is None or not 1 <= lineno <= header_end:
            lineno = next((i + 1 for i in range(header_end) if rep.lines[i].strip()
                           and not _parse_error(rep.lines[i] + "\n")[0]), None)
            if lineno is None:
                return
        rep.lines[lineno - 1] = ""
        rep.note("header", lineno - 1)


def _mend(rep: Repairs, index: int, frame: tuple[int, int]) -> None:
    """Mend the line fastobo rejected, or blank it; a broken frame header or id drops the frame."""
    line = rep.lines[index]
    tag = line.split(":", 1)[0].strip() if ":" in line else ""
    fixed = None if index in rep.mended else _mended(tag, line)
    if index == frame[0] or tag == "id" or not line.strip():
        for i in range(*frame):
            rep.lines[i] = ""
        rep.note("frame", frame[0])
        return
    if fixed is not None:
        rep.lines[index] = fixed
        rep.mended.add(index)
        rep.note(tag, index)
        return
    if index in rep.mended:  # mended once and still refused: undo the count
        rep.found[tag].remove(index + 1)
        if not rep.found[tag]:
            del rep.found[tag]
    rep.lines[index] = ""
    rep.note(f"line:{tag or 'untagged'}", index)


def _mended(tag: str, line: str) -> str | None:
    value = line.split(":", 1)[1].strip() if ":" in line else ""
    if tag == "def":
        m = _QUOTED.match(value)
        return f"def: {m.group(0) if m else _quote(value)} []"
    if tag == "synonym":
        m = _SYNONYM.match(line)
        if m:
            scope = m.group(2) if m.group(2) in SCOPES else "RELATED"
            return f"synonym: {m.group(1)} {scope} []"
        return None
    if tag == "property_value":
        parts = value.split(None, 1)
        if len(parts) == 2 and not parts[1].startswith('"'):
            return f"property_value: {parts[0]} {_quote(parts[1])} xsd:string"
    return None


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _drop_undeclared_types(rep: Repairs, header_end: int) -> None:
    """pronto refuses a synonym whose type has no `synonymtypedef:`; the type is not kept by the
    loader, so such a synonym loses its type instead of failing the file."""
    declared = {m.group(1) for ln in rep.lines[:header_end] if (m := _TYPEDEF.match(ln))}
    for i in range(header_end, len(rep.lines)):
        line = rep.lines[i]
        if not line.startswith("synonym:"):
            continue
        m = _SYN_TYPED.match(line)
        if m and m.group(2) not in declared:
            rep.lines[i] = m.group(1) + m.group(3)
            rep.types[m.group(2)] = rep.types.get(m.group(2), 0) + 1
            rep.note("synonym-type", i)
