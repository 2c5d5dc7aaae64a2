"""Render query rows as a table, JSON (one array of row objects) or CSV.

The table is for reading: its floats (scores) show 4 decimals. JSON and CSV are for programs
and keep the stored values."""
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


def _rounded(value: Any) -> Any:
    """Floats to 4 decimals, inside lists and maps too (integers and text unchanged)."""
    if isinstance(value, float):
        return float(f"{value:.4f}") if value == value and abs(value) != float("inf") else value
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


def _table_cell(value: Any) -> str:
    if isinstance(value, float) and value == value and abs(value) != float("inf"):
        return f"{value:.4f}"
    return _cell(_rounded(value))


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
        table.add_row(*(_table_cell(v) for v in row))
    console = Console(file=io.StringIO(), width=160, force_terminal=False, color_system=None)
    console.print(table)
    console.print(f"{len(result.rows)} row(s)")
    return console.file.getvalue()
