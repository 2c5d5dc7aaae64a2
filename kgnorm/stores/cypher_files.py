"""Access to the shipped .cypher files (schema per backend, saved queries for every backend).

Saved queries may hold integer-literal slots `{{name:default}}` where Cypher allows no
parameter (variable-length bounds, LIMIT); they are filled from params, validated as ints.
"""
from __future__ import annotations

import re
from importlib import resources
from typing import Any

from kgnorm.errors import KgnormError

_SLOT = re.compile(r"\{\{(\w+)(?::(\d+))?\}\}")


def _root():
    return resources.files("kgnorm.cypher")


def saved_query_names() -> list[str]:
    return sorted(p.name[:-7] for p in (_root() / "queries").iterdir() if p.name.endswith(".cypher"))


def saved_query(name: str) -> str:
    path = _root() / "queries" / f"{name}.cypher"
    if not path.is_file():
        raise KgnormError(f"no saved query '{name}' (known: {', '.join(saved_query_names())})")
    return path.read_text(encoding="utf-8")


def schema_statements(backend: str) -> list[str]:
    text = (_root() / "schema" / f"{backend}.cypher").read_text(encoding="utf-8")
    return split_statements(text)


def split_statements(text: str) -> list[str]:
    """Split a .cypher file on ';' at line ends, dropping // comment lines."""
    body = "\n".join(line for line in text.splitlines() if not line.strip().startswith("//"))
    return [s.strip() for s in body.split(";") if s.strip()]


def fill_slots(cypher: str, params: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Replace `{{name:default}}` slots by validated integers; returns (query, remaining params)."""
    cypher = "\n".join(l for l in cypher.splitlines() if not l.strip().startswith("//"))
    used: set[str] = set()

    def repl(m: re.Match[str]) -> str:
        name, default = m.group(1), m.group(2)
        if name in params:
            value = params[name]
            used.add(name)
        elif default is not None:
            value = default
        else:
            raise KgnormError(f"query needs --param {name}=N (an integer)")
        if isinstance(value, str) and value.strip().lstrip("-").isascii() and value.strip().lstrip("-").isdigit():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):  # not true → 1, not 2.9 → 2
            raise KgnormError(f"--param {name} must be an integer, got {value!r}")
        iv = value
        if iv < 0:
            raise KgnormError(f"--param {name} must be >= 0, got {iv}")
        return str(iv)

    out = _SLOT.sub(repl, cypher)
    wanted = query_parameters(out)
    unknown = sorted(k for k in params if k not in wanted and k not in used)
    if unknown:  # a misspelt name would otherwise be ignored, and its $slot left null
        takes = ", ".join(sorted(wanted | used)) or "no parameters"
        raise KgnormError(f"query has no parameter {unknown[0]!r} (it takes: {takes})")
    missing = sorted(k for k in wanted if k not in params)
    if missing:  # an unbound $x would silently be null
        raise KgnormError(f"query needs --param {missing[0]}=… (it takes: {', '.join(sorted(wanted))})")
    rest = {k: v for k, v in params.items() if k in wanted}
    return out.strip().rstrip(";"), rest


_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`")
_PARAM = re.compile(r"\$([A-Za-z_]\w*)")


def query_parameters(cypher: str) -> set[str]:
    """The `$names` a statement uses (not those inside string literals or `quoted` names)."""
    return set(_PARAM.findall(_QUOTED.sub("", cypher)))
