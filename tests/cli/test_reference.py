"""docs/cli.md is generated from the typer app by scripts/cli_reference.py; it must be current.

A command, option, default or help text changed in the code without regenerating the
reference fails here, so the documented CLI cannot drift from the real one.
"""

from __future__ import annotations

from types import ModuleType

from tests.support.paths import ROOT, load_script

SCRIPT = ROOT / "scripts" / "cli_reference.py"
REFERENCE = ROOT / "docs" / "cli.md"


def load_reference_script() -> ModuleType:
    return load_script(SCRIPT)


def test_cli_reference_is_current() -> None:
    expected = load_reference_script().render()
    actual = REFERENCE.read_text(encoding="utf-8") if REFERENCE.exists() else ""
    assert actual == expected, (
        "docs/cli.md is out of date with the CLI; run `.venv/bin/python scripts/cli_reference.py`"
    )
