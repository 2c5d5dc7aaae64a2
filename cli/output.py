"""Render query rows as a table, JSON (one array of row objects) or CSV."""
from __future__ import annotations

import csv
import io
import json
from typing import Any

from rich.console import Console
from rich.table import Table

from kgnorm.stores import QueryResult


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def render(result: QueryResult, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(result.records(), ensure_ascii=False, default=str, indent=None)
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(result.columns)
        for row in result.rows:
            writer.writerow([_cell(v) for v in row])
        return buf.getvalue()
    table = Table(show_lines=False, header_style="bold")
    for col in result.columns:
        table.add_column(col, overflow="fold")
    for row in result.rows:
        table.add_row(*(_cell(v) for v in row))
    console = Console(file=io.StringIO(), width=160, force_terminal=False, color_system=None)
    console.print(table)
    console.print(f"{len(result.rows)} row(s)")
    return console.file.getvalue()
