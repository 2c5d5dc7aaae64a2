"""Helpers shared by the ontology loaders.

Every loader streams its files through `open_stream` / `iter_lines` so that all of them
agree on the details real releases get wrong in different ways: gzip by magic bytes, a
UTF-8 BOM, CR LF line ends, a stray cp1252/latin-1 byte in an otherwise UTF-8 file, and a
byte-based progress bar that reflects how much of the (possibly compressed) file is read.
`guess_format` lets each loader say "this is a MeSH XML file, not MEDIC" instead of failing
on the first line with an unhelpful parse error.
"""
from __future__ import annotations

import codecs
import csv
import gzip
import io
import os
import re
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from kgnorm.errors import InputError
from kgnorm.graph.ontology_graph import OntologyGraph
from kgnorm.progress import progress_bar

GZIP_MAGIC = b"\x1f\x8b"
FALLBACK_ERRORS = "kgnorm-cp1252"


def _cp1252_fallback(exc: UnicodeError) -> tuple[str, int]:
    """Codec error handler: decode the offending bytes as cp1252 (latin-1 where undefined).

    Registered as `errors="kgnorm-cp1252"`, so a UTF-8 stream with a stray legacy byte
    decodes in one pass (no re-read) with only that byte interpreted differently."""
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    bad = exc.object[exc.start:exc.end]
    out = []
    for b in bad:
        try:
            out.append(bytes([b]).decode("cp1252"))
        except UnicodeDecodeError:
            out.append(bytes([b]).decode("latin-1"))
    return "".join(out), exc.end


codecs.register_error(FALLBACK_ERRORS, _cp1252_fallback)

# What `guess_format` answers, mapped to the loader (and CLI sub-command) that reads it.
FORMAT_LOADER = {
    "obo": "obo",
    "mesh-xml": "mesh",
    "mesh-ascii": "mesh (ASCII .bin files are not supported; use the XML files)",
    "medic-pipe": "medic",
    "medic-ctd": "medic",
    "rf2": "snomed",
    "meddra": "meddra",
    "xml": "none of the loaders (an XML file that is not a MeSH record set)",
    "html": "none of the loaders (a web page: a download that returned an error or login page?)",
}
FORMAT_LABEL = {
    "obo": "an OBO", "mesh-xml": "a MeSH XML", "mesh-ascii": "an ASCII MeSH",
    "medic-pipe": "a MEDIC pipe", "medic-ctd": "a CTD MEDIC", "rf2": "a SNOMED CT RF2",
    "meddra": "a MedDRA ASCII", "xml": "an XML", "html": "an HTML",
}


def describe_format(kind: str) -> str:
    """"an OBO file (it belongs to: obo)" -- the phrase used in wrong-format errors."""
    return f"{FORMAT_LABEL.get(kind, 'a ' + kind)} file (it belongs to: {FORMAT_LOADER.get(kind, kind)})"


class _CountingRaw(io.RawIOBase):
    """Raw reader that reports every byte it hands out to a progress bar."""

    def __init__(self, raw: BinaryIO, bar: Any) -> None:
        self._raw = raw
        self._bar = bar

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = self._raw.readinto(buffer)  # type: ignore[attr-defined]
        if n:
            self._bar.update(n)
        return n or 0


@contextmanager
def open_stream(path: str | Path, desc: str | None = None) -> Iterator[BinaryIO]:
    """Open a (possibly gzipped) file as a binary stream with a byte progress bar.

    The bar counts bytes of the file on disk, so it is exact for compressed input too."""
    path = Path(path)
    try:
        size = path.stat().st_size
        raw = open(path, "rb")
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", path=path) from exc
    with raw, progress_bar(total=size, unit="B", desc=desc or path.name) as bar:
        stream: BinaryIO = io.BufferedReader(_CountingRaw(raw, bar), buffer_size=1 << 20)
        if stream.peek(2)[:2] == GZIP_MAGIC:
            stream = io.BufferedReader(gzip.GzipFile(fileobj=stream, mode="rb"),  # type: ignore[arg-type]
                                       buffer_size=1 << 20)
        try:
            yield stream
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            raise InputError(f"truncated or corrupt compressed file ({exc})", path=path) from exc


def decode_line(data: bytes) -> str:
    """UTF-8; bytes that are not valid UTF-8 are read as cp1252 (latin-1 where undefined)."""
    return data.decode("utf-8", errors=FALLBACK_ERRORS)


