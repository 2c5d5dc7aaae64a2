"""Run the `kgnorm` command in-process for tests: exit code plus what it printed."""
from __future__ import annotations

from kgnorm.cli.app import main


def exit_code(args: list[str]) -> int:
    """Run without capturing output (for fixtures that only need the side effect)."""
    try:
        main(list(args))
        return 0
    except SystemExit as exc:
        return int(exc.code or 0)


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = exit_code(list(args))
    out, err = capsys.readouterr()
    return code, out, err
