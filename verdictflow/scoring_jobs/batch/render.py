"""Human-readable rendering of verdicts (rich tables), shared by ``eval`` and ``dev``."""

from __future__ import annotations

from collections.abc import Iterable

from rich.table import Table

from verdictflow.models.verdicts import Verdict

_STYLE = {"PASS": "green", "FAIL": "red", "DEFER": "yellow"}


def verdict_table(verdicts: Iterable[Verdict], title: str = "verdicts") -> Table:
    table = Table(title=title)
    for col in ("kind", "input_id", "score", "threshold", "decision", "reason"):
        table.add_column(col, overflow="fold")
    for v in verdicts:
        score = "-" if v.score is None else f"{v.score:.4f}"
        style = _STYLE[v.decision.value]
        table.add_row(
            v.kind.value,
            v.input_id,
            score,
            f"{v.threshold:.2f}",
            f"[{style}]{v.decision.value}[/]",
            v.reasons[0].code.value,
        )
    return table