def decode_text(data: bytes) -> tuple[str, str]:
    """Decode a whole buffer (BOM dropped); returns (text, "utf-8" or "utf-8+cp1252")."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return data.decode("utf-8", errors=FALLBACK_ERRORS), "utf-8+cp1252"


def iter_lines(path: str | Path, desc: str | None = None,
               stats: dict[str, int] | None = None) -> Iterator[tuple[int, str]]:
    """Yield (1-based line number, text without line end) for every line of a file.

    Strips a leading BOM and both `\\n` and `\\r`; decodes per line so that one bad byte in
    a large UTF-8 file costs one line's fallback, not a re-read. `stats["fallback_lines"]`
    counts lines that were not valid UTF-8."""
    with open_stream(path, desc) as stream:
        for lineno, raw in enumerate(stream, 1):
            if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            raw = raw.rstrip(b"\n").rstrip(b"\r")
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                text = decode_line(raw)
                if stats is not None:
                    stats["fallback_lines"] = stats.get("fallback_lines", 0) + 1
            yield lineno, text


def iter_rows(path: str | Path, delimiter: str, desc: str | None = None) -> Iterator[tuple[int, list[str]]]:
    """Yield (1-based line the row starts on, its cells) for every non-blank row of a TSV/CSV file.

    The csv module reads it, so a cell in double quotes may hold the delimiter, a quote (doubled)
    or a line break, as spreadsheets and pandas write them; decoding as `iter_lines` does."""
    with open_stream(path, desc) as stream:
        text = io.TextIOWrapper(stream, encoding="utf-8-sig", errors=FALLBACK_ERRORS, newline="")
        reader = csv.reader(text, delimiter=delimiter)
        start = 1
        try:
            for row in reader:
                if any(cell.strip() for cell in row):
                    yield start, row
                start = reader.line_num + 1
        except csv.Error as exc:
            raise InputError(f"unreadable row: {exc}", path=path, line=start) from exc


def read_head(path: str | Path, size: int = 16384) -> str:
    """The first `size` bytes (decompressed) as text, for format sniffing."""
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            data = fh.read(size)
            if data[:2] == GZIP_MAGIC:
                # a decompressobj returns what it can of a truncated stream, without raising
                inflate = zlib.decompressobj(wbits=31)
                out = b""
                chunk = data
                while chunk and len(out) < size:
                    try:
                        out += inflate.decompress(chunk, size - len(out))
                    except zlib.error:
                        break
                    chunk = inflate.unconsumed_tail + fh.read(size)
                    if inflate.eof:
                        break
                data = out
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", path=path) from exc
    other = wide_encoding(data)
    if other:
        raise InputError(f"not UTF-8 (looks like {other}): save it as UTF-8 "
                         f"(e.g. iconv -f {other} -t UTF-8)", path=path)
    return decode_text(data)[0]


def wide_encoding(data: bytes) -> str | None:
    """"UTF-16"/"UTF-32" when the bytes carry that BOM or the NUL pattern of ASCII text in it;
    such a file would otherwise decode as garbage and be rejected as the wrong layout."""
    if data[:4] in (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff"):
        return "UTF-32"
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return "UTF-16"
    sample = data[:4096]
    if len(sample) >= 8 and sample.count(0) * 3 >= len(sample):
        return "UTF-16"
    return None


_MEDIC_PIPE = re.compile(r"^(?:[A-Z]*:?[A-Z]?\d+|C)(?:\|(?:[A-Z]*:?[A-Z]?\d+))*\|\|[^|]")
_RF2_HEADERS = ("id\teffectiveTime\tactive\tmoduleId",)


def guess_format(head: str) -> str | None:
    """Best guess of which kgnorm source format a file head belongs to (None: unknown)."""
    text = head.lstrip("\ufeff \t\r\n")
    if text.startswith("<"):
        if re.match(r"<(!doctype\s+html|html)\b", text, re.IGNORECASE):
            return "html"
        if "<DescriptorRecordSet" in text or "<SupplementalRecordSet" in text \
                or "<DescriptorRecord" in text or "<SupplementalRecord" in text:
            return "mesh-xml"
        return "xml"
    if text.startswith("*NEWRECORD"):
        return "mesh-ascii"
    lines = [ln.rstrip("\r") for ln in text.split("\n")[:50]]
    if any(ln.startswith(("format-version:", "[Term]", "[Typedef]")) for ln in lines):
        return "obo"
    if any(ln.startswith(_RF2_HEADERS) for ln in lines[:1]):
        return "rf2"
    data = [ln for ln in lines if ln and not ln.startswith("#")]
    if text.startswith("#") and any("DiseaseID" in ln or "Comparative Toxicogenomics" in ln
                                    for ln in lines if ln.startswith("#")):
        return "medic-ctd"
    if data and all(_MEDIC_PIPE.match(ln) for ln in data[:10]):
        return "medic-pipe"
    if data and all(ln.endswith("$") and re.match(r"^\d+\$", ln) for ln in data[:10]):
        return "meddra"
    return None


def reject_other_format(path: str | Path, loader: str, accept: tuple[str, ...],
                        head: str | None = None) -> None:
    """Raise an InputError when a file is recognisably another format than `accept`."""
    kind = guess_format(read_head(path) if head is None else head)
    if kind is not None and kind not in accept:
        raise InputError(f"this looks like {describe_format(kind)}, not input for the "
                         f"{loader} loader", path=path)


def unescape_obo(value: str) -> str:
    """OBO/fastobo escape extra colons in ids (`DO:DOID\\:1234`); store them plain."""
    return value.replace("\\:", ":") if "\\" in value else value


def find_line(path: str | Path, match: Callable[[str], bool]) -> int | None:
    """Line number of the first line satisfying `match` (used to locate errors)."""
    try:
        for lineno, text in iter_lines(path, desc="locating error"):
            if match(text):
                return lineno
    except InputError:
        return None
    return None


def finish(graph: OntologyGraph, allow_dangling: bool) -> OntologyGraph:
    """Finalize (strict unless dangling edges are allowed) and return the graph."""
    graph.finalize(strict=not allow_dangling)
    return graph


def require_path(path: str | Path, kind: str = "path") -> Path:
    p = Path(os.fspath(path)).expanduser()
    if not p.exists():
        raise InputError(f"{kind} does not exist", path=p)
    return p
