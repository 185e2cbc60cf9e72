"""Generate docs/cli.md, the command-line reference, from the typer app in verdictflow/cli/app.py.

Why generated: a hand-written list of commands and options drifts from the code (the README's
did). This script walks the command tree that typer builds from ``verdictflow.cli.app``
(``typer.main.get_command``) and writes every command's help text and parameters as markdown;
``tests/cli/test_reference.py`` fails when docs/cli.md differs from :func:`render`.

typer 0.29 builds that tree from its own vendored copy of Click (``typer._click``), not from the
``click`` package, so the walk uses typer's public classes (``typer.core.TyperGroup``,
``TyperOption``, ``TyperArgument``) instead of ``click.Group`` and ``click.Option``.

The output depends only on the code: commands are sorted by name, nothing is wrapped to a
terminal width and rich formatting is not used. Regenerate with
``.venv/bin/python scripts/cli_reference.py``.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from enum import Enum
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperArgument, TyperGroup, TyperOption

from verdictflow.cli import app

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "docs" / "cli.md"
PROGRAM = "verdictflow"
REGENERATE = ".venv/bin/python scripts/cli_reference.py"

Command = Any  # typer's command classes (TyperCommand, TyperGroup) share no public base type
Parameter = TyperArgument | TyperOption


def _commands(
    group: TyperGroup, path: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], Command]]:
    """Every visible command under ``group`` with its path, sorted by name, a sub-group before
    its own commands."""
    for name in sorted(group.commands):
        command = group.commands[name]
        if command.hidden:
            continue
        yield (*path, name), command
        if isinstance(command, TyperGroup):
            yield from _commands(command, (*path, name))


def _escape(text: str) -> str:
    """Text for a markdown table cell or paragraph: line breaks joined into spaces, ``|``
    escaped everywhere (GFM tables need it inside code spans too), ``<``, ``>`` and ``*``
    outside code spans."""
    parts = " ".join(text.split()).replace("|", "\\|").split("`")
    balanced = len(parts) % 2 == 1
    for i, part in enumerate(parts):
        if i % 2 == 0 or not balanced:
            parts[i] = part.replace("<", "&lt;").replace(">", "&gt;").replace("*", "\\*")
    return "`".join(parts)


def _help(command: Command) -> str:
    """The command's help as markdown paragraphs (Click's ``\\f`` cuts the rest off)."""
    text = inspect.cleandoc(command.help or "").split("\f")[0].strip()
    paragraphs = [p for p in text.split("\n\n") if p.strip()]
    return "\n\n".join(_escape(p) for p in paragraphs)


def _names(param: Parameter) -> str:
    if isinstance(param, TyperArgument):
        return f"`{_argument_name(param)}` (argument)"
    names = [*param.opts, *param.secondary_opts]
    return ", ".join(f"`{name}`" for name in names)


def _argument_name(param: TyperArgument) -> str:
    name = param.metavar or (param.name or "").upper()
    return f"{name}..." if param.nargs == -1 else name


def _type(param: Parameter, ctx: typer.Context) -> str:
    label = param.display_type(ctx).strip("<>")
    if label.endswith(" range"):
        low, high = param.min, param.max
        if low is not None and high is not None:
            bounds = f"{low} to {high}"
        elif low is not None:
            bounds = f">= {low}"
        else:
            bounds = f"<= {high}"
        label = f"{label.removesuffix(' range')}, {bounds}"
    return f"`{label}`"


def _default(param: Parameter, ctx: typer.Context) -> str:
    if param.required:
        return "-"
    if isinstance(param.show_default, str):
        return _escape(param.show_default)
    value = param.get_default(ctx, call=False)
    if value is None or value == () or value == []:
        return "-"
    if callable(value):
        return "(computed)"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, list | tuple):
        return ", ".join(f"`{item}`" for item in value)
    return f"`{value}`"


def _parameters(command: Command, ctx: typer.Context) -> list[str]:
    params = [p for p in command.params if isinstance(p, Parameter) and not p.hidden]
    if not params:
        return ["No parameters."]
    lines = [
        "| parameter | type | default | required | help |",
        "|---|---|---|---|---|",
    ]
    for param in params:
        cells = [
            _names(param),
            _type(param, ctx),
            _default(param, ctx),
            "yes" if param.required else "no",
            _escape(param.help or ""),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _usage(path: tuple[str, ...], command: Command) -> str:
    pieces = [PROGRAM, *path]
    if isinstance(command, TyperGroup):
        return " ".join([*pieces, "COMMAND [ARGS]..."])
    if any(isinstance(p, TyperOption) and not p.hidden for p in command.params):
        pieces.append("[OPTIONS]")
    for param in command.params:
        if isinstance(param, TyperArgument) and not param.hidden:
            name = _argument_name(param)
            pieces.append(name if param.required else f"[{name}]")
    return " ".join(pieces)


def _first_line(command: Command) -> str:
    """The first paragraph of the command's help, for the summary table."""
    return _help(command).split("\n\n")[0].removesuffix(".")


def render() -> str:
    """The markdown reference of every ``verdictflow`` command, deterministic."""
    root = typer.main.get_command(app)
    if not isinstance(root, TyperGroup):
        raise TypeError("verdictflow.cli.app must have sub-commands")
    root_ctx = typer.Context(root, info_name=PROGRAM)
    commands = list(_commands(root, ()))
    out = [
        "# Command-line reference",
        "",
        f"Generated from the typer app in `verdictflow/cli/app.py` by `scripts/cli_reference.py`; "
        f"do not edit by hand. Regenerate with `{REGENERATE}` "
        "(`tests/cli/test_reference.py` fails when this file is out of date).",
        "",
        f"Every command also takes `--help`. Usage: `{_usage((), root)}`.",
        "",
        "Input files (JSONL events, golden sets, labelled exports, corpora, edges, rq-eval "
        "queries and documents, TREC qrels and runs) are UTF-8; a byte order mark at the start "
        "of a file is skipped (Notepad, Excel and PowerShell 5 write one), a UTF-16 or UTF-32 "
        "file with its mark is read as such (PowerShell 5's `>`), and a line ends at "
        '"\\n", "\\r\\n" or "\\r" only, never at a U+2028 or U+0085 inside a JSON string '
        "(`verdictflow/input_files.py`). An events file (`eval answers`, `eval summaries`, "
        "`replay`, a `calibrate` golden set) may also be one JSON array of events, or one event "
        "spread over lines, as "
        "`POST /v1/answers` takes; `-` reads it from standard input.",
        "",
        "| command | summary |",
        "|---|---|",
    ]
    for path, command in commands:
        anchor = "-".join((PROGRAM, *path)).lower()
        out.append(f"| [`{PROGRAM} {' '.join(path)}`](#{anchor}) | {_first_line(command)} |")
    for path, command in commands:
        ctx = typer.Context(command, info_name=path[-1], parent=root_ctx)
        out += ["", f"## {PROGRAM} {' '.join(path)}", "", f"`{_usage(path, command)}`", ""]
        help_text = _help(command)
        if help_text:
            out += [help_text, ""]
        if isinstance(command, TyperGroup):
            subcommands = ", ".join(
                f"`{name}`"
                for name in sorted(command.commands)
                if not command.commands[name].hidden
            )
            out.append(f"Sub-commands: {subcommands}.")
        else:
            out += _parameters(command, ctx)
    return "\n".join(out) + "\n"


def main() -> None:
    OUTPUT.write_text(render(), encoding="utf-8", newline="\n")
    print(f"wrote {OUTPUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
